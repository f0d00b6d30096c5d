"""LightRAGIndex: building, incremental insert, delete with rebuild, persistence, errors."""

from __future__ import annotations

import sqlite3

import pytest
from _lightrag_fakes import CORPUS, fake_model

from rhizome.core import (
    ConfigurationError,
    Document,
    FakeChatModel,
    HashingEmbedder,
    InvalidInputError,
    load_index,
)
from rhizome.lightrag import LightRAGIndex


def kernel_rows(index) -> dict[str, list]:
    q = index.store.query
    return {
        "documents": sorted(r[:2] for r in q("SELECT id, content_hash FROM documents")),
        "chunks": sorted(q("SELECT id, document_id, text FROM chunks")),
        "vectors": sorted(q("SELECT collection, id, vector FROM vectors")),
    }


def graph_rows(index) -> dict[str, list]:
    """Every LightRAG record, sorted: equal snapshots mean equal graph records."""
    tables = (index.entity_table, index.relation_table, index.entity_graph.lists.citations, index.entity_graph.lists.fragments, index.entity_graph.extractions, index.entity_graph.mentions)
    return {t.name: sorted(r.model_dump_json() for r in t.all()) for t in tables}


def everything(index) -> dict[str, list]:
    return {**kernel_rows(index), **graph_rows(index)}


def test_offline_index_builds_profiles_and_graph():
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    report = index.insert(CORPUS)
    assert report.inserted == ["curie", "paris", "nobel"]
    curie = index.entity("Marie Curie")
    assert curie is not None and curie.source_chunk_ids == ["curie:0"]
    paris = index.entity("paris")
    assert paris.source_chunk_ids == ["curie:0", "paris:0"]  # deduplicated across documents
    assert index.relation_table.count() > 0
    for relation in index.relations():
        assert relation.keywords, "every relation has theme keywords (its keys)"
    for collection in (index.ENTITY_COLLECTION, index.RELATION_COLLECTION, index.CHUNK_COLLECTION):
        assert len(index.store.collection(collection)) > 0


