"""Rhizome's workspaces as MCP tools, for agents in an MCP host (Claude Desktop, an IDE, any
client of the Model Context Protocol), on the official ``mcp`` SDK.

The same tools run over stdio (``rhizome mcp``: the host starts the process) and over
streamable HTTP at ``/mcp`` of ``rhizome serve``. Each tool calls what the REST route of the
same job calls (:mod:`rhizome.server.answering`, :mod:`rhizome.server.jobs`), over the server's
workspaces; a typed error becomes a tool error with the message a REST client would read
(locations hidden), anything else a generic one (the traceback goes to the log).

Reads are open as REST reads are (over HTTP: with the server's key when it has one).
``insert_documents`` and ``delete_document`` exist only when the server is started with the
opt-in flag (``rhizome mcp --allow-writes``, ``rhizome serve --mcp-writes``): an agent acts on
what it reads, and a document it was given could tell it to delete others. Over HTTP a write also needs the API key,
as every REST write does.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from rhizome.server import answering, graphview
from rhizome.server.classify import MAX_TEXTS, ClassifyResponse
from rhizome.server.errors import public_message
from rhizome.server.graphview import MAX_DEPTH, MAX_NODES, Neighbourhood
from rhizome.server.jobs import delete
from rhizome.server.offload import call_in_thread
from rhizome.server.schemas import (
    MAX_K,
    AnswerResponse,
    DeleteResponse,
    DocumentIn,
    JobView,
    QueryResponse,
    WorkspaceDescription,
    WorkspaceList,
)
from rhizome.server.state import ServerState

INSTRUCTIONS = """Rhizome serves document indexes (workspaces), each built with a graph-RAG method.
Call list_workspaces first: it names each workspace, its method and its retrieval modes with the kinds
of question each suits (specific, multi-hop, global). search returns passages with scores and
provenance (document ids) to cite; answer writes an answer with its citations. A workspace of kind
classifier labels texts (classify) instead."""

Workspace = Annotated[str, Field(description="a workspace name, as list_workspaces gives it")]
Query = Annotated[str, Field(min_length=1, description="the question or search text")]
Mode = Annotated[str | None, Field(description="retrieval mode of the workspace (default: its method's first); list_workspaces lists them")]
K = Annotated[int, Field(ge=1, le=MAX_K, description="number of passages")]
Filter = Annotated[dict[str, Any] | None, Field(
    description='document metadata to match: {"field": value} or {"field": {"$in": [a, b]}}')]
Threshold = Annotated[float | None, Field(ge=0.0, le=1.0, description=(
    "leave out passages scoring below it (a score is the query's cosine to the nearest passage a hit cites, "
    "0-1, the same in every mode): fewer than k may come back"))]

MCP_HEADERS = ("Accept", "Mcp-Protocol-Version", "Mcp-Session-Id", "Last-Event-ID")
"""Headers an MCP client sends over HTTP (a browser page's client, with ``--cors``, asks for them)."""
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@contextlib.contextmanager
def root_logging_kept() -> Iterator[None]:
    """Undo what the SDK's server does to the process's logging on construction (``basicConfig``
    at INFO with a rich handler on the root logger): the process that runs the server, or embeds
    it, keeps its own logging."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def build(state: ServerState, *, writes: bool = False) -> MCPServer:
    """The MCP server of ``state``'s workspaces; ``writes`` adds ``insert_documents`` and
    ``delete_document``."""
    with root_logging_kept():
        server: MCPServer = MCPServer("rhizome", instructions=INSTRUCTIONS, version=importlib.metadata.version("rhizome-server"))

    @contextlib.contextmanager
    def told() -> Iterator[None]:
        """A failure as the tool error a client may read (see the module docstring)."""
        try:
            yield
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(public_message(exc, state.redact)[1]) from None

    @server.tool(annotations=READ)
    async def list_workspaces() -> WorkspaceList:
        """Every workspace: its kind (index or classifier), method, retrieval modes (with the question kinds
        each suits), models and counts."""
        with told():
            return WorkspaceList(workspaces=[WorkspaceDescription.model_validate(w)
                                             for w in await call_in_thread(state.workspaces.describe)])

    @server.tool(annotations=READ)
    async def search(workspace: Workspace, query: Query, mode: Mode = None, k: K = 4, filter: Filter = None,
                     score_threshold: Threshold = None) -> QueryResponse:
        """The k passages of a workspace that best match the query, each with its score, kind, provenance
        (document and chunk ids, character spans) and metadata; stats and notes say what the search did."""
        with told():
            return await answering.query(state.workspaces.get(workspace), answering.Ask(query, mode, k, filter, score_threshold))

    @server.tool(annotations=READ)
    async def answer(workspace: Workspace, query: Query, mode: Mode = None, k: K = 4, filter: Filter = None,
                     score_threshold: Threshold = None) -> AnswerResponse:
        """An answer to the question from a workspace's passages, with the passages it cites
        (extractive: a sentence of the best passage, when the server has no chat model)."""
        with told():
            return await answering.answered(state.workspaces.get(workspace), answering.Ask(query, mode, k, filter, score_threshold))

    @server.tool(annotations=READ)
    async def graph_neighbourhood(
        workspace: Workspace,
        entity: Annotated[str, Field(min_length=1, description="an entity's name as written in the documents, or its id")],
        depth: Annotated[int, Field(ge=1, le=MAX_DEPTH, description="relations away from the entity")] = 1,
        limit: Annotated[int, Field(ge=1, le=MAX_NODES, description="most entities returned")] = 50,
    ) -> Neighbourhood:
        """An entity of a workspace's graph (GraphRAG, LightRAG, HippoRAG, ArchRAG) with its description, the
        passages and communities that hold it, and its neighbours up to depth relations away with the relations
        between them, the most strongly related first."""
        with told():
            space = state.workspaces.get(workspace)
            return Neighbourhood.model_validate(await call_in_thread(lambda: graphview.neighbourhood(space, entity, depth, limit)))

    async def classify(workspace: Annotated[str, Field(description="a classifier workspace (kind classifier in list_workspaces)")],
                       texts: Annotated[list[str], Field(min_length=1, max_length=MAX_TEXTS)]) -> ClassifyResponse:
        """Label texts with a workspace's saved GORAG classifier: each text's label, the scorer's confidence,
        and the candidate labels with their probabilities."""
        with told():
            space = state.workspaces.classifier(workspace)
            return ClassifyResponse(workspace=space.name, results=await space.classify(texts))

    if state.workspaces.classifiers:  # offered only where there is a classifier to use
        server.add_tool(classify, annotations=READ)

    if writes:
        _add_writes(server, state, told)
    return server


def _add_writes(server: MCPServer, state: ServerState, told: Callable[[], contextlib.AbstractContextManager[None]]) -> None:
    """``insert_documents`` and ``delete_document`` on ``server`` (``told`` turns a failure into
    the tool error a client reads)."""

    async def check_write(ctx: Context) -> None:
        """Over HTTP, the key (as for a REST write); over stdio the host that started the
        process is its user. A ``--read-only`` server refuses either way."""
        from rhizome.server.errors import ReadOnlyError
        from rhizome.server.security import require_write

        request = ctx.request_context.request
        if request is not None:
            await require_write(request)
        elif state.settings.read_only:
            raise ReadOnlyError("the indexes were opened read-only (--read-only); start without it to write")

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    async def insert_documents(workspace: Workspace, documents: Annotated[list[DocumentIn | str], Field(min_length=1, description=(
            "texts, or objects with text, id (default: a hash of the text) and metadata; an id the workspace "
            "holds already is replaced"))], ctx: Context) -> JobView:
        """Insert documents into a workspace and wait until they are searchable: the insert's job, done
        (with the report: inserted, replaced, skipped, failed) or failed (with the reason)."""
        from rhizome.core.documents import coerce_documents

        with told():
            await check_write(ctx)
            space = state.workspaces.get(workspace)
            given = coerce_documents([d if isinstance(d, str) else d.model_dump(exclude_none=True) for d in documents])
            return await state.jobs.insert(space, given)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False))
    async def delete_document(workspace: Workspace, document_id: Annotated[str, Field(min_length=1)], ctx: Context) -> DeleteResponse:
        """Delete a document from a workspace, and what only it supported (its chunks, entities, summaries)."""
        with told():
            await check_write(ctx)
            return await delete(state.workspaces.get(workspace), document_id)


class HttpEndpoint:
    """The MCP server over streamable HTTP, as an ASGI app for the route ``/mcp`` of the serve
    app: stateless (each request stands alone, so any number of clients and no session to
    expire), its reads behind the server's key as the REST reads are. :meth:`running` must
    wrap the app's life (the SDK's task group)."""

    def __init__(self, state: ServerState, *, writes: bool = False) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        server = build(state, writes=writes)
        # the app's own middleware checks the Host header, the body size and CORS for every route
        server.streamable_http_app(stateless_http=True, max_request_body_size=state.settings.max_body,
                                   transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.manager = server.session_manager
        self.redact = state.redact

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from fastapi import Request
        from fastapi.responses import JSONResponse

        from rhizome.server.errors import UnauthorizedError, error_body
        from rhizome.server.security import require_read

        request = Request(scope, receive)
        try:
            await require_read(request)
        except UnauthorizedError as exc:
            response = JSONResponse(error_body(request, exc.status, str(exc), type(exc).__name__), status_code=exc.status,
                                    headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.manager.asgi_app(scope, receive, send)


__all__ = ["HttpEndpoint", "build"]
