"""The framework half of the conformance kit, for every registered method and mode: LangChain's
standard retriever suite, LangChain ``.batch`` from threads, and the LlamaIndex retriever
(retrieve, aretrieve, persist / from_persist_dir)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_rhizome import RhizomeRetriever
from llama_index.retrievers.rhizome import RhizomeRetriever as LlamaRetriever
from rhizome.core.testing import CORPUS, QUERIES, IndexConformance, cases

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
