"""An entity graph as a method's searches see it.

:class:`EntityGraph` is an in-memory view of the merged entities, relations and communities of
an index, with the lookups graph searches need (degrees, relations per entity, communities per
entity, entities per chunk); :meth:`EntityGraph.weighted` is the undirected weighted graph that
Leiden clusters (:func:`~rhizome.core.hierarchy.cluster_hierarchy`). GraphRAG builds on it;
ArchRAG and HippoRAG, which also cluster or walk an entity graph, can too.

:class:`StoredEntityGraph` is the index mixin that builds both this graph and the entity–passage
:class:`~rhizome.core.evidence.EvidenceGraph` from an index's entity-graph layer and community
hierarchy, and caches them until those change (GraphRAG and ArchRAG).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import networkx as nx

from rhizome.core.evidence import EvidenceGraph, FactGraph
from rhizome.core.graph.mentions import ChunkExtraction, chunk_record
from rhizome.core.graph.profiles import FoldPolicy
from rhizome.core.graph.store import EntityGraphStore, GraphChange
from rhizome.core.index import BaseIndex, Batch, ChunkVectors, Stats, add_counts, batch_chunks
from rhizome.core.resolution import EntityResolver
from rhizome.core.storage import Connection
from rhizome.core.summarize import DescriptionSummarizer
from rhizome.core.types import Chunk, Community, Entity, Relation

if TYPE_CHECKING:
    from rhizome.core.hierarchy import Hierarchy


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


class StoredEntityGraph:
    """Mixin for a :class:`~rhizome.core.index.BaseIndex` whose profiles live in an
    :class:`~rhizome.core.graph.store.EntityGraphStore` (``entity_graph``) and whose communities
    are a :class:`~rhizome.core.hierarchy.Hierarchy` (``communities``): the graph of them, the
    evidence graph and the fact graph its searches walk, each cached until one of the tables it
    is built from is written.

    Each reads its tables inside its build, after the generations that key it (see
    ``BaseIndex.derived``): a graph read before its key may be older than the key, and a write
    committed in between would leave it cached as current."""

    entity_graph: EntityGraphStore
    communities: Hierarchy
    ENTITY_COLLECTION: ClassVar[str]
    NAME_COLLECTION: ClassVar[str]
    store: Any
    derived: Callable[..., Any]
    """:meth:`~rhizome.core.index.BaseIndex.derived` of the index this is mixed into."""

    def graph_generations(self) -> tuple[int, ...]:
        """The generations of the tables :meth:`graph` is built from."""
        return (*self.entity_graph.generations(), self.communities.groups.generation())

    def graph(self) -> EntityGraph:
        """The current entities, relations and communities (cached until the next change)."""
        def build() -> EntityGraph:
            entities = {e.id: e for e in self.entity_graph.all_entities()}
            return EntityGraph.build(entities, {r.id: r for r in self.entity_graph.all_relations()}, self.communities.all())

        return self.derived("graph", self.graph_generations(), build)

    def name_collection(self) -> str:
        """The collection the names a query mentions are linked to: the entity names
        (``NAME_COLLECTION``), or the entity vectors of an index built before it had them."""
        return self.NAME_COLLECTION if self.store.has_collection(self.NAME_COLLECTION) else self.ENTITY_COLLECTION

    def fact_graph(self) -> FactGraph:
        """The relations and the chunks each was extracted from, for chains of facts (cached
        until the next change)."""
        return self.derived("fact-graph", self.entity_graph.generations(), self.entity_graph.fact_graph)

    def evidence(self) -> EvidenceGraph:
        """The entity–passage graph of the current entities and relations (cached until the
        next change)."""
        return self.derived("evidence", self.entity_graph.generations(), self.entity_graph.evidence_graph)


def open_entity_graph(
    index: Any,
    prefix: str,
    *,
    policy: FoldPolicy | None = None,
    resolver: EntityResolver | None = None,
    resolution: bool = False,
    min_fragments: int | None = None,
) -> EntityGraphStore:
    """The entity-graph layer of ``index`` under ``prefix``, embedding with the index's embedder
    and summarising with its chat model by its configuration's summary settings
    (:class:`~rhizome.core.config.ExtractionConfig`'s ``summary_max_tokens``,
    ``summary_max_input_tokens``, ``language``)."""
    c = index.config
    summarizer = DescriptionSummarizer(
        index.llm, max_tokens=c.summary_max_tokens, min_fragments=min_fragments,
        max_input_tokens=c.summary_max_input_tokens, language=c.language,
    )
    return EntityGraphStore(
        index.store, prefix, embed=index.embed, summarizer=summarizer, resolver=resolver or EntityResolver(),
        resolution=resolution, policy=policy,
    )


class EntityGraphIndex(BaseIndex[tuple[GraphChange, ChunkVectors], GraphChange]):
    """A :class:`~rhizome.core.index.BaseIndex` whose records are an entity-graph layer
    (``entity_graph``, set by the method's ``_setup``, e.g. with :func:`open_entity_graph`): an
    insert batch folds its chunks' records onto the profiles inside its transaction, a delete
    folds again what its chunks supported, and the summaries an insert call left waiting are
    written when the call ends. A method changes how its extractions become the layer's
    records by overriding :meth:`_records`, and reacts to a change in :meth:`_after_change`."""

    entity_graph: EntityGraphStore

    async def _records(self, chunks: list[Chunk]) -> list[ChunkExtraction]:
        """The layer's per-chunk records of ``chunks``: their extractions as they are."""
        return [chunk_record(x) for x in await self.extract(chunks)]

    async def _prepare(self, batch: Batch, stats: Stats) -> tuple[GraphChange, ChunkVectors]:
        chunks = batch_chunks(batch)
        change = await self.entity_graph.plan(await self._records(chunks), self.replaced_chunk_ids(batch), defer=True)
        add_counts(stats, change.counts())
        return change, await self.embed_chunks(chunks)

    def _write(self, db: Connection, batch: Batch, prepared: tuple[GraphChange, ChunkVectors]) -> None:
        change, (chunk_ids, vectors) = prepared
        self.entity_graph.write(db, change)
        self.put_chunk_vectors(db, chunk_ids, vectors)

    async def _prepare_delete(self, document_ids: list[str], stats: Stats) -> GraphChange:
        change = await self.entity_graph.plan([], self.store.chunk_ids(document_ids))
        add_counts(stats, change.counts())
        return change

    def _write_delete(self, db: Connection, document_ids: list[str], prepared: GraphChange) -> None:
        self.entity_graph.write(db, prepared)

    def _remove_document(self, db: Connection, document_id: str) -> int:
        self.entity_graph.forget_chunks(db, self.store.chunk_ids([document_id]))
        return super()._remove_document(db, document_id)

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        """Summarise, once, every profile an insert call left waiting, and embed it; a cut-short
        call leaves them waiting for the next insert, delete or refresh."""
        if self.entity_graph.pending.keys():
            stats["summaries_written"] = stats.get("summaries_written", 0) + await self.entity_graph.settle()


__all__ = ["EntityGraph", "EntityGraphIndex", "StoredEntityGraph", "open_entity_graph", "weighted_graph"]
