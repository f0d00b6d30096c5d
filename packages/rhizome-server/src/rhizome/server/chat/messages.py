"""What a chat request asks: its messages as the turns of a conversation (the last user message
is the question, made to stand on its own by :func:`rhizome.server.answering.standalone`);
``k`` and ``filter`` may come as extra fields of the request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rhizome.core.retrieval.conversation import Turn
from rhizome.server.schemas import MAX_K


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class RetrievalOptions(BaseModel):
    """Fields a chat request may add (OpenAI's client: ``extra_body``; Ollama's: ``options``)."""

    model_config = ConfigDict(extra="allow")

    k: int = Field(4, ge=1, le=MAX_K, description="passages the answer is written from")
    filter: dict[str, Any] | None = Field(None, description="document metadata to match")


def text_of(message: Message) -> str:
    """A message's text (OpenAI's content parts: their text parts joined)."""
    if isinstance(message.content, list):
        return "\n".join(str(p.get("text", "")) for p in message.content if p.get("type") == "text")
    return message.content or ""


def turns(messages: Sequence[Message]) -> list[Turn]:
    """The messages as ``(role, text)`` turns."""
    return [(message.role, text_of(message)) for message in messages]
