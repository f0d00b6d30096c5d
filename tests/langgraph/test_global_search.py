"""Global search as a LangGraph graph: one Send branch per batch, concurrent, reduced by score
under a token budget; GraphRAG's global mode through it; both state shapes."""

from __future__ import annotations

import asyncio
import json
from typing import Any, TypedDict

import pytest
from langchain_core.load import dumpd
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph_rhizome import create_global_search_graph, make_answer_node

from rhizome.core import ConfigurationError, VectorIndex
from rhizome.core.retrieval.contract import MapPlan, MapReduceSearch
from rhizome.core.text import count_tokens
from rhizome.core.types import Hit, Provenance
from tests.langgraph.conftest import GLOBAL


class Scripted(MapReduceSearch):
    """``batches`` branches; batch ``i`` gives points scored ``(i + 1) * 10 + j`` whose text is
    ``words`` words long. Every branch waits until all have started, so the graph finishes only
    when they run at the same time."""

    fill = False

    def __init__(self, batches: int, words: int = 5) -> None:
        super().__init__(index=VectorIndex(), k=50)  # an empty index: nothing to top up with
        self.n, self.words = batches, words
        self.started = 0
        self.all_started: asyncio.Event | None = None

    async def aplan(self, query: str) -> MapPlan:
        self.all_started = asyncio.Event()
        return MapPlan(batches=[[f"group-{i}"] for i in range(self.n)], stats={"groups": self.n})

    async def amap(self, query: str, batch: Any, k: int) -> list[Hit]:
        i = int(batch[0].split("-")[1])
        self.started += 1
        if self.started == self.n:
            self.all_started.set()
        await asyncio.wait_for(self.all_started.wait(), timeout=10)  # deadlocks unless concurrent
        return [
            Hit(id=f"p{i}-{j}", text=" ".join([f"point{i}x{j}"] * self.words), score=(i + 1) * 10 + j, kind="point",
                provenance=Provenance(document_ids=[f"doc-{i}"]))
            for j in range(3)
        ][:k]


async def test_branches_run_concurrently_and_the_reduce_keeps_the_best_within_budget():
    search = Scripted(batches=4, words=5)
    per_point = count_tokens(" ".join(["point3x2"] * 5)) + 1
    app = create_global_search_graph(search, k=10, max_tokens=3 * per_point + 1)
    updates = [u async for u in app.astream({"question": "anything"}, stream_mode="updates")]
    assert [next(iter(u)) for u in updates].count("map") == 4  # one branch per batch
    state = updates[-1]["reduce"]
    kept = [d["id"] for d in state["documents"]]
    assert kept == ["p3-2", "p3-1", "p3-0"]  # the three best of all twelve; a fourth does not fit
    all_points = sorted((f"p{i}-{j}" for i in range(4) for j in range(3)), key=lambda p: -(int(p[1]) + 1) * 10 - int(p[3]))
    assert kept == all_points[:3]


async def test_a_plan_without_batches_goes_straight_to_the_reduce():
    app = create_global_search_graph(Scripted(batches=0))
    state = await app.ainvoke({"question": "anything"})
    assert state["documents"] == [] and state["plan"]["batches"] == []


def test_graphrag_global_search_as_a_graph_matches_the_retriever(islands):
    index = islands["islands_graph"]
    app = create_global_search_graph(index, k=5)
    state = app.invoke({"question": GLOBAL})
    expected = index.as_retriever(mode="global", k=5).retrieve(GLOBAL)
    assert any(h.kind == "point" for h in expected) and [Hit.model_validate(d) for d in state["documents"]] == expected
    json.dumps(state)  # plan, points and documents are plain JSON
    again = app.invoke({"question": GLOBAL, "points": state["points"]})  # a new search starts empty
    assert again["documents"] == state["documents"]


def test_the_graph_applies_the_retrievers_filter_and_k_as_its_search_does(islands):
    index = islands["islands_graph"]
    sources = sorted({m["source"] for m in index.store.documents_metadata(index.store.document_ids()).values()})
    wanted = {"source": {"$in": sources[:3]}}
    allowed = {d for d, m in index.store.documents_metadata(index.store.document_ids()).items() if m["source"] in sources[:3]}
    retriever = index.as_retriever(mode="global", k=5, filter=wanted)
    expected = retriever.retrieve(GLOBAL)
    state = create_global_search_graph(retriever, k=5).invoke({"question": GLOBAL})
    found = [Hit.model_validate(d) for d in state["documents"]]
    assert found == expected and found  # every hit the retriever gives, and only those
    assert all(set(h.provenance.document_ids) <= allowed for h in found)
    assert all(h.metadata.get("source") in sources[:3] for h in found if len(h.provenance.document_ids) == 1)


class Renamed(TypedDict, total=False):
    q: str
    found: list[dict[str, Any]]


def test_custom_keys_and_a_messages_state(islands):
    index = islands["islands_graph"]
    state = create_global_search_graph(index, k=3, query_key="q", documents_key="found").invoke({"q": GLOBAL})
    assert len(state["found"]) == 3

    graph = StateGraph(MessagesState)
    graph.add_node("global_search", create_global_search_graph(index, k=3))
    graph.add_node("answer", make_answer_node())
    graph.add_edge(START, "global_search")
    graph.add_edge("global_search", "answer")
    graph.add_edge("answer", END)
    messages = graph.compile().invoke({"messages": [("user", GLOBAL)]})["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"]
    assert messages[1].tool_calls[0]["name"] == "global_search" and len(messages[2].artifact) == 3
    assert messages[3].response_metadata["citations"]
    json.dumps(dumpd(messages))


def test_an_index_without_a_map_reduce_mode_is_refused(islands):
    with pytest.raises(ConfigurationError, match="map-reduce"):
        create_global_search_graph(VectorIndex())
    with pytest.raises(ConfigurationError, match="not a map-reduce search"):
        create_global_search_graph(islands["islands_graph"], mode="local")
