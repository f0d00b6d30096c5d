"""On a loopback address, only loopback host names: a request whose ``Host`` header names any
other host is refused (400). A web page on another site whose name an attacker points at
127.0.0.1 (DNS rebinding) would otherwise be same-origin with the server and could read every
answer, CORS or not; its requests carry the attacker's host name, so they stop here."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from rhizome.server.settings import is_loopback


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without the port (``[::1]:8080`` is ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class LoopbackHosts:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if not is_loopback(host_name(header)):
                message = ("this server listens on a loopback address and answers only requests for a loopback host "
                           "name (localhost, 127.0.0.1, [::1]); to serve other hosts, start it with --host and an API key")
                body = json.dumps({"error": {"message": message, "type": "invalid_host", "code": 400}}).encode()
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
