"""LangGraph nodes: retrieve, classify with conditional routing, and the cited, streamed answer, in a TypedDict state and in MessagesState."""

from __future__ import annotations

import asyncio
import json
from typing import Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph_rhizome import (
    make_answer_node,
    make_classify_node,
    make_retrieve_node,
    route_by_label,
)
from ollama_stub import ollama_stub_fixture  # noqa: F401  (fixture)

from rhizome.core import ConfigurationError, FakeChatModel, HashingEmbedder, VectorIndex
from rhizome.core.types import Document
from rhizome.gorag import GORAGClassifier
from tests.gorag.conftest import QUERIES, ROUND1, ROUND2, split


class State(TypedDict, total=False):
    text: str
    label: str
    classification: dict[str, Any]
    handled_by: str


def build_graph(clf: GORAGClassifier):
    graph = StateGraph(State)
    graph.add_node("classify", make_classify_node(clf, online=False))
    for name in ("heart", "sky", "kitchen"):
        graph.add_node(name, lambda state, name=name: {"handled_by": name})
        graph.add_edge(name, END)
    graph.add_edge(START, "classify")
    graph.add_conditional_edges(
        "classify",
        route_by_label({"cardiology": "heart", "astronomy": "sky", "cooking": "kitchen"}),
        ["heart", "sky", "kitchen"],
    )
    return graph.compile()


@pytest.fixture
def clf() -> GORAGClassifier:
    c = GORAGClassifier()
    c.fit_round(*split(ROUND1))
    c.fit_round(*split(ROUND2))
    return c


def test_classify_node_routes_on_the_label(clf):
    app = build_graph(clf)
    for (gold, text), target in zip(QUERIES, ["heart", "sky", "kitchen"]):
        state = app.invoke({"text": text})
        assert state["label"] == gold and state["handled_by"] == target
        json.dumps(state)  # the state stays JSON-serialisable
        assert state["classification"]["label"] == gold


async def test_classify_node_async(clf):
    state = await build_graph(clf).ainvoke({"text": QUERIES[2][1]})
    assert state["handled_by"] == "kitchen"


def test_route_by_label_defaults_and_errors():
    assert route_by_label()({"label": "x"}) == "x"
    assert route_by_label({"a": "n1"}, default="other")({"label": "b"}) == "other"
    with pytest.raises(ConfigurationError, match="no route"):
        route_by_label({"a": "n1"})({"label": "b"})
    with pytest.raises(TypeError):
        make_classify_node(object())


def test_classify_node_in_a_messages_state(clf):
    """In a plain MessagesState the label travels in the messages, where route_by_label finds it."""
    graph = StateGraph(MessagesState)
    graph.add_node("classify", make_classify_node(clf, online=False))
    for name in ("heart", "sky", "kitchen"):
        graph.add_node(name, lambda state, name=name: {"messages": [AIMessage(content=f"handled by {name}")]})
        graph.add_edge(name, END)
    graph.add_edge(START, "classify")
    graph.add_conditional_edges("classify", route_by_label({"cardiology": "heart", "astronomy": "sky", "cooking": "kitchen"}))
    app = graph.compile()
    state = app.invoke({"messages": [("user", QUERIES[1][1])]})
    call, result, handled = state["messages"][1:]
    assert call.tool_calls[0]["name"] == "classify" and result.artifact["label"] == "astronomy"
    assert handled.text == "handled by sky"
    json.dumps(dumpd(state["messages"]))


def test_classify_node_needs_text(clf):
    with pytest.raises(ValueError, match="state\\['text'\\]"):
        make_classify_node(clf).invoke({})


class RagState(TypedDict, total=False):
    question: str
    documents: list[dict[str, Any]]


@pytest.fixture
def index():
    idx = VectorIndex(HashingEmbedder())
    idx.insert([
        Document(id="bees", text="Honey bees pollinate crops and live in hives ruled by a queen."),
        Document(id="rivers", text="Rivers carry sediment to the sea and shape valleys."),
    ])
    yield idx
    idx.close()


async def test_retrieve_node_over_an_index(index):
    graph = StateGraph(RagState)
    graph.add_node("retrieve", make_retrieve_node(index, k=1))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", END)
    app = graph.compile()
    state = app.invoke({"question": "Which insects live in hives?"})
    assert len(state["documents"]) == 1
    assert state["documents"][0]["provenance"]["document_ids"] == ["bees"]
    json.dumps(state)
    state = await app.ainvoke({"question": "What shapes valleys?"})
    assert state["documents"][0]["provenance"]["document_ids"] == ["rivers"]


def test_retrieve_node_accepts_a_retriever_and_checks_input(index):
    node = make_retrieve_node(index.as_retriever(), k=2, query_key="q", documents_key="hits")
    assert len(node.invoke({"q": "bees"})["hits"]) == 2
    with pytest.raises(ConfigurationError):
        make_retrieve_node(object())
    with pytest.raises(ConfigurationError):
        make_retrieve_node(index.as_retriever(), mode="global")
    with pytest.raises(ValueError):
        make_retrieve_node(index, k=0)
    with pytest.raises(ValueError):
        node.invoke({"q": ""})


class QAState(TypedDict, total=False):
    question: str
    documents: list[dict[str, Any]]
    answer: str
    citations: list[str]


