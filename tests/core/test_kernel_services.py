"""The method-facing kernel: record tables, resumable stages, group summaries, configuration,
the extraction spec, per-call usage, the writer lock and the default call cache."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from pydantic import BaseModel

from rhizome.core import ConfigurationError, Document, FakeChatModel, HashingEmbedder, VectorIndex
from rhizome.core.aio import WriteLock, run_sync
from rhizome.core.index.config import describe
from rhizome.core.models.base import usage_scope
from rhizome.core.models.fake import SchemaResponder
from rhizome.core.types import Community, Hit
from rhizome.graphrag import GraphRAGIndex
from rhizome.lightrag import LightRAGIndex


class Edge(BaseModel):
    id: str
    source: str
    target: str
    weight: float = 1.0


def test_record_tables_store_typed_records_and_look_them_up():
    index = VectorIndex()
    edges = index.store.table("test_edges", Edge, lookups=("source", "target"))
    before = edges.generation()
    with index.store.transaction() as db:
        edges.put(db, [Edge(id="ab", source="a", target="b"), Edge(id="ac", source="a", target="c"), Edge(id="bc", source="b", target="c")])
    assert edges.generation() > before
    assert edges.get(["bc", "zz", "ab"]) == {"bc": Edge(id="bc", source="b", target="c"), "ab": Edge(id="ab", source="a", target="b")}
    assert [e.id for e in edges.find("source", ["a"])] == ["ab", "ac"]
    assert edges.count_by("target", ["b", "c", "d"]) == {"b": 1, "c": 2, "d": 0}
    assert edges.first("source", ["z", "b", "a"]) == {"b": Edge(id="bc", source="b", target="c"), "a": Edge(id="ab", source="a", target="b")}
    with index.store.transaction() as db:  # a rewritten record counts as written last, as in find()
        edges.put(db, [Edge(id="ab", source="a", target="b", weight=2.0)])
    assert edges.first("source", ["a"])["a"].id == edges.find("source", ["a"])[0].id == "ac"
    assert edges.distinct("target") == ["b", "c"]
    assert edges.count() == 3 and edges.keys() == ["ab", "ac", "bc"]
    with index.store.transaction() as db:
        edges.delete_by(db, "source", ["a"])
    assert [e.id for e in edges.all()] == ["bc"]
    with pytest.raises(ConfigurationError, match="lookups"):
        edges.find("weight", ["1"])
    with pytest.raises(ConfigurationError, match="snake_case"):
        index.store.table("Bad Name", Edge)


class Profile(BaseModel):
    id: str
    source: str
    weight: float = 1.0
    chunks: list[str] = []
    metadata: dict = {}


def read_fields(store) -> list[tuple]:
    """Every Profile's fields through RecordTable.fields, with the types the docstring says to convert."""
    table = store.table("test_fields", Profile, lookups=("source",))
    with store.transaction() as db:
        table.put(db, [Profile(id="b", source="y", chunks=["c1", "c2"], metadata={"n": 3}), Profile(id="a", source="x", weight=2.5)])
    rows = table.fields("source", "weight", "chunks", "metadata.n", "metadata.missing")
    # of some records only (an unknown key is absent, a repeated one read once), in key order
    assert table.fields("source", keys=["b", "gone", "a", "b"]) == [("a", "x"), ("b", "y")]
    assert table.fields("source", keys=[]) == []
    return [(key, source, float(weight), json.loads(chunks), n if n is None else int(n), missing) for key, source, weight, chunks, n, missing in rows]


FIELDS = [("a", "x", 2.5, [], None, None), ("b", "y", 1.0, ["c1", "c2"], 3, None)]


def test_a_record_tables_fields_are_read_without_decoding_its_records():
    assert read_fields(VectorIndex().store) == FIELDS
    with pytest.raises(ConfigurationError, match="snake_case"):
        VectorIndex().store.table("test_fields", Profile).fields("weight; DROP TABLE documents")


