"""Shared test setup: no test may reach a real model server or write to the user's cache."""

from __future__ import annotations

import socket

import pytest


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path_factory):
    # a port nobody listens on: code that forgets to be offline fails fast instead of finding a
    # developer's real Ollama
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("RHIZOME_CACHE_DIR", str(tmp_path_factory.mktemp("rhizome-cache")))
    monkeypatch.delenv("RHIZOME_LLM", raising=False)
    monkeypatch.delenv("RHIZOME_EMBED", raising=False)


def pytest_sessionfinish(session, exitstatus):
    # a selection (-k/-m) that matches no test is not a failure of the suite
    if exitstatus == 5:
        session.exitstatus = 0
