"""``BaseIndex``: what every method's index shares, so a method package is only its algorithm.

It owns the index directory (:class:`~rhizome.core.storage.IndexStore`), the models, chunking,
document identity (content hash: unchanged documents are skipped, changed ones replaced), input
validation before anything is stored, batched commits that make an interrupted insert resumable,
``persist`` / ``load`` / ``close``, and the sync wrappers. A method subclass sets ``method``
(and ``modes``) and implements a few hooks:

- ``async _prepare(batch)`` — the slow work for a batch of new documents, outside any
  transaction (embedding, extraction); returns whatever ``_write`` needs;
- ``_write(db, batch, prepared)`` — store it, inside the batch's transaction;
- ``_remove_document(db, document_id)`` — remove what only this document supported (call
  ``super()`` to remove its chunks and chunk vectors);
- ``async _after_change(inserted, removed)`` — work on the whole index after an insert or
  delete (re-clustering, regenerating summaries), optional;
- ``as_retriever(k, mode)`` — the retrievers.

Constructor parameters of a subclass are keyword arguments whose values are stored in the
manifest's ``parameters`` (pass them to ``super().__init__(parameters=...)``); ``load`` calls
the constructor again with them, so an index reopens with the settings it was built with.
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
from rhizome.core.errors import ConfigurationError, IndexMismatchError
from rhizome.core.progress import Progress, ProgressArg
from rhizome.core.storage import IndexStore, Manifest, read_manifest
from rhizome.core.text import Chunker
from rhizome.core.types import Chunk, Document

Batch = list[tuple[Document, list[Chunk]]]


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
    """Accept a spec string, one of our embedders, or a LangChain/LlamaIndex embedding model;
    ``None`` gives the offline :class:`~rhizome.core.embeddings.HashingEmbedder`."""
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


def resolve_llm(llm: Any) -> Any:
    """Accept ``None`` (offline steps), a spec string, one of our chat models, or a LangChain /
    LlamaIndex chat model."""
    if llm is None:
        return None
    if isinstance(llm, str):
        from rhizome.core.models.registry import make_chat_model

        return make_chat_model(llm)
    from rhizome.core.models.adapters import wrap_chat_model

    return wrap_chat_model(llm)


class BaseIndex:
    """Base class of every method's index (see the module docstring for the hooks)."""

    method: ClassVar[str] = ""
    modes: ClassVar[tuple[str, ...]] = ()
    """Retrieval modes of ``as_retriever(mode=...)``, the default first (empty: one mode)."""
    uses_llm: ClassVar[bool] = True
    """Whether indexing or retrieval calls a chat model (when one is given); the CLI only asks
    for one when this is true."""
    CHUNK_COLLECTION: ClassVar[str] = "chunks"

    def __init__(
        self,
        embedder: Any = None,
        *,
        llm: Any = None,
        path: str | Path | None = None,
        chunk_size: int = 1200,
        chunk_overlap: int = 100,
        batch_size: int = 256,
        progress: ProgressArg = False,
        parameters: dict[str, Any] | None = None,
        _store: IndexStore | None = None,
    ) -> None:
        if not self.method:
            raise ConfigurationError(f"{type(self).__name__} must set the class attribute 'method'")
        if batch_size < 1:
            raise ConfigurationError("batch_size must be at least 1")
        self.embedder = resolve_embedder(embedder)
        self.llm = resolve_llm(llm)
        self.chunker = Chunker(chunk_size, chunk_overlap)
        self.batch_size = batch_size
        self.progress = progress
        if _store is None:
            manifest = Manifest(
                method=self.method,
                models={"embedder": self.embedder.name, "llm": getattr(self.llm, "name", None)},
                parameters={"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, **(parameters or {})},
            )
            _store = IndexStore.create(path, manifest)
        self.store = _store

    # -- properties ----------------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        return self.store.path

    @property
    def offline(self) -> bool:
        """True when no chat model is configured: the method uses its offline steps."""
        return self.llm is None

    def __len__(self) -> int:
        """Number of stored chunks."""
        return self.store.count("chunks")

    # -- hooks ---------------------------------------------------------------------------------
    async def _prepare(self, batch: Batch) -> Any:
        """Slow per-batch work outside any transaction; the result goes to :meth:`_write`."""
        return None

    def _write(self, db: Any, batch: Batch, prepared: Any) -> None:
        """Store a prepared batch inside its transaction (documents and chunks are stored already)."""

    def _remove_document(self, db: Any, document_id: str) -> int:
        """Remove a document's chunks, their vectors and the document row; returns the number of
        chunks removed. Subclasses remove their own records first, then call this."""
        chunk_ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))]
        if self.store.manifest.embedding_dimension is not None:
            self.store.delete_vectors(db, self.CHUNK_COLLECTION, chunk_ids)
        db.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
        db.execute("DELETE FROM documents WHERE id = ?", (document_id,))
        return len(chunk_ids)

    async def _after_change(self, inserted: list[str], removed: list[str]) -> None:
        """Whole-index work after documents were inserted, replaced or deleted."""

    # -- helpers for subclasses ----------------------------------------------------------------
    async def embed(self, texts: Sequence[str]) -> Any:
        """Embed texts with the index's embedder, checking the dimension against the manifest."""
        vectors = await self.embedder.aembed(list(texts))
        if len(texts):
            self.check_dimension(int(vectors.shape[1]))
        return vectors

    def check_dimension(self, dimension: int) -> None:
        known = self.store.manifest.embedding_dimension
        if known is None:
            if not self.store.readonly:
                self.store.manifest.embedding_dimension = dimension
                self.store.write_manifest()
        elif known != dimension:
            raise IndexMismatchError(
                f"the index holds {known}-dimensional vectors but {self.embedder.name} gives "
                f"{dimension}; use the embedder the index was built with"
            )

    # -- writing -------------------------------------------------------------------------------
    async def ainsert(self, documents: Sequence[Any] | Any) -> InsertReport:
        """Add documents. Unchanged documents are skipped; a known id whose text or metadata
        changed replaces the old version. All input is validated first, so a bad batch stores
        nothing; each batch of ``batch_size`` chunks commits on its own, so an interrupted run
        resumes where it stopped."""
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
        with Progress(self.progress, f"indexing ({self.method})", 0, unit="chunk") as bar:
            for doc, digest, existed in todo:
                chunks = self.chunker.chunk(doc)
                pending.append((doc, digest, existed, chunks))
                n_pending += len(chunks)
                if n_pending >= self.batch_size:
                    await self._commit(pending, report, bar)
                    pending, n_pending = [], 0
            if pending:
                await self._commit(pending, report, bar)
        if report.inserted or report.replaced:
            await self._after_change(report.inserted + report.replaced, report.replaced)
        self.store.save_snapshots()
        return report

    async def _commit(
        self, pending: list[tuple[Document, str, bool, list[Chunk]]], report: InsertReport, bar: Progress
    ) -> None:
        batch: Batch = [(doc, chunks) for doc, _, _, chunks in pending]
        n_chunks = sum(len(c) for _, c in batch)
        bar.total += n_chunks
        prepared = await self._prepare(batch)
        with self.store.transaction() as db:
            for doc, digest, existed, chunks in pending:
                if existed:
                    self._remove_document(db, doc.id)
                IndexStore.put_document(db, doc, digest, "done", len(chunks))
                IndexStore.put_chunks(db, chunks)
                (report.replaced if existed else report.inserted).append(doc.id)
            self._write(db, batch, prepared)
        report.chunks += n_chunks
        report.tokens += sum(c.n_tokens for _, cs in batch for c in cs)
        bar.advance(n_chunks)

    async def adelete(self, document_ids: Sequence[str] | str) -> DeleteReport:
        """Remove documents and what only they supported. Unknown ids are reported, not raised."""
        ids = [document_ids] if isinstance(document_ids, str) else list(document_ids)
        report = DeleteReport()
        with self.store.transaction() as db:
            for doc_id in dict.fromkeys(ids):
                if self.store.document_state(doc_id) is None:
                    report.missing.append(doc_id)
                    continue
                report.chunks += self._remove_document(db, doc_id)
                report.deleted.append(doc_id)
        if report.deleted:
            await self._after_change([], report.deleted)
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
        if self.store.manifest.embedding_dimension is not None:
            self.store.collection(self.CHUNK_COLLECTION)
        self.store.copy_to(target)
        if self.store.path is None:
            old = self.store
            self.store = IndexStore.open(target, method=self.method)
            old.close()
        return target

    @classmethod
    def load(
        cls,
        path: str | Path,
        embedder: Any = None,
        *,
        llm: Any = None,
        offline: bool = False,
        readonly: bool = False,
        **options: Any,
    ) -> Any:
        """Open an index directory. Without ``embedder`` the one named in the manifest is rebuilt
        (with one, it must be the model the index was built with); the chat model is rebuilt from
        the manifest too unless ``llm`` is given, or ``offline=True`` asks for the offline steps
        (no chat model). ``options``: ``batch_size``, ``progress``."""
        unknown = set(options) - {"batch_size", "progress"}
        if unknown:
            raise ConfigurationError(
                f"{cls.__name__}.load() got unknown options {sorted(unknown)}; it accepts embedder, "
                "llm, offline, readonly, batch_size and progress"
            )
        manifest = read_manifest(path)
        resolved = _rebuild(embedder, manifest.models.get("embedder"), "embedder", resolve_embedder, path)
        chat = None if offline else _rebuild(llm, manifest.models.get("llm"), "llm", resolve_llm, path)
        store = IndexStore.open(path, method=cls.method, embedder=resolved.name, readonly=readonly)
        return cls(resolved, llm=chat, _store=store, **store.manifest.parameters, **options)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------
    def as_retriever(self, k: int = 4, mode: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def aanswer(self, question: str, *, mode: str | None = None, k: int = 4) -> Any:
        """Retrieve with ``mode`` and write an answer that cites its sources (an
        :class:`~rhizome.core.answer.Answer`), with the index's chat model or, without one,
        extractively. Methods with their own answering step (GraphRAG's reduce) override it."""
        from rhizome.core.answer import aanswer

        hits = await self.as_retriever(k=k, mode=mode).aretrieve(question)
        return await aanswer(question, hits, self.llm)

    def answer(self, question: str, *, mode: str | None = None, k: int = 4) -> Any:
        return run_sync(self.aanswer(question, mode=mode, k=k))

    def check_mode(self, mode: str | None) -> str | None:
        """The mode to use: ``None`` means the default; an unknown mode raises."""
        if mode is None:
            return self.modes[0] if self.modes else None
        if mode not in self.modes:
            choices = ", ".join(self.modes) if self.modes else "none (this method has one mode)"
            raise ConfigurationError(f"unknown mode {mode!r} for a {self.method} index; modes: {choices}")
        return mode


def _rebuild(given: Any, spec: str | None, what: str, resolve: Any, path: Any) -> Any:
    if given is not None:
        return resolve(given)
    if spec is None:
        return resolve(None)
    try:
        return resolve(spec)
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"{path} was built with the {what} {spec!r}, which cannot be rebuilt from its name; "
            f"pass the same model again as {what}=..."
        ) from exc


__all__ = [
    "Batch",
    "BaseIndex",
    "DeleteReport",
    "InsertReport",
    "document_hash",
    "resolve_embedder",
    "resolve_llm",
]
