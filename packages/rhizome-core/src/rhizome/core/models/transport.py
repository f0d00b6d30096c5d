"""What the HTTP model backends (Ollama, OpenAI-compatible servers) share: bounded retries of
transient failures with backoff or the server's ``Retry-After``, and one client per event loop.

A backend classifies each failure of a request: a typed error to raise at once, or a
:class:`Transient` one worth another attempt (raised as its ``final`` error once the
attempts run out)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

from rhizome.core.errors import ConfigurationError, ModelError, RhizomeError

T = TypeVar("T")
C = TypeVar("C")

MAX_RETRY_AFTER = 60.0
"""Longest wait, in seconds, a server's ``Retry-After`` header gets before the next attempt."""

CONNECT_TIMEOUT = 10.0
"""Cap on the TCP connect phase: a host that swallows packets should fail fast, even when the
answer itself may take minutes."""


class Transient(Exception):
    """A failure worth another attempt; ``final`` is raised once attempts run out.
    ``retry_after``: the seconds the server asked to wait, when it said."""

    def __init__(self, final: ModelError, retry_after: float | None = None) -> None:
        super().__init__(str(final))
        self.final = final
        self.retry_after = retry_after


def check_transport_settings(timeout: float, retries: int, backoff: float) -> None:
    """Refuse a timeout that is not positive, or negative retries or backoff."""
    if timeout <= 0:
        raise ConfigurationError("timeout must be a positive number of seconds")
    if retries < 0 or backoff < 0:
        raise ConfigurationError("transport_retries and retry_backoff cannot be negative")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a 429/503 answer's ``Retry-After`` header asks for, in seconds (at most
    :data:`MAX_RETRY_AFTER`), or ``None`` when it has none in seconds."""
    try:
        seconds = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


async def send_with_backoff(
    call: Callable[[], Awaitable[T]], classify: Callable[[Exception], RhizomeError], *, retries: int, backoff: float
) -> T:
    """Run ``call`` with up to ``retries`` more attempts after a failure ``classify`` raises as
    :class:`Transient`; any other failure is raised as the error ``classify`` returns (or
    raises). Before another attempt it waits what the server asked for, else ``backoff``
    doubled on each attempt, times a random factor between 0.5 and 1.5 so that concurrent
    requests do not come back in step."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            try:
                error = classify(exc)
            except Transient as transient:
                if attempt >= retries:
                    raise transient.final from exc
                asked = transient.retry_after
                await asyncio.sleep(asked if asked is not None else backoff * 2**attempt * random.uniform(0.5, 1.5))
                attempt += 1
                continue
            raise error from exc


class ClientSlot(Generic[C]):
    """Holds one event loop's HTTP client (made by ``factory``, closed by ``close``); made
    again after :meth:`aclose`."""

    def __init__(self, factory: Callable[[], C], close: Callable[[C], Awaitable[Any]]) -> None:
        self._factory = factory
        self._close = close
        self._client: C | None = None

    @property
    def client(self) -> C:
        if self._client is None:
            self._client = self._factory()
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await self._close(client)


__all__ = ["CONNECT_TIMEOUT", "MAX_RETRY_AFTER", "ClientSlot", "Transient", "check_transport_settings", "retry_after_seconds", "send_with_backoff"]
