"""``rhizome serve``: Rhizome indexes over HTTP (see docs/server.md).

``create_app(workspaces, settings)`` (:mod:`rhizome.server.app`) makes the ASGI app;
``app_from_args([...])`` (:mod:`rhizome.server.command`) makes the one ``rhizome serve`` runs
from the same flags. Both are imported on first use, so ``rhizome --help`` loads no web stack.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app_from_args", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "app_from_args":
        from rhizome.server.command import app_from_args

        return app_from_args
    if name == "create_app":
        from rhizome.server.app import create_app

        return create_app
    raise AttributeError(f"module 'rhizome.server' has no attribute {name!r}")
