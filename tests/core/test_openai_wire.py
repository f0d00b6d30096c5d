"""The OpenAI-compatible model layer against a loopback stub server: wire protocol, structured
output and its fall-backs, context window from /v1/models, error mapping, retries with
Retry-After, streaming, embeddings, the status check and the model registry."""

from __future__ import annotations

import sys
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
    PromptTooLongError,
)
from rhizome.core.models import registry, transport
from rhizome.core.models.base import VARIED_TEMPERATURE, varied_sampling
from rhizome.core.models.openai_compat import (
    DEFAULT_BASE_URL,
    OpenAIChatModel,
    OpenAIEmbedder,
    check_openai_server,
    model_window,
    resolve_api_key,
    resolve_base_url,
)
from rhizome.core.store.cache import ModelCache

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from openai_stub import (  # noqa: E402
    OpenAIStub,
    StubDrop,
    StubError,
    closed_port_url,
    default_vector,
    openai_stub_fixture,  # noqa: F401  (registers the `openai_stub` fixture)
)

CHAT = "qwen-7b"
EMBED = "embed-small"


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep proxies and a developer's server settings out of the tests."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                "RHIZOME_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "RHIZOME_OPENAI_API_KEY",
                "RHIZOME_NUM_CTX", "OLLAMA_CONTEXT_LENGTH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between attempts, recorded instead of slept."""
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr(transport.asyncio, "sleep", sleep)
    return waited


@pytest.fixture
async def make_chat(openai_stub: OpenAIStub) -> AsyncIterator[Callable[..., OpenAIChatModel]]:
    made: list[OpenAIChatModel] = []

    def make(**kwargs) -> OpenAIChatModel:
        kwargs.setdefault("retry_backoff", 0.0)
        kwargs.setdefault("base_url", openai_stub.base_url)
        made.append(OpenAIChatModel(kwargs.pop("model", CHAT), **kwargs))
        return made[-1]

    yield make
    for model in made:
        await model.aclose()


@pytest.fixture
async def make_embedder(openai_stub: OpenAIStub) -> AsyncIterator[Callable[..., OpenAIEmbedder]]:
    made: list[OpenAIEmbedder] = []

    def make(**kwargs) -> OpenAIEmbedder:
        kwargs.setdefault("base_url", openai_stub.base_url)
        made.append(OpenAIEmbedder(kwargs.pop("model", EMBED), **kwargs))
        return made[-1]

    yield make
    for embedder in made:
        await embedder.aclose()


