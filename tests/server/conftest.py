"""Fixtures of the server's tests: the sample corpus indexed offline once per session with each
method (copied for a test that writes) and test clients over apps (see server_support.py)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from server_support import API_KEY, RunningServer, build_index, open_app


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``built(method)``: the sample corpus indexed offline with ``method``, once per session
    (never written to: a test that writes serves a copy, see ``fresh``)."""
    cache: dict[str, Path] = {}

    def get(method: str) -> Path:
        if method not in cache:
            cache[method] = build_index(tmp_path_factory.mktemp("built") / method, method)
        return cache[method]

    return get


@pytest.fixture
def fresh(built: Callable[[str], Path], tmp_path: Path) -> Callable[[str, str], Path]:
    """``fresh(method, name)``: a copy of ``built(method)`` in this test's folder, to write to."""

    def copy(method: str, name: str | None = None) -> Path:
        target = tmp_path / (name or method)
        shutil.copytree(built(method), target)
        return target

    return copy


@pytest.fixture
def client_for() -> Iterator[Callable[..., Any]]:
    """``client_for(specs, *flags, **settings)``: a TestClient over the app (closed after the test)."""
    from fastapi.testclient import TestClient

    opened: list[Any] = []

    def make(specs: list[str], *flags: str, raise_server_exceptions: bool = True, **settings: Any) -> Any:
        client = TestClient(open_app(specs, *flags, **settings), base_url="http://127.0.0.1",
                            raise_server_exceptions=raise_server_exceptions)
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)




@pytest.fixture
def running(built: Callable[[str], Path]) -> Iterator[RunningServer]:
    """A real uvicorn on a free loopback port serving ``docs`` (naive) and ``light`` (LightRAG),
    with the API key, for the official clients."""
    with RunningServer(open_app([f"docs={built('naive')}", f"light={built('lightrag')}"], "--api-key", API_KEY)) as server:
        yield server
