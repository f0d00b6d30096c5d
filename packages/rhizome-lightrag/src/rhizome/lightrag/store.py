"""LightRAG's records inside the index's SQLite database.

Four tables beside the kernel's (documents, chunks, vectors, kv):

``lightrag_entities``     one row per entity profile: name, type, degree and the profile as JSON
``lightrag_relations``    one row per relation profile: its two entity ids (indexed both ways),
                          weight and the profile as JSON — the graph's edge list
``lightrag_extractions``  the raw extraction of every chunk (resolved to entity ids), so a
                          delete rebuilds shared profiles without extracting again
``lightrag_mentions``     one row per (chunk, surface name): the name's comparison keys and the
                          entity it was resolved to — what entity resolution looks names up in

The graph is these tables (an adjacency list with indexes on both endpoints), so an insert or a
delete writes only the rows it touches and a query reads only the neighbourhoods it needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from rhizome.core.types import Entity, Relation
from rhizome.lightrag.schema import ChunkExtraction

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS lightrag_entities (id TEXT PRIMARY KEY, name TEXT NOT NULL,"
    " type TEXT NOT NULL, degree INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lightrag_relations (id TEXT PRIMARY KEY, source TEXT NOT NULL,"
    " target TEXT NOT NULL, weight REAL NOT NULL, data TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS lightrag_relations_source ON lightrag_relations(source)",
    "CREATE INDEX IF NOT EXISTS lightrag_relations_target ON lightrag_relations(target)",
    "CREATE TABLE IF NOT EXISTS lightrag_extractions (chunk_id TEXT PRIMARY KEY,"
    " document_id TEXT NOT NULL, data TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS lightrag_extractions_document ON lightrag_extractions(document_id)",
    "CREATE TABLE IF NOT EXISTS lightrag_mentions (chunk_id TEXT NOT NULL, key TEXT NOT NULL,"
    " name TEXT NOT NULL, norm TEXT NOT NULL, initials TEXT NOT NULL, acronym TEXT NOT NULL,"
    " entity_id TEXT NOT NULL, PRIMARY KEY (chunk_id, key))",
    "CREATE INDEX IF NOT EXISTS lightrag_mentions_key ON lightrag_mentions(key)",
    "CREATE INDEX IF NOT EXISTS lightrag_mentions_norm ON lightrag_mentions(norm)",
    "CREATE INDEX IF NOT EXISTS lightrag_mentions_initials ON lightrag_mentions(initials)",
    "CREATE INDEX IF NOT EXISTS lightrag_mentions_acronym ON lightrag_mentions(acronym)",
)

TABLES = ("lightrag_entities", "lightrag_relations", "lightrag_extractions", "lightrag_mentions")


def batches(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class GraphRecords:
    """Reads and writes of the LightRAG tables of one :class:`~rhizome.core.storage.IndexStore`.
    Reads go through ``store.query`` (they see committed data); writes take the connection of
    the caller's transaction."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def ensure_schema(self) -> None:
        if self.store.readonly:
            return
        with self.store.transaction() as db:
            for statement in SCHEMA:
                db.execute(statement)

    def _select(self, sql: str, keys: Sequence[str], extra: Sequence[Any] = ()) -> list[tuple]:
        rows: list[tuple] = []
        keys = list(dict.fromkeys(keys))
        for part in batches(keys):
            marks = ",".join("?" * len(part))
            rows.extend(self.store.query(sql.format(marks=marks), [*extra, *part]))
        return rows

    # -- entities and relations -----------------------------------------------------------------
    def entities(self, ids: Iterable[str]) -> dict[str, Entity]:
        rows = self._select("SELECT id, data FROM lightrag_entities WHERE id IN ({marks})", list(ids))
        return {r[0]: Entity.model_validate_json(r[1]) for r in rows}

    def entity_rows(self, ids: Iterable[str]) -> dict[str, tuple[str, str, int]]:
        """``id → (name, type, degree)`` without the profiles."""
        rows = self._select("SELECT id, name, type, degree FROM lightrag_entities WHERE id IN ({marks})", list(ids))
        return {r[0]: (r[1], r[2], int(r[3])) for r in rows}

    def relations(self, ids: Iterable[str]) -> dict[str, Relation]:
        rows = self._select("SELECT id, data FROM lightrag_relations WHERE id IN ({marks})", list(ids))
        return {r[0]: Relation.model_validate_json(r[1]) for r in rows}

    def incident(self, entity_ids: Iterable[str]) -> list[tuple[str, str, str, float]]:
        """``(relation id, source, target, weight)`` of every relation touching the entities."""
        ids = list(dict.fromkeys(entity_ids))
        rows = self._select(
            "SELECT id, source, target, weight FROM lightrag_relations WHERE source IN ({marks})", ids
        )
        rows += self._select(
            "SELECT id, source, target, weight FROM lightrag_relations WHERE target IN ({marks})", ids
        )
        seen: dict[str, tuple[str, str, str, float]] = {}
        for r in rows:
            seen.setdefault(r[0], (r[0], r[1], r[2], float(r[3])))
        return list(seen.values())

    def count(self, table: str) -> int:
        if table not in TABLES:
            raise ValueError(table)
        return int(self.store.query(f"SELECT COUNT(*) FROM {table}")[0][0])

    @staticmethod
    def put_entity(db: Any, entity: Entity) -> None:
        db.execute(
            "INSERT INTO lightrag_entities (id, name, type, degree, data) VALUES (?, ?, ?, 0, ?)"
            " ON CONFLICT(id) DO UPDATE SET name = excluded.name, type = excluded.type, data = excluded.data",
            (entity.id, entity.name, entity.type, entity.model_dump_json()),
        )

    @staticmethod
    def put_relation(db: Any, relation: Relation) -> None:
        db.execute(
            "INSERT OR REPLACE INTO lightrag_relations (id, source, target, weight, data) VALUES (?, ?, ?, ?, ?)",
            (relation.id, relation.source, relation.target, relation.weight, relation.model_dump_json()),
        )

    @staticmethod
    def delete_rows(db: Any, table: str, column: str, keys: Sequence[str]) -> None:
        if table not in TABLES:
            raise ValueError(table)
        for part in batches(list(keys)):
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", list(part))

    @staticmethod
    def refresh_degrees(db: Any, entity_ids: Iterable[str]) -> None:
        db.executemany(
            "UPDATE lightrag_entities SET degree = (SELECT COUNT(*) FROM lightrag_relations WHERE source = ?)"
            " + (SELECT COUNT(*) FROM lightrag_relations WHERE target = ?) WHERE id = ?",
            [(e, e, e) for e in dict.fromkeys(entity_ids)],
        )

    # -- extractions and mentions ---------------------------------------------------------------
    def extractions(self, chunk_ids: Iterable[str]) -> dict[str, ChunkExtraction]:
        rows = self._select("SELECT chunk_id, data FROM lightrag_extractions WHERE chunk_id IN ({marks})", list(chunk_ids))
        return {r[0]: ChunkExtraction.model_validate_json(r[1]) for r in rows}

    def chunk_ids_of(self, document_id: str) -> list[str]:
        return [r[0] for r in self.store.query("SELECT id FROM chunks WHERE document_id = ? ORDER BY idx", (document_id,))]

    @staticmethod
    def put_extraction(db: Any, document_id: str, record: ChunkExtraction) -> None:
        db.execute(
            "INSERT OR REPLACE INTO lightrag_extractions (chunk_id, document_id, data) VALUES (?, ?, ?)",
            (record.chunk_id, document_id, record.model_dump_json()),
        )

    @staticmethod
    def put_mentions(db: Any, rows: Sequence[tuple[str, str, str, str, str, str, str]]) -> None:
        db.executemany(
            "INSERT OR REPLACE INTO lightrag_mentions (chunk_id, key, name, norm, initials, acronym, entity_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            list(rows),
        )

    def mention_entities(self, column: str, values: Sequence[str]) -> list[tuple[str, str]]:
        """``(value, entity id)`` for mentions whose ``column`` (key, norm, initials or acronym)
        takes one of ``values``; first-stored first."""
        if column not in ("key", "norm", "initials", "acronym"):
            raise ValueError(column)
        values = [v for v in values if v]
        if not values:
            return []
        return [
            (r[0], r[1])
            for r in self._select(
                f"SELECT {column}, entity_id FROM lightrag_mentions WHERE {column} IN ({{marks}}) ORDER BY rowid",
                values,
            )
        ]

    # -- whole-table views (tests, export) --------------------------------------------------------
    def all_entities(self) -> list[Entity]:
        return [Entity.model_validate_json(r[0]) for r in self.store.query("SELECT data FROM lightrag_entities ORDER BY id")]

    def all_relations(self) -> list[Relation]:
        return [Relation.model_validate_json(r[0]) for r in self.store.query("SELECT data FROM lightrag_relations ORDER BY id")]

    def snapshot(self) -> dict[str, list[tuple]]:
        """Every LightRAG row, sorted: equal snapshots mean equal graph records."""
        out = {}
        for table in TABLES:
            out[table] = sorted(self.store.query(f"SELECT * FROM {table}"))
        return out


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


__all__ = ["SCHEMA", "TABLES", "GraphRecords", "batches"]
