"""The naive RAG baseline: chunks, one vector each, cosine top-k.

Every paper in this project compares against it, and it is the first index the integrations
wrap. It is also the smallest example of a method built on :class:`~rhizome.core.index.base.BaseIndex`
and :class:`~rhizome.core.retrieval.contract.BaseRetriever`: embed the chunks of each batch, store their
vectors, search them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rhizome.core.index.base import BaseIndex, Batch, ChunkVectors, ModeInfo, Stats, batch_chunks
from rhizome.core.retrieval.contract import (
    BaseRetriever,
    Retrieval,
    chunk_hits,
    query_vector,
    vector_search,
)
from rhizome.core.store.storage import Connection

NAIVE = ModeInfo("the passages whose embeddings are nearest the query (no graph)", ("specific",), retriever="rhizome.core.naive:VectorRetriever")
"""The ``naive`` mode a graph method offers beside its own: dense retrieval over the same passages."""


class VectorIndex(BaseIndex[ChunkVectors, None]):
    """Naive RAG: documents → token chunks → embeddings → exact cosine search.

    Settings (:class:`~rhizome.core.index.config.IndexConfig`): ``chunk_size`` / ``chunk_overlap``,
    default 1,200 / 100 tokens, the chunks GraphRAG and LightRAG use, so baselines see the same
    text units. See :class:`~rhizome.core.index.base.BaseIndex` for the other parameters; ``llm`` is
    used only by :meth:`answer`.
    """

    method: ClassVar[str] = "naive"
    uses_llm: ClassVar[bool] = False
    mode_info: ClassVar[Mapping[str | None, ModeInfo]] = {
        None: ModeInfo(
            "the passages whose embeddings are nearest the query; for a question whose words are in the answer's passage",
            ("specific",), retriever="rhizome.core.naive:VectorRetriever",
        ),
    }

    async def _prepare(self, batch: Batch, stats: Stats) -> ChunkVectors:
        return await self.embed_chunks(batch_chunks(batch))

    def _write(self, db: Connection, batch: Batch, prepared: ChunkVectors) -> None:
        self.put_chunk_vectors(db, *prepared)


class VectorRetriever(BaseRetriever):
    """Top-``k`` chunks by cosine similarity of their embeddings to the query's (over the
    chunk vectors of any index)."""

    mode = "naive"

    async def _asearch(self, query: str, k: int) -> Retrieval:
        vector = await query_vector(self.index, query)
        ranked = vector_search(self.index.store, self.index.CHUNK_COLLECTION, vector, k)
        return Retrieval(query=query, hits=chunk_hits(self.index, ranked))


__all__ = [
    "NAIVE","VectorIndex", "VectorRetriever"]
