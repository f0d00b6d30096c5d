"""The Ollama model layer against a loopback stub server: wire protocol, error mapping, retries,
cache, batching, status checks and the sync wrappers."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

from rhizome.core.errors import (
    ConfigurationError,
    ModelError,
    ModelNotFoundError,
    ModelOutputError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from rhizome.core.models.ollama import (
    DEFAULT_OLLAMA_HOST,
    OllamaChatModel,
    OllamaEmbedder,
    OllamaStatus,
    acheck_ollama,
    check_ollama,
    require_model,
    resolve_host,
)
from rhizome.core.store.cache import ModelCache

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from ollama_stub import (  # noqa: E402
    OllamaStub,
    StubDrop,
    StubError,
    closed_port_url,
    default_vector,
    ollama_stub_fixture,  # noqa: F401  (registers the `ollama_stub` fixture)
)

CHAT = "qwen2.5:7b"
EMBED = "nomic-embed-text"


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep proxies and a developer's Ollama settings out of the tests."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)


def chat_model(stub: OllamaStub, **kwargs) -> OllamaChatModel:
    kwargs.setdefault("retry_backoff", 0.0)
    return OllamaChatModel(kwargs.pop("model", CHAT), host=stub.url, **kwargs)


@pytest.fixture
async def make_chat(ollama_stub: OllamaStub) -> AsyncIterator[Callable[..., OllamaChatModel]]:
    """Chat models on the stub whose HTTP clients are closed before the test's loop ends."""
    made: list[OllamaChatModel] = []

    def make(**kwargs) -> OllamaChatModel:
        made.append(chat_model(ollama_stub, **kwargs))
        return made[-1]

    yield make
    for model in made:
        await model.aclose()


@pytest.fixture
async def make_embedder(ollama_stub: OllamaStub) -> AsyncIterator[Callable[..., OllamaEmbedder]]:
    made: list[OllamaEmbedder] = []

    def make(**kwargs) -> OllamaEmbedder:
        kwargs.setdefault("host", ollama_stub.url)
        made.append(OllamaEmbedder(kwargs.pop("model", EMBED), **kwargs))
        return made[-1]

    yield make
    for embedder in made:
        await embedder.aclose()


# -- chat: wire protocol ------------------------------------------------------------------------
async def test_structured_chat_round_trip(ollama_stub: OllamaStub, make_chat, monkeypatch) -> None:
    monkeypatch.delenv("RHIZOME_NUM_CTX", raising=False)
    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    ollama_stub.replies.append({"name": "Ada", "age": 36})
    model = make_chat(keep_alive="5m")

    person = await model.acomplete_json("Who?", Person, system="Answer in JSON.")

    assert person == Person(name="Ada", age=36)
    (body,) = ollama_stub.calls("/api/chat")
    assert body["model"] == CHAT
    assert body["stream"] is False
    assert body["think"] is False
    assert body["format"] == Person.model_json_schema()
    assert body["options"] == {"num_ctx": 32768, "temperature": 0.0, "seed": 42}
    assert body["keep_alive"] == "5m"
    assert body["messages"] == [
        {"role": "system", "content": "Answer in JSON."},
        {"role": "user", "content": "Who?"},
    ]
    assert model.usage.calls == 1
    assert model.usage.prompt_tokens > 0 and model.usage.completion_tokens > 0


async def test_varied_sampling_changes_the_seed_and_temperature_not_the_cache_key(ollama_stub: OllamaStub, make_chat, monkeypatch, tmp_path) -> None:
    from rhizome.core.models.base import VARIED_TEMPERATURE, varied_sampling
    from rhizome.core.store.cache import ModelCache

    monkeypatch.delenv("RHIZOME_NUM_CTX", raising=False)
    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    ollama_stub.replies.append({"name": "Ada", "age": 36})
    model = make_chat(cache=ModelCache(tmp_path / "cache.sqlite"))
    with varied_sampling(7):
        await model.acomplete_json("Who?", Person)
    (body,) = ollama_stub.calls("/api/chat")
    assert body["options"] == {"num_ctx": 32768, "temperature": VARIED_TEMPERATURE, "seed": 7}
    assert await model.acomplete_json("Who?", Person) == Person(name="Ada", age=36)  # the usual key finds it
    assert len(ollama_stub.calls("/api/chat")) == 1 and model.usage.cache_hits == 1


