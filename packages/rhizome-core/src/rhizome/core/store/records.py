"""Typed record tables: how a method stores its own records without writing SQL.

A method declares each kind of record it keeps — a pydantic model, the field that is its key,
and the fields it looks records up by — and reads and writes them through a
:class:`RecordTable`::

    self.relations = self.store.table("lightrag_relations", Relation, lookups=("source", "target"))
    with self.store.transaction() as db:
        self.relations.put(db, [relation])
    edges = self.relations.find("source", ["acme"])

Each table is one database table of the index (``rec_<name>``, in SQLite or PostgreSQL): the
key, one indexed column per lookup field and the record as JSON. Every write bumps the table's *generation*, so a reader can
cache what it derived from a table and notice cheaply when it changed (:meth:`generation`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from rhizome.core.errors import ConfigurationError

if TYPE_CHECKING:
    from rhizome.core.store.storage import IndexStore

R = TypeVar("R", bound=BaseModel)
M = TypeVar("M", bound=BaseModel)

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
BATCH = 500
"""Most SQL parameters per statement (SQLite's default limit is 999)."""


def batches(items: Sequence[Any], size: int = BATCH) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class RecordTable(Generic[R]):
    """The records of one kind, stored as JSON rows keyed by ``key`` (see the module docstring).

    Use :meth:`IndexStore.table` to get one; reads see committed data, writes take the
    connection of the caller's :meth:`IndexStore.transaction`.
    """

    def __init__(
        self, store: IndexStore, name: str, model: type[R], *, key: str = "id", lookups: Sequence[str] = ()
    ) -> None:
        for part in (name, key, *lookups):
            if not _NAME.match(part):
                raise ConfigurationError(f"record table and field names must be snake_case identifiers, got {part!r}")
        self.store = store
        self.name = name
        self.model = model
        self.key = key
        self.lookups = tuple(lookups)
        self.sql = f"rec_{name}"

    def create(self, db: Any) -> None:
        self.store.create_record_table(db, self.sql, self.lookups)

    # -- reading -------------------------------------------------------------------------------
    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self.store.query(sql, params)
        except Exception as exc:  # a reader opened before the table existed
            if self.store.is_missing_table(exc):
                return []
            raise

    def _decode(self, rows: Iterable[tuple]) -> list[R]:
        return [self.model.model_validate_json(row[-1]) for row in rows]

    def get(self, keys: Iterable[str]) -> dict[str, R]:
        """Records by key (unknown keys are absent), in the order of ``keys``."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, R] = {}
        for part in batches(wanted):
            marks = ",".join("?" * len(part))
            for key, data in self._rows(f"SELECT key, data FROM {self.sql} WHERE key IN ({marks})", part):
                found[key] = self.model.model_validate_json(data)
        return {k: found[k] for k in wanted if k in found}

    def one(self, key: str) -> R | None:
        return self.get([key]).get(key)

    def all(self) -> list[R]:
        """Every record, ordered by key."""
        return self._decode(self._rows(f"SELECT data FROM {self.sql} ORDER BY key"))

    def fields(self, *names: str, ordered: bool = True, keys: Iterable[str] | None = None) -> list[tuple[Any, ...]]:
        """``(key, *values)`` of every record (``keys``: of those records, unknown keys absent),
        ordered by key (``ordered=False``: in the database's order), without decoding a record:
        a lookup field from its column, any other from the record's JSON in SQL (a dotted name
        reaches into an object: ``"metadata.n_sources"``). A scalar comes as the database gives
        it (a number may come as text; convert it), a list or an object as JSON text, an absent
        field as ``None``. For readers of a whole table's few fields (a graph's edges), where
        decoding every record costs several times the query."""
        columns = []
        for name in names:
            path = name.split(".")
            if not all(_NAME.match(part) for part in path):
                raise ConfigurationError(f"{self.name}: a field name is snake_case identifiers joined by dots, got {name!r}")
            columns.append(f"f_{name}" if name in self.lookups else self.store.json_value("data", path))
        select = f"SELECT key{''.join(', ' + c for c in columns)} FROM {self.sql}"
        if keys is None:
            rows = self._rows(select)
        else:
            rows = []
            for part in batches(list(dict.fromkeys(keys))):
                rows += self._rows(f"{select} WHERE key IN ({','.join('?' * len(part))})", part)
        if ordered:  # sorted here: cheaper than the database's walk of its key index, and by code point on every backend
            rows.sort(key=itemgetter(0))
        return rows

    def keys(self) -> list[str]:
        return [r[0] for r in self._rows(f"SELECT key FROM {self.sql} ORDER BY key")]

    def find(self, field: str, values: Iterable[str]) -> list[R]:
        """Records whose lookup ``field`` takes one of ``values``, oldest write first."""
        column = self._lookup(field)
        wanted = [v for v in dict.fromkeys(values) if v is not None]
        rows: list[tuple] = []
        for part in batches(wanted):
            marks = ",".join("?" * len(part))
            rows += self._rows(f"SELECT rowid, data FROM {self.sql} WHERE {column} IN ({marks})", part)
        rows.sort(key=lambda r: r[0])  # a row has one value per field, so it matches at most once
        return self._decode(rows)

    def first(self, field: str, values: Iterable[str]) -> dict[str, R]:
        """For each of ``values``, the oldest record whose lookup ``field`` takes it (values no
        record takes are absent). Decodes one record per value, however many share it: what a
        lookup wants when every record of a value says the same (``find(...)[0]`` per value)."""
        column = self._lookup(field)
        wanted = [v for v in dict.fromkeys(values) if v is not None]
        found: dict[str, R] = {}
        for part in batches(wanted):
            # per value, its first row in the lookup's index (which SQLite keeps in rowid order):
            # a value shared by many records costs one index step, not a scan of its records
            oldest = f"SELECT u.rowid FROM {self.sql} u WHERE u.{column} = w.v ORDER BY u.rowid LIMIT 1"
            values = ",".join(["(?)"] * len(part))
            sql = f"WITH w(v) AS (VALUES {values}) SELECT t.{column}, t.data FROM w JOIN {self.sql} t ON t.rowid = ({oldest})"
            for value, data in self._rows(sql, part):
                found[value] = self.model.model_validate_json(data)
        return {v: found[v] for v in wanted if v in found}

    def count(self) -> int:
        rows = self._rows(f"SELECT COUNT(*) FROM {self.sql}")
        return int(rows[0][0]) if rows else 0

    def distinct(self, field: str) -> list[str]:
        """The values lookup ``field`` takes, sorted (as stored: text)."""
        column = self._lookup(field)
        return [r[0] for r in self._rows(f"SELECT DISTINCT {column} FROM {self.sql} ORDER BY {column}")]

    def count_by(self, field: str, values: Iterable[str]) -> dict[str, int]:
        """How many records have each of ``values`` in lookup ``field`` (absent values: 0)."""
        column = self._lookup(field)
        wanted = list(dict.fromkeys(values))
        out = dict.fromkeys(wanted, 0)
        for part in batches(wanted):
            marks = ",".join("?" * len(part))
            for value, n in self._rows(f"SELECT {column}, COUNT(*) FROM {self.sql} WHERE {column} IN ({marks}) GROUP BY {column}", part):
                out[value] = int(n)
        return out

    def generation(self) -> int:
        """A number that changes whenever the table is written (see the module docstring)."""
        return self.store.generation(self.sql)

    # -- writing (inside a transaction) --------------------------------------------------------
    def put(self, db: Any, records: Iterable[R]) -> None:
        """Insert or replace records (by key)."""
        records = list(records)
        rows = [
            (str(getattr(r, self.key)), *(str(getattr(r, f)) for f in self.lookups), r.model_dump_json())
            for r in records
        ]
        if not rows:
            return
        db.upsert(self.sql, ("key", *(f"f_{f}" for f in self.lookups), "data"), ("key",), rows)
        self.store.bump(db, self.sql)

    def delete(self, db: Any, keys: Iterable[str]) -> None:
        self._delete(db, "key", list(dict.fromkeys(keys)))

    def replace(self, db: Any, old: Mapping[str, R], new: Mapping[str, R]) -> list[str]:
        """Make the table hold ``new`` where it held ``old`` (both by key): the records of
        ``old`` that ``new`` lacks are deleted, those of ``new`` that differ are written (a
        rebuild writes only what changed). Returns the keys deleted."""
        gone = [k for k in old if k not in new]
        self.delete(db, gone)
        self.put(db, [r for k, r in new.items() if old.get(k) != r])
        return gone

    def delete_by(self, db: Any, field: str, values: Iterable[str]) -> None:
        """Delete the records whose lookup ``field`` takes one of ``values``."""
        self._delete(db, self._lookup(field), list(dict.fromkeys(values)))

    def _delete(self, db: Any, column: str, values: list[str]) -> None:
        if not values:
            return
        for part in batches(values):
            db.execute(f"DELETE FROM {self.sql} WHERE {column} IN ({','.join('?' * len(part))})", list(part))
        self.store.bump(db, self.sql)

    def _lookup(self, field: str) -> str:
        if field not in self.lookups:
            raise ConfigurationError(
                f"{self.name} has no lookup field {field!r}; declare it with lookups=(...) "
                f"(declared: {', '.join(self.lookups) or 'none'})"
            )
        return f"f_{field}"

    def view(self, model: type[M]) -> RecordTable[M]:
        """The same table read as ``model``: a model with some of the record's fields (the
        others are skipped), which decodes faster when the records carry long fields a reader
        does not need. Read it only; a record written through it would lose the other fields."""
        return RecordTable(self.store, self.name, model, key=self.key, lookups=self.lookups)

    def __repr__(self) -> str:
        return f"RecordTable({self.name!r}, {self.model.__name__})"


__all__ = ["RecordTable", "batches"]
