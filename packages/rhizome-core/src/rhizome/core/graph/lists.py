"""A long profile's citations and description fragments, stored as rows of their own.

An entity or relation profile cites every chunk that mentions it and keeps every distinct
description fragment until a summary covers it; both lists grow with the corpus. Stored inside
the profile's record, they were read, decoded, encoded and written again whole by every insert
batch touching the profile, so a batch cost more the larger the corpus already was. A profile
with more than :data:`INLINE` citations or fragments (a *long* one) keeps them as rows: each
citation (:class:`Citation`) and each fragment (:class:`Fragment`) is one row, keyed by its profile and its value and
numbered in order of arrival, and the profile record keeps only their counts (metadata
``n_sources`` and ``n_fragments``). A batch appends the rows it adds and rewrites the small
record; it reads back only what it needs: whether a value is stored already (by key), and the
fragments the profile gathered since its last summary (by number). A short profile keeps its
lists inside its record, as every profile did before: a row costs more to write than a few list
items cost to rewrite, and most relations are mentioned once or twice. Which form a profile
takes depends on its lists alone, so a delete that rebuilds a profile gives it the form (and the
rows) one insert of the remaining documents would.

Indexes written before long profiles had rows hold every list inside its record: readers here
read both forms, and the first writable open moves the long ones to rows
(:meth:`ProfileLists.migrate`). :meth:`ProfileLists.whole` gives back any record with its lists
inside: what ``entities()``, ``relations()`` and exports return.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from rhizome.core.index.base import text_digest
from rhizome.core.types import Entity, Relation

SOURCES = "n_sources"
"""Profile metadata: how many chunks it cites (rows of ``<prefix>_citations``)."""
FRAGMENTS = "n_fragments"
"""Profile metadata: how many distinct fragments it holds (rows of ``<prefix>_fragments``)."""

INLINE = 16
"""Most citations, and most fragments, a profile keeps inside its record."""

P = TypeVar("P", Entity, Relation)


ENTITY_KEY = "e:"
"""Prefix of an entity's profile key (:func:`entity_profile`)."""
RELATION_KEY = "r:"
"""Prefix of a relation's profile key (:func:`relation_profile`)."""


class _ProfileRow(BaseModel):
    """What a citation and a fragment row share: their profile (``e:<entity id>`` or
    ``r:<relation id>``) and their place, the ``seq``-th in order of arrival."""

    model_config = ConfigDict(extra="forbid")

    profile: str
    seq: int

    @property
    def slot(self) -> str:
        return slot(self.profile, self.seq)


class Citation(_ProfileRow):
    """One chunk a profile's mentions come from."""

    chunk_id: str

    @property
    def id(self) -> str:
        return citation_id(self.profile, self.chunk_id)


class Fragment(_ProfileRow):
    """One distinct description fragment of a profile."""

    text: str

    @property
    def id(self) -> str:
        return fragment_id(self.profile, self.text)


def slot(profile: str, seq: int) -> str:
    """The lookup value of a profile's ``seq``-th citation or fragment."""
    return f"{profile}\x1f{seq}"


def citation_id(profile: str, chunk_id: str) -> str:
    """The key of a citation: one row per profile and chunk."""
    return f"{profile}\x1f{chunk_id}"


def fragment_id(profile: str, text: str) -> str:
    """The key of a fragment: one row per profile and distinct text."""
    return f"{profile}\x1f{text_digest(text)}"


def entity_profile(entity_id: str) -> str:
    """``e:<entity id>``: the key of an entity's profile (its rows, its pending summary)."""
    return ENTITY_KEY + entity_id


def relation_profile(relation_id: str) -> str:
    """``r:<relation id>``: the key of a relation's profile."""
    return RELATION_KEY + relation_id


def profile_key(record: Entity | Relation) -> str:
    """The profile a row belongs to: :func:`entity_profile` or :func:`relation_profile` of the record."""
    return entity_profile(record.id) if isinstance(record, Entity) else relation_profile(record.id)


def in_rows(record: Entity | Relation) -> bool:
    """Whether the record keeps its lists as rows (else it holds them)."""
    return SOURCES in record.metadata


def is_long(n_sources: int, n_fragments: int) -> bool:
    """Whether a profile with these many citations and fragments keeps them as rows."""
    return max(n_sources, n_fragments) > INLINE