async def test_prompts_are_checked_against_the_context_the_model_was_trained_with(ollama_stub: OllamaStub, make_chat) -> None:
    """Ollama runs a model with at most the context it was trained with, whatever num_ctx asks,
    and cuts the front of a longer prompt without a word: such a prompt is refused instead."""
    from rhizome.core.errors import PromptTooLongError

    ollama_stub.context_length = 4096
    ollama_stub.replies.append("short answer")
    model = make_chat(num_ctx=32768)
    assert (await model.acomplete("Hi")).text == "short answer"
    assert model.context_window == 4096  # what budgets read from now on
    with pytest.raises(PromptTooLongError, match="4096-token context"):
        await model.acomplete("word " * 6000)
    assert len(ollama_stub.calls("/api/chat")) == 1 and len(ollama_stub.calls("/api/show")) == 1  # asked once
    roomy = make_chat(num_ctx=2048)  # a num_ctx below the trained context stays the bound
    ollama_stub.replies.append("fine")
    await roomy.acomplete("Hi")
    assert roomy.context_window == 2048


async def test_plain_completion_sends_no_format_and_custom_options(
    ollama_stub: OllamaStub, make_chat
) -> None:
    ollama_stub.replies.append("Hello there")
    model = make_chat(num_ctx=4096, temperature=0.3, seed=7, num_predict=64)

    completion = await model.acomplete("Hi")

    assert completion.text == "Hello there"
    assert completion.completion_tokens == 2
    (body,) = ollama_stub.calls("/api/chat")
    assert "format" not in body
    assert "keep_alive" not in body
    assert body["options"] == {"num_ctx": 4096, "temperature": 0.3, "seed": 7, "num_predict": 64}


