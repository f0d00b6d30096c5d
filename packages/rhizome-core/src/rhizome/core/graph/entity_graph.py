"""An entity graph as a method's searches see it.

:class:`EntityGraph` is a view of the merged entities, relations and communities of an index,
with the lookups graph searches need (degrees, relations per entity, communities per entity, the
chunks each entity cites); :meth:`EntityGraph.weighted` is the undirected weighted graph that
Leiden clusters (:func:`~rhizome.core.index.hierarchy.cluster_hierarchy`).

A build holds whole records in it (:meth:`EntityGraph.build`). The graph a search reads
(:meth:`~rhizome.core.graph.store.EntityGraphStore.view`, cached by GraphRAG and ArchRAG) holds
only the structure: every relation as an :class:`Edge` (its endpoints and weight), every entity's
name and cited chunks, and the entity records as :class:`StoredRecords`, read when a search asks
for them. Code that shows a relation's text reads it whole with
:meth:`EntityGraph.whole_relations`; on a graph of whole records that is a lookup.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict

from rhizome.core.types import Community, Entity, Relation


class EntityOutline(BaseModel):
    """What a community report or a clustering reads of a stored :class:`Entity`: decoded
    without its descriptions and citations (a popular entity cites thousands of chunks), so a
    whole graph is read at a fraction of the cost. Read with ``table.view(EntityOutline)``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    name: str
    type: str = ""
    description: str = ""

    @property
    def source_chunk_ids(self) -> list[str]:
        return []  # not read: an outline cites no chunk


