"""rhizome.core.models.adapters: LangChain and LlamaIndex models used as Rhizome models."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from _integration_toys import CORPUS, QUERY
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
)
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.llms.custom import CustomLLM
from pydantic import BaseModel

from rhizome.core.errors import ConfigurationError, ModelOutputError
from rhizome.core.models.adapters import (
    LangChainChatModel,
    LangChainEmbedder,
    LlamaIndexEmbedder,
    LlamaIndexLLM,
    wrap_chat_model,
    wrap_embedder,
    wrap_model,
)
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.models.fake import FakeChatModel, FakeEmbedder
from rhizome.core.naive import VectorIndex
from rhizome.core.store.cache import ModelCache


class Answer(BaseModel):
    answer: str
    confidence: float


class RecordingFakeChat(FakeListChatModel):
    """FakeListChatModel that keeps the messages it was sent."""

    seen: list[list[Any]] = []

    def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        self.seen.append(list(messages))
        return super()._call(messages, stop=stop, run_manager=run_manager, **kwargs)


class StructuredFakeChat(FakeListChatModel):
    """A fake that supports with_structured_output(method="json_schema", include_raw=True) the
    way provider models do, returning the raw message and the parsed value."""

    requests: list[tuple[Any, dict[str, Any]]] = []
    parsed: Any = {"answer": "queens", "confidence": 0.9}

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Any:
        self.requests.append((schema, {"include_raw": include_raw, **kwargs}))
        parsed = self.parsed

        def run(messages: Any) -> dict[str, Any]:
            raw = AIMessage(
                content=json.dumps(parsed) if parsed is not None else "garbage",
                usage_metadata={"input_tokens": 11, "output_tokens": 7, "total_tokens": 18},
            )
            return {"raw": raw, "parsed": parsed, "parsing_error": None}

        return RunnableLambda(run)


class JsonLlamaLLM(CustomLLM):
    """A LlamaIndex LLM that answers from a list and reports token counts like OpenAI's."""

    answers: list[str] = []
    seen: list[list[ChatMessage]] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="json-fake", is_chat_model=True)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.answers.pop(0))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        self.seen.append(list(messages))
        return ChatResponse(
            message=ChatMessage(role="assistant", content=self.answers.pop(0)),
            additional_kwargs={"prompt_tokens": 5, "completion_tokens": 3},
        )


# -- LangChain chat ----------------------------------------------------------------------------
def test_langchain_chat_complete_and_name() -> None:
    model = LangChainChatModel(FakeListChatModel(responses=["hello"]))
    assert model.name == "langchain:FakeListChatModel"
    completion = model.complete("hi", system="be brief")
    assert completion.text == "hello"
    assert (completion.prompt_tokens, completion.completion_tokens) == (0, 0)
    assert model.usage.calls == 1


def test_langchain_chat_name_uses_model_attribute() -> None:
    class Named(FakeListChatModel):
        model: str = "qwen2.5:7b"

    assert LangChainChatModel(Named(responses=["x"])).name == "langchain:Named:qwen2.5:7b"
    assert LangChainChatModel(Named(responses=["x"]), name="mine").name == "mine"


async def test_langchain_chat_token_usage_from_usage_metadata() -> None:
    message = AIMessage(
        content="counted",
        usage_metadata={"input_tokens": 12, "output_tokens": 4, "total_tokens": 16},
    )
    model = LangChainChatModel(GenericFakeChatModel(messages=iter([message])))
    completion = await model.acomplete("count me")
    assert completion.text == "counted"
    assert (completion.prompt_tokens, completion.completion_tokens) == (12, 4)
    assert model.usage.prompt_tokens == 12 and model.usage.completion_tokens == 4


async def test_langchain_chat_roles_reach_the_model() -> None:
    chat = RecordingFakeChat(responses=["ok"])
    chat.seen = []
    await LangChainChatModel(chat).acomplete("question", system="rules")
    (messages,) = chat.seen
    assert [(m.type, m.content) for m in messages] == [("system", "rules"), ("human", "question")]


async def test_langchain_json_falls_back_to_prompt_and_retries() -> None:
    chat = RecordingFakeChat(
        responses=["no json here", '```json\n{"answer": "ants", "confidence": 1}\n```']
    )
    chat.seen = []
    model = LangChainChatModel(chat)
    value = await model.acomplete_json(QUERY, Answer)
    assert value == Answer(answer="ants", confidence=1.0)
    assert model.usage.retries == 1 and model.usage.calls == 2
    first_prompt = chat.seen[0][-1].content
    assert QUERY in first_prompt and '"confidence"' in first_prompt  # schema stated in the prompt


