"""Where an index lives: the storage protocol every method writes through, and its backends.

An index is a *location* — a directory, or a ``postgresql://`` URL — holding a manifest, the
records (documents, chunks, statuses, meta values, stage results, the method's record tables,
vectors) and the model-call cache. :class:`IndexStore` is what a method sees: documents and
chunks, record tables (:meth:`IndexStore.table`), vectors (:meth:`IndexStore.put_vectors`,
:meth:`IndexStore.collection`), meta values and generations, all inside
:meth:`IndexStore.transaction`. It holds everything that is the same on every backend — the
records are written with the same statements — and leaves to a backend only what differs:

- :class:`~rhizome.core.store.backends.sqlite.SQLiteStore` — a directory (``manifest.json``,
  ``records.sqlite``, faiss snapshots under ``vectors/``), or memory; one writer process (an
  ``flock`` on the directory), readers beside it (WAL);
- :class:`~rhizome.core.store.backends.postgres.PostgresStore` — a schema of a PostgreSQL database
  with pgvector (``postgresql://user@host/db?schema=name``); writers from many processes take
  turns (an advisory lock per insert or delete), readers anywhere; vectors are searched by
  the server (exact, or HNSW for large collections).

A backend supplies a :class:`Connection` (the records are written with ``?`` placeholders and
:meth:`Connection.upsert`; both backends keep a ``rowid`` that orders rows by their last
write), its schema, the writer lock, how a vector is stored and searched, and where the
manifest and the model-call cache live. ``IndexStore.open`` / ``create`` / ``open_or_create``,
:func:`read_manifest`, :func:`has_index` and :func:`load_index` take either kind of location and
pick the backend.

Within one process, every writable open of the same location shares one store (and its writer
lock), so ``persist(d)`` followed by ``load(d)`` or ``from_persist_dir(d)`` works.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import functools
import importlib.metadata
import json
import os
import sys
import threading
import uuid
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from pydantic import BaseModel, Field

from rhizome.core.aio import WriteLock, held, scoped
from rhizome.core.errors import (
    ConfigurationError,
    IndexClosedError,
    IndexCorruptError,
    IndexFormatError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
    InvalidInputError,
)
from rhizome.core.store.records import RecordTable, batches
from rhizome.core.types import Chunk, Document

FORMAT_VERSION = 2
"""2: configuration objects, typed record tables and stage results (1: method key-value rows)."""
MANIFEST = "manifest.json"
RECORDS = "records.sqlite"
URL_SCHEMES = ("postgresql://", "postgres://")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _version() -> str:
    try:
        return importlib.metadata.version("rhizome-core")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return "0"


class Manifest(BaseModel):
    """What an index was built with. Checked on every open."""

    format_version: int = FORMAT_VERSION
    method: str
    index_id: str | None = None
    """A random id given when the index is created, also stored in its records and snapshots:
    files of another index are recognised, never adopted (``None``: written before ids)."""
    rhizome_version: str = Field(default_factory=_version)
    created: str = Field(default_factory=_now)
    updated: str = Field(default_factory=_now)
    models: dict[str, str | None] = Field(default_factory=dict)
    """Model specs, e.g. ``{"embedder": "ollama:nomic-embed-text", "llm": "ollama:qwen2.5:7b"}``."""
    embedding_dimension: int | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    """The method's configuration object as JSON (see :mod:`rhizome.core.index.config`)."""
    stats: dict[str, int] = Field(default_factory=dict)


class DocumentStatus(BaseModel):
    """Where one document stands (see :meth:`IndexStore.statuses`)."""

    id: str
    status: str
    error: str | None = None
    updated: str


class Connection(Protocol):
    """The database connection a backend hands to writers (inside :meth:`IndexStore.transaction`)
    and readers. Statements use ``?`` placeholders; rows come back as tuples."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; the result iterates over rows and has ``fetchall()``."""

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any: ...

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Insert ``rows`` or replace the rows with the same ``key``; a replaced row gets a new
        ``rowid`` (it counts as written last). ``rows`` may be a generator (read once)."""

    def begin(self) -> None:
        """Start a write transaction (:meth:`IndexStore.transaction` calls these four)."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...


class Collection(Protocol):
    """A vector collection as searches see it (a faiss mirror, or a query on the server)."""

    def __len__(self) -> int: ...

    def ids(self) -> list[str]: ...

    def vectors(self, keys: Sequence[str]) -> np.ndarray: ...

    def present(self, keys: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The keys of ``keys`` the collection holds (in the order given) and their vectors,
        read in one step: a query reading while another thread deletes gets the keys that were
        present at that moment, never a ``KeyError`` for a key deleted after it was checked."""
        ...

    def search(self, queries: np.ndarray, k: int, among: Iterable[str] | None = None) -> list[list[tuple[str, float]]]: ...


# -- locations ---------------------------------------------------------------------------------
def is_url(location: Any) -> bool:
    """Whether ``location`` names a database (``postgresql://…``) rather than a directory."""
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def shown(location: Any) -> str:
    """``location`` as messages show it: a database URL without its password."""
    text = str(location)
    if not is_url(location):
        return text
    parts = urlsplit(text)
    if parts.password is None:
        return text
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))


def file_in_the_way(folder: str | Path) -> Path | None:
    """The file that keeps ``folder`` from being a directory: ``folder`` itself, or the nearest
    existing path above it, when that is not a directory; ``None`` when the folder can be made."""
    existing = next((p for p in (Path(folder), *Path(folder).parents) if p.exists()), None)
    return existing if existing is not None and not existing.is_dir() else None


def as_location(location: str | Path) -> str | Path:
    """A location as given on a command line: a URL stays text, anything else is a path."""
    if is_url(location):
        return location
    _refuse_scheme(location)
    return Path(location)


