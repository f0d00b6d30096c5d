"""OpenAI-compatible endpoints: ``GET /v1/models`` and ``POST /v1/chat/completions``, plain
and streamed (``data:`` events ending with ``data: [DONE]``). The answer's text ends with a
"Sources" list; the response also carries ``citations`` (a field OpenAI's clients keep as an
extra: ``completion.model_extra["citations"]``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import Field

from rhizome.server import answering, sse
from rhizome.server.chat.agent import AGENT_MODEL, agent_of
from rhizome.server.chat.messages import Message, RetrievalOptions, turns
from rhizome.server.chat.names import every_model, resolve
from rhizome.server.chat.shapes import ChatCompletion, ModelCard, ModelListing
from rhizome.server.errors import public_message
from rhizome.server.security import require_read
from rhizome.server.state import server

router = APIRouter(prefix="/v1", tags=["openai"], dependencies=[Depends(require_read)])


class ChatCompletionRequest(RetrievalOptions):
    model: str
    messages: list[Message] = Field(min_length=1)
    stream: bool = False


@router.get("/models", response_model=ModelListing)
async def models(request: Request) -> ModelListing:
    """Every workspace and mode as a model, ``rhizome/<workspace>[:<mode>]``, and ``rhizome/agent``."""
    return ModelListing(data=[ModelCard(id=name) for name in every_model(server(request).workspaces)])


@router.post("/chat/completions", response_model=ChatCompletion,
             responses={200: {"content": {"text/event-stream": {}}, "description": "JSON, or chat.completion.chunk events with stream: true"}})
async def chat_completions(request: Request, body: ChatCompletionRequest) -> Any:
    """The last user message, made to stand on its own from the turns before it, answered from
    the workspace the model names (``rhizome/agent``: the workspace and mode it routes the
    question to), with its sources."""
    reply = Reply(body.model)
    if body.model == AGENT_MODEL:
        agent = agent_of(request)
        if body.stream:
            graph, history = agent.start(body.messages, body.filter)
            return StreamingResponse(_agent_stream(request, reply, agent.pieces(graph, history)), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        said = await agent.ask(body.messages, body.filter)
        text, cited = said.text + answering.sources_text(said.citations), [answering.citation(h) for h in said.citations]
        return {**reply.whole(text, cited), "routes": said.routes}
    space, mode = resolve(body.model, server(request).workspaces)
    ask = answering.Ask(await answering.standalone(space, turns(body.messages)), mode, body.k, body.filter)
    if body.stream:
        found = await answering.search(space, ask)  # a bad filter is a 4xx, before the stream starts
        return StreamingResponse(_stream(request, space, ask, found, reply), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})
    result = await answering.answer(space, ask)
    return reply.whole(result.text + answering.sources_text(result.citations), [answering.citation(h) for h in result.citations])


class Reply:
    """The envelope of one completion: its id, time and model."""

    def __init__(self, model: str) -> None:
        self.id, self.created, self.model = f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), model

    def whole(self, text: str, citations: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "citations": citations}

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return sse.data_only({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                              "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


async def _agent_stream(request: Request, reply: Reply, pieces: AsyncIterator[Any]) -> AsyncIterator[str]:
    """``rhizome/agent``'s answer as it is written, then its sources, citations and routes."""
    try:
        yield reply.chunk({"role": "assistant", "content": ""})
        async for piece in pieces:
            if isinstance(piece, str):
                yield reply.chunk({"content": piece})
                continue
            yield reply.chunk({"content": answering.sources_text(piece.citations)})
            yield reply.chunk({}, "stop", citations=[answering.citation(h) for h in piece.citations], routes=piece.routes)
    except Exception as exc:
        status, message = public_message(exc, server(request).redact)
        yield sse.data_only({"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error", "code": status}})
    yield sse.data_only("[DONE]")


async def _stream(request: Request, space: Any, ask: answering.Ask, found: Any, reply: Reply) -> AsyncIterator[str]:
    try:
        yield reply.chunk({"role": "assistant", "content": ""})
        async for piece in answering.answer_pieces(space, ask):
            yield reply.chunk({"content": piece})
        yield reply.chunk({"content": answering.sources_text(found.hits)})
        yield reply.chunk({}, "stop", citations=[answering.citation(h) for h in found.hits])
    except Exception as exc:
        status, message = public_message(exc, server(request).redact)
        yield sse.data_only({"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error", "code": status}})
    yield sse.data_only("[DONE]")
