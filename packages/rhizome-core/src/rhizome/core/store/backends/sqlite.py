"""The directory backend: a manifest, an SQLite database of records, and faiss snapshots.

```
my-index/
  manifest.json        format version, method, model names, embedding dimension, configuration
  records.sqlite       documents, chunks, vectors (as blobs), stage results and the method's
                       record tables (WAL mode)
  vectors/<name>.npz   faiss snapshot of one vector collection, rebuilt from SQLite when it does
                       not match (generation, index id and id set are checked)
  graphs/<name>.npz    a query graph a method derived from the records, kept for the processes
                       that open the index later (keyed by index id and records' state; a cache)
  model-calls.sqlite   the model-call cache
```

The directory itself is ``flock``-ed by the one process allowed to write (and the file a linked
``records.sqlite`` points to); a creation takes the lock before it clears or writes anything.

SQLite is the source of truth: it holds the index's id and method and a copy of the manifest
(see :mod:`rhizome.tools.integrity` for check and repair). The faiss files are a fast-loading
snapshot; each records the generation of its collection, and a snapshot older than the database
is rebuilt on open. Readers open the database read-only, never block the writer (WAL), and pick
up the newest committed generation of a collection on their next search. A second *process*
that opens the directory for writing gets :class:`~rhizome.core.errors.IndexLockedError`.
Without a location the records live in an in-memory database.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from rhizome.core import memory
from rhizome.core.errors import (
    IndexCorruptError,
    IndexFormatError,
    IndexLockedError,
    IndexNotFoundError,
    IndexWriteError,
    InvalidInputError,
    RhizomeError,
)
from rhizome.core.store import codes, outofcore
from rhizome.core.store.records import batches
from rhizome.core.store.storage import (
    MANIFEST,
    RECORDS,
    IndexStore,
    Manifest,
    check_format,
    check_identity,
    file_in_the_way,
    vectors_generation,
)
from rhizome.core.store.targets import index_directory_of
from rhizome.core.store.vectors import VectorStore

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

CACHE_FILE = "model-calls.sqlite"

logger = logging.getLogger(__name__)

_SAVED_KEY = "saved_key"
"""The array of a saved query graph's file that holds its key (JSON as bytes)."""

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


