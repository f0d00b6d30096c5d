"""``BaseIndex``: what every method's index shares, so a method package is only its algorithm.

It owns the index directory (:class:`~rhizome.core.store.storage.IndexStore`), the configuration
(:mod:`rhizome.core.index.config`), the models and their call cache, chunking, the extraction choice,
document identity (content hash: unchanged documents are skipped, changed ones replaced), input
validation before anything is stored, batched commits that make an interrupted insert
resumable, a writer lock that serialises inserts and deletes across threads and event loops,
``persist`` / ``load`` / ``close``, answering, and the sync wrappers.

A method subclass sets ``method``, ``modes`` and ``config_class`` and implements a few hooks:

- ``_setup()`` — declare record tables and build helpers (called at the end of ``__init__``);
- ``async _prepare(batch, stats)`` — the slow work for a batch of new documents, outside any
  transaction (embedding, extraction); returns whatever ``_write`` needs;
- ``_write(db, batch, prepared)`` — store it, inside the batch's transaction;
- ``async _prepare_delete(document_ids, stats)`` / ``_write_delete(db, document_ids, prepared)``
  — the same two steps for a delete (optional);
- ``_remove_document(db, document_id)`` — remove what only this document supported (call
  ``super()`` to remove its chunks and chunk vectors);
- ``async _after_change(inserted, removed, stats)`` — work on the whole index after documents
  changed (re-clustering, summaries); an interrupted one is finished by the next call;
- ``_retriever(mode, k, **options)`` — the retriever of one mode
  (a :class:`~rhizome.core.retrieval.contract.BaseRetriever`);
- ``_answer_inputs(retrieval)`` — optional: the hits and wording of the method's answers (used
  by ``answer`` and its streamed form); ``_answer(question, retrieval)`` for an answering step
  of its own;
- ``graph_contents()`` — optional: the entities, relations and communities the method built
  (kernel records), which ``rhizome export``, the demo and the index summary show.

``stats`` is a plain dict of counters that ends up in the call's report.

Opening. ``SomeIndex(path=d)`` creates an index in ``d``, or opens the one there: of the same
method, with the same embedder (rebuilt from the manifest when none is given) and its stored
configuration (a setting passed explicitly must agree with it). ``SomeIndex.load(d)`` also
rebuilds the chat model from the manifest; ``readonly=True`` opens for queries beside a writer.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import logging
import os
import secrets
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

from pydantic import BaseModel, Field, ValidationError

from rhizome.core import memory
from rhizome.core.aio import iterate_sync, run_sync
from rhizome.core.documents import coerce_documents, lone_surrogate
from rhizome.core.errors import (
    ConfigurationError,
    IndexCorruptError,
    IndexFormatError,
    IndexMismatchError,
    InvalidInputError,
    ModelError,
    ModelNotFoundError,
    ModelOutputError,
    ModelUnavailableError,
    fails_alone,
)
from rhizome.core.index.config import RUNTIME_FIELDS, IndexConfig, build_config
from rhizome.core.index.heap import full_collections_deferred
from rhizome.core.models.base import EMBEDDING_FIX, checked_vectors, usage_scope, varied_sampling
from rhizome.core.progress import ProgressArg, Reporter, phase, quietly, reporting
from rhizome.core.store.cache import built_from, needs_cache, with_cache
from rhizome.core.store.storage import (
    Connection,
    IndexStore,
    Manifest,
    as_location,
    has_index,
    is_url,
    read_manifest,
    shown,
)
from rhizome.core.text import Chunker
from rhizome.core.types import Chunk, Document

if TYPE_CHECKING:
    from rhizome.core.extraction import Extraction
    from rhizome.core.retrieval.contract import BaseRetriever

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Saved(Protocol):
    """A derived value an index directory can keep as arrays (:meth:`BaseIndex.derived`)."""

    def to_arrays(self) -> dict[str, Any]:
        """The value as named numpy arrays (no Python objects: they are read back without pickle)."""
        ...

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any]) -> Any:
        """The value :meth:`to_arrays` gave these arrays for."""
        ...


ChunkVectors = tuple[list[str], Any]
"""Chunk ids and their embeddings, rows in order (:meth:`BaseIndex.embed_chunks`)."""
P = TypeVar("P")
"""What a method's :meth:`BaseIndex._prepare` hands to its :meth:`BaseIndex._write`."""
D = TypeVar("D")
"""What a method's :meth:`BaseIndex._prepare_delete` hands to its :meth:`BaseIndex._write_delete`."""

Batch = list[tuple[Document, list[Chunk]]]
Stats = dict[str, Any]


def batch_chunks(batch: Batch) -> list[Chunk]:
    """Every chunk of an insert batch, document by document, in order."""
    return [c for _, chunks in batch for c in chunks]


def add_counts(stats: Stats, counts: Mapping[str, int]) -> None:
    """Add ``counts`` to an insert's or a delete's running ``stats`` (what a batch did adds to
    what the batches before it did)."""
    for key, value in counts.items():
        stats[key] = stats.get(key, 0) + value


CACHE_FILE = "model-calls.sqlite"
"""The cache file under ``$RHIZOME_CACHE_DIR`` (and in an index directory)."""
EMBED_SLICE = 512
"""Texts :meth:`BaseIndex.embed` hands the embedder at a time, so its progress moves (the
embedder batches and parallelises within a slice)."""
RUNTIME_OPTIONS = ("batch_size", "progress", "cache", "extraction", "workers")
"""What ``load()`` accepts besides the models: settings of this session, not of the index
(``extraction`` only to pass an extractor object again, ``workers`` to fan extraction out
over Ray, see :mod:`rhizome.core.extraction.parallel`); see also
:data:`~rhizome.core.store.storage.LOAD_OPTIONS`."""


QUESTION_KINDS = ("specific", "multi-hop", "global")
"""The kinds of question a retrieval mode may suit: ``specific`` — facts about named things
(who, what, when); ``multi-hop`` — facts reached through an intermediate (a bridge entity, a
comparison of two things); ``global`` — themes, trends and summaries across the corpus."""


@dataclass(frozen=True)
class ModeInfo:
    """One retrieval mode: what it is for, for a person or an agent choosing a mode — its
    ``purpose`` (one sentence) and the question kinds it ``suits`` (of :data:`QUESTION_KINDS`),
    the kind it serves best first — and what runs it: ``retriever``, a
    :class:`~rhizome.core.retrieval.contract.BaseRetriever` class or its ``"module:Class"`` path
    (imported on first use, so a method's package loads without its search code), built as
    ``retriever(index, k, **options, **the caller's options)``."""

    purpose: str
    suits: tuple[str, ...] = ()
    retriever: str | type | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def retriever_class(self) -> type[BaseRetriever]:
        """The class that runs the mode (imported now when named by path); its
        ``params_class`` is the model of the mode's settings."""
        cls = self.retriever
        if cls is None:
            raise NotImplementedError("this mode names no retriever: the index builds it in _retriever")
        if isinstance(cls, str):
            module, _, name = cls.partition(":")
            cls = getattr(importlib.import_module(module), name)
        return cast("type[BaseRetriever]", cls)

    def build(self, index: Any, k: int | None, **options: Any) -> BaseRetriever:
        """The mode's retriever over ``index``."""
        return self.retriever_class()(index, k, **self.options, **options)  # an option given twice is a TypeError

    def __post_init__(self) -> None:
        unknown = [k for k in self.suits if k not in QUESTION_KINDS]
        if unknown or not self.purpose.strip():
            raise ConfigurationError(
                f"a ModeInfo needs a purpose and question kinds among {QUESTION_KINDS}; got "
                f"{self.purpose!r}, {self.suits!r}"
            )


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