def _refuse_scheme(location: Any) -> None:
    if isinstance(location, str) and "://" in location:
        raise ConfigurationError(
            f"{location.split('://', 1)[0]}:// is not a storage Rhizome knows; give a directory or a "
            "postgresql://user@host/database URL"
        )


def backend(location: str | Path | None) -> type[IndexStore]:
    """The store class of a location: PostgreSQL for a URL (needs ``rhizome-core[postgres]``),
    SQLite for a directory or memory (``None``)."""
    if is_url(location):
        from rhizome.core.store.backends.postgres import PostgresStore

        return PostgresStore
    _refuse_scheme(location)
    from rhizome.core.store.backends.sqlite import SQLiteStore

    return SQLiteStore


def has_index(location: str | Path) -> bool:
    """Whether ``location`` holds an index (its manifest)."""
    return backend(location).holds_index(location)


def read_manifest(location: str | Path) -> Manifest:
    """Read and check the manifest at ``location``; typed errors for a missing, foreign or newer
    index (and for records that belong to another index)."""
    return backend(location).read_manifest(location)


def check_format(raw: Any, where: Any) -> None:
    """Refuse a manifest of another format version."""
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"{where} uses index format version {version}, this Rhizome reads version "
            f"{FORMAT_VERSION}; rebuild the index with `rhizome index`, or install the Rhizome "
            "version that wrote it"
        )


def check_identity(where: Any, manifest: Manifest, stored: dict | None, fix: str) -> None:
    """The manifest must name the index and method its records were written by."""
    if stored is None:
        return  # written before ids: the first writable open records them
    if stored.get("id") != manifest.index_id:
        raise IndexCorruptError(
            f"{where}: the manifest and the records belong to different indexes (ids {manifest.index_id} and "
            f"{stored.get('id')}); {fix}. Nothing was changed"
        )
    if stored.get("method") != manifest.method:
        raise IndexCorruptError(
            f"{where}: the manifest says the method is {manifest.method!r} but the records were written by "
            f"{stored.get('method')!r}; {fix}. Nothing was changed"
        )


_OPEN: weakref.WeakValueDictionary[str, IndexStore] = weakref.WeakValueDictionary()
"""Writable stores open in this process, by location (shared by every open)."""
_OPEN_LOCK = threading.Lock()


_HELD_GENERATIONS: contextvars.ContextVar[dict[Any, dict[str, int]] | None] = contextvars.ContextVar("rhizome_generations", default=None)
"""Inside :func:`generations_held`: each store's generations as one read found them."""


class DamagedChunk(BaseModel):
    """A stored chunk whose text cannot be trusted, as a search that left it out reports it."""

    chunk_id: str
    document_id: str
    why: str
    """``"is not valid UTF-8"`` or ``"does not match its checksum"``."""


_LEFT_OUT: contextvars.ContextVar[list[DamagedChunk] | None] = contextvars.ContextVar("rhizome_left_out", default=None)
"""Inside :func:`damaged_left_out`: the damaged chunks the reads of the block left out."""


@contextlib.contextmanager
def damaged_left_out() -> Iterator[list[DamagedChunk]]:
    """Within the block (a search), :meth:`IndexStore.chunks` and :meth:`IndexStore.chunks_of`
    leave out a chunk whose stored text is damaged — bytes that are not UTF-8, or a text that
    no longer matches the checksum written with it — and list it in the yielded list, instead
    of failing the whole read with :class:`IndexCorruptError`: one damaged passage costs a
    search that passage, not every answer. Nested blocks share the outermost one's list."""
    held = _LEFT_OUT.get()
    if held is not None:
        yield held
        return
    found: list[DamagedChunk] = []
    with scoped(_LEFT_OUT, found):
        yield found


def stored_chunk_text(raw: str | bytes, checksum: str) -> tuple[str, str | None]:
    """A chunk's text as a backend read it (SQLite reads its bytes) and why it cannot be
    trusted (``None``: it is sound). An empty ``checksum``: written before checksums."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("utf-8", "replace"), "is not valid UTF-8"
    else:
        text = raw
    if checksum and checksum != text_checksum(text):
        return text, "does not match its checksum"
    return text, None


@contextlib.contextmanager
def generations_held() -> Iterator[None]:
    """Within the block, a store reads its generations (:meth:`IndexStore.generation`) once, all
    in one query, instead of one query per read: what a search runs in. The caches keyed by them
    stay safe: every read of a block is as old as the first one, so a value built from records
    read later is at most newer than its key (rebuilt at the next search), never older. A
    transaction of the block reads afresh, and drops the block's read of its store. Nested
    blocks share the outermost one's reads."""
    with held(_HELD_GENERATIONS):
        yield


STATE = "state"
"""The meta key of :meth:`IndexStore.state`."""