async def test_invalid_json_is_retried_over_the_wire(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.replies.extend(["sorry, no JSON here", {"name": "Ada", "age": 36}])
    model = make_chat()

    person = await model.acomplete_json("Who?", Person)

    assert person.name == "Ada"
    first, second = ollama_stub.calls("/api/chat")
    assert len(first["messages"]) == 1
    assert second["messages"][1] == {"role": "assistant", "content": "sorry, no JSON here"}
    assert second["messages"][2]["role"] == "user"
    assert second["format"] == Person.model_json_schema()
    assert model.usage.retries == 1 and model.usage.calls == 2


async def test_schema_violations_exhaust_retries(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.default_reply = {"name": "Ada"}
    model = make_chat(max_retries=1)

    with pytest.raises(ModelOutputError) as info:
        await model.acomplete_json("Who?", Person)

    assert len(ollama_stub.calls("/api/chat")) == 2
    assert info.value.last_output == json.dumps({"name": "Ada"})


async def test_think_parameter_dropped_when_model_rejects_it(
    ollama_stub: OllamaStub, make_chat
) -> None:
    ollama_stub.no_think_models.add(CHAT)
    model = make_chat()

    assert (await model.acomplete("a")).text == '{"ok": true}'
    assert (await model.acomplete("b")).text == '{"ok": true}'

    first, second, third = ollama_stub.calls("/api/chat")
    assert first["think"] is False
    assert "think" not in second
    assert "think" not in third  # remembered: no second rejected request


async def test_think_parameter_dropped_when_the_first_request_is_a_stream(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.no_think_models.add(CHAT)
    ollama_stub.default_reply = "Mira Holt runs the ferry."
    model = make_chat(think=True)  # the refusal comes with the stream's first part

    assert "".join([p async for p in model.astream("who?")]) == "Mira Holt runs the ferry."
    first, second = ollama_stub.calls("/api/chat")
    assert first["think"] is True and "think" not in second


# -- chat: errors -------------------------------------------------------------------------------
async def test_server_down_is_model_unavailable() -> None:
    url = closed_port_url()
    model = OllamaChatModel(CHAT, host=url, retry_backoff=0.0)

    with pytest.raises(ModelUnavailableError) as info:
        await model.acomplete("hi")

    assert "ollama serve" in str(info.value)
    assert url in str(info.value)
    assert isinstance(info.value, ConnectionError)


async def test_embedder_server_down_is_model_unavailable() -> None:
    embedder = OllamaEmbedder(EMBED, host=closed_port_url(), retry_backoff=0.0)

    with pytest.raises(ModelUnavailableError, match="ollama serve"):
        await embedder.aembed(["x"])


async def test_missing_model_is_model_not_found(ollama_stub: OllamaStub, make_chat) -> None:
    model = make_chat(model="llama9:70b")

    with pytest.raises(ModelNotFoundError) as info:
        await model.acomplete_json("hi", Person)

    assert "ollama pull llama9:70b" in str(info.value)
    assert len(ollama_stub.calls("/api/chat")) == 1  # not retried


async def test_missing_embedding_model_is_model_not_found(
    ollama_stub: OllamaStub, make_embedder
) -> None:
    embedder = make_embedder(model="mxbai-embed-large")

    with pytest.raises(ModelNotFoundError, match="ollama pull mxbai-embed-large"):
        await embedder.aembed(["x"])


async def test_timeout_is_model_timeout(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.delay = 5.0
    model = make_chat(timeout=0.2)

    with pytest.raises(ModelTimeoutError) as info:
        await model.acomplete("hi")

    assert "timeout=" in str(info.value)
    assert len(ollama_stub.calls("/api/chat")) == 1  # timeouts are not retried


async def test_transient_server_errors_are_retried(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.replies.extend([StubError(503, "server busy"), StubDrop(), "finally"])
    model = make_chat(transport_retries=2)

    assert (await model.acomplete("hi")).text == "finally"
    assert len(ollama_stub.calls("/api/chat")) == 3
    assert model.usage.calls == 1


def test_num_ctx_comes_from_the_argument_then_rhizome_then_ollamas_variable(ollama_stub, monkeypatch) -> None:
    monkeypatch.setenv("OLLAMA_CONTEXT_LENGTH", "16384")
    assert chat_model(ollama_stub).num_ctx == 16384  # the server's own setting, when we see it
    monkeypatch.setenv("RHIZOME_NUM_CTX", "4096")
    assert chat_model(ollama_stub).num_ctx == 4096
    assert chat_model(ollama_stub, num_ctx=2048).num_ctx == 2048
    monkeypatch.setenv("RHIZOME_NUM_CTX", "lots")
    with pytest.raises(ConfigurationError, match="RHIZOME_NUM_CTX"):
        chat_model(ollama_stub)


async def test_busy_answers_are_retried_after_the_servers_retry_after(
    ollama_stub: OllamaStub, make_chat
) -> None:
    ollama_stub.replies.extend(
        [StubError(429, "too many requests", retry_after=0.3), StubError(503, "server busy"), StubError(503, "busy"), "done"]
    )
    model = make_chat(transport_retries=3, retry_backoff=0.01)
    start = time.perf_counter()

    assert (await model.acomplete("hi")).text == "done"
    assert len(ollama_stub.calls("/api/chat")) == 4
    assert time.perf_counter() - start >= 0.3  # the 429's Retry-After was waited out


async def test_a_busy_server_beyond_the_retries_names_the_flags(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.default_reply = StubError(503, "server busy")
    model = make_chat(transport_retries=2, retry_backoff=0.01)

    with pytest.raises(ModelServerError, match="--max-retries") as info:  # the server's failure: stops an insert
        await model.acomplete("hi")
    assert "server busy" in str(info.value) and "--concurrency" in str(info.value)
    assert len(ollama_stub.calls("/api/chat")) == 3


async def test_transient_errors_give_up_after_bounded_retries(
    ollama_stub: OllamaStub, make_chat
) -> None:
    ollama_stub.default_reply = StubError(500, "llama runner process has terminated")
    model = make_chat(transport_retries=1)

    with pytest.raises(ModelServerError, match="llama runner process has terminated"):
        await model.acomplete("hi")

    assert len(ollama_stub.calls("/api/chat")) == 2
    ollama_stub.default_reply = StubDrop()
    with pytest.raises(ModelServerError, match="dropped the connection"):
        await model.acomplete("hi again")


async def test_client_errors_carry_the_server_message(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.replies.append(StubError(400, "invalid format: expected object"))
    model = make_chat()

    with pytest.raises(ModelError, match="invalid format: expected object") as info:
        await model.acomplete("hi")

    assert not isinstance(info.value, ModelNotFoundError | ModelUnavailableError | ModelServerError)
    assert len(ollama_stub.calls("/api/chat")) == 1


async def test_an_error_without_a_reason_says_so(ollama_stub: OllamaStub, make_chat) -> None:
    """Defect: a server error with an empty body read 'failed on model 'x':  (HTTP 400)', a double
    space where the reason goes."""
    ollama_stub.replies.append(StubError(400, ""))
    with pytest.raises(ModelError) as info:
        await make_chat().acomplete("hi")
    assert "'qwen2.5:7b': no reason given (HTTP 400)" in str(info.value) and "  " not in str(info.value)


# -- chat: cache and sync wrappers --------------------------------------------------------------
async def test_cache_hit_sends_no_second_request(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.replies.append({"name": "Ada", "age": 36})
    model = make_chat(cache=ModelCache())

    first = await model.acomplete_json("Who?", Person)
    second = await model.acomplete_json("Who?", Person)

    assert first == second
    assert len(ollama_stub.calls("/api/chat")) == 1
    assert model.usage.cache_hits == 1 and model.usage.calls == 1


def test_cache_identity_covers_options_not_transport() -> None:
    a = OllamaChatModel(CHAT, host="http://127.0.0.1:1", timeout=5)
    b = OllamaChatModel(CHAT, host="http://127.0.0.1:2", timeout=500)
    c = OllamaChatModel(CHAT, host="http://127.0.0.1:1", num_ctx=4096)

    assert a.cache_identity() == b.cache_identity()
    assert a.cache_identity() != c.cache_identity()
    identity = a.cache_identity()
    for key in ("model", "num_ctx", "temperature", "seed", "num_predict"):
        assert key in identity
    assert a.name == f"ollama:{CHAT}"


def test_sync_complete_json_outside_a_loop(ollama_stub: OllamaStub) -> None:
    ollama_stub.default_reply = {"name": "Ada", "age": 36}
    model = chat_model(ollama_stub)

    # two calls: each runs on its own event loop, so each needs its own HTTP client
    assert model.complete_json("Who?", Person).age == 36
    assert model.complete_json("Who else?", Person).age == 36
    assert model.complete("plain").text == json.dumps({"name": "Ada", "age": 36})
    assert len(ollama_stub.calls("/api/chat")) == 3


async def test_sync_complete_json_inside_a_running_loop(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.default_reply = {"name": "Ada", "age": 36}
    model = make_chat()

    assert (await model.acomplete_json("async first", Person)).age == 36
    assert model.complete_json("Who?", Person).age == 36  # sync call from async code
    assert (await model.acomplete_json("async again", Person)).age == 36
    assert len(ollama_stub.calls("/api/chat")) == 3


async def test_concurrent_requests_share_a_loop_client(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.reply_fn = lambda body: {"name": body["messages"][-1]["content"], "age": 1}
    model = make_chat(max_concurrency=3)

    people = await asyncio.gather(*(model.acomplete_json(f"p{i}", Person) for i in range(8)))

    assert [p.name for p in people] == [f"p{i}" for i in range(8)]
    await model.aclose()  # closes this loop's client; the next call opens a new one
    assert (await model.acomplete_json("after close", Person)).name == "after close"


async def test_async_context_manager_closes_the_client(ollama_stub: OllamaStub) -> None:
    async with chat_model(ollama_stub) as model:
        assert (await model.acomplete("hi")).text == '{"ok": true}'
    async with OllamaEmbedder(EMBED, host=ollama_stub.url) as embedder:
        assert (await embedder.aembed(["a"])).shape == (1, 8)


# -- embeddings ---------------------------------------------------------------------------------
async def test_embed_batches_and_normalises(ollama_stub: OllamaStub, make_embedder) -> None:
    texts = [f"text number {i}" for i in range(7)]
    embedder = make_embedder(batch_size=3, num_ctx=2048)

    vectors = await embedder.aembed(texts)

    bodies = ollama_stub.calls("/api/embed")
    assert sorted(len(b["input"]) for b in bodies) == [1, 3, 3]
    # nomic-embed-text stores texts with its document prefix
    assert sorted(t for b in bodies for t in b["input"]) == sorted(f"search_document: {t}" for t in texts)
    for body in bodies:
        assert isinstance(body["input"], list)
        assert body["model"] == EMBED
        assert body["truncate"] is True
        assert body["options"] == {"num_ctx": 2048}
    assert vectors.shape == (7, 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    for text, vector in zip(texts, vectors, strict=True):
        raw = np.asarray(default_vector(f"search_document: {text}"))
        np.testing.assert_allclose(vector, raw / np.linalg.norm(raw), rtol=1e-5)
    assert embedder.dimension == 8
    assert embedder.name == f"ollama:{EMBED}"


async def test_embed_cache_skips_known_texts(ollama_stub: OllamaStub, make_embedder) -> None:
    embedder = make_embedder(batch_size=32, cache=ModelCache())

    first = await embedder.aembed(["a", "b"])
    second = await embedder.aembed(["b", "c"])

    inputs = [b["input"] for b in ollama_stub.calls("/api/embed")]
    assert inputs == [["search_document: a", "search_document: b"], ["search_document: c"]]
    np.testing.assert_allclose(first[1], second[0])


def test_sync_embed_and_dimension_probe(ollama_stub: OllamaStub) -> None:
    embedder = OllamaEmbedder(EMBED, host=ollama_stub.url, truncate=False)

    assert embedder.dimension == 8  # probe request
    assert embedder.embed(["x", "y"]).shape == (2, 8)
    bodies = ollama_stub.calls("/api/embed")
    assert len(bodies) == 2
    assert bodies[0]["truncate"] is False
    assert "options" not in bodies[0]


# -- status -------------------------------------------------------------------------------------
async def test_check_ollama_on_a_running_server(ollama_stub: OllamaStub) -> None:
    status = await acheck_ollama(ollama_stub.url)

    assert status.reachable and status.error is None
    assert status.host == ollama_stub.url
    assert status.models == ["qwen2.5:7b", "nomic-embed-text:latest"]
    assert status.has_model("nomic-embed-text")
    assert status.has_model("nomic-embed-text:latest")
    assert not status.has_model("qwen2.5")  # only the :latest tag is implicit
    require_model(status, "qwen2.5:7b")
    status.require("nomic-embed-text")
    with pytest.raises(ModelNotFoundError, match="ollama pull llama3.2"):
        require_model(status, "llama3.2")


def test_check_ollama_sync_on_a_running_server(ollama_stub: OllamaStub) -> None:
    status = check_ollama(ollama_stub.url)
    assert status.reachable and "qwen2.5:7b" in status.models


async def test_check_ollama_on_a_stopped_server() -> None:
    url = closed_port_url()

    status = await acheck_ollama(url, timeout=1.0)

    assert status == OllamaStatus(reachable=False, host=url, models=[], error=status.error)
    assert status.error
    with pytest.raises(ModelUnavailableError, match="ollama serve"):
        require_model(status, CHAT)
    assert not check_ollama(url, timeout=1.0).reachable


async def test_check_ollama_on_a_slow_server(ollama_stub: OllamaStub) -> None:
    ollama_stub.delay = 5.0
    status = await acheck_ollama(ollama_stub.url, timeout=0.2)
    assert not status.reachable and status.error


# -- configuration ------------------------------------------------------------------------------
def test_resolve_host(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_host(None) == DEFAULT_OLLAMA_HOST == "http://localhost:11434"
    assert resolve_host("gpu-box") == "http://gpu-box:11434"
    assert resolve_host("gpu-box:11500") == "http://gpu-box:11500"
    assert resolve_host("127.0.0.1:8080/") == "http://127.0.0.1:8080"
    assert resolve_host(":11500") == "http://localhost:11500"
    assert resolve_host("https://ollama.example.org") == "https://ollama.example.org"
    assert resolve_host("http://[::1]:11434") == "http://[::1]:11434"
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:9999")
    assert resolve_host(None) == "http://0.0.0.0:9999"
    assert OllamaChatModel(CHAT).host == "http://0.0.0.0:9999"
    assert resolve_host("other:1") == "http://other:1"
    with pytest.raises(ConfigurationError):
        resolve_host("ftp://x")
    with pytest.raises(ConfigurationError):
        resolve_host("x:notaport")


def test_invalid_parameters_are_rejected() -> None:
    with pytest.raises(ConfigurationError):
        OllamaChatModel("")
    with pytest.raises(ConfigurationError):
        OllamaChatModel(CHAT, timeout=0)
    with pytest.raises(ConfigurationError):
        OllamaChatModel(CHAT, num_ctx=0)
    with pytest.raises(ConfigurationError):
        OllamaEmbedder(EMBED, batch_size=0)


async def test_nomic_embed_text_gets_its_query_and_document_prefixes(ollama_stub: OllamaStub) -> None:
    embedder = OllamaEmbedder(EMBED, host=ollama_stub.url)
    try:
        await embedder.aembed(["a passage"])
        await embedder.aembed_query(["a question"])
    finally:
        await embedder.aclose()
    inputs = [call["input"] for call in ollama_stub.calls("/api/embed")]
    assert inputs == [["search_document: a passage"], ["search_query: a question"]]
    plain = OllamaEmbedder("bge-m3", host=ollama_stub.url)
    assert (plain.query_prefix, plain.document_prefix) == ("", "")
    custom = OllamaEmbedder(EMBED, host=ollama_stub.url, query_prefix="", document_prefix="")
    assert (custom.query_prefix, custom.document_prefix) == ("", "")


# -- streaming ----------------------------------------------------------------------------------
async def test_an_answer_streams_in_pieces_and_is_cached_whole(ollama_stub: OllamaStub, make_chat, tmp_path) -> None:
    from rhizome.core.store.cache import ModelCache

    ollama_stub.default_reply = "Piet Hale kept the light for forty years."
    model = make_chat(cache=ModelCache(tmp_path / "calls.sqlite"))

    pieces = [p async for p in model.astream("Who kept the light?", system="Be brief.")]
    assert len(pieces) > 3 and "".join(pieces) == ollama_stub.default_reply
    (body,) = ollama_stub.calls("/api/chat")
    assert body["stream"] is True and body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert model.usage.calls == 1 and model.usage.completion_tokens > 0
    again = [p async for p in model.astream("Who kept the light?", system="Be brief.")]
    assert again == [ollama_stub.default_reply] and len(ollama_stub.calls("/api/chat")) == 1


def test_a_streamed_answer_shows_no_thoughts_and_cites_only_the_answer(ollama_stub: OllamaStub, tmp_path) -> None:
    from rhizome.core import HashingEmbedder, VectorIndex
    from rhizome.core.retrieval.answer import cited

    thought = "<think>The question is who runs the ferry. Item [2] is about the lighthouse.</think>\n\n"
    ollama_stub.default_reply = thought + "Mira Holt runs the Tarn ferry [1]."
    index = VectorIndex(HashingEmbedder(), llm=chat_model(ollama_stub), path=tmp_path / "i")
    index.insert([{"id": "ferry", "text": "Mira Holt runs the Tarn ferry."}, {"id": "light", "text": "Piet Hale keeps the lighthouse."}])
    hits = index.as_retriever(k=2).retrieve("Who runs the Tarn ferry?")
    for _ in range(2):  # from the server, then from the cache
        streamed = "".join(index.answer("Who runs the Tarn ferry?", stream=True))
        assert streamed == "Mira Holt runs the Tarn ferry [1]."
        assert [h.id for h in cited(streamed, hits)] == [hits[0].id]
    assert len(ollama_stub.calls("/api/chat")) == 1
    index.close()


async def test_a_stream_that_stops_early_is_an_error(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.default_reply = "one two three four five six"
    ollama_stub.truncate_streams = True
    model = make_chat()
    seen = []
    with pytest.raises(ModelServerError, match="ended the answer stream"):
        async for piece in model.astream("count"):
            seen.append(piece)
    assert seen  # what came before the break was shown


async def test_a_busy_server_is_retried_before_the_stream_starts(ollama_stub: OllamaStub, make_chat) -> None:
    ollama_stub.replies.extend([StubError(503, "busy", retry_after=0), "after the wait"])
    model = make_chat(transport_retries=1)
    assert "".join([p async for p in model.astream("q")]) == "after the wait"


def test_a_finished_stream_leaves_no_open_generator_behind(ollama_stub: OllamaStub, capsys, caplog) -> None:
    """Defect: the client's stream was left open after the last chunk, and the loop's shutdown
    closed it twice ("aclose(): asynchronous generator is already running" on standard error
    after `rhizome query --answer` and in the demo)."""
    from rhizome.core.aio import iterate_sync

    ollama_stub.default_reply = "Piet Hale kept the light."
    model = chat_model(ollama_stub)
    for _ in range(3):
        assert "".join(iterate_sync(model.astream("Who kept the light?"))) == "Piet Hale kept the light."
    assert "aclose" not in capsys.readouterr().err and "aclose" not in caplog.text