@dataclass
class VectorBatch:
    """Vectors to store in one collection (see :meth:`BaseIndex.embed_changed`)."""

    collection: str
    ids: list[str]
    vectors: Any
    digests: list[str]

    def write(self, db: Connection, store: IndexStore) -> None:
        if self.ids:
            store.put_vectors(db, self.collection, self.ids, self.vectors, self.digests)


class InsertReport(BaseModel):
    """What an insert did. Re-inserting an unchanged document skips it, unless its stored text
    was damaged (``restored``)."""

    inserted: list[str] = Field(default_factory=list)
    replaced: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    restored: list[str] = Field(default_factory=list)
    """Unchanged documents stored again because a chunk of theirs in the index was damaged
    (changed outside Rhizome, or not UTF-8): also in :attr:`replaced` once stored."""
    failed: dict[str, str] = Field(default_factory=dict)
    """Documents not stored, by id, with the reason: their model answers stayed invalid after
    the retries, including one more try with varied sampling (or were refused), a prompt did
    not fit the context window, or the server was still busy or failing after the transport
    retries. The rest of the insert went on; inserting them again retries only them, with
    sampling varied anew. A server that cannot serve (no answer in time,
    unreachable) is no document's failure: it stops the insert
    (:func:`~rhizome.core.errors.fails_alone`)."""
    fallback: list[str] = Field(default_factory=list)
    """Documents stored with offline extraction because their model answers stayed invalid
    (``ainsert(..., fallback="offline")``); deleting and inserting one again asks the model."""
    chunks: int = 0
    tokens: int = 0
    unfinished: str | None = None
    """Why the whole-index work after the change (GraphRAG's communities and reports) did not
    finish, when a model answer in it stayed invalid or the server kept failing: the documents
    are stored, :attr:`BaseIndex.needs_refresh` is true and the next insert, delete or refresh
    finishes the work, paying only for what was not yet answered."""
    stats: Stats = Field(default_factory=dict)
    """Counters of the call: the models' (``model_calls``, ``prompt_tokens``...) and the
    method's (entities written, summaries, reports...)."""


def failure_reason(exc: BaseException) -> str:
    """A failure as one line for a report or a status row: the error's type and message (an
    error raised without one, such as a cancellation, says what happened instead)."""
    message = " ".join(str(exc).split())
    if not message:
        message = ("cancelled before it finished (the run was interrupted or timed out)" if isinstance(exc, asyncio.CancelledError)
                   else "raised without a message")
    return f"{type(exc).__name__}: {message}"[:500]


PENDING_FORGET = "pending_forget"
"""The meta key of the documents whose cached answers a delete has yet to forget (written in
its transaction, cleared once the caches have forgotten them)."""


class DeleteReport(BaseModel):
    deleted: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    chunks: int = 0
    unfinished: str | None = None
    """As :attr:`InsertReport.unfinished`: the whole-index work after the delete did not finish."""
    forgotten: int = 0
    """Model-call cache entries removed with the documents (``purge_cache``)."""
    stats: Stats = Field(default_factory=dict)


