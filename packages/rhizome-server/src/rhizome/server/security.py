"""Who may call what: the API key, compared in constant time.

With a key set, every request but ``GET /health`` must carry it (``Authorization: Bearer KEY``,
or ``X-API-Key: KEY``). Writes need it always: a server started without a key refuses them and
says how to set one, so a loopback server cannot be written to by any page or process that
happens to reach it.
"""

from __future__ import annotations

import hmac

from fastapi import Request

from rhizome.server.errors import ReadOnlyError, UnauthorizedError
from rhizome.server.settings import API_KEY_ENV, ServerSettings


def given_key(request: Request) -> str | None:
    """The key a request carries, if any."""
    auth = request.headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return request.headers.get("x-api-key") or None


def key_matches(request: Request, key: str) -> bool:
    given = given_key(request)
    return given is not None and hmac.compare_digest(given.encode("utf-8"), key.encode("utf-8"))


def settings_of(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.settings
    return settings


async def require_read(request: Request) -> None:
    """A read: open on a server without a key, else the key."""
    key = settings_of(request).api_key
    if key is not None and not key_matches(request, key):
        raise UnauthorizedError("this server needs its API key: send 'Authorization: Bearer KEY' (or 'X-API-Key: KEY')")


async def require_write(request: Request) -> None:
    """A write: always the key, on a server that allows writes."""
    settings = settings_of(request)
    if settings.read_only:
        raise ReadOnlyError("this server was started with --read-only; restart it without the flag to write")
    if settings.api_key is None:
        raise UnauthorizedError(
            f"writes need an API key, and this server was started without one: restart it with --api-key KEY "
            f"(or {API_KEY_ENV}=KEY) and send 'Authorization: Bearer KEY'"
        )
    if not key_matches(request, settings.api_key):
        raise UnauthorizedError("writes need this server's API key: send 'Authorization: Bearer KEY' (or 'X-API-Key: KEY')")
