"""The naive RAG baseline: chunks, one vector each, cosine top-k.

Every paper in this project compares against it, and it is the first index the integrations
wrap. It is also the smallest example of a method built on :class:`~rhizome.core.index.BaseIndex`:
embed the chunks of each batch, store their vectors, search them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rhizome.core.aio import run_sync
from rhizome.core.errors import IndexMismatchError, InvalidInputError
from rhizome.core.index import (
    BaseIndex,
    Batch,
    DeleteReport,
    InsertReport,
    document_hash,
    resolve_embedder,
)
from rhizome.core.types import Hit


class VectorIndex(BaseIndex):
    """Naive RAG: documents → token chunks → embeddings → exact cosine search.

    Parameters
    ----------
    embedder:
        Any embedder (ours, LangChain's or LlamaIndex's) or a spec such as
        ``"ollama:nomic-embed-text"``; default: the offline :class:`HashingEmbedder`.
    path:
        Directory of the index; ``None`` keeps it in memory until :meth:`persist`.
    chunk_size, chunk_overlap:
        Tokens per chunk and tokens shared by neighbours. Default 1,200 / 100, the chunks
        LightRAG's naive mode and GraphRAG use, so baselines see the same text units.
    batch_size:
        Chunks embedded and committed per transaction; an interruption loses at most one batch.
    progress:
        ``True`` for a progress bar, or a callable ``(stage, done, total)``.
    llm:
        Not used for retrieval (only by :meth:`answer`); every method shares one constructor.
    """

    method: ClassVar[str] = "naive"
    uses_llm: ClassVar[bool] = False
    COLLECTION: ClassVar[str] = BaseIndex.CHUNK_COLLECTION

    async def _prepare(self, batch: Batch) -> Any:
        chunks = [c for _, cs in batch for c in cs]
        return [c.id for c in chunks], await self.embed([c.text for c in chunks])

    def _write(self, db: Any, batch: Batch, prepared: Any) -> None:
        ids, vectors = prepared
        if ids:
            self.store.put_vectors(db, self.COLLECTION, ids, vectors)

    def as_retriever(self, k: int = 4, mode: str | None = None, **_: Any) -> VectorRetriever:
        self.check_mode(mode)
        return VectorRetriever(self, k=k)


class VectorRetriever:
    """Top-``k`` chunks by cosine similarity of their embeddings to the query's."""

    def __init__(self, index: VectorIndex, k: int = 4) -> None:
        _check_k(k)
        self.index = index
        self.k = k

    async def aretrieve(self, query: str, k: int | None = None) -> list[Hit]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("the query must be a non-empty string")
        k = _check_k(self.k if k is None else k)
        store = self.index.store
        if store.manifest.embedding_dimension is None:  # nothing was ever embedded
            return []
        vector = await self.index.embedder.aembed_query([query])
        known = store.manifest.embedding_dimension
        if known is not None and known != vector.shape[1]:
            raise IndexMismatchError(
                f"the index holds {known}-dimensional vectors but {self.index.embedder.name} gives "
                f"{vector.shape[1]}; query with the embedder the index was built with"
            )
        ranked = store.collection(VectorIndex.COLLECTION, vector.shape[1]).search(vector, k)[0]
        chunks = store.chunks([chunk_id for chunk_id, _ in ranked])
        hits = []
        for chunk_id, score in ranked:
            chunk = chunks.get(chunk_id)
            if chunk is None:  # deleted by a concurrent writer since the snapshot was taken
                continue
            metadata: dict[str, Any] = {"document_id": chunk.document_id, "chunk_index": chunk.index}
            if "title" in chunk.metadata:
                metadata["title"] = chunk.metadata["title"]
            hits.append(
                Hit(id=chunk.id, text=chunk.text, score=score, kind="chunk", provenance=chunk.provenance(), metadata=metadata)
            )
        return hits

    def retrieve(self, query: str, k: int | None = None) -> list[Hit]:
        return run_sync(self.aretrieve(query, k))


def _check_k(k: int) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidInputError(f"k must be a positive integer, got {k!r}")
    return k


__all__ = [
    "DeleteReport",
    "InsertReport",
    "VectorIndex",
    "VectorRetriever",
    "document_hash",
    "resolve_embedder",
]
