from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from rhizome.core.errors import ConfigurationError, ModelOutputError
from rhizome.core.models.base import extract_json
from rhizome.core.models.fake import FakeChatModel, FakeEmbedder
from rhizome.core.protocols import Completion
from rhizome.core.store.cache import ModelCache


class Pair(BaseModel):
    name: str
    count: int


def test_extract_json_handles_fences_think_blocks_and_prose():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('<think>hmm {"no": 0}</think>{"a": 2}') == {"a": 2}
    assert extract_json('Sure! Here it is: {"a": 3} Hope it helps.') == {"a": 3}
    assert extract_json("[1, 2]") == [1, 2]
    with pytest.raises(ValueError):
        extract_json("no json here")


async def test_invalid_json_is_retried_with_the_error_shown():
    model = FakeChatModel(["not json", {"name": "x"}, {"name": "x", "count": 2}])
    result = await model.acomplete_json("give me a pair", Pair)
    assert result == Pair(name="x", count=2)
    assert model.usage.calls == 3 and model.usage.retries == 2
    retry = model.requests[1]
    assert retry[-2] == {"role": "assistant", "content": "not json"}
    assert "could not be used" in retry[-1]["content"]
    assert "count" in model.requests[2][-1]["content"]  # the validation error names the field


async def test_a_runaway_invalid_answer_is_shown_cut_short_so_the_retry_fits_the_window():
    runaway = '{"name": "' + "x" * 40_000  # cut off by the length limit: no closing quote or brace
    model = FakeChatModel([runaway, {"name": "x", "count": 2}], context_window=4096)
    assert await model.acomplete_json("give me a pair", Pair) == Pair(name="x", count=2)
    shown = model.requests[1][-2]["content"]
    assert len(shown) < 2100 and shown.startswith('{"name": "xxx') and "characters left out" in shown


async def test_gives_up_after_max_retries_with_typed_error():
    model = FakeChatModel(["nope"], max_retries=1)
    with pytest.raises(ModelOutputError) as info:
        await model.acomplete_json("x", Pair)
    assert model.usage.calls == 2
    assert info.value.last_output == "nope"
    assert "max_retries" in str(info.value)


async def test_only_valid_answers_are_cached():
    cache = ModelCache()
    model = FakeChatModel(["broken", {"name": "a", "count": 1}], cache=cache)
    assert await model.acomplete_json("q", Pair) == Pair(name="a", count=1)
    assert len(cache) == 2  # under the retry's messages and under the original question
    again = FakeChatModel(["should not be used"], cache=cache)
    assert await again.acomplete_json("q", Pair) == Pair(name="a", count=1)
    assert again.usage.calls == 0 and again.usage.cache_hits == 1


async def test_answers_a_caller_rejects_leave_the_cache_and_others_stay():
    from rhizome.core.models.base import answers_on_trial

    cache = ModelCache()
    model = FakeChatModel(["text", "broken", {"name": "a", "count": 1}, "more"], cache=cache)
    await model.acomplete("before")  # outside the block: kept
    with answers_on_trial() as trial:
        await model.acomplete_json("q", Pair)  # stored twice: after the retry and under "q"
        assert [piece async for piece in model.astream("before")] == ["text"]  # from the cache
        trial.reject()
    assert len(cache) == 0
    with answers_on_trial():
        await model.acomplete("kept")  # not rejected: stays
    assert len(cache) == 1


