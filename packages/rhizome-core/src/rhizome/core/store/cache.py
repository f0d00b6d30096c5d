"""A content-addressed cache of model calls in SQLite.

The key is a SHA-256 of everything that determines the answer (model name, messages, schema,
options); the value is the answer. The database runs in WAL mode, so several processes can read
and write it at once, and every entry is committed as soon as it is written: a run that is
interrupted keeps every answer it already paid for.

Each entry records the documents its prompt was built from (its *sources*: the ids given to
the innermost :func:`built_from` around the call; ``*``, built from anything, when there is
none — whole-index work and queries), so that deleting documents can forget what the model said
about them (:meth:`ModelCache.forget`). Deleted entries are overwritten on disk (SQLite's
``secure_delete``) and the write-ahead log is truncated after a forget.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from rhizome.core.aio import scoped


def cache_key(payload: Any) -> str:
    """SHA-256 of the canonical JSON form of ``payload``."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


ANY_SOURCE = "*"
"""The source of an entry whose prompt may hold any document's text (no :func:`built_from`
around its call, or written before sources were recorded): every forget removes it."""

_SOURCES: ContextVar[frozenset[str] | None] = ContextVar("rhizome_cache_sources", default=None)


def built_from(document_ids: Iterable[str]) -> contextlib.AbstractContextManager[frozenset[str] | None]:
    """Record the model calls cached inside the block (in this context and the tasks it starts)
    as built from ``document_ids`` and nothing else; an inner block replaces an outer one."""
    return scoped(_SOURCES, frozenset(document_ids))


def _batches(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


BUSY_TIMEOUT = 30.0
"""Seconds a connection waits for another process's lock on the cache file."""


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode. While another process is switching the same new file, SQLite
    answers "database is locked" at once instead of waiting for the busy timeout, so retry
    until that timeout has passed."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class ModelCache:
    """A persistent key–value store of model answers, safe across threads and processes.

    ``path=None`` (or ``":memory:"``) keeps the cache in memory for this process only.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = None if path is None or path == ":memory:" else Path(path)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._memory_conn: sqlite3.Connection | None = None
        self._memory_lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        with self._connect() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS calls ("
                " key TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL,"
                " created REAL NOT NULL)"
            )
            conn.execute(SOURCES_TABLE.format(table=self.table))
            conn.execute(SOURCES_INDEX.format(table=self.table))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """A copy (sent to a Ray worker) opens the same file; a copy of a cache in memory starts
        empty."""
        return (ModelCache, (self.path,))

    def _connect(self) -> sqlite3.Connection:
        if self.path is None:
            if self._memory_conn is None:
                self._memory_conn = sqlite3.connect(":memory:", check_same_thread=False)
            return self._memory_conn
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
            _switch_to_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")  # a forgotten answer is overwritten, not left in a free page
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def _session(self) -> Iterator[Any]:
        """The connection the next statement runs on (``?`` placeholders), held exclusively."""
        with self._memory_lock if self.path is None else contextlib.nullcontext():
            yield self._connect()

    table = "calls"

    def identity(self) -> Any:
        """What two cache objects over the same entries share (the file; this object in memory)."""
        return ("file", str(self.path.resolve())) if self.path is not None else ("memory", id(self))

    def get(self, key: str) -> Any | None:
        with self._session() as db:
            row = db.execute(f"SELECT value FROM {self.table} WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, key: str, value: Any, kind: str = "chat") -> None:
        """Store ``value`` under ``key``, built from the documents of the :func:`built_from`
        around the call (:data:`ANY_SOURCE` without one); the sources of an entry stored again
        are added to its own."""
        blob = json.dumps(value, ensure_ascii=False)
        sources = _SOURCES.get()
        with self._session() as db:
            db.execute(
                f"INSERT INTO {self.table} (key, kind, value, created) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE"
                " SET kind = excluded.kind, value = excluded.value, created = excluded.created",
                (key, kind, blob, time.time()),
            )
            db.executemany(
                f"INSERT INTO {self.table}_sources (source, key) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(source, key) for source in (sorted(sources) if sources is not None else [ANY_SOURCE])],
            )

    def delete(self, key: str) -> None:
        """Forget the answer stored under ``key`` (nothing happens when there is none)."""
        with self._session() as db:
            db.execute(f"DELETE FROM {self.table} WHERE key = ?", (key,))
            db.execute(f"DELETE FROM {self.table}_sources WHERE key = ?", (key,))

    def forget(self, document_ids: Iterable[str]) -> int:
        """Remove every entry whose prompt was built from one of ``document_ids``, or may have
        been (source :data:`ANY_SOURCE`, or no source recorded); returns how many. In a file,
        the removed entries are overwritten and the write-ahead log truncated, so no copy of
        them is left on disk (but in a backup, or in the log while another process reads it)."""
        wanted = sorted({*document_ids, ANY_SOURCE})
        with self._session() as db:
            keys = {r[0] for r in db.execute(f"SELECT key FROM {self.table} WHERE key NOT IN (SELECT key FROM {self.table}_sources)").fetchall()}
            for part in _batches(wanted):
                marks = ",".join("?" * len(part))
                keys.update(r[0] for r in db.execute(f"SELECT DISTINCT key FROM {self.table}_sources WHERE source IN ({marks})", part).fetchall())
            for part in _batches(sorted(keys)):
                marks = ",".join("?" * len(part))
                db.execute(f"DELETE FROM {self.table} WHERE key IN ({marks})", part)
                db.execute(f"DELETE FROM {self.table}_sources WHERE key IN ({marks})", part)
            self._reclaimed(db)
        return len(keys)

    def _reclaimed(self, db: Any) -> None:
        """After a forget: the write-ahead log, which still holds the removed entries as they
        were written, copied into the database and truncated (best effort: a reader in another
        process may keep part of it until its read ends)."""
        if self.path is not None:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def __len__(self) -> int:
        with self._session() as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])

    def clear(self) -> None:
        with self._session() as db:
            db.execute(f"DELETE FROM {self.table}")
            db.execute(f"DELETE FROM {self.table}_sources")


SOURCES_TABLE = "CREATE TABLE IF NOT EXISTS {table}_sources (source TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (source, key))"
SOURCES_INDEX = "CREATE INDEX IF NOT EXISTS {table}_sources_key ON {table}_sources (key)"
""":meth:`ModelCache.forget`'s table: the documents each entry was built from."""


def needs_cache(model: Any) -> bool:
    """Whether ``model`` (a chat model or an embedder) has no call cache and would gain from one
    (not a model whose answers cost less than a lookup, ``cacheable = False``)."""
    return model is not None and getattr(model, "cache", False) is None and getattr(model, "cacheable", True)


def with_cache(model: Any, cache: ModelCache) -> Any:
    """``model`` answering through ``cache`` when it :func:`needs_cache`: a copy of it given the
    cache, so the caller's object is left as it was and two users of one model object each keep
    their own cache; else ``model`` itself."""
    if not needs_cache(model):
        return model
    twin = copy.copy(model)
    twin.cache = cache
    return twin


__all__ = ["ANY_SOURCE", "ModelCache", "built_from", "cache_key", "needs_cache", "with_cache"]
