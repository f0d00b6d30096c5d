"""Small async helpers: sync wrappers that work inside or outside a running loop, per-event-loop
resources (semaphores and HTTP clients must not cross loops), and one long-lived home loop for
third-party objects that cannot follow a caller from loop to loop; :func:`scoped`, a context
variable's value for the length of a block, and :func:`held`, a scope whose reads a context
variable keeps for the block."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import queue
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def scoped(var: contextvars.ContextVar[T], value: T) -> Iterator[T]:
    """Within the block (in this context and the tasks and :func:`run_sync` threads it starts),
    ``var`` holds ``value``; afterwards, what it held before."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


@contextlib.contextmanager
def held(var: contextvars.ContextVar[dict[Any, Any] | None]) -> Iterator[None]:
    """Within the block, ``var`` holds a fresh dict for what the block reads once and keeps;
    nested blocks share the outermost one's, and it is dropped when that block ends."""
    if var.get() is not None:
        yield
        return
    with scoped(var, {}):
        yield


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code.

    Outside an event loop this runs a new loop. Inside one (a notebook, or a sync API called from
    async code) the coroutine runs on a fresh loop in a worker thread, with the caller's context
    variables copied, so the caller's loop is never re-entered and tracing callbacks follow.
    Either way, the per-loop resources the work created (HTTP clients, see :class:`PerLoop`) are
    closed before the private loop ends.
    """
    result: list[T] = []
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_then_release(coro, result))
        return result[0]
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(context.run, asyncio.run, _then_release(coro, result)).result()
    return result[0]


async def _then_release(coro: Coroutine[Any, Any, T], result: list[T]) -> None:
    """Run ``coro`` and put its result in ``result``: the task asyncio.run makes ends with
    ``None``, not the result. In the main thread asyncio.run formats its task (``repr``, the
    result included: every hit or record of the call) when it restores the SIGINT handler
    (``signal`` tries the handler as a ``Handlers`` value and builds the error message), at
    every call: about a tenth of the CPU of the conformance kit's queries."""
    try:
        result.append(await coro)
    finally:
        await release_loop_resources()


# closers of per-loop resources, by loop (weak: a finished loop takes its entry with it)
_CLOSERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Callable[[], Awaitable[None]]]] = (
    weakref.WeakKeyDictionary()
)
_CLOSERS_LOCK = threading.Lock()


async def release_loop_resources() -> None:
    """Close every :class:`PerLoop` resource created on the running loop. :func:`run_sync` calls
    it for its own loops; code that runs its own loop may call it before the loop ends."""
    loop = asyncio.get_running_loop()
    with _CLOSERS_LOCK:
        closers = _CLOSERS.pop(loop, [])
    for close in closers:
        await close()


