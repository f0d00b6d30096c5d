"""The conformance kit over every registered method and mode, with every index in PostgreSQL
(one server for the session, a new schema per index: see ``tests/conftest.py``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rhizome.tools.testing import IndexConformance, registered_methods


class TestEveryMethodOnPostgres(IndexConformance):
    @pytest.fixture(params=registered_methods())
    def method(self, request: pytest.FixtureRequest) -> str:
        return request.param

    @pytest.fixture(autouse=True)
    def _server(self, postgres: Any) -> Iterator[None]:
        self.server = postgres
        yield
        # the kit closes the indexes it built; one a test opened and left open holds a
        # connection until it is collected. The server takes 100 clients, and a long run of
        # tests once reached them: collect when many are open (a full collection of a worker's
        # heap after each test was a tenth of this run's CPU)
        if postgres.clients() > 30:
            gc.collect()

    def place(self, tmp_path: Path, name: str) -> str:
        return self.server.url(name)

    def scratch(self) -> str:
        return self.server.url("scratch")