class SQLiteConnection:
    """:class:`~rhizome.core.store.storage.Connection` over one ``sqlite3`` connection (``rowid`` is
    SQLite's own; ``INSERT OR REPLACE`` gives a replaced row a new one)."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw
        self.execute = raw.execute
        self.executemany = raw.executemany

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        if rows:
            names = ", ".join('"end"' if c == "end" else c for c in columns)
            self.raw.executemany(f"INSERT OR REPLACE INTO {table} ({names}) VALUES ({','.join('?' * len(columns))})", rows)

    def begin(self) -> None:
        self.raw.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.raw.execute("COMMIT")

    def rollback(self) -> None:
        if self.raw.in_transaction:  # SQLite rolls back itself on a full disk or an I/O error
            self.raw.execute("ROLLBACK")

    @property
    def in_transaction(self) -> bool:
        return self.raw.in_transaction

    def close(self) -> None:
        self.raw.close()


class SQLiteStore(IndexStore):
    """An index directory (or an in-memory index); see the module docstring."""

    _chunk_select = IndexStore._chunk_select.replace("text", "CAST(text AS BLOB)", 1)
    """A chunk's text is read as its bytes and decoded here: SQLite keeps bytes that are not
    UTF-8 as they were written, and decoding them in the query would fail the whole read
    (:func:`~rhizome.core.store.storage.stored_chunk_text` reports that chunk instead)."""

    def __init__(self, path: Path | None, manifest: Manifest, *, readonly: bool = False, new: bool = False) -> None:
        super().__init__(path, manifest, readonly=readonly)
        self.path = path
        self._lock_fd: int | None = None
        self._lock_fds: list[int] = []
        """Further ``flock``-ed files (the target of a linked ``records.sqlite``)."""
        self._owned: dict[Path, tuple[int, int]] = {}
        """(device, inode) of the directory and the records file this writer opened: checked
        before each commit, so a directory moved or a database replaced under it is noticed."""
        self._collections: dict[str, VectorStore] = {}
        self._loaded: dict[str, int] = {}
        """Generation of each collection held in memory (checked by readers before a search)."""
        self._saved: dict[str, int] = {}
        """Generation of each collection's snapshot file, when known to match the database."""
        self._unloaded_deletes: set[str] = set()
        """Collections whose vectors were deleted while not in memory: their snapshot files are
        brought up to date (or removed, when nothing is left) with the others'."""
        if path is None:
            raw = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        else:
            if not new:
                _require_records(path)
            if not readonly:
                self._acquire_writer_lock()
            raw = None
            try:
                if new:  # under the writer lock: no other process is creating an index here now
                    _refuse_orphans(path, clear=True)
                    if (path / MANIFEST).exists():
                        raise InvalidInputError(
                            f"{path} already holds an index (created meanwhile by another process); open it "
                            "with load() to add documents, or choose another directory"
                        )
                with self._errors():
                    raw = connect_records(path / RECORDS, readonly=readonly)
                    if not readonly:
                        raw.execute("PRAGMA journal_mode=WAL")
                        raw.execute("PRAGMA synchronous=NORMAL")
                        raw.execute("PRAGMA secure_delete=ON")  # a deleted document's rows are overwritten, not left in free pages
                        if not new:
                            _quick_check(raw)
            except BaseException:
                if raw is not None:
                    raw.close()
                self._release_writer_lock()
                raise
        assert raw is not None  # connected above, or raised
        self.db = SQLiteConnection(raw)
        with self._errors():
            if not readonly:
                raw.executescript(_SCHEMA)
                if not self._has_column("chunks", "checksum"):  # written before chunk checksums
                    raw.execute("ALTER TABLE chunks ADD COLUMN checksum TEXT NOT NULL DEFAULT ''")
            if not self._has_column("chunks", "checksum"):  # a read-only open of such an index
                self._chunk_select = self._chunk_select.replace("checksum", "''")
        if path is not None and not readonly:
            self._owned = {p: _identity(p) for p in (path, path / RECORDS)}
        self._check_identity(new=new)

    def _has_column(self, table: str, column: str) -> bool:
        return any(row[1] == column for row in self.db.execute(f"PRAGMA table_info({table})"))

    # -- locations -----------------------------------------------------------------------------
    @classmethod
    def key(cls, location: str | Path) -> str:
        return str(Path(location).resolve())

    @classmethod
    def holds_index(cls, location: str | Path) -> bool:
        return (Path(location) / MANIFEST).exists()

    @classmethod
    def read_manifest(cls, location: str | Path) -> Manifest:
        path = Path(location)
        manifest_path = path / MANIFEST
        if not manifest_path.exists():
            _refuse_orphans(path)
            raise IndexNotFoundError(
                f"no Rhizome index at {path} (missing {MANIFEST}); build one with `rhizome index`"
            )
        repair = f"`rhizome repair {path}` restores it from the copy in the records"
        try:
            raw = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"cannot read {manifest_path}: {exc}; {repair}") from exc
        if not isinstance(raw, dict) or "format_version" not in raw:
            raise IndexFormatError(f"{manifest_path} is not a Rhizome manifest (it names no format version); {repair}")
        check_format(raw, path)
        try:
            manifest = Manifest.model_validate(raw)
        except ValidationError as exc:
            raise IndexFormatError(f"{manifest_path} is not a valid manifest: {exc}; {repair}") from exc
        check_identity(path, manifest, _stored_identity(path),
                       f"`rhizome repair {path}` rewrites the manifest from the records, which are the source of truth")
        return manifest

    @classmethod
    def _new(cls, location: str | Path | None, manifest: Manifest, publish: bool = True) -> SQLiteStore:
        if location is None:
            return cls(None, manifest)
        path = Path(location)
        if (blocker := file_in_the_way(path)) is not None:
            raise InvalidInputError(
                f"cannot create an index at {path}: {blocker} is a file, and an index is a directory; "
                "choose another path (or move the file away)"
            )
        if (outer := index_directory_of(path)) is not None:  # its files could be taken for the other's, or replace them
            raise InvalidInputError(
                f"cannot create an index at {path}: it is inside the index directory {outer}; choose a folder outside it"
            )
        path.mkdir(parents=True, exist_ok=True)
        store = cls(path, manifest, new=True)
        if publish:
            store.write_manifest()
        return store

    @classmethod
    def _existing(cls, location: str | Path, manifest: Manifest, readonly: bool) -> SQLiteStore:
        return cls(Path(location), manifest, readonly=readonly)

    # -- errors and the writer lock -----------------------------------------------------------
    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Raise damage to the database file as :class:`IndexCorruptError` naming the file and
        what to do, not as a raw ``sqlite3`` error."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            where = self.path / RECORDS if self.path is not None else "the in-memory database"
            if _cannot_write(exc, where):
                raise IndexWriteError(
                    f"cannot write {where} ({exc}): the file or its directory is read-only for this user, the "
                    "disk is full, or the device failed. Nothing more was written; what was committed is kept. "
                    "Give write permission or free space, then run the same call again (`rhizome check "
                    f"{self.path}` tells whether the index is sound); to search it meanwhile, open it "
                    "read-only (readonly=True)"
                ) from exc
            if not _damaged(exc):
                raise
            raise IndexCorruptError(
                f"{where} is damaged ({exc}); nothing more was written to it. Run `rhizome check "
                f"{self.path}` for details, then restore the file from a backup or index the documents "
                "again into a new directory"
            ) from exc

    def is_missing_table(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and "no such table" in str(exc)

    def _acquire_writer_lock(self) -> None:
        """Take the exclusive ``flock`` on the index directory itself: no file that a user
        could delete holds it, so it cannot be bypassed. When ``records.sqlite`` is a symbolic
        link (the database kept on another disk), the file it points to is locked too: a copy
        of the directory holds the same link, and its writer must not write the same records."""
        assert self.path is not None
        if fcntl is None:  # pragma: no cover
            return
        busy = IndexLockedError(
            f"{self.path} is open for writing elsewhere (another process, or another index "
            "object in this one: close() it first); wait for the writer to finish, or open "
            "the index read-only (readonly=True) to query it meanwhile"
        )
        self._lock_fd = _flock(self.path, busy)
        records = self.path / RECORDS
        if records.is_symlink() and records.exists():
            try:
                self._lock_fds.append(_flock(records.resolve(), IndexLockedError(
                    f"{records} links to {records.resolve()}, which another index directory's writer is writing "
                    "(a copy of this directory holds the same link); close that writer, or give this copy "
                    "its own records: replace the link by a copy of the file"
                )))
            except BaseException:
                self._release_writer_lock()
                raise

    def _release_writer_lock(self) -> None:
        for fd in (self._lock_fd, *self._lock_fds):
            if fd is not None:
                _unlock(fd)
        self._lock_fd = None
        self._lock_fds = []

    def _verify_owner(self) -> None:
        for owned, identity in self._owned.items():
            try:
                now = _identity(owned)
            except FileNotFoundError:
                now = None
            if now != identity:
                raise IndexLockedError(
                    f"{owned} was moved, deleted or replaced while this process was writing to {self.path}; "
                    "nothing more was written (the change was not committed). Close the index and open it "
                    "again where it is now"
                )

    def _rolled_back(self) -> None:
        # faiss mirrors may hold vectors of the rolled-back batch: rebuild them on demand
        self._collections.clear()
        self._loaded.clear()

    def _close(self) -> None:
        with self._lock:
            if hasattr(self, "db"):
                self.db.close()
            self._release_writer_lock()

    @contextlib.contextmanager
    def _file_errors(self) -> Iterator[None]:
        """Raise a failed write of a file beside the records (the manifest, a vector snapshot)
        as :class:`IndexWriteError` naming the file."""
        try:
            yield
        except OSError as exc:
            if isinstance(exc, RhizomeError):
                raise
            raise IndexWriteError(
                f"cannot write {exc.filename or self.path} ({exc.strerror or exc}): the directory is read-only "
                "for this user, or the disk is full. Nothing stored is lost: the records hold every committed "
                "change; a vector snapshot left behind is rebuilt from them when it is read, and "
                f"`rhizome repair {self.path}` restores the manifest from them. Give write permission or free "
                "space, then run the same call again"
            ) from exc

    def _write_manifest_copy(self, text: str) -> None:
        if self.path is not None:
            self._verify_owner()  # never over the manifest of an index now at this path
            with self._file_errors():
                _atomic_write(self.path / MANIFEST, text)

    def has_model_cache(self) -> bool:
        return self.path is not None and (self.path / CACHE_FILE).exists()

    def model_cache(self) -> Any:
        from rhizome.core.store.cache import ModelCache

        return ModelCache(self.path / CACHE_FILE if self.path is not None and not self.readonly else None)

    # -- record tables -------------------------------------------------------------------------
    def create_record_table(self, db: Any, table: str, lookups: Sequence[str]) -> None:
        columns = "".join(f", f_{f} TEXT NOT NULL" for f in lookups)
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY{columns}, data TEXT NOT NULL)")
        for field in lookups:
            db.execute(f"CREATE INDEX IF NOT EXISTS {table}_{field} ON {table}(f_{field})")

    def json_value(self, column: str, path: Sequence[str]) -> str:
        return f"json_extract({column}, '$.{'.'.join(path)}')"

    def record_tables(self) -> dict[str, list[str]]:
        names = [r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rec!_%' ESCAPE '!' ORDER BY name")]
        return {name: [r[1] for r in self.query(f"PRAGMA table_info({name})")] for name in names}

    # -- vectors -------------------------------------------------------------------------------
    def _stored_dimension(self) -> int | None:
        rows = self.query("SELECT length(vector) FROM vectors LIMIT 1")
        return int(rows[0][0]) // 4 if rows else None

    def put_vectors(
        self, db: Any, collection: str, ids: Sequence[str], vectors: np.ndarray, digests: Sequence[str] | None = None
    ) -> None:
        """Store vectors inside a transaction and mirror them into the faiss collection (loaded
        first when it is not in memory, so the rows written here are not read back)."""
        array = np.ascontiguousarray(vectors, dtype=np.float32)
        marks = digests if digests is not None else [""] * len(ids)
        mirror, outgrown = None, False
        if len(ids):
            mirror = self.collection(collection, array.shape[1])
            if not isinstance(mirror, outofcore.OutOfCoreStore):
                outgrown = self._goes_out_of_core(collection, len(mirror) + len(ids), array.shape[1])
                if not outgrown:  # the mirror grows by these, and an index in memory keeps the rows in SQLite too
                    memory.require(f"adding {len(ids):,} vectors to the collection {collection!r}",
                                   memory.vector_bytes(len(ids), array.shape[1]) * (2 if self.path is None else 1), self._memory_fix())
        # rows are made as SQLite reads them: a list would hold a second copy of every vector
        db.upsert("vectors", ("collection", "id", "vector", "digest"), ("collection", "id"),
                  ((collection, key, array[i].tobytes(), marks[i]) for i, key in enumerate(ids)))
        self.bump(db, vectors_generation(collection))
        if outgrown:  # from the records, the rows just written included; the exact mirror goes first
            mirror = None
            with self._lock:
                self._collections.pop(collection, None)
                self._collections[collection] = self._build_out_of_core(collection, array.shape[1])
        elif mirror is not None:
            mirror.add(list(ids), array)

    def delete_vectors(self, db: Any, collection: str, ids: Sequence[str]) -> None:
        super().delete_vectors(db, collection, ids)
        if collection in self._collections:
            self._collections[collection].remove(list(ids))
        else:
            self._unloaded_deletes.add(collection)

    def has_collection(self, name: str) -> bool:
        """Whether the collection holds (or held, in this session) any vector."""
        with self._lock:
            if name in self._collections:
                return True
        return super().has_collection(name)

    def vector_rows(self, collection: str) -> tuple[list[str], np.ndarray | None, list[str]]:
        rows = self.query("SELECT id, vector, digest FROM vectors WHERE collection = ? ORDER BY rowid", (collection,))
        if not rows:
            return [], None, []
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        return [r[0] for r in rows], matrix, [r[2] for r in rows]

    def collection(self, name: str, dimension: int | None = None) -> VectorStore:
        """The faiss collection ``name``: from memory, else its snapshot file if it matches the
        database, else rebuilt from the vectors in SQLite. A read-only store reloads a
        collection that another process changed since it was loaded."""
        with self._lock:
            if name in self._collections and not (self.readonly and self._loaded.get(name) != self.generation(vectors_generation(name))):
                return self._collections[name]
            with self._read():  # the generation, the ids, the digest and the vectors of one committed state
                generation = self.generation(vectors_generation(name))
                ids = [r[0] for r in self.query("SELECT id FROM vectors WHERE collection = ?", (name,))]
                store = self._load_snapshot(name, generation, ids, self.get_meta(snapshot_key(name)))
                if store is None:
                    store = self._fresh_collection(name, dimension, len(ids))
            self._collections[name] = store
            self._loaded[name] = generation
            return store

    def _fresh_collection(self, name: str, dimension: int | None, n: int) -> VectorStore:
        """A collection built from the records: out of core when it may be and must be
        (:meth:`_goes_out_of_core`), else exact in memory when that fits the budget in force."""
        width = dimension or self.embedding_dimension or 0
        if n and width and self._goes_out_of_core(name, n, width):
            return self._build_out_of_core(name, width)
        if n and width:  # the rows, their joined copy and the collection
            memory.require(f"loading the vector collection {name!r} ({n:,} vectors)", 3 * memory.vector_bytes(n, width), self._memory_fix())
        return self._rebuild_collection(name, dimension)

    def _goes_out_of_core(self, name: str, n: int, dimension: int) -> bool:
        """Whether collection ``name`` of ``n`` vectors is kept out of core: it may be (an index
        directory's chunk collection) and it is large (:data:`~rhizome.core.store.outofcore.OUT_OF_CORE_FROM`)
        or would not fit the memory budget exactly."""
        if self.path is None or name not in self.out_of_core:
            return False
        return n >= outofcore.OUT_OF_CORE_FROM or not memory.fits(3 * memory.vector_bytes(n, dimension))

    def _build_out_of_core(self, name: str, dimension: int) -> VectorStore:
        """The collection as :class:`~rhizome.core.store.outofcore.OutOfCoreStore`, from the records a
        block at a time, trained on every n-th vector (the same sample for the same records)."""
        (n,) = self.query("SELECT count(*) FROM vectors WHERE collection = ?", (name,))[0]
        step = max(1, n // codes.TRAIN_SAMPLE)
        picked = [r[0] for r in self.query(
            "SELECT vector FROM (SELECT vector, row_number() OVER (ORDER BY rowid) AS i FROM vectors WHERE collection = ?) "
            "WHERE (i - 1) % ? = 0 LIMIT ?", (name, step, codes.TRAIN_SAMPLE))]
        sample = np.frombuffer(b"".join(picked), dtype=np.float32).reshape(len(picked), dimension)
        del picked
        return outofcore.OutOfCoreStore.build(dimension, self._vector_reader(name), sample, self._vector_blocks(name, dimension))

    def _vector_blocks(self, name: str, dimension: int) -> Iterator[tuple[list[str], np.ndarray]]:
        with self._lock, self._errors():
            yield from outofcore.blocks_of(iter(self.db.execute("SELECT id, vector FROM vectors WHERE collection = ? ORDER BY rowid", (name,))),
                                     dimension)

    def _vector_reader(self, name: str) -> outofcore.Rows:
        """What an out-of-core collection reads its exact vectors with: the records' rows by id."""

        def read(keys: Sequence[str]) -> tuple[list[str], np.ndarray]:
            found: dict[str, bytes] = {}
            for part in batches(list(keys)):
                marks = ",".join("?" * len(part))
                found.update(self.query(f"SELECT id, vector FROM vectors WHERE collection = ? AND id IN ({marks})", [name, *part]))
            held = [key for key in keys if key in found]
            if not held:
                return [], np.zeros((0, self.embedding_dimension or 0), dtype=np.float32)
            return held, np.frombuffer(b"".join(found[key] for key in held), dtype=np.float32).reshape(len(held), -1)

        return read

    def _memory_fix(self) -> str:
        """What to do when vectors do not fit the memory budget."""
        if self.path is None:
            return ("build the index in a directory (path=...) rather than in memory, which holds every vector twice, "
                    "or in PostgreSQL (a postgresql:// path), whose server holds the vectors")
        return "build the index in PostgreSQL (a postgresql:// path), whose server holds and searches the vectors"

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
    def read_snapshot(self) -> Iterator[None]:
        with self._lock, self._read():
            yield

    @contextlib.contextmanager
    def _read(self) -> Iterator[None]:
        """One read transaction (nothing to do inside a write transaction, which already is one)."""
        with self._errors(), read_transaction(self.db.raw):
            yield

    def _snapshot_path(self, name: str) -> Path:
        assert self.path is not None
        return self.path / "vectors" / f"{name}.npz"

    @property
    def keeps_arrays(self) -> bool:  # type: ignore[override]
        return self.path is not None

    def saved_arrays(self, name: str, key: Any) -> dict[str, np.ndarray] | None:
        if self.path is None:
            return None
        try:
            with np.load(self._graph_path(name), allow_pickle=False) as data:
                if data[_SAVED_KEY].tobytes().decode() != self._saved_key(key):
                    return None  # of other records, or of another index
                return {field: data[field] for field in data.files if field != _SAVED_KEY}
        except FileNotFoundError:
            return None
        except Exception as exc:  # damaged: a cache, built again from the records
            logger.info("%s could not be read (%s); it is built again from the records", self._graph_path(name), exc)
            return None

    def save_arrays(self, name: str, key: Any, arrays: Callable[[], dict[str, np.ndarray]]) -> None:
        if self.path is None or self.readonly:
            return
        path = self._graph_path(name)
        part = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.part")
        try:
            self._verify_owner()  # never beside the records of an index now at this path
            path.parent.mkdir(exist_ok=True)
            payload: dict[str, Any] = {**arrays(), _SAVED_KEY: np.frombuffer(self._saved_key(key).encode(), dtype=np.uint8)}
            with open(part, "wb") as out:
                np.savez(out, **payload)
            os.replace(part, path)
        except (OSError, IndexLockedError) as exc:
            part.unlink(missing_ok=True)
            logger.info("%s was not written (%s); a process that opens the index builds it from the records", path, exc)

    def _graph_path(self, name: str) -> Path:
        assert self.path is not None
        return self.path / "graphs" / f"{name}.npz"

    def _saved_key(self, key: Any) -> str:
        return json.dumps({"index_id": self.manifest.index_id, "key": key}, sort_keys=True, default=repr)

    def _load_snapshot(self, name: str, generation: int, ids: Sequence[str], recorded: Any) -> VectorStore | None:
        """The snapshot file of a collection, when it is this index's (by id), of the database's
        generation, holds exactly the ids the database holds, and its (id, vector) pairs have
        the digest ``recorded`` in the records for that generation when it was written; else
        ``None`` (rebuild). A snapshot right in all but its digest (vectors filed under other
        ids, or changed) is logged as the damage it is."""
        if self.path is None or not self._snapshot_path(name).exists():
            return None
        with self._file_errors():  # the file is read into memory whole (an out-of-core one holds codes, not vectors)
            size = self._snapshot_path(name).stat().st_size
        memory.require(f"loading the vector collection {name!r} ({len(ids):,} vectors)", size + len(ids) * memory.VECTOR_OVERHEAD,
                       self._memory_fix())
        try:
            store, meta = VectorStore.load(self._snapshot_path(name))
        except IndexFormatError:
            return None  # damaged snapshot: rebuild from the database
        if outofcore.is_out_of_core(store._index):
            store = outofcore.OutOfCoreStore.wrap(store, self._vector_reader(name))
        if (
            meta.get("generation") != generation
            or meta.get("index_id") != self.manifest.index_id
            or len(store) != len(ids)
            or set(store.ids()) != set(ids)
        ):
            return None
        if not isinstance(recorded, dict) or recorded.get("generation") != generation:
            return None  # written before digests, or its digest not committed yet: rebuild
        if recorded.get("digest") != store.digest():
            logger.warning(
                "vector snapshot %s has the ids and generation of the records but other vectors under them; "
                "it was ignored and the collection rebuilt from the records (run `rhizome repair %s` to rewrite it)",
                self._snapshot_path(name), self.path,
            )
            return None
        self._saved[name] = generation
        return store

    def rebuild_snapshots(self) -> list[str]:
        """Rebuild every vector collection from the records, ignoring its snapshot file, and
        write the snapshots anew; returns the collections' names (``rhizome repair``)."""
        with self._lock:
            names = self.collections()
            for name in names:
                if outofcore.recorded_out_of_core(self.get_meta(snapshot_key(name))):
                    self.out_of_core.add(name)  # as it was, though no index opened this store to name it
                self._collections.pop(name, None)
                (n,) = self.query("SELECT count(*) FROM vectors WHERE collection = ?", (name,))[0]
                self._collections[name] = self._fresh_collection(name, None, n)
                self._saved.pop(name, None)
            self.save_snapshots()
        return names

    def _save_collections(self) -> None:
        """Write the faiss snapshot of every loaded collection that changed since its snapshot
        was written or read, and of every collection a delete changed without loading it (a
        collection left empty loses its snapshot)."""
        self._verify_owner()  # never over the snapshots of an index now at this path
        for name in sorted(self._unloaded_deletes - set(self._collections)) if self.path is not None else ():
            if super().has_collection(name):
                self.collection(name)  # rebuilt from the records, saved below
            else:
                with self._file_errors():
                    self._snapshot_path(name).unlink(missing_ok=True)
        self._unloaded_deletes.clear()
        for name, store in self._collections.items():
            generation = self.generation(vectors_generation(name))
            self._loaded[name] = generation
            if self.path is None or self._saved.get(name) == generation:
                continue
            if not len(store):  # as a delete without the collection loaded leaves it: no file
                with self._file_errors():
                    self._snapshot_path(name).unlink(missing_ok=True)
                self._saved[name] = generation
                continue
            # the digest first: a snapshot left unwritten by a crash then fails its generation check
            with self._errors():
                self.db.upsert("meta", ("key", "value"), ("key",), [
                    (snapshot_key(name), json.dumps({"generation": generation, "digest": store.digest()}))
                ])
            with self._file_errors():
                store.save(self._snapshot_path(name), meta={"generation": generation, "index_id": self.manifest.index_id})
            self._saved[name] = generation


def snapshot_key(collection: str) -> str:
    """The meta key under which the records keep the generation and (id, vector) digest of
    ``collection``'s snapshot file (:meth:`VectorStore.digest`)."""
    return f"snapshot:{collection}"


def _flock(path: Path, busy: IndexLockedError) -> int:
    """An open descriptor of ``path`` holding its exclusive ``flock``; ``busy`` when another
    descriptor holds it. Tried three times, 10 ms apart: `rhizome check` may hold a shared
    lock for an instant (:func:`writer_active`)."""
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if path.is_dir() else 0))
    for attempt in range(3):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError as exc:
            if attempt == 2:
                os.close(fd)
                raise busy from exc
            time.sleep(0.01)
    raise AssertionError("unreachable")  # pragma: no cover


