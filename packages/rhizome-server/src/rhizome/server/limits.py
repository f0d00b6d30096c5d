"""The request body limit, as ASGI middleware: a body announced larger than the limit is refused
with 413 before it is read, and a body sent in chunks is counted as it arrives and refused once
it passes the limit."""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def too_large(limit: int) -> str:
    return f"the request body is larger than this server accepts ({limit:,} bytes); send fewer documents per request, or start the server with a larger --max-body"


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        announced = dict(scope.get("headers") or []).get(b"content-length")
        if announced is not None and announced.isdigit() and int(announced) > self.limit:
            await _refuse(scope, send, too_large(self.limit))
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # raised inside the route: its handler answers 413
                    raise HTTPException(413, too_large(self.limit))
            return message

        await self.app(scope, counted, send)


async def _refuse(scope: Scope, send: Send, message: str) -> None:
    path: str = scope.get("path", "")
    body: dict[str, Any] = {"error": message} if path.startswith("/api/") else {"error": {"message": message, "type": "request_too_large", "code": 413}}
    payload = json.dumps(body).encode("utf-8")
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})
