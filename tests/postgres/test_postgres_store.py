"""The PostgreSQL store beyond the conformance kit: locations, typed errors, writers in several
processes, the HNSW path, copies between backends, the shared model-call cache, the CLI, and
the LangChain and LlamaIndex suites once on a database-backed index."""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_rhizome import RhizomeRetriever
from rhizome.core import VectorIndex
from rhizome.core.errors import (
    ConfigurationError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexUnavailableError,
    InvalidInputError,
)
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.store.backends import postgres as pg
from rhizome.core.store.storage import load_index, read_manifest
from rhizome.tools.integrity import check_index, repair_index
from rhizome.tools.testing import CORPUS, QUERIES, IndexConformance, signature


def naive(url: str, documents: Any = CORPUS, **options: Any) -> VectorIndex:
    index = VectorIndex(HashingEmbedder(), path=url, chunk_size=200, chunk_overlap=20, **options)
    if documents:
        index.insert(documents)
    return index


def test_an_unreachable_server_is_a_typed_error_naming_the_fix():
    with pytest.raises(IndexUnavailableError, match="cannot reach PostgreSQL at postgresql://u:\\*\\*\\*@127.0.0.1:1/db") as caught:
        VectorIndex(path="postgresql://u:secret@127.0.0.1:1/db?schema=x")
    assert "secret" not in str(caught.value)


def test_a_missing_index_and_bad_schema_names_are_typed_errors(postgres):
    with pytest.raises(IndexNotFoundError, match="rhizome index FOLDER --out"):
        load_index(postgres.url())
    with pytest.raises(ConfigurationError, match="lower-case identifier"):
        VectorIndex(path=postgres.url() + "X; DROP")
    with pytest.raises(ConfigurationError, match="not a storage Rhizome knows"):
        VectorIndex(path="mysql://localhost/db")


def test_a_schema_holding_other_tables_or_another_index_is_refused_and_left_alone(postgres):
    url = postgres.url()
    raw = pg.connect(url, create=True)
    schema = pg.parse_url(url)[1]
    raw.execute(f'CREATE SCHEMA "{schema}"')
    raw.execute(f'CREATE TABLE "{schema}".invoices (id int)')
    raw.execute(f'INSERT INTO "{schema}".invoices VALUES (7)')
    with pytest.raises(InvalidInputError, match="not a Rhizome index.*invoices"):
        naive(url)
    assert raw.execute(f'SELECT id FROM "{schema}".invoices').fetchall() == [(7,)]
    raw.close()

    other = postgres.url()
    naive(other).close()
    from rhizome.graphrag import GraphRAGIndex

    with pytest.raises(IndexMismatchError, match="holds a 'naive' index"):
        GraphRAGIndex(HashingEmbedder(), path=other)
    with pytest.raises(IndexMismatchError, match="built with the embedder"):
        VectorIndex(HashingEmbedder(dimension=64), path=other)
    # a password in the URL (the local server ignores it) is not shown in the messages
    secret = other.replace("postgresql://postgres:@", "postgresql://postgres:hunter2@", 1)
    assert secret != other
    for refused in (lambda: GraphRAGIndex(HashingEmbedder(), path=secret), lambda: VectorIndex(HashingEmbedder(dimension=64), path=secret)):
        with pytest.raises(IndexMismatchError) as info:
            refused()
        assert "hunter2" not in str(info.value) and ":***@" in str(info.value)
    assert read_manifest(other).stats == {"documents": len(CORPUS), "chunks": len(CORPUS)}


def test_the_missing_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigurationError, match=r"rhizome-core\[postgres\]"):
        VectorIndex(path="postgresql://localhost/db")


_WRITER = textwrap.dedent("""
    import sys
    from rhizome.core import VectorIndex
    from rhizome.core.models.embeddings import HashingEmbedder
    from rhizome.core.types import Document
    url, name = sys.argv[1], sys.argv[2]
    index = VectorIndex(HashingEmbedder(), path=url, chunk_size=200, chunk_overlap=20)
    for i in range(5):
        index.insert([Document(id=f"{name}-{i}", text=f"Document {i} written by the {name} process about the harbour.")])
    index.close()
""")


