"""The kernel's reranking step: scores from rerankers that return a subset, the over-fetch
setting, checked scores, and reranking after a filter."""

from __future__ import annotations

import asyncio

import pytest

from rhizome.core import VectorIndex
from rhizome.core.errors import ConfigurationError
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.retrieval.rerank import RERANK_CANDIDATES, ascores, candidates, kept_scores
from rhizome.tools.testing import QUERIES, SHELVES, shelved


def test_scores_of_a_reranker_that_keeps_some_texts():
    assert kept_scores(4, [(2, 0.9), (0, 0.4)]) == [0.4, -0.6, 0.9, -0.6]  # dropped: below every kept one
    assert kept_scores(4, [(2, None), (0, None)]) == [0.5, 0.0, 1.0, 0.0]  # no scores: by rank
    assert kept_scores(3, [(1, 0.7), (2, None)]) == [0.0, 1.0, 0.5]  # some scores missing: by rank
    assert kept_scores(2, []) == [0.0, 0.0]


def test_the_over_fetch_setting():
    assert candidates(4, None) == RERANK_CANDIDATES and candidates(4, 2) == 4 and candidates(4, 30) == 30
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigurationError, match="rerank_candidates"):
            candidates(4, bad)


def test_a_reranker_must_return_one_finite_score_per_text():
    assert list(asyncio.run(ascores(lambda q, texts: [1, 2], "q", ["a", "b"]))) == [1.0, 2.0]
    for bad in (lambda q, texts: [1.0], lambda q, texts: [1.0, float("nan")], lambda q, texts: "no", lambda q, texts: None):
        with pytest.raises(ConfigurationError, match="one finite score per text"):
            asyncio.run(ascores(bad, "q", ["a", "b"]))


def test_reranking_comes_after_the_filter_and_keeps_k():
    index = VectorIndex(HashingEmbedder(), chunk_size=40, chunk_overlap=0)
    index.insert(shelved())
    south = {d for d, (shelf, _) in SHELVES.items() if shelf == "south"}
    seen: list[list[str]] = []

    def longest(query, texts):
        seen.append(texts)
        return [len(t) for t in texts]

    result = index.as_retriever(k=3, reranker=longest, rerank_candidates=8, filter={"shelf": "south"}).search(QUERIES[0])
    assert len(result.hits) == 3 and all(set(h.provenance.document_ids) <= south for h in result.hits)
    assert len(seen[0]) == min(8, len(index.store.chunk_ids(sorted(south)))) and result.stats["reranked"] == len(seen[0])
    assert [h.raw_score for h in result.hits] == sorted((len(t) for t in seen[0]), reverse=True)[:3]
    assert index.as_retriever(k=3, reranker=longest).asked() == RERANK_CANDIDATES
