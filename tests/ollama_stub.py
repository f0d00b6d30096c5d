"""A scriptable stand-in for an Ollama server, listening on 127.0.0.1 only.

It answers the endpoints Rhizome and the framework Ollama clients use — ``POST /api/chat``
(one JSON body with ``"stream": false``, else newline-delimited JSON chunks, as the real server
streams by default), ``POST /api/embed``, ``POST /api/show`` and ``GET /api/tags`` — with bodies shaped like the
real server's, and records every request so tests can check what went over the wire.

Scripting, per test:

* ``models``: the installed model names; any other model gets the real server's 404
  (``model "x" not found, try pulling it first``). ``"x"`` and ``"x:latest"`` are the same.
* ``replies``: chat answers used first-in first-out; when empty, ``default_reply`` is used.
  An answer is a string (the message content), a dict or list (sent as JSON text), a
  :class:`StubToolCalls` (the model calls tools), a :class:`StubError` (an HTTP error instead of an answer), a :class:`StubDrop` (the connection
  is closed without an answer) or a callable taking the request body
  and returning any of these. ``reply_fn`` (a callable) takes precedence over both when set.
* ``embed_fn``: text -> vector; the default is deterministic and deliberately not unit length.
* ``delay``: seconds to wait before answering any request (to provoke client timeouts);
  ``tags_delay``: seconds to wait before answering ``GET /api/tags`` only (a busy server).
* ``no_think_models``: models that reject the ``think`` parameter with HTTP 400, as servers do
  for models without thinking support.
* ``context_length``: the model's trained context window reported by ``POST /api/show``.
* ``truncate_streams``: streamed answers stop before the server's last (``done``) chunk, as when
  a model runner dies mid-answer.

Use it as a context manager or call :meth:`start` / :meth:`stop`; :func:`ollama_stub` is a
ready-made pytest fixture.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class StubError:
    """An HTTP error answer: ``{"error": message}`` with ``status`` (and a ``Retry-After``
    header of ``retry_after`` seconds when given, as a busy server may send)."""

    status: int
    message: str
    retry_after: float | None = None


class StubDrop:
    """A scripted chat answer that closes the connection without answering at all."""


@dataclass
class StubToolCalls:
    """A scripted chat answer that calls tools: ``calls`` are ``(name, arguments)`` pairs, sent
    as the real server sends them (``message.tool_calls``, empty content)."""

    calls: list[tuple[str, dict[str, Any]]]


@dataclass
class Stream:
    """A streamed answer: JSON objects sent one per line (``application/x-ndjson``)."""

    lines: list[dict[str, Any]]


@dataclass
class Request:
    """One request the stub received."""

    method: str
    path: str
    body: dict[str, Any] | None


def _key(name: str) -> str:
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def default_vector(text: str, dimension: int = 8) -> list[float]:
    """A repeatable, non-normalised vector for ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(digest[i] - 127.5) / 10.0 for i in range(dimension)]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class OllamaStub:
    """See the module docstring."""

    handler: type[BaseHTTPRequestHandler] | None = None
    """The request handler class (``None``: Ollama's); another API's stub sets its own."""

    def __init__(
        self,
        models: list[str] | tuple[str, ...] = ("qwen2.5:7b", "nomic-embed-text:latest"),
        *,
        default_reply: Any = '{"ok": true}',
        embed_dimension: int = 8,
    ) -> None:
        self.models: list[str] = list(models)
        self.replies: deque[Any] = deque()
        self.reply_fn: Callable[[dict[str, Any]], Any] | None = None
        self.default_reply = default_reply
        self.embed_dimension = embed_dimension
        self.embed_fn: Callable[[str], list[float]] = lambda text: default_vector(
            text, self.embed_dimension
        )
        self.delay = 0.0
        self.tags_delay = 0.0
        self.no_think_models: set[str] = set()
        self.context_length = 32768
        self.truncate_streams = False
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "stub not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> OllamaStub:
        server = _Server(("127.0.0.1", 0), self.handler or _Handler)
        server.daemon_threads = True
        server.stub = self  # type: ignore[attr-defined]
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="ollama-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases handlers sleeping in a delay
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> OllamaStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection ----------------------------------------------------------------------------
    def calls(self, path: str) -> list[dict[str, Any]]:
        """Bodies of the requests made to ``path`` (e.g. ``"/api/chat"``), oldest first."""
        with self._lock:
            return [r.body or {} for r in self.requests if r.path == path]

    def has(self, model: str) -> bool:
        return any(_key(m) == _key(model) for m in self.models)

    # -- request handling (called from server threads) -----------------------------------------
    def _record(self, method: str, path: str, body: dict[str, Any] | None) -> None:
        with self._lock:
            self.requests.append(Request(method, path, body))

    def _wait(self) -> None:
        if self.delay:
            self._stopping.wait(self.delay)

    def _next_reply(self, body: dict[str, Any]) -> Any:
        with self._lock:
            if self.reply_fn is not None:
                answer: Any = self.reply_fn
            elif self.replies:
                answer = self.replies.popleft()
            else:
                answer = self.default_reply
        if callable(answer) and not isinstance(answer, StubError | StubDrop):
            answer = answer(body)
        return answer

    def handle(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        """Status and JSON body (or plain text) of the answer to one request."""
        self._record(method, path, body)
        self._wait()
        if method == "GET" and path == "/api/tags":
            if self.tags_delay:
                self._stopping.wait(self.tags_delay)
            return 200, {"models": [self._tag(name) for name in self.models]}
        if method == "GET" and path == "/":
            return 200, "Ollama is running"
        if method == "POST" and path in ("/api/chat", "/api/embed", "/api/show"):
            body = body or {}
            model = str(body.get("model") or body.get("name") or "")
            if not self.has(model):
                return 404, {"error": f'model "{model}" not found, try pulling it first'}
            if path == "/api/chat":
                return self._chat(model, body)
            if path == "/api/show":
                return 200, self._show(model)
            return self._embed(model, body)
        return 404, "404 page not found"

    def _chat(self, model: str, body: dict[str, Any]) -> tuple[int, Any]:
        if "think" in body and model in self.no_think_models:
            return 400, {"error": f'"{model}" does not support thinking'}
        answer = self._next_reply(body)
        if isinstance(answer, StubError):
            return answer.status, answer
        if isinstance(answer, StubDrop):
            return 0, answer
        calls = answer.calls if isinstance(answer, StubToolCalls) else []
        content = "" if calls else answer if isinstance(answer, str) else json.dumps(answer)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [{"function": {"name": name, "arguments": args}} for name, args in calls]
        prompt_tokens = sum(
            len(str(m.get("content", "")).split()) for m in body.get("messages", [])
        )
        final = {
            "model": model,
            "created_at": _now(),
            "message": message,
            "done_reason": "stop",
            "done": True,
            "total_duration": 1_234_567,
            "load_duration": 12_345,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 100_000,
            "eval_count": max(1, len(content.split())),
            "eval_duration": 200_000,
        }
        if body.get("stream") is False:
            return 200, final
        # streamed: the content in word-sized pieces (tool calls in one piece, as the server
        # sends them), then a last chunk with the counts
        if calls:
            lines = [{"model": model, "created_at": _now(), "message": message, "done": False}]
            lines.append({**final, "message": {"role": "assistant", "content": ""}})
            return 200, Stream(lines)
        pieces = [p for p in content.split(" ")]
        lines = [
            {"model": model, "created_at": _now(), "message": {"role": "assistant", "content": p + (" " if i < len(pieces) - 1 else "")}, "done": False}
            for i, p in enumerate(pieces)
        ]
        if not self.truncate_streams:
            lines.append({**final, "message": {"role": "assistant", "content": ""}})
        else:
            lines = lines[: max(1, len(lines) // 2)]
        return 200, Stream(lines)

    def _embed(self, model: str, body: dict[str, Any]) -> tuple[int, Any]:
        texts = body.get("input", [])
        if isinstance(texts, str):
            texts = [texts]
        return 200, {
            "model": model,
            "embeddings": [self.embed_fn(text) for text in texts],
            "total_duration": 1_000_000,
            "load_duration": 10_000,
            "prompt_eval_count": sum(len(t.split()) for t in texts),
        }

    def _show(self, model: str) -> dict[str, Any]:
        return {
            "modelfile": f"FROM {model}",
            "parameters": "",
            "template": "{{ .Prompt }}",
            "details": self._tag(model)["details"],
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": self.context_length},
            "capabilities": ["completion", "embedding" if "embed" in model else "tools"],
        }

    @staticmethod
    def _tag(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "model": name,
            "modified_at": "2025-01-01T00:00:00.000000000Z",
            "size": 4_683_087_332,
            "digest": hashlib.sha256(name.encode()).hexdigest(),
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "qwen2",
                "families": ["qwen2"],
                "parameter_size": "7.6B",
                "quantization_level": "Q4_K_M",
            },
        }


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is not news
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real server
    server_version = "ollama-stub"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _serve(self, method: str) -> None:
        stub: OllamaStub = self.server.stub  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            self._send(400, {"error": "invalid JSON body"})
            return
        status, payload = stub.handle(method, self.path.split("?", 1)[0], body)
        if isinstance(payload, StubDrop):
            self.close_connection = True
            return
        self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
        headers = {}
        if isinstance(payload, StubError):
            if payload.retry_after is not None:
                headers["Retry-After"] = f"{payload.retry_after:g}"
            payload = {"error": payload.message}
        if isinstance(payload, Stream):
            data = "".join(json.dumps(line) + "\n" for line in payload.lines).encode("utf-8")
            kind = "application/x-ndjson"
        elif isinstance(payload, str):
            data, kind = payload.encode("utf-8"), "text/plain; charset=utf-8"
        else:
            data, kind = json.dumps(payload).encode("utf-8"), "application/json; charset=utf-8"
        self._write(status, data, kind, headers)

    def _write(self, status: int, data: bytes, kind: str, headers: dict[str, str]) -> None:
        """Send one whole answer (a client that gave up meanwhile closes the connection)."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (e.g. timed out) before the answer was ready
            self.close_connection = True

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


def closed_port_url() -> str:
    """A loopback URL on which nothing listens (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture(name="ollama_stub")
def ollama_stub_fixture() -> Iterator[OllamaStub]:
    """A running :class:`OllamaStub`, stopped after the test. Import it into a test module (or
    conftest) as ``ollama_stub_fixture``; tests request it as ``ollama_stub``."""
    with OllamaStub() as stub:
        yield stub


__all__ = [
    "OllamaStub",
    "Request",
    "StubDrop",
    "StubError",
    "closed_port_url",
    "default_vector",
    "ollama_stub_fixture",
]