def test_writers_in_several_processes_take_turns_and_all_land(postgres):
    url = postgres.url()
    naive(url, documents=[]).close()
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, url, name], stderr=subprocess.PIPE, text=True) for name in ("north", "south")]
    reader = VectorIndex.load(url, readonly=True)
    for writer in writers:
        assert writer.wait(timeout=300) == 0, writer.stderr.read()
    assert sorted(reader.store.document_ids()) == sorted(f"{n}-{i}" for n in ("north", "south") for i in range(5))
    assert len(reader.as_retriever(k=20).retrieve("harbour")) == 10
    reader.close()


def test_a_large_collection_is_searched_through_hnsw_with_the_exact_answers(postgres, monkeypatch):
    monkeypatch.setattr(pg, "HNSW_FROM", 5)
    index = naive(postgres.url())
    store = index.store
    assert store._has_hnsw("chunks")
    queries = np.vstack([index.embedder.embed_query([q]) for q in QUERIES]).astype(np.float32)
    for setting in ("enable_seqscan", "enable_sort"):  # on 8 rows the planner prefers a scan; a large collection does not
        store.db.execute(f"SET {setting} = off")
    plans = store.query("EXPLAIN SELECT id FROM vectors WHERE collection = 'chunks' ORDER BY vector::vector(384) <#> ?::vector(384) LIMIT 3",
                        (queries[0],))
    assert "vectors_hnsw_" in " ".join(r[0] for r in plans)
    found = store.collection("chunks").search(queries, 3)
    ids = store.vector_ids("chunks")
    vectors = store.collection("chunks").vectors(ids)
    held, read = store.collection("chunks").present([ids[1], "gone", ids[0]])  # one query: the keys stored, in order
    assert held == [ids[1], ids[0]] and np.allclose(read, vectors[[1, 0]])
    with pytest.raises(KeyError, match="gone"):
        store.collection("chunks").vectors([ids[0], "gone"])
    for row, hits in zip(queries, found):
        exact = sorted(zip(ids, vectors @ row), key=lambda p: -p[1])[:3]
        assert [h[0] for h in hits] == [e[0] for e in exact]
        assert np.allclose([h[1] for h in hits], [e[1] for e in exact], atol=1e-5)
    index.close()


def test_a_search_asks_the_server_about_a_collection_once_per_write_of_it(postgres, monkeypatch):
    # whether a collection holds vectors and has its HNSW index is kept with the collection's
    # generation: searches in a row ask the server nothing more; a write (here by another
    # object on the same schema, as another process would) makes the next search ask again
    url = postgres.url()
    index, other = naive(url), naive(url, documents=[])
    asked: list[str] = []
    real = pg.PostgresConnection.execute

    def execute(self: Any, sql: str, params: Any = (), binary: bool = False) -> Any:
        if "to_regclass" in sql or sql.startswith("SELECT 1 FROM vectors"):
            asked.append(sql)
        return real(self, sql, params, binary)

    monkeypatch.setattr(pg.PostgresConnection, "execute", execute)
    retriever = index.as_retriever(k=3)
    first = signature(retriever.retrieve(QUERIES[0]))
    assert asked, "the first search asks"
    asked.clear()
    for query in QUERIES:
        retriever.retrieve(query)
    assert asked == []
    monkeypatch.setattr(pg, "HNSW_FROM", 5)
    other.insert([CORPUS[0].model_copy(update={"text": CORPUS[0].text + " Again."})])  # the collection's HNSW index made
    assert signature(retriever.retrieve(QUERIES[0]))
    assert asked and index.store._has_hnsw("chunks")
    other.delete([d.id for d in CORPUS])
    assert retriever.retrieve(QUERIES[0]) == [] and not index.store.has_collection("chunks")
    other.insert(CORPUS)
    assert signature(retriever.retrieve(QUERIES[0])) == first
    index.close()
    other.close()


def test_copies_between_a_directory_and_a_database_are_indexes_of_their_own(postgres, tmp_path):
    source = naive(None)
    expected = {q: signature(source.as_retriever(k=3).retrieve(q)) for q in QUERIES}
    url = postgres.url()
    source.persist(url)  # memory -> database: the index now lives there
    assert source.location == url
    source.persist(tmp_path / "copy")  # database -> directory
    for where in (url, tmp_path / "copy"):
        again = load_index(where)
        assert {q: signature(again.as_retriever(k=3).retrieve(q)) for q in QUERIES} == expected
        again.close()
    assert read_manifest(url).index_id != read_manifest(tmp_path / "copy").index_id
    source.close()


