"""An entity-graph method in about a hundred lines, on the kernel's entity-graph layer.

"Entity walk": the kernel's extractor (a chat model, or offline rules) finds each chunk's
entities and relations; :class:`~rhizome.core.graph.store.EntityGraphStore` folds them into
entity and relation profiles and keeps them exact under inserts and deletes (resolution,
summaries, vectors and the rows of long profiles included). A query's names are linked to the
nearest entity names, and a personalized PageRank over entities and passages, started from those
entities and from the passages nearest the query, ranks the passages. Run it:

    uv run python examples/entity_graph.py
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field

from rhizome.core.method import (
    BaseIndex,
    BaseRetriever,
    Batch,
    ChunkVectors,
    Connection,
    DescriptionSummarizer,
    EntityGraphStore,
    EntityResolver,
    ExtractionConfig,
    GraphChange,
    ModeInfo,
    Retrieval,
    Stats,
    add_counts,
    batch_chunks,
    chunk_hits,
    chunk_record,
    link_names,
    query_names,
    query_vector,
    rank_passages,
    vector_search,
)


class EntityWalkConfig(ExtractionConfig):
    """Settings, each with its default and where it comes from (chunking, extraction and
    summaries: the kernel's ExtractionConfig)."""

    dense_k: int = Field(20, ge=1)
    """Passages nearest the query that start the walk beside the linked entities (our choice)."""

    damping: float = Field(0.5, ge=0.0, lt=1.0)
    """Probability of following an edge in PageRank (HippoRAG's 0.5)."""


class EntityWalkIndex(BaseIndex[tuple[GraphChange, ChunkVectors], GraphChange]):
    method: ClassVar[str] = "entity-walk"
    modes: ClassVar[Mapping[str, ModeInfo]] = {"walk": ModeInfo("passages reached from the entities the question names", ("multi-hop", "specific"))}
    config_class = EntityWalkConfig
    config: EntityWalkConfig

    def _setup(self) -> None:
        summarizer = DescriptionSummarizer(self.llm, max_tokens=self.config.summary_max_tokens)
        self.graph = EntityGraphStore(self.store, "walk", embed=self.embed, summarizer=summarizer, resolver=EntityResolver(llm=self.llm))

    async def _prepare(self, batch: Batch, stats: Stats) -> tuple[GraphChange, ChunkVectors]:
        chunks = batch_chunks(batch)
        records = [chunk_record(x) for x in await self.extract(chunks)]
        change = await self.graph.plan(records, self.replaced_chunk_ids(batch), defer=True)
        add_counts(stats, {"entities_written": len(change.entities)})
        return change, await self.embed_chunks(chunks)

    def _write(self, db: Connection, batch: Batch, prepared: tuple[GraphChange, ChunkVectors]) -> None:
        change, (chunk_ids, vectors) = prepared
        self.graph.write(db, change)
        self.put_chunk_vectors(db, chunk_ids, vectors)

    async def _prepare_delete(self, document_ids: list[str], stats: Stats) -> GraphChange:
        return await self.graph.plan([], self.store.chunk_ids(document_ids))

    def _write_delete(self, db: Connection, document_ids: list[str], prepared: GraphChange) -> None:
        self.graph.write(db, prepared)

    def _remove_document(self, db: Connection, document_id: str) -> int:
        self.graph.forget_chunks(db, self.store.chunk_ids([document_id]))
        return super()._remove_document(db, document_id)

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        stats["summaries"] = await self.graph.settle()  # profiles an insert call left waiting

    def _retriever(self, mode: str | None, k: int | None, **options: Any) -> WalkRetriever:
        return WalkRetriever(self, k, **options)


class WalkRetriever(BaseRetriever):
    mode = "walk"

    async def _asearch(self, query: str, k: int) -> Retrieval:
        index, names = self.index, query_names(query)
        vectors = await query_vector(index, query, names)
        if vectors is None:  # nothing indexed yet
            return Retrieval(query=query, hits=[])
        dense = vector_search(index.store, index.CHUNK_COLLECTION, vectors[:1], index.config.dense_k)
        seeds = await link_names(index, index.graph.name_collection, vectors[1:])
        graph = index.derived("evidence", index.graph.generations(), index.graph.evidence_graph)
        ranked = rank_passages(graph, seeds, dense, damping=index.config.damping, limit=k)
        return Retrieval(query=query, hits=chunk_hits(index, ranked), stats={"linked_entities": len(seeds)})


if __name__ == "__main__":
    from rhizome.core.documents import load_path
    from rhizome.rag.cli import sample_corpus

    index = EntityWalkIndex(chunk_size=200, chunk_overlap=20)
    print(index.insert(load_path(sample_corpus())).stats)
    for hit in index.as_retriever(k=3).retrieve("Who kept the Oskel lighthouse?"):
        print(f"{hit.score:.3f} {hit.metadata.get('title')}: {hit.text[:80]}")
