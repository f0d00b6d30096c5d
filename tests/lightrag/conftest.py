"""Every LightRAG test runs twice: with the shipped limit of list items a profile keeps inside
its record (the test corpora's profiles are short: their lists stay inside), and with none, so
that every profile keeps its citations and fragments as rows (rhizome.core.graph.lists)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rhizome.core.graph import lists


@pytest.fixture(autouse=True, params=[lists.INLINE, 0], ids=["lists-inline", "lists-as-rows"])
def inline_limit(request: pytest.FixtureRequest) -> Iterator[int]:
    # set by hand, not with monkeypatch: a test's monkeypatch.undo() must not reset it
    shipped = lists.INLINE
    lists.INLINE = request.param
    yield request.param
    lists.INLINE = shipped
