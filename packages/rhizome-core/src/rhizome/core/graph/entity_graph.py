"""An entity graph as a method's searches see it.

:class:`EntityGraph` is an in-memory view of the merged entities, relations and communities of
an index, with the lookups graph searches need (degrees, relations per entity, communities per
entity, entities per chunk); :meth:`EntityGraph.weighted` is the undirected weighted graph that
Leiden clusters (:func:`~rhizome.core.index.hierarchy.cluster_hierarchy`). GraphRAG and ArchRAG
build it from their entity-graph layer and communities (:mod:`rhizome.core.index.entity_index`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
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


@dataclass
class EntityGraph:
    """Entities, relations and communities of an index, with derived lookups."""

    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    communities: dict[str, Community] = field(default_factory=dict)
    degree: dict[str, int] = field(default_factory=dict)
    relations_of: dict[str, list[str]] = field(default_factory=dict)
    communities_of: dict[str, list[str]] = field(default_factory=dict)
    entities_of_chunk: dict[str, list[str]] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What searches derive from this graph (kept with it, so it goes when the graph changes)."""

    @classmethod
    def build(
        cls,
        entities: Mapping[str, Entity],
        relations: Mapping[str, Relation],
        communities: Mapping[str, Community] | None = None,
    ) -> EntityGraph:
        data = cls(dict(entities), dict(relations), dict(communities or {}))
        neighbours: dict[str, set[str]] = defaultdict(set)
        relations_of: dict[str, list[str]] = defaultdict(list)
        for rid, r in data.relations.items():
            relations_of[r.source].append(rid)
            if r.target != r.source:
                relations_of[r.target].append(rid)
                neighbours[r.source].add(r.target)
                neighbours[r.target].add(r.source)
        data.relations_of = dict(relations_of)
        data.degree = {eid: len(neighbours.get(eid, ())) for eid in data.entities}
        communities_of: dict[str, list[str]] = defaultdict(list)
        for community in sorted(data.communities.values(), key=lambda c: c.level):
            for eid in community.entity_ids:
                communities_of[eid].append(community.id)
        data.communities_of = dict(communities_of)
        chunks: dict[str, list[str]] = defaultdict(list)
        for eid, entity in data.entities.items():
            for cid in entity.source_chunk_ids:
                chunks[cid].append(eid)
        data.entities_of_chunk = dict(chunks)
        return data

    def citing(self, chunk_ids: Iterable[str]) -> tuple[set[str], set[str]]:
        """Ids of the entities and of the relations that cite one of ``chunk_ids`` (what a
        removal of those chunks touches)."""
        chunks = set(chunk_ids)
        entities = {eid for cid in chunks for eid in self.entities_of_chunk.get(cid, ())}
        relations = {rid for rid, r in self.relations.items() if not chunks.isdisjoint(r.source_chunk_ids)}
        return entities, relations

    def weighted(self) -> nx.Graph:
        """The undirected weighted graph Leiden runs on (:func:`weighted_graph`)."""
        return weighted_graph(self.relations.values(), self.entities)

    def name(self, entity_id: str) -> str:
        """An entity's name (its id when the graph does not hold it)."""
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

    def members(self, community: Community) -> list[Entity]:
        """A community's entities, most connected first (ties by id)."""
        found = (self.entities[e] for e in community.entity_ids if e in self.entities)
        return sorted(found, key=lambda e: (-self.degree.get(e.id, 0), e.id))

    def community_chunks(self, community: Community) -> list[str]:
        """Chunk ids supporting a community's entities, most-cited first (counted once per
        community and graph: a top community cites most of the corpus)."""
        held = self.cache.setdefault("community-chunks", {})
        key = (community.id, tuple(community.entity_ids))
        if key not in held:
            counts: dict[str, int] = defaultdict(int)
            for eid in community.entity_ids:
                entity = self.entities.get(eid)
                if entity is not None:
                    for cid in entity.source_chunk_ids:
                        counts[cid] += 1
            held[key] = sorted(counts, key=lambda c: (-counts[c], c))
        return list(held[key])


def weighted_graph(relations: Iterable[Relation], entity_ids: Container[str]) -> nx.Graph:
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


__all__ = ["EntityGraph", "EntityOutline", "RelationOutline", "weighted_graph"]