class IndexStore:
    """Records, vectors and manifest of one index (see the module docstring).

    Use :meth:`create`, :meth:`open` or :meth:`open_or_create`; they pick the backend from the
    location. Every method-specific index builds on one of these.
    """

    location: str | Path | None
    """The directory, the URL, or ``None`` (memory)."""
    path: Path | None = None
    """The index directory of a directory-backed store (``None`` otherwise)."""
    db: Any
    """The backend's :class:`Connection`."""

    def __init__(self, location: str | Path | None, manifest: Manifest, *, readonly: bool = False) -> None:
        self.location = location
        self.manifest = manifest
        self.readonly = readonly
        self._lock = threading.RLock()
        self._transactions = 0
        self._tables: dict[str, RecordTable[Any]] = {}
        self._users = 1
        self.memo: dict[tuple[str, str], Any] = {}
        """Stage results a read-only store computed (it cannot write them to the database)."""
        self._holding: dict[str, tuple[int, bool]] = {}
        """:meth:`has_collection`'s answers, with the collection's generation they were read at."""
        self.out_of_core: set[str] = set()
        """Vector collections a backend may keep out of core when they are large (an index
        directory's: :mod:`rhizome.core.store.outofcore`; a PostgreSQL server holds every collection
        anyway): the chunk collection, named by each index that opens the store."""
        self.write_lock = WriteLock(self._cross_process_lock())
        """Serialises inserts and deletes of every index object on this store, across threads
        and event loops (and, on a server, across processes)."""

    # -- what a backend provides ---------------------------------------------------------------
    @classmethod
    def key(cls, location: str | Path) -> str:
        """The name under which writable opens of ``location`` share one store."""
        raise NotImplementedError

    @classmethod
    def holds_index(cls, location: str | Path) -> bool:
        raise NotImplementedError

    @classmethod
    def read_manifest(cls, location: str | Path) -> Manifest:
        raise NotImplementedError

    @classmethod
    def _new(cls, location: str | Path | None, manifest: Manifest, publish: bool = True) -> IndexStore:
        """A new index at ``location``, which holds none (refuse records left without a manifest;
        clear those of a creation cut short, which hold nothing but an identity). ``publish``:
        write the manifest now; without it the location holds no index until the creator
        writes it (:meth:`copy_to`)."""
        raise NotImplementedError

    @classmethod
    def _existing(cls, location: str | Path, manifest: Manifest, readonly: bool) -> IndexStore:
        raise NotImplementedError

    def _cross_process_lock(self) -> Any:
        """What :attr:`write_lock` also takes, to exclude writers of other processes (``None``
        when the backend lets only one process write at all)."""
        return None

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn the driver's errors about a damaged or unreachable database into typed ones."""
        yield

    def _verify_owner(self) -> None:
        """Before a commit: the index is still the one this writer opened."""

    def _rolled_back(self) -> None:
        """After a rollback: forget in-memory state that may hold the rolled-back writes."""

    def _hold_creation(self, db: Connection) -> None:
        """Inside a transaction of an index not yet published: keep other processes from
        creating an index at the same location until it commits (a directory's writer lock
        already does)."""

    def is_missing_table(self, exc: BaseException) -> bool:
        """Whether ``exc`` says a table does not exist (a reader opened before it was made)."""
        return False

    def create_record_table(self, db: Connection, table: str, lookups: Sequence[str]) -> None:
        """Create a record table: ``key`` (primary key), ``f_<lookup>`` columns (indexed) and ``data``."""
        raise NotImplementedError

    def json_value(self, column: str, path: Sequence[str]) -> str:
        """SQL for the value at ``path`` (field names, outermost first) in the JSON text of
        ``column``: a scalar as the driver gives it (a number may come back as text), a list or
        an object as JSON text, absent as NULL."""
        raise NotImplementedError

    def record_tables(self) -> dict[str, list[str]]:
        """The record tables this index holds, with their columns."""
        raise NotImplementedError

    def _stored_dimension(self) -> int | None:
        """The dimension of a stored vector, if any."""
        raise NotImplementedError

    def read_snapshot(self) -> contextlib.AbstractContextManager[None]:
        """A context in which every query reads one committed state of the records: a commit
        made meanwhile (by another connection) is seen whole or not at all, so tables compared
        with each other agree (``rhizome check``). For queries only; inside a
        :meth:`transaction`, which already is one state, it adds nothing."""
        raise NotImplementedError

    def put_vectors(
        self, db: Connection, collection: str, ids: Sequence[str], vectors: np.ndarray, digests: Sequence[str] | None = None
    ) -> None:
        """Store vectors inside a :meth:`transaction`. ``digests``: a digest of the text each
        vector was made from (see :meth:`vector_digests`)."""
        raise NotImplementedError

    def collection(self, name: str, dimension: int | None = None) -> Collection:
        """The vector collection ``name``, ready to search."""
        raise NotImplementedError

    def vector_rows(self, collection: str) -> tuple[list[str], np.ndarray | None, list[str]]:
        """Ids, vectors (one row each) and digests of a collection, in stored order."""
        raise NotImplementedError

    def _save_collections(self) -> None:
        """Persist whatever the backend keeps of its collections outside the records."""

    def _write_manifest_copy(self, text: str) -> None:
        """Write the manifest where it is read from besides the records (a file)."""

    def has_model_cache(self) -> bool:
        """Whether the index keeps a model-call cache of its own already (:meth:`model_cache`)."""
        return False

    def model_cache(self) -> Any:
        """The model-call cache that lives with this index (see :func:`rhizome.core.index.base.default_cache`)."""
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    # -- lifecycle -----------------------------------------------------------------------------
    @classmethod
    def create(cls, location: str | Path | None, manifest: Manifest, *, publish: bool = True) -> IndexStore:
        """A new index at ``location`` (which must not already hold one), or in memory.
        ``publish=False``: the location holds no index until the creator writes the manifest
        (:meth:`write_manifest`), so a creation cut short before that can start again."""
        store_class = backend(location)
        if location is None:
            return store_class._new(None, manifest)
        if store_class.holds_index(location):
            raise InvalidInputError(
                f"{shown(location)} already holds an index; open it with load() to add documents, or choose "
                "another location"
            )
        with _OPEN_LOCK:
            store = store_class._new(location, manifest, publish)
            _OPEN[store_class.key(location)] = store
        return store

    @classmethod
    def open_or_create(cls, location: str | Path | None, manifest: Manifest, *, readonly: bool = False) -> IndexStore:
        """Open the index at ``location`` when there is one (it must be of ``manifest.method``
        and, when the manifest names one, of its embedder), else create it."""
        if location is not None and has_index(location):
            return cls.open(location, method=manifest.method, embedder=manifest.models.get("embedder"), readonly=readonly)
        if readonly:
            raise IndexNotFoundError(f"no Rhizome index at {shown(location)} to open read-only; build one first")
        return cls.create(location, manifest)

    @classmethod
    def open(
        cls,
        location: str | Path,
        *,
        method: str | None = None,
        embedder: str | None = None,
        dimension: int | None = None,
        readonly: bool = False,
    ) -> IndexStore:
        """Open an existing index, checking format version, method and embedding model. A
        writable open of a location this process already has open shares that store."""
        store_class = backend(location)
        with _OPEN_LOCK:
            shared = None if readonly else _OPEN.get(store_class.key(location))
            manifest = shared.manifest if shared is not None and not shared.closed else store_class.read_manifest(location)
            if method is not None and manifest.method != method:
                raise IndexMismatchError(
                    f"{shown(location)} is a {manifest.method!r} index, not {method!r}; open it with "
                    f"rhizome.core.store.storage.load_index() or the {manifest.method} package"
                )
            built_with = manifest.models.get("embedder")
            other = embedder is not None and built_with is not None and embedder != built_with
            mismatch = IndexMismatchError(
                f"{shown(location)} was built with the embedder {built_with!r}, not {embedder!r}; vectors of "
                f"different models cannot be compared. Query it with {built_with!r}, or re-index "
                "into a new location with the new embedder"
            )
            # an index that holds no vector yet (its first insert stopped before any) takes the
            # new embedder: nothing in it was made with the old one
            if other and (readonly or (shared is not None and not shared.closed) or manifest.embedding_dimension is not None):
                raise mismatch
            if (
                dimension is not None
                and manifest.embedding_dimension is not None
                and dimension != manifest.embedding_dimension
            ):
                raise IndexMismatchError(
                    f"{shown(location)} holds {manifest.embedding_dimension}-dimensional vectors but the embedder "
                    f"gives {dimension}; use the embedder the index was built with ({built_with})"
                )
            if shared is not None and not shared.closed:
                shared._users += 1
                return shared
            store = store_class._existing(location, manifest, readonly)
            if other:
                if store._stored_dimension() is not None:
                    store._close()  # not close(): it takes _OPEN_LOCK, held here
                    raise mismatch
                store.manifest.models["embedder"] = embedder
                store.write_manifest()
            if not readonly:
                _OPEN[store_class.key(location)] = store
            return store

    def _check_identity(self, *, new: bool = False) -> None:
        """Records and manifest must name the same index and method. An index written before
        ids gets one on its first writable open; a ``new`` one gets its identity here and its
        manifest from its creator."""
        stored = self.get_meta("index")
        if stored is None:
            if self.readonly:
                return
            self.manifest.index_id = self.manifest.index_id or uuid.uuid4().hex
            with self.transaction() as db:
                self.set_meta(db, "index", {"id": self.manifest.index_id, "method": self.manifest.method})
            if not new:
                self.write_manifest()
            return
        if stored.get("id") != self.manifest.index_id or stored.get("method") != self.manifest.method:
            raise IndexCorruptError(
                f"{self.location or 'memory'}: the manifest (index {self.manifest.index_id}, method {self.manifest.method!r}) "
                f"does not belong to the records (index {stored.get('id')}, method {stored.get('method')!r}); "
                f"`rhizome repair {shown(self.location)}` rewrites the manifest from the records. Nothing was changed"
            )

    @property
    def closed(self) -> bool:
        return self._users <= 0

    def close(self) -> None:
        """Close this handle; the store closes (and releases the writer lock) when the last
        index object sharing it closes. An index object closes its handle once, however often
        its ``close()`` is called (:meth:`BaseIndex.close <rhizome.core.index.base.BaseIndex.close>`)."""
        with _OPEN_LOCK:
            if self._users <= 0:
                return
            self._users -= 1
            if self._users > 0:
                return
        self._close()

    def closed_error(self) -> IndexClosedError:
        """What using a closed index raises, with how to open it again."""
        if self.location is None:
            return IndexClosedError(
                "this index was closed, and an index in memory is gone once closed: build it again "
                "(persist() it to a directory before closing to keep it)"
            )
        where = repr(str(self.path)) if self.path is not None else "its postgresql:// URL"
        return IndexClosedError(
            f"this index was closed; open it again to use it: load_index({where}), or its index class with path={where}"
        )

    def _check_open(self) -> None:
        if self.closed:
            raise self.closed_error()

    def __del__(self) -> None:  # release the writer lock if the user forgot close()
        with contextlib.suppress(Exception):
            self._close()

    def write_manifest(self) -> None:
        """Write the manifest into the records (from which ``repair`` restores it) and, for a
        directory, ``manifest.json``."""
        if self.readonly:
            return
        self.manifest.updated = _now()
        text = self.manifest.model_dump_json(indent=2)
        self._check_open()
        with self._lock, self._errors():
            self.db.upsert("meta", ("key", "value"), ("key",), [("manifest", text)])
        self._write_manifest_copy(text)

    # -- transactions --------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One atomic write: everything inside commits together or not at all."""
        if self.readonly:
            raise IndexLockedError("this index was opened read-only")
        self._check_open()
        with self._lock, self._errors():
            self.db.begin()
            self._transactions += 1
            try:
                yield self.db
                self._verify_owner()
            except BaseException:
                self.db.rollback()
                self._rolled_back()
                raise
            else:
                self.db.commit()
            finally:
                self._transactions -= 1
                held = _HELD_GENERATIONS.get()
                if held is not None:  # what this call wrote is read afresh after it
                    held.pop(self, None)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        self._check_open()
        with self._lock, self._errors():
            return self.db.execute(sql, params).fetchall()

    # -- documents and chunks ------------------------------------------------------------------
    def document_state(self, document_id: str) -> tuple[str, str] | None:
        """``(content_hash, status)`` of a stored document, or ``None``."""
        rows = self.query("SELECT content_hash, status FROM documents WHERE id = ?", (document_id,))
        return (rows[0][0], rows[0][1]) if rows else None

    def document_ids(self, status: str | None = None) -> list[str]:
        if status is None:
            return [r[0] for r in self.query("SELECT id FROM documents ORDER BY id")]
        return [r[0] for r in self.query("SELECT id FROM documents WHERE status = ? ORDER BY id", (status,))]

    def documents_metadata(self, document_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = list(dict.fromkeys(document_ids))
        out: dict[str, dict[str, Any]] = {}
        for part in batches(ids):
            marks = ",".join("?" * len(part))
            for doc_id, metadata in self.query(f"SELECT id, metadata FROM documents WHERE id IN ({marks})", part):
                out[doc_id] = json.loads(metadata)
        return out

    sql_dialect: str = "sqlite"
    """The SQL a metadata filter is written in for this backend (see
    :meth:`rhizome.core.retrieval.filters.MetadataFilter.sql`)."""
    _documents_source: str = "documents"
    """The documents table as filters read it: ``id`` and a ``metadata`` they can query."""

    def matching_documents(self, wanted: Any) -> set[str]:
        """The ids of the stored documents whose metadata matches ``wanted`` (a
        :class:`~rhizome.core.retrieval.filters.MetadataFilter`), evaluated by the database. A
        field the filter compares that no stored document has is an :class:`InvalidInputError`
        naming the fields they do have (a misspelt field would otherwise match nothing)."""
        condition, params = wanted.sql(self.sql_dialect)
        unknown = sorted(field for field in wanted.fields if not self._metadata_has(field))
        if unknown and self.count("documents"):
            known = self._metadata_fields()
            raise InvalidInputError(
                f"no stored document has the metadata field{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; the documents' fields are: {', '.join(known) or 'none'}"
            )
        return {r[0] for r in self.query(f"SELECT id FROM {self._documents_source} WHERE {condition}", params)}

    def _metadata_has(self, field: str) -> bool:
        """Whether some stored document's metadata has ``field``."""
        return bool(self.query("SELECT 1 FROM documents WHERE json_type(metadata, ?) IS NOT NULL LIMIT 1",
                               ('$."' + field.replace('"', '') + '"',)))

    def _metadata_fields(self) -> list[str]:
        """Every field of the stored documents' metadata, sorted."""
        return [r[0] for r in self.query("SELECT DISTINCT key FROM documents, json_each(documents.metadata) ORDER BY key")]

    def chunk_counts(self) -> dict[str, int]:
        """How many chunks each stored document has, by id."""
        return dict(self.query("SELECT id, n_chunks FROM documents"))

    def statuses(self) -> list[DocumentStatus]:
        """Every document the index knows, by id: ``done`` (stored and searchable), or
        ``pending`` / ``processing`` (an insert holds it, or one was interrupted) or ``failed``
        (with the reason) for a version that is not stored. A stored document whose new version
        failed is listed with the failure: the stored version stays searchable meanwhile."""
        found = {
            doc_id: DocumentStatus(id=doc_id, status="done", updated=updated)
            for doc_id, updated in self.query("SELECT id, updated FROM documents WHERE status = 'done'")
        }
        try:
            rows = self.query("SELECT id, status, error, updated FROM document_status")
        except Exception as exc:  # a read-only open of an index written before the table
            if not self.is_missing_table(exc):
                raise
            rows = []
        for doc_id, status, error, updated in rows:
            found[doc_id] = DocumentStatus(id=doc_id, status=status, error=error, updated=updated)
        return [found[k] for k in sorted(found)]

    @staticmethod
    def set_status(db: Connection, documents: Iterable[tuple[str, str]], status: str, error: str | None = None) -> None:
        """Record ``status`` (``pending``, ``processing`` or ``failed``) of documents given as
        ``(id, content_hash)`` pairs; :meth:`clear_status` removes it once they are stored."""
        now = _now()
        db.upsert(
            "document_status", ("id", "content_hash", "status", "error", "updated"), ("id",),
            [(doc_id, digest, status, error, now) for doc_id, digest in documents],
        )

    @staticmethod
    def requeue(db: Connection, document_ids: Iterable[str], reason: str) -> None:
        """Put those of ``document_ids`` still ``processing`` back to ``pending``, with the
        reason their insert stopped (the next insert retries them)."""
        for part in batches(list(document_ids)):
            marks = ",".join("?" * len(part))
            db.execute(
                f"UPDATE document_status SET status = 'pending', error = ?, updated = ? WHERE status = 'processing' AND id IN ({marks})",
                [reason, _now(), *part],
            )

    @staticmethod
    def clear_status(db: Connection, document_ids: Iterable[str]) -> None:
        db.executemany("DELETE FROM document_status WHERE id = ?", [(d,) for d in document_ids])

    @staticmethod
    def put_document(db: Connection, document: Document, content_hash: str, status: str, n_chunks: int = 0) -> None:
        db.upsert(
            "documents", ("id", "content_hash", "metadata", "status", "n_chunks", "updated"), ("id",),
            [(document.id, content_hash, json.dumps(document.metadata, default=str), status, n_chunks, _now())],
        )

    @staticmethod
    def put_chunks(db: Connection, chunks: Sequence[Chunk]) -> None:
        db.upsert(
            "chunks", CHUNK_COLUMNS, ("id",),
            [
                (c.id, c.document_id, c.index, c.text, c.start, c.end, c.n_tokens, json.dumps(c.metadata, default=str), text_checksum(c.text))
                for c in chunks
            ],
        )

    _chunk_select: str = ", ".join(f'"{c}"' if c == "end" else c for c in ("id", "document_id", "idx", "text", "start", "end", "n_tokens", "metadata", "checksum"))
    """The columns a chunk is read with (a backend may read ``''`` for ``checksum``)."""

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Stored chunks by id (unknown ids are absent from the result). Each text is checked
        against the checksum stored with it: :class:`IndexCorruptError` when it was changed or
        is not UTF-8 (within :func:`damaged_left_out`, such a chunk is left out and listed)."""
        out: dict[str, Chunk] = {}
        for part in batches(list(chunk_ids)):
            marks = ",".join("?" * len(part))
            for row in self.query(f"SELECT {self._chunk_select} FROM chunks WHERE id IN ({marks})", part):
                if (chunk := self._chunk(row)) is not None:
                    out[row[0]] = chunk
        return out

    def chunks_of(self, document_id: str) -> list[Chunk]:
        rows = self.query(f"SELECT {self._chunk_select} FROM chunks WHERE document_id = ? ORDER BY idx", (document_id,))
        return [c for c in map(self._chunk, rows) if c is not None]

    def chunk_tokens(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """``n_tokens`` of each stored chunk of ``chunk_ids`` by id (no text read, so no
        checksum checked)."""
        out: dict[str, int] = {}
        for part in batches(list(dict.fromkeys(chunk_ids))):
            marks = ",".join("?" * len(part))
            out.update((r[0], r[1]) for r in self.query(f"SELECT id, n_tokens FROM chunks WHERE id IN ({marks})", part))
        return out

    def chunk_sizes(self, document_id: str) -> list[tuple[int, int]]:
        """``(index, n_tokens)`` of each stored chunk of ``document_id``, in order (no text read,
        so no checksum checked)."""
        return [(r[0], r[1]) for r in self.query("SELECT idx, n_tokens FROM chunks WHERE document_id = ? ORDER BY idx", (document_id,))]

    def damaged_documents(self, document_ids: Iterable[str]) -> set[str]:
        """Those of ``document_ids`` with a stored chunk whose text is damaged (changed outside
        Rhizome, or not UTF-8): an insert of such a document stores it again even when its
        content is unchanged."""
        found: set[str] = set()
        for part in batches(list(dict.fromkeys(document_ids))):
            marks = ",".join("?" * len(part))
            for row in self.query(f"SELECT {self._chunk_select} FROM chunks WHERE document_id IN ({marks})", part):
                if stored_chunk_text(row[3], row[8])[1] is not None:
                    found.add(row[1])
        return found

    def _chunk(self, row: tuple) -> Chunk | None:
        text, why = stored_chunk_text(row[3], row[8])
        if why is not None:
            left_out = _LEFT_OUT.get()
            if left_out is None:
                raise IndexCorruptError(
                    f"the stored text of chunk {row[0]} (document {row[1]!r}) in {self.location or 'memory'} {why}: "
                    "it was changed outside Rhizome. Insert that document again (an insert of its unchanged file "
                    f"stores it again); `rhizome check {shown(self.location)}` lists every such chunk"
                )
            left_out.append(DamagedChunk(chunk_id=row[0], document_id=row[1], why=why))
            return None
        return Chunk(
            id=row[0], document_id=row[1], index=row[2], text=text, start=row[4], end=row[5],
            n_tokens=row[6], metadata=json.loads(row[7]),
        )

    def chunk_ids(self, document_ids: Sequence[str] | None = None) -> list[str]:
        """Ids of the stored chunks (of ``document_ids``, or all), in the order they were stored."""
        if document_ids is None:
            return [r[0] for r in self.query("SELECT id FROM chunks ORDER BY rowid")]
        out: list[str] = []
        for part in batches(list(dict.fromkeys(document_ids))):
            marks = ",".join("?" * len(part))
            out += [r[0] for r in self.query(f"SELECT id FROM chunks WHERE document_id IN ({marks}) ORDER BY rowid", part)]
        return out

    def stored_order(self, chunk_ids: Iterable[str]) -> list[str]:
        """``chunk_ids`` (those stored) in the order their chunks were stored."""
        rows: list[tuple[int, str]] = []
        for part in batches(sorted(set(chunk_ids))):
            marks = ",".join("?" * len(part))
            rows += [(r[1], r[0]) for r in self.query(f"SELECT id, rowid FROM chunks WHERE id IN ({marks})", part)]
        return [cid for _, cid in sorted(rows)]

    @staticmethod
    def chunk_ids_in(db: Connection, document_id: str) -> list[str]:
        """Inside a transaction: the ids of a document's chunks."""
        return [r[0] for r in db.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))]

    @staticmethod
    def remove_document_rows(db: Connection, document_id: str) -> None:
        """Inside a transaction: a document's row and its chunks' rows."""
        db.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
        db.execute("DELETE FROM documents WHERE id = ?", (document_id,))

    def count(self, table: str) -> int:
        if table not in ("documents", "chunks", "vectors"):
            raise ValueError(table)
        return int(self.query(f"SELECT COUNT(*) FROM {table}")[0][0])

    # -- generations, meta values and record tables -------------------------------------------
    def generation(self, name: str) -> int:
        """How often ``name`` (a vector collection or record table) was written. Inside
        :func:`generations_held` (a search), the store's generations are read once, all in one
        query, and served from that read; inside a transaction they are always read afresh."""
        held = _HELD_GENERATIONS.get()
        if held is None or self._transactions:
            rows = self.query("SELECT value FROM meta WHERE key = ?", (f"generation:{name}",))
            return int(rows[0][0]) if rows else 0
        mine = held.get(self)
        if mine is None:
            rows = self.query("SELECT key, value FROM meta WHERE key LIKE 'generation:%'")
            mine = held[self] = {key[len("generation:") :]: int(value) for key, value in rows}
        return mine.get(name, 0)

    @staticmethod
    def bump(db: Connection, name: str) -> None:
        """Record, inside a transaction, that ``name`` changed (and give the records a new
        :meth:`state`)."""
        db.execute(
            "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET"
            " value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)",
            (f"generation:{name}",),
        )
        IndexStore.set_meta(db, STATE, uuid.uuid4().hex)

    def state(self) -> str | None:
        """A random mark every write of the records replaces: unlike the generations, which
        count writes, it never comes back (records restored from a backup and written again
        reach old generations with other contents, never an old state). What a file derived
        from the records (:meth:`saved_arrays`) is keyed by."""
        return self.get_meta(STATE)

    keeps_arrays = False
    """Whether :meth:`save_arrays` keeps anything: only an index directory does."""

    def saved_arrays(self, name: str, key: Any) -> dict[str, np.ndarray] | None:
        """The arrays :meth:`save_arrays` kept for ``name`` under ``key``, or ``None``: none
        kept, kept under another key or by another index, unreadable."""
        return None

    def save_arrays(self, name: str, key: Any, arrays: Callable[[], dict[str, np.ndarray]]) -> None:
        """Keep the arrays ``arrays()`` gives, derived from the records (a query graph), for
        later processes, under ``key`` (JSON: what the records were when they were read,
        :meth:`state` included); a writable index directory writes them to
        ``graphs/<name>.npz`` (``arrays`` is called only then). A cache: a file that cannot be
        written is left out."""

    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    @staticmethod
    def set_meta(db: Connection, key: str, value: Any) -> None:
        db.upsert("meta", ("key", "value"), ("key",), [(key, json.dumps(value))])

    def table(self, name: str, model: type[Any], *, key: str = "id", lookups: Sequence[str] = ()) -> RecordTable[Any]:
        """The record table ``name`` of ``model`` records (created on first use; see
        :mod:`rhizome.core.store.records`)."""
        with self._lock:
            table = self._tables.get(name)
            if table is None:
                table = RecordTable(self, name, model, key=key, lookups=lookups)
                if not self.readonly:
                    with self.transaction() as db:
                        table.create(db)
                self._tables[name] = table
            return table

    # -- vectors -------------------------------------------------------------------------------
    @property
    def embedding_dimension(self) -> int | None:
        """The dimension of the index's vectors, once known. A reader that opened the index
        before its first vector was stored learns it from the records on a later call."""
        if self.manifest.embedding_dimension is None and self.readonly:
            self.manifest.embedding_dimension = self._stored_dimension()
        return self.manifest.embedding_dimension

    def vector_digests(self, collection: str, ids: Iterable[str]) -> dict[str, str]:
        """The text digests stored with the vectors of ``ids`` (ids without a vector are absent)."""
        out: dict[str, str] = {}
        for part in batches(list(dict.fromkeys(ids))):
            marks = ",".join("?" * len(part))
            out.update(self.query(f"SELECT id, digest FROM vectors WHERE collection = ? AND id IN ({marks})", [collection, *part]))
        return out

    def vector_generation(self, collection: str) -> int:
        """How often the vector collection was written: cache what you derive from its vectors
        (a centroid, a matrix) on it."""
        return self.generation(vectors_generation(collection))

    def vector_ids(self, collection: str) -> list[str]:
        return [r[0] for r in self.query("SELECT id FROM vectors WHERE collection = ?", (collection,))]

    def delete_vectors(self, db: Connection, collection: str, ids: Sequence[str]) -> None:
        for part in batches(list(ids)):
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM vectors WHERE collection = ? AND id IN ({marks})", [collection, *part])
        self.bump(db, vectors_generation(collection))

    def collections(self) -> list[str]:
        """The names of the vector collections that hold vectors."""
        return [r[0] for r in self.query("SELECT DISTINCT collection FROM vectors ORDER BY collection")]

    def has_collection(self, name: str) -> bool:
        """Whether the collection holds any vector. Outside a transaction the answer is kept
        with the collection's generation and given again while that is unchanged: every search
        asks it of each collection it reads, and inside a search (:func:`generations_held`) the
        generation costs no query (on a server, one round trip fewer per collection)."""
        if self._transactions:
            return self._holds(name)
        generation = self.generation(vectors_generation(name))
        known = self._holding.get(name)
        if known is not None and known[0] == generation:
            return known[1]
        found = self._holds(name)
        self._holding[name] = (generation, found)  # read after the generation: at most newer than it
        return found

    def _holds(self, name: str) -> bool:
        return bool(self.query("SELECT 1 FROM vectors WHERE collection = ? LIMIT 1", (name,)))

    def save_snapshots(self) -> None:
        """Bring what is kept outside the records up to date (the faiss snapshots of a
        directory) and the manifest's counts."""
        if self.readonly:
            return
        with self._lock:
            self._save_collections()
            self.manifest.stats = {"documents": self.count("documents"), "chunks": self.count("chunks")}
            self.write_manifest()

    # -- everything, table by table ------------------------------------------------------------
    def contents(self) -> dict[str, list[tuple]]:
        """Everything the index stores that two equal builds share, table by table, in a stable
        order (what a resumed or distributed build must equal row for row)."""
        tables = {
            "documents": "SELECT id, content_hash, n_chunks, status FROM documents ORDER BY id",
            "document_status": "SELECT id, status FROM document_status ORDER BY id",
            "chunks": "SELECT id, document_id, idx, text FROM chunks ORDER BY id",
            "vectors": "SELECT collection, id, digest FROM vectors ORDER BY collection, id",
            "stage_results": "SELECT stage, digest FROM stage_results ORDER BY stage, digest",
        }
        out = {name: [tuple(r) for r in self.query(sql)] for name, sql in tables.items()}
        for name in sorted(self.record_tables()):
            out[name] = [tuple(r) for r in self.query(f"SELECT key, data FROM {name} ORDER BY key")]
        return out

    def copy_to(self, location: str | Path) -> None:
        """Write a complete copy of this index (records, vectors, manifest) to ``location``, a
        directory or a database of either backend. The copy is an index of its own, with a new id."""
        manifest = self.manifest.model_copy(deep=True)
        manifest.index_id = uuid.uuid4().hex
        manifest.updated = _now()
        with self._lock:
            # the copy is published by its manifest, written once its records are complete: a
            # copy cut short holds no index and the same call can start it again
            target = IndexStore.create(location, manifest, publish=False)
            try:
                with target.transaction() as db:
                    target._hold_creation(db)
                    self._copy_rows(db, target)
                    manifest.stats = {"documents": self.count("documents"), "chunks": self.count("chunks")}
                    db.upsert("meta", ("key", "value"), ("key",), [("manifest", manifest.model_dump_json(indent=2))])
                target.save_snapshots()  # the snapshots, then the manifest file of a directory
            finally:
                target.close()

    def _copy_rows(self, db: Connection, target: IndexStore) -> None:
        plain = {
            "documents": ("id", "content_hash", "metadata", "status", "n_chunks", "updated"),
            "document_status": ("id", "content_hash", "status", "error", "updated"),
            "chunks": CHUNK_COLUMNS,
            "stage_results": ("stage", "digest", "value"),
        }
        keys = {"documents": ("id",), "document_status": ("id",), "chunks": ("id",), "stage_results": ("stage", "digest")}
        for table, columns in plain.items():
            select = ", ".join('"end"' if c == "end" else c for c in columns)
            db.upsert(table, columns, keys[table], self.query(f"SELECT {select} FROM {table} ORDER BY rowid"))
        for table, fields in self.record_tables().items():
            target.create_record_table(db, table, [c[2:] for c in fields if c.startswith("f_")])
            db.upsert(table, fields, ("key",), self.query(f"SELECT {', '.join(fields)} FROM {table} ORDER BY rowid"))
        for name in self.collections():
            ids, vectors, digests = self.vector_rows(name)
            if vectors is not None:
                target.put_vectors(db, name, ids, vectors, digests)
        meta = [(k, v) for k, v in self.query("SELECT key, value FROM meta ORDER BY key") if k not in ("index", "manifest")]
        db.upsert("meta", ("key", "value"), ("key",), meta)


