"""The REST API: health, workspaces, query, answer (JSON or server-sent events), documents and
jobs. Every route but ``/health`` checks the API key (:mod:`rhizome.server.security`)."""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from rhizome.server import answering, sse
from rhizome.server.errors import public_message
from rhizome.server.jobs import delete
from rhizome.server.offload import call_in_thread
from rhizome.server.schemas import (
    AnswerRequest,
    AnswerResponse,
    DeleteResponse,
    DocumentList,
    DocumentRow,
    Health,
    InsertRequest,
    JobView,
    QueryRequest,
    QueryResponse,
    WorkspaceDescription,
    WorkspaceList,
)
from rhizome.server.security import require_read, require_write
from rhizome.server.state import server, workspace
from rhizome.server.uploads import MULTIPART_BODY

router = APIRouter()
reads = APIRouter(dependencies=[Depends(require_read)])
writes = APIRouter(dependencies=[Depends(require_write)])


@router.get("/health", response_model=Health, tags=["server"])
async def health(request: Request) -> Health:
    """Whether the server is up (no key needed)."""
    return Health(workspaces=len(server(request).workspaces), version=importlib.metadata.version("rhizome-server"))


@reads.get("/workspaces", response_model=WorkspaceList, tags=["server"])
async def list_workspaces(request: Request) -> WorkspaceList:
    """Every workspace: its kind, method, modes, models, counts and chat model names."""
    found = [WorkspaceDescription.model_validate(w) for w in await call_in_thread(server(request).workspaces.describe)]
    return WorkspaceList(workspaces=found)


@reads.post("/{ws}/query", response_model=QueryResponse, tags=["search"])
async def query(request: Request, ws: str, body: QueryRequest) -> QueryResponse:
    """The ``k`` best hits for the query, with scores, provenance and metadata."""
    return await answering.query(workspace(request, ws), answering.Ask(body.query, body.mode, body.k, body.filter, body.score_threshold))


@reads.post("/{ws}/answer", response_model=AnswerResponse, tags=["search"],
            responses={200: {"content": {"text/event-stream": {}}, "description": "JSON, or server-sent events with stream: true"}})
async def answer(request: Request, ws: str, body: AnswerRequest) -> Any:
    """An answer with its citations; ``stream: true`` sends server-sent events: ``hits``, then
    ``token`` pieces as the model writes them, then ``done`` (or ``error``)."""
    space = workspace(request, ws)
    ask = answering.Ask(body.query, body.mode, body.k, body.filter, body.score_threshold)
    if body.stream:
        found = await answering.search(space, ask)  # a bad mode or filter is a 4xx, before the stream starts
        return StreamingResponse(_answer_events(request, space, ask, found), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})
    return await answering.answered(space, ask)


async def _answer_events(request: Request, space: Any, ask: answering.Ask, found: Any) -> AsyncIterator[str]:
    try:
        yield sse.event("hits", {"mode": space.index.check_mode(ask.mode), "hits": [h.model_dump(mode="json") for h in found.hits],
                                 "stats": found.stats, "notes": found.notes})
        text = []
        async for piece in answering.answer_pieces(space, ask):
            text.append(piece)
            yield sse.event("token", {"text": piece})
        yield sse.event("done", {"answer": "".join(text), "extractive": space.index.llm is None})
    except Exception as exc:
        status, message = public_message(exc, server(request).redact)
        yield sse.event("error", {"error": {"message": message, "code": status}})


@reads.get("/{ws}/documents", response_model=DocumentList, tags=["documents"])
async def list_documents(request: Request, ws: str, offset: int = Query(0, ge=0),
                         limit: int = Query(100, ge=1, le=1000)) -> DocumentList:
    """The workspace's documents with their status (done, pending, processing, failed), paged."""
    space = workspace(request, ws)

    def rows() -> tuple[list[DocumentRow], int]:
        store = space.index.store
        statuses = store.statuses()
        page = statuses[offset:offset + limit]
        metadata = store.documents_metadata(s.id for s in page)
        chunks = store.chunk_counts()
        return [DocumentRow(id=s.id, status=s.status, chunks=chunks.get(s.id, 0), title=metadata.get(s.id, {}).get("title"),
                            error=s.error, updated=s.updated) for s in page], len(statuses)

    found, total = await call_in_thread(rows)
    return DocumentList(workspace=space.name, documents=found, total=total, offset=offset, limit=limit)


@writes.post("/{ws}/documents", response_model=JobView, status_code=202, tags=["documents"], openapi_extra=MULTIPART_BODY)
async def insert_documents(request: Request, ws: str, body: InsertRequest) -> JobView:
    """Insert documents as a background job (``GET /jobs/{id}`` follows it). The documents are
    checked first: a bad one refuses the request and nothing is queued. A ``multipart/form-data``
    body uploads files instead (:mod:`rhizome.server.uploads`)."""
    from rhizome.core.documents import coerce_documents

    space = workspace(request, ws)
    documents = coerce_documents([d if isinstance(d, str) else d.model_dump(exclude_none=True) for d in body.documents])
    return server(request).jobs.submit_insert(space, documents)


@writes.delete("/{ws}/documents/{document_id:path}", response_model=DeleteResponse, tags=["documents"])
async def delete_document(request: Request, ws: str, document_id: str) -> DeleteResponse:
    """Delete a document and whatever only it supported (the method's own delete), after the
    workspace's queued writes."""
    return await delete(workspace(request, ws), document_id)


@reads.get("/jobs/{job_id}", response_model=JobView, tags=["documents"])
async def job(request: Request, job_id: str) -> JobView:
    """An insert job: queued, running (phase and progress), done (the report) or failed (why)."""
    return server(request).jobs.get(job_id)
