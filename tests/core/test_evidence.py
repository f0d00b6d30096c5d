"""The graph-evidence toolkit: the entity–passage walk, seeds and their relative weights,
linking a query to entities, and chains of facts."""

from __future__ import annotations

import numpy as np
import pytest

from rhizome.core.errors import ConfigurationError
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.naive import VectorIndex
from rhizome.core.retrieval.evidence import (
    EvidenceGraph,
    EvidenceParams,
    FactGraph,
    fact_seeds,
    link_names,
    merge_seeds,
    rank_passages,
    relative_weights,
)
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


def test_passage_seeds_add_passages_at_their_weight():
    graph = chain()
    only_entity = dict(graph.rank({"a": 1.0}))
    with_dense = dict(graph.rank({"a": 1.0}, {"c3": 0.9, "c1": 0.1}, passage_weight=0.5))
    assert with_dense["c3"] > only_entity.get("c3", 0.0)
    assert dict(graph.rank({"a": 1.0}, {"c3": 0.9}, passage_weight=0.0)) == pytest.approx(only_entity)
    # a passage seed alone starts a walk: the passage first, then what its entities reach
    alone = [c for c, _ in graph.rank({}, {"c1": 1.0})]
    assert alone[0] == "c1" and "c2" in alone
    # a seeded passage outside the graph is kept, at its share of the restart times 1 - damping
    outside = dict(graph.rank({}, {"c9": 1.0, "c1": 1.0}, passage_weight=1.0, damping=0.5))
    assert outside["c9"] == pytest.approx(0.25) and outside["c1"] > outside["c9"]
    with pytest.raises(ConfigurationError):
        graph.rank({"a": 1.0}, damping=1.0)


def test_relative_weights_follow_the_spread_of_one_search():
    weights = relative_weights([("x", 0.9), ("y", 0.8), ("z", 0.5)], temperature=0.5)
    assert weights["x"] == 1.0 and 1.0 > weights["y"] > weights["z"] > 0
    spread = np.std([0.9, 0.8, 0.5])
    assert weights["y"] == pytest.approx(np.exp((0.8 - 0.9) / (0.5 * spread)))
    # the same gaps at another scale give the same weights: the embedder's scale does not matter
    scaled = relative_weights([("x", 0.45), ("y", 0.40), ("z", 0.25)], temperature=0.5)
    assert scaled == pytest.approx(weights)
    assert relative_weights([("x", 0.3), ("y", 0.3)]) == {"x": 1.0, "y": 1.0}  # no spread
    assert relative_weights([]) == {}
    assert relative_weights([("x", 0.9), ("y", 0.5), ("z", 0.1)], temperature=None) == pytest.approx({"x": 1.0, "y": 0.5, "z": 0.0})
    with pytest.raises(ConfigurationError):
        relative_weights([("x", 1.0)], temperature=0)


def test_fact_seeds_weigh_each_endpoint_by_its_best_fact():
    ends = {"f1": ("a", "b"), "f2": ("b", "c"), "f3": ("d", "e")}
    seeds = fact_seeds([("f1", 0.9), ("f2", 0.7), ("f3", 0.2), ("unknown", 0.1)], ends)
    assert seeds["a"] == seeds["b"] == 1.0 and 1.0 > seeds["c"] > seeds["d"] == seeds["e"]
    assert merge_seeds({"a": 0.2, "x": 0.5}, {"a": 0.7}) == {"a": 0.7, "x": 0.5}


def test_rank_passages_ranks_by_the_walk_with_dense_passages_as_seeds():
    graph = chain()
    dense = [("c9", 0.9), ("c1", 0.5), ("c3", 0.1)]  # c9 has no entities
    ranked = [c for c, _ in rank_passages(graph, {"a": 1.0}, dense)]
    assert set(ranked) >= {"c9", "c1", "c2", "c3"}
    assert ranked.index("c1") < ranked.index("c3")  # c1: near the query and reached from a
    assert ranked.index("c2") < ranked.index("c3")  # the second hop of a before an unrelated passage
    assert rank_passages(EvidenceGraph({}, []), {}, []) == []
    assert [c for c, _ in rank_passages(EvidenceGraph({}, []), {}, dense)][:1] == ["c9"]
    # another text's nearest passages are seeds at their weight
    more = [c for c, _ in rank_passages(graph, {"a": 1.0}, dense, more_dense=[[("c7", 0.8)]], more_weight=0.5)]
    assert "c7" in more and more.index("c7") > more.index("c9")
    # without passage seeds the entities alone rank
    assert [c for c, _ in rank_passages(graph, {"a": 1.0}, dense, passage_weight=0.0)] == ["c1", "c2", "c3"]