class PerLoop(Generic[T]):
    """One lazily created object per running event loop (e.g. a semaphore or an HTTP client).

    asyncio primitives and httpx clients bind to the loop they are first used in; sync wrappers
    create a new loop per call, so a single shared instance would break on the second call.
    With ``close``, the object is closed by :func:`release_loop_resources` (which
    :func:`run_sync` calls before its loop ends) and made anew on next use.
    """

    def __init__(self, factory: Callable[[], T], close: Callable[[T], Awaitable[None]] | None = None) -> None:
        self._factory = factory
        self._close = close
        self._items: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """A copy (sent to another process, e.g. a Ray worker) starts with no objects: they
        belong to this process's loops."""
        return (PerLoop, (self._factory, self._close))

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            item = self._items.get(loop)
            if item is None:
                item = self._factory()
                self._items[loop] = item
                if self._close is not None:
                    with _CLOSERS_LOCK:
                        _CLOSERS.setdefault(loop, []).append(lambda: self._release(loop))
            return item

    async def _release(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            item = self._items.pop(loop, None)
        if item is not None and self._close is not None:
            await self._close(item)


class HomeLoop:
    """One long-lived event loop in a daemon thread, for objects that bind to the loop they first
    run on and cannot be told to use another (the async HTTP clients inside LangChain and
    LlamaIndex models).

    Every sync call of Rhizome runs on a loop of its own (:func:`run_sync`); a framework model
    awaited there would keep a connection of the first loop and fail on the next call with
    "Event loop is closed". :meth:`run` instead runs the coroutine on this one loop, whatever
    loop or thread awaits it, with the caller's context variables; cancelling the caller cancels
    it. The thread starts on first use and lives as long as the process.
    """

    def __init__(self, name: str = "rhizome-home-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name=self._name, daemon=True).start()
                self._loop = loop
            return self._loop

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the home loop (directly when already on it)."""
        loop = self.loop()
        try:
            if asyncio.get_running_loop() is loop:
                return await coro
        except RuntimeError:
            pass
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


    def stream(self, items: AsyncIterator[T]) -> AsyncIterator[T]:
        """Iterate ``items`` (an async generator bound to loop-bound objects) on the home loop,
        handing each item to the caller's loop as it comes; stopping early stops it."""
        return _relay(self, items)


async def _relay(home: HomeLoop, items: AsyncIterator[T]) -> AsyncIterator[T]:
    loop, caller = home.loop(), asyncio.get_running_loop()
    if loop is caller:
        async for item in items:
            yield item
        return
    inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def send(kind: str, value: Any) -> None:
        caller.call_soon_threadsafe(inbox.put_nowait, (kind, value))

    async def pump() -> None:
        try:
            async for item in items:
                send("item", item)
        except BaseException as exc:  # handed to the caller, cancellation included
            send("error", exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            send("done", None)

    future = asyncio.run_coroutine_threadsafe(pump(), loop)
    try:
        while True:
            kind, value = await inbox.get()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        future.cancel()


def iterate_sync(items: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async generator from synchronous code: it runs on a private loop in a worker
    thread (like :func:`run_sync`) and each item is handed over as soon as it is made, so a
    caller can print a streamed answer as it arrives. Leaving the loop early stops the generator."""
    handoff: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    context = contextvars.copy_context()

    async def pump() -> None:
        try:
            async for item in items:
                handoff.put(("item", item))
                if stop.is_set():
                    break
        except BaseException as exc:
            handoff.put(("error", exc))
        else:
            handoff.put(("done", None))
        finally:
            await items.aclose()  # type: ignore[attr-defined]

    worker = threading.Thread(target=context.run, args=(asyncio.run, _then_release(pump(), [])), daemon=True)
    worker.start()
    try:
        while True:
            kind, value = handoff.get()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        stop.set()


home_loop = HomeLoop()
"""The process's :class:`HomeLoop`, where every framework model call runs."""


class WriteLock:
    """A mutex for async code that holds across threads and event loops.

    ``asyncio.Lock`` binds to one loop, and every sync call (:func:`run_sync`) runs its own loop,
    so two threads inserting into one index through the sync API would not exclude each other.
    This lock is a ``threading.Lock`` acquired without blocking the caller's loop: an attempt
    that finds it held waits a little (1 ms, doubling up to 50 ms) and tries again. It is not
    re-entrant. A cancelled waiter simply stops trying, so nothing is left locked."""

    def __init__(self, outer: Any = None) -> None:
        self._lock = threading.Lock()
        self._outer = outer
        """A lock other processes take too (``async acquire()``, ``release()``), taken once this
        one is held: a database server's writer lock."""

    def locked(self) -> bool:
        return self._lock.locked()

    async def __aenter__(self) -> WriteLock:
        delay = 0.001
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        if self._outer is not None:
            try:
                await self._outer.acquire()
            except BaseException:
                self._lock.release()
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._outer is not None:
                self._outer.release()
        finally:
            self._lock.release()


async def gather_limited(
    factories: list[Callable[[], Awaitable[T]]], limit: int
) -> list[T]:
    """Run awaitables made by ``factories`` with at most ``limit`` in flight; results in order."""
    semaphore = asyncio.Semaphore(max(1, limit))

    async def one(factory: Callable[[], Awaitable[T]]) -> T:
        async with semaphore:
            return await factory()

    return list(await asyncio.gather(*(one(f) for f in factories)))


async def gather_or_cancel(coros: Sequence[Awaitable[T]]) -> list[T]:
    """Like ``asyncio.gather`` (results in order), but when one fails the others are cancelled
    before the error is raised, so no orphaned model calls keep running."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