@given(
    st.lists(st.sampled_from(["<think>", "</think>", "<", "<th", "think>", "</", "[2]", " ", "\n", "a", "Mira [1]."]), max_size=14),
    st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_streamed_thoughts_are_removed_as_from_the_whole_answer(parts, cuts):
    from rhizome.core.models.base import _ThoughtFilter, _without_thoughts

    text = "".join(parts)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    thoughts = _ThoughtFilter()
    shown = [thoughts.feed(p) for p in pieces] + [thoughts.end()]
    assert "".join(shown) == _without_thoughts(text).lstrip()


async def test_a_streamed_answer_comes_without_its_thoughts_and_is_not_held_back():
    class Streaming(FakeChatModel):
        async def _astream(self, messages):
            for piece in ["<thi", "nk>Item [2] is off topic.</th", "ink>\n\n", "Mira Holt", " runs the ferry [1].", "<"]:
                yield piece
            yield Completion(text="")

    cache = ModelCache()
    model = Streaming(cache=cache)
    pieces = [p async for p in model.astream("Who runs the ferry?")]
    assert pieces == ["Mira Holt", " runs the ferry [1].", "<"]  # each visible piece as it came
    again = [p async for p in model.astream("Who runs the ferry?")]  # from the cache
    assert again == ["Mira Holt runs the ferry [1].<"]


async def test_a_plain_answer_comes_without_its_thoughts_as_a_streamed_one():
    """Defect: acomplete() returned the reasoning model's <think> block with the answer,
    where astream() and the JSON calls left it out."""
    answer = "<think>Item [2] is off topic.</think>\n\nMira Holt runs the ferry [1]."
    cache = ModelCache()
    model = FakeChatModel([answer], cache=cache)
    assert model.complete("Who runs the ferry?").text == "Mira Holt runs the ferry [1]."
    again = await model.acomplete("Who runs the ferry?")  # from the cache, which keeps it whole
    assert again.cached and again.text == "Mira Holt runs the ferry [1]."
    assert [p async for p in model.astream("Who runs the ferry?")] == [again.text]


async def test_concurrency_is_bounded_per_model():
    model = FakeChatModel(["ok"], delay=0.01, max_concurrency=3)
    await asyncio.gather(*(model.acomplete(f"p{i}") for i in range(12)))
    assert model.max_in_flight == 3
    assert model.usage.calls == 12


def test_sync_wrappers_work_outside_and_inside_a_loop():
    model = FakeChatModel([{"name": "s", "count": 5}])
    assert model.complete_json("q", Pair).count == 5

    async def inside():
        return model.complete("hi").text  # sync call from async code must not deadlock

    assert asyncio.run(inside()) == '{"name": "s", "count": 5}'


async def test_embedder_batches_normalises_and_caches():
    cache = ModelCache()
    embedder = FakeEmbedder(16, batch_size=4, cache=cache)
    vectors = await embedder.aembed([f"t{i}" for i in range(10)])
    assert vectors.shape == (10, 16)
    assert abs(float((vectors**2).sum(axis=1).max()) - 1.0) < 1e-5
    assert embedder.usage.calls == 3
    again = await embedder.aembed(["t1", "t2", "new"])
    assert embedder.usage.calls == 4 and embedder.usage.cache_hits == 2
    assert (again[0] == vectors[1]).all()


def test_invalid_model_settings():
    with pytest.raises(ConfigurationError):
        FakeChatModel(max_concurrency=0)
    with pytest.raises(ConfigurationError):
        FakeEmbedder(batch_size=0)


async def test_repeated_texts_in_one_call_are_embedded_once():
    embedder = FakeEmbedder(8)
    vectors = await embedder.aembed(["a", "b", "a", "a"])
    assert embedder.usage.texts == 2
    assert vectors.shape == (4, 8) and (vectors[0] == vectors[2]).all() and (vectors[0] == vectors[3]).all()


def test_ollama_names_drop_the_implicit_latest_tag():
    from rhizome.core.models.ollama import OllamaChatModel, OllamaEmbedder

    assert OllamaEmbedder("nomic-embed-text:latest").name == OllamaEmbedder("nomic-embed-text").name == "ollama:nomic-embed-text"
    assert OllamaChatModel("qwen2.5:7b").name == "ollama:qwen2.5:7b"


async def test_queries_and_documents_are_embedded_and_cached_apart():
    cache = ModelCache()
    embedder = FakeEmbedder(8, cache=cache, query_prefix="q: ", document_prefix="d: ")
    document = await embedder.aembed(["same text"])
    query = await embedder.aembed_query(["same text"])
    assert not (document == query).all()  # different prefixes, different vectors
    plain = FakeEmbedder(8)
    assert (await plain.aembed_query(["q: same text"]) == query).all()
    assert len(cache) == 2
    again = await embedder.aembed_query(["same text"])
    assert (again == query).all() and embedder.usage.cache_hits == 1


def test_a_prompt_that_would_not_fit_the_window_is_refused_before_it_is_sent():
    from rhizome.core.errors import PromptTooLongError
    from rhizome.core.models.budget import fit

    model = FakeChatModel(["fine"], context_window=600)
    assert model.complete("short question").text == "fine"
    with pytest.raises(PromptTooLongError, match="--num-ctx") as info:
        model.complete("word " * 500)
    assert "600-token context window" in str(info.value) and len(model.requests) == 1
    assert fit(model, 10_000, reply_tokens=100, fixed=["x " * 50]) < 300  # what a builder may pack
    assert fit(FakeChatModel(["x"]), 10_000, reply_tokens=100) == 10_000  # window unknown: as asked


def test_models_know_their_context_window():
    from langchain_ollama import ChatOllama
    from llama_index.llms.ollama import Ollama

    from rhizome.core.models.adapters import wrap_chat_model
    from rhizome.core.models.counting import CountingChatModel
    from rhizome.core.models.ollama import OllamaChatModel

    assert OllamaChatModel("qwen2.5:7b", num_ctx=8192).context_window == 8192
    assert wrap_chat_model(ChatOllama(model="qwen2.5:7b", num_ctx=4096)).context_window == 4096
    assert wrap_chat_model(ChatOllama(model="qwen2.5:7b")).context_window is None  # the server decides
    assert wrap_chat_model(Ollama(model="qwen2.5:7b", context_window=6000)).context_window == 6000
    assert CountingChatModel(FakeChatModel(["x"], context_window=1234)).context_window == 1234


def test_a_schema_responder_serving_requests_at_once_answers_each_as_if_alone():
    """A stub server's threads share one responder: an answer must not take another's names."""
    import json
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from rhizome.core.extraction.schema import ExtractionOutput
    from rhizome.core.models.fake import SchemaResponder

    responder, schema = SchemaResponder(), ExtractionOutput.model_json_schema()
    prompts = [[{"role": "user", "content": f'"""{text}"""'}] for text in ("Alice met Bob in Paris near London.", "Zed saw Yan at Rome with Kim.")]
    alone = [json.dumps(responder(p, schema)) for p in prompts]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(8) as pool:
            together = list(pool.map(lambda i: json.dumps(responder(prompts[i % 2], schema)), range(400)))
    finally:
        sys.setswitchinterval(switch)
    assert together == [alone[i % 2] for i in range(400)]