# -- chat: wire protocol ------------------------------------------------------------------------
async def test_structured_chat_sends_the_schema_as_response_format(openai_stub: OpenAIStub, make_chat) -> None:
    openai_stub.replies.append({"name": "Ada", "age": 36})
    model = make_chat()

    assert await model.acomplete_json("Who?", Person, system="Answer in JSON.") == Person(name="Ada", age=36)
    (body,) = openai_stub.calls("/v1/chat/completions")
    assert body["model"] == CHAT and body["temperature"] == 0.0 and body["seed"] == 42
    assert "stream" not in body and "max_tokens" not in body
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "Person", "schema": Person.model_json_schema()}}
    assert body["messages"] == [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Who?"}]
    assert model.usage.calls == 1 and model.usage.prompt_tokens > 0 and model.usage.completion_tokens > 0
    assert model.name == "openai:qwen-7b"


async def test_a_server_that_refuses_json_schema_is_asked_for_json_objects_then_plain_text(openai_stub: OpenAIStub, make_chat) -> None:
    openai_stub.refused_formats = {"json_schema"}
    openai_stub.default_reply = {"name": "Ada", "age": 36}
    model = make_chat()
    assert (await model.acomplete_json("Who?", Person)).name == "Ada"
    assert await model.acomplete_json("Who else?", Person)  # from then on, json_object at once
    kinds = [(b.get("response_format") or {}).get("type") for b in openai_stub.calls("/v1/chat/completions")]
    assert kinds == ["json_schema", "json_object", "json_object"]

    openai_stub.refused_formats = {"json_schema", "json_object"}
    plain = make_chat()
    assert (await plain.acomplete_json("Who?", Person)).age == 36
    kinds = [(b.get("response_format") or {}).get("type") for b in openai_stub.calls("/v1/chat/completions")[3:]]
    assert kinds == ["json_schema", "json_object", None]
    assert plain.usage.calls == 1  # refusals are not answers


async def test_invalid_json_is_retried_showing_the_answer(openai_stub: OpenAIStub, make_chat) -> None:
    openai_stub.replies.extend(["sorry, no JSON here", {"name": "Ada", "age": 36}])
    model = make_chat()
    assert (await model.acomplete_json("Who?", Person)).name == "Ada"
    _, second = openai_stub.calls("/v1/chat/completions")
    assert second["messages"][1] == {"role": "assistant", "content": "sorry, no JSON here"}
    assert model.usage.retries == 1 and model.usage.calls == 2
    openai_stub.default_reply = {"name": "Ada"}
    with pytest.raises(ModelOutputError, match="Person"):
        await make_chat(max_retries=1).acomplete_json("Who now?", Person)


async def test_varied_sampling_changes_seed_and_temperature_not_the_cache_key(openai_stub: OpenAIStub, make_chat, tmp_path) -> None:
    openai_stub.replies.append({"name": "Ada", "age": 36})
    model = make_chat(cache=ModelCache(tmp_path / "cache.sqlite"), max_tokens=64)
    with varied_sampling(7):
        await model.acomplete_json("Who?", Person)
    (body,) = openai_stub.calls("/v1/chat/completions")
    assert (body["seed"], body["temperature"], body["max_tokens"]) == (7, VARIED_TEMPERATURE, 64)
    assert await model.acomplete_json("Who?", Person) == Person(name="Ada", age=36)
    assert len(openai_stub.calls("/v1/chat/completions")) == 1 and model.usage.cache_hits == 1


def test_cache_identity_covers_sampling_not_the_server(openai_stub: OpenAIStub) -> None:
    a = OpenAIChatModel(CHAT, base_url=openai_stub.base_url)
    assert a.cache_identity() == OpenAIChatModel(CHAT, base_url="http://elsewhere:8000/v1").cache_identity()
    assert a.cache_identity() != OpenAIChatModel(CHAT, temperature=0.5).cache_identity()
    assert a.cache_identity() != OpenAIChatModel("other").cache_identity()
    twin = a.on_host("http://elsewhere:8000")
    assert twin.base_url == "http://elsewhere:8000/v1" and a.base_url == openai_stub.base_url


# -- context window -----------------------------------------------------------------------------
async def test_the_context_window_comes_from_the_server_where_it_says(openai_stub: OpenAIStub, make_chat) -> None:
    openai_stub.context_length = 4096
    model = make_chat()
    assert model.context_window == 32768  # before the first request: the setting's default
    await model.acomplete("Hi")
    assert model.context_window == 4096 and model.served_window == 4096
    with pytest.raises(PromptTooLongError, match="max-model-len"):
        await model.acomplete("word " * 6000)
    assert len(openai_stub.calls("/v1/models")) == 1 and len(openai_stub.calls("/v1/chat/completions")) == 1

    small = make_chat(context_window=2048)  # a smaller setting stays the bound
    await small.acomplete("Hi")
    assert small.context_window == 2048

    openai_stub.context_length = None  # the server does not say: the setting, else RHIZOME_NUM_CTX's default
    silent = make_chat(context_window=6000)
    await silent.acomplete("Hi")
    assert silent.context_window == 6000 and silent.served_window == 0
    with pytest.raises(PromptTooLongError, match="--num-ctx"):
        await silent.acomplete("word " * 9000)


def test_model_window_reads_the_fields_servers_use() -> None:
    assert model_window({"id": "m", "max_model_len": 8192}) == 8192
    assert model_window({"id": "m", "context_length": 4096}) == 4096
    assert model_window({"id": "m", "meta": {"n_ctx_train": 32768}}) == 32768
    assert model_window({"id": "m", "max_model_len": True}) == 0
    assert model_window({"id": "m"}) == 0


# -- errors and retries -------------------------------------------------------------------------
async def test_server_down_is_model_unavailable() -> None:
    model = OpenAIChatModel(CHAT, base_url=closed_port_url(), transport_retries=0)
    with pytest.raises(ModelUnavailableError, match="--base-url"):
        await model.acomplete("hi")
    embedder = OpenAIEmbedder(EMBED, base_url=closed_port_url())
    with pytest.raises(ModelUnavailableError, match="vllm serve"):
        await embedder.aembed(["x"])


async def test_a_model_the_server_does_not_serve_is_model_not_found(openai_stub: OpenAIStub, make_chat, make_embedder) -> None:
    with pytest.raises(ModelNotFoundError, match="serves no model 'llama-3'") as info:
        await make_chat(model="llama-3").acomplete("hi")
    assert "rhizome status --base-url" in str(info.value)
    with pytest.raises(ModelNotFoundError):
        await make_embedder(model="nope").aembed(["x"])


async def test_a_wrong_api_key_says_which_variable_to_set(openai_stub: OpenAIStub, make_chat, monkeypatch) -> None:
    openai_stub.api_key = "sk-right"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        await make_chat().acomplete("hi")
    monkeypatch.setenv("RHIZOME_OPENAI_API_KEY", "sk-right")  # Rhizome's own variable wins
    assert (await make_chat().acomplete("hi")).text
    assert openai_stub.authorizations[-1] == "Bearer sk-right"


async def test_timeout_is_model_timeout_and_not_retried(openai_stub: OpenAIStub, make_chat) -> None:
    openai_stub.delay = 5.0
    with pytest.raises(ModelTimeoutError, match="--timeout"):
        await make_chat(timeout=0.2).acomplete("hi")
    assert len(openai_stub.calls("/v1/chat/completions")) == 1


async def test_busy_answers_and_dropped_connections_are_retried_after_retry_after(openai_stub: OpenAIStub, make_chat, waits) -> None:
    openai_stub.replies.extend([StubError(429, "rate limited", retry_after=7), StubError(503, "busy"), StubDrop(), "done"])
    model = make_chat(transport_retries=3, retry_backoff=0.25)
    assert (await model.acomplete("hi")).text == "done"
    assert len(openai_stub.calls("/v1/chat/completions")) == 4 and model.usage.calls == 1
    assert waits[0] == 7  # the server's Retry-After
    assert 0.5 * 0.5 <= waits[1] <= 0.5 * 1.5 and 1.0 * 0.5 <= waits[2] <= 1.0 * 1.5  # backoff doubles (after the first retry)


async def test_a_busy_server_beyond_the_retries_names_the_flags(openai_stub: OpenAIStub, make_chat, waits) -> None:
    openai_stub.default_reply = StubError(500, "engine dead")
    with pytest.raises(ModelServerError, match="--max-retries") as info:
        await make_chat(transport_retries=2).acomplete("hi")
    assert "engine dead" in str(info.value) and len(openai_stub.calls("/v1/chat/completions")) == 3
    openai_stub.default_reply = StubDrop()
    with pytest.raises(ModelServerError, match="dropped the connection"):
        await make_chat(transport_retries=1).acomplete("hi")


async def test_other_refusals_carry_the_servers_message_and_are_not_retried(openai_stub: OpenAIStub, make_chat) -> None:
    openai_stub.replies.append(StubError(400, "messages: too many roles"))
    with pytest.raises(ModelError, match="too many roles"):
        await make_chat().acomplete("hi")
    assert len(openai_stub.calls("/v1/chat/completions")) == 1


# -- streaming ----------------------------------------------------------------------------------
async def test_an_answer_streams_in_pieces_with_usage_and_is_cached_whole(openai_stub: OpenAIStub, make_chat, tmp_path) -> None:
    openai_stub.default_reply = "Piet Hale kept the light for forty years."
    model = make_chat(cache=ModelCache(tmp_path / "calls.sqlite"))
    pieces = [p async for p in model.astream("Who kept the light?", system="Be brief.")]
    assert len(pieces) > 3 and "".join(pieces) == openai_stub.default_reply
    (body,) = openai_stub.calls("/v1/chat/completions")
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert model.usage.calls == 1 and model.usage.completion_tokens == 8
    again = [p async for p in model.astream("Who kept the light?", system="Be brief.")]
    assert again == [openai_stub.default_reply] and len(openai_stub.calls("/v1/chat/completions")) == 1


async def test_a_server_without_stream_usage_still_streams(openai_stub: OpenAIStub, make_chat) -> None:
    openai_stub.no_stream_usage = True
    openai_stub.default_reply = "one two three"
    model = make_chat()
    assert "".join([p async for p in model.astream("count")]) == "one two three"
    assert "".join([p async for p in model.astream("again")]) == "one two three"
    assert ["stream_options" in b for b in openai_stub.calls("/v1/chat/completions")] == [True, False, False]
    assert model.usage.calls == 2 and model.usage.completion_tokens == 0  # the server did not count


async def test_a_stream_that_stops_early_is_an_error(openai_stub: OpenAIStub, make_chat) -> None:
    openai_stub.default_reply = "one two three four five six"
    openai_stub.truncate_streams = True
    seen = []
    with pytest.raises(ModelServerError, match="ended the answer stream"):
        async for piece in make_chat().astream("count"):
            seen.append(piece)
    assert seen


async def test_a_busy_server_is_retried_before_the_stream_starts(openai_stub: OpenAIStub, make_chat, waits) -> None:
    openai_stub.replies.extend([StubError(503, "busy", retry_after=0), "after the wait"])
    assert "".join([p async for p in make_chat(transport_retries=1).astream("q")]) == "after the wait"
    assert waits == [0]


def test_sync_calls_and_streams_outside_a_loop(openai_stub: OpenAIStub) -> None:
    from rhizome.core.aio import iterate_sync

    openai_stub.default_reply = {"name": "Ada", "age": 36}
    model = OpenAIChatModel(CHAT, base_url=openai_stub.base_url)
    assert model.complete_json("Who?", Person).age == 36
    openai_stub.default_reply = "Piet Hale."
    for _ in range(2):
        assert "".join(iterate_sync(model.astream("Who kept the light?"))) == "Piet Hale."


# -- embeddings ---------------------------------------------------------------------------------
async def test_embeddings_are_batched_in_order_and_normalised(openai_stub: OpenAIStub, make_embedder) -> None:
    embedder = make_embedder(batch_size=2)
    texts = ["alpha", "beta", "gamma"]
    vectors = await embedder.aembed(texts)
    expected = np.array([default_vector(t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected, atol=1e-6)  # the stub answers out of order: index says which
    bodies = openai_stub.calls("/v1/embeddings")
    assert sorted(b["input"] for b in bodies) == [["alpha", "beta"], ["gamma"]]  # batches go concurrently: any order
    assert all(b["model"] == EMBED and b["encoding_format"] == "float" for b in bodies)
    assert embedder.dimension == 8 and embedder.usage.texts == 3 and embedder.name == "openai:embed-small"


def test_sync_embed_outside_a_loop(openai_stub: OpenAIStub) -> None:
    embedder = OpenAIEmbedder(EMBED, base_url=openai_stub.base_url)
    assert embedder.dimension == 8
    assert embedder.embed_query(["q"]).shape == (1, 8)


# -- settings, status and registry --------------------------------------------------------------
def test_base_url_and_key_come_from_the_argument_then_the_variables(monkeypatch) -> None:
    assert resolve_base_url() == DEFAULT_BASE_URL
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gpu:8000/v1/")
    assert resolve_base_url() == "http://gpu:8000/v1"
    monkeypatch.setenv("RHIZOME_BASE_URL", "localhost:1234")
    assert resolve_base_url() == "http://localhost:1234/v1"  # no path: the API's /v1
    assert resolve_base_url("https://host/api/v1") == "https://host/api/v1"
    for bad in ("ftp://host/v1", "http://host:port/v1"):
        with pytest.raises(ConfigurationError, match="base URL"):
            resolve_base_url(bad)
    assert resolve_api_key() == "unused"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a")
    assert resolve_api_key() == "sk-a" and resolve_api_key("sk-b") == "sk-b"
    assert "sk-a" not in repr(OpenAIChatModel(CHAT))


def test_invalid_parameters_are_rejected() -> None:
    for kwargs in ({"timeout": 0}, {"context_window": 0}, {"max_tokens": 0}, {"transport_retries": -1}):
        with pytest.raises(ConfigurationError):
            OpenAIChatModel(CHAT, **kwargs)
    with pytest.raises(ConfigurationError, match="model name"):
        OpenAIEmbedder(" ")


def test_check_openai_server(openai_stub: OpenAIStub) -> None:
    status = check_openai_server(openai_stub.base_url)
    assert status.reachable and status.models == [CHAT, EMBED] and status.windows == {CHAT: 8192, EMBED: 8192}
    status.require(CHAT)
    with pytest.raises(ModelNotFoundError, match="it serves: qwen-7b, embed-small"):
        status.require("llama-3")
    down = check_openai_server(closed_port_url())
    assert not down.reachable
    with pytest.raises(ModelUnavailableError):
        down.require(CHAT)
    openai_stub.api_key = "sk-right"
    refused = check_openai_server(openai_stub.base_url)
    assert not refused.reachable and "HTTP 401" in (refused.error or "")
    with pytest.raises(ModelUnavailableError, match="cannot be used: .*a key it accepts"):
        refused.require(CHAT)


def test_registry_builds_openai_specs(openai_stub: OpenAIStub) -> None:
    chat = registry.make_chat_model(f"openai:{CHAT}", base_url=openai_stub.base_url)
    embedder = registry.make_embedder("openai:Qwen/Qwen3-Embedding-0.6B", base_url=openai_stub.base_url)
    assert isinstance(chat, OpenAIChatModel) and chat.model == CHAT
    assert isinstance(embedder, OpenAIEmbedder) and embedder.name == "openai:Qwen/Qwen3-Embedding-0.6B"
    with pytest.raises(ConfigurationError, match="openai:MODEL"):
        registry.make_chat_model("openai:")
    with pytest.raises(ConfigurationError, match="openai:MODEL"):
        registry.make_chat_model("vllm:x")


async def test_concurrent_refusals_step_down_one_way_at_a_time(openai_stub: OpenAIStub, make_chat) -> None:
    import asyncio

    openai_stub.refused_formats = {"json_schema"}
    openai_stub.default_reply = {"name": "Ada", "age": 36}
    model = make_chat(max_concurrency=4)
    answers = await asyncio.gather(*(model.acomplete_json(f"Who {i}?", Person) for i in range(4)))
    assert {a.name for a in answers} == {"Ada"}
    kinds = {(b.get("response_format") or {}).get("type") for b in openai_stub.calls("/v1/chat/completions")}
    assert kinds == {"json_schema", "json_object"}  # never plain text: json_object was not refused