def test_replacing_a_table_writes_only_what_changed():
    index = VectorIndex()
    edges = index.store.table("test_replaced", Edge)
    old = {e.id: e for e in (Edge(id="ab", source="a", target="b"), Edge(id="bc", source="b", target="c"))}
    with index.store.transaction() as db:
        edges.put(db, old.values())
    before = edges.generation()
    new = {"ab": old["ab"], "cd": Edge(id="cd", source="c", target="d")}
    with index.store.transaction() as db:
        assert edges.replace(db, old, new) == ["bc"]
    assert edges.all() == list(new.values()) and edges.generation() != before
    before = edges.generation()
    with index.store.transaction() as db:  # nothing changed: nothing written
        assert edges.replace(db, new, dict(new)) == []
    assert edges.generation() == before


def test_configuration_is_validated_stored_and_described(tmp_path):
    with pytest.raises(ConfigurationError, match="max_gleanings"):
        GraphRAGIndex(max_gleanings=2)  # one name across methods: gleaning
    with pytest.raises(ConfigurationError, match="chunk_overlap"):
        VectorIndex(chunk_size=100, chunk_overlap=100)
    index = LightRAGIndex(path=tmp_path / "idx", gleaning=0, summary_max_input_tokens=3000)
    index.close()
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["config"]["gleaning"] == 0 and manifest["config"]["extraction"] == "offline"
    assert GraphRAGIndex().config.entity_types == LightRAGIndex().config.entity_types
    rows = {name: (value, doc) for name, value, doc in describe(LightRAGIndex.load(tmp_path / "idx").config)}
    assert rows["gleaning"][0] == 0 and "LightRAG" in rows["gleaning"][1]


def _openie(tmp_path, documents):
    docs = [
        {"idx": i, "passage": d.text, "extracted_entities": [d.id.title(), "Tarn"], "extracted_triples": [[d.id.title(), "lies near", "Tarn"]]}
        for i, d in enumerate(documents)
    ]
    path = tmp_path / "openie.json"
    path.write_text(json.dumps({"docs": docs}))
    return path


def test_extraction_spec_is_recorded_and_rebuilt_on_reopen(tmp_path):
    """Defect: a LightRAG index built from imported triples silently switched to offline
    extraction after reopening."""
    documents = [Document(id=name, text=f"{name.title()} is a village on the coast.") for name in ("holm", "vik", "ness")]
    path = _openie(tmp_path, documents)
    for cls in (LightRAGIndex, GraphRAGIndex):
        target = tmp_path / cls.method
        index = cls(path=target, extraction=f"openie:{path}")
        index.insert(documents[:2])
        index.close()
        reopened = cls.load(target)
        assert reopened.config.extraction == f"openie:{path}"
        reopened.insert(documents[2:])
        names = {e.name for e in (reopened.entity_table.all())}
        assert {"Holm", "Vik", "Ness", "Tarn"} <= names, cls.method  # the triples, not the offline rules
        reopened.close()


def test_a_custom_extractor_is_recorded_and_asked_for_again(tmp_path):
    class Mine:
        async def aextract(self, chunks):
            from rhizome.core.extraction import Extraction

            return [Extraction(chunk_id=c.id) for c in chunks]

    index = LightRAGIndex(path=tmp_path / "idx", extraction=Mine())
    index.insert(["Some text about Tarn."])
    assert index.config.extraction.startswith("custom:") and index.config.extraction.endswith("Mine")
    index.close()
    reopened = LightRAGIndex.load(tmp_path / "idx")
    assert reopened.as_retriever().retrieve("Tarn")  # queries need no extractor
    with pytest.raises(ConfigurationError, match="pass the same extractor"):
        reopened.insert(["More text."])
    reopened.close()
    again = LightRAGIndex.load(tmp_path / "idx", extraction=Mine())
    again.insert(["More text."])
    again.close()


