"""The naive RAG baseline: chunks, one vector each, cosine top-k.

Every paper in this project compares against it, and it is the first index the integrations
wrap. It also shows the pattern later methods follow: an :class:`IndexStore` for records and
vectors, documents identified by id and content hash, work committed in batches so an
interrupted run resumes, and a retriever that returns :class:`Hit` records with provenance.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from rhizome.core.aio import run_sync
from rhizome.core.documents import coerce_documents
from rhizome.core.errors import ConfigurationError, IndexMismatchError, InvalidInputError
from rhizome.core.progress import Progress, ProgressArg
from rhizome.core.storage import IndexStore, Manifest, read_manifest
from rhizome.core.text import Chunker
from rhizome.core.types import Chunk, Document, Hit


class InsertReport(BaseModel):
    """What an insert did. Re-inserting an unchanged document skips it."""

    inserted: list[str] = Field(default_factory=list)
    replaced: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    chunks: int = 0
    tokens: int = 0


class DeleteReport(BaseModel):
    deleted: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    chunks: int = 0


def document_hash(document: Document) -> str:
    """Hash of a document's text and metadata: a changed document is re-indexed, an equal one skipped."""
    payload = json.dumps({"text": document.text, "metadata": document.metadata}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def resolve_embedder(embedder: Any) -> Any:
    """Accept a spec string, one of our embedders, or a LangChain/LlamaIndex embedding model."""
    if embedder is None:
        from rhizome.core.embeddings import HashingEmbedder

        return HashingEmbedder()
    if isinstance(embedder, str):
        from rhizome.core.models.registry import make_embedder

        return make_embedder(embedder)
    from rhizome.core.models.base import BaseEmbedder

    if isinstance(embedder, BaseEmbedder):
        return embedder
    from rhizome.core.models.adapters import wrap_embedder

    return wrap_embedder(embedder)


class VectorIndex:
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
    """

    method: ClassVar[str] = "naive"
    COLLECTION: ClassVar[str] = "chunks"

    def __init__(
        self,
        embedder: Any = None,
        *,
        path: str | Path | None = None,
        chunk_size: int = 1200,
        chunk_overlap: int = 100,
        batch_size: int = 256,
        progress: ProgressArg = False,
        _store: IndexStore | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError("batch_size must be at least 1")
        self.embedder = resolve_embedder(embedder)
        self.chunker = Chunker(chunk_size, chunk_overlap)
        self.batch_size = batch_size
        self.progress = progress
        if _store is None:
            manifest = Manifest(
                method=self.method,
                models={"embedder": self.embedder.name},
                parameters={"chunk_size": chunk_size, "chunk_overlap": chunk_overlap},
            )
            _store = IndexStore.create(path, manifest)
        self.store = _store

    @property
    def path(self) -> Path | None:
        return self.store.path

    def __len__(self) -> int:
        return self.store.count("chunks")

    # -- writing -------------------------------------------------------------------------------
    async def ainsert(self, documents: Sequence[Any] | Any) -> InsertReport:
        """Add documents. Unchanged documents are skipped; a document whose id is known but whose
        text or metadata changed replaces the old version. All input is validated first, so a
        bad batch stores nothing."""
        docs = coerce_documents(documents)
        report = InsertReport()
        todo: list[tuple[Document, str, bool]] = []
        for doc in docs:
            digest = document_hash(doc)
            state = self.store.document_state(doc.id)
            if state is not None and state[0] == digest and state[1] == "done":
                report.skipped.append(doc.id)
            else:
                todo.append((doc, digest, state is not None))
        pending: list[tuple[Document, str, bool, list[Chunk]]] = []
        n_pending = 0
        total_chunks = 0
        with Progress(self.progress, "embedding chunks", 0, unit="chunk") as bar:
            for doc, digest, existed in todo:
                chunks = self.chunker.chunk(doc)
                total_chunks += len(chunks)
                pending.append((doc, digest, existed, chunks))
                n_pending += len(chunks)
                if n_pending >= self.batch_size:
                    await self._commit(pending, report, bar)
                    pending, n_pending = [], 0
            if pending:
                await self._commit(pending, report, bar)
        self.store.save_snapshots()
        return report

    async def _commit(
        self, batch: list[tuple[Document, str, bool, list[Chunk]]], report: InsertReport, bar: Progress
    ) -> None:
        chunks = [c for *_, cs in batch for c in cs]
        bar.total += len(chunks)
        vectors = await self.embedder.aembed([c.text for c in chunks])
        self._check_dimension(vectors.shape[1] if len(chunks) else None)
        with self.store.transaction() as db:
            for doc, digest, existed, doc_chunks in batch:
                if existed:
                    self._remove_document(db, doc.id)
                IndexStore.put_document(db, doc, digest, "done", len(doc_chunks))
                IndexStore.put_chunks(db, doc_chunks)
                (report.replaced if existed else report.inserted).append(doc.id)
            if chunks:
                self.store.put_vectors(db, self.COLLECTION, [c.id for c in chunks], vectors)
        report.chunks += len(chunks)
        report.tokens += sum(c.n_tokens for c in chunks)
        bar.advance(len(chunks))

    def _check_dimension(self, dimension: int | None) -> None:
        if dimension is None:
            return
        known = self.store.manifest.embedding_dimension
        if known is None:
            self.store.manifest.embedding_dimension = dimension
            self.store.write_manifest()
        elif known != dimension:
            raise IndexMismatchError(
                f"the index holds {known}-dimensional vectors but {self.embedder.name} gives "
                f"{dimension}; use the embedder the index was built with"
            )

    def _remove_document(self, db: Any, document_id: str) -> int:
        chunk_ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))]
        self.store.delete_vectors(db, self.COLLECTION, chunk_ids)
        db.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
        db.execute("DELETE FROM documents WHERE id = ?", (document_id,))
        return len(chunk_ids)

    async def adelete(self, document_ids: Sequence[str] | str) -> DeleteReport:
        """Remove documents with their chunks and vectors. Unknown ids are reported, not raised."""
        ids = [document_ids] if isinstance(document_ids, str) else list(document_ids)
        report = DeleteReport()
        with self.store.transaction() as db:
            for doc_id in dict.fromkeys(ids):
                if self.store.document_state(doc_id) is None:
                    report.missing.append(doc_id)
                    continue
                report.chunks += self._remove_document(db, doc_id)
                report.deleted.append(doc_id)
        self.store.save_snapshots()
        return report

    def insert(self, documents: Sequence[Any] | Any) -> InsertReport:
        return run_sync(self.ainsert(documents))

    def delete(self, document_ids: Sequence[str] | str) -> DeleteReport:
        return run_sync(self.adelete(document_ids))

    # -- persistence ---------------------------------------------------------------------------
    def persist(self, path: str | Path | None = None) -> Path:
        """Save to ``path``. An in-memory index is written there and from then on lives there; a
        directory-backed index saves its snapshots (``path=None``) or writes a copy to ``path``."""
        if path is None:
            if self.store.path is None:
                raise ConfigurationError("this index lives in memory: give persist() a directory")
            self.store.save_snapshots()
            return self.store.path
        target = Path(path)
        if self.store.path is not None and target.resolve() == self.store.path.resolve():
            self.store.save_snapshots()
            return target
        self.store.collection(self.COLLECTION, self.store.manifest.embedding_dimension or self.embedder.dimension)
        self.store.copy_to(target)
        if self.store.path is None:
            old = self.store
            self.store = IndexStore.open(target, method=self.method)
            old.close()
        return target

    @classmethod
    def load(cls, path: str | Path, embedder: Any = None, *, readonly: bool = False, **options: Any) -> VectorIndex:
        """Open an index directory. Without ``embedder`` the one named in the manifest is rebuilt;
        with one, it must be the same model the index was built with."""
        unknown = set(options) - {"batch_size", "progress", "llm"}
        if unknown:
            raise ConfigurationError(
                f"VectorIndex.load() got unknown options {sorted(unknown)}; it accepts embedder, "
                "readonly, batch_size and progress"
            )
        manifest = read_manifest(path)
        if embedder is None:
            spec = manifest.models.get("embedder")
            try:
                resolved = resolve_embedder(spec)
            except ConfigurationError as exc:
                raise ConfigurationError(
                    f"{path} was built with the embedder {spec!r}, which cannot be rebuilt from its "
                    "name; pass the same embedding model again as embedder=..."
                ) from exc
        else:
            resolved = resolve_embedder(embedder)
        store = IndexStore.open(path, method=cls.method, embedder=resolved.name, readonly=readonly)
        params = store.manifest.parameters
        return cls(
            resolved,
            chunk_size=int(params.get("chunk_size", 1200)),
            chunk_overlap=int(params.get("chunk_overlap", 100)),
            _store=store,
            **{k: v for k, v in options.items() if k in ("batch_size", "progress")},
        )

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------
    def as_retriever(self, k: int = 4, **_: Any) -> VectorRetriever:
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
        vector = await self.index.embedder.aembed([query])
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


__all__ = ["DeleteReport", "InsertReport", "VectorIndex", "VectorRetriever", "document_hash"]
