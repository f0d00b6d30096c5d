"""Forgetting in PostgreSQL: after a document is deleted, no table of the index's schema — the
records and the model-call cache (``model_calls``) — holds anything of it, for every method
(the canary document and fake model of tests/conformance/test_forgetting.py)."""

from __future__ import annotations

import pytest

from rhizome.core.store.backends import postgres as pg
from rhizome.tools.testing import index_class, registered_methods
from tests.conformance.test_forgetting import CANARIES, _build


def _leaks(url: str) -> list[str]:
    raw = pg.connect(url)
    try:
        schema = pg.parse_url(url)[1]
        tables = [r[0] for r in raw.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))]
        found = []
        for table in tables:
            for (row,) in raw.execute(f'SELECT t::text FROM "{schema}"."{table}" t'):
                found += [f"{table}: {name}" for name in CANARIES if name in row]
        return found
    finally:
        raw.close()


@pytest.mark.parametrize("method", registered_methods())
def test_a_deleted_document_leaves_nothing_in_the_database_nor_its_cache(postgres, method):
    url = postgres.url("forget")
    index = _build(method, url)
    uses_llm = index_class(method).uses_llm  # the others cache nothing (the hashing embedder costs less than a lookup)
    if method in ("archrag", "graphrag", "lightrag"):  # the fake's answers to their prompts carry the names
        assert any(leak.startswith("model_calls:") for leak in _leaks(url))
    report = index.delete("canary")
    index.close()
    assert (report.forgotten > 0) == uses_llm
    assert _leaks(url) == []
