"""The ASGI app: the routes, the error handlers, the body limit and (when asked) CORS, over
workspaces opened beforehand. ``create_app`` is what tests and ``rhizome serve`` both use."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.routing import Route

from rhizome.server import classify, errors, graphapi, page, rest, uploads
from rhizome.server.chat import ollama, openai
from rhizome.server.chat.agent import RouterAgent
from rhizome.server.hosts import LoopbackHosts
from rhizome.server.jobs import Jobs
from rhizome.server.limits import BodyLimit
from rhizome.server.mcp import MCP_HEADERS, HttpEndpoint
from rhizome.server.settings import ServerSettings, is_loopback
from rhizome.server.state import ServerState
from rhizome.server.workspaces import Workspaces

DESCRIPTION = """Rhizome indexes over HTTP: each index is a workspace. Search and answer with
`POST /{ws}/query` and `POST /{ws}/answer`, manage documents under `/{ws}/documents`, or point an
OpenAI (`/v1`) or Ollama (`/api`) chat client at the server: its models are
`rhizome/<workspace>[:<mode>]`; MCP clients find the same workspaces as tools at `/mcp`. With an API key set, send `Authorization: Bearer KEY`."""


def create_app(workspaces: Workspaces, settings: ServerSettings | None = None, *, close_on_shutdown: bool = True) -> FastAPI:
    """The app serving ``workspaces`` (opened by the caller; closed when the app shuts down,
    after the running inserts finish, unless ``close_on_shutdown`` is false)."""
    settings = (settings or ServerSettings()).check()
    redact = errors.Redactor([*workspaces.hidden_locations(), *model_server()])
    state = ServerState(workspaces, Jobs(redact), settings, redact)
    mcp_endpoint = HttpEndpoint(state, writes=settings.mcp_writes)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with mcp_endpoint.running():
                yield
        finally:
            await state.jobs.wait()
            if close_on_shutdown:
                workspaces.close()

    app = FastAPI(title="Rhizome", description=DESCRIPTION, version=_version(), lifespan=lifespan)
    app.state.server = state
    app.state.settings = settings
    app.state.agent = RouterAgent(workspaces, settings.agent_llm)
    errors.install(app, redact)
    app.mount(page.PREFIX, page.files(), name="page")
    for router in (page.router, rest.router, rest.reads, uploads.router, rest.writes, graphapi.router, classify.router,
                   openai.router, ollama.router):
        app.include_router(router)
    app.router.routes.append(Route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"]))
    app.add_middleware(BodyLimit, limit=settings.max_body)
    if is_loopback(settings.host):
        app.add_middleware(LoopbackHosts)
    if settings.cors:
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors), allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "X-API-Key", *MCP_HEADERS])
    return app


def model_server() -> list[tuple[str, str]]:
    """The Ollama server's address, which a model error names: the clients see it as words."""
    import os

    host = os.environ.get("OLLAMA_HOST", "").strip().rstrip("/")
    return [(host, "the model server")] if host else []


def _version() -> str:
    import importlib.metadata

    return importlib.metadata.version("rhizome-server")
