"""The graph-evidence toolkit: the entity–passage walk, seed weighting, fusion with dense
retrieval, and linking a query to entities."""

from __future__ import annotations

import pytest

from rhizome.core.embeddings import HashingEmbedder
from rhizome.core.evidence import EvidenceGraph, fuse, link_entities, rank_passages
from rhizome.core.extraction import query_names
from rhizome.core.naive import VectorIndex
from rhizome.core.types import Entity, Relation


def chain() -> EvidenceGraph:
    """a → b (a relation); a in c1, b in c2, c (unrelated) in c3, hub in every chunk."""
    entities = [
        Entity(id="a", name="A", source_chunk_ids=["c1"]),
        Entity(id="b", name="B", source_chunk_ids=["c2"]),
        Entity(id="c", name="C", source_chunk_ids=["c3"]),
        Entity(id="hub", name="Hub", source_chunk_ids=["c1", "c2", "c3"]),
    ]
    relations = [Relation(id="r", source="a", target="b", weight=2.0)]
    return EvidenceGraph.from_records(entities, relations)


def test_the_walk_reaches_the_second_hop_and_not_unrelated_passages():
    graph = EvidenceGraph.from_records(
        [Entity(id="a", name="A", source_chunk_ids=["c1"]), Entity(id="b", name="B", source_chunk_ids=["c2"]),
         Entity(id="c", name="C", source_chunk_ids=["c3"])],
        [Relation(id="r", source="a", target="b")],
    )
    ranked = graph.rank({"a": 1.0})
    assert [c for c, _ in ranked] == ["c1", "c2"]  # c3 is not connected to a
    assert ranked[0][1] > ranked[1][1] > 0
    assert graph.rank({"unknown": 1.0}) == [] and graph.rank({}) == []
    assert graph.rank({"a": 1.0}, limit=1) == ranked[:1]


def test_seeds_are_weighted_by_specificity():
    graph = chain()
    # the hub occurs in every passage: seeding it equally with c says less than c itself
    ranked = dict(graph.rank({"hub": 1.0, "c": 1.0}))
    assert ranked["c3"] == max(ranked.values())


def test_passage_seeds_add_passages_and_are_normalised():
    graph = chain()
    only_entity = dict(graph.rank({"a": 1.0}))
    with_dense = dict(graph.rank({"a": 1.0}, {"c3": 0.9, "c1": 0.1}, passage_seed=0.5))
    assert with_dense["c3"] > only_entity["c3"]
    assert dict(graph.rank({"a": 1.0}, {"c3": 0.9}, passage_seed=0.0)) == pytest.approx(only_entity)


def test_fuse_is_weighted_reciprocal_rank():
    fused = dict(fuse([["x", "y"], ["y", "z"]], [1.0, 2.0], k=1))
    assert fused == pytest.approx({"x": 1 / 2, "y": 1 / 3 + 2 / 2, "z": 2 / 3})
    assert [key for key, _ in fuse([["x", "x", "y"]])] == ["x", "y"]  # repeats count once


def test_rank_passages_keeps_dense_hits_the_graph_does_not_hold():
    graph = chain()
    dense = [("c9", 0.9), ("c1", 0.5)]  # c9 has no entities
    fused = [c for c, _ in rank_passages(graph, {"a": 1.0}, dense, dense_lead=0)]
    assert fused[0] == "c1" and "c9" in fused and "c2" in fused
    # by default dense retrieval's first two passages lead, in their order; the graph fills the rest
    led = rank_passages(graph, {"a": 1.0}, dense)
    assert [c for c, _ in led][:2] == ["c9", "c1"] and "c2" in [c for c, _ in led][2:]
    assert [x for _, x in led] == sorted((x for _, x in led), reverse=True)
    walk_only = [c for c, _ in rank_passages(graph, {"a": 1.0}, dense, dense_weight=0.0, dense_lead=0)]
    assert "c9" not in walk_only and walk_only[0] == "c1"
    # no fusion, but the lead still applies: dense's first two, then the walk's order
    walk_led = [c for c, _ in rank_passages(graph, {"a": 1.0}, dense, dense_weight=0.0)]
    assert walk_led[:2] == ["c9", "c1"] and walk_led[2:] == [c for c in walk_only if c not in ("c9", "c1")]
    assert rank_passages(EvidenceGraph({}, []), {}, dense, dense_weight=0.0, dense_lead=0) == dense
    assert [c for c, _ in rank_passages(EvidenceGraph({}, []), {}, dense, dense_weight=0.0)] == ["c9", "c1"]
    # another text's nearest passages join the fusion at their weight
    more = [c for c, _ in rank_passages(graph, {"a": 1.0}, dense, more_dense=[[("c7", 0.8)]], more_weight=0.5, dense_lead=0)]
    assert "c7" in more and more.index("c7") > more.index("c9")


async def test_link_entities_links_each_text_and_keeps_the_best_score():
    index = VectorIndex(HashingEmbedder(dimension=256))
    store = index.store
    names = ["Marie Curie", "Warsaw", "Nobel Prize", "Stockholm"]
    with store.transaction() as db:
        store.put_vectors(db, "entities", [n.lower() for n in names], await index.embedder.aembed(names))
    query = "Where was the spouse of Marie Curie born?"
    vectors = await index.embedder.aembed_query([query, *query_names(query)])
    linked = await link_entities(index, "entities", vectors, 1)
    assert query_names(query) == ["Marie Curie"]
    assert max(linked, key=linked.get) == "marie curie" and linked["marie curie"] == pytest.approx(1.0, abs=1e-6)
    assert len(await link_entities(index, "entities", vectors[:1], 1)) == 1
    halved = await link_entities(index, "entities", vectors, 1, weights=[1.0, 0.5])
    assert halved["marie curie"] == pytest.approx(max(linked["marie curie"] * 0.5, (await link_entities(index, "entities", vectors[:1], 1)).get("marie curie", 0)))
    assert await link_entities(index, "missing", vectors, 3) == {}
