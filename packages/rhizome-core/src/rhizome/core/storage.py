"""The index directory: a manifest, an SQLite database of records, and vector files.

```
my-index/
  manifest.json        format version, method, model names, embedding dimension, configuration
  records.sqlite       documents, chunks, vectors (as blobs), stage results and the method's
                       record tables (WAL mode)
  vectors/<name>.npz   faiss snapshot of one vector collection, rebuilt from SQLite when it does
                       not match (generation, index id and id set are checked)
```

The directory itself is ``flock``-ed by the one process allowed to write.

SQLite is the source of truth: it holds the index's id and method and a copy of the manifest
(see :mod:`rhizome.core.integrity` for check and repair); every insert commits documents, chunks and vectors in one
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
import uuid
import weakref
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from rhizome.core.aio import WriteLock
from rhizome.core.errors import (
    IndexCorruptError,
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
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, n_tokens INTEGER NOT NULL, metadata TEXT NOT NULL,
    checksum TEXT NOT NULL DEFAULT '');
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

    def __init__(self, path: Path | None, manifest: Manifest, *, readonly: bool = False, new: bool = False) -> None:
        self.path = path
        self.manifest = manifest
        self.readonly = readonly
        self._lock = threading.RLock()
        self._lock_fd: int | None = None
        self._owned: dict[Path, tuple[int, int]] = {}
        """(device, inode) of the directory and the records file this writer opened: checked
        before each commit, so a directory moved or a database replaced under it is noticed."""
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
            if not new:
                _require_records(path)
            if not readonly:
                self._acquire_writer_lock()
            try:
                with self._errors():
                    uri = f"file:{path / RECORDS}{'?mode=ro' if readonly else ''}"
                    self.db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=30.0)
                    if not readonly:
                        self.db.execute("PRAGMA journal_mode=WAL")
                        self.db.execute("PRAGMA synchronous=NORMAL")
                        if not new:
                            self._quick_check()
            except BaseException:
                self._release_writer_lock()
                raise
        with self._errors():
            if not readonly:
                self.db.executescript(_SCHEMA)
                self._migrate()
            self._chunk_columns = _CHUNK_COLUMNS if self._has_column("chunks", "checksum") else _CHUNK_COLUMNS_UNCHECKED
        if path is not None and not readonly:
            self._owned = {p: _identity(p) for p in (path, path / RECORDS)}
        self._check_identity()

    def _migrate(self) -> None:
        """Bring a database written by an earlier version of this format up to date."""
        if not self._has_column("chunks", "checksum"):
            self.db.execute("ALTER TABLE chunks ADD COLUMN checksum TEXT NOT NULL DEFAULT ''")

    def _has_column(self, table: str, column: str) -> bool:
        return any(row[1] == column for row in self.db.execute(f"PRAGMA table_info({table})"))

    def _quick_check(self) -> None:
        """SQLite's own page-level check (``PRAGMA quick_check``), before anything is written
        into a damaged file."""
        found = [row[0] for row in self.db.execute("PRAGMA quick_check(5)")]
        if found != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(found))

    def _check_identity(self) -> None:
        """Records and manifest must name the same index and method. An index written before
        ids gets one on its first writable open."""
        stored = self.get_meta("index")
        if stored is None:
            if self.readonly:
                return
            self.manifest.index_id = self.manifest.index_id or uuid.uuid4().hex
            with self.transaction() as db:
                self.set_meta(db, "index", {"id": self.manifest.index_id, "method": self.manifest.method})
            self.write_manifest()
            return
        if stored.get("id") != self.manifest.index_id or stored.get("method") != self.manifest.method:
            raise IndexCorruptError(
                f"{self.path or 'memory'}: the manifest (index {self.manifest.index_id}, method {self.manifest.method!r}) "
                f"does not belong to the records (index {stored.get('id')}, method {stored.get('method')!r}); "
                f"`rhizome repair {self.path}` rewrites the manifest from the records. Nothing was changed"
            )

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Raise damage to the database file as :class:`IndexCorruptError` naming the file and
        what to do, not as a raw ``sqlite3`` error."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            where = self.path / RECORDS if self.path is not None else "the in-memory database"
            raise IndexCorruptError(
                f"{where} is damaged ({exc}); nothing more was written to it. Run `rhizome check "
                f"{self.path}` for details, then restore the file from a backup or index the documents "
                "again into a new directory"
            ) from exc

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
        _refuse_orphans(path, clear=True)
        path.mkdir(parents=True, exist_ok=True)
        with _OPEN_LOCK:
            store = cls(path, manifest, new=True)
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
        """Take the exclusive ``flock`` on the index directory itself: no file that a user
        could delete holds it, so it cannot be bypassed."""
        assert self.path is not None
        if fcntl is None:  # pragma: no cover
            return
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise IndexLockedError(
                f"{self.path} is open for writing elsewhere (another process, or another index "
                "object in this one: close() it first); wait for the writer to finish, or open "
                "the index read-only (readonly=True) to query it meanwhile"
            ) from exc
        self._lock_fd = fd

    def _release_writer_lock(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)  # type: ignore[union-attr]
                os.close(self._lock_fd)
            self._lock_fd = None

    def _verify_owner(self) -> None:
        """Before a commit: the directory and database are still the ones this writer locked."""
        for owned, identity in self._owned.items():
            try:
                now = _identity(owned)
            except FileNotFoundError:
                now = None
            if now != identity:
                raise IndexLockedError(
                    f"{owned} was moved, deleted or replaced while this process was writing to {self.path}; "
                    "the change was not committed. Close the index and open it again"
                )

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
            if hasattr(self, "db"):
                self.db.close()
            self._release_writer_lock()

    def __del__(self) -> None:  # release the writer lock if the user forgot close()
        with contextlib.suppress(Exception):
            self._close()

    def write_manifest(self) -> None:
        """Write ``manifest.json``, and its copy in the records (from which ``repair`` restores it)."""
        if self.readonly:
            return
        self.manifest.updated = _now()
        text = self.manifest.model_dump_json(indent=2)
        with self._lock, self._errors():
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('manifest', ?)", (text,))
        if self.path is not None:
            _atomic_write(self.path / MANIFEST, text)

    # -- transactions --------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: everything inside commits together or not at all."""
        if self.readonly:
            raise IndexLockedError("this index was opened read-only")
        with self._lock, self._errors():
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
                self._verify_owner()
            except BaseException:
                self.db.execute("ROLLBACK")
                # faiss mirrors may hold vectors of the rolled-back batch: rebuild them on demand
                self._collections.clear()
                self._loaded.clear()
                raise
            else:
                self.db.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
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
            'INSERT OR REPLACE INTO chunks (id, document_id, idx, text, start, "end", n_tokens, metadata, checksum)'
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (c.id, c.document_id, c.index, c.text, c.start, c.end, c.n_tokens, json.dumps(c.metadata, default=str), text_checksum(c.text))
                for c in chunks
            ],
        )

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Stored chunks by id (unknown ids are absent from the result). Each text is checked
        against the checksum stored with it: :class:`IndexCorruptError` when it was changed."""
        out: dict[str, Chunk] = {}
        for part in batches(list(chunk_ids)):
            marks = ",".join("?" * len(part))
            for row in self.query(f"SELECT {self._chunk_columns} FROM chunks WHERE id IN ({marks})", part):
                out[row[0]] = self._chunk(row)
        return out

    def chunks_of(self, document_id: str) -> list[Chunk]:
        rows = self.query(f"SELECT {self._chunk_columns} FROM chunks WHERE document_id = ? ORDER BY idx", (document_id,))
        return [self._chunk(r) for r in rows]

    def _chunk(self, row: tuple) -> Chunk:
        if row[8] and row[8] != text_checksum(row[3]):
            raise IndexCorruptError(
                f"the stored text of chunk {row[0]} (document {row[1]!r}) in {self.path or 'memory'} does not match "
                "its checksum: it was changed outside Rhizome. Delete that document and insert it again; "
                f"`rhizome check {self.path}` lists every such chunk"
            )
        return Chunk(
            id=row[0], document_id=row[1], index=row[2], text=row[3], start=row[4], end=row[5],
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
    @property
    def embedding_dimension(self) -> int | None:
        """The dimension of the index's vectors, once known. A reader that opened the index
        before its first vector was stored learns it from the records on a later call."""
        if self.manifest.embedding_dimension is None and self.readonly:
            rows = self.query("SELECT length(vector) FROM vectors LIMIT 1")
            if rows:
                self.manifest.embedding_dimension = int(rows[0][0]) // 4
        return self.manifest.embedding_dimension

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

    def vector_generation(self, collection: str) -> int:
        """How often the vector collection was written: cache what you derive from its vectors
        (a centroid, a matrix) on it."""
        return self.generation(_vectors(collection))

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
        """The faiss collection ``name``: from memory, else its snapshot file if it matches the
        database, else rebuilt from the vectors in SQLite. A read-only store reloads a
        collection that another process changed since it was loaded."""
        with self._lock:
            if name in self._collections and not (self.readonly and self._loaded.get(name) != self.generation(_vectors(name))):
                return self._collections[name]
            with self._read():  # the generation, the ids and the vectors of one committed state
                generation = self.generation(_vectors(name))
                ids = [r[0] for r in self.query("SELECT id FROM vectors WHERE collection = ?", (name,))]
                store = self._load_snapshot(name, generation, ids)
                if store is None:
                    store = self._rebuild_collection(name, dimension)
            self._collections[name] = store
            self._loaded[name] = generation
            return store

    def _rebuild_collection(self, name: str, dimension: int | None) -> VectorStore:
        rows = self.query("SELECT id, vector FROM vectors WHERE collection = ?", (name,))
        dimension = dimension or self.embedding_dimension
        if dimension is None:
            if not rows:
                raise IndexFormatError(f"vector collection {name!r} is empty and has no known dimension")
            dimension = len(rows[0][1]) // 4
        store = VectorStore(dimension)
        if rows:
            if any(len(r[1]) != 4 * dimension for r in rows):
                raise IndexCorruptError(
                    f"vector collection {name!r} in {self.path or 'memory'} holds vectors of another length than "
                    f"{dimension} dimensions; the records are damaged: restore them from a backup or re-index"
                )
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
            store.add([r[0] for r in rows], matrix)
        return store

    @contextlib.contextmanager
    def _read(self) -> Iterator[None]:
        """One read transaction (nothing to do inside a write transaction, which already is one)."""
        if self.db.in_transaction:
            yield
            return
        with self._errors():
            self.db.execute("BEGIN")
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("COMMIT")

    def _snapshot_path(self, name: str) -> Path:
        assert self.path is not None
        return self.path / "vectors" / f"{name}.npz"

    def _load_snapshot(self, name: str, generation: int, ids: Sequence[str]) -> VectorStore | None:
        """The snapshot file of a collection, when it is this index's (by id), of the database's
        generation and holds exactly the ids the database holds; else ``None`` (rebuild)."""
        if self.path is None or not self._snapshot_path(name).exists():
            return None
        try:
            store, meta = VectorStore.load(self._snapshot_path(name))
        except IndexFormatError:
            return None  # damaged snapshot: rebuild from the database
        if (
            meta.get("generation") != generation
            or meta.get("index_id") != self.manifest.index_id
            or len(store) != len(ids)
            or set(store.ids()) != set(ids)
        ):
            return None
        self._saved[name] = generation
        return store

    def rebuild_snapshots(self) -> list[str]:
        """Rebuild every vector collection from the records, ignoring its snapshot file, and
        write the snapshots anew; returns the collections' names (``rhizome repair``)."""
        with self._lock:
            names = [r[0] for r in self.query("SELECT DISTINCT collection FROM vectors")]
            for name in names:
                self._collections[name] = self._rebuild_collection(name, None)
                self._saved.pop(name, None)
            self.save_snapshots()
        return names

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
                store.save(self._snapshot_path(name), meta={"generation": generation, "index_id": self.manifest.index_id})
                self._saved[name] = generation
            self.manifest.stats = {
                "documents": self.count("documents"),
                "chunks": self.count("chunks"),
            }
            self.write_manifest()

    # -- copying -------------------------------------------------------------------------------
    def copy_to(self, path: str | Path) -> None:
        """Write a complete copy of this index (records, snapshots, manifest) to ``path``. The
        copy is an index of its own, with a new id."""
        target = Path(path)
        if (target / MANIFEST).exists():
            raise InvalidInputError(f"{target} already holds an index; choose an empty directory")
        _refuse_orphans(target)
        target.mkdir(parents=True, exist_ok=True)
        manifest = self.manifest.model_copy(deep=True)
        manifest.index_id = uuid.uuid4().hex
        manifest.updated = _now()
        with self._lock:
            for (name,) in self.query("SELECT DISTINCT collection FROM vectors"):
                self.collection(name)
            manifest.stats = {"documents": self.count("documents"), "chunks": self.count("chunks")}
            text = manifest.model_dump_json(indent=2)
            tmp = target / (RECORDS + ".tmp")
            with contextlib.closing(sqlite3.connect(tmp, isolation_level=None)) as out:
                self.db.backup(out)
                self.set_meta(out, "index", {"id": manifest.index_id, "method": manifest.method})
                out.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('manifest', ?)", (text,))
            os.replace(tmp, target / RECORDS)
            for name, store in self._collections.items():
                meta = {"generation": self.generation(_vectors(name)), "index_id": manifest.index_id}
                store.save(target / "vectors" / f"{name}.npz", meta=meta)
            _atomic_write(target / MANIFEST, text)


