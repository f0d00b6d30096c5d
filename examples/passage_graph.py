"""A new method in about eighty lines: the walkthrough of docs/architecture.md.

"Passage graph": passages linked to their nearest neighbours by embedding, searched with a
personalized PageRank that starts from the passages most similar to the query, so passages close
to several good matches rise. Everything else (storage, resuming, reopening, the retrieval
contract, LangChain and LlamaIndex) comes from the kernel. Run it:

    uv run python examples/passage_graph.py
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from rhizome.core.method import (
    BaseIndex,
    BaseRetriever,
    Batch,
    Connection,
    IndexConfig,
    ModeInfo,
    Retrieval,
    RetrieverParams,
    Stats,
    VectorBatch,
    batch_chunks,
    chunk_hits,
    knn_similarity_pairs,
    pagerank_scores,
    query_vector,
    vector_search,
)


class PassageGraphConfig(IndexConfig):
    """Settings, each with its default and where it comes from."""

    neighbours: int = Field(5, ge=1)
    """Nearest passages linked to each passage (our choice for this example)."""

    threshold: float = Field(0.3, ge=-1.0, le=1.0)
    """Lowest cosine similarity that makes a link."""

    damping: float = Field(0.5, ge=0.0, lt=1.0)
    """Probability of following a link in PageRank (HippoRAG's 0.5)."""


class Link(BaseModel):
    """One stored record: a link between two passages."""

    id: str
    source: str
    target: str
    weight: float


class PassageGraphIndex(BaseIndex[VectorBatch, None]):
    method: ClassVar[str] = "passage-graph"
    modes: ClassVar[Mapping[str, ModeInfo]] = {"ppr": ModeInfo("passages close to several of the passages nearest the query", ("specific",))}
    config_class = PassageGraphConfig
    config: PassageGraphConfig
    uses_llm: ClassVar[bool] = False

    def _setup(self) -> None:
        self.links = self.store.table("passage_links", Link, lookups=("source",))

    async def _prepare(self, batch: Batch, stats: Stats) -> VectorBatch:
        return await self.embed_changed(self.CHUNK_COLLECTION, {c.id: c.text for c in batch_chunks(batch)})

    def _write(self, db: Connection, batch: Batch, prepared: VectorBatch) -> None:
        prepared.write(db, self.store)

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        ids = self.store.vector_ids(self.CHUNK_COLLECTION)
        vectors = self.store.collection(self.CHUNK_COLLECTION).vectors(ids)
        pairs = knn_similarity_pairs(ids, vectors, k=self.config.neighbours, threshold=self.config.threshold) if len(ids) > 1 else []
        with self.store.transaction() as db:
            self.links.delete(db, self.links.keys())
            self.links.put(db, [Link(id=f"{a}|{b}", source=a, target=b, weight=w) for a, b, w in pairs])
        stats["links"] = len(pairs)

    def _retriever(self, mode: str | None, k: int | None, **options: Any) -> PageRankRetriever:
        return PageRankRetriever(self, k, **options)


class PageRankParams(RetrieverParams):
    """The mode's settings (``index.as_retriever(seeds=8)``), checked when the retriever is made."""

    seeds: int = Field(5, ge=1)
    """Passages nearest the query that the walk starts from."""


class PageRankRetriever(BaseRetriever):
    mode = "ppr"
    params_class = PageRankParams
    params: PageRankParams

    async def _asearch(self, query: str, k: int) -> Retrieval:
        import networkx as nx

        vector = await query_vector(self.index, query)
        start = vector_search(self.index.store, self.index.CHUNK_COLLECTION, vector, self.params.seeds)
        graph = nx.Graph()
        graph.add_nodes_from(cid for cid, _ in start)
        graph.add_weighted_edges_from((link.source, link.target, link.weight) for link in self.index.links.all())
        seeds = {cid: max(score, 1e-6) for cid, score in start}
        scores = pagerank_scores(graph, seeds, damping=self.index.config.damping) if seeds else {}
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return Retrieval(query=query, hits=chunk_hits(self.index, ranked), stats={"seeds": len(seeds)})


if __name__ == "__main__":
    from rhizome.rag.cli import sample_corpus
    from rhizome.tools.loaders import load_path

    index = PassageGraphIndex(chunk_size=200, chunk_overlap=20)
    print(index.insert(load_path(sample_corpus())).stats)
    for hit in index.as_retriever(k=3).retrieve("Who kept the Oskel lighthouse?"):
        print(f"{hit.score:.3f} {hit.metadata.get('title')}: {hit.text[:80]}")