def document_hash(document: Document) -> str:
    """Hash of a document's text and metadata: a changed document is re-indexed, an equal one skipped."""
    payload = json.dumps({"text": document.text, "metadata": document.metadata}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def resolve_embedder(embedder: Any) -> Any:
    """Accept a spec string, one of our embedders, or a LangChain/LlamaIndex embedding model;
    ``None`` gives the offline :class:`~rhizome.core.models.embeddings.HashingEmbedder`."""
    if embedder is None:
        from rhizome.core.models.embeddings import HashingEmbedder

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


def default_cache(store: IndexStore) -> Any:
    """The model-call cache an index uses unless told otherwise: ``$RHIZOME_CACHE_DIR``, else
    the index's own (a file in its directory, a table of its database; writable indexes),
    else memory."""
    from rhizome.core.store.cache import ModelCache

    if os.environ.get("RHIZOME_CACHE_DIR"):
        return ModelCache(Path(os.environ["RHIZOME_CACHE_DIR"]) / CACHE_FILE)
    return store.model_cache()


class BaseIndex(Generic[P, D]):
    """Base class of every method's index (see the module docstring for the hooks), generic in
    what its insert and delete plan outside their transactions and write inside them
    (``class MyIndex(BaseIndex[MyPlan, MyRemoval])``).

    Parameters
    ----------
    embedder:
        Any embedder (ours, LangChain's or LlamaIndex's) or a spec such as
        ``"ollama:nomic-embed-text"``; default: the offline hashing embedder, or, for an existing
        index, the one it was built with.
    llm:
        Chat model (object or spec) for the steps that use one; ``None`` runs the offline steps.
    path:
        Index directory, or a ``postgresql://`` URL (see :mod:`rhizome.core.store.storage`): created,
        or opened when it holds an index; ``None`` keeps the index in memory until
        :meth:`persist`.
    config:
        The method's configuration object (or a dict); keyword settings override its fields.
    cache:
        ``True`` (default): model calls are cached (see :func:`default_cache`); ``False``: not;
        or a :class:`~rhizome.core.store.cache.ModelCache`.
    batch_size:
        Chunks prepared and committed per transaction; an interruption loses at most one batch.
    progress:
        ``True`` for a progress bar, or a callable ``(stage, done, total)``.
    readonly:
        Open an existing index for queries only (beside a writer in another process).
    workers:
        Fan extraction out over Ray: a number of local workers, or a
        :class:`~rhizome.core.extraction.parallel.RayWorkers` (cluster address, Ollama hosts); ``None``
        extracts in this process. Needs ``rhizome-core[ray]``.
    **settings:
        Fields of the method's configuration (e.g. ``chunk_size=600``).
    """

    method: ClassVar[str] = ""
    modes: ClassVar[Mapping[str, ModeInfo]] = {}
    """The retrieval modes of ``as_retriever(mode=...)`` by name, the default first, each with
    what it is for and the retriever that runs it (empty: one mode, :attr:`mode_info`); read
    through :meth:`describe_modes`, which tool descriptions and question routers use."""
    mode_info: ClassVar[Mapping[str | None, ModeInfo]] = {}
    """A method with one mode: what it is for, under the key ``None``."""
    config_class: ClassVar[type[IndexConfig]] = IndexConfig
    uses_llm: ClassVar[bool] = True
    """Whether indexing or retrieval calls a chat model (when one is given); the CLI only asks
    for one when this is true."""
    llm_per_document: ClassVar[bool] = True
    """Whether the chat model works on each document as it is stored (extraction), so that a
    document whose answers stay invalid fails alone (``InsertReport.failed``). ``False`` when
    the model only writes whole-index structure after a change (RAPTOR's cluster summaries):
    such an answer then leaves the change unfinished (``InsertReport.unfinished``) instead."""
    CHUNK_COLLECTION: ClassVar[str] = "chunks"

    def __init__(
        self,
        embedder: Any = None,
        *,
        llm: Any = None,
        path: str | Path | None = None,
        config: IndexConfig | dict[str, Any] | None = None,
        cache: Any = True,
        batch_size: int = 256,
        progress: ProgressArg = False,
        readonly: bool = False,
        workers: Any = None,
        **settings: Any,
    ) -> None:
        if not self.method:
            raise ConfigurationError(f"{type(self).__name__} must set the class attribute 'method'")
        if batch_size < 1:
            raise ConfigurationError("batch_size must be at least 1")
        unknown = set(settings) - set(self.config_class.model_fields)
        if unknown:
            raise ConfigurationError(
                f"{type(self).__name__} got unknown settings {sorted(unknown)}; its settings are "
                f"{', '.join(self.config_class.model_fields)} (see {self.config_class.__name__})"
            )
        if path is not None:
            path = as_location(path)
        existing = read_manifest(path) if path is not None and has_index(path) else None
        if existing is not None and existing.method != self.method:
            raise IndexMismatchError(
                f"{shown(path)} holds a {existing.method!r} index, not a {self.method!r} one; open it with "
                "rhizome.core.store.storage.load_index(), or choose another directory"
            )
        if embedder is None and existing is not None:
            embedder = _rebuild(existing.models.get("embedder"), "embedder", resolve_embedder, path)
        self.embedder = resolve_embedder(embedder)
        self.llm = resolve_llm(llm)
        self._extractor = None
        self._extracting_offline = False
        if "extraction" in settings and not isinstance(settings["extraction"], str):
            from rhizome.core.extraction.spec import spec_of

            self._extractor = settings["extraction"]
            settings["extraction"] = spec_of(self._extractor, self.llm)
        if existing is not None:
            self.config = self._stored_config(existing, config, settings)
            self.store = IndexStore.open(path, method=self.method, embedder=self.embedder.name, readonly=readonly)  # type: ignore[arg-type]
        else:
            self.config = self._resolved(build_config(self.config_class, config, settings))
            manifest = Manifest(
                method=self.method,
                models={"embedder": self.embedder.name, "llm": getattr(self.llm, "name", None)},
                config=self.config.model_dump(mode="json", exclude=set(RUNTIME_FIELDS)),
            )
            self.store = IndexStore.open_or_create(path, manifest, readonly=readonly)
        self.chunker = Chunker(self.config.chunk_size, self.config.chunk_overlap)
        self.memory_budget = memory.budget_bytes(self.config.memory_gb)
        """The budget of this index's writes in bytes (``None``: none); see :mod:`rhizome.core.memory`."""
        self.batch_size = batch_size
        self.progress = progress
        self._attach_cache(cache)
        from rhizome.core.extraction.parallel import as_workers

        self.workers = as_workers(workers)
        self._distributed: Any = None
        self._derived: dict[str, tuple[Hashable, Any]] = {}
        self._setup()

    def _resolved(self, config: IndexConfig) -> IndexConfig:
        """A new index's config with ``extraction="auto"`` resolved against the chat model."""
        if getattr(config, "extraction", None) == "auto":
            from rhizome.core.extraction.spec import spec_of

            return config.model_copy(update={"extraction": spec_of("auto", self.llm)})
        return config

    def _stored_config(self, manifest: Manifest, config: Any, settings: dict[str, Any]) -> IndexConfig:
        try:
            stored = self.config_class.model_validate(manifest.config)
        except ValidationError as exc:
            raise IndexFormatError(f"the configuration stored in this {self.method} index is not valid: {exc}") from exc
        given = {**(config.model_dump() if isinstance(config, BaseModel) else dict(config or {})), **settings}
        asked = self._resolved(build_config(self.config_class, stored, given))
        differ = [
            f"{name}={getattr(stored, name)!r} (asked {getattr(asked, name)!r})"
            for name in given
            if getattr(asked, name) != getattr(stored, name) and not (name == "extraction" and given[name] == "auto")
            and name not in RUNTIME_FIELDS
        ]
        if differ:
            raise ConfigurationError(
                f"this {self.method} index was built with {', '.join(differ)}; open it without "
                "those settings, or build a new index in another directory"
            )
        return stored.model_copy(update={name: getattr(asked, name) for name in RUNTIME_FIELDS})

    def _attach_cache(self, cache: Any) -> None:
        """Give the models a call cache: ``cache`` itself, or with ``True`` the index's own
        (:func:`default_cache`) for each model that has none. A model gets the index's own as a
        copy of its own, so one model object shared by two indexes caches into each's store (the
        first one's cache, in memory say, would otherwise stay with the model)."""
        if cache is False or cache is None:
            return
        if cache is True:
            if not (needs_cache(self.llm) or needs_cache(self.embedder)):
                return
            cache = default_cache(self.store)
            self.llm, self.embedder = with_cache(self.llm, cache), with_cache(self.embedder, cache)
            return
        for model in (self.llm, self.embedder):
            if hasattr(model, "cache") and getattr(model, "cacheable", True):
                model.cache = cache

    # -- properties ----------------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        """The index directory (``None`` for an index in memory or in a database: see :attr:`location`); kept after :meth:`close`."""
        return self._opened_store.path

    @property
    def location(self) -> str | Path | None:
        """Where the index lives: its directory, its ``postgresql://`` URL, or ``None`` (memory); kept after :meth:`close`, to open it again."""
        return self._opened_store.location

    @property
    def offline(self) -> bool:
        """True when no chat model is configured: the method uses its offline steps."""
        return self.llm is None

    def __len__(self) -> int:
        """Number of stored chunks."""
        return self.store.count("chunks")

    @property
    def needs_refresh(self) -> bool:
        """True when an insert or delete was cut short before its whole-index work finished
        (the next insert, delete or :meth:`refresh` finishes it)."""
        return bool(self.store.get_meta("pending_change", False))

    @property
    def extractor(self) -> Any:
        """The extractor of ``config.extraction`` (methods that extract); with :attr:`workers`,
        wrapped so that its model calls fan out over Ray (same records, see
        :mod:`rhizome.core.extraction.parallel`)."""
        if self._extractor is None:
            from rhizome.core.extraction.spec import make_extractor

            spec = getattr(self.config, "extraction", None)
            if spec is None:
                raise ConfigurationError(f"a {self.method} index does not extract entities")
            self._extractor = make_extractor(spec, self.llm, **self.extractor_options())
        if self.workers is None:
            return self._extractor
        if self._distributed is None or self._distributed.inner is not self._extractor:
            self._distributed = self.workers.distribute(self._extractor)
        return self._distributed

    async def extract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """One :class:`~rhizome.core.extraction.Extraction` per chunk, in the chunks' order, with
        :attr:`extractor` (an empty one where it found nothing)."""
        from rhizome.core.extraction import Extraction

        if not chunks:
            return []
        extractor = self._offline_extractor() if self._extracting_offline else self.extractor
        found = {e.chunk_id: e for e in await extractor.aextract(list(chunks))}
        return [found.get(c.id) or Extraction(chunk_id=c.id) for c in chunks]

    def _offline_extractor(self) -> Any:
        """The offline extractor with this method's settings: what a document falls back to."""
        from rhizome.core.extraction.spec import make_extractor

        return make_extractor("offline", None, **self.extractor_options())

    def extractor_options(self) -> dict[str, Any]:
        """``llm_options`` and ``offline_options`` for :func:`~rhizome.core.extraction.spec.make_extractor`."""
        options = getattr(self.config, "llm_extractor_options", None)
        return {"llm_options": options() if options else {}}

    # -- hooks ---------------------------------------------------------------------------------
    def graph_contents(self) -> Any:
        """The method's entities, relations and communities as a
        :class:`~rhizome.core.types.GraphContents` (default: none, an index of passages only);
        what ``rhizome export`` writes beside documents and chunks and the demo summarises."""
        from rhizome.core.types import GraphContents

        return GraphContents()

    def _setup(self) -> None:
        """Declare record tables and build helpers; called at the end of ``__init__``."""

    async def _prepare(self, batch: Batch, stats: Stats) -> P:
        """Slow per-batch work outside any transaction; the result goes to :meth:`_write`
        (default: nothing)."""
        return cast(P, None)

    def _write(self, db: Connection, batch: Batch, prepared: P) -> None:
        """Store a prepared batch inside its transaction (documents and chunks are stored already)."""

    async def _prepare_delete(self, document_ids: list[str], stats: Stats) -> D:
        """Slow work before a delete's transaction; the result goes to :meth:`_write_delete`
        (default: nothing)."""
        return cast(D, None)

    def _write_delete(self, db: Connection, document_ids: list[str], prepared: D) -> None:
        """Store the consequences of a delete, inside its transaction, after the documents'
        :meth:`_remove_document`."""

    def _remove_document(self, db: Connection, document_id: str) -> int:
        """Remove a document's chunks, their vectors and the document row; returns the number of
        chunks removed. Subclasses remove their own records first, then call this."""
        chunk_ids = IndexStore.chunk_ids_in(db, document_id)
        if self.store.embedding_dimension is not None:
            self.store.delete_vectors(db, self.CHUNK_COLLECTION, chunk_ids)
        IndexStore.remove_document_rows(db, document_id)
        return len(chunk_ids)

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        """Whole-index work after documents were inserted, replaced or deleted."""

    def _mode(self, mode: str | None) -> ModeInfo | None:
        """The declaration of ``mode``: one of :attr:`modes`, or for a method with one mode
        (``None``) its :attr:`mode_info`."""
        return self.modes.get(mode) if mode is not None else self.mode_info.get(None)

    def _retriever(self, mode: str | None, k: int | None, **options: Any) -> BaseRetriever:
        """The retriever of ``mode`` (checked), as its :class:`ModeInfo` builds it; a method whose
        modes name no retriever builds them here."""
        info = self._mode(mode)
        if info is None:
            raise NotImplementedError(f"{type(self).__name__} declares no retriever for mode {mode!r}")
        return info.build(self, k, **options)

    # -- helpers for subclasses ----------------------------------------------------------------
    def replaced_chunk_ids(self, batch: Batch) -> list[str]:
        """The stored chunks of those of the batch's documents that are stored already: an
        insert of a known document id replaces the document, and these are the chunks its new
        ones replace (for :meth:`_prepare` to plan what records built from them must lose in
        the same transaction)."""
        return self.store.chunk_ids([doc.id for doc, _ in batch if self.store.document_state(doc.id) is not None])

    async def embed(self, texts: Sequence[str], what: str = "texts") -> Any:
        """Embed texts with the index's embedder, checking the dimension against the manifest
        (shown as the progress phase ``embedding <what>``, a slice of texts at a time)."""
        texts = list(texts)
        if not texts:
            return await self.embedder.aembed(texts)
        import numpy as np

        vectors = None
        with phase(f"embedding {what}", len(texts), "text") as step:
            for start in range(0, len(texts), EMBED_SLICE):
                piece = texts[start : start + EMBED_SLICE]
                known = None if vectors is None else int(vectors.shape[1])  # every slice as long as the first
                part = checked_vectors(await self.embedder.aembed(piece), len(piece), known, self.embedder.name)
                if vectors is None:  # filled slice by slice: stacking the slices would hold every vector twice
                    memory.require(f"embedding {len(texts):,} {what}", len(texts) * part.shape[1] * part.dtype.itemsize,
                                   "insert fewer documents at a time (a smaller batch_size)")
                    vectors = np.empty((len(texts), part.shape[1]), dtype=part.dtype)
                vectors[start : start + len(part)] = part
                step.advance(len(part))
        assert vectors is not None  # texts is not empty
        self.check_dimension(int(vectors.shape[1]))
        return vectors

    async def embed_chunks(self, chunks: Sequence[Chunk]) -> ChunkVectors:
        """The chunks' ids and the embeddings of their texts: the rows of the chunk collection
        (:meth:`put_chunk_vectors`)."""
        return [c.id for c in chunks], await self.embed([c.text for c in chunks], what="chunks")

    def put_chunk_vectors(self, db: Connection, ids: list[str], vectors: Any) -> None:
        """Store chunk embeddings in the chunk collection, inside a write transaction (nothing
        for no chunks)."""
        if ids:
            self.store.put_vectors(db, self.CHUNK_COLLECTION, ids, vectors)

    def derived(self, name: str, key: Hashable, build: Callable[[], T], *, saved: type[Saved] | None = None) -> T:
        """A value a method builds from its stored records (an in-memory graph, a matrix),
        kept until ``key`` changes: pass the generations of the tables it is built from, and
        let ``build`` read everything it uses. A value read before the key (another derived
        value included) may be older than the key: a write committed in between would leave it
        cached as current.

        ``saved``: the value's class when it can be kept as arrays (:class:`Saved`, as
        :class:`~rhizome.core.retrieval.evidence.EvidenceGraph`): an index directory then keeps
        what a writable open built (``graphs/<name>.npz``, under ``key``, the index's id and
        the records' :meth:`~rhizome.core.store.storage.IndexStore.state`), and any later
        process that finds the records as they were reads it instead of building it (an open's
        first query of a large index spends most of its time building its graphs)."""
        held = self._derived.get(name)
        if held is None or held[0] != key:
            if saved is not None and self.store.keeps_arrays:
                value = self._saved_or_built(name, key, build, saved)
            else:
                value = build()
            held = self._derived[name] = (key, value)
        return held[1]

    def prepare_queries(self) -> None:
        """Build the graphs this method's queries walk, so that an index directory keeps them
        (:meth:`derived` with ``saved``) and the first query of every process that opens it
        later reads them instead of building them; ``rhizome index`` calls it after a write.
        What a writable open's first query would do anyway; nothing for a method without such
        graphs."""

    def _saved_or_built(self, name: str, key: Hashable, build: Callable[[], T], saved: type[Saved]) -> T:
        stamp = [key, self.store.state()]
        arrays = self.store.saved_arrays(name, stamp)
        if arrays is not None:
            try:
                return cast(T, saved.from_arrays(arrays))
            except Exception as exc:  # damaged inside, or of another version: built again
                logger.info("the saved %s of %s could not be used (%s); it is built again from the records", name, self.store.location, exc)
        value = build()
        if not self.store.readonly and self.store.state() == stamp[1]:  # no write landed while it was built
            self.store.save_arrays(name, stamp, cast(Saved, value).to_arrays)
        return value

    def check_dimension(self, dimension: int) -> None:
        """The embedder's ``dimension`` against the manifest's (recorded on the first vectors).
        When they differ, the records say which is wrong: vectors stored with the embedder's
        dimension mean the manifest was edited (``rhizome repair`` restores it from the
        records), else the embedder is not the one the index was built with."""
        known = self.store.manifest.embedding_dimension
        if known is None:
            if not self.store.readonly:
                self.store.manifest.embedding_dimension = dimension
                self.store.write_manifest()
        elif known != dimension:
            if self.store._stored_dimension() == dimension:
                where = shown(self.store.location) if self.store.location is not None else "the index"
                raise IndexCorruptError(
                    f"the manifest of {where} says {known}-dimensional vectors but its records hold "
                    f"{dimension}-dimensional ones, as {self.embedder.name} gives: the manifest was changed outside "
                    f"Rhizome; run `rhizome repair {where}` to restore it from the records"
                )
            if getattr(self.embedder, "dimension", None) == known:  # the embedder's own length: this answer is broken
                raise ModelOutputError(f"{self.embedder.name} returned {dimension}-dimensional vectors, expected {known}; {EMBEDDING_FIX}")
            raise IndexMismatchError(
                f"the index holds {known}-dimensional vectors but {self.embedder.name} gives "
                f"{dimension}; use the embedder the index was built with"
            )

    async def embed_changed(self, collection: str, texts: Mapping[str, str], what: str | None = None) -> VectorBatch:
        """Vectors for the ``texts`` (by id) whose stored vector in ``collection`` was made from
        other text or is missing: only what changed is embedded again (the progress phase
        ``embedding <what>``, by default the collection's name)."""
        held = self.store.vector_digests(collection, texts)
        ids = [key for key, text in texts.items() if held.get(key) != text_digest(text)]
        vectors = await self.embed([texts[i] for i in ids], what=what or collection) if ids else None
        return VectorBatch(collection, ids, vectors, [text_digest(texts[i]) for i in ids])

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """What every write holds: the store's write lock, with full garbage collections
        deferred until it ends (:mod:`rhizome.core.index.heap`)."""
        while True:
            store = self.store
            async with store.write_lock:
                if store is self.store:  # else persist() moved the index while this waited
                    with full_collections_deferred(), memory.budget_scope(self.memory_budget):
                        yield
                    return

    @property
    def _tracks_changes(self) -> bool:
        return type(self)._after_change is not BaseIndex._after_change

    # -- writing -------------------------------------------------------------------------------
    async def ainsert(self, documents: Sequence[Any] | Any, *, fallback: str | None = None) -> InsertReport:
        """Add documents. Unchanged documents are skipped (unless their stored text was damaged:
        ``report.restored``); a known id whose text or metadata changed replaces the old version. All input is validated first, so a bad batch stores
        nothing; each batch of ``batch_size`` chunks commits on its own, so an interrupted run
        resumes where it stopped. A document whose model work fails after the retries is tried
        once more with varied sampling (:func:`~rhizome.core.models.base.varied_sampling`),
        then, with ``fallback="offline"`` in a method that extracts, once with offline
        extraction (``report.fallback``); otherwise it is recorded as failed
        (``report.failed``, :meth:`IndexStore.statuses`) and the others go on; inserting it
        again retries it. A server that cannot serve (no answer in time, unreachable, lacking
        the model) stops the insert with its error: the batches stored stay, the others are
        stored by a re-run. Inserts and deletes on one index are serialised."""
        docs = coerce_documents(documents)
        self._check_fallback(fallback)
        report = InsertReport()
        async with self._writing():
            self._finish_forget()  # left by a delete cut short after its commit
            with usage_scope() as usage:
                todo: list[tuple[Document, str, bool]] = []
                same: list[tuple[Document, str]] = []
                for doc in docs:
                    digest = document_hash(doc)
                    state = self.store.document_state(doc.id)
                    if state is not None and state[0] == digest and state[1] == "done":
                        same.append((doc, digest))
                    else:
                        todo.append((doc, digest, state is not None))
                # an unchanged document whose stored text was damaged is stored again from this copy
                damaged = self.store.damaged_documents(doc.id for doc, _ in same) if same else set()
                report.skipped += [doc.id for doc, _ in same if doc.id not in damaged]
                report.restored += [doc.id for doc, _ in same if doc.id in damaged]
                todo += [(doc, digest, True) for doc, digest in same if doc.id in damaged]
                if todo:
                    with self.store.transaction() as db:
                        IndexStore.set_status(db, [(doc.id, digest) for doc, digest, _ in todo], "pending")
                title = f"{self.method}: indexing {len(todo)} new or changed document{'' if len(todo) == 1 else 's'}"
                with reporting(self.progress if todo or self.needs_refresh else False, title) as run:
                    with phase("chunking", len(todo), "document") as step:
                        chunked = []
                        for doc, digest, existed in todo:
                            chunked.append((doc, digest, existed, self.chunker.chunk(doc)))
                            step.advance()
                    if run is not None:
                        run.run.add(sum(len(c) for *_, c in chunked))
                    pending: list[tuple[Document, str, bool, list[Chunk]]] = []
                    n_pending = 0
                    for item in chunked:
                        pending.append(item)
                        n_pending += len(item[3])
                        if n_pending >= self.batch_size:
                            await self._commit(pending, report, run, fallback)
                            pending, n_pending = [], 0
                    if pending:
                        await self._commit(pending, report, run, fallback)
                    report.unfinished = await self._finish_change(report.inserted + report.replaced, report.replaced, report.stats)
                    self.store.save_snapshots()
            report.stats.update(usage.stats())
        return report

    async def _commit(self, pending: list[tuple[Document, str, bool, list[Chunk]]], report: InsertReport, run: Reporter | None,
                      fallback: str | None) -> None:
        """Store one batch. When a document's model work fails after the retries
        (:func:`fails_alone`), the batch is split in halves, each stored on its own (and
        split again while it fails; answers already paid for come from the model cache), so a
        document that fails alone is tried again (:meth:`_store_alone_again`, with ``fallback``
        as :meth:`ainsert` got it), then recorded as ``failed`` with the reason and the rest are
        stored, at about twice the batch's work rather than once per document. A server that
        cannot serve (no answer in time, unreachable, lacking the model) is no document's
        failure: it is raised at once, unsplit, and the batch stays for a re-run (``pending``,
        with the reason)."""
        n_chunks = sum(len(c) for *_, c in pending)
        with self.store.transaction() as db:
            IndexStore.set_status(db, [(doc.id, digest) for doc, digest, _, _ in pending], "processing")
        try:
            await self._store_or_split(pending, report, fallback)
        except BaseException as exc:
            reason = f"the insert stopped before this document was stored ({failure_reason(exc)}); the next insert retries it"
            with suppress(Exception), self.store.transaction() as db:  # the store itself may be what failed
                IndexStore.requeue(db, [doc.id for doc, *_ in pending], reason)
            raise
        if run is not None:
            run.advance_run(n_chunks)

    def _check_fallback(self, fallback: str | None) -> None:
        if fallback not in (None, "offline"):
            raise ConfigurationError(f"fallback must be None or 'offline', got {fallback!r}")
        if fallback is not None and getattr(self.config, "extraction", None) is None:
            raise ConfigurationError(
                f"fallback='offline' replaces a failed document's model extraction, and a {self.method} index "
                "does not extract entities: leave it out"
            )

    async def _store_or_split(self, pending: list[tuple[Document, str, bool, list[Chunk]]], report: InsertReport,
                              fallback: str | None) -> None:
        try:
            await self._store(pending, report)
        except Exception as exc:
            if not fails_alone(exc):
                raise
            if len(pending) == 1:
                await self._store_alone_again(pending[0], exc, report, fallback)
                return
            half = len(pending) // 2
            with quietly(f"  a document of this batch of {len(pending)} failed ({type(exc).__name__}); "
                         "storing the others in smaller batches to find it"):
                await self._store_or_split(pending[:half], report, fallback)
                await self._store_or_split(pending[half:], report, fallback)

    async def _store(self, pending: list[tuple[Document, str, bool, list[Chunk]]], report: InsertReport) -> None:
        batch: Batch = [(doc, chunks) for doc, _, _, chunks in pending]
        memory.require(f"inserting a batch of {len(batch):,} documents", 0,
                       "insert fewer documents at a time (a smaller batch_size), build in a directory or on PostgreSQL")
        with built_from(doc.id for doc, _ in batch):  # what the model says now is about these (forget_cached)
            prepared = await self._prepare(batch, report.stats)
        with self.store.transaction() as db:
            for doc, digest, existed, chunks in pending:
                if existed:
                    self._remove_document(db, doc.id)
                IndexStore.put_document(db, doc, digest, "done", len(chunks))
                IndexStore.put_chunks(db, chunks)
                (report.replaced if existed else report.inserted).append(doc.id)
            IndexStore.clear_status(db, [doc.id for doc, *_ in pending])
            self._write(db, batch, prepared)
            if self._tracks_changes:
                IndexStore.set_meta(db, "pending_change", True)
        report.chunks += sum(len(c) for _, c in batch)
        report.tokens += sum(c.n_tokens for c in batch_chunks(batch))

    async def _store_alone_again(self, item: tuple[Document, str, bool, list[Chunk]], exc: Exception, report: InsertReport,
                                 fallback: str | None) -> None:
        """A document whose model work failed alone: once more with varied sampling (a fresh
        random seed, so each run tries another: at temperature 0 with a fixed seed the model
        would give the same invalid answer on every run); then, when the insert allows it,
        with offline extraction; else it is recorded as failed with the last reason."""
        with varied_sampling(secrets.randbelow(2**31 - 2) + 1):
            try:
                await self._store([item], report)
                return
            except Exception as again:
                if not fails_alone(again):
                    raise
                exc = again
        if fallback == "offline" and getattr(self.config, "extraction", None) != "offline":
            self._extracting_offline = True
            try:
                await self._store([item], report)
            except Exception as again:
                if not fails_alone(again):
                    raise
                exc = again
            else:
                report.fallback.append(item[0].id)
                return
            finally:
                self._extracting_offline = False
        self._fail(item, exc, report)

    def _fail(self, item: tuple[Document, str, bool, list[Chunk]], exc: BaseException, report: InsertReport) -> None:
        doc, digest, _, _ = item
        reason = failure_reason(exc)
        with self.store.transaction() as db:
            IndexStore.set_status(db, [(doc.id, digest)], "failed", reason)
        report.failed[doc.id] = reason

    async def _finish_change(self, inserted: list[str], removed: list[str], stats: Stats, *, isolate: bool = True) -> str | None:
        """Run :meth:`_after_change` when documents changed now or an earlier run was cut short.
        With ``isolate``, a model failure in it does not fail the call that stored the
        documents: the work stays pending and the reason is returned. An invalid answer or a
        failing server (:func:`fails_alone` or not) stops the work alike — the documents are
        stored either way — except a server that cannot be reached or lacks the model, which
        stops every call."""
        if not self._tracks_changes or not (inserted or removed or self.store.get_meta("pending_change", False)):
            return None
        try:
            await self._after_change(inserted, removed, stats)
        except Exception as exc:
            if not (isolate and isinstance(exc, ModelError)) or isinstance(exc, ModelUnavailableError | ModelNotFoundError):
                raise
            return failure_reason(exc)
        with self.store.transaction() as db:
            IndexStore.set_meta(db, "pending_change", False)
        return None

    async def adelete(self, document_ids: Sequence[str] | str, *, purge_cache: bool = True) -> DeleteReport:
        """Remove documents and what only they supported. Unknown ids are reported, not raised
        (an id that is not valid Unicode cannot be stored, so it is unknown); anything but an id
        or ids is an :class:`InvalidInputError`. With ``purge_cache`` (the default), the model
        answers cached about them go too (:meth:`forget_cached`; ``report.forgotten``)."""
        ids = _document_ids(document_ids)
        report = DeleteReport()
        async with self._writing():
            report.forgotten = self._finish_forget()  # left by a delete cut short after its commit
            present, stored = [], []
            for doc_id in dict.fromkeys(ids):
                if lone_surrogate(doc_id) is not None:  # never stored: unknown
                    report.missing.append(doc_id)
                elif self.store.document_state(doc_id) is not None:
                    present.append(doc_id)
                else:
                    report.missing.append(doc_id)
                    stored.append(doc_id)
            # the title counts what is deleted: unknown ids are reported after, not announced
            title = f"{self.method}: deleting {len(present)} document{'' if len(present) == 1 else 's'}"
            with usage_scope() as usage, reporting(self.progress if present else False, title):
                if stored:  # a failed or interrupted version leaves only its status
                    with self.store.transaction() as db:
                        IndexStore.clear_status(db, stored)
                if present:
                    prepared = await self._prepare_delete(present, report.stats)
                    with self.store.transaction() as db:
                        IndexStore.clear_status(db, present)
                        for doc_id in present:
                            report.chunks += self._remove_document(db, doc_id)
                            report.deleted.append(doc_id)
                        self._write_delete(db, present, prepared)
                        if self._tracks_changes:
                            IndexStore.set_meta(db, "pending_change", True)
                        if purge_cache:  # with the records: a delete cut short after its commit forgets them next time
                            IndexStore.set_meta(db, PENDING_FORGET, [*self.store.get_meta(PENDING_FORGET, []), *present])
                report.forgotten += self._finish_forget()
                report.unfinished = await self._finish_change([], report.deleted, report.stats)
                self.store.save_snapshots()
            report.stats.update(usage.stats())
        return report

    async def arefresh(self) -> Stats:
        """Finish whole-index work an interrupted insert or delete left undone (nothing to do when
        the index is up to date); returns the counters of what it did."""
        stats: Stats = {}
        async with self._writing():
            self._finish_forget()  # left by a delete cut short after its commit
            with reporting(self.progress if self.needs_refresh else False, f"{self.method}: finishing the whole-index work"):
                await self._finish_change([], [], stats, isolate=False)
            self.store.save_snapshots()
        return stats

    def insert(self, documents: Sequence[Any] | Any, *, fallback: str | None = None) -> InsertReport:
        return run_sync(self.ainsert(documents, fallback=fallback))

    def delete(self, document_ids: Sequence[str] | str, *, purge_cache: bool = True) -> DeleteReport:
        return run_sync(self.adelete(document_ids, purge_cache=purge_cache))

    def _finish_forget(self) -> int:
        """Forget the cached answers about the documents a delete removed (:data:`PENDING_FORGET`,
        written with its records), after the commit: answers paid before it (in
        ``_prepare_delete``) stay for a delete cut short and run again, and before the whole-index
        work after it, whose new answers a re-run reuses. Returns how many entries went."""
        pending = self.store.get_meta(PENDING_FORGET, []) if not self.store.readonly else []
        if not pending:
            return 0
        forgotten = self.forget_cached(pending)
        with self.store.transaction() as db:
            IndexStore.set_meta(db, PENDING_FORGET, [])
        return forgotten

    def forget_cached(self, document_ids: Sequence[str]) -> int:
        """Remove from the model-call caches the answers whose prompts were built from
        ``document_ids`` or may have been (whole-index work, queries: see
        :mod:`rhizome.core.store.cache`): the caches of the index's models and the index's own
        (its directory's file, its database's table). Returns how many entries went. A cache
        the models used when the documents were indexed but do not use now is not reached:
        delete with the same cache."""
        caches = [getattr(model, "cache", None) for model in (self.llm, self.embedder)]
        if not self.store.readonly and self.store.location is not None and self.store.has_model_cache():
            caches.append(self.store.model_cache())
        seen: dict[Any, Any] = {}
        for cache in caches:
            if cache is not None and hasattr(cache, "forget"):
                seen.setdefault(cache.identity(), cache)
        return sum(cache.forget(document_ids) for cache in seen.values())

    def refresh(self) -> Stats:
        return run_sync(self.arefresh())

    # -- persistence ---------------------------------------------------------------------------
    def persist(self, path: str | Path | None = None) -> Any:
        """Save to ``path`` (a directory or a ``postgresql://`` URL). An in-memory index is
        written there and from then on lives there; an index that has a location saves its
        snapshots (``path=None``) or writes a copy to ``path``. Writes wait while it saves (and
        then go to the new location); searches go on."""
        return run_sync(self._apersist(path))

    async def _apersist(self, path: str | Path | None) -> Any:
        async with self._writing():
            return self._persist(path)

    def _persist(self, path: str | Path | None) -> Any:
        if path is None:
            if self.store.location is None:
                raise ConfigurationError("this index lives in memory: give persist() a directory or a database URL")
            self.store.save_snapshots()
            return self.store.location
        target = as_location(path)
        if self.store.location is not None and _same_location(target, self.store.location):
            self.store.save_snapshots()
            return target
        self.store.copy_to(target)
        if self.store.location is None:
            # the in-memory store is left to searches still reading it (it holds the same
            # records), and closes when the last of them lets it go
            self.store = IndexStore.open(target, method=self.method)
            self._derived = {}
            self._setup()
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
        (no chat model). ``options``: ``batch_size``, ``progress``, ``cache``, and
        ``extraction`` to pass a custom extractor object again."""
        unknown = set(options) - set(RUNTIME_OPTIONS)
        if unknown:
            raise ConfigurationError(
                f"{cls.__name__}.load() got unknown options {sorted(unknown)}; it accepts embedder, "
                f"llm, offline, readonly and {', '.join(RUNTIME_OPTIONS)}"
            )
        manifest = read_manifest(path)
        if manifest.method != cls.method:
            raise IndexMismatchError(
                f"{shown(path)} is a {manifest.method!r} index, not {cls.method!r}; open it with "
                f"rhizome.core.store.storage.load_index() or the {manifest.method} package"
            )
        chat = None if offline else (llm if llm is not None else _rebuild(manifest.models.get("llm"), "llm", resolve_llm, path))
        return cls(embedder, llm=chat, path=path, readonly=readonly, **options)

    _closed = False

    @property
    def store(self) -> IndexStore:
        """Where the index lives (:class:`IndexStore`); a closed index raises
        :class:`IndexClosedError`, which says how to open it again."""
        self._check_open()
        return self._opened_store

    @store.setter
    def store(self, store: IndexStore) -> None:
        store.out_of_core.add(self.CHUNK_COLLECTION)  # large, and searched only for its nearest few
        self._opened_store = store

    def _check_open(self) -> None:
        if self._closed:
            raise self._opened_store.closed_error()

    def close(self) -> None:
        """Let the index go (the store, with the writer lock, closes when the last index object
        sharing it closes). Closing again does nothing; using a closed index raises
        :class:`IndexClosedError`."""
        if not self._closed:
            self._closed = True
            self._opened_store.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------
    def check_mode(self, mode: str | None) -> str | None:
        """The mode to use: ``None`` means the default; an unknown mode raises."""
        if mode is None:
            return next(iter(self.modes), None)
        if mode not in self.modes:
            choices = ", ".join(self.modes) if self.modes else "none (this method has one mode)"
            raise ConfigurationError(f"unknown mode {mode!r} for a {self.method} index; modes: {choices}")
        return mode

    def describe_modes(self) -> dict[str | None, ModeInfo]:
        """What each retrieval mode is for, in ``modes`` order (one entry, keyed ``None``, for a
        method with one mode). A mode the method does not describe in ``mode_info`` gets the
        first line of its retriever's docstring and suits no question kind in particular."""
        out: dict[str | None, ModeInfo] = {}
        for mode in self.modes or (None,):
            info = self._mode(mode)
            if info is None:
                doc = (type(self._retriever(mode, None)).__doc__ or "").strip()
                info = ModeInfo(doc.split("\n\n")[0].replace("\n", " ") or f"{self.method} retrieval")
            out[mode] = info
        return out

    def as_retriever(self, k: int | None = None, mode: str | None = None, *, filter: Any = None, **options: Any) -> BaseRetriever:
        """The retriever of ``mode`` (default: the first of ``modes``), returning ``k`` hits;
        ``filter`` restricts it to documents whose metadata matches (``{"year": {"$gt": 1900}}``,
        ``$or``, ``$contains`` ..., see :mod:`rhizome.core.retrieval.filters`; every mode honours
        it or raises); ``reranker`` reranks its hits, of ``rerank_candidates`` asked for (see
        :mod:`rhizome.core.retrieval.rerank`); ``score_threshold`` (in ``[0, 1]``) leaves out
        the hits whose score — the relevance every mode's hits carry, see
        :func:`~rhizome.core.retrieval.contract.relevance` — is below it, after the ranking, so
        a search may return fewer than ``k``; ``options`` are the mode's own settings, the fields of its retriever's ``params_class`` (listed by
        ``index.modes[mode].retriever_class().params_class.model_json_schema()``)."""
        from rhizome.core.retrieval.contract import check_score_threshold
        from rhizome.core.retrieval.filters import as_filter
        from rhizome.core.retrieval.rerank import candidates as rerank_candidates
        from rhizome.core.retrieval.rerank import check_reranker

        self._check_open()
        mode = self.check_mode(mode)
        wanted = as_filter(filter)
        reranker = check_reranker(options.pop("reranker", None))
        candidates = options.pop("rerank_candidates", None)
        rerank_candidates(1, candidates)  # a bad count fails now
        threshold = check_score_threshold(options.pop("score_threshold", None))
        try:
            retriever = self._retriever(mode, k, **options)
        except TypeError as exc:
            raise ConfigurationError(f"bad option for the {self.method}{f' {mode}' if mode else ''} retriever: {exc}") from exc
        retriever.reranker, retriever.rerank_candidates = reranker, candidates
        retriever.score_threshold = threshold
        if wanted is not None:
            retriever._allowed(wanted)  # a filter this mode cannot honour, or a field no document has, fails now
            retriever.filter = wanted
        return retriever

    async def aanswer(self, question: str, *, mode: str | None = None, k: int | None = None, **options: Any) -> Any:
        """Retrieve with ``mode`` and write an answer that cites its sources (an
        :class:`~rhizome.core.retrieval.answer.Answer`), with the index's chat model or, without one,
        extractively. ``options`` go to the retriever."""
        retrieval = await self.as_retriever(k=k, mode=mode, **options).asearch(question)
        return await self._answer(question, retrieval)

    def _answer_inputs(self, retrieval: Any) -> tuple[list[Any], dict[str, Any]]:
        """What the answer is written from: the hits and the options of
        :func:`~rhizome.core.retrieval.answer.aanswer` (``system``, ``instructions``, ``render``,
        ``max_context_tokens``). Methods override it to word their answers their own way."""
        return list(retrieval.context or retrieval.hits), {}

    async def _answer(self, question: str, retrieval: Any) -> Any:
        from rhizome.core.retrieval.answer import aanswer

        if self.llm is None:  # a sentence copied from the ranked hits, not from the wider context
            return await aanswer(question, list(retrieval.hits))
        hits, options = self._answer_inputs(retrieval)
        return await aanswer(question, hits, self.llm, **options)

    async def astream_answer(self, question: str, *, mode: str | None = None, k: int | None = None, **options: Any) -> AsyncIterator[str]:
        """:meth:`aanswer`, but the model's answer comes in pieces as it is written (citations
        as ``[n]`` in the text); without a chat model the extractive answer comes as one piece."""
        from rhizome.core.retrieval.answer import astream_answer

        retrieval = await self.as_retriever(k=k, mode=mode, **options).asearch(question)
        if self.llm is None:
            yield (await self._answer(question, retrieval)).text
            return
        hits, settings = self._answer_inputs(retrieval)
        async for piece in astream_answer(question, hits, self.llm, **settings):
            yield piece

    def answer(self, question: str, *, mode: str | None = None, k: int | None = None, stream: bool = False, **options: Any) -> Any:
        """Sync :meth:`aanswer`; with ``stream=True`` an iterator of the answer's pieces
        (:meth:`astream_answer`), each handed over as soon as the model writes it."""
        if stream:
            return iterate_sync(self.astream_answer(question, mode=mode, k=k, **options))
        return run_sync(self.aanswer(question, mode=mode, k=k, **options))


def _document_ids(document_ids: Any) -> list[str]:
    """The ids a delete was given: one id or an iterable of ids, each a string."""
    if isinstance(document_ids, str):
        return [document_ids]
    if isinstance(document_ids, Iterable):
        ids = list(document_ids)
        wrong = [i for i in ids if not isinstance(i, str)]
        if not wrong:
            return ids
        raise InvalidInputError(f"document ids are strings, got {wrong[0]!r}; `index.store.document_ids()` lists them")
    raise InvalidInputError(
        f"delete takes a document id or a list of ids, got {document_ids!r}; `index.store.document_ids()` lists them"
    )


def _same_location(a: str | Path, b: str | Path) -> bool:
    if is_url(a) or is_url(b):
        return str(a) == str(b)
    return Path(a).resolve() == Path(b).resolve()


def _rebuild(spec: str | None, what: str, resolve: Any, path: Any) -> Any:
    if spec is None:
        return resolve(None)
    try:
        return resolve(spec)
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"{shown(path)} was built with the {what} {spec!r}, which cannot be rebuilt from its name; "
            f"pass the same model again as {what}=..."
        ) from exc


__all__ = [
    "Batch",
    "BaseIndex",
    "DeleteReport",
    "InsertReport",
    "ModeInfo",
    "QUESTION_KINDS",
    "Stats",
    "VectorBatch",
    "batch_chunks",
    "default_cache",
    "document_hash",
    "resolve_embedder",
    "resolve_llm",
]
