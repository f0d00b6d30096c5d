"""The naive VectorIndex and the index directory: round trips, mismatches, resume, locking."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from rhizome.core import (
    ConfigurationError,
    Document,
    FakeEmbedder,
    HashingEmbedder,
    IndexClosedError,
    IndexCorruptError,
    IndexFormatError,
    IndexMismatchError,
    IndexNotFoundError,
    InvalidInputError,
    VectorIndex,
    load_index,
)
from rhizome.core.models.base import BaseEmbedder
from rhizome.core.store.storage import FORMAT_VERSION

CORPUS = [
    Document(id="fr", text="Paris is the capital of France. The Seine flows through Paris.", metadata={"title": "France", "source": "fr.txt"}),
    Document(id="de", text="Berlin is the capital of Germany. The Spree flows through Berlin.", metadata={"title": "Germany"}),
    Document(id="fruit", text="Bananas are a yellow fruit rich in potassium.", metadata={"title": "Bananas"}),
    Document(id="tea", text="Green tea is brewed from unoxidised leaves of the tea plant.", metadata={"title": "Tea"}),
]


def records(path) -> dict[str, list]:
    with sqlite3.connect(path / "records.sqlite") as db:
        return {
            "documents": sorted(db.execute("SELECT id, content_hash FROM documents").fetchall()),
            "chunks": sorted(db.execute("SELECT id, document_id, text FROM chunks").fetchall()),
            "vectors": sorted(r[0] for r in db.execute("SELECT id FROM vectors")),
        }


def test_retrieval_finds_the_right_document_with_provenance():
    index = VectorIndex(HashingEmbedder(), chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    hits = index.as_retriever(k=2).retrieve("What is the capital of Germany?")
    assert hits[0].id == "de:0"
    assert hits[0].kind == "chunk"
    assert hits[0].provenance.document_ids == ["de"]
    span = hits[0].provenance.spans[0]
    assert CORPUS[1].text[span.start : span.end] == hits[0].text
    assert hits[0].score >= hits[1].score
    fr = index.as_retriever(k=1).retrieve("Seine river in Paris")[0]
    assert fr.provenance.sources == ["fr.txt"] and fr.metadata["title"] == "France"


def test_persist_load_round_trip(tmp_path):
    index = VectorIndex(HashingEmbedder(), chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    before = [(h.id, round(h.score, 6)) for h in index.as_retriever(k=4).retrieve("yellow fruit")]
    index.persist(tmp_path / "idx")
    index.close()
    loaded = load_index(tmp_path / "idx")
    assert isinstance(loaded, VectorIndex)
    assert loaded.chunker.chunk_size == 64
    after = [(h.id, round(h.score, 6)) for h in loaded.as_retriever(k=4).retrieve("yellow fruit")]
    assert after == before
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["method"] == "naive"
    assert manifest["models"]["embedder"] == "hashing:384"
    assert manifest["embedding_dimension"] == 384
    assert manifest["stats"] == {"documents": 4, "chunks": 4}
    loaded.close()


def test_in_memory_index_moves_to_disk_on_persist(tmp_path):
    index = VectorIndex()
    index.insert(CORPUS[:2])
    index.persist(tmp_path / "idx")
    index.insert(CORPUS[2:])  # now written straight to the directory
    index.close()
    assert len(records(tmp_path / "idx")["documents"]) == 4


def test_an_insert_during_persist_waits_and_lands_in_the_new_location(tmp_path, monkeypatch):
    """Defect: persist() of an in-memory index took no write lock, so an insert committed to
    the in-memory store after the copy (and before the switch) was reported done but lost, and
    closing the old store failed searches still reading it."""
    import threading
    import time

    from rhizome.core.store.storage import IndexStore

    index = VectorIndex()
    index.insert(CORPUS[:2])
    copied = threading.Event()
    copy_to = IndexStore.copy_to

    def slow_copy(store, target):  # an insert arrives between the copy and the switch
        copy_to(store, target)
        copied.set()
        time.sleep(0.3)

    monkeypatch.setattr(IndexStore, "copy_to", slow_copy)
    inserted, searched = [], []
    writer = threading.Thread(target=lambda: copied.wait() and inserted.append(index.insert(CORPUS[2:])))
    reader = threading.Thread(target=lambda: copied.wait() and searched.append(index.as_retriever(k=2).retrieve("tea")))
    writer.start(), reader.start()
    index.persist(tmp_path / "idx")
    writer.join(), reader.join()
    assert inserted[0].inserted == ["fruit", "tea"] and len(searched[0]) == 2
    index.close()
    assert len(records(tmp_path / "idx")["documents"]) == 4


def test_unchanged_documents_are_skipped_and_changed_ones_replaced(tmp_path):
    embedder = HashingEmbedder()
    index = VectorIndex(embedder, path=tmp_path / "idx")
    assert index.insert(CORPUS).inserted == ["fr", "de", "fruit", "tea"]
    calls = embedder.usage.calls
    report = index.insert(CORPUS)
    assert report.skipped == ["fr", "de", "fruit", "tea"] and embedder.usage.calls == calls
    changed = Document(id="tea", text="Black tea is fully oxidised before drying.")
    assert index.insert([changed]).replaced == ["tea"]
    assert index.as_retriever(k=1).retrieve("oxidised black tea")[0].text == changed.text
    assert len(index) == 4
    index.close()


def test_a_batch_names_the_stored_chunks_its_known_documents_replace():
    index = VectorIndex(HashingEmbedder(), chunk_size=16, chunk_overlap=0)
    index.insert(CORPUS)
    tea = index.store.chunk_ids(["tea"])
    assert tea
    batch = [(Document(id="tea", text="Black tea."), []), (Document(id="coffee", text="Coffee."), [])]
    assert index.replaced_chunk_ids(batch) == tea  # a new document replaces nothing
    assert index.replaced_chunk_ids([]) == []
    index.close()


def test_delete_removes_chunks_and_vectors(tmp_path):
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(CORPUS)
    report = index.delete(["fruit", "missing"])
    assert report.deleted == ["fruit"] and report.missing == ["missing"]
    assert all(h.provenance.document_ids != ["fruit"] for h in index.as_retriever(k=10).retrieve("banana"))
    index.close()
    state = records(tmp_path / "idx")
    assert [d for d, _ in state["documents"]] == ["de", "fr", "tea"]
    assert all(not v.startswith("fruit") for v in state["vectors"])
    # the faiss snapshot agrees with the database after reopening
    reopened = load_index(tmp_path / "idx")
    assert len(reopened.as_retriever(k=10).retrieve("banana")) == 3
    reopened.close()


def test_insert_then_delete_restores_the_records(tmp_path):
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(CORPUS[:2])
    index.persist()
    before = records(tmp_path / "idx")
    index.insert(CORPUS[2:])
    index.delete(["fruit", "tea"])
    index.close()
    assert records(tmp_path / "idx") == before


def test_bad_input_is_rejected_before_anything_is_stored(tmp_path):
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(CORPUS[:1])
    with pytest.raises(InvalidInputError, match="no text"):
        index.insert([CORPUS[1], Document(id="empty", text="   ")])
    with pytest.raises(InvalidInputError, match="twice"):
        index.insert([Document(id="x", text="a"), Document(id="x", text="b")])
    with pytest.raises(InvalidInputError):
        index.insert([42])
    with pytest.raises(InvalidInputError):
        index.as_retriever().retrieve("  ")
    with pytest.raises(InvalidInputError):
        index.as_retriever(k=0)
    assert [d for d, _ in records(tmp_path / "idx")["documents"]] == ["fr"]
    index.close()


def test_accepts_strings_dicts_and_framework_documents():
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    index = VectorIndex()
    report = index.insert(
        ["plain string text", {"text": "from a dict", "id": "d1"}, LCDocument(page_content="from langchain", id="lc1"), LIDocument(text="from llama", id_="li1")]
    )
    assert set(report.inserted) >= {"d1", "lc1", "li1"}


class FailingEmbedder(BaseEmbedder):
    """Fails on the n-th batch, like a model server that dies mid-run."""

    def __init__(self, fail_on: int | None) -> None:
        super().__init__("hashing:384", dimension=384, batch_size=1000)
        self.inner = HashingEmbedder()
        self.fail_on = fail_on
        self.batches = 0

    async def _aembed_batch(self, texts):
        self.batches += 1
        if self.fail_on is not None and self.batches == self.fail_on:
            raise ConnectionError("model server went away")
        return await self.inner._aembed_batch(texts)


def test_interrupted_insert_resumes_without_loss_or_duplicates(tmp_path):
    documents = [Document(id=f"d{i}", text=f"Document number {i} talks about topic {i % 7}.") for i in range(40)]
    index = VectorIndex(FailingEmbedder(fail_on=3), path=tmp_path / "idx", batch_size=10)
    with pytest.raises(ConnectionError):
        index.insert(documents)
    index.close()
    partial = records(tmp_path / "idx")
    assert len(partial["documents"]) == 20  # two batches committed, the third lost
    assert len(partial["chunks"]) == len(partial["vectors"]) == 20

    resumed = VectorIndex.load(tmp_path / "idx", embedder=FailingEmbedder(fail_on=None), batch_size=10)
    report = resumed.insert(documents)
    assert len(report.skipped) == 20 and len(report.inserted) == 20
    resumed.close()
    final = records(tmp_path / "idx")
    assert len(final["documents"]) == len(final["chunks"]) == len(final["vectors"]) == 40
    reopened = load_index(tmp_path / "idx")
    assert len(reopened.as_retriever(k=100).retrieve("topic 3")) == 40
    reopened.close()


def test_stale_snapshot_is_rebuilt_from_the_database(tmp_path):
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(CORPUS[:2])
    index.close()
    snapshot = (tmp_path / "idx" / "vectors" / "chunks.npz").read_bytes()
    index = VectorIndex.load(tmp_path / "idx")
    index.insert(CORPUS[2:])
    index.close()
    # simulate a crash after the database commit but before the snapshot was written
    (tmp_path / "idx" / "vectors" / "chunks.npz").write_bytes(snapshot)
    reopened = load_index(tmp_path / "idx")
    assert reopened.as_retriever(k=1).retrieve("yellow fruit bananas")[0].id == "fruit:0"
    reopened.close()


def test_mismatched_embedder_is_refused(tmp_path):
    VectorIndex(HashingEmbedder(384), path=tmp_path / "idx").insert(CORPUS).__class__  # noqa: B018
    with pytest.raises(IndexMismatchError, match="hashing:384"):
        VectorIndex.load(tmp_path / "idx", embedder=HashingEmbedder(256))
    with pytest.raises(IndexMismatchError, match="built with"):
        load_index(tmp_path / "idx", embedder=FakeEmbedder(384))


def test_an_index_without_vectors_takes_another_embedder(tmp_path):
    """An index whose first insert stopped before any vector was stored holds nothing made with
    its embedder: opening it with another one re-binds it (in the manifest) instead of refusing."""
    VectorIndex(HashingEmbedder(64), path=tmp_path / "idx").close()
    index = VectorIndex.load(tmp_path / "idx", embedder=HashingEmbedder(256))
    index.insert(CORPUS)
    index.close()
    assert json.loads((tmp_path / "idx" / "manifest.json").read_text())["models"]["embedder"] == "hashing:256"
    assert load_index(tmp_path / "idx").embedder.name == "hashing:256"
    with pytest.raises(IndexMismatchError, match="hashing:256"):  # now it holds vectors
        VectorIndex.load(tmp_path / "idx", embedder=HashingEmbedder(64))


def test_format_version_and_missing_index(tmp_path):
    with pytest.raises(IndexNotFoundError, match="rhizome index"):
        load_index(tmp_path / "nothing")
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(CORPUS[:1])
    index.close()
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    manifest["format_version"] = 99
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="version 99"):
        load_index(tmp_path / "idx")
    manifest["format_version"] = FORMAT_VERSION
    manifest["method"] = "nonexistent"
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexCorruptError, match="written by 'naive'"):  # the records know better
        load_index(tmp_path / "idx")
    with sqlite3.connect(tmp_path / "idx" / "records.sqlite") as db:  # an index of a method not installed
        db.execute("UPDATE meta SET value = json_set(value, '$.method', 'nonexistent') WHERE key = 'index'")
    with pytest.raises(IndexMismatchError, match="install rhizome-nonexistent"):
        load_index(tmp_path / "idx")


def test_path_opens_an_existing_index_of_the_same_method(tmp_path):
    """Defect: ``VectorIndex(path=...)`` on an existing index raised "already holds an index",
    so every script failed on its second run."""
    first = VectorIndex(path=tmp_path / "idx", chunk_size=300)
    first.insert(CORPUS[:2])
    first.close()
    again = VectorIndex(path=tmp_path / "idx")  # the second run of the same script
    assert len(again) == 2 and again.config.chunk_size == 300
    again.insert(CORPUS[2:])
    assert len(again.as_retriever(k=10).retrieve("capital")) == 4
    with pytest.raises(ConfigurationError, match="chunk_size=300"):
        VectorIndex(path=tmp_path / "idx", chunk_size=500)
    with pytest.raises(IndexMismatchError, match="embedder"):
        VectorIndex(HashingEmbedder(256), path=tmp_path / "idx")
    again.close()


def test_one_writer_process_many_readers(tmp_path):
    writer = VectorIndex(path=tmp_path / "idx")
    writer.insert(CORPUS[:2])
    # another writer object in this process shares the store; another process is locked out
    script = "import sys; from rhizome.core import VectorIndex; VectorIndex.load(sys.argv[1])"
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "idx")], capture_output=True, text=True)
    assert out.returncode != 0 and "read-only" in out.stderr
    same_process = VectorIndex.load(tmp_path / "idx")
    reader = VectorIndex.load(tmp_path / "idx", readonly=True)
    assert len(reader.as_retriever(k=5).retrieve("capital")) == 2
    same_process.insert(CORPUS[2:])  # the reader does not block the writer
    # a reader in another process sees the committed state, and so does the open reader
    script = (
        "import sys; from rhizome.core import load_index;"
        "i = load_index(sys.argv[1], readonly=True); print(len(i.as_retriever(k=10).retrieve('capital')))"
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "idx")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"
    assert len(reader.as_retriever(k=10).retrieve("capital")) == 4
    writer.close()
    same_process.close()
    reader.close()
    out = subprocess.run([sys.executable, "-c", script.replace("readonly=True", "readonly=False"), str(tmp_path / "idx")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr  # the lock is released when the last writer closes


def test_closing_an_index_twice_leaves_the_store_it_shares_open(tmp_path):
    """Defect: the store counted close() calls, not index objects, so a ``with`` block plus a
    close() on one object closed the store under another (raw sqlite3.ProgrammingError)."""
    first = VectorIndex(path=tmp_path / "idx")
    first.insert(CORPUS[:2])
    second = VectorIndex.load(tmp_path / "idx")  # shares first's store
    with first:
        pass
    first.close()
    assert [h.provenance.document_ids for h in second.as_retriever(k=1).retrieve("capital of France")] == [["fr"]]
    assert second.insert(CORPUS[2:]).inserted == ["fruit", "tea"]
    second.close()
    second.close()


@pytest.mark.parametrize("where", ["memory", "directory"])
def test_a_closed_index_says_to_open_it_again(tmp_path, where):
    """Defect: search, insert and len() of a closed index raised sqlite3.ProgrammingError."""
    index = VectorIndex(path=None if where == "memory" else tmp_path / "idx")
    index.insert(CORPUS)
    retriever = index.as_retriever(k=1)
    index.close()
    told = "gone once closed" if where == "memory" else "open it again"
    for use in (lambda: retriever.retrieve("capital"), lambda: index.as_retriever(k=1), lambda: index.insert(["Rome."]),
                lambda: index.delete(["fr"]), lambda: len(index)):
        with pytest.raises(IndexClosedError, match=told):
            use()
    if where == "directory":
        with pytest.raises(IndexClosedError, match="load_index"):
            index.store.document_ids()
        assert len(load_index(index.location)) == 4  # nothing stored was lost


def test_load_rejects_unknown_options_and_unrebuildable_embedders(tmp_path):
    from rhizome.core import ConfigurationError

    index = VectorIndex(path=tmp_path / "idx")
    index.insert(CORPUS[:1])
    index.close()
    with pytest.raises(ConfigurationError, match="embed_model"):
        VectorIndex.load(tmp_path / "idx", embed_model="x")
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    manifest["models"]["embedder"] = "langchain:SomeEmbeddings"
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigurationError, match="pass the same model again as embedder="):
        VectorIndex.load(tmp_path / "idx")


def test_sync_api_called_from_async_code_keeps_context_variables():
    import asyncio
    import contextvars

    from rhizome.core.aio import run_sync

    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")

    async def read() -> str:
        return marker.get()

    async def caller() -> str:
        marker.set("from caller")
        return run_sync(read())  # runs on a worker thread because a loop is running

    assert asyncio.run(caller()) == "from caller"


def test_unchanged_collections_are_not_rewritten(tmp_path):
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(CORPUS[:2])
    snapshot = tmp_path / "idx" / "vectors" / "chunks.npz"
    first = snapshot.stat().st_mtime_ns
    index.store.save_snapshots()  # nothing changed: no rewrite
    assert snapshot.stat().st_mtime_ns == first
    index.insert(CORPUS[:2])  # all skipped: no change, no rewrite
    assert snapshot.stat().st_mtime_ns == first
    index.insert(CORPUS[2:])
    assert snapshot.stat().st_mtime_ns != first
    index.close()
    reopened = VectorIndex.load(tmp_path / "idx")
    assert len(reopened.as_retriever(k=10).retrieve("capital")) == 4
    reopened.close()


def test_embedding_in_slices_keeps_every_vector_in_order(monkeypatch):
    # the vectors of many texts are filled in slice by slice (not stacked): same rows, same order
    import asyncio

    import numpy as np

    import rhizome.core.index.base as core_index

    monkeypatch.setattr(core_index, "EMBED_SLICE", 3)
    embedder = HashingEmbedder(16)
    index = VectorIndex(embedder)
    texts = [f"text number {i} about {word}" for i, word in enumerate("abcdefgh")]  # 3 + 3 + 2
    vectors = asyncio.run(index.embed(texts))
    assert vectors.shape == (8, 16)
    assert np.allclose(vectors, embedder.embed(texts))
    assert np.allclose(asyncio.run(index.embed(texts[:2])), embedder.embed(texts[:2]))  # one slice


def test_document_fields_named_like_a_hits_own_keys_are_kept_beside_them():
    """Defect: a document field named ``score``, ``kind``, ``id`` or ``sources`` (a CSV column,
    say) was overwritten by the hit's own key in every hit, so the user's value was lost."""
    index = VectorIndex(HashingEmbedder())
    index.insert([{"id": "r1", "text": "The espresso machine broke after a week.",
                   "metadata": {"score": 1, "kind": "review", "sources": "amazon", "id": "SKU-9", "title": "Espresso"}}])
    hit = index.as_retriever(k=1).retrieve("espresso machine")[0]
    flat = hit.flat_metadata()
    assert (flat["score"], flat["kind"], flat["id"], flat["sources"]) == (hit.score, "chunk", "r1:0", [])
    assert {k: flat[f"document.{k}"] for k in ("score", "kind", "sources", "id")} == {
        "score": 1, "kind": "review", "sources": "amazon", "id": "SKU-9"}
    assert flat["title"] == "Espresso" and "document.title" not in flat  # no clash: under its own name
    assert index.as_retriever(k=1, filter={"score": 1}).retrieve("espresso")[0].id == "r1:0"  # filters read the stored fields


def test_documents_agreeing_on_a_nan_field_pass_it_on_to_a_hit_citing_them_all():
    """Defect: a hit citing several documents kept the fields they agree on by ``==``, so a
    NaN (which an index written before metadata was checked may hold) was dropped although
    every cited document held it; the clash check beside it already counted NaN as NaN."""
    import math

    from rhizome.core.retrieval.contract import with_document_metadata
    from rhizome.core.types import Hit, Provenance

    class Store:
        def documents_metadata(self, ids):
            return {d: {"year": math.nan, "lang": "en", "part": d} for d in ids}

    hit = Hit(id="e1", text="an entity", score=1.0, kind="entity",
              provenance=Provenance(document_ids=["a", "b"]))
    out = with_document_metadata(Store(), [hit])[0].metadata
    assert math.isnan(out["year"]) and out["lang"] == "en" and "part" not in out
    own = with_document_metadata(Store(), [hit.model_copy(update={"metadata": {"year": float("nan")}})])[0].metadata
    assert math.isnan(own["year"]) and "document.year" not in own  # NaN against NaN is no clash


def test_one_model_shared_by_two_indexes_caches_into_each(tmp_path, monkeypatch):
    """Defect: the first index attached its cache to the model object itself, so a second
    index given the same model (an on-disk one after an in-memory try-out) cached in the first
    one's memory, and a re-run after an interruption paid its answers again."""
    from rhizome.core.models.fake import FakeChatModel

    monkeypatch.delenv("RHIZOME_CACHE_DIR", raising=False)  # each index's own cache
    llm = FakeChatModel(lambda messages, schema: "ok")
    scratch = VectorIndex(llm=llm)
    disk = VectorIndex(llm=llm, path=tmp_path / "idx")
    assert llm.cache is None  # the user's object is left as given
    assert scratch.llm.cache is not disk.llm.cache and disk.llm.cache.path == tmp_path / "idx" / "model-calls.sqlite"
    assert disk.llm.complete("q").text == "ok"
    assert VectorIndex.load(tmp_path / "idx", llm=llm).llm.complete("q").cached  # the disk index kept the answer
    scratch.close(), disk.close()
