"""The entity graph as the searches see it, and its hierarchical Leiden communities.

:class:`GraphData` is an in-memory view of the merged entities, relations and communities of an
index, with the lookups every search needs (degrees, relations per entity, communities per
entity, entities per chunk). :func:`cluster` turns the graph into GraphRAG's community hierarchy
with ids derived from the membership, so a community that keeps its members keeps its id (and
its report) when the graph is re-clustered after an insert or a delete.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx

from rhizome.core.graph import hierarchical_leiden
from rhizome.core.types import Community, Entity, Relation


def community_key(level: int, members: list[str] | tuple[str, ...]) -> str:
    """Stable id of a community: its level and a hash of its sorted member ids."""
    digest = hashlib.sha256(json.dumps([level, sorted(members)], ensure_ascii=False).encode("utf-8"))
    return f"comm-{level}-{digest.hexdigest()[:16]}"


def build_graph(entities: Mapping[str, Entity], relations: Mapping[str, Relation]) -> nx.Graph:
    """The undirected weighted graph Leiden runs on: one node per entity that has at least one
    relation to another entity (GraphRAG clusters its edge list, so isolated entities belong to
    no community), edge weight = the summed weights of every relation between the two."""
    graph = nx.Graph()
    for relation in relations.values():
        u, v = relation.source, relation.target
        if u == v or u not in entities or v not in entities:
            continue
        weight = max(float(relation.weight), 0.0) or 1.0
        if graph.has_edge(u, v):
            graph[u][v]["weight"] += weight
        else:
            graph.add_edge(u, v, weight=weight)
    return graph


def cluster(
    entities: Mapping[str, Entity],
    relations: Mapping[str, Relation],
    *,
    max_cluster_size: int,
    seed: int,
    max_levels: int = 10,
) -> list[Community]:
    """Hierarchical Leiden communities (level 0 = coarsest), without reports. Each community's
    ``metadata`` holds its hierarchy label (``"L0-C3"``) and size."""
    graph = build_graph(entities, relations)
    if graph.number_of_nodes() == 0:
        return []
    hierarchy = hierarchical_leiden(graph, max_cluster_size=max_cluster_size, seed=seed, max_levels=max_levels)
    ids = {c.id: community_key(c.level, [str(n) for n in c.nodes]) for c in hierarchy}
    out = []
    for c in hierarchy:
        out.append(
            Community(
                id=ids[c.id],
                level=c.level,
                entity_ids=[str(n) for n in c.nodes],
                parent=ids[c.parent] if c.parent else None,
                children=[ids[x] for x in c.children],
                metadata={"label": c.id, "size": c.size},
            )
        )
    return out


@dataclass
class GraphData:
    """Entities, relations and communities of an index, with derived lookups."""

    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    communities: dict[str, Community] = field(default_factory=dict)
    degree: dict[str, int] = field(default_factory=dict)
    relations_of: dict[str, list[str]] = field(default_factory=dict)
    communities_of: dict[str, list[str]] = field(default_factory=dict)
    entities_of_chunk: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        entities: Mapping[str, Entity],
        relations: Mapping[str, Relation],
        communities: Mapping[str, Community] | None = None,
    ) -> GraphData:
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

    def community_chunks(self, community: Community) -> list[str]:
        """Chunk ids supporting a community's entities, most-cited first."""
        counts: dict[str, int] = defaultdict(int)
        for eid in community.entity_ids:
            entity = self.entities.get(eid)
            if entity is not None:
                for cid in entity.source_chunk_ids:
                    counts[cid] += 1
        return sorted(counts, key=lambda c: (-counts[c], c))


__all__ = ["GraphData", "build_graph", "cluster", "community_key"]