_CHUNK_COLUMNS = 'id, document_id, idx, text, start, "end", n_tokens, metadata, checksum'
_CHUNK_COLUMNS_UNCHECKED = _CHUNK_COLUMNS.replace("checksum", "''")
"""A read-only open of a database written before chunk checksums."""


def text_checksum(text: str) -> str:
    """CRC-32 of a chunk's text: cheap enough to verify on every read."""
    return f"{zlib.crc32(text.encode('utf-8')):08x}"


def _identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether a sqlite3 error means the file is damaged or gone (not a locked database, a
    missing table or a constraint)."""
    if type(exc) is sqlite3.DatabaseError:  # "file is not a database", "disk image is malformed"
        return True
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and any(
        w in text for w in ("malformed", "disk i/o error", "not a database", "unable to open database")
    )


def _require_records(path: Path) -> None:
    """An index directory whose database is missing or empty is refused: opening it would
    start an empty index over the surviving manifest and snapshots."""
    records = path / RECORDS
    size = records.stat().st_size if records.exists() else None
    wal = path / (RECORDS + "-wal")
    if size is None or (size == 0 and not (wal.exists() and wal.stat().st_size)):
        state = "missing" if size is None else "empty (0 bytes)"
        raise IndexCorruptError(
            f"{records} is {state}, but {path} holds an index ({MANIFEST}"
            f"{', vector snapshots' if (path / 'vectors').exists() else ''}); the records are its source of truth, "
            "so it cannot be opened. Nothing was changed: restore the file from a backup, or move the "
            "directory away and index the documents again"
        )


def _refuse_orphans(path: Path, *, clear: bool = False) -> None:
    """A new index is not created over the records of an index whose manifest is gone. Records
    that hold nothing yet (a creation cut short before its manifest was written) are no index:
    with ``clear`` they are removed so the creation can start again."""
    records = path / RECORDS
    if not records.exists():
        return
    if not _holds_data(records):
        if clear:
            for leftover in (records, path / (RECORDS + "-wal"), path / (RECORDS + "-shm")):
                leftover.unlink(missing_ok=True)
        return
    raise IndexCorruptError(
        f"{path} holds the records of an index ({RECORDS}) but no {MANIFEST}; a new index there would "
        f"mix with them. Run `rhizome repair {path}` to restore the manifest from the records, or choose "
        "another directory"
    )


def _holds_data(records: Path) -> bool:
    """Whether a records file holds any document, chunk, vector or result (an unreadable file
    counts as holding data: it is never removed)."""
    if not records.stat().st_size and not (records.parent / (RECORDS + "-wal")).exists():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{records}?mode=ro", uri=True, timeout=30.0)) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            return any(db.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchall() for t in tables if t != "meta")
    except sqlite3.Error:
        return True


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
        _refuse_orphans(path)
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
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        raise IndexFormatError(f"{manifest_path} is not a valid manifest: {exc}") from exc
    _verify_records_identity(path, manifest)
    return manifest


def _verify_records_identity(path: Path, manifest: Manifest) -> None:
    """The manifest must name the index and method its records were written by (one small
    read): a manifest edited, copied or left from another index is refused before anything
    is opened with it. Records that cannot be read are left to the open to report."""
    records = path / RECORDS
    if not records.exists() or not records.stat().st_size:
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{records}?mode=ro", uri=True, timeout=30.0)) as db:
            rows = db.execute("SELECT value FROM meta WHERE key = 'index'").fetchall()
    except sqlite3.Error:
        return
    stored = json.loads(rows[0][0]) if rows else None
    if stored is None:
        return  # written before ids: the first writable open records them
    if stored.get("id") != manifest.index_id:
        raise IndexCorruptError(
            f"{path}: {MANIFEST} and {RECORDS} belong to different indexes (ids {manifest.index_id} and "
            f"{stored.get('id')}); `rhizome repair {path}` rewrites the manifest from the records, which are "
            "the source of truth. Nothing was changed"
        )
    if stored.get("method") != manifest.method:
        raise IndexCorruptError(
            f"{path}: {MANIFEST} says the method is {manifest.method!r} but the records were written by "
            f"{stored.get('method')!r}; `rhizome repair {path}` rewrites the manifest from the records. "
            "Nothing was changed"
        )


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