def test_model_answers_are_cached_in_the_database_and_a_rebuild_pays_none(postgres, monkeypatch):
    from rhizome.graphrag import GraphRAGIndex

    monkeypatch.delenv("RHIZOME_CACHE_DIR")  # which would hold the cache instead

    url = postgres.url()
    first = IndexConformance().build("graphrag", path=url)
    paid = first.llm.usage.calls
    first.close()
    assert len(pg.PostgresCache(url)) >= paid > 0
    rebuilt = IndexConformance().build("graphrag", path=postgres.url())  # another schema, another cache
    assert rebuilt.llm.usage.calls == paid
    again = GraphRAGIndex.load(url, llm=IndexConformance.model("graphrag"))
    again.delete([d.id for d in CORPUS], purge_cache=False)  # the default forgets them (test_postgres_forgetting.py)
    again.insert(CORPUS)
    assert again.llm.usage.calls == 0 and again.llm.usage.cache_hits > 0
    again.close()
    rebuilt.close()


def test_check_and_repair_read_a_database_index(postgres):
    url = postgres.url()
    index = naive(url)
    index.store.db.execute("UPDATE chunks SET text = text || ' (edited)' WHERE id = (SELECT MIN(id) FROM chunks)")
    found = check_index(url)
    assert not found.ok and "1 chunk does not match its checksum" in found.problems[0]
    assert "nothing to rebuild" in repair_index(url).repaired[0]
    # a vector of another length is reported, not a crash of the check reading them as one matrix
    index.store.db.execute("UPDATE vectors SET vector = '[0.5, 0.5]' WHERE id = (SELECT MIN(id) FROM vectors)")
    found = check_index(url)
    assert any("1 vector of the wrong length" in p for p in found.problems), found.problems
    index.close()


def test_check_reads_one_state_of_the_records_while_a_writer_commits(postgres, monkeypatch):
    """Defect: check read the chunks and the vectors in separate transactions, so a writer's
    commit between the two showed as chunks without vectors or vectors without chunks."""
    url = postgres.url()
    writer = naive(url)
    extra = [CORPUS[0].model_copy(update={"id": "extra"})]
    steps = itertools.cycle([lambda: writer.insert(extra), lambda: writer.delete(["extra"])])
    query, writes = pg.PostgresStore.query, []

    def query_then_commit(store, sql, params=(), binary=False):  # a writer commits after every read of check
        found = query(store, sql, params, binary)
        if store.readonly:
            writes.append(next(steps)())
        return found

    monkeypatch.setattr(pg.PostgresStore, "query", query_then_commit)
    try:
        for _ in range(2):
            found = check_index(url)
            assert found.ok, found.problems
    finally:
        monkeypatch.undo()
        writer.close()
    assert len(writes) > 5


