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
    BaseRetriever,
    EntityGraphIndex,
    EntityResolver,
    ExtractionConfig,
    ModeInfo,
    Retrieval,
    chunk_hits,
    link_names,
    open_entity_graph,
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


class EntityWalkIndex(EntityGraphIndex):
    """Insert and delete are the layer's (EntityGraphIndex): a batch's records are folded onto
    the profiles in its transaction, a delete folds again what its chunks supported."""

    method: ClassVar[str] = "entity-walk"
    modes: ClassVar[Mapping[str, ModeInfo]] = {"walk": ModeInfo("passages reached from the entities the question names", ("multi-hop", "specific"))}
    config_class = EntityWalkConfig
    config: EntityWalkConfig

    def _setup(self) -> None:
        self.entity_graph = open_entity_graph(self, "walk", resolver=EntityResolver(llm=self.llm), resolution=True)

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
        seeds = await link_names(index, index.entity_graph.name_collection, vectors[1:])
        ranked = rank_passages(index.evidence(), seeds, dense, damping=index.config.damping, limit=k)
        return Retrieval(query=query, hits=chunk_hits(index, ranked), stats={"linked_entities": len(seeds)})


if __name__ == "__main__":
    from rhizome.rag.cli import sample_corpus
    from rhizome.tools.loaders import load_path

    index = EntityWalkIndex(chunk_size=200, chunk_overlap=20)
    print(index.insert(load_path(sample_corpus())).stats)
    for hit in index.as_retriever(k=3).retrieve("Who kept the Oskel lighthouse?"):
        print(f"{hit.score:.3f} {hit.metadata.get('title')}: {hit.text[:80]}")