def test_evidence_params_are_checked():
    assert EvidenceParams().dense_k == 200
    for bad in ({"dense_k": 0}, {"fact_k": True}, {"temperature": -1}, {"passage_weight": -0.5}, {"damping": 1.0}, {"chains": "yes"}):
        with pytest.raises(ConfigurationError):
            EvidenceParams(**bad)
    with pytest.raises(ConfigurationError, match="no setting 'dense_weight'; its settings are dense_k, fact_k"):
        EvidenceParams(dense_weight=1.0)  # an option of the fusion that is gone is refused


def test_fact_chains_hop_to_new_passages_and_score_the_question():
    # f1 (in p1) joins f2 (in p2) through b; f3 states nearly the same as f1, in the same passage
    facts = FactGraph([("f1", "a", "b", ["p1"]), ("f2", "b", "c", ["p2"]), ("f3", "a", "b", ["p1"]), ("f4", "c", "d", ["p3"])])
    vectors = {"f1": [1.0, 0.0, 0.0], "f2": [0.0, 1.0, 0.0], "f3": [0.9, 0.1, 0.0], "f4": [0.0, 0.0, 1.0]}

    def present(ids):
        held = [i for i in ids if i in vectors]
        return held, np.array([vectors[i] for i in held]) if held else np.zeros((0, 3))

    query = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    chains = facts.chains(query, [("f1", 0.7), ("f3", 0.7)], present)
    assert set(chains[0].facts) == {"f1", "f2"} and chains[0].score == pytest.approx(1.0)
    assert all(not {"f1", "f3"} <= set(c.facts) for c in chains)  # no hop within one passage
    assert len({frozenset(c.facts) for c in chains}) == len(chains)
    seeds = facts.seeds(chains)
    assert seeds["b"] == 1.0 and {"a", "c"} <= set(seeds)
    assert facts.chains(query, [], present) == [] and facts.seeds([]) == {}
    assert EvidenceParams(chains=False).chain_seeds(facts, query, [("f1", 0.7)], present) == ({}, [])
    found, kept = EvidenceParams(chains=True).chain_seeds(facts, query, [("f1", 0.7)], present)
    assert {"a", "b", "c"} <= set(found) and kept[0].facts[0] == "f1"


async def entity_names() -> VectorIndex:
    """An index whose collection ``entities`` holds the vectors of four names."""
    index = VectorIndex(HashingEmbedder(dimension=256))
    names = ["Marie Curie", "Warsaw", "Nobel Prize", "Stockholm"]
    with index.store.transaction() as db:
        index.store.put_vectors(db, "entities", [n.lower() for n in names], await index.embedder.aembed(names))
    return index


async def test_link_names_links_each_name_to_one_entity_at_its_weight():
    index = await entity_names()
    vectors = await index.embedder.aembed_query(["Marie Curie", "Stockholm"])
    assert await link_names(index, "entities", vectors) == {"marie curie": 1.0, "stockholm": 1.0}
    assert await link_names(index, "entities", vectors, [1.0, 0.5]) == {"marie curie": 1.0, "stockholm": 0.5}
    assert await link_names(index, "entities", None) == {} and await link_names(index, "missing", vectors) == {}


def test_a_graph_of_many_links_walks_from_its_seeds(monkeypatch):
    from rhizome.core.retrieval import evidence

    exact = chain().rank({"a": 1.0}, {"c3": 0.4})
    monkeypatch.setattr(evidence, "LOCAL_WALK_FROM", 0)  # every graph walks locally
    graph = chain()
    local = graph.rank({"a": 1.0}, {"c3": 0.4})
    assert [c for c, _ in local] == [c for c, _ in exact]
    for (_, ours), (_, theirs) in zip(local, exact, strict=True):
        assert 0 < ours <= theirs + 1e-9 and ours == pytest.approx(theirs, rel=1e-3)
    assert "walk" not in vars(graph)  # the power iteration's matrix is made only for it
