"""LangChain's standard retriever conformance suite, run against RhizomeRetriever over an
in-test retriever (protocol only) and over the real naive VectorIndex."""

from __future__ import annotations

import functools
from typing import Any

from _integration_toys import CORPUS, QUERY, ToyRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_rhizome import RhizomeRetriever


@functools.cache
def _vector_retriever() -> Any:
    from rhizome.core.models.embeddings import HashingEmbedder
    from rhizome.core.naive import VectorIndex

    index = VectorIndex(HashingEmbedder(dimension=256), chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    return index.as_retriever()


class TestRhizomeRetrieverOverProtocol(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RhizomeRetriever]:
        return RhizomeRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"retriever": ToyRetriever(CORPUS), "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestRhizomeRetrieverOverVectorIndex(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RhizomeRetriever]:
        return RhizomeRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"retriever": _vector_retriever(), "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return QUERY
