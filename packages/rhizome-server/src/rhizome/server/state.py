"""What the routes share, kept on the app: the workspaces and the jobs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from rhizome.server.jobs import Jobs
from rhizome.server.settings import ServerSettings
from rhizome.server.workspaces import Workspace, Workspaces


@dataclass
class ServerState:
    workspaces: Workspaces
    jobs: Jobs
    settings: ServerSettings
    redact: Callable[[str], str]
    """Hides the workspaces' locations in a message (:class:`~rhizome.server.errors.Redactor`)."""


def server(request: Request) -> ServerState:
    found: ServerState = request.app.state.server
    return found


def workspace(request: Request, name: str) -> Workspace:
    """The workspace ``name`` (404 when the server was not started with it)."""
    return server(request).workspaces.get(name)
