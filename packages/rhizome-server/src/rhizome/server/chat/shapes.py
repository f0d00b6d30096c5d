"""The chat endpoints' responses as pydantic models, for the OpenAPI schema (the shapes OpenAI's
and Ollama's clients read, plus ``citations``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Citation(BaseModel):
    """A hit an answer rests on, without its text."""

    id: str
    title: str = Field(description="the document's title, else its id")
    score: float
    kind: str
    document_ids: list[str]
    chunk_ids: list[str]
    sources: list[str]
    metadata: dict[str, Any]


class AgentRoute(BaseModel):
    """Where ``rhizome/agent`` searched for an answer."""

    workspace: str
    mode: str | None = None
    query: str | None = Field(None, description="what it searched for")


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class ChatCompletion(BaseModel):
    """OpenAI's ``chat.completion``; the text ends with the sources."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    citations: list[Citation]
    routes: list[AgentRoute] | None = Field(None, description="rhizome/agent: the workspaces and modes it searched")


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "rhizome"


class ModelListing(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class OllamaDetails(BaseModel):
    format: str = "rhizome"
    family: str = Field(description="the workspace's method")
    families: list[str]
    parameter_size: str = ""
    quantization_level: str = ""


class OllamaModel(BaseModel):
    name: str
    model: str
    modified_at: str
    size: int = 0
    digest: str = ""
    details: OllamaDetails


class OllamaTags(BaseModel):
    models: list[OllamaModel]


class OllamaAnswer(BaseModel):
    """The last (or only) object of an Ollama answer."""

    model: str
    created_at: str
    done: bool = True
    done_reason: str = "stop"
    total_duration: int = Field(description="nanoseconds")
    citations: list[Citation]
    routes: list[AgentRoute] | None = Field(None, description="rhizome/agent: the workspaces and modes it searched")


class OllamaChatAnswer(OllamaAnswer):
    message: AssistantMessage


class OllamaGenerateAnswer(OllamaAnswer):
    response: str