CHUNK_COLUMNS = ("id", "document_id", "idx", "text", "start", "end", "n_tokens", "metadata", "checksum")


def text_checksum(text: str) -> str:
    """CRC-32 of a chunk's text: cheap enough to verify on every read."""
    return f"{zlib.crc32(text.encode('utf-8')):08x}"


def vectors_generation(collection: str) -> str:
    """The generation name of a vector collection."""
    return f"vectors/{collection}"


def method_registry() -> dict[str, Any]:
    """Index classes by method name, from the ``rhizome.methods`` entry points (a new dict at
    each call, from a scan kept while the import path and its folders are unchanged)."""
    return dict(_registry_scan(_import_path_state()))


def _import_path_state() -> tuple[tuple[str, int], ...]:
    """Each folder on the import path with the time it last changed: installing or removing a
    distribution adds or removes a ``*.dist-info`` folder in one of them, which changes it."""
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, -1))
    return tuple(state)


@functools.lru_cache(maxsize=4)
def _registry_scan(path_state: tuple[tuple[str, int], ...]) -> tuple[tuple[str, Any], ...]:
    """The ``rhizome.methods`` entry points (``path_state``: only the key). Scanning every
    installed distribution's metadata takes tens of milliseconds; the conformance kit, the CLI
    and :func:`load_index` ask for the registry at every index they open."""
    return tuple((entry.name, entry) for entry in importlib.metadata.entry_points(group="rhizome.methods"))


