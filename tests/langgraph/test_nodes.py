"""LangGraph nodes: classify + conditional routing, and retrieve over a Rhizome index."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph_rhizome import make_classify_node, make_retrieve_node, route_by_label

from rhizome.core import HashingEmbedder, VectorIndex
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
    with pytest.raises(ValueError, match="no route"):
        route_by_label({"a": "n1"})({"label": "b"})
    with pytest.raises(TypeError):
        make_classify_node(object())


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
    with pytest.raises(TypeError):
        make_retrieve_node(object())
    with pytest.raises(ValueError):
        make_retrieve_node(index, k=0)
    with pytest.raises(ValueError):
        node.invoke({"q": ""})
