"""``rhizome serve``: registered with the ``rhizome`` command line through the
``rhizome.commands`` entry point, so the umbrella never imports the server."""

from __future__ import annotations

import argparse
import os
from typing import Any

from rhizome.server.settings import API_KEY_ENV, DEFAULT_MAX_BODY, KEEP_ALIVE_SECONDS


def register(subparsers: Any) -> None:
    from rhizome.tools.cli import model_flags

    p = subparsers.add_parser(
        "serve", help="serve indexes over HTTP: REST, OpenAI- and Ollama-compatible chat (see docs/server.md)",
        description="Hold indexes open and serve them over HTTP. Each index is a workspace, named after its folder "
                    "or NAME=PATH. Reads are open on 127.0.0.1; writes, and any other --host, need an API key.")
    p.add_argument("indexes", nargs="*", metavar="IDX", help="an index folder or postgresql:// URL, or NAME=IDX")
    p.add_argument("--root", help="also serve every index folder directly under this folder, named after it")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    p.add_argument("--api-key", help=f"the key clients send as 'Authorization: Bearer KEY' (env {API_KEY_ENV}); "
                                     "needed for writes and for any --host but loopback")
    p.add_argument("--cors", action="append", default=[], metavar="ORIGIN",
                   help="let browser pages from ORIGIN call the server (repeat for several; default: none)")
    p.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, metavar="BYTES",
                   help=f"largest request body accepted (default {DEFAULT_MAX_BODY:,})")
    p.add_argument("--read-only", action="store_true",
                   help="open the indexes read-only: writes are refused and another process may write meanwhile")
    p.add_argument("--mcp-writes", action="store_true",
                   help="offer MCP clients at /mcp the tools that insert and delete documents (they need the API key too)")
    model_flags(p)
    p.set_defaults(func=cmd_serve)


def settings_from(args: argparse.Namespace) -> Any:
    from rhizome.server.settings import ServerSettings

    key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV)
    return ServerSettings(host=args.host, port=args.port, api_key=key, cors=tuple(args.cors),
                          max_body=args.max_body, read_only=args.read_only,
                          mcp_writes=args.mcp_writes, agent_llm=None if args.offline else args.llm).check()


def app_from_args(argv: list[str]) -> Any:
    """The app ``rhizome serve ARGV`` runs, for Python code that runs it itself (in a thread,
    under another ASGI server, in tests): the same flags, checks and workspaces."""
    parser = argparse.ArgumentParser(prog="rhizome")
    register(parser.add_subparsers(dest="command", required=True))
    return prepare(parser.parse_args(["serve", *argv]))


def prepare(args: argparse.Namespace) -> Any:
    """Check the settings (before any index is opened), open the workspaces, make the app."""
    from rhizome.server.app import create_app
    from rhizome.server.workspaces import Workspaces, collect

    settings = settings_from(args)
    workspaces = Workspaces.open(collect(args.indexes, args.root), args, read_only=settings.read_only)
    return create_app(workspaces, settings)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    app = prepare(args)
    settings = app.state.settings
    for space in app.state.server.workspaces:
        print(f"workspace {space.name}: {space.index.method}, models {', '.join(space.chat_models())}")
    writes = "refused (--read-only)" if settings.read_only else ("with the API key" if settings.api_key else
                                                                   f"refused until an API key is set (--api-key or {API_KEY_ENV})")
    print(f"writes: {writes}; API docs at http://{settings.host}:{settings.port}/docs")
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="info", timeout_keep_alive=KEEP_ALIVE_SECONDS)
    return 0