def test_the_cli_indexes_queries_and_describes_a_database_index(postgres, corpus_folder, tmp_path, capsys):
    from rhizome.rag.cli import main

    url = postgres.url()
    assert main(["index", str(corpus_folder), "--method", "graphrag", "--out", url, "--offline", "-q"]) == 0
    assert main(["query", url, "Who keeps the lighthouse on Gull Island?", "--offline", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert any("island" in h["provenance"]["document_ids"][0] for h in hits)
    assert main(["status", url]) == 0
    assert "method: graphrag" in capsys.readouterr().out
    assert main(["check", url]) == 0
    assert main(["export", url, "--format", "jsonl", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "entities.jsonl").exists()


# -- the framework suites, once, on a database-backed index ----------------------------------------
_FRAMEWORK: dict[str, Any] = {}
"""The database-backed index the LangChain suite's properties hand out (set by ``graph_index``)."""


@pytest.fixture(scope="module")
def graph_index(postgres):
    index = IndexConformance().build("graphrag", path=postgres.url("frameworks"))
    _FRAMEWORK["index"] = index
    yield index
    index.close()


@pytest.mark.usefixtures("graph_index")
class TestLangChainStandardOnPostgres(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RhizomeRetriever]:
        return RhizomeRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"retriever": _FRAMEWORK["index"].as_retriever(mode="local"), "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return QUERIES[0]


async def test_llama_index_retriever_on_postgres(graph_index, tmp_path):
    from llama_index.retrievers.rhizome import RhizomeRetriever as LlamaRetriever

    retriever = LlamaRetriever.from_index(graph_index, similarity_top_k=3)
    nodes = retriever.retrieve(QUERIES[1])
    assert len(nodes) == 3
    assert [n.node.node_id for n in await retriever.aretrieve(QUERIES[1])] == [n.node.node_id for n in nodes]


def test_graphrag_incremental_inserts_keep_the_edge_table_on_postgres(postgres):
    from rhizome.core import Document
    from rhizome.graphrag import GraphRAGIndex

    def edges(index: GraphRAGIndex) -> dict[str, tuple[str, str, float]]:
        return {rid: (row.id, target, weight) for row in index.edge_table.all() for rid, target, weight in row.edges}

    def relations(index: GraphRAGIndex) -> dict[str, tuple[str, str, float]]:
        return {r.id: (r.source, r.target, r.weight) for r in index.relation_table.all()}

    index = GraphRAGIndex(HashingEmbedder(), path=postgres.url(), extraction="offline", chunk_size=200, chunk_overlap=20)
    index.insert(CORPUS[:3])
    update = index.insert([*CORPUS[3:], Document(id="extra", text="Carol White met Dave Brown again in Houston.")])
    assert update.stats["recluster"] in ("local", "full") and "update_cpu_seconds" in update.stats
    assert edges(index) == relations(index) and edges(index)
    index.delete(["extra"])
    assert edges(index) == relations(index)
    index.close()


def test_record_table_lookups_order_by_the_last_write_on_postgres(postgres):
    from pydantic import BaseModel

    class Edge(BaseModel):
        id: str
        source: str
        weight: float = 1.0

    index = naive(postgres.url(), documents=None)
    edges = index.store.table("test_first", Edge, lookups=("source",))
    with index.store.transaction() as db:
        edges.put(db, [Edge(id="ab", source="a"), Edge(id="ac", source="a"), Edge(id="bc", source="b")])
    assert {v: e.id for v, e in edges.first("source", ["a", "b", "z"]).items()} == {"a": "ab", "b": "bc"}
    with index.store.transaction() as db:
        edges.put(db, [Edge(id="ab", source="a", weight=2.0)])
    assert edges.first("source", ["a"])["a"].id == edges.find("source", ["a"])[0].id == "ac"
    index.close()


def test_record_table_fields_read_in_sql_on_postgres(postgres):
    from tests.core.test_kernel_services import FIELDS, read_fields

    index = naive(postgres.url(), documents=None)
    assert read_fields(index.store) == FIELDS
    index.close()


def test_a_creation_that_finds_an_index_made_meanwhile_is_refused(postgres, monkeypatch):
    """Defect: two processes creating one index at once both checked the schema before taking
    its lock, both succeeded, and the schema held both embedders' vectors. The check is made
    again under the lock: here the first check is made to miss the index, as in the race."""
    from rhizome.core.store.backends.postgres import PostgresStore
    from rhizome.core.store.storage import Manifest

    url = postgres.url()
    naive(url).close()
    before = read_manifest(url)
    with monkeypatch.context() as m:
        m.setattr(PostgresStore, "_state", classmethod(lambda cls, url: (None, None, [])))
        with pytest.raises(InvalidInputError, match="created meanwhile by another process"):
            PostgresStore._new(url, Manifest(method="naive", models={"embedder": "hashing:64"}))
    assert read_manifest(url) == before  # the index made first is left as it was


# -- a connection that drops -------------------------------------------------------------------------
def _terminate(store: pg.PostgresStore | pg.PostgresCache) -> None:
    """End the server session of a store (or of a cache's own connection) from another
    connection, as a restart, a failover or an idle timeout does (and wait until it is gone)."""
    db = store.db if isinstance(store, pg.PostgresStore) else store._conn
    url = str(store.location) if isinstance(store, pg.PostgresStore) else store.url
    raw = pg.connect(url)
    assert raw.execute("SELECT pg_terminate_backend(%s, 5000)", (db.raw.info.backend_pid,)).fetchone()[0]
    raw.close()


def _search(index: VectorIndex) -> list[tuple[str, str]]:
    return signature(index.as_retriever(k=3).retrieve(QUERIES[0]))


def test_an_index_whose_connection_dropped_connects_again_on_the_next_call(postgres, monkeypatch):
    """Defect: after its connection dropped, every call on an index object failed for good with
    "check the server, then run the same call again". Now the call that finds the connection
    broken fails (typed) or, a read, runs again on a fresh connection; the next call works, a
    read-only index stays read-only, and while the server cannot be reached each call says so."""
    import psycopg

    url = postgres.url()
    index = naive(url, documents=CORPUS[:6])
    reader = VectorIndex.load(url, readonly=True)
    expected = _search(index)
    for opened in (index, reader):
        _terminate(opened.store)
        with contextlib.suppress(IndexUnavailableError):
            _search(opened)
        assert _search(opened) == expected
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # the fresh session is read-only too
        reader.store.db.execute("DELETE FROM documents")
    cache = pg.PostgresCache(url)  # a model-call cache on a connection of its own (a Ray worker's)
    cache.put("k", [1.0], kind="embed")
    _terminate(cache)
    with pytest.raises(IndexUnavailableError):
        cache.get("k")
    assert cache.get("k") == [1.0]
    cache.close()

    _terminate(index.store)
    with monkeypatch.context() as down:  # the server is down
        down.setattr(psycopg, "connect", lambda *a, **k: (_ for _ in ()).throw(psycopg.OperationalError("connection refused")))
        for _ in range(2):
            with pytest.raises(IndexUnavailableError, match="cannot reach PostgreSQL"):
                _search(index)
        with pytest.raises(IndexUnavailableError, match="cannot reach PostgreSQL"):
            index.insert(CORPUS[6:])
    assert _search(index) == expected  # and back
    index.insert(CORPUS[6:])
    assert sorted(reader.store.document_ids()) == sorted(d.id for d in CORPUS)
    reader.close()
    index.close()


@pytest.mark.parametrize("read_between", [False, True], ids=["dropped", "dropped-and-reopened-by-a-reader"])
def test_an_insert_whose_connection_dropped_fails_and_runs_again_to_a_clean_build(postgres, monkeypatch, read_between):
    """The connection of a writer drops between two batches of an insert. Its writer lock (a
    session advisory lock) goes with the session, so another process may write: the insert
    fails with IndexUnavailableError, commits nothing more, even when a search on the same
    index object (another thread) has opened a fresh connection in between, and the same insert
    run again gives the index a clean build gives."""
    url = postgres.url()
    index = naive(url, documents=None, batch_size=2)
    reader = VectorIndex.load(url, readonly=True)
    schema = pg.parse_url(url)[1]
    other = pg.connect(url)
    batches = 0
    prepare = index._prepare

    async def dropping(batch, stats):
        nonlocal batches
        batches += 1
        if batches == 2:
            _terminate(index.store)
            if read_between:
                assert index.store.document_ids()  # a reader's call connects again
            # the lock went with the session: another writer may take it now
            assert other.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (f"rhizome-writer:{schema}",)).fetchone()[0]
        return await prepare(batch, stats)

    monkeypatch.setattr(index, "_prepare", dropping)
    with pytest.raises(IndexUnavailableError, match="writer lock went with it" if read_between else "PostgreSQL at"):
        index.insert(CORPUS)
    # the first batch was committed, nothing of the second
    stored = dict(other.execute("SELECT id, status FROM documents").fetchall())
    assert stored == {d.id: "done" for d in CORPUS[:2]}
    assert other.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == 2
    other.close()  # the other writer is done

    _terminate(reader.store)
    index.insert(CORPUS)
    clean = naive(postgres.url(), batch_size=2)
    assert index.store.contents() == reader.store.contents() == clean.store.contents()
    assert _search(reader) == _search(index) == _search(clean)
    for opened in (index, reader, clean):
        opened.close()


def test_an_index_replaced_while_the_connection_was_down_is_not_written(postgres):
    """The connection drops, and meanwhile the index is dropped and another one is made at its
    URL: the next write of the old index object connects again, sees the other index and
    commits nothing (IndexLockedError), as it does on a live connection."""
    url = postgres.url()
    index = naive(url, documents=CORPUS[:2])
    _terminate(index.store)
    raw = pg.connect(url)
    raw.execute(f'DROP SCHEMA "{pg.parse_url(url)[1]}" CASCADE')
    raw.close()
    newcomer = naive(url, documents=CORPUS[2:3])
    with pytest.raises(IndexLockedError, match="dropped or replaced"):
        index.insert(CORPUS[3:4])
    assert newcomer.store.document_ids() == [CORPUS[2].id]
    newcomer.close()
    index.close()
