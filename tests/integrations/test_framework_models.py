"""Real LangChain and LlamaIndex Ollama model objects, used through Rhizome's sync and async
APIs against the loopback Ollama stub.

Their async HTTP clients bind to the first event loop they run on; every sync call of Rhizome
runs on a loop of its own, so without care the second sync call fails with "Event loop is
closed". Each test alternates 20 sync calls (and async ones) through the same object."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from ollama_stub import ollama_stub_fixture  # noqa: F401  (fixture)

from rhizome.core.models.adapters import wrap_chat_model, wrap_embedder
from rhizome.core.naive import VectorIndex as NaiveIndex

langchain_ollama = pytest.importorskip("langchain_ollama")
llama_ollama = pytest.importorskip("llama_index.llms.ollama")
llama_ollama_embed = pytest.importorskip("llama_index.embeddings.ollama")

CHAT, EMBED = "qwen2.5:7b", "nomic-embed-text:latest"


def _chat_models(url: str) -> dict[str, object]:
    return {
        "langchain": langchain_ollama.ChatOllama(model=CHAT, base_url=url),
        "llama_index": llama_ollama.Ollama(model=CHAT, base_url=url, request_timeout=10),
    }


def _embedders(url: str) -> dict[str, object]:
    return {
        "langchain": langchain_ollama.OllamaEmbeddings(model=EMBED, base_url=url),
        "llama_index": llama_ollama_embed.OllamaEmbedding(model_name=EMBED, base_url=url),
    }


@pytest.mark.parametrize("kind", ["langchain", "llama_index"])
def test_framework_chat_models_answer_20_sync_calls_in_a_row(ollama_stub, kind):
    ollama_stub.default_reply = "the answer"
    model = wrap_chat_model(_chat_models(ollama_stub.url)[kind])
    for i in range(20):
        assert model.complete(f"question {i}").text == "the answer"
        if i % 5 == 0:  # async calls on the caller's own loop in between
            assert asyncio.run(model.acomplete(f"async question {i}")).text == "the answer"


@pytest.mark.parametrize("kind", ["langchain", "llama_index"])
def test_framework_embedders_serve_an_index_through_20_sync_queries(ollama_stub, kind):
    index = NaiveIndex(wrap_embedder(_embedders(ollama_stub.url)[kind]), cache=False)
    index.insert(["Orion is a NASA project.", "Acme sells anvils."])
    for i in range(20):
        assert len(index.as_retriever(k=2).retrieve(f"who runs Orion {i}")) == 2


def test_a_langchain_retriever_with_framework_models_survives_invoke_batch_and_threads(ollama_stub):
    from langchain_rhizome import RhizomeRetriever

    index = NaiveIndex(wrap_embedder(_embedders(ollama_stub.url)["langchain"]), cache=False)
    index.insert(["Orion is a NASA project.", "Acme sells anvils."])
    retriever = RhizomeRetriever.from_index(index, k=1)
    for i in range(20):
        assert len(retriever.invoke(f"Orion {i}")) == 1
    assert [len(d) for d in retriever.batch([f"Acme {i}" for i in range(8)])] == [1] * 8
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda q: len(retriever.invoke(q)), [f"q{i}" for i in range(8)])) == [1] * 8
    assert asyncio.run(retriever.ainvoke("Orion")) and retriever.invoke("Orion")


def test_framework_models_work_inside_a_running_loop(ollama_stub):
    """Sync calls from code that already runs a loop (a notebook cell, a LangGraph node)."""
    ollama_stub.default_reply = "ok"
    model = wrap_chat_model(_chat_models(ollama_stub.url)["langchain"])

    async def notebook_cell() -> list[str]:
        return [model.complete(f"q{i}").text for i in range(5)] + [(await model.acomplete("q")).text]

    assert asyncio.run(notebook_cell()) == ["ok"] * 6
    assert asyncio.run(notebook_cell()) == ["ok"] * 6


@pytest.mark.parametrize("kind", ["langchain", "llama_index"])
def test_framework_chat_models_stream_from_sync_and_async_code(ollama_stub, kind):
    from rhizome.core.aio import iterate_sync

    ollama_stub.default_reply = "Piet Hale kept the light for forty years."
    model = wrap_chat_model(_chat_models(ollama_stub.url)[kind])
    for _ in range(5):
        pieces = list(iterate_sync(model.astream("Who kept the light?")))
        assert len(pieces) > 3 and "".join(pieces) == ollama_stub.default_reply

    async def collect() -> str:
        return "".join([p async for p in model.astream("again?")])

    assert asyncio.run(collect()) == ollama_stub.default_reply


@pytest.mark.parametrize("kind", ["langchain", "llama_index"])
def test_a_framework_stream_cut_short_is_an_error_and_never_cached(ollama_stub, kind):
    from rhizome.core.aio import iterate_sync
    from rhizome.core.errors import ModelServerError
    from rhizome.core.store.cache import ModelCache

    ollama_stub.default_reply = "Mira Holt has run the Tarn ferry since 1990 and keeps its log [1]."
    cache = ModelCache()
    model = wrap_chat_model(_chat_models(ollama_stub.url)[kind])
    model.cache = cache
    ollama_stub.truncate_streams = True  # the model runner died before the last chunk
    with pytest.raises(ModelServerError, match="before the answer was complete"):
        list(iterate_sync(model.astream("Who runs the ferry?")))
    assert len(cache) == 0
    ollama_stub.truncate_streams = False
    assert "".join(iterate_sync(model.astream("Who runs the ferry?"))) == ollama_stub.default_reply
    assert len(cache) == 1


def test_index_answers_stream_with_an_ollama_model(ollama_stub):
    from rhizome.core.models.ollama import OllamaChatModel

    ollama_stub.default_reply = "Mira Holt runs the ferry [1]."
    index = NaiveIndex(wrap_embedder(_embedders(ollama_stub.url)["langchain"]), llm=OllamaChatModel(CHAT, host=ollama_stub.url), cache=False)
    index.insert(["Captain Mira Holt runs the Tarn Harbour ferry.", "Acme sells anvils."])
    pieces = list(index.answer("Who runs the ferry?", stream=True))
    assert len(pieces) > 2 and "".join(pieces) == ollama_stub.default_reply
    prompt = ollama_stub.calls("/api/chat")[-1]["messages"][-1]["content"]
    assert "Mira Holt" in prompt and "[1]" in prompt  # the numbered context, cited inline
    offline = NaiveIndex(wrap_embedder(_embedders(ollama_stub.url)["langchain"]), cache=False)
    offline.insert(["Captain Mira Holt runs the Tarn Harbour ferry."])
    assert list(offline.answer("Who runs the ferry?", stream=True)) == [offline.answer("Who runs the ferry?").text]


def test_framework_models_inside_langgraph_nodes(ollama_stub):
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    ollama_stub.default_reply = {"answer": "Mira Holt runs it.", "citations": [1]}
    index = NaiveIndex(wrap_embedder(_embedders(ollama_stub.url)["llama_index"]), llm=_chat_models(ollama_stub.url)["langchain"], cache=False)
    index.insert(["Captain Mira Holt runs the Tarn Harbour ferry.", "Acme sells anvils."])

    class State(TypedDict, total=False):
        question: str
        answer: str

    def answer(state: State) -> State:  # a sync node: Rhizome's sync API inside LangGraph's runner
        return {"answer": index.answer(state["question"], k=1).text}

    graph = StateGraph(State)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    app = graph.compile()
    for i in range(5):
        assert app.invoke({"question": f"Who runs the ferry? {i}"})["answer"] == "Mira Holt runs it."
    assert asyncio.run(app.ainvoke({"question": "Who runs the ferry?"}))["answer"] == "Mira Holt runs it."


@pytest.mark.parametrize("kind", ["langchain", "llama_index"])
def test_framework_models_retry_busy_answers_and_give_typed_errors(ollama_stub, kind):
    """Defect: a wrapped ChatOllama / LlamaIndex Ollama raised the frameworks' own errors and
    was never retried, so one 503 aborted an insert; wrapping a LlamaIndex Ollama whose server
    was down failed at once (its metadata asks the server)."""
    from ollama_stub import StubDrop, StubError, closed_port_url

    from rhizome.core.errors import ModelNotFoundError, ModelUnavailableError

    ollama_stub.replies.extend([StubError(503, "server busy", retry_after=0.05), StubDrop(), "after a busy answer and a drop"])
    assert wrap_chat_model(_chat_models(ollama_stub.url)[kind]).complete("q").text == "after a busy answer and a drop"
    ollama_stub.models = [EMBED]  # the chat model is not pulled
    with pytest.raises(ModelNotFoundError, match="ollama pull"):
        wrap_chat_model(_chat_models(ollama_stub.url)[kind]).complete("q")
    ollama_stub.models = [CHAT]  # nor is the embedding model
    with pytest.raises(ModelNotFoundError, match="ollama pull"):
        wrap_embedder(_embedders(ollama_stub.url)[kind]).embed(["a text"])
    down = wrap_chat_model(_chat_models(closed_port_url())[kind])  # wrapping asks nothing of the server
    with pytest.raises(ModelUnavailableError, match="not reachable"):
        down.complete("q")
