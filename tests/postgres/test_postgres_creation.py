"""Creating an index in a PostgreSQL schema: a copy (persist) is an index only once it is
complete, and what a creation cut short leaves is cleared by the next one (docs/storage.md)."""

from __future__ import annotations

import pytest

from rhizome.core import VectorIndex
from rhizome.core.errors import IndexCorruptError, IndexLockedError
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.store.backends import postgres as pg
from rhizome.core.store.storage import has_index, load_index, read_manifest
from rhizome.tools.integrity import check_index
from rhizome.tools.testing import CORPUS


def test_a_copy_cut_short_holds_no_index_and_runs_again(postgres, persist_cut_short):
    """Defect: persist() to a database committed the copy's manifest (with the source's counts)
    before its records; cut short, it left an empty index that `check` passed and that a second
    persist() refused."""
    url = postgres.url()
    source = VectorIndex(HashingEmbedder())
    source.insert(CORPUS)
    persist_cut_short(source, url)
    assert not has_index(url)
    source.persist(url)  # the identity the first attempt left is cleared
    assert read_manifest(url).stats == {"documents": len(CORPUS), "chunks": len(CORPUS)}
    copy = load_index(url, readonly=True)
    assert copy.store.document_ids() == sorted(d.id for d in CORPUS)
    copy.close()
    source.close()
    assert check_index(url).ok


def test_records_without_a_manifest_are_still_refused(postgres):
    """Only an identity with nothing else is a creation cut short; records are never adopted."""
    url = postgres.url()
    first = VectorIndex(HashingEmbedder(), path=url)
    first.insert(CORPUS[:2])
    first.close()
    raw = pg.connect(url)
    raw.execute("DELETE FROM meta WHERE key = 'manifest'")
    raw.close()
    with pytest.raises(IndexCorruptError, match="holds the records of an index but no manifest"):
        VectorIndex(HashingEmbedder(), path=url)
    raw = pg.connect(url)
    assert raw.execute("SELECT COUNT(*) FROM documents").fetchone() == (2,)
    raw.close()


def test_a_writer_whose_schema_was_dropped_gets_a_typed_error(postgres):
    """Defect: a writer whose schema was dropped (not recreated) under it got psycopg's raw
    UndefinedTable on every call."""
    url = postgres.url()
    writer = VectorIndex(HashingEmbedder(), path=url)
    writer.insert(CORPUS[:2])
    raw = pg.connect(url)
    raw.execute(f'DROP SCHEMA "{pg.parse_url(url)[1]}" CASCADE')
    raw.close()
    for call in (lambda: writer.insert(CORPUS[2:4]), lambda: writer.as_retriever(k=2).retrieve("ferry")):
        with pytest.raises(IndexLockedError, match="was dropped while this process had it open"):
            call()
    writer.close()
