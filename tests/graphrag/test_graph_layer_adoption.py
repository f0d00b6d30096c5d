"""GraphRAG and ArchRAG indexes written before the entity-graph layer (per-chunk records kept as
kernel extractions, no mention rows): read-only they answer as before; the first writable open
converts them, and inserts and deletes then go as on an index the layer built. A GraphRAG insert
the old code cut short (chunks stored, not yet merged) is folded by the next change."""

from __future__ import annotations

from typing import Any

import pytest

from rhizome.archrag import ArchRAGIndex
from rhizome.core import HashingEmbedder
from rhizome.core.aio import run_sync
from rhizome.core.extraction import Extraction
from rhizome.graphrag import GraphRAGIndex
from rhizome.graphrag.index import _Unmerged
from rhizome.tools.testing import CORPUS

QUESTIONS = ("Who keeps the ferry?", "What happened in the storm?")


def build(cls: Any, path: Any, documents: Any) -> Any:
    index = cls(HashingEmbedder(), extraction="offline", path=path)
    index.insert(documents)
    return index


def answers(index: Any, mode: str) -> list[Any]:
    return [[h.id for h in index.as_retriever(k=4, mode=mode).retrieve(q)] for q in QUESTIONS]


def as_before(index: Any, flag: str) -> None:
    """Store the index's records as the code before the layer wrote them."""
    chunks = list(index.store.chunks(index.store.chunk_ids()).values())
    extractions = run_sync(index.extractor.aextract(chunks))
    with index.store.transaction() as db:
        index.entity_graph.extractions.view(Extraction).put(db, extractions)
        index.entity_graph.mentions.delete(db, index.entity_graph.mentions.keys())
        db.execute("DELETE FROM meta WHERE key = ?", (flag,))


@pytest.mark.parametrize(("cls", "mode", "flag"), [(GraphRAGIndex, "local", "graphrag.graph_layer"), (ArchRAGIndex, "passages", "archrag.graph_layer")])
def test_an_index_written_before_the_layer_answers_alike_and_goes_on_as_a_new_one(tmp_path, cls, mode, flag):
    old = build(cls, tmp_path / "old", CORPUS[:4])
    expected = answers(old, mode)
    as_before(old, flag)
    old.close()

    reader = cls.load(tmp_path / "old", readonly=True)
    assert answers(reader, mode) == expected
    assert not reader.store.get_meta(flag, False), "a read-only open changes nothing"
    reader.close()
    writer = cls(HashingEmbedder(), extraction="offline", path=tmp_path / "old")
    assert writer.store.get_meta(flag, False) and answers(writer, mode) == expected
    fresh = build(cls, tmp_path / "fresh", CORPUS[:4])
    for index in (writer, fresh):
        index.insert(CORPUS[4:6])
        index.delete(CORPUS[1].id)
    assert answers(writer, mode) == answers(fresh, mode)
    assert [e.model_dump(exclude={"metadata"}) for e in writer.entity_graph.all_entities()] == [
        e.model_dump(exclude={"metadata"}) for e in fresh.entity_graph.all_entities()
    ]
    assert writer.entity_graph.all_relations() == fresh.entity_graph.all_relations()


def test_chunks_an_old_graphrag_insert_left_unmerged_are_folded_by_the_next_change(tmp_path):
    old = build(GraphRAGIndex, tmp_path / "old", CORPUS[:4])
    late = old.store.chunk_ids([CORPUS[3].id])
    unfolded = run_sync(old.entity_graph.plan([], late))  # the graph without the late chunks
    with old.store.transaction() as db:
        old.entity_graph.write(db, unfolded)
        old.entity_graph.forget_chunks(db, late)
    as_before(old, "graphrag.graph_layer")
    unmerged = old.store.table("graphrag_unmerged", _Unmerged, key="chunk_id")
    with old.store.transaction() as db:  # stored, extracted, not yet merged: a cut-short insert
        unmerged.put(db, [_Unmerged(chunk_id=c) for c in late])
    old.close()

    index = GraphRAGIndex(HashingEmbedder(), extraction="offline", path=tmp_path / "old")
    index.insert(CORPUS[4])
    fresh = build(GraphRAGIndex, tmp_path / "fresh", CORPUS[:5])

    def graph(index: GraphRAGIndex) -> dict[str, Any]:
        return {r.id: sorted(r.source_chunk_ids) for r in [*index.entity_graph.all_entities(), *index.entity_graph.all_relations()]}

    assert graph(index) == graph(fresh)
    assert {e for c in index.graph().communities.values() for e in c.entity_ids} == {e for c in fresh.graph().communities.values() for e in c.entity_ids}