@contextlib.contextmanager
def writer_lock(path: Path) -> Iterator[None]:
    """Hold the writer lock of the index directory ``path`` for a change made outside an
    open store (``rhizome repair`` restoring the manifest); :class:`IndexLockedError` while
    a writer has the index open."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = _flock(path, IndexLockedError(
        f"{path} is open for writing elsewhere; close that index (or wait for the writer to finish), then run this again"
    ))
    try:
        yield
    finally:
        _unlock(fd)


def _unlock(fd: int) -> None:
    """Give back a lock :func:`_flock` took, and its descriptor."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def writer_active(path: Path) -> bool:
    """Whether a process holds the writer lock of the index directory ``path``, i.e. has the
    index open for writing (see :meth:`SQLiteStore._acquire_writer_lock`), or of the file
    ``path`` (the target of a linked ``records.sqlite``). Asks by taking a shared lock without
    waiting and giving it back at once; a writer that opens the index in that instant tries
    again."""
    if fcntl is None:  # pragma: no cover
        return False
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if path.is_dir() else 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # gives the shared lock back
    return False


def _identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _quick_check(raw: sqlite3.Connection) -> None:
    """SQLite's own page-level check (``PRAGMA quick_check``), before anything is written into
    a damaged file."""
    found = [row[0] for row in raw.execute("PRAGMA quick_check(5)")]
    if found != ["ok"]:
        raise sqlite3.DatabaseError("; ".join(found))