LOAD_OPTIONS = frozenset({"embedder", "llm", "offline", "readonly", "batch_size", "progress", "cache", "extraction", "workers"})
"""Keyword arguments of ``load()`` / :func:`load_index` (models and session options)."""


def split_load_options(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``kwargs`` split into what opens an index (:data:`LOAD_OPTIONS`) and the rest (a mode and
    its retriever settings), for helpers that open an index and build a retriever in one call."""
    return {k: v for k, v in kwargs.items() if k in LOAD_OPTIONS}, {k: v for k, v in kwargs.items() if k not in LOAD_OPTIONS}


def load_index(location: str | Path, **models: Any) -> Any:
    """Open any method's index (a directory or a ``postgresql://`` URL): reads the manifest and
    dispatches to the method's ``load(location, **models)``. Models not given are rebuilt from
    the specs in the manifest."""
    manifest = read_manifest(location)
    registry = method_registry()
    if manifest.method not in registry:
        raise IndexMismatchError(
            f"{shown(location)} is a {manifest.method!r} index but no installed package provides that method "
            f"(installed: {', '.join(sorted(registry)) or 'none'}); install rhizome-{manifest.method}"
        )
    return registry[manifest.method].load().load(location, **models)


__all__ = [
    "FORMAT_VERSION",
    "Collection",
    "Connection",
    "IndexStore",
    "Manifest",
    "as_location",
    "has_index",
    "is_url",
    "load_index",
    "shown",
    "file_in_the_way",
    "generations_held",
    "damaged_left_out",
    "DamagedChunk",
    "stored_chunk_text",
    "method_registry",
    "split_load_options",
    "read_manifest",
]
