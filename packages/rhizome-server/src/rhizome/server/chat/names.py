"""Chat model names: ``rhizome/<workspace>:<mode>``, and ``rhizome/<workspace>`` for its
default mode. Ollama clients add ``:latest`` to a name without a tag: it means the default
mode too (unless a mode is called ``latest``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rhizome.server.errors import ModelNameError, WorkspaceNotFoundError

PREFIX = "rhizome/"


def model_names(workspace: str, modes: Sequence[str | None]) -> list[str]:
    """The names a workspace answers to: the default first, then one per mode."""
    return [f"{PREFIX}{workspace}", *(f"{PREFIX}{workspace}:{mode}" for mode in modes if mode)]


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
    known = [n for w in workspaces for n in w.chat_models()]
    shown = ", ".join(known[:20]) + (", …" if len(known) > 20 else "")
    return f"no model {name!r} on this server; models are rhizome/<workspace>[:<mode>]: {shown}"