class RelationOutline(BaseModel):
    """A stored :class:`Relation` decoded without its descriptions, citations and metadata
    (as :class:`EntityOutline`)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    source: str
    target: str
    predicate: str = ""
    description: str = ""
    keywords: list[str] = []
    weight: float = 1.0


class Edge(NamedTuple):
    """A relation as a view of the whole graph holds it: what ranks and weighs it (its text is
    read with :meth:`EntityGraph.whole_relations` where a context shows it)."""

    id: str
    source: str
    target: str
    weight: float


class Edges(Mapping[str, Edge]):
    """Relations by id as :class:`Edge` s, kept as columns (an edge is made when asked for):
    a few lists instead of an object per relation."""

    def __init__(self, rows: Iterable[tuple[str, str, str, float]]) -> None:
        self.ids: list[str] = []
        self.source: list[str] = []
        self.target: list[str] = []
        self.weight: list[float] = []
        for rid, source, target, weight in rows:
            self.ids.append(rid)
            self.source.append(source)
            self.target.append(target)
            self.weight.append(weight)
        self._at = {rid: i for i, rid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __contains__(self, key: object) -> bool:
        return key in self._at

    def __getitem__(self, key: str) -> Edge:
        i = self._at[key]
        return Edge(key, self.source[i], self.target[i], self.weight[i])


R = TypeVar("R")


class StoredRecords(Mapping[str, R], Generic[R]):
    """Records of one table as a read-only mapping that holds their ids alone: a record is read
    when asked for (``many`` reads several in one go) and kept while fewer than ``keep`` are
    held; iterating the values reads them a part at a time, keeping none."""

    PART = 4096

    def __init__(self, keys: Iterable[str], read: Callable[[Sequence[str]], Mapping[str, R]], keep: int = 50_000) -> None:
        self._keys = dict.fromkeys(keys)
        self._read = read
        self._keep = keep
        self._held: dict[str, R] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __getitem__(self, key: str) -> R:
        found = self.many([key])
        if key not in found:
            raise KeyError(key)
        return found[key]

    def many(self, keys: Iterable[str]) -> dict[str, R]:
        """The records of ``keys`` that are held (unknown ones left out), in their order."""
        wanted = [k for k in dict.fromkeys(keys) if k in self._keys]
        held = self._held
        missing = [k for k in wanted if k not in held]
        if missing:
            if len(held) + len(missing) > self._keep:  # let go of what is held, and read them all
                held, missing = {}, wanted
                self._held = held
            for i in range(0, len(missing), self.PART):
                held.update(self._read(missing[i : i + self.PART]))
        return {k: held[k] for k in wanted if k in held}

    def values(self) -> ValuesView[R]:
        return _PartValues(self)


class _PartValues(ValuesView[R]):
    """The values of :class:`StoredRecords`, read a part at a time."""

    _mapping: StoredRecords[R]

    def __iter__(self) -> Iterator[R]:
        keys = list(self._mapping)
        for i in range(0, len(keys), StoredRecords.PART):
            yield from self._mapping._read(keys[i : i + StoredRecords.PART]).values()


@dataclass
class EntityGraph:
    """Entities, relations and communities of an index, with derived lookups (see the module
    docstring for the two forms: whole records, or the structure of the stored graph)."""

    entities: Mapping[str, Entity] = field(default_factory=dict)
    relations: Mapping[str, Any] = field(default_factory=dict)
    """Relations by id: whole :class:`Relation` records, or outlines with at least ``id``,
    ``source``, ``target`` and ``weight`` (:class:`Edge`, :class:`RelationOutline`)."""
    communities: dict[str, Community] = field(default_factory=dict)
    degree: dict[str, int] = field(default_factory=dict)
    relations_of: dict[str, list[str]] = field(default_factory=dict)
    communities_of: dict[str, list[str]] = field(default_factory=dict)
    sources: dict[str, list[str]] = field(default_factory=dict)
    """The chunks each entity cites, in order."""
    names: dict[str, str] | None = None
    """Every entity's name, when the entities are read on demand."""
    read_relations: Callable[[Sequence[str]], Mapping[str, Relation]] | None = None
    """Whole relations by id, when :attr:`relations` holds outlines."""
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What searches derive from this graph (kept with it, so it goes when the graph changes)."""

    @classmethod
    def build(
        cls,
        entities: Mapping[str, Entity],
        relations: Mapping[str, Any],
        communities: Mapping[str, Community] | None = None,
    ) -> EntityGraph:
        """The graph of these records (whole, or outlines where the caller reads no text)."""
        return cls.of(dict(entities), dict(relations), dict(communities or {}),
                      sources={eid: list(e.source_chunk_ids) for eid, e in entities.items()})

    @classmethod
    def of(cls, entities: Mapping[str, Entity], relations: Mapping[str, Any], communities: dict[str, Community], **parts: Any) -> EntityGraph:
        """The graph of these mappings with its lookups derived (``parts``: further fields)."""
        data = cls(entities, relations, communities, **parts)
        relations_of: dict[str, list[str]] = defaultdict(list)
        number: dict[str, int] = {}  # an entity's position in the pairs below
        pairs: list[int] = []  # the two ends of every relation that is not a loop
        for rid, source, target in data.ends():
            relations_of[source].append(rid)
            if target != source:
                relations_of[target].append(rid)
                pairs += (number.setdefault(source, len(number)), number.setdefault(target, len(number)))
        data.relations_of = dict(relations_of)
        # the degree is the number of distinct neighbours: count each unordered pair once
        ends_of = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)
        distinct = np.unique(ends_of[:, 0] * len(number) + ends_of[:, 1])
        counts = (np.bincount(distinct // len(number), minlength=len(number)) + np.bincount(distinct % len(number), minlength=len(number))).tolist()
        data.degree = {eid: counts[number[eid]] if eid in number else 0 for eid in entities}
        communities_of: dict[str, list[str]] = defaultdict(list)
        for community in sorted(communities.values(), key=lambda c: c.level):
            for eid in community.entity_ids:
                communities_of[eid].append(community.id)
        data.communities_of = dict(communities_of)
        return data

    def ends(self) -> Iterator[tuple[str, str, str]]:
        """Every relation's id, source and target (of :class:`Edges`, read off their columns
        without making an edge each)."""
        relations = self.relations
        if isinstance(relations, Edges):
            return zip(relations.ids, relations.source, relations.target)
        return ((rid, r.source, r.target) for rid, r in relations.items())

    @property
    def entities_of_chunk(self) -> dict[str, list[str]]:
        """The entities each chunk is cited by."""
        chunks: dict[str, list[str]] = defaultdict(list)
        for eid, cited in self.sources.items():
            for cid in cited:
                chunks[cid].append(eid)
        return dict(chunks)

    def whole_relations(self, ids: Iterable[str]) -> dict[str, Relation]:
        """The relations ``ids`` (those the graph holds), whole, in their order."""
        wanted = [rid for rid in dict.fromkeys(ids) if rid in self.relations]
        if self.read_relations is None:
            return {rid: self.relations[rid] for rid in wanted}
        found = self.read_relations(wanted)
        return {rid: found[rid] for rid in wanted if rid in found}

    def whole_entities(self, ids: Iterable[str]) -> dict[str, Entity]:
        """The entities ``ids`` (those the graph holds), in their order, read in one go."""
        if isinstance(self.entities, StoredRecords):
            return self.entities.many(ids)
        return {eid: self.entities[eid] for eid in dict.fromkeys(ids) if eid in self.entities}

    def weighted(self) -> nx.Graph:
        """The undirected weighted graph Leiden runs on (:func:`weighted_graph`)."""
        return weighted_graph(self.relations.values(), self.entities)

    def name(self, entity_id: str) -> str:
        """An entity's name (its id when the graph does not hold it)."""
        if self.names is not None:
            return self.names.get(entity_id, entity_id)
        entity = self.entities.get(entity_id)
        return entity.name if entity is not None else entity_id

    def combined_degree(self, relation: Relation) -> int:
        return self.degree.get(relation.source, 0) + self.degree.get(relation.target, 0)

    def levels(self) -> int:
        return 1 + max((c.level for c in self.communities.values()), default=-1)

    def frontier(self, level: int) -> list[Community]:
        """The communities that partition the clustered entities at ``level``: those created at
        that level plus the leaves of shallower levels (GraphRAG's "community level")."""
        return [
            c
            for c in self.communities.values()
            if c.level == level or (c.level < level and not c.children)
        ]

    def roots(self) -> list[Community]:
        return [c for c in self.communities.values() if c.parent is None]

    def members(self, community: Community, limit: int | None = None) -> list[Entity]:
        """A community's entities, most connected first (ties by id); the first ``limit``."""
        ids = sorted((e for e in dict.fromkeys(community.entity_ids) if e in self.entities), key=lambda e: (-self.degree.get(e, 0), e))
        return list(self.whole_entities(ids[:limit]).values())

    def community_chunks(self, community: Community) -> list[str]:
        """Chunk ids supporting a community's entities, most-cited first (counted once per
        community and graph: a top community cites most of the corpus)."""
        held = self.cache.setdefault("community-chunks", {})
        found = held.get(community.id)  # (its members when counted, the chunks)
        # the graph's own community is the same object each time: its members are compared only
        # when another object of the same id comes (a top community has thousands)
        if found is None or (found[0] is not community.entity_ids and found[0] != community.entity_ids):
            counts: dict[str, int] = defaultdict(int)
            for eid in community.entity_ids:
                for cid in self.sources.get(eid, ()):
                    counts[cid] += 1
            found = held[community.id] = (community.entity_ids, sorted(counts, key=lambda c: (-counts[c], c)))
        return list(found[1])


def weighted_graph(relations: Iterable[Any], entity_ids: Container[str]) -> nx.Graph:
    """The undirected weighted graph Leiden runs on: one node per entity that has at least one
    relation to another entity (GraphRAG clusters its edge list, so isolated entities belong to
    no community), edge weight = the summed weights of every relation between the two."""
    graph = nx.Graph()
    for relation in relations:
        u, v = relation.source, relation.target
        if u == v or u not in entity_ids or v not in entity_ids:
            continue
        weight = max(float(relation.weight), 0.0) or 1.0
        if graph.has_edge(u, v):
            graph[u][v]["weight"] += weight
        else:
            graph.add_edge(u, v, weight=weight)
    return graph


__all__ = ["Edge", "Edges", "EntityGraph", "EntityOutline", "RelationOutline", "StoredRecords", "weighted_graph"]