async def test_langchain_json_prefers_structured_output() -> None:
    chat = StructuredFakeChat(responses=["unused"])
    chat.requests = []
    model = LangChainChatModel(chat)
    value = await model.acomplete_json(QUERY, Answer)
    assert value == Answer(answer="queens", confidence=0.9)
    schema, options = chat.requests[0]
    assert schema == Answer.model_json_schema()
    assert options == {"include_raw": True, "method": "json_schema"}
    assert (model.usage.prompt_tokens, model.usage.completion_tokens) == (11, 7)
    await model.acomplete_json("again", Answer)
    assert len(chat.requests) == 1  # the bound model is reused per schema


async def test_langchain_structured_parse_failure_is_reported() -> None:
    chat = StructuredFakeChat(responses=["unused"], parsed=None)
    model = LangChainChatModel(chat, max_retries=1)
    with pytest.raises(ModelOutputError) as info:
        await model.acomplete_json(QUERY, Answer)
    assert info.value.last_output == "garbage"
    assert model.usage.calls == 2


async def test_langchain_structured_output_can_be_disabled() -> None:
    chat = StructuredFakeChat(responses=['{"answer": "plain", "confidence": 0.5}'])
    chat.requests = []
    value = await LangChainChatModel(chat, structured_output=False).acomplete_json("q", Answer)
    assert value.answer == "plain" and chat.requests == []


def test_langchain_chat_uses_cache() -> None:
    model = LangChainChatModel(FakeListChatModel(responses=["first", "second"]), cache=ModelCache())
    assert model.complete("same").text == "first"
    assert model.complete("same").text == "first"
    assert model.usage.calls == 1 and model.usage.cache_hits == 1


# -- LangChain embeddings ----------------------------------------------------------------------
def test_langchain_embedder() -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=16))
    assert embedder.name == "langchain:DeterministicFakeEmbedding"
    # the framework object's keyword is the one these classes always took
    assert LangChainEmbedder(embeddings=DeterministicFakeEmbedding(size=16), batch_size=8).batch_size == 8
    assert embedder.dimension == 16 and embedder.usage.calls == 0  # read, not probed
    vectors = embedder.embed(["alpha", "beta", "alpha"])
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert not np.allclose(vectors[0], vectors[1])


