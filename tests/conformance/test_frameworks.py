"""The framework half of the conformance kit, for every registered method and mode: LangChain's
standard retriever suite, LangChain ``.batch`` from threads, the LlamaIndex retriever
(retrieve, aretrieve, persist / from_persist_dir) and LangGraph's retrieve and answer nodes."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langgraph.graph import END, START, StateGraph
from langgraph_rhizome import make_answer_node, make_retrieve_node
from typing_extensions import TypedDict

from langchain_rhizome import RhizomeRetriever
from llama_index.retrievers.rhizome import RhizomeRetriever as LlamaRetriever
from rhizome.tools.testing import CORPUS, QUERIES, IndexConformance, cases

CASES = list(cases())


@functools.cache
def built(method: str) -> Any:
    return IndexConformance().build(method)


def _standard_suite(method: str, mode: str | None) -> type:
    class Suite(RetrieversIntegrationTests):
        @property
        def retriever_constructor(self) -> type[RhizomeRetriever]:
            return RhizomeRetriever

        @property
        def retriever_constructor_params(self) -> dict[str, Any]:
            return {"retriever": built(method).as_retriever(mode=mode), "k": 2}

        @property
        def retriever_query_example(self) -> str:
            return QUERIES[0]

    Suite.__name__ = Suite.__qualname__ = f"TestLangChainStandard_{method}_{mode or 'default'}"
    return Suite


for _method, _mode in CASES:
    _suite = _standard_suite(_method, _mode)
    globals()[_suite.__name__] = _suite


@pytest.mark.parametrize(("method", "mode"), CASES)
def test_langchain_batch_from_threads(method: str, mode: str | None) -> None:
    retriever = RhizomeRetriever.from_index(built(method), k=3, mode=mode)
    serial = [[d.id for d in retriever.invoke(q)] for q in QUERIES * 5]
    batched = retriever.batch(QUERIES * 5, config={"max_concurrency": 6})
    assert [[d.id for d in docs] for docs in batched] == serial


@pytest.mark.parametrize(("method", "mode"), CASES)
async def test_llama_index_retriever(method: str, mode: str | None, tmp_path) -> None:
    index = IndexConformance().build(method)
    retriever = LlamaRetriever.from_index(index, similarity_top_k=3, mode=mode)
    nodes = retriever.retrieve(QUERIES[1])
    assert len(nodes) == 3 and all(n.node.metadata["document_ids"] for n in nodes)
    assert [n.node.node_id for n in await retriever.aretrieve(QUERIES[1])] == [n.node.node_id for n in nodes]
    retriever.persist(tmp_path / "idx")
    llm = IndexConformance.model(method)
    reopened = LlamaRetriever.from_persist_dir(tmp_path / "idx", similarity_top_k=3, mode=mode, **({"llm": llm} if llm else {}))
    assert [n.node.node_id for n in reopened.retrieve(QUERIES[1])] == [n.node.node_id for n in nodes]
    assert {d.id for d in CORPUS} >= {n.node.metadata["document_ids"][0] for n in nodes}


class QAState(TypedDict, total=False):
    question: str
    documents: list[dict[str, Any]]
    answer: str
    citations: list[str]


@pytest.mark.parametrize(("method", "mode"), CASES)
async def test_langgraph_retrieve_and_answer_nodes(method: str, mode: str | None) -> None:
    index = built(method)
    graph = StateGraph(QAState)
    graph.add_node("retrieve", make_retrieve_node(index, k=3, mode=mode))
    graph.add_node("answer", make_answer_node(None))  # offline: the extractive answer
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "answer")
    graph.add_edge("answer", END)
    app = graph.compile()
    expected = [h.id for h in index.as_retriever(k=3, mode=mode).retrieve(QUERIES[0])]
    state = app.invoke({"question": QUERIES[0]})
    assert [d["id"] for d in state["documents"]] == expected
    assert all(d["provenance"]["document_ids"] for d in state["documents"])
    assert state["answer"] and set(state["citations"]) <= set(expected)
    again = await app.ainvoke({"question": QUERIES[0]})
    assert [d["id"] for d in again["documents"]] == expected
