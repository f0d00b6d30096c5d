"""Helpers of the server's tests (a module of its own name: test modules import it, and
``conftest`` would be whichever conftest.py of the suite Python imported first): the API key,
small indexes built offline, the options ``rhizome serve`` parses, apps over workspaces, and a
real uvicorn on a free loopback port."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from rhizome.rag.demo import sample_corpus

API_KEY = "test-key-0123456789"
AUTH = {"Authorization": f"Bearer {API_KEY}"}


def wait_for(client: Any, job_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """The job once it is done or failed (or as it stands after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = client.get(f"/jobs/{job_id}", headers=AUTH).json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def serve_args(*flags: str) -> Any:
    """The namespace ``rhizome serve`` parses from ``flags`` (offline, no cache file by default)."""
    from rhizome.rag.cli import build_parser

    return build_parser().parse_args(["serve", *flags, *(["--offline"] if "--llm" not in flags else []), "--no-cache"])


def build_index(out: Path, method: str, corpus: Path | None = None) -> Path:
    """An index of ``corpus`` (default: the sample corpus) built offline by ``rhizome index``."""
    from rhizome.rag.cli import main

    source = corpus or sample_corpus()
    assert main(["index", str(source), "--method", method, "--out", str(out), "--offline", "-q", "--no-cache"]) == 0
    return out


def open_app(specs: list[str], *flags: str, **settings: Any) -> Any:
    """The app ``rhizome serve SPECS FLAGS`` would run (offline, no cache file), with
    ``settings`` overriding its own."""
    from rhizome.server.command import app_from_args

    app = app_from_args([*specs, *flags, *(["--offline"] if "--llm" not in flags else []), "--no-cache"])
    if settings:
        from dataclasses import replace

        from rhizome.server.app import create_app

        workspaces = app.state.server.workspaces
        try:
            app = create_app(workspaces, replace(app.state.settings, **settings))
        except BaseException:
            workspaces.close()
            raise
    return app


class RunningServer:
    """uvicorn serving an app on a free loopback port (port 0: the system picks one) in a
    thread of this process."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        from rhizome.server.settings import KEEP_ALIVE_SECONDS

        # as `rhizome serve` runs it: idle connections outlive the clients' pools
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", timeout_keep_alive=KEEP_ALIVE_SECONDS))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RunningServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        self.port = int(self.server.servers[0].sockets[0].getsockname()[1])
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
