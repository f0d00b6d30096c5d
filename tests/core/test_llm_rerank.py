"""The chat-model reranker (listwise and pointwise) and the cross-encoder adapter: order, the
sliding windows, the context budget, lenient and invalid answers, the cache, and the same
reranker over the Ollama and OpenAI-compatible wire protocols (loopback stubs)."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rhizome.core import VectorIndex
from rhizome.core.errors import ConfigurationError, ModelOutputError, PromptTooLongError
from rhizome.core.models.budget import prompt_tokens
from rhizome.core.models.counting import CountingChatModel
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.models.ollama import OllamaChatModel
from rhizome.core.models.openai_compat import OpenAIChatModel
from rhizome.core.retrieval.cross_encoder import CrossEncoderReranker
from rhizome.core.retrieval.llm_rerank import LLMReranker, RankingAnswer
from rhizome.core.store.cache import ModelCache
from rhizome.core.text import count_tokens

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from ollama_stub import OllamaStub, ollama_stub_fixture  # noqa: E402, F401  (registers the `ollama_stub` fixture)
from openai_stub import OpenAIStub, openai_stub_fixture  # noqa: E402, F401  (registers the `openai_stub` fixture)

PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.M)


def shown(messages: list[dict[str, str]]) -> list[tuple[int, str]]:
    """The numbered passages of a reranking prompt."""
    return [(int(n), text) for n, text in PASSAGE.findall(messages[-1]["content"])]


def by_marks(messages: list[dict[str, str]], schema: dict[str, Any] | None) -> dict[str, Any]:
    """A model that prefers passages with more '!' in them: a ranking or grades, by the schema."""
    passages = shown(messages)
    if schema is not None and "grades" in schema["properties"]:
        return {"grades": [{"passage": n, "grade": min(10, text.count("!"))} for n, text in passages]}
    return {"ranking": [n for n, text in sorted(passages, key=lambda p: -p[1].count("!"))]}


TEXTS = [f"passage {i} " + "!" * m for i, m in enumerate([1, 0, 3, 0, 2, 5, 0, 4])]
BEST_FIRST = [5, 7, 2, 4, 0, 1, 3, 6]  # by marks, ties in the incoming order


@pytest.mark.parametrize("method", ["listwise", "pointwise"])
def test_the_model_orders_the_passages_and_every_passage_gets_one_score(method: str) -> None:
    llm = FakeChatModel(by_marks)
    ranking = LLMReranker(llm, method=method).rank("which passage shouts?", TEXTS)
    assert ranking.order == BEST_FIRST and ranking.fallback == []
    assert len(ranking.scores) == len(TEXTS) and all(0.0 <= s <= 1.0 for s in ranking.scores)
    assert sorted(range(len(TEXTS)), key=lambda i: -ranking.scores[i]) == BEST_FIRST
    assert len(llm.requests) == (1 if method == "listwise" else 2)  # 8 passages: one window, or batches of 5
    if method == "pointwise":
        assert ranking.scores[5] == 0.5 and ranking.grades[1] == 0.0


def test_sliding_windows_bring_a_late_best_passage_to_the_top() -> None:
    texts = [f"passage {i}" for i in range(11)] + ["the best one !!!!!"]
    llm = FakeChatModel(by_marks)
    ranking = LLMReranker(llm, window=4).rank("q", texts)
    assert ranking.order[0] == 11 and sorted(ranking.order) == list(range(12))
    assert ranking.order[1:] == list(range(11))  # the others kept their order (ties)
    assert [len(shown(r)) for r in llm.requests] == [4, 4, 4, 4, 4]  # windows from the back, half overlapping
    assert [shown(r)[0][1] for r in llm.requests][0] == "passage 8"


def test_a_reranked_search_keeps_k_and_provenance_and_counts_the_model_calls() -> None:
    index = VectorIndex(HashingEmbedder(), chunk_size=60, chunk_overlap=0)
    index.insert([{"id": f"d{i}", "text": f"The ferry sails at dawn {'!' * (i % 4)} from harbour {i}."} for i in range(12)])
    llm = FakeChatModel(by_marks)
    plain = index.as_retriever(k=12).search("ferry harbour").hits
    result = index.as_retriever(k=3, reranker=LLMReranker(llm), rerank_candidates=12).search("ferry harbour")
    assert len(result.hits) == 3 and result.stats["reranked"] == 12 and result.stats["model_calls"] == 1
    assert [h.text.count("!") for h in result.hits] == [3, 3, 3]
    by_id = {h.id: h for h in plain}
    for hit in result.hits:
        assert hit.provenance == by_id[hit.id].provenance and hit.metadata["retrieval_score"] == by_id[hit.id].metadata["raw_score"]


def test_long_passages_are_cut_and_windows_shrink_to_the_context_window() -> None:
    long = "word " * 2000
    llm = FakeChatModel(lambda m, s: {"ranking": [n for n, _ in shown(m)]}, context_window=1200)
    ranking = LLMReranker(llm, window=20, max_passage_tokens=150).rank("a question", [f"{i} {long}" for i in range(10)])
    assert sorted(ranking.order) == list(range(10)) and ranking.fallback == []
    for request in llm.requests:
        assert prompt_tokens(request) + 256 <= 1200  # the model layer would refuse it otherwise
        assert all(count_tokens(text) <= 150 for _, text in shown(request))
    assert len(llm.requests) > 1 and all(2 <= len(shown(r)) < 10 for r in llm.requests)
    # a window too small for two passages shows them cut shorter; too small for any is an error
    tight = FakeChatModel(lambda m, s: {"ranking": [1, 2]}, context_window=560)
    LLMReranker(tight, max_passage_tokens=200).rank("q", [long, long])
    assert all(count_tokens(text) < 200 for _, text in shown(tight.requests[0]))
    with pytest.raises(PromptTooLongError, match="no passage to rerank"):
        LLMReranker(FakeChatModel(context_window=300)).rank("q", [long, long])


def test_lenient_answers_and_what_falls_back_to_the_incoming_order() -> None:
    texts = [f"t{i}" for i in range(5)]
    for answer, order, fallback in [
        ('{"ranking": "[4] > [2]"}', [3, 1, 0, 2, 4], [0, 2, 4]),  # text ranking; the rest follow in their order
        ('[5, "passage 1", 5, 9, 0]', [4, 0, 1, 2, 3], [1, 2, 3]),  # bare list; repeats and unknown numbers ignored
        ('{"order": [2, 1, 3, 4, 5]}', [1, 0, 2, 3, 4], []),  # another key
    ]:
        ranking = LLMReranker(FakeChatModel([answer])).rank("q", texts)
        assert (ranking.order, ranking.fallback) == (order, fallback), answer
    # an answer that stays invalid through the retries: the incoming order, no error
    llm = FakeChatModel(["no idea", '{"ranking": []}', "still nothing"])
    ranking = LLMReranker(llm).rank("q", texts)
    assert ranking.order == list(range(5)) and ranking.fallback == list(range(5)) and len(llm.requests) == 3
    assert ranking.scores == sorted(ranking.scores, reverse=True)


def test_ungraded_passages_keep_their_place_in_the_incoming_order() -> None:
    def grades(answer: Any) -> FakeChatModel:
        return FakeChatModel([answer])

    texts = [f"t{i}" for i in range(5)]
    # t1 ungraded: behind t0, whose grade it takes; t4 graded by position in a bare list is missing
    ranking = LLMReranker(grades('{"grades": [{"passage": 1, "grade": 4}, {"passage": 3, "grade": "9/10"}, '
                                 '{"passage": 4, "grade": 4}, {"passage": 5, "grade": "n/a"}]}'),
                          method="pointwise").rank("q", texts)
    assert ranking.grades == [4.0, None, 9.0, 4.0, None] and ranking.fallback == [1, 4]
    assert ranking.order == [2, 0, 1, 3, 4]
    first = LLMReranker(grades('{"grades": {"2": 3, "3": 12}}'), method="pointwise").rank("q", texts[:3])
    assert first.grades == [None, 3.0, 10.0] and first.order == [0, 2, 1]  # an ungraded first takes the best grade
    nothing = LLMReranker(FakeChatModel(["?", "??", "???"]), method="pointwise").rank("q", texts)
    assert nothing.order == list(range(5)) and nothing.fallback == list(range(5))


def test_pointwise_batches_go_out_at_once() -> None:
    llm = FakeChatModel(by_marks, delay=0.02, max_concurrency=4)
    ranking = LLMReranker(llm, method="pointwise", batch_size=2).rank("q", TEXTS)
    assert ranking.order == BEST_FIRST and len(llm.requests) == 4 and llm.max_in_flight > 1


def test_the_model_call_cache_answers_a_repeated_reranking(tmp_path: Path) -> None:
    cache = ModelCache(tmp_path / "cache.sqlite")
    llm = CountingChatModel(FakeChatModel(by_marks), cache=cache)
    reranker = LLMReranker(llm)
    first = reranker.rank("q", TEXTS)
    second = reranker.rank("q", TEXTS)
    assert first == second and llm.usage.calls == 1 and llm.usage.cache_hits == 1
    reranker.rank("another question", TEXTS)
    assert llm.usage.calls == 2


def test_settings_and_models_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="acomplete_json"):
        LLMReranker(lambda q: q)
    with pytest.raises(ConfigurationError, match="listwise, pointwise"):
        LLMReranker(FakeChatModel(), method="pairwise")
    for bad in ({"window": 1}, {"batch_size": 0}, {"max_passage_tokens": 5}, {"window": True}):
        with pytest.raises(ConfigurationError):
            LLMReranker(FakeChatModel(), **bad)
    one = LLMReranker(FakeChatModel()).rank("q", ["only"])
    assert one.order == [0] and LLMReranker(FakeChatModel()).rank("q", []).order == []
    assert RankingAnswer.model_json_schema()["properties"]["ranking"]["items"] == {"type": "integer"}


# -- over the wire ---------------------------------------------------------------------------
def _wire_ranking(messages: list[dict[str, str]]) -> dict[str, Any]:
    return by_marks(messages, None)


async def test_listwise_over_the_ollama_wire(ollama_stub: OllamaStub) -> None:
    ollama_stub.reply_fn = lambda body: _wire_ranking(body["messages"])
    llm = OllamaChatModel("qwen2.5:7b", host=ollama_stub.url, retry_backoff=0.0, num_ctx=8192)
    try:
        scores = await LLMReranker(llm)("which passage shouts?", TEXTS)
    finally:
        await llm.aclose()
    assert sorted(range(len(TEXTS)), key=lambda i: -scores[i]) == BEST_FIRST
    (body,) = ollama_stub.calls("/api/chat")
    assert body["format"] == RankingAnswer.model_json_schema() and body["messages"][0]["role"] == "system"


async def test_pointwise_over_the_openai_wire_with_a_broken_answer(openai_stub: OpenAIStub) -> None:
    def reply(body: dict[str, Any]) -> Any:  # the two-passage prompt: invalid first, then passage 2 only
        question = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if "[2]" not in question:
            return {"grades": [{"passage": 1, "grade": 2}]}
        retry = body["messages"][-1]["content"] != question
        return {"grades": [{"passage": 2, "grade": 8}]} if retry else "not json at all"

    openai_stub.reply_fn = reply
    llm = OpenAIChatModel("qwen-7b", base_url=openai_stub.base_url, retry_backoff=0.0, max_concurrency=1)
    try:
        ranking = await LLMReranker(llm, method="pointwise", batch_size=2).arank("q", ["a", "b", "c"])
    finally:
        await llm.aclose()
    # first batch: invalid, then a retry grading passage 2 only; second batch: grade 2
    assert ranking.grades == [None, 8.0, 2.0] and ranking.order == [0, 1, 2] and ranking.fallback == [0]
    bodies = openai_stub.calls("/v1/chat/completions")
    assert len(bodies) == 3 and bodies[0]["response_format"]["type"] == "json_schema"


# -- cross-encoder -------------------------------------------------------------------------------
class OverlapScorer:
    """A stand-in cross-encoder: ``predict(pairs)`` scores the words a passage shares with the query."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        self.batches.append(len(pairs))
        return np.array([[len(set(q.split()) & set(p.split()))] for q, p in pairs], dtype=float)


