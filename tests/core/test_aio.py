from __future__ import annotations

import asyncio
import contextlib
import threading

from rhizome.core.aio import PerLoop, release_loop_resources, run_sync


class Resource:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def test_run_sync_closes_per_loop_resources_before_its_loop_ends():
    made: list[Resource] = []
    per_loop = PerLoop(lambda: made.append(Resource()) or made[-1], close=lambda r: r.close())

    async def use() -> Resource:
        first = per_loop.get()
        assert per_loop.get() is first  # one per loop
        return first

    a = run_sync(use())
    b = run_sync(use())  # a new loop gets a new resource
    assert a is not b
    assert a.closed and b.closed


def test_run_sync_inside_a_running_loop_also_releases():
    made: list[Resource] = []
    per_loop = PerLoop(lambda: made.append(Resource()) or made[-1], close=lambda r: r.close())

    async def use() -> Resource:
        return per_loop.get()

    async def caller() -> tuple[Resource, Resource]:
        mine = per_loop.get()
        inner = run_sync(use())  # runs on a worker thread's loop
        return mine, inner

    mine, inner = asyncio.run(caller())
    assert inner.closed and not mine.closed  # only the private loop's resource is released


def test_run_sync_returns_the_result_without_formatting_it():
    # asyncio.run formats its task when it restores the SIGINT handler; the task must not hold
    # the result (formatting every hit of a query was a tenth of the kit's query CPU)
    class Loud:
        def __repr__(self) -> str:
            raise AssertionError("the result was formatted")

    async def make() -> Loud:
        return Loud()

    async def fail() -> None:
        raise KeyError("inner")

    result = run_sync(make())
    assert isinstance(result, Loud)
    with contextlib.suppress(KeyError):
        run_sync(fail())
        raise AssertionError("the coroutine's error was not raised")

    async def caller() -> Loud:
        return run_sync(make())  # in a worker thread's loop

    assert isinstance(asyncio.run(caller()), Loud)


async def test_release_loop_resources_for_code_that_owns_its_loop():
    per_loop = PerLoop(Resource, close=lambda r: r.close())
    item = per_loop.get()
    await release_loop_resources()
    assert item.closed
    assert per_loop.get() is not item  # made anew on next use


def test_home_loop_runs_every_call_on_one_loop_with_the_callers_context():
    import contextvars

    from rhizome.core.aio import HomeLoop

    home = HomeLoop("test-home-loop")
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")

    async def where() -> tuple[asyncio.AbstractEventLoop, str]:
        return asyncio.get_running_loop(), marker.get()

    async def call(value: str) -> tuple[asyncio.AbstractEventLoop, str]:
        marker.set(value)
        return await home.run(where())

    first, second = run_sync(call("a")), asyncio.run(call("b"))
    assert first[0] is second[0] is home.loop() and (first[1], second[1]) == ("a", "b")


def test_cancelling_the_caller_cancels_the_call_on_the_home_loop():
    from rhizome.core.aio import HomeLoop

    home = HomeLoop("test-home-loop")
    stopped = threading.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise

    async def caller() -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(home.run(slow()), 0.1)

    asyncio.run(caller())
    assert stopped.wait(5)


def test_iterate_sync_hands_over_each_item_and_the_error():
    import pytest

    from rhizome.core.aio import iterate_sync

    async def pieces():
        yield "a"
        await asyncio.sleep(0.01)
        yield "b"
        raise ValueError("the stream broke")

    items = iterate_sync(pieces())
    assert next(items) == "a" and next(items) == "b"
    with pytest.raises(ValueError, match="the stream broke"):
        next(items)
    assert list(iterate_sync(_count(3))) == [0, 1, 2]


async def _count(n: int):
    for i in range(n):
        yield i