def test_llm_extraction_with_packing_and_gleaning():
    model, responder = fake_model(glean=True)
    index = LightRAGIndex(llm=model, chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    # three short chunks fit one pack: one extraction call and one gleaning call in all
    assert responder.kinds.count("extract") == 1 and responder.kinds.count("glean") == 1
    curie = index.entity("Pierre Curie")
    assert curie.type == "PERSON" and curie.source_chunk_ids == ["curie:0"]  # per-passage provenance
    stockholm = index.entity("Stockholm")
    assert stockholm.source_chunk_ids == ["nobel:0"]
    assert index.entity("Gleaned 3") is not None  # what gleaning found is kept
    rows = index.entity_graph.extractions.get(["paris:0"])
    assert rows["paris:0"].content_keywords == ["topic"]


def test_paper_mode_one_call_per_chunk():
    model, responder = fake_model()
    index = LightRAGIndex(llm=model, pack_tokens=0, chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    assert responder.kinds.count("extract") == 3 and responder.kinds.count("glean") == 3


def test_repeated_insert_is_a_no_op_without_model_calls():
    model, _ = fake_model()
    index = LightRAGIndex(llm=model, chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    before = everything(index)
    calls = model.usage.calls
    report = index.insert(CORPUS)
    assert report.skipped == ["curie", "paris", "nobel"] and not report.inserted
    assert model.usage.calls == calls
    assert everything(index) == before


@pytest.mark.parametrize("with_model", [False, True])
def test_insert_then_delete_restores_every_record(with_model):
    model = fake_model()[0] if with_model else None
    index = LightRAGIndex(llm=model, chunk_size=64, chunk_overlap=8, force_summary_fragments=2)
    index.insert(CORPUS)
    before = everything(index)
    extra = Document(id="extra", text="Marie Curie visited Stockholm. Pierre Curie stayed in Paris with Alfred Nobel.")
    index.insert(extra)
    assert everything(index) != before
    calls = model.usage.calls if model else 0
    report = index.delete("extra")
    assert report.deleted == ["extra"]
    assert everything(index) == before
    if model is not None:  # the rebuild reads stored extractions: no extraction call
        extra_kinds = model.requests[calls:]
        assert not any("numbered passages" in m[-1]["content"] for m in extra_kinds)


def test_delete_rebuilds_shared_profiles_and_drops_orphans():
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    index.delete(["curie", "unknown"])
    assert index.entity("Marie Curie") is None  # only the deleted document supported it
    paris = index.entity("Paris")
    assert paris.source_chunk_ids == ["paris:0"]
    assert all("Curie" not in d for d in paris.descriptions)
    assert "Marie Curie" not in paris.description
    assert all(r.source_chunk_ids and not any(c.startswith("curie:") for c in r.source_chunk_ids) for r in index.relations())
    ids = set(index.store.collection(index.ENTITY_COLLECTION).ids())
    assert "marie curie" not in ids and "paris" in ids


def test_changed_document_is_replaced():
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    report = index.insert(Document(id="paris", text="Paris hosts the Louvre. The Louvre holds the Mona Lisa.", metadata={"title": "Paris"}))
    assert report.replaced == ["paris"]
    assert index.entity("Seine") is None and index.entity("Louvre") is not None
    assert index.entity("Paris").source_chunk_ids == ["curie:0", "paris:0"]


def test_persist_load_and_readonly_query(tmp_path):
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8, gleaning=0, path=tmp_path / "idx")
    index.insert(CORPUS)
    hits = [(h.kind, h.id) for h in index.as_retriever(k=6).retrieve("Where did Marie Curie work?")]
    index.close()
    reopened = load_index(tmp_path / "idx", readonly=True)
    assert isinstance(reopened, LightRAGIndex) and reopened.config.gleaning == 0
    assert [(h.kind, h.id) for h in reopened.as_retriever(k=6).retrieve("Where did Marie Curie work?")] == hits
    reopened.close()
    writable = LightRAGIndex.load(tmp_path / "idx")
    writable.insert(Document(id="more", text="Pierre Curie taught in Paris."))
    assert "more:0" in writable.entity("Pierre Curie").source_chunk_ids
    writable.close()


def test_in_memory_index_persists_to_a_directory(tmp_path):
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    before = graph_rows(index)
    index.persist(tmp_path / "copy")
    index.close()
    with LightRAGIndex.load(tmp_path / "copy", readonly=True) as loaded:
        assert graph_rows(loaded) == before


def test_empty_extraction_fails_the_documents_and_keeps_what_was_stored():
    model, _ = fake_model()
    index = LightRAGIndex(llm=model, chunk_size=64, chunk_overlap=8, batch_size=1)
    index.insert(CORPUS[:1])
    index.extractor.model = FakeChatModel([{"entities": [], "relations": []}])
    report = index.insert(CORPUS[1:])
    assert sorted(report.failed) == sorted(d.id for d in CORPUS[1:]) and not report.inserted
    assert all("EmptyExtractionError" in why and "allow_empty" in why for why in report.failed.values())
    assert index.store.document_ids() == ["curie"] and index.entity("Marie Curie") is not None


def test_a_document_failed_by_an_empty_extraction_is_asked_again_on_the_next_insert(tmp_path):
    model = FakeChatModel([{"entities": [], "relations": []}])
    index = LightRAGIndex(HashingEmbedder(), llm=model, extraction="llm", path=tmp_path / "i")
    assert list(index.insert(CORPUS[:1]).failed) == ["curie"]
    index.close()
    healthy, _ = fake_model()
    with LightRAGIndex.load(tmp_path / "i", llm=healthy) as index:  # the index's own cache on disk
        report = index.insert(CORPUS[:1])
        assert report.inserted == ["curie"] and not report.failed
        assert report.stats["model_calls"] > 0 and index.entity("Marie Curie") is not None


def test_bad_input_and_parameters():
    with pytest.raises(ConfigurationError):
        LightRAGIndex(entity_types="PERSON")
    with pytest.raises(ConfigurationError):
        LightRAGIndex(resolution_threshold=0)
    index = LightRAGIndex()
    with pytest.raises(ConfigurationError, match="modes"):
        index.as_retriever(mode="drift")
    with pytest.raises(ConfigurationError, match="cosine_threshold must be a number between -1 and 1"):
        index.as_retriever(cosine_threshold="0.2")  # accepted, then a TypeError inside search()
    with pytest.raises(ConfigurationError, match=r"kinds must be a non-empty list \(one of 'chunk', 'relation', 'entity' each\)"):
        index.as_retriever(kinds=["chunk", "passage"])
    with pytest.raises(ConfigurationError, match="max_total_tokens must be a positive integer, got 0"):
        index.as_retriever(mode="local", max_total_tokens=0)
    assert index.as_retriever(kinds=["entity"]).params.kinds == ("entity",)
    index.insert(CORPUS)
    with pytest.raises(InvalidInputError):
        index.as_retriever().retrieve("   ")
    with pytest.raises(InvalidInputError):
        index.as_retriever().retrieve("x", k=0)


def test_embedder_mismatch_is_refused(tmp_path):
    index = LightRAGIndex(HashingEmbedder(), path=tmp_path / "idx")
    index.insert(CORPUS)
    index.close()
    from rhizome.core import IndexMismatchError

    with pytest.raises(IndexMismatchError):
        LightRAGIndex.load(tmp_path / "idx", embedder=HashingEmbedder(128))


def test_records_live_in_the_index_database(tmp_path):
    index = LightRAGIndex(path=tmp_path / "idx")
    index.insert(CORPUS)
    index.close()
    with sqlite3.connect(tmp_path / "idx" / "records.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM rec_lightrag_extractions").fetchone()[0] == 3