def test_a_cross_encoder_scores_query_passage_pairs_in_batches() -> None:
    model = OverlapScorer()
    reranker = CrossEncoderReranker(model, batch_size=2)
    scores = asyncio.run(reranker("red boat", ["a red boat", "blue sky", "red", "boat red harbour", "x"]))
    assert scores == [2.0, 0.0, 1.0, 2.0, 0.0] and model.batches == [2, 2, 1]
    index = VectorIndex(HashingEmbedder(), chunk_size=60, chunk_overlap=0)
    index.insert([{"id": "a", "text": "the red boat"}, {"id": "b", "text": "a boat"}, {"id": "c", "text": "grey stones"}])
    hits = index.as_retriever(k=2, reranker=reranker).retrieve("red boat")
    assert [h.id for h in hits] == ["a:0", "b:0"] and hits[0].metadata["raw_score"] == 2.0  # the score stays the relevance


def test_a_cross_encoder_needs_sentence_transformers_or_a_predict_method(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if not installed
    reranker = CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2")
    with pytest.raises(ConfigurationError, match="pip install torch==2.13.0 sentence-transformers"):
        asyncio.run(reranker("q", ["a"]))
    with pytest.raises(ConfigurationError, match="predict"):
        CrossEncoderReranker(object())
    with pytest.raises(ConfigurationError, match="batch_size"):
        CrossEncoderReranker(OverlapScorer(), batch_size=0)

    class TwoLabels:
        def predict(self, pairs: Any) -> Any:
            return [[0.1, 0.9]] * len(pairs)

    with pytest.raises(ModelOutputError, match="one score per pair"):
        asyncio.run(CrossEncoderReranker(TwoLabels())("q", ["a", "b"]))
