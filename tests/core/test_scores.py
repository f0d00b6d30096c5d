"""A hit's score means one thing in every mode: its relevance to the query in [0, 1] (the
query's cosine to the nearest passage it cites), the mode's own score beside it."""

from __future__ import annotations

import pytest

from rhizome.core import HashingEmbedder, VectorIndex
from rhizome.graphrag import GraphRAGIndex
from rhizome.lightrag import LightRAGIndex
from rhizome.tools.testing import CORPUS, QUERIES


@pytest.fixture(scope="module")
def indexes():
    built = {"naive": VectorIndex(HashingEmbedder()), "graphrag": GraphRAGIndex(HashingEmbedder()),
             "lightrag": LightRAGIndex(HashingEmbedder())}
    for index in built.values():
        index.insert(CORPUS)
    yield built
    for index in built.values():
        index.close()


def test_a_query_that_matches_nothing_does_not_score_one(indexes):
    """Defect: GraphRAG's local search gave the query "x" a hit at 1.000 (its scores were
    relative to its own best)."""
    for mode in ("local", "global", "naive"):
        hits = indexes["graphrag"].as_retriever(k=3, mode=mode).retrieve("x")
        assert hits and all(h.score < 0.2 for h in hits), (mode, [h.score for h in hits])


def test_a_passage_scores_the_same_in_every_mode(indexes):
    """Defect: LightRAG's naive mode scored by rank (1.0, 0.5, 0.33) while GraphRAG's naive mode
    gave the cosine (0.21): the same passage for the same query now scores alike everywhere."""
    naive = indexes["naive"].as_retriever(k=len(indexes["naive"]))
    for query in QUERIES:
        cosine = {h.id: h.score for h in naive.retrieve(query)}
        for method in ("graphrag", "lightrag"):
            index = indexes[method]
            for mode in index.modes:
                for hit in index.as_retriever(k=4, mode=mode).retrieve(query):
                    assert 0.0 <= hit.score <= 1.0 and "raw_score" in hit.metadata, (method, mode)
                    if hit.kind == "chunk":
                        assert hit.score == pytest.approx(cosine[hit.id], abs=1e-6), (method, mode, hit.id)
                    else:  # an entity, relation or report: its nearest cited passage
                        assert hit.score == pytest.approx(max(cosine[c] for c in hit.provenance.chunk_ids), abs=1e-6)


def test_a_threshold_keeps_the_order_and_says_what_it_left_out(indexes):
    retriever = indexes["lightrag"].as_retriever(k=4, mode="hybrid")
    every = retriever.search(QUERIES[0])
    threshold = every.hits[1].score + 1e-9
    kept = indexes["lightrag"].as_retriever(k=4, mode="hybrid", score_threshold=threshold).search(QUERIES[0])
    assert [h.id for h in kept.hits] == [h.id for h in every.hits if h.score >= threshold]
    assert len(kept.hits) < 4 and any("score_threshold" in note for note in kept.notes)
    nothing = indexes["lightrag"].as_retriever(k=4, mode="hybrid", score_threshold=1.0).search("x")
    assert nothing.hits == [] and any("left out" in note for note in nothing.notes)


def test_a_query_with_nothing_to_match_scores_zero_and_says_so(indexes):
    result = indexes["lightrag"].as_retriever(k=4).search("???")
    assert all(h.score == 0.0 for h in result.hits)
    assert any("no letter or digit" in note for note in result.notes)
    assert indexes["lightrag"].as_retriever(k=4, score_threshold=0.01).retrieve("???") == []
