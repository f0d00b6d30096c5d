"""The index directory: a manifest, an SQLite database of records, and vector files.

```
my-index/
  manifest.json        format version, method, model names, embedding dimension, configuration
  records.sqlite       documents, chunks, vectors (as blobs), stage results and the method's
                       record tables (WAL mode)
  vectors/<name>.npz   faiss snapshot of one vector collection, rebuilt from SQLite when stale
  .writer.lock         held by the one process allowed to write
```

SQLite is the source of truth: every insert commits documents, chunks and vectors in one
transaction per batch, so an interrupted run loses at most the batch in flight and a re-run
resumes without duplicates. The faiss files are a fast-loading snapshot; each records the
generation of its collection, and a snapshot older than the database is rebuilt on open.
Readers open the database read-only, never block the writer (WAL), and pick up the newest
committed generation of a collection on their next search.

Within one process, every writable open of the same directory shares one store (and its
writer lock), so ``persist(d)`` followed by ``load(d)`` or ``from_persist_dir(d)`` works; a
second *process* gets :class:`~rhizome.core.errors.IndexLockedError`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib.metadata
import json
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from rhizome.core.aio import WriteLock
from rhizome.core.errors import (
    IndexFormatError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
    InvalidInputError,
)
from rhizome.core.records import RecordTable, batches
from rhizome.core.types import Chunk, Document
from rhizome.core.vectors import VectorStore

FORMAT_VERSION = 2
"""2: configuration objects, typed record tables and stage results (1: method key-value rows)."""
MANIFEST = "manifest.json"
RECORDS = "records.sqlite"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


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
    rhizome_version: str = Field(default_factory=_version)
    created: str = Field(default_factory=_now)
    updated: str = Field(default_factory=_now)
    models: dict[str, str | None] = Field(default_factory=dict)
    """Model specs, e.g. ``{"embedder": "ollama:nomic-embed-text", "llm": "ollama:qwen2.5:7b"}``."""
    embedding_dimension: int | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    """The method's configuration object as JSON (see :mod:`rhizome.core.config`)."""
    stats: dict[str, int] = Field(default_factory=dict)


