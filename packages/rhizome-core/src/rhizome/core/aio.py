"""Small async helpers: sync wrappers that work inside or outside a running loop, and
per-event-loop resources (semaphores and HTTP clients must not cross loops)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code.

    Outside an event loop this is ``asyncio.run``. Inside one (a notebook, or a sync API called
    from async code) the coroutine runs on a fresh loop in a worker thread, so the caller's loop
    is never re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # copy the caller's context so context variables (tracing callbacks) follow the work
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coro).result()


class PerLoop(Generic[T]):
    """One lazily created object per running event loop (e.g. a semaphore or an HTTP client).

    asyncio primitives and httpx clients bind to the loop they are first used in; sync wrappers
    create a new loop per call, so a single shared instance would break on the second call.
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._items: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            item = self._items.get(loop)
            if item is None:
                item = self._factory()
                self._items[loop] = item
            return item


async def gather_limited(
    factories: list[Callable[[], Awaitable[T]]], limit: int
) -> list[T]:
    """Run awaitables made by ``factories`` with at most ``limit`` in flight; results in order."""
    semaphore = asyncio.Semaphore(max(1, limit))

    async def one(factory: Callable[[], Awaitable[T]]) -> T:
        async with semaphore:
            return await factory()

    return list(await asyncio.gather(*(one(f) for f in factories)))