@contextlib.contextmanager
def read_transaction(raw: sqlite3.Connection) -> Iterator[None]:
    """One read transaction on an autocommit connection: every query inside reads the same
    committed state, whatever a writer commits meanwhile (WAL lets it go on). Inside a
    transaction already open, that one serves."""
    if raw.in_transaction:
        yield
        return
    raw.execute("BEGIN")
    try:
        yield
    finally:
        with contextlib.suppress(sqlite3.Error):
            raw.execute("COMMIT")


def connect_records(records: Path, *, readonly: bool) -> sqlite3.Connection:
    """A connection to a records file (autocommit: transactions are explicit). A read-only one
    in a directory this user may not write (read-only media, another user's index) cannot make
    the shared-memory file SQLite's readers of a WAL database keep beside it; there, when no
    writer is at work (no ``-wal`` file), the file is read as immutable."""
    def connect(options: str) -> sqlite3.Connection:
        # quoted: a '#' or '?' in a directory name would end the path of the URI
        uri = f"file:{urllib.parse.quote(str(records))}{options}"
        return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=30.0)

    if not readonly:
        return connect("")
    raw = connect("?mode=ro")
    try:
        raw.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError as exc:
        raw.close()
        if not _cannot_write(exc, records) or records.with_name(records.name + "-wal").exists():
            raise
        return connect("?mode=ro&immutable=1")
    return raw