def counts(record: Entity | Relation) -> tuple[int, int]:
    """How many citations and fragments the profile has, in either layout."""
    if in_rows(record):
        return int(record.metadata[SOURCES]), int(record.metadata[FRAGMENTS])
    return len(record.source_chunk_ids), len(record.descriptions)


def head(record: P, n_sources: int, n_fragments: int) -> P:
    """The record as stored: without its lists, with their counts (last, so that equal records
    are stored alike)."""
    meta = _without_counts(record)
    return record.model_copy(update={"descriptions": [], "source_chunk_ids": [], "metadata": {**meta, SOURCES: n_sources, FRAGMENTS: n_fragments}})


def as_stored(record: P) -> P:
    """A stored record given back after a change of its value: as it was stored (counts last
    when its lists are rows)."""
    return head(record, *counts(record)) if in_rows(record) else record


def _without_counts(record: Entity | Relation) -> dict[str, Any]:
    return {k: v for k, v in record.metadata.items() if k not in (SOURCES, FRAGMENTS)}


class ProfileLists:
    """The citation and fragment rows of an index's profiles (see the module docstring)."""

    def __init__(self, store: Any, prefix: str) -> None:
        # one lookup: the rows of a profile are found by number (its record has their counts)
        self.citations = store.table(f"{prefix}_citations", Citation, lookups=("slot",))
        self.fragments = store.table(f"{prefix}_fragments", Fragment, lookups=("slot",))

    def generation(self) -> tuple[int, int]:
        return self.citations.generation(), self.fragments.generation()

    # -- reading -----------------------------------------------------------------------------------
    def sources(self, records: Iterable[Entity | Relation], limit: int | None = None) -> dict[str, list[str]]:
        """Each profile's cited chunk ids in order (the first ``limit``), by profile key."""
        records = list(records)
        out = {profile_key(r): list(r.source_chunk_ids[:limit]) for r in records if not in_rows(r)}
        out.update(self._read(self.citations, [r for r in records if in_rows(r)], SOURCES, limit))
        return out

    def every_source(self, table: Any, *fields: str) -> list[tuple[Any, ...]]:
        """``(id, cited chunk ids in order, *fields)`` for every profile of ``table`` (the
        entity or the relation records), by id, read with :meth:`RecordTable.fields` (``fields``
        as there) instead of decoding every record and citation: what a view of the whole graph
        reads (the evidence walk, the chains of facts), several times faster."""
        prefix = ENTITY_KEY if issubclass(table.model, Entity) else RELATION_KEY
        rows = table.fields("source_chunk_ids", f"metadata.{SOURCES}", *fields)
        stored = {prefix + row[0]: int(row[2]) for row in rows if row[2] is not None}  # profiles whose citations are rows
        cited: dict[str, list[tuple[int, str]]] = {}
        for key, at in self.citations.fields("slot", ordered=False) if stored else ():
            profile, _, seq = at.rpartition("\x1f")
            if int(seq) < stored.get(profile, 0):
                cited.setdefault(profile, []).append((int(seq), key[len(profile) + 1 :]))
        return [
            (key, json.loads(inline or "[]") if n is None else [c for _, c in sorted(cited.get(prefix + key, ()))], *values)
            for key, inline, n, *values in rows
        ]

    def texts(self, records: Iterable[Entity | Relation]) -> dict[str, list[str]]:
        """Each profile's fragments in order, by profile key."""
        records = list(records)
        out = {profile_key(r): list(r.descriptions) for r in records if not in_rows(r)}
        out.update(self._read(self.fragments, [r for r in records if in_rows(r)], FRAGMENTS, None))
        return out

    def tails(self, wanted: Sequence[tuple[Entity | Relation, int]]) -> dict[str, list[str]]:
        """For each ``(record, start)``, the profile's fragments from the ``start``-th on (one
        read for all)."""
        out: dict[str, list[str]] = {}
        slots: list[str] = []
        for record, start in wanted:
            key = profile_key(record)
            if in_rows(record):
                out[key] = []
                slots += [slot(key, i) for i in range(start, counts(record)[1])]
            else:
                out[key] = list(record.descriptions[start:])
        for key, _, text in sorted(self._find(self.fragments, slots)):
            out[key].append(text)
        return out

    def _read(self, table: Any, records: list[Entity | Relation], field: str, limit: int | None) -> dict[str, list[str]]:
        """The values in ``table`` of each profile (its first ``limit``), in order."""
        keys = [profile_key(r) for r in records]
        end = [int(r.metadata[field]) if limit is None else min(int(r.metadata[field]), limit) for r in records]
        found = self._find(table, [slot(key, i) for key, n in zip(keys, end, strict=True) for i in range(n)])
        out: dict[str, list[str]] = {key: [] for key in keys}
        for key, _, value in sorted(found, key=lambda x: x[1]):
            out[key].append(value)
        return out

    @staticmethod
    def _find(table: Any, slots: list[str], part: int = 4096) -> list[tuple[str, int, str]]:
        """``(profile, number, value)`` of the rows at ``slots``, decoded a part at a time: the
        rows of many long profiles (a summary pass, the evidence graph) are never all held as
        models at once."""
        out: list[tuple[str, int, str]] = []
        for i in range(0, len(slots), part):
            out += ((r.profile, r.seq, r.chunk_id if isinstance(r, Citation) else r.text) for r in table.find("slot", slots[i : i + part]))
        return out

    def whole(self, records: Sequence[P]) -> list[P]:
        """The records with their lists inside, as the layout before the rows stored them."""
        stored = [r for r in records if in_rows(r)]
        sources = self.sources(stored)
        fragments = self.texts(stored)
        out = []
        for record in records:
            if in_rows(record):
                key = profile_key(record)
                record = record.model_copy(update={"source_chunk_ids": sources[key], "descriptions": fragments[key], "metadata": _without_counts(record)})
            out.append(record)
        return out

    def held(self, citations: Iterable[tuple[str, str]], fragments: Iterable[tuple[str, str]]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
        """Which of the ``(profile key, chunk id)`` and ``(profile key, fragment)`` pairs are
        stored already (read by key: a pair that is not costs an index probe)."""
        citations, fragments = list(citations), list(fragments)
        cited = self.citations.get(citation_id(key, chunk) for key, chunk in citations)
        known = self.fragments.get(fragment_id(key, text) for key, text in fragments)
        return (
            {(c.profile, c.chunk_id) for c in cited.values()},
            {(f.profile, f.text) for f in known.values()},
        )

    # -- writing (inside a transaction) --------------------------------------------------------------
    def append(self, db: Any, items: Iterable[tuple[str, int, Sequence[str], int, Sequence[str]]]) -> None:
        """Store new citations and fragments: per item, ``(profile key, number of the first
        citation, chunk ids, number of the first fragment, fragments)``."""
        citations: list[Citation] = []
        fragments: list[Fragment] = []
        for key, first_source, chunk_ids, first_fragment, texts in items:
            # built without validation: the values are the plan's own strings and numbers
            citations += (Citation.model_construct(profile=key, seq=first_source + i, chunk_id=c) for i, c in enumerate(chunk_ids))
            fragments += (Fragment.model_construct(profile=key, seq=first_fragment + i, text=t) for i, t in enumerate(texts))
        self.citations.put(db, citations)
        self.fragments.put(db, fragments)

    def drop(self, db: Any, records: Iterable[Entity | Relation]) -> None:
        """Remove every row of these profiles (as stored: their counts number the rows)."""
        records = [r for r in records if in_rows(r)]
        self.citations.delete_by(db, "slot", (slot(profile_key(r), i) for r in records for i in range(counts(r)[0])))
        self.fragments.delete_by(db, "slot", (slot(profile_key(r), i) for r in records for i in range(counts(r)[1])))

    def migrate(self, db: Any, tables: Iterable[Any]) -> int:
        """Move the lists of every long record still holding them (an index written before
        long profiles had rows) to rows; returns how many records moved. Idempotent: a record
        moved already is skipped."""
        moved = 0
        for table in tables:
            old = [r for r in table.all() if not in_rows(r) and is_long(len(r.source_chunk_ids), len(r.descriptions))]
            self.append(db, ((profile_key(r), 0, r.source_chunk_ids, 0, r.descriptions) for r in old))
            table.put(db, (head(r, len(r.source_chunk_ids), len(r.descriptions)) for r in old))
            moved += len(old)
        return moved


__all__ = [
    "ENTITY_KEY",
    "FRAGMENTS",
    "INLINE",
    "RELATION_KEY",
    "SOURCES",
    "Citation",
    "Fragment",
    "ProfileLists",
    "as_stored",
    "citation_id",
    "counts",
    "entity_profile",
    "fragment_id",
    "head",
    "in_rows",
    "is_long",
    "profile_key",
    "relation_profile",
    "slot",
]
