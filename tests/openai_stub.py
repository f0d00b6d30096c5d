"""A scriptable stand-in for an OpenAI-compatible model server (vLLM, llama.cpp's server, LM
Studio), listening on 127.0.0.1 only.

It answers ``GET /v1/models``, ``POST /v1/chat/completions`` (one JSON body, or server-sent
events with ``"stream": true``, ending in ``data: [DONE]``, with a usage chunk when
``stream_options.include_usage`` asks for one) and ``POST /v1/embeddings``, with bodies shaped
like the real servers', and records every request. It is :class:`~tests.ollama_stub.OllamaStub`
speaking another API: the same scripting (``replies``, ``reply_fn``, ``default_reply``,
``embed_fn``, ``delay``, ``truncate_streams``; :class:`StubError` and :class:`StubDrop`
answers), plus:

* ``models``: the served model ids (exact: no ``:latest`` tag); others get a 404 naming the model.
* ``context_length``: sent as vLLM's ``max_model_len`` in ``/v1/models`` (``None``: not sent).
* ``refused_formats``: ``response_format`` types answered with HTTP 400, as servers without
  structured output answer them (``{"json_schema"}``, or ``{"json_schema", "json_object"}``).
* ``no_stream_usage``: ``stream_options`` is refused with HTTP 400.
* ``api_key``: when set, requests without ``Authorization: Bearer <api_key>`` get HTTP 401.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from ollama_stub import OllamaStub, StubDrop, StubError, _Handler, closed_port_url, default_vector


@dataclass
class Events:
    """A streamed answer: JSON objects sent as server-sent events, then ``data: [DONE]``."""

    events: list[dict[str, Any]]
    done: bool = True


def _error(status: int, message: str, kind: str = "invalid_request_error") -> tuple[int, Any]:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": status}}


class OpenAIStub(OllamaStub):
    """See the module docstring."""

    def __init__(self, models: list[str] | tuple[str, ...] = ("qwen-7b", "embed-small"), **kwargs: Any) -> None:
        super().__init__(models, **kwargs)
        self.context_length: int | None = 8192  # type: ignore[assignment]
        self.refused_formats: set[str] = set()
        self.no_stream_usage = False
        self.api_key: str | None = None
        self.handler = _OpenAIHandler
        self.authorizations: list[str] = []

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def has(self, model: str) -> bool:
        return model in self.models

    def serve(self, method: str, path: str, body: dict[str, Any] | None, authorization: str) -> tuple[int, Any]:
        with self._lock:
            self.authorizations.append(authorization)
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            self._record(method, path, body)
            return _error(401, "Incorrect API key provided", "authentication_error")
        return self.handle(method, path, body)

    def handle(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        self._record(method, path, body)
        self._wait()
        if method == "GET" and path == "/v1/models":
            entries = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "stub"} for m in self.models]
            if self.context_length is not None:
                for entry in entries:
                    entry["max_model_len"] = self.context_length
            return 200, {"object": "list", "data": entries}
        if method == "POST" and path in ("/v1/chat/completions", "/v1/embeddings"):
            body = body or {}
            model = str(body.get("model") or "")
            if not self.has(model):
                return _error(404, f"The model `{model}` does not exist.", "NotFoundError")
            if path == "/v1/embeddings":
                return self._embeddings(model, body)
            return self._completion(model, body)
        return _error(404, f"no route {method} {path}")

    def _completion(self, model: str, body: dict[str, Any]) -> tuple[int, Any]:
        kind = (body.get("response_format") or {}).get("type")
        if kind in self.refused_formats:
            return _error(400, f"response_format type {kind!r} is not supported by this server")
        if "stream_options" in body and self.no_stream_usage:
            return _error(400, "Unrecognized request argument supplied: stream_options")
        answer = self._next_reply(body)
        if isinstance(answer, StubError):
            return answer.status, answer
        if isinstance(answer, StubDrop):
            return 0, answer
        content = answer if isinstance(answer, str) else json.dumps(answer)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": max(1, len(content.split())),
                 "total_tokens": prompt_tokens + max(1, len(content.split()))}
        head = {"id": "chatcmpl-stub", "created": int(time.time()), "model": model}
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            return 200, {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
        pieces = content.split(" ")
        chunk = {**head, "object": "chat.completion.chunk"}
        events = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
        events += [{**chunk, "choices": [{"index": 0, "delta": {"content": p + (" " if i < len(pieces) - 1 else "")},
                                          "finish_reason": None}]} for i, p in enumerate(pieces)]
        if self.truncate_streams:
            return 200, Events(events[: max(2, len(events) // 2)], done=False)
        events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**chunk, "choices": [], "usage": usage})
        return 200, Events(events)

    def _embeddings(self, model: str, body: dict[str, Any]) -> tuple[int, Any]:
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        data = [{"object": "embedding", "index": i, "embedding": self.embed_fn(t)} for i, t in enumerate(texts)]
        data.reverse()  # servers may answer out of order: the index says which is which
        tokens = sum(len(t.split()) for t in texts)
        return 200, {"object": "list", "model": model, "data": data, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


class _OpenAIHandler(_Handler):
    server_version = "openai-stub"

    def _serve(self, method: str) -> None:
        stub: OpenAIStub = self.server.stub  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            self._send(*_error(400, "invalid JSON body"))
            return
        status, payload = stub.serve(method, self.path.split("?", 1)[0], body, self.headers.get("Authorization", ""))
        if isinstance(payload, StubDrop):
            self.close_connection = True
            return
        self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
        if isinstance(payload, StubError):  # the OpenAI error shape, and Retry-After
            headers = {} if payload.retry_after is None else {"Retry-After": f"{payload.retry_after:g}"}
            self._write(status, json.dumps(_error(status, payload.message)[1]).encode(), "application/json", headers)
        elif isinstance(payload, Events):
            text = "".join(f"data: {json.dumps(event)}\n\n" for event in payload.events)
            self._write(status, (text + ("data: [DONE]\n\n" if payload.done else "")).encode(), "text/event-stream", {})
        else:
            super()._send(status, payload)


@pytest.fixture(name="openai_stub")
def openai_stub_fixture() -> Iterator[OpenAIStub]:
    """A running :class:`OpenAIStub`, stopped after the test (import it as ``openai_stub_fixture``)."""
    with OpenAIStub() as stub:
        yield stub


__all__ = ["Events", "OpenAIStub", "StubDrop", "StubError", "closed_port_url", "default_vector", "openai_stub_fixture"]