def test_vector_index_with_langchain_embeddings() -> None:
    index = VectorIndex(DeterministicFakeEmbedding(size=32), chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    assert index.embedder.name == "langchain:DeterministicFakeEmbedding"
    hits = index.as_retriever(k=2).retrieve(CORPUS[1].text)
    assert hits[0].provenance.document_ids == ["doc-ants"]  # same text, same vector


# -- LlamaIndex --------------------------------------------------------------------------------
async def test_llama_index_llm_with_mock_llm() -> None:
    model = LlamaIndexLLM(MockLLM())
    assert model.name == "llama_index:MockLLM"
    completion = await model.acomplete("hello there", system="rules")
    assert "hello there" in completion.text  # MockLLM echoes the conversation
    assert completion.prompt_tokens == 0


async def test_llama_index_llm_json_and_usage() -> None:
    llm = JsonLlamaLLM(answers=["nope", '{"answer": "wasps", "confidence": 0.2}'])
    llm.seen = []
    model = LlamaIndexLLM(llm)
    assert model.name == "llama_index:JsonLlamaLLM:json-fake"
    value = await model.acomplete_json(QUERY, Answer, system="be exact")
    assert value == Answer(answer="wasps", confidence=0.2)
    assert model.usage.retries == 1
    assert (model.usage.prompt_tokens, model.usage.completion_tokens) == (10, 6)
    first = llm.seen[0]
    assert [m.role.value for m in first] == ["system", "user"]
    assert '"confidence"' in first[-1].content


def test_llama_index_embedder() -> None:
    embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
    assert embedder.name == "llama_index:MockEmbedding"
    # the framework object's keyword is the one these classes always took
    assert LlamaIndexEmbedder(embed_model=MockEmbedding(embed_dim=8), name="li").name == "li"
    assert embedder.dimension == 8
    vectors = embedder.embed(["a", "b"])
    assert vectors.shape == (2, 8)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_vector_index_with_llama_index_embedding() -> None:
    index = VectorIndex(MockEmbedding(embed_dim=8), chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    assert len(index.as_retriever(k=3).retrieve(QUERY)) == 3


# -- wrapping ----------------------------------------------------------------------------------
def test_wrap_chat_model() -> None:
    ours = FakeChatModel()
    assert wrap_chat_model(ours) is ours
    assert isinstance(wrap_chat_model(FakeListChatModel(responses=["x"])), LangChainChatModel)
    assert isinstance(wrap_chat_model(MockLLM()), LlamaIndexLLM)
    with pytest.raises(ConfigurationError, match="LangChain chat model"):
        wrap_chat_model(object())
    with pytest.raises(ConfigurationError):
        wrap_chat_model(DeterministicFakeEmbedding(size=4))


def test_wrap_embedder() -> None:
    ours = FakeEmbedder()
    assert wrap_embedder(ours) is ours
    assert isinstance(wrap_embedder(DeterministicFakeEmbedding(size=4)), LangChainEmbedder)
    assert isinstance(wrap_embedder(MockEmbedding(embed_dim=4)), LlamaIndexEmbedder)
    assert isinstance(wrap_embedder("hashing:64"), HashingEmbedder)
    with pytest.raises(ConfigurationError, match="embedder"):
        wrap_embedder(FakeListChatModel(responses=["x"]))


def test_wrap_model_passes_other_values_through() -> None:
    assert wrap_model(None) is None
    assert wrap_model(3) == 3
    assert wrap_model("hashing:64") == "hashing:64"
    assert isinstance(wrap_model(MockEmbedding(embed_dim=4)), LlamaIndexEmbedder)
    assert isinstance(wrap_model(FakeListChatModel(responses=["x"])), LangChainChatModel)


def test_adapters_import_no_framework() -> None:
    code = (
        "import sys, rhizome.core.models.adapters\n"
        "bad = [m for m in sys.modules if m.startswith(('langchain', 'llama_index'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_adapters_embed_queries_with_the_frameworks_query_methods():
    from langchain_core.embeddings import Embeddings
    from llama_index.core.embeddings import MockEmbedding

    from rhizome.core.models.adapters import LangChainEmbedder, LlamaIndexEmbedder

    class Recording(Embeddings):
        calls: list[str] = []

        def embed_documents(self, texts):
            self.calls.append("documents")
            return [[1.0, 0.0] for _ in texts]

        def embed_query(self, text):
            self.calls.append("query")
            return [0.0, 1.0]

    lc = LangChainEmbedder(Recording())
    assert (await lc.aembed_query(["q"]))[0].tolist() == [0.0, 1.0]
    assert (await lc.aembed(["d"]))[0].tolist() == [1.0, 0.0]
    assert Recording.calls == ["query", "documents"]

    class RecordingLI(MockEmbedding):
        async def _aget_query_embedding(self, query):
            return [0.0] * (self.embed_dim - 1) + [1.0]

    li = LlamaIndexEmbedder(RecordingLI(embed_dim=4))
    assert (await li.aembed_query(["q"]))[0].tolist() == [0.0, 0.0, 0.0, 1.0]


def test_framework_models_cache_by_their_answer_settings() -> None:
    """Defect: a wrapped ChatOllama / LlamaIndex Ollama was cached by class and model name only,
    so an answer written at temperature 0.9 with a 2,048-token window was served at 0 and 32,768."""
    from langchain_ollama import ChatOllama
    from llama_index.llms.ollama import Ollama

    def lc(**kw: Any) -> dict[str, Any]:
        return LangChainChatModel(ChatOllama(model="qwen2.5:7b", **kw)).cache_identity()

    def li(**kw: Any) -> dict[str, Any]:
        return LlamaIndexLLM(Ollama(model="qwen2.5:7b", **kw)).cache_identity()

    assert lc(temperature=0.9, num_ctx=2048) != lc(temperature=0.0, num_ctx=32768)
    assert lc(temperature=0.9) == lc(temperature=0.9, base_url="http://other:11434")  # where it runs is not a setting
    assert li(temperature=0.9, context_window=2048) != li(temperature=0.0, context_window=32768)
    assert li(temperature=0.9) == li(temperature=0.9, base_url="http://other:11434", request_timeout=5.0)


async def test_framework_models_rerank_through_the_adapters() -> None:
    from rhizome.core.retrieval.llm_rerank import LLMReranker

    chat = RecordingFakeChat(responses=['{"ranking": [3, 1]}'])
    chat.seen = []
    ranking = await LLMReranker(LangChainChatModel(chat)).arank("which?", ["a", "b", "c"])
    assert ranking.order == [2, 0, 1] and ranking.fallback == [1]  # b, not named, after the named ones
    assert "[3] c" in chat.seen[0][-1].content
    llm = JsonLlamaLLM(answers=['{"grades": [{"passage": 1, "grade": 2}, {"passage": 2, "grade": 9}]}'])
    llm.seen = []
    ranking = await LLMReranker(LlamaIndexLLM(llm), method="pointwise").arank("which?", ["a", "b"])
    assert ranking.order == [1, 0] and ranking.scores == [0.2, 0.9]