def qa_graph(state: type, source, llm=None):
    graph = StateGraph(state)
    graph.add_node("retrieve", make_retrieve_node(source, k=2))
    graph.add_node("answer", make_answer_node(llm))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "answer")
    graph.add_edge("answer", END)
    return graph.compile()


def test_retrieve_and_answer_in_a_typeddict_state(index):
    state = qa_graph(QAState, index).invoke({"question": "Which insects live in hives?"})
    assert state["answer"].startswith("Honey bees pollinate crops") and state["answer"].endswith("[1]")
    assert state["citations"] == [state["documents"][0]["id"]]
    json.dumps(state)


def test_retrieve_and_answer_in_a_messages_state(index):
    state = qa_graph(MessagesState, index).invoke({"messages": [("user", "Which insects live in hives?")]})
    human, call, result, answer = state["messages"]
    assert call.tool_calls[0]["args"] == {"query": "Which insects live in hives?", "k": 2}
    assert result.tool_call_id == call.tool_calls[0]["id"] and len(result.artifact) == 2
    assert answer.response_metadata["citations"] == [result.artifact[0].id]
    assert "Sources:\n[1] " in answer.text
    json.dumps(dumpd(state["messages"]))  # messages with Documents as artifacts serialise


async def test_answer_node_streams_a_langchain_model_and_resolves_citations(index):
    llm = GenericFakeChatModel(messages=iter(["Bees live in hives [1], unlike rivers [7]."]))
    app = qa_graph(MessagesState, index, llm)
    tokens, ids, state = [], set(), None
    async for mode, data in app.astream({"messages": [("user", "Which insects live in hives?")]}, stream_mode=["messages", "values"]):
        if mode == "messages" and data[1]["langgraph_node"] == "answer":
            tokens.append(data[0].text)
            ids.add(data[0].id)
        elif mode == "values":
            state = data
    assert len(tokens) > 5 and "".join(tokens) == "Bees live in hives [1], unlike rivers [7]."
    answer = state["messages"][-1]
    assert ids == {answer.id}  # the streamed message, completed with its sources
    assert answer.response_metadata["citations"] == [state["messages"][2].artifact[0].id]  # [7] is no passage


async def test_answer_node_with_a_rhizome_model_streams_custom_events(index):
    llm = FakeChatModel(lambda messages, schema: "Honey bees [1] and, again, [1] or [2].")
    app = qa_graph(QAState, index, llm)
    pieces = [c async for c in app.astream({"question": "Which insects live in hives?"}, stream_mode="custom")]
    assert pieces and all(p["node"] == "answer" for p in pieces)
    state = await app.ainvoke({"question": "Which insects live in hives?"})
    assert state["citations"] == [d["id"] for d in state["documents"]]  # [1] then [2], each once
    assert llm.usage.calls == 2  # one call per run


def test_answer_node_needs_a_question_and_says_so():
    with pytest.raises(ValueError, match="human message"):
        make_answer_node().invoke({"messages": [AIMessage(content="hi")]})
    assert make_answer_node().invoke({"messages": [HumanMessage(content="x?")]})["answer"] == "No relevant passages were found."


def test_answer_node_with_ollama_over_the_wire_sync_and_async(index, ollama_stub, monkeypatch):
    """ChatOllama's async client binds to its first loop: sync runs use its sync API."""
    monkeypatch.setenv("OLLAMA_HOST", ollama_stub.url)
    ollama_stub.default_reply = "Honey bees live in hives [1]."
    app = qa_graph(MessagesState, index, "ollama:qwen2.5:7b")
    for _ in range(3):
        answer = app.invoke({"messages": [("user", "Which insects live in hives?")]})["messages"][-1]
        assert answer.text.startswith("Honey bees live in hives [1].") and answer.response_metadata["citations"]
    tokens = asyncio.run(_tokens(app))
    assert "".join(tokens) == "Honey bees live in hives [1]." and len(tokens) > 3
    sent = ollama_stub.calls("/api/chat")[-1]
    assert sent["stream"] is True and "Which insects live in hives?" in sent["messages"][-1]["content"]


async def _tokens(app) -> list[str]:
    out = []
    async for chunk, meta in app.astream({"messages": [("user", "Which insects live in hives?")]}, stream_mode="messages"):
        if meta["langgraph_node"] == "answer":
            out.append(chunk.text)
    return out


async def test_a_methods_json_model_calls_stay_out_of_the_message_stream():
    """stream_mode="messages" streams chat: the JSON a method asks its (LangChain) model for
    inside a node (keywords, ratings, map points) is tagged so LangGraph leaves it out."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from pydantic import BaseModel

    from rhizome.core.models.adapters import LangChainChatModel

    class Keywords(BaseModel):
        words: list[str]

    model = LangChainChatModel(FakeListChatModel(responses=['{"words": ["tarn", "school"]}', "The school stands by the tarn."]))

    async def node(state: MessagesState) -> dict:
        keywords = await model.acomplete_json("keywords of the question", Keywords)  # a method's own step
        answer = await model.acomplete(f"answer using {keywords.words}")  # chat the user reads
        return {"messages": [AIMessage(answer.text)]}

    graph = StateGraph(MessagesState)
    graph.add_node("answer", node)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    app = graph.compile()
    streamed = [message.content async for message, _ in app.astream({"messages": [("user", "Who founded the school?")]},
                                                                   stream_mode="messages")]
    text = "".join(streamed)  # the fake model streams its answers a character at a time
    assert "The school stands by the tarn." in text
    assert "words" not in text
