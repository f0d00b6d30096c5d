"""``rhizome mcp``: the MCP tools over stdio, for an MCP host that starts the process itself.
Registered through the ``rhizome.commands`` entry point; the SDK loads only when it runs."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any


def register(subparsers: Any) -> None:
    from rhizome.tools.cli import model_flags

    p = subparsers.add_parser(
        "mcp", help="serve indexes to an MCP host (Claude Desktop, an IDE, an agent) over stdio (see docs/server.md)",
        description="Speak the Model Context Protocol on standard input and output: the host that starts this "
                    "command gets the tools list_workspaces, search and answer over the indexes (each a workspace "
                    "named after its folder or NAME=PATH), and with --allow-writes insert_documents and delete_document.")
    p.add_argument("indexes", nargs="*", metavar="IDX", help="an index folder or postgresql:// URL, or NAME=IDX")
    p.add_argument("--root", help="also serve every index folder directly under this folder, named after it")
    p.add_argument("--allow-writes", action="store_true",
                   help="offer the tools that insert and delete documents (default: none; the indexes are opened read-only)")
    model_flags(p)
    p.set_defaults(func=cmd_mcp)


def open_state(args: argparse.Namespace) -> Any:
    """The workspaces of the command line, opened as ``rhizome serve`` opens them (read-only
    unless writes are allowed), with their jobs and settings."""
    from rhizome.server.app import model_server
    from rhizome.server.errors import Redactor
    from rhizome.server.jobs import Jobs
    from rhizome.server.settings import ServerSettings
    from rhizome.server.state import ServerState
    from rhizome.server.workspaces import Workspaces, collect

    settings = ServerSettings(read_only=not args.allow_writes)
    workspaces = Workspaces.open(collect(args.indexes, args.root), args, read_only=settings.read_only)
    redact = Redactor([*workspaces.hidden_locations(), *model_server()])
    return ServerState(workspaces, Jobs(redact), settings, redact)


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from rhizome.server.mcp import build

    # standard output is the protocol's channel: whatever opening the indexes prints goes to the log
    with contextlib.redirect_stdout(sys.stderr):
        state = open_state(args)
    server = build(state, writes=args.allow_writes)

    async def run() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await state.jobs.wait()

    try:
        anyio.run(run)
    finally:
        state.workspaces.close()
    return 0