class DocumentStatus(BaseModel):
    """Where one document stands (see :meth:`IndexStore.statuses`)."""

    id: str
    status: str
    error: str | None = None
    updated: str


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, metadata TEXT NOT NULL,
    status TEXT NOT NULL, n_chunks INTEGER NOT NULL DEFAULT 0, updated TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS document_status (
    id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, status TEXT NOT NULL, error TEXT, updated TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, document_id TEXT NOT NULL, idx INTEGER NOT NULL, text TEXT NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, n_tokens INTEGER NOT NULL, metadata TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks(document_id, idx);
CREATE TABLE IF NOT EXISTS vectors (
    collection TEXT NOT NULL, id TEXT NOT NULL, vector BLOB NOT NULL, digest TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (collection, id));
CREATE TABLE IF NOT EXISTS stage_results (
    stage TEXT NOT NULL, digest TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (stage, digest));
"""

_OPEN: weakref.WeakValueDictionary[str, IndexStore] = weakref.WeakValueDictionary()
"""Writable stores open in this process, by resolved directory (shared by every open)."""
_OPEN_LOCK = threading.Lock()


class IndexStore:
    """Records, vectors and manifest of one index; in memory when ``path`` is ``None``.

    Use :meth:`create` or :meth:`open`; every method-specific index builds on one of these.
    """

    def __init__(self, path: Path | None, manifest: Manifest, *, readonly: bool = False) -> None:
        self.path = path
        self.manifest = manifest
        self.readonly = readonly
        self._lock = threading.RLock()
        self._lock_file: Any = None
        self._collections: dict[str, VectorStore] = {}
        self._loaded: dict[str, int] = {}
        """Generation of each collection held in memory (checked by readers before a search)."""
        self._saved: dict[str, int] = {}
        """Generation of each collection's snapshot file, when known to match the database."""
        self._tables: dict[str, RecordTable[Any]] = {}
        self._users = 1
        self.memo: dict[tuple[str, str], Any] = {}
        """Stage results a read-only store computed (it cannot write them to the database)."""
        self.write_lock = WriteLock()
        """Serialises inserts and deletes of every index object on this store, across threads
        and event loops."""
        if path is None:
            self.db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        else:
            if not readonly:
                self._acquire_writer_lock()
            uri = f"file:{path / RECORDS}{'?mode=ro' if readonly else ''}"
            self.db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=30.0)
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
        if not readonly:
            self.db.executescript(_SCHEMA)

    # -- lifecycle -----------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path | None, manifest: Manifest) -> IndexStore:
        """A new index at ``path`` (which must not already hold one), or in memory."""
        if path is None:
            return cls(None, manifest)
        path = Path(path)
        if (path / MANIFEST).exists():
            raise InvalidInputError(
                f"{path} already holds an index; open it with load() to add documents, or choose "
                "another directory"
            )
        path.mkdir(parents=True, exist_ok=True)
        with _OPEN_LOCK:
            store = cls(path, manifest)
            store.write_manifest()
            _OPEN[str(path.resolve())] = store
        return store

    @classmethod
    def open_or_create(cls, path: str | Path | None, manifest: Manifest, *, readonly: bool = False) -> IndexStore:
        """Open the index at ``path`` when there is one (it must be of ``manifest.method`` and,
        when the manifest names one, of its embedder), else create it."""
        if path is not None and (Path(path) / MANIFEST).exists():
            return cls.open(path, method=manifest.method, embedder=manifest.models.get("embedder"), readonly=readonly)
        if readonly:
            raise IndexNotFoundError(f"no Rhizome index at {path} to open read-only; build one first")
        return cls.create(path, manifest)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        method: str | None = None,
        embedder: str | None = None,
        dimension: int | None = None,
        readonly: bool = False,
    ) -> IndexStore:
        """Open an existing index, checking format version, method and embedding model. A
        writable open of a directory this process already has open shares that store."""
        with _OPEN_LOCK:
            shared = None if readonly else _OPEN.get(str(Path(path).resolve()))
            manifest = shared.manifest if shared is not None and not shared.closed else read_manifest(path)
            if method is not None and manifest.method != method:
                raise IndexMismatchError(
                    f"{path} is a {manifest.method!r} index, not {method!r}; open it with "
                    f"rhizome.core.storage.load_index() or the {manifest.method} package"
                )
            built_with = manifest.models.get("embedder")
            if embedder is not None and built_with is not None and embedder != built_with:
                raise IndexMismatchError(
                    f"{path} was built with the embedder {built_with!r}, not {embedder!r}; vectors of "
                    f"different models cannot be compared. Query it with {built_with!r}, or re-index "
                    "into a new directory with the new embedder"
                )
            if (
                dimension is not None
                and manifest.embedding_dimension is not None
                and dimension != manifest.embedding_dimension
            ):
                raise IndexMismatchError(
                    f"{path} holds {manifest.embedding_dimension}-dimensional vectors but the embedder "
                    f"gives {dimension}; use the embedder the index was built with ({built_with})"
                )
            if shared is not None and not shared.closed:
                shared._users += 1
                return shared
            store = cls(Path(path), manifest, readonly=readonly)
            if not readonly:
                _OPEN[str(Path(path).resolve())] = store
            return store

    def _acquire_writer_lock(self) -> None:
        assert self.path is not None
        if fcntl is None:  # pragma: no cover
            return
        handle = open(self.path / ".writer.lock", "a+")  # noqa: SIM115 - held until close()
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            handle.close()
            raise IndexLockedError(
                f"{self.path} is open for writing elsewhere (another process, or another index "
                "object in this one: close() it first); wait for the writer to finish, or open "
                "the index read-only (readonly=True) to query it meanwhile"
            ) from exc
        self._lock_file = handle

    @property
    def closed(self) -> bool:
        return self._users <= 0

    def close(self) -> None:
        """Close this handle; the store closes (and releases the writer lock) when the last
        index object sharing it closes."""
        with _OPEN_LOCK:
            self._users -= 1
            if self._users > 0:
                return
        self._close()

    def _close(self) -> None:
        with self._lock:
            self.db.close()
            if self._lock_file is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)  # type: ignore[union-attr]
                self._lock_file.close()
                self._lock_file = None

    def __del__(self) -> None:  # release the writer lock if the user forgot close()
        with contextlib.suppress(Exception):
            self._close()

    def write_manifest(self) -> None:
        if self.path is None or self.readonly:
            return
        self.manifest.updated = _now()
        _atomic_write(self.path / MANIFEST, self.manifest.model_dump_json(indent=2))

    # -- transactions --------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: everything inside commits together or not at all."""
        if self.readonly:
            raise IndexLockedError("this index was opened read-only")
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                # faiss mirrors may hold vectors of the rolled-back batch: rebuild them on demand
                self._collections.clear()
                self._loaded.clear()
                raise
            else:
                self.db.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
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
        except sqlite3.OperationalError:  # read-only open of an index written before the table
            rows = []
        for doc_id, status, error, updated in rows:
            found[doc_id] = DocumentStatus(id=doc_id, status=status, error=error, updated=updated)
        return [found[k] for k in sorted(found)]

    @staticmethod
    def set_status(db: sqlite3.Connection, documents: Iterable[tuple[str, str]], status: str, error: str | None = None) -> None:
        """Record ``status`` (``pending``, ``processing`` or ``failed``) of documents given as
        ``(id, content_hash)`` pairs; :meth:`clear_status` removes it once they are stored."""
        now = _now()
        db.executemany(
            "INSERT OR REPLACE INTO document_status (id, content_hash, status, error, updated) VALUES (?, ?, ?, ?, ?)",
            [(doc_id, digest, status, error, now) for doc_id, digest in documents],
        )

    @staticmethod
    def clear_status(db: sqlite3.Connection, document_ids: Iterable[str]) -> None:
        db.executemany("DELETE FROM document_status WHERE id = ?", [(d,) for d in document_ids])

    @staticmethod
    def put_document(db: sqlite3.Connection, document: Document, content_hash: str, status: str, n_chunks: int = 0) -> None:
        db.execute(
            "INSERT OR REPLACE INTO documents (id, content_hash, metadata, status, n_chunks, updated)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (document.id, content_hash, json.dumps(document.metadata, default=str), status, n_chunks, _now()),
        )

    @staticmethod
    def put_chunks(db: sqlite3.Connection, chunks: Sequence[Chunk]) -> None:
        db.executemany(
            'INSERT OR REPLACE INTO chunks (id, document_id, idx, text, start, "end", n_tokens, metadata)'
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (c.id, c.document_id, c.index, c.text, c.start, c.end, c.n_tokens, json.dumps(c.metadata, default=str))
                for c in chunks
            ],
        )

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Stored chunks by id (unknown ids are absent from the result)."""
        out: dict[str, Chunk] = {}
        for part in batches(list(chunk_ids)):
            marks = ",".join("?" * len(part))
            rows = self.query(
                f'SELECT id, document_id, idx, text, start, "end", n_tokens, metadata FROM chunks WHERE id IN ({marks})',
                part,
            )
            for row in rows:
                out[row[0]] = _chunk(row)
        return out

    def chunks_of(self, document_id: str) -> list[Chunk]:
        rows = self.query(
            'SELECT id, document_id, idx, text, start, "end", n_tokens, metadata FROM chunks'
            " WHERE document_id = ? ORDER BY idx",
            (document_id,),
        )
        return [_chunk(r) for r in rows]

    def chunk_ids(self, document_ids: Sequence[str] | None = None) -> list[str]:
        """Ids of the stored chunks (of ``document_ids``, or all), in the order they were stored."""
        if document_ids is None:
            return [r[0] for r in self.query("SELECT id FROM chunks ORDER BY rowid")]
        out: list[str] = []
        for part in batches(list(dict.fromkeys(document_ids))):
            marks = ",".join("?" * len(part))
            out += [r[0] for r in self.query(f"SELECT id FROM chunks WHERE document_id IN ({marks}) ORDER BY rowid", part)]
        return out

    def count(self, table: str) -> int:
        if table not in ("documents", "chunks", "vectors"):
            raise ValueError(table)
        return int(self.query(f"SELECT COUNT(*) FROM {table}")[0][0])

    # -- generations, meta values and record tables -------------------------------------------
    def generation(self, name: str) -> int:
        """How often ``name`` (a vector collection or record table) was written."""
        rows = self.query("SELECT value FROM meta WHERE key = ?", (f"generation:{name}",))
        return int(rows[0][0]) if rows else 0

    @staticmethod
    def bump(db: sqlite3.Connection, name: str) -> None:
        """Record, inside a transaction, that ``name`` changed."""
        db.execute(
            "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET"
            " value = CAST(value AS INTEGER) + 1",
            (f"generation:{name}",),
        )

    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    @staticmethod
    def set_meta(db: sqlite3.Connection, key: str, value: Any) -> None:
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def table(self, name: str, model: type[Any], *, key: str = "id", lookups: Sequence[str] = ()) -> RecordTable[Any]:
        """The record table ``name`` of ``model`` records (created on first use; see
        :mod:`rhizome.core.records`)."""
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
    def put_vectors(
        self, db: sqlite3.Connection, collection: str, ids: Sequence[str], vectors: np.ndarray, digests: Sequence[str] | None = None
    ) -> None:
        """Store vectors inside a :meth:`transaction` and mirror them into the faiss collection.
        ``digests``: a digest of the text each vector was made from (see :meth:`vector_digests`)."""
        array = np.ascontiguousarray(vectors, dtype=np.float32)
        marks = digests if digests is not None else [""] * len(ids)
        db.executemany(
            "INSERT OR REPLACE INTO vectors (collection, id, vector, digest) VALUES (?, ?, ?, ?)",
            [(collection, key, array[i].tobytes(), marks[i]) for i, key in enumerate(ids)],
        )
        self.bump(db, _vectors(collection))
        if len(ids):
            self.collection(collection, array.shape[1]).add(list(ids), array)

    def vector_digests(self, collection: str, ids: Iterable[str]) -> dict[str, str]:
        """The text digests stored with the vectors of ``ids`` (ids without a vector are absent)."""
        out: dict[str, str] = {}
        for part in batches(list(dict.fromkeys(ids))):
            marks = ",".join("?" * len(part))
            out.update(self.query(f"SELECT id, digest FROM vectors WHERE collection = ? AND id IN ({marks})", [collection, *part]))
        return out

    def vector_ids(self, collection: str) -> list[str]:
        return [r[0] for r in self.query("SELECT id FROM vectors WHERE collection = ?", (collection,))]

    def delete_vectors(self, db: sqlite3.Connection, collection: str, ids: Sequence[str]) -> None:
        for part in batches(list(ids)):
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM vectors WHERE collection = ? AND id IN ({marks})", [collection, *part])
        self.bump(db, _vectors(collection))
        if collection in self._collections:
            self._collections[collection].remove(list(ids))

    def has_collection(self, name: str) -> bool:
        """Whether the collection holds (or held, in this session) any vector."""
        with self._lock:
            if name in self._collections:
                return True
        return bool(self.query("SELECT 1 FROM vectors WHERE collection = ? LIMIT 1", (name,)))

    def collection(self, name: str, dimension: int | None = None) -> VectorStore:
        """The faiss collection ``name``: from memory, else its snapshot file if current, else
        rebuilt from the vectors in SQLite. A read-only store reloads a collection that another
        process changed since it was loaded."""
        with self._lock:
            if name in self._collections and not (self.readonly and self._loaded.get(name) != self.generation(_vectors(name))):
                return self._collections[name]
            generation = self.generation(_vectors(name))
            dimension = dimension or self.manifest.embedding_dimension
            store = self._load_snapshot(name, generation)
            if store is None:
                rows = self.query("SELECT id, vector FROM vectors WHERE collection = ?", (name,))
                if dimension is None:
                    if not rows:
                        raise IndexFormatError(f"vector collection {name!r} is empty and has no known dimension")
                    dimension = len(rows[0][1]) // 4
                store = VectorStore(dimension)
                if rows:
                    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
                    store.add([r[0] for r in rows], matrix)
            self._collections[name] = store
            self._loaded[name] = generation
            return store

    def _snapshot_path(self, name: str) -> Path:
        assert self.path is not None
        return self.path / "vectors" / f"{name}.npz"

    def _load_snapshot(self, name: str, generation: int) -> VectorStore | None:
        if self.path is None or not self._snapshot_path(name).exists():
            return None
        try:
            store, meta = VectorStore.load(self._snapshot_path(name))
        except IndexFormatError:
            return None  # damaged snapshot: rebuild from the database
        if meta.get("generation") != generation:
            return None
        self._saved[name] = int(meta["generation"])
        return store

    def save_snapshots(self) -> None:
        """Write the faiss snapshot of every loaded collection that changed since its snapshot
        was written or read, and the manifest."""
        if self.path is None or self.readonly:
            return
        with self._lock:
            for name, store in self._collections.items():
                generation = self.generation(_vectors(name))
                self._loaded[name] = generation
                if self._saved.get(name) == generation:
                    continue
                store.save(self._snapshot_path(name), meta={"generation": generation})
                self._saved[name] = generation
            self.manifest.stats = {
                "documents": self.count("documents"),
                "chunks": self.count("chunks"),
            }
            self.write_manifest()

    # -- copying -------------------------------------------------------------------------------
    def copy_to(self, path: str | Path) -> None:
        """Write a complete copy of this index (records, snapshots, manifest) to ``path``."""
        target = Path(path)
        if (target / MANIFEST).exists():
            raise InvalidInputError(f"{target} already holds an index; choose an empty directory")
        target.mkdir(parents=True, exist_ok=True)
        with self._lock:
            for (name,) in self.query("SELECT DISTINCT collection FROM vectors"):
                self.collection(name)
            tmp = target / (RECORDS + ".tmp")
            with contextlib.closing(sqlite3.connect(tmp)) as out:
                self.db.backup(out)
            os.replace(tmp, target / RECORDS)
            for name, store in self._collections.items():
                store.save(target / "vectors" / f"{name}.npz", meta={"generation": self.generation(_vectors(name))})
            manifest = self.manifest.model_copy(deep=True)
            manifest.updated = _now()
            manifest.stats = {"documents": self.count("documents"), "chunks": self.count("chunks")}
            _atomic_write(target / MANIFEST, manifest.model_dump_json(indent=2))


def _chunk(row: tuple) -> Chunk:
    return Chunk(
        id=row[0], document_id=row[1], index=row[2], text=row[3], start=row[4], end=row[5],
        n_tokens=row[6], metadata=json.loads(row[7]),
    )


def _vectors(collection: str) -> str:
    """The generation name of a vector collection."""
    return f"vectors/{collection}"


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def read_manifest(path: str | Path) -> Manifest:
    """Read and check an index manifest; typed errors for a missing, foreign or newer index."""
    path = Path(path)
    manifest_path = path / MANIFEST
    if not manifest_path.exists():
        raise IndexNotFoundError(
            f"no Rhizome index at {path} (missing {MANIFEST}); build one with `rhizome index`"
        )
    try:
        raw = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"cannot read {manifest_path}: {exc}") from exc
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"{path} uses index format version {version}, this Rhizome reads version "
            f"{FORMAT_VERSION}; rebuild the index with `rhizome index`, or install the Rhizome "
            "version that wrote it"
        )
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        raise IndexFormatError(f"{manifest_path} is not a valid manifest: {exc}") from exc


def method_registry() -> dict[str, Any]:
    """Index classes by method name, from the ``rhizome.methods`` entry points."""
    registry: dict[str, Any] = {}
    for entry in importlib.metadata.entry_points(group="rhizome.methods"):
        registry[entry.name] = entry
    return registry


LOAD_OPTIONS = frozenset({"embedder", "llm", "offline", "readonly", "batch_size", "progress", "cache", "extraction"})
"""Keyword arguments of ``load()`` / :func:`load_index` (models and session options)."""


def split_load_options(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``kwargs`` split into what opens an index (:data:`LOAD_OPTIONS`) and the rest (a mode and
    its retriever settings), for helpers that open an index and build a retriever in one call."""
    return {k: v for k, v in kwargs.items() if k in LOAD_OPTIONS}, {k: v for k, v in kwargs.items() if k not in LOAD_OPTIONS}


def load_index(path: str | Path, **models: Any) -> Any:
    """Open any method's index directory: reads the manifest and dispatches to the method's
    ``load(path, **models)``. Models not given are rebuilt from the specs in the manifest."""
    manifest = read_manifest(path)
    registry = method_registry()
    if manifest.method not in registry:
        raise IndexMismatchError(
            f"{path} is a {manifest.method!r} index but no installed package provides that method "
            f"(installed: {', '.join(sorted(registry)) or 'none'}); install rhizome-{manifest.method}"
        )
    return registry[manifest.method].load().load(path, **models)


__all__ = [
    "FORMAT_VERSION",
    "IndexStore",
    "Manifest",
    "load_index",
    "method_registry",
    "split_load_options",
    "read_manifest",
]
