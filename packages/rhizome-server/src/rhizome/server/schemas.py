"""The REST API's requests and responses, as pydantic models: they validate what comes in and
make the OpenAPI schema at ``/openapi.json``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rhizome.core.types import Hit

MAX_K = 100
"""Most hits one request may ask for."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    workspaces: int
    version: str


class ModeDescription(BaseModel):
    name: str | None = Field(description="the mode's name (null: the method has one mode)")
    purpose: str
    suits: list[str] = Field(description="question kinds the mode suits, the best first")
    default: bool


class WorkspaceDescription(BaseModel):
    name: str
    kind: Literal["index", "classifier"] = Field("index", description="an index (query, answer, documents) or a saved GORAG classifier (classify)")
    method: str
    modes: list[ModeDescription]
    models: dict[str, str | None] = Field(description="embedder and chat model (null: offline, extractive answers)")
    counts: dict[str, int] = Field(description="documents, chunks and what the graph holds (a classifier: labels, rounds, graph nodes and edges)")
    chat_models: list[str] = Field(description="the model names the chat endpoints know this workspace by")
    writable: bool
    labels: list[str] | None = Field(None, description="a classifier's labels")


class WorkspaceList(BaseModel):
    workspaces: list[WorkspaceDescription]


class QueryRequest(Strict):
    query: str = Field(min_length=1, description="the question or search text")
    mode: str | None = Field(None, description="retrieval mode (default: the method's first)")
    k: int = Field(4, ge=1, le=MAX_K, description="number of hits")
    filter: dict[str, Any] | None = Field(None, description='document metadata to match: {"field": value} or {"field": {"$in": [...]}}')
    score_threshold: float | None = Field(None, ge=0, le=1, description="leave out the hits scoring below it (a hit's score is "
                                          "its relevance in [0, 1], the same in every mode): fewer than k may come back")


class QueryResponse(BaseModel):
    workspace: str
    mode: str | None = Field(description="the mode that ran (null: the method has one mode)")
    hits: list[Hit]
    stats: dict[str, Any] = Field(description="what the call cost: model calls, tokens, the mode's own counters")
    notes: list[str] = Field(description="why there are fewer hits than k, in words")


class AnswerRequest(QueryRequest):
    stream: bool = Field(False, description="server-sent events: the hits, then the answer's pieces as written, then the end")


class AnswerResponse(BaseModel):
    workspace: str
    mode: str | None
    answer: str
    extractive: bool = Field(description="true when no model wrote it (a sentence copied from the best hit)")
    citations: list[Hit] = Field(description="the hits the answer cites")


class DocumentIn(Strict):
    id: str | None = Field(None, min_length=1, description="default: a hash of the text")
    text: str = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)


class InsertRequest(Strict):
    documents: list[DocumentIn | str] = Field(min_length=1, description="texts, or objects with id, text and metadata")


class DocumentRow(BaseModel):
    id: str
    status: str = Field(description="done (searchable), pending, processing or failed")
    chunks: int
    title: str | None = None
    error: str | None = None
    updated: str


class DocumentList(BaseModel):
    workspace: str
    documents: list[DocumentRow]
    total: int
    offset: int
    limit: int


class DeleteResponse(BaseModel):
    workspace: str
    deleted: list[str]
    chunks: int
    unfinished: str | None = None


JobStatus = Literal["queued", "running", "done", "failed"]


class Progress(BaseModel):
    phase: str | None = None
    done: int = 0
    total: int = 0


class JobView(BaseModel):
    id: str
    workspace: str
    kind: Literal["insert"] = "insert"
    status: JobStatus
    documents: int
    progress: Progress
    created: str
    started: str | None = None
    finished: str | None = None
    result: dict[str, Any] | None = Field(None, description="the insert's report: inserted, replaced, skipped, failed, chunks, stats")
    error: str | None = None