def test_usage_is_counted_per_call_even_when_models_are_shared():
    model = FakeChatModel(SchemaResponder())
    results: dict[int, dict] = {}

    def work(n: int) -> None:
        with usage_scope() as usage:
            for _ in range(n):
                model.complete_json("Name a Harbour.", Community)
        results[n] = usage.stats()

    threads = [threading.Thread(target=work, args=(n,)) for n in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {n: r["model_calls"] for n, r in results.items()} == {1: 1, 2: 2, 3: 3}
    assert model.usage.calls == 6


def test_the_write_lock_holds_across_threads_and_event_loops():
    lock = WriteLock()
    inside: list[int] = []
    overlaps: list[bool] = []

    async def critical(n: int) -> None:
        async with lock:
            overlaps.append(bool(inside))
            inside.append(n)
            await asyncio.sleep(0.01)
            inside.remove(n)

    threads = [threading.Thread(target=run_sync, args=(critical(n),)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == [False] * 6


def test_model_calls_are_cached_by_default_and_can_be_turned_off(tmp_path):
    """Defect: the library API had no model-call cache by default (only the CLI had one)."""
    documents = [Document(id=f"d{i}", text=f"Harbour master {name} keeps the Tarn ledger with {other}.") for i, (name, other) in enumerate([("Mira", "Osric"), ("Petra", "Hanna")])]
    first = FakeChatModel(SchemaResponder())
    GraphRAGIndex(HashingEmbedder(), llm=first, path=tmp_path / "a").insert(documents)
    assert first.usage.calls > 0 and (tmp_path / "a" / "model-calls.sqlite").exists() is False  # tests set RHIZOME_CACHE_DIR
    second = FakeChatModel(SchemaResponder())
    report = GraphRAGIndex(HashingEmbedder(), llm=second, path=tmp_path / "b").insert(documents)
    assert second.usage.calls == 0 and report.stats["cache_hits"] > 0  # the same calls, answered from the cache
    third = FakeChatModel(SchemaResponder())
    GraphRAGIndex(HashingEmbedder(), llm=third, path=tmp_path / "c", cache=False).insert(documents)
    assert third.usage.calls == first.usage.calls


def test_cache_lives_in_the_index_directory_without_rhizome_cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("RHIZOME_CACHE_DIR")
    model = FakeChatModel(SchemaResponder())
    GraphRAGIndex(HashingEmbedder(), llm=model, path=tmp_path / "idx").insert(["Captain Mira Holt sails to Gull Island."])
    assert (tmp_path / "idx" / "model-calls.sqlite").exists()


def test_graphrag_reports_interrupted_midway_are_not_paid_again():
    """Defect: GraphRAG committed summaries and reports once, at the end: interrupted after 2 of
    4 reports, all 4 were paid again."""
    from rhizome.core.errors import ModelUnavailableError
    from rhizome.graphrag.prompts import REPORT_SYSTEM

    counts = {"report": 0}
    fail_at: list[int] = [3]

    class Reports(SchemaResponder):
        def __call__(self, messages, schema):
            if messages[0]["content"] == REPORT_SYSTEM:
                counts["report"] += 1
                if counts["report"] == fail_at[0]:
                    raise ModelUnavailableError("the server went away")
            return super().__call__(messages, schema)

    topics = [
        "Mira Holt sails the Tarn ferry with Osric Vane.",
        "Petra Lind chairs the Salt Guild with Hanna Crest.",
        "Ivo Brand trains the Gull Island choir with Lena Frey.",
        "Tomas Berg coaches Falcon United with Nils Holm.",
    ]
    index = GraphRAGIndex(HashingEmbedder(), llm=FakeChatModel(Reports(), max_retries=0, max_concurrency=1), extraction="offline", cache=False)
    with pytest.raises(ModelUnavailableError):
        index.insert(topics)
    paid = counts["report"]  # the third failed; a fourth may have finished meanwhile
    assert index.needs_refresh and paid in (3, 4)
    fail_at[0] = -1
    stats = index.refresh()
    total = len(index.graph().communities)
    assert total == 4 and stats["reports_written"] == total - (paid - 1)  # every finished report was kept
    assert counts["report"] == paid + stats["reports_written"] and not index.needs_refresh


def test_retrievers_report_what_each_call_cost():
    index = GraphRAGIndex(HashingEmbedder(), llm=FakeChatModel(SchemaResponder()), extraction="offline")
    index.insert(["Mira Holt sails the Tarn ferry with Osric Vane.", "Petra Lind chairs the Salt Guild with Hanna Crest."])
    retriever = index.as_retriever(mode="global")
    first = retriever.search("Who sails the ferry?")
    second = retriever.search("Who chairs the guild?")
    assert first.stats["model_calls"] > 0 and second.stats["model_calls"] > 0
    assert "last_stats" not in vars(retriever)


def test_sync_wrappers_are_safe_inside_a_running_loop():
    async def inside() -> int:
        index = VectorIndex()
        index.insert(["one text", "another text"])  # a sync call from async code
        return len(index.as_retriever(k=2).retrieve("text"))

    assert asyncio.run(inside()) == 2
    time.sleep(0)


def test_a_directory_of_another_method_is_refused_clearly(tmp_path):
    from rhizome.core import IndexMismatchError

    VectorIndex(path=tmp_path / "idx").close()
    with pytest.raises(IndexMismatchError, match="'naive' index"):
        GraphRAGIndex(path=tmp_path / "idx")


def test_fill_never_repeats_a_chunk_that_a_segment_hit_holds():
    from rhizome.core.retrieval.contract import BaseRetriever, Retrieval, provenance

    index = VectorIndex(HashingEmbedder(), chunk_size=16, chunk_overlap=0)
    index.insert(Document(id="d", text=" ".join(f"Sentence number {i} is about the harbour ferry." for i in range(6))))
    chunks = index.store.chunks_of("d")
    assert len(chunks) >= 4

    class OneSegment(BaseRetriever):
        async def _asearch(self, query: str, k: int) -> Retrieval:
            held = {c.id: c for c in chunks[:2]}
            hit = Hit(id="d:0-2", text="...", score=1.0, kind="segment", provenance=provenance(held, held))
            return Retrieval(query=query, hits=[hit])

    hits = OneSegment(index, k=4).retrieve("harbour ferry")
    assert [h.kind for h in hits] == ["segment", "chunk", "chunk", "chunk"]
    assert not {chunks[0].id, chunks[1].id} & {h.id for h in hits[1:]}
    first = index.store.vector_generation(index.CHUNK_COLLECTION)
    index.insert(Document(id="e", text="Another document about the lighthouse."))
    assert index.store.vector_generation(index.CHUNK_COLLECTION) == first + 1


def test_stored_records_read_what_is_asked_for_and_keep_a_bounded_number():
    from rhizome.core.graph.entity_graph import StoredRecords

    reads: list[list[str]] = []

    def read(keys):
        reads.append(list(keys))
        return {k: k.upper() for k in keys if k != "gone"}

    records = StoredRecords(["a", "b", "c", "gone"], read, keep=2)
    assert len(records) == 4 and "c" in records and "z" not in records and list(records) == ["a", "b", "c", "gone"]
    assert records.many(["b", "z", "a"]) == {"b": "B", "a": "A"} and reads == [["b", "a"]]
    assert records["a"] == "A" and reads == [["b", "a"]]  # held
    assert records.many(["a", "c"]) == {"a": "A", "c": "C"} and reads[-1] == ["a", "c"]  # over the bound: all read again
    assert records["b"] == "B" and reads[-1] == ["b"]  # over the bound again: what was held is let go
    assert records.get("gone") is None and "gone" in records
    assert list(records.values()) == ["A", "B", "C"]


def test_the_method_registry_sees_a_distribution_installed_after_its_first_scan(tmp_path, monkeypatch):
    # the registry keeps its scan of the installed metadata while the import path's folders are
    # unchanged; a new distribution is a new *.dist-info folder, and the next call finds it
    import sys

    from rhizome.core.store.storage import method_registry

    before = method_registry()
    assert {"naive", "graphrag"} <= set(before) and method_registry() == before
    method_registry()["naive"] = None  # a copy each time
    assert method_registry() == before
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    assert method_registry() == before
    info = tmp_path / "rhizome_toy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rhizome-toy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[rhizome.methods]\ntoy = rhizome.core.naive:VectorIndex\n")
    after = method_registry()
    assert set(after) == set(before) | {"toy"} and after["toy"].value == "rhizome.core.naive:VectorIndex"

