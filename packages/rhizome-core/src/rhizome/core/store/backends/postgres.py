"""The PostgreSQL backend: an index is a schema of a database with the pgvector extension.

``postgresql://user:password@host:5432/database?schema=my_index`` (default schema ``rhizome``;
every other query parameter goes to the driver, e.g. ``sslmode=require``) names one index. Its
schema holds the same tables as an index directory's ``records.sqlite`` — ``meta`` (the index's
id and method, the manifest, generations), ``documents``, ``document_status``, ``chunks``,
``vectors``, ``stage_results``, one ``rec_<name>`` table per record table — plus
``model_calls``, the model-call cache every process and Ray worker of the index shares. Each
table keeps a ``rowid`` from one sequence, given anew when a row is replaced, so rows keep the
order they were last written in, as SQLite's do.

What differs from a directory:

- the manifest lives in the records only (``meta``); there are no files to check or repair;
- a creation is one transaction (schema, tables, identity, manifest), so it is never cut short;
  a copy (``persist``) commits its identity first and its records with its manifest after, and
  the identity alone that a copy cut short leaves is cleared by the next creation;
- writers in many processes take turns: each insert, delete or refresh holds a session
  advisory lock on the schema for its duration (a directory lets one process write at all);
  readers never wait;
- a connection that drops (a server restart, a failover, an idle timeout) is opened again by
  the next call: the call that finds it broken fails with
  :class:`~rhizome.core.errors.IndexUnavailableError` (a read outside a transaction runs once
  more on a fresh connection instead), the transaction open on it is lost, and a writer whose
  session (so whose advisory lock) went with it commits nothing more;
- vectors are ``vector`` values searched by the server (inner product of normalised vectors,
  i.e. cosine): exactly while a collection is small, through an HNSW index once it holds
  :data:`HNSW_FROM` vectors (built then, kept up to date by the server). A search restricted
  to a set of ids is always exact.

Needs ``rhizome-core[postgres]`` (psycopg 3 and pgvector's Python adapter) and a server with
the ``vector`` extension (created on first use when the role may; otherwise ask an
administrator for ``CREATE EXTENSION vector``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
from pydantic import ValidationError

from rhizome.core.errors import (
    ConfigurationError,
    IndexCorruptError,
    IndexFormatError,
    IndexLockedError,
    IndexNotFoundError,
    IndexUnavailableError,
    InvalidInputError,
)
from rhizome.core.store.cache import SOURCES_INDEX, SOURCES_TABLE, ModelCache
from rhizome.core.store.storage import (
    IndexStore,
    Manifest,
    check_format,
    check_identity,
    shown,
    vectors_generation,
)
from rhizome.core.store.vectors import TIE_MARGIN, every_vector, ranked

T = TypeVar("T")
DEFAULT_SCHEMA = "rhizome"
HNSW_FROM = 10_000
"""Vectors a collection holds before it gets an HNSW index; smaller ones are searched exactly
(a scan of a few thousand vectors costs about what an approximate search does)."""
MAX_EF_SEARCH = 1000
"""pgvector's largest ``hnsw.ef_search``; a search for more neighbours than this is exact."""
LOCK_WAIT = 600.0
"""Seconds an insert or delete waits for another process's to finish before it gives up."""
CONNECT_TIMEOUT = 10

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_TABLES = """
CREATE SEQUENCE IF NOT EXISTS rowids;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL, {rowid});
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, metadata TEXT NOT NULL,
    status TEXT NOT NULL, n_chunks INTEGER NOT NULL DEFAULT 0, updated TEXT NOT NULL, {rowid});
CREATE TABLE IF NOT EXISTS document_status (
    id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, status TEXT NOT NULL, error TEXT, updated TEXT NOT NULL, {rowid});
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, document_id TEXT NOT NULL, idx INTEGER NOT NULL, text TEXT NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, n_tokens INTEGER NOT NULL, metadata TEXT NOT NULL,
    checksum TEXT NOT NULL DEFAULT '', {rowid});
CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks(document_id, idx);
CREATE INDEX IF NOT EXISTS chunks_by_rowid ON chunks(rowid);
CREATE TABLE IF NOT EXISTS vectors (
    collection TEXT NOT NULL, id TEXT NOT NULL, vector vector NOT NULL, digest TEXT NOT NULL DEFAULT '',
    {rowid}, PRIMARY KEY (collection, id));
CREATE TABLE IF NOT EXISTS stage_results (
    stage TEXT NOT NULL, digest TEXT NOT NULL, value TEXT NOT NULL, {rowid}, PRIMARY KEY (stage, digest));
""".replace("{rowid}", "rowid BIGINT NOT NULL DEFAULT nextval('rowids')")
_CACHE_TABLE = (
    "CREATE TABLE IF NOT EXISTS model_calls ("
    " key TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL, created DOUBLE PRECISION NOT NULL);"
    + SOURCES_TABLE.format(table="model_calls") + ";" + SOURCES_INDEX.format(table="model_calls")
)
_OURS = {"meta", "documents", "document_status", "chunks", "vectors", "stage_results", "model_calls", "model_calls_sources"}


