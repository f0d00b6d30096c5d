"""Chat model names: ``rhizome/<workspace>:<mode>``, and ``rhizome/<workspace>`` for its
default mode; ``rhizome/agent`` routes each question to a workspace and mode itself
(:mod:`rhizome.server.chat.agent`). Ollama clients add ``:latest`` to a name without a tag: it means the default
mode too (unless a mode is called ``latest``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rhizome.server.errors import ModelNameError, WorkspaceNotFoundError

PREFIX = "rhizome/"


def model_names(workspace: str, modes: Sequence[str | None]) -> list[str]:
    """The names a workspace answers to: the default first, then one per mode."""
    return [f"{PREFIX}{workspace}", *(f"{PREFIX}{workspace}:{mode}" for mode in modes if mode)]


def every_model(workspaces: Any) -> list[str]:
    """Every model name of the server: each workspace's, then the agent's (when there is an
    index)."""
    from rhizome.server.chat.agent import AGENT_MODEL

    names = [n for w in workspaces for n in w.chat_models()]
    return [*names, AGENT_MODEL] if names else []


def resolve(name: str, workspaces: Any) -> tuple[Any, str | None]:
    """The workspace and mode a model name means (a 404 that lists the names otherwise)."""
    if not name.startswith(PREFIX):
        raise ModelNameError(_unknown(name, workspaces))
    space_name, _, mode = name[len(PREFIX):].partition(":")
    try:
        space = workspaces.get(space_name)
    except WorkspaceNotFoundError:
        raise ModelNameError(_unknown(name, workspaces)) from None
    modes = list(space.index.modes)
    if mode == "" or (mode == "latest" and "latest" not in modes):
        return space, None
    if mode not in modes:
        raise ModelNameError(_unknown(name, workspaces))
    return space, mode


def _unknown(name: str, workspaces: Any) -> str:
    known = every_model(workspaces)
    shown = ", ".join(known[:20]) + (", …" if len(known) > 20 else "")
    return f"no model {name!r} on this server; models are rhizome/<workspace>[:<mode>] and rhizome/agent: {shown}"