def _cannot_write(exc: sqlite3.DatabaseError, records: Path | str) -> bool:
    """Whether a sqlite3 error says the file cannot be written (permissions, a read-only file
    system, a full disk, a failing device) rather than that it is damaged."""
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith(("SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR", "SQLITE_PERM")):
        return True
    return name.startswith("SQLITE_CANTOPEN") and isinstance(records, Path) and records.exists()


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether a sqlite3 error means the file is damaged or gone (not a locked database, a
    missing table or a constraint)."""
    if type(exc) is sqlite3.DatabaseError:  # "file is not a database", "disk image is malformed"
        return True
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and any(
        w in text for w in ("malformed", "not a database", "unable to open database")
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
        if clear:  # emptied in place: a link to a database kept elsewhere stays a link
            real = records.resolve()
            for suffix in ("-wal", "-shm"):
                real.with_name(real.name + suffix).unlink(missing_ok=True)
                (path / (RECORDS + suffix)).unlink(missing_ok=True)
            os.truncate(real, 0)
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
        with contextlib.closing(connect_records(records, readonly=True)) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            return any(db.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchall() for t in tables if t != "meta")
    except sqlite3.Error:
        return True


def _stored_identity(path: Path) -> dict | None:
    """The index id and method the records were written by (one small read; ``None`` when they
    cannot be read, which the open then reports)."""
    records = path / RECORDS
    if not records.exists() or not records.stat().st_size:
        return None
    try:
        with contextlib.closing(connect_records(records, readonly=True)) as db:
            rows = db.execute("SELECT value FROM meta WHERE key = 'index'").fetchall()
    except sqlite3.Error:
        return None
    return json.loads(rows[0][0]) if rows else None


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


__all__ = ["CACHE_FILE", "SQLiteConnection", "SQLiteStore", "connect_records", "read_transaction", "writer_active", "writer_lock"]
