"""Index work off the event loop. A search is mostly CPU (faiss, numpy, PageRank) and SQLite
reads: run on the server's loop it would stall every other request. Each call runs in a worker
thread of the server's pool instead, on a private event loop there (the kernel's
:func:`~rhizome.core.aio.run_sync` and :func:`~rhizome.core.aio.iterate_sync`), so searches of
one or several indexes run side by side while the loop keeps answering."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from anyio import to_thread

from rhizome.core.aio import iterate_sync, run_sync

T = TypeVar("T")
_END = object()


async def in_thread(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Await the coroutine ``work()`` makes, run to completion in a worker thread."""
    return await to_thread.run_sync(lambda: run_sync(work()))


async def call_in_thread(function: Callable[[], T]) -> T:
    """Call a blocking ``function`` (store reads) in a worker thread."""
    return await to_thread.run_sync(function)


async def stream_in_thread(items: Callable[[], AsyncIterator[T]]) -> AsyncIterator[T]:
    """The items of the async generator ``items()`` makes, which runs in a worker thread, each
    handed over as soon as it is made; leaving early stops the generator."""
    pieces = iterate_sync(items())
    try:
        while True:
            piece = await to_thread.run_sync(next, pieces, _END)
            if piece is _END:
                return
            yield piece  # type: ignore[misc]
    finally:
        with contextlib.suppress(ValueError):  # still running in a thread (cancelled): it stops on its next piece
            pieces.close()  # type: ignore[attr-defined]


async def items_in_thread(items: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """The items of the blocking iterator ``items()`` makes, each taken in a worker thread (for
    code that keeps clients bound to the event loop it first ran on, such as LangChain's chat
    models: run synchronously, it uses their loop-free clients)."""
    iterator = await to_thread.run_sync(items)
    while True:
        item = await to_thread.run_sync(next, iterator, _END)
        if item is _END:
            return
        yield item  # type: ignore[misc]
