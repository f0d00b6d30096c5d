"""Ollama-compatible endpoints: ``GET /api/tags``, ``GET /api/version``, ``POST /api/chat`` and
``POST /api/generate``, streamed as Ollama streams (one JSON object a line, the last with
``"done": true``; Ollama's default) or whole with ``"stream": false``. The answer's text ends
with a "Sources" list; the last object also carries ``citations``."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from rhizome.server import answering
from rhizome.server.chat.agent import AGENT_MODEL, agent_of
from rhizome.server.chat.messages import Message, RetrievalOptions, turns
from rhizome.server.chat.names import every_model, resolve
from rhizome.server.chat.shapes import OllamaChatAnswer, OllamaGenerateAnswer, OllamaTags
from rhizome.server.errors import public_message
from rhizome.server.security import require_read
from rhizome.server.state import server

router = APIRouter(prefix="/api", tags=["ollama"], dependencies=[Depends(require_read)])
OLLAMA_VERSION = "0.6.0"
"""The Ollama API version these endpoints follow (clients that check it want a recent one)."""
NDJSON: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/x-ndjson": {}}, "description": "one JSON object a line (stream, the default), or one object with stream: false"}}


class OllamaRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str
    stream: bool = True
    options: RetrievalOptions = Field(default_factory=RetrievalOptions, description="k and filter go here")


class ChatRequest(OllamaRequest):
    messages: list[Message] = Field(min_length=1)


class GenerateRequest(OllamaRequest):
    prompt: str = Field(min_length=1)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


@router.get("/version")
async def version() -> dict[str, str]:
    return {"version": OLLAMA_VERSION}


@router.get("/tags", response_model=OllamaTags)
async def tags(request: Request) -> dict[str, Any]:
    """Every workspace and mode as a model, and ``rhizome/agent`` (family ``agent``)."""
    workspaces = server(request).workspaces
    families = {name: space.index.method for space in workspaces for name in space.chat_models()}
    listed = []
    for name in every_model(workspaces):
        family = families.get(name, "agent")
        listed.append({"name": name, "model": name, "modified_at": _now(), "size": 0, "digest": "",
                       "details": {"format": "rhizome", "family": family, "families": [family],
                                   "parameter_size": "", "quantization_level": ""}})
    return {"models": listed}


@router.post("/chat", response_model=OllamaChatAnswer, responses=NDJSON)
async def chat(request: Request, body: ChatRequest) -> Any:
    """The last user message, made to stand on its own from the turns before it, answered from
    the workspace the model names."""
    return await _respond(request, body, body.messages, lambda text: {"message": {"role": "assistant", "content": text}})


@router.post("/generate", response_model=OllamaGenerateAnswer, responses=NDJSON)
async def generate(request: Request, body: GenerateRequest) -> Any:
    """The prompt answered from the workspace the model names."""
    return await _respond(request, body, [Message(role="user", content=body.prompt)], lambda text: {"response": text})


async def _respond(request: Request, body: OllamaRequest, messages: list[Message], shape: Any) -> Any:
    started = time.monotonic_ns()
    if body.model == AGENT_MODEL:
        return await _agent(request, body, messages, shape, started)
    space, mode = resolve(body.model, server(request).workspaces)
    ask = answering.Ask(await answering.standalone(space, turns(messages)), mode, body.options.k, body.options.filter)
    if body.stream:
        found = await answering.search(space, ask)  # a bad filter is a 4xx, before the stream starts
        return StreamingResponse(_lines(request, space, ask, found, body.model, shape, started), media_type="application/x-ndjson")
    result = await answering.answer(space, ask)
    text = result.text + answering.sources_text(result.citations)
    return {"model": body.model, "created_at": _now(), **shape(text), "done": True, "done_reason": "stop",
            "total_duration": time.monotonic_ns() - started, "citations": [answering.citation(h) for h in result.citations]}


async def _agent(request: Request, body: OllamaRequest, messages: list[Message], shape: Any, started: int) -> Any:
    """``rhizome/agent``'s answer: whole, or streamed as it is written, then its sources and the end."""
    agent = agent_of(request)

    def end(said: Any) -> dict[str, Any]:
        return {"done": True, "done_reason": "stop", "citations": [answering.citation(h) for h in said.citations],
                "routes": said.routes, "total_duration": time.monotonic_ns() - started}

    if not body.stream:
        said = await agent.ask(messages, body.options.filter)
        return {"model": body.model, "created_at": _now(), **shape(said.text + answering.sources_text(said.citations)), **end(said)}
    graph, history = agent.start(messages, body.options.filter)

    def line(item: dict[str, Any]) -> str:
        return json.dumps({"model": body.model, "created_at": _now(), **item}, ensure_ascii=False, default=str) + "\n"

    async def lines() -> AsyncIterator[str]:
        try:
            async for piece in agent.pieces(graph, history):
                if isinstance(piece, str):
                    yield line({**shape(piece), "done": False})
                else:
                    yield line({**shape(answering.sources_text(piece.citations)), "done": False})
                    yield line({**shape(""), **end(piece)})
        except Exception as exc:
            _, message = public_message(exc, server(request).redact)
            yield json.dumps({"error": message}) + "\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


async def _lines(request: Request, space: Any, ask: answering.Ask, found: Any, model: str, shape: Any, started: int) -> AsyncIterator[str]:
    def line(item: dict[str, Any]) -> str:
        return json.dumps({"model": model, "created_at": _now(), **item}, ensure_ascii=False, default=str) + "\n"

    try:
        async for piece in answering.answer_pieces(space, ask):
            yield line({**shape(piece), "done": False})
        yield line({**shape(answering.sources_text(found.hits)), "done": False})
        yield line({**shape(""), "done": True, "done_reason": "stop", "total_duration": time.monotonic_ns() - started,
                    "citations": [answering.citation(h) for h in found.hits]})
    except Exception as exc:
        _, message = public_message(exc, server(request).redact)
        yield json.dumps({"error": message}) + "\n"
