"""The reranker benchmark's pieces: which mode of each method it measures, and that its fake
model's answers are well formed and keep the candidates' order (so its cost run reads as cost
only)."""

from __future__ import annotations

import asyncio

from benchmarks import rerank
from rhizome.core import HashingEmbedder
from rhizome.core.models.counting import CountingChatModel
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.retrieval.llm_rerank import LLMReranker


def test_the_best_mode_of_each_method_from_the_published_tables():
    for dataset in ("hotpotqa", "musique"):
        chosen = dict(rerank.best_modes(dataset))
        assert chosen["naive"] is None and len(chosen) == 7
        assert all(mode != "naive" for method, mode in chosen.items() if method != "naive")
    assert dict(rerank.best_modes("hotpotqa"))["graphrag"] == "local"  # R@5 0.91, the highest of its modes


def test_the_fake_answers_keep_the_order_and_are_counted():
    texts = [f"passage {i} about the harbour" for i in range(20)]
    for method, calls in (("listwise", 1), ("pointwise", 4)):
        counted = CountingChatModel(FakeChatModel(rerank.answer_in_order), context_window=32768)
        ranking = LLMReranker(counted, method=method).rank("the harbour", texts)
        assert ranking.order == list(range(20)) and ranking.fallback == [] and counted.usage.calls == calls
        instant = LLMReranker(rerank.InstantModel("instant"), method=method).rank("the harbour", texts)
        assert instant.order == list(range(20))
    small = CountingChatModel(FakeChatModel(rerank.answer_in_order), context_window=rerank.SMALL_WINDOW)
    assert LLMReranker(small).rank("the harbour", ["word " * 300] * 20).order == list(range(20)) and small.usage.calls == 2


def test_the_cosine_rescorer_prefers_the_passage_nearest_the_query():
    scores = asyncio.run(rerank.CosineRescorer(HashingEmbedder())("ferry to the island", ["the ferry to the island", "tax rolls"]))
    assert scores[0] > scores[1]