def _driver() -> Any:
    """psycopg, or a clear word on how to install it."""
    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg
    except ImportError as exc:
        raise ConfigurationError(
            "a postgresql:// index needs the PostgreSQL extra: pip install 'rhizome-core[postgres]' "
            f"(or 'rhizome-rag[postgres]'; it installs psycopg and pgvector) — {exc}"
        ) from None
    return psycopg


# -- the URL ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def parse_url(url: str) -> tuple[str, str, str]:
    """``(conninfo, schema, shown)``: the URL for the driver (without ``schema``), the index's
    schema, and the URL to show in messages (without a password)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    schema = schemas[-1] if schemas else DEFAULT_SCHEMA
    if not _SCHEMA_NAME.match(schema):
        raise ConfigurationError(
            f"schema={schema!r} in {url.split('@')[-1]}: an index's schema name must be a lower-case identifier "
            "(letters, digits, underscores; at most 63 characters)"
        )
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, ""))
    return conninfo, schema, shown(urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode([("schema", schema)]), "")))


def _sql(statement: str) -> str:
    """A statement written with ``?`` placeholders, for psycopg (``%s``)."""
    return statement.replace("%", "%%").replace("?", "%s")


_SCHEMA_TABLES = ("SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
           " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')")
"""The tables (and views) of a schema. The catalog itself, not ``information_schema``: its views
check privileges row by row and took several times as long, at every open and table creation."""


def _quote(name: str) -> str:
    return f'"{name}"'


def connect(url: str, *, readonly: bool = False, create: bool = False) -> Any:
    """A connection to the index's schema (autocommit; transactions are explicit), with the
    ``vector`` type registered. ``create``: make the extension when it is missing."""
    psycopg = _driver()
    from pgvector.psycopg import register_vector

    conninfo, schema, shown = parse_url(url)
    try:
        raw = psycopg.connect(conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise IndexUnavailableError(
            f"cannot reach PostgreSQL at {shown} ({' '.join(str(exc).split())}); start the server, or check the "
            "URL's host, port, database, user and password. Nothing was changed"
        ) from None
    try:
        home = raw.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'").fetchone()
        if home is None and create:
            try:
                raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise ConfigurationError(
                    f"PostgreSQL at {shown} has no pgvector extension and this role may not create it ({exc}); "
                    "install pgvector on the server and run `CREATE EXTENSION vector` as an administrator"
                ) from None
            home = raw.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'").fetchone()
        raw.execute(f"SET search_path TO {_quote(schema)}{', ' + _quote(home[0]) if home else ''}")
        if home is not None:
            register_vector(raw)
        if readonly:
            raw.execute("SET default_transaction_read_only = on")
    except BaseException:
        raw.close()
        raise
    return raw


class PostgresConnection:
    """:class:`~rhizome.core.store.storage.Connection` over one psycopg connection.

    With ``reopen`` (a function that opens a connection like the first one), a connection that
    broke (a server restart, a failover, an idle timeout, a terminated backend) is replaced by a
    fresh one on its next use outside a transaction: the statement that found it broken failed,
    and so does every later statement of a transaction that was open on it, up to its rollback
    (the transaction is lost with the connection; it never goes on in another session)."""

    def __init__(self, raw: Any, reopen: Callable[[], Any] | None = None) -> None:
        self.raw = raw
        self.reopen = reopen
        self.session = 0
        """How often the connection was opened again: what a session held under an earlier
        number (a session advisory lock) is gone."""
        self._transaction = False

    def _live(self) -> Any:
        if self.raw.closed and self.reopen is not None and not self._transaction:
            self.raw = self.reopen()
            self.session += 1
        return self.raw

    def execute(self, sql: str, params: Sequence[Any] = (), binary: bool = False) -> Any:
        """``sql`` with ``?`` placeholders; ``binary``: rows in PostgreSQL's binary format (a
        vector then arrives as its floats, not as text the client parses: about 12 times faster
        to read)."""
        return self._live().execute(_sql(sql), tuple(params), binary=binary)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        rows = list(rows)
        with self._live().cursor() as cursor:
            if rows:
                cursor.executemany(_sql(sql), rows)

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        if not rows:  # an empty sequence; a generator is always run
            return
        updates = [f"{_quote(c)} = EXCLUDED.{_quote(c)}" for c in columns if c not in key] + ["rowid = EXCLUDED.rowid"]
        statement = (
            f"INSERT INTO {table} ({', '.join(map(_quote, columns))}) VALUES ({', '.join(['%s'] * len(columns))})"
            f" ON CONFLICT ({', '.join(map(_quote, key))}) DO UPDATE SET {', '.join(updates)}"
        )
        with self._live().cursor() as cursor:
            cursor.executemany(statement, rows)

    def begin(self, mode: str = "") -> None:
        """Start a transaction (``mode``: e.g. ``ISOLATION LEVEL REPEATABLE READ READ ONLY``)."""
        self._live().execute(f"BEGIN {mode}".strip())
        self._transaction = True

    def commit(self) -> None:
        try:
            self.raw.execute("COMMIT")  # on the connection the transaction began on, never a new one
        finally:
            self._transaction = False

    def rollback(self) -> None:
        psycopg = _driver()
        try:
            with contextlib.suppress(psycopg.OperationalError, psycopg.InterfaceError):  # a broken connection rolls back itself
                self.raw.execute("ROLLBACK")
        finally:
            self._transaction = False

    @property
    def in_transaction(self) -> bool:
        """Whether :meth:`begin` ran and neither :meth:`commit` nor :meth:`rollback` since."""
        return self._transaction

    @property
    def broken(self) -> bool:
        """Whether the connection is known to be closed (the next use outside a transaction
        opens a fresh one)."""
        return bool(self.raw.closed)

    def close(self) -> None:
        self.reopen = None  # closed on purpose: stays closed
        self.raw.close()


class PostgresStore(IndexStore):
    """An index in a PostgreSQL schema; see the module docstring."""

    def __init__(self, url: str, manifest: Manifest, raw: Any, *, readonly: bool = False) -> None:
        super().__init__(url, manifest, readonly=readonly)
        self.conninfo, self.schema, self.shown = parse_url(url)
        self.db = PostgresConnection(raw, functools.partial(connect, url, readonly=readonly))
        self._collections: dict[str, PgCollection] = {}
        self._hnsw: set[str] = set()
        """Collections known to have an HNSW index."""
        self._no_hnsw: dict[str, int] = {}
        """Collections found without one, with the generation they were found at (an HNSW
        index is made only in a write of the collection, which moves its generation)."""
        self._check_identity()

    sql_dialect = "postgresql"
    _documents_source = "(SELECT id, metadata::jsonb AS metadata FROM documents) AS documents"

    def _metadata_has(self, field: str) -> bool:
        return bool(self.query("SELECT 1 FROM documents WHERE (metadata::jsonb -> ?::text) IS NOT NULL LIMIT 1", (field,)))

    def _metadata_fields(self) -> list[str]:
        return [r[0] for r in self.query("SELECT DISTINCT jsonb_object_keys(metadata::jsonb) AS key FROM documents ORDER BY key")]

    def __repr__(self) -> str:
        return f"PostgresStore({self.shown!r})"

    # -- locations -----------------------------------------------------------------------------
    @classmethod
    def key(cls, location: str | Path) -> str:
        conninfo, schema, _ = parse_url(str(location))
        return f"{conninfo}#{schema}"

    @classmethod
    def _state(cls, url: str) -> tuple[dict | None, dict | None, set[str]]:
        """The stored manifest, the stored identity and the tables of the schema."""
        raw = connect(url)
        try:
            schema = parse_url(url)[1]
            tables = {r[0] for r in raw.execute(_SCHEMA_TABLES, (schema,))}
            meta: dict[str, dict] = {}
            if "meta" in tables:
                for key, value in raw.execute("SELECT key, value FROM meta WHERE key IN ('manifest', 'index')"):
                    meta[key] = json.loads(value)
            return meta.get("manifest"), meta.get("index"), tables
        finally:
            raw.close()

    @classmethod
    def holds_index(cls, location: str | Path) -> bool:
        return cls._state(str(location))[0] is not None

    @classmethod
    def read_manifest(cls, location: str | Path) -> Manifest:
        url = str(location)
        shown = parse_url(url)[2]
        raw, identity, tables = cls._state(url)
        if raw is None:
            if identity is not None:
                raise IndexCorruptError(
                    f"{shown} holds the records of an index but no manifest; they were written by another tool or "
                    "edited. Nothing was changed: index the documents again into another schema"
                )
            raise IndexNotFoundError(f"no Rhizome index at {shown}; build one with `rhizome index FOLDER --out {shown}`")
        check_format(raw, shown)
        try:
            manifest = Manifest.model_validate(raw)
        except ValidationError as exc:
            raise IndexFormatError(f"the manifest in {shown} is not valid: {exc}") from exc
        check_identity(shown, manifest, identity, "the records were edited outside Rhizome; index the documents again into another schema")
        return manifest

    @classmethod
    def _new(cls, location: str | Path | None, manifest: Manifest, publish: bool = True) -> PostgresStore:
        url = str(location)
        shown = parse_url(url)[2]
        tables = cls._state(url)[2]
        foreign = sorted(t for t in tables if t not in _OURS and not t.startswith("rec_"))
        if foreign:
            raise InvalidInputError(
                f"schema {parse_url(url)[1]!r} of {shown} holds tables that are not a Rhizome index "
                f"({', '.join(foreign[:5])}); choose another schema with ?schema=NAME"
            )
        raw = connect(url, create=True)
        try:
            schema = parse_url(url)[1]
            db = PostgresConnection(raw)
            db.begin()
            try:
                raw.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"rhizome-ddl:{schema}",))
                raw.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}")
                for statement in filter(str.strip, (_TABLES + ";" + _CACHE_TABLE).split(";")):
                    raw.execute(statement)
                # checked under the lock: another process may have created an index here since
                # the caller looked (two creations at once would mix their records)
                found = {r[0] for r in raw.execute("SELECT key FROM meta WHERE key IN ('index', 'manifest')")}
                if "manifest" in found:
                    raise InvalidInputError(
                        f"{shown} already holds an index (created meanwhile by another process); open it with "
                        "load() to add documents, or choose another schema with ?schema=NAME"
                    )
                if "index" in found:
                    if _holds_data(raw, schema):
                        raise IndexCorruptError(
                            f"{shown} holds the records of an index but no manifest; a new index there would mix "
                            "with them. Choose another schema with ?schema=NAME"
                        )
                    raw.execute("DELETE FROM meta")  # a creation cut short: nothing but its identity
                manifest.index_id = manifest.index_id or _new_id()
                cls.set_meta(db, "index", {"id": manifest.index_id, "method": manifest.method})
                if publish:
                    db.upsert("meta", ("key", "value"), ("key",), [("manifest", manifest.model_dump_json(indent=2))])
            except BaseException:
                db.rollback()
                raise
            db.commit()
        except BaseException:
            raw.close()
            raise
        return cls(url, manifest, raw)

    @classmethod
    def _existing(cls, location: str | Path, manifest: Manifest, readonly: bool) -> PostgresStore:
        return cls(str(location), manifest, connect(str(location), readonly=readonly), readonly=readonly)

    # -- errors, reading and the writer lock -------------------------------------------------
    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        psycopg = _driver()
        try:
            with _server_errors(self.shown):
                yield
        except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName) as exc:
            if self.readonly:
                raise  # a reader of an index that did not have the table yet (is_missing_table)
            raise IndexLockedError(
                f"the index at {self.shown} was dropped while this process had it open "
                f"({' '.join(str(exc).split())}); nothing more was written. Close it, then create the index "
                "again (or open another)"
            ) from exc

    def query(self, sql: str, params: Sequence[Any] = (), binary: bool = False) -> list[tuple]:
        return self._read(lambda db: db.execute(sql, params, binary).fetchall())

    def _read(self, run: Callable[[PostgresConnection], T]) -> T:
        """``run(self.db)``, reads only, under the lock with typed errors. Outside a transaction,
        a read that finds its connection broken (after an idle timeout, a failover) runs once
        more on a fresh connection: it changed nothing."""
        self._check_open()
        with self._lock:
            again = not self.db.in_transaction and not self.db.broken
            try:
                with self._errors():
                    return run(self.db)
            except IndexUnavailableError:
                if not (again and self.db.broken):
                    raise
            with self._errors():
                return run(self.db)

    def is_missing_table(self, exc: BaseException) -> bool:
        return isinstance(exc, _driver().errors.UndefinedTable)

    def _cross_process_lock(self) -> Any:
        self._writer = _AdvisoryLock(self)
        return self._writer

    def _check_writer(self) -> None:
        """A write of this store's writer goes on only in the session that holds its lock."""
        if self._writer.lost():
            raise IndexUnavailableError(
                f"the connection to PostgreSQL at {self.shown} broke while this process was writing, and the writer "
                "lock went with it; this change was not committed (what was committed before is kept): run the same "
                "call again"
            )

    def _hold_creation(self, db: Any) -> None:
        db.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (f"rhizome-ddl:{self.schema}",))

    def _verify_owner(self) -> None:
        self._check_writer()
        row = self.db.execute("SELECT value FROM meta WHERE key = 'index'").fetchone()
        if row is None or json.loads(row[0]).get("id") != self.manifest.index_id:
            raise IndexLockedError(
                f"the index at {self.shown} was dropped or replaced while this process was writing to it; the change "
                "was not committed. Close the index and open it again"
            )

    def _rolled_back(self) -> None:
        self._hnsw.clear()  # an HNSW index made in the transaction is gone with it

    def write_manifest(self) -> None:
        with self._lock:
            self._check_writer()
            super().write_manifest()

    def _close(self) -> None:
        with self._lock:
            if hasattr(self, "db"):
                self.db.close()

    def has_model_cache(self) -> bool:
        return True

    def model_cache(self) -> Any:
        if self.readonly:
            return ModelCache(None)
        return PostgresCache(str(self.location), store=self)

    # -- record tables -------------------------------------------------------------------------
    def create_record_table(self, db: Any, table: str, lookups: Sequence[str]) -> None:
        if table in self.record_tables():
            return
        db.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (f"rhizome-ddl:{self.schema}",))
        columns = "".join(f", f_{f} TEXT NOT NULL" for f in lookups)
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY{columns}, data TEXT NOT NULL,"
                   " rowid BIGINT NOT NULL DEFAULT nextval('rowids'))")
        for field in lookups:
            db.execute(f"CREATE INDEX IF NOT EXISTS {table}_{field} ON {table}(f_{field})")

    def json_value(self, column: str, path: Sequence[str]) -> str:
        return f"({column}::jsonb #>> '{{{','.join(path)}}}')"

    def record_tables(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        rows = self.query(
            "SELECT c.relname, a.attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
            " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relkind IN ('r', 'p')"
            " AND c.relname LIKE 'rec!_%' ESCAPE '!' AND a.attnum > 0 AND NOT a.attisdropped AND a.attname != 'rowid'"
            " ORDER BY c.relname, a.attnum",
            (self.schema,),
        )
        for table, column in rows:
            out.setdefault(table, []).append(column)
        return out

    # -- vectors -------------------------------------------------------------------------------
    def _stored_dimension(self) -> int | None:
        rows = self.query("SELECT vector_dims(vector) FROM vectors LIMIT 1")
        return int(rows[0][0]) if rows else None

    def put_vectors(
        self, db: Any, collection: str, ids: Sequence[str], vectors: np.ndarray, digests: Sequence[str] | None = None
    ) -> None:
        """Store vectors inside a transaction; a collection that reaches :data:`HNSW_FROM`
        vectors gets its HNSW index in the same transaction."""
        array = np.ascontiguousarray(vectors, dtype=np.float32)
        marks = digests if digests is not None else [""] * len(ids)
        if len(ids):
            db.upsert("vectors", ("collection", "id", "vector", "digest"), ("collection", "id"),
                      ((collection, key, array[i], marks[i]) for i, key in enumerate(ids)))
        self.bump(db, vectors_generation(collection))
        if len(ids) and collection not in self._hnsw and not self._has_hnsw(collection):
            count = db.execute("SELECT COUNT(*) FROM vectors WHERE collection = ?", (collection,)).fetchone()[0]
            if count >= HNSW_FROM:
                db.execute(
                    f"CREATE INDEX IF NOT EXISTS {_hnsw_name(collection)} ON vectors USING hnsw"
                    f" ((vector::vector({array.shape[1]})) vector_ip_ops) WHERE collection = {_literal(collection)}"
                )
                self._hnsw.add(collection)

    def _has_hnsw(self, collection: str) -> bool:
        """Whether ``collection`` has its HNSW index: asked of the server once per generation
        of the collection outside a transaction (a search of a small collection asked at each
        search)."""
        if collection in self._hnsw:
            return True
        generation = None if self._transactions else self.generation(vectors_generation(collection))
        if generation is not None and self._no_hnsw.get(collection) == generation:
            return False
        found = self.query("SELECT to_regclass(?)", (f"{_quote(self.schema)}.{_hnsw_name(collection)}",))[0][0] is not None
        if found:
            self._hnsw.add(collection)
        elif generation is not None:
            self._no_hnsw[collection] = generation
        return found

    def vector_rows(self, collection: str) -> tuple[list[str], np.ndarray | None, list[str]]:
        rows = self.query("SELECT id, vector, digest FROM vectors WHERE collection = ? ORDER BY rowid", (collection,), binary=True)
        if not rows:
            return [], None, []
        return [r[0] for r in rows], np.vstack([_array(r[1]) for r in rows]), [r[2] for r in rows]

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """A REPEATABLE READ, read-only transaction: every query inside sees the records as the
        first one did."""
        with self._lock:
            if self.db.in_transaction:
                yield
                return
            with self._errors():
                self.db.begin("ISOLATION LEVEL REPEATABLE READ READ ONLY")  # never continued on another connection
            try:
                yield
            finally:
                self.db.rollback()  # it wrote nothing

    def collection(self, name: str, dimension: int | None = None) -> PgCollection:
        with self._lock:
            found = self._collections.get(name)
            if found is None:
                found = self._collections[name] = PgCollection(self, name)
            return found


class PgCollection:
    """A vector collection searched by the server (see the module docstring)."""

    def __init__(self, store: PostgresStore, name: str) -> None:
        self.store = store
        self.name = name

    def __len__(self) -> int:
        return int(self.store.query("SELECT COUNT(*) FROM vectors WHERE collection = ?", (self.name,))[0][0])

    def __contains__(self, key: str) -> bool:
        return bool(self.store.query("SELECT 1 FROM vectors WHERE collection = ? AND id = ?", (self.name, key)))

    def ids(self) -> list[str]:
        return [r[0] for r in self.store.query("SELECT id FROM vectors WHERE collection = ? ORDER BY rowid", (self.name,))]

    def vectors(self, keys: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``keys`` (KeyError for an unknown key)."""
        return every_vector(keys, self.present(keys))

    def present(self, keys: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The keys of ``keys`` stored here and their vectors, from one query (see
        :meth:`rhizome.core.store.storage.Collection.present`)."""
        rows = dict(self.store.query("SELECT id, vector FROM vectors WHERE collection = ? AND id = ANY(?)", (self.name, list(keys)), binary=True))
        held = [key for key in keys if key in rows]
        out = [_array(rows[key]) for key in held]
        return held, np.vstack(out) if out else np.zeros((0, self.store.embedding_dimension or 0), dtype=np.float32)

    def search(self, queries: np.ndarray, k: int, among: Iterable[str] | None = None) -> list[list[tuple[str, float]]]:
        """The ``k`` nearest vectors of each query row as ``(id, cosine)``, best first (ties by id,
        as :class:`~rhizome.core.store.vectors.VectorStore` orders them); with ``among``, only those
        ids are searched, exactly."""
        array = np.ascontiguousarray(queries, dtype=np.float32)
        if array.ndim == 1:
            array = array.reshape(1, -1)
        wanted = None if among is None else sorted(set(among))
        if k < 1 or (wanted is not None and not wanted):
            return [[] for _ in range(array.shape[0])]
        limit = k + TIE_MARGIN
        dimension = array.shape[1]
        approximate = wanted is None and limit <= MAX_EF_SEARCH and self.store._has_hnsw(self.name)
        if approximate:
            expression = f"vector::vector({dimension}) <#> ?::vector({dimension})"
            statement = f"SELECT id, {expression} FROM vectors WHERE collection = {_literal(self.name)} ORDER BY {expression} LIMIT ?"
        else:
            among_clause = " AND id = ANY(?)" if wanted is not None else ""
            statement = f"SELECT id, vector <#> ? AS d FROM vectors WHERE collection = ?{among_clause} ORDER BY d LIMIT ?"

        def run(db: PostgresConnection) -> list[list[tuple[str, float]]]:
            out = []
            if approximate:
                db.execute(f"SET hnsw.ef_search = {max(40, limit)}")
            for row in array:
                if approximate:
                    params: tuple = (row, row, limit)
                elif wanted is not None:
                    params = (row, self.name, wanted, limit)
                else:
                    params = (row, self.name, limit)
                found = db.execute(statement, params).fetchall()
                out.append(ranked([(key, -float(d)) for key, d in found], k))
            return out

        return self.store._read(run)


class _AdvisoryLock:
    """The writer lock of one index across processes: a session advisory lock on its schema,
    taken by each insert, delete or refresh (see :class:`~rhizome.core.aio.WriteLock`)."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self.session: int | None = None
        """The :attr:`PostgresConnection.session` that holds the lock, while it is held."""

    def _key(self) -> str:
        return f"rhizome-writer:{self.store.schema}"

    def _try(self) -> bool:
        with self.store._lock:
            if not self.store.query("SELECT pg_try_advisory_lock(hashtext(?))", (self._key(),))[0][0]:
                return False
            self.session = self.store.db.session
            return True

    def lost(self) -> bool:
        """Whether the lock is held by a session that is gone (its connection broke and another
        was opened): another process may be writing now."""
        return self.session is not None and self.session != self.store.db.session

    async def acquire(self) -> None:
        deadline = time.monotonic() + LOCK_WAIT
        delay = 0.01
        while not self._try():
            if time.monotonic() > deadline:
                raise IndexLockedError(
                    f"another process has been writing to {self.store.shown} for {LOCK_WAIT:.0f} s; wait for it to "
                    "finish and run the same call again (readers are never blocked)"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    def release(self) -> None:
        with self.store._lock:
            held, self.session = self.session, None
            if held != self.store.db.session or self.store.db.broken:
                return  # a lost connection has released it already
            with contextlib.suppress(Exception):
                self.store.query("SELECT pg_advisory_unlock(hashtext(?))", (self._key(),))


class PostgresCache(ModelCache):
    """The model-call cache in the index's schema (table ``model_calls``): shared by every
    process and Ray worker that uses the index; each answer is committed as it is written.
    Made by an open store, it uses the store's connection while the store is open (cache
    writes happen between the store's transactions, under its lock); a pickled copy (a Ray
    worker's) connects on its own. Either connection is opened again after it broke."""

    table = "model_calls"

    def __init__(self, url: str, *, store: PostgresStore | None = None) -> None:
        self.url = url
        self.path = None
        self.hits = 0
        self.misses = 0
        self._store = store
        self._conn: PostgresConnection | None = None
        self._own_lock = threading.Lock()
        self._tables_known = False

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (PostgresCache, (self.url,))

    @contextlib.contextmanager
    def _session(self) -> Iterator[Any]:
        if self._store is not None and not self._store.closed:
            with self._store._lock, self._store._errors():
                if not self._tables_known:  # an index created before the sources table
                    for statement in _CACHE_TABLE.split(";"):
                        self._store.db.execute(statement)
                    self._tables_known = True
                yield self._store.db
            return
        with self._own_lock, _server_errors(parse_url(self.url)[2]):
            if self._conn is None:
                raw = connect(self.url)
                for statement in _CACHE_TABLE.split(";"):
                    raw.execute(statement)
                self._conn = PostgresConnection(raw, functools.partial(connect, self.url))
            yield self._conn

    def identity(self) -> Any:
        return ("postgres", self.url)

    def _reclaimed(self, db: Any) -> None:
        """Nothing to do here: PostgreSQL keeps a deleted row's old version in its data files
        until ``VACUUM`` (autovacuum) reclaims the space; no query sees it meanwhile."""

    def close(self) -> None:
        with self._own_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


@contextlib.contextmanager
def _server_errors(shown: str) -> Iterator[None]:
    """The driver's errors about the server or the connection, as :class:`IndexUnavailableError`."""
    psycopg = _driver()
    try:
        yield
    except psycopg.OperationalError as exc:
        raise IndexUnavailableError(
            f"PostgreSQL at {shown} failed ({' '.join(str(exc).split())}); what was not committed is lost, what "
            "was is kept: check the server, then run the same call again (the next call connects anew)"
        ) from exc


def _array(value: Any) -> np.ndarray:
    """A stored vector as float32 (pgvector hands back a ``Vector`` or an array)."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def _hnsw_name(collection: str) -> str:
    return "vectors_hnsw_" + hashlib.sha256(collection.encode("utf-8")).hexdigest()[:16]


def _literal(text: str) -> str:
    """A string constant for SQL (collection names are our own, but quote them properly): a
    partial index is only used by a query that names its collection as a constant."""
    return "'" + text.replace("'", "''") + "'"


def _holds_data(raw: Any, schema: str) -> bool:
    """Whether the index tables of ``schema`` hold any row besides ``meta`` (and the cache)."""
    tables = [r[0] for r in raw.execute(_SCHEMA_TABLES, (schema,))]
    return any(
        raw.execute(f"SELECT 1 FROM {_quote(t)} LIMIT 1").fetchone()
        for t in tables if t in _OURS - {"meta", "model_calls", "model_calls_sources"} or t.startswith("rec_")
    )


def _new_id() -> str:
    import uuid

    return uuid.uuid4().hex


__all__ = ["HNSW_FROM", "PgCollection", "PostgresCache", "PostgresConnection", "PostgresStore", "connect", "parse_url"]
