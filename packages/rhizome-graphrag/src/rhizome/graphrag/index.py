"""``GraphRAGIndex``: GraphRAG (Edge et al., 2024) on the Rhizome kernel.

Indexing: chunks (1,200 tokens, 100 overlap) → entities and relations per chunk (the
extraction spec: a chat model with gleaning, the offline extractor, or imported OpenIE triples)
→ folded into entity and relation profiles, their descriptions summarised → hierarchical
Leiden communities (max cluster size 10, seeded) → community reports written bottom-up (or
lazily, only when a query needs them) → embeddings of chunks, entities, relations and reports.

Records: the kernel's entity-graph layer (:class:`~rhizome.core.graph.store.EntityGraphStore`,
tables and collections prefixed ``graphrag_``) keeps each chunk's extraction and the profiles
(a relation per subject, predicate and object: :data:`GRAPHRAG`) with their vectors. GraphRAG
adds the edge table ``graphrag_edges`` (per source entity, the relations Leiden reads), the
community hierarchy ``graphrag_communities`` (with a report vector collection per level) and
``graphrag_changed``: the profiles changed since the communities were last brought up to date,
with what they showed before.

Updates: an insert extracts only the new chunks and the layer folds them onto the profiles they
touch; once the call's summaries are written, the communities are updated incrementally around
the changed profiles (:meth:`GraphRAGIndex._update`). A delete (or the replacement of a
document) re-folds, in its own transaction, the profiles the removed chunks supported from the
chunks left (those left with none go, with their vectors) and drops the communities holding an
entity it touched, reports and vectors with them; so whatever a search reads once it commits
cites no deleted document. The whole graph is then clustered again (:meth:`GraphRAGIndex._rebuild`;
when cut short, by the next insert, delete or refresh). The expensive steps are resumable
stages keyed by their input: description summaries, reports (by the context they are written
from) and embeddings (by the embedded text), so only what changed is paid for and an
interrupted build loses only the calls in flight.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from rhizome.core.extraction import Extraction
from rhizome.core.graph import WeightedEdges, leiden_library_versions, modularity
from rhizome.core.graph.entity_graph import Edge, EntityGraph, EntityOutline, RelationOutline
from rhizome.core.graph.lists import entity_profile, relation_profile
from rhizome.core.graph.mentions import chunk_record
from rhizome.core.graph.profiles import FoldPolicy, triple_key
from rhizome.core.graph.store import GraphChange
from rhizome.core.index.base import ModeInfo, Stats, add_counts
from rhizome.core.index.entity_index import EntityGraphIndex, StoredEntityGraph, open_entity_graph
from rhizome.core.index.hierarchy import (
    GroupSummarizer,
    Hierarchy,
    cluster_hierarchy,
    has_summary,
    prune_groups,
    recluster_hierarchy,
)
from rhizome.core.index.stages import prune_stage
from rhizome.core.naive import NAIVE
from rhizome.core.store.storage import Connection
from rhizome.core.types import Community, Entity, Hit, Relation
from rhizome.graphrag.config import GraphRAGConfig
from rhizome.graphrag.prompts import (
    LOCAL_INSTRUCTIONS,
    LOCAL_SYSTEM,
    REDUCE_INSTRUCTIONS,
    REDUCE_SYSTEM,
)
from rhizome.graphrag.reports import ReportWriter, build_input, community_card, full_content

REPORT_STAGE = "graphrag.report"
FULL_REBUILD = "graphrag.full_rebuild"
"""Meta flag: a delete or replacement happened, so the next rebuild is a full one."""
MODULARITY = "graphrag.modularity"
"""Meta: the level-0 modularity of the last full clustering (the stability check's reference)."""
MODULARITY_TOLERANCE = 0.02
"""An insert's local re-clustering is kept while its level-0 modularity stays within this of
the last full clustering's; below, the insert clusters the whole graph again."""
MOVABLE_SHARE = 0.5
"""... and while at most this share of the clustered entities may move."""
LEGACY_EDGES = "graphrag.edges"
"""Meta of indexes from before the edge table: the whole edge list as one JSON value (dropped
when the edge table is first filled)."""
UNFOLDED = "graphrag.unfolded"
"""Meta: chunks an insert of an index written before the layer stored but had not merged."""


def _entity_text(entity: Entity) -> str:
    """What an entity's vector is made from."""
    return f"{entity.name}: {entity.description}".strip()


def _relation_text(relation: Relation, source: str, target: str) -> str:
    """What a relation's vector is made from: its two entities' names, its predicate and description."""
    statement = " ".join(x for x in (source, relation.predicate, target) if x)
    return f"{statement}: {relation.description}".strip() if relation.description else statement


GRAPHRAG = FoldPolicy(relation_key=triple_key, entity_text=_entity_text, relation_text=_relation_text)
"""GraphRAG's graph: a relation per subject, predicate and object (the undirected pair when the
extractor gave no predicate), weighted by the summed strengths, every distinct description
kept and summarised past the budget."""


class _Edges(BaseModel):
    """The relations from one entity to other entities as the clustering reads them: a row of
    the edge table ``graphrag_edges``, written with the communities by every rebuild and
    update, so an update reads the graph's structure (70k relations: 7k rows) without
    decoding every relation record."""

    id: str
    """The source entity."""
    edges: list[tuple[str, str, float]]
    """``(relation id, target entity, weight)``, by relation id."""


class _Changed(BaseModel):
    """A profile (``e:<id>`` or ``r:<id>``) changed since the communities were last brought up
    to date, as it was stored before (``None``: it is new): a row of ``graphrag_changed``."""

    id: str
    entity: Entity | None = None
    relation: Relation | None = None


class _Unmerged(BaseModel):
    """A chunk an index written before the layer had stored but not yet merged."""

    chunk_id: str


@dataclass
class _Planned:
    """What GraphRAG plans beside the layer's change (its :attr:`GraphChange.extra`): the rows of
    ``graphrag_changed`` it adds and, when it removes chunks, what the removal does to the
    communities and the edge table until the whole graph is clustered again."""

    changed: list[_Changed] = field(default_factory=list)
    dropped: list[Community] = field(default_factory=list)
    """Communities holding an entity the removal touched (their reports were written from what it was)."""
    kept: list[Community] = field(default_factory=list)
    """Communities left whose parent was dropped (now roots)."""
    edges: list[_Edges] = field(default_factory=list)
    """Rows of the edge table the removal changes (those left empty go)."""


class GraphRAGIndex(StoredEntityGraph, EntityGraphIndex):
    """A GraphRAG index: entity graph, hierarchical communities with reports, and local, global,
    DRIFT and naive (chunk vector) search.

    Settings: :class:`~rhizome.graphrag.config.GraphRAGConfig` (as keyword arguments or
    ``config=``); the other parameters are :class:`~rhizome.core.index.base.BaseIndex`'s. ``llm``
    extracts, summarises, writes reports and runs the model steps of search; without one every
    step runs offline.
    """

    method: ClassVar[str] = "graphrag"
    modes: ClassVar[Mapping[str, ModeInfo]] = {
        "local": ModeInfo("passages around the entities the question names, with their relations and communities; for facts about named things", ("specific", "multi-hop"), retriever="rhizome.graphrag.search:LocalSearch"),
        "global": ModeInfo("key points mapped from community reports across the whole corpus; for themes, trends and summaries", ("global",), retriever="rhizome.graphrag.search:GlobalSearch"),
        "drift": ModeInfo("local search started from the most relevant community reports, with follow-up questions; for questions that connect several facts", ("multi-hop", "specific"), retriever="rhizome.graphrag.search:DriftSearch"),
        "naive": NAIVE,
    }
    config_class = GraphRAGConfig
    config: GraphRAGConfig
    ENTITY_COLLECTION: ClassVar[str] = "graphrag_entities"
    RELATION_COLLECTION: ClassVar[str] = "graphrag_relations"
    """Relation vectors (``source predicate target: description``): the facts local search
    matches the question against."""
    NAME_COLLECTION: ClassVar[str] = "graphrag_names"
    """Entity names alone, what the names a query mentions are linked to."""

    def _setup(self) -> None:
        c = self.config
        self.entity_graph = open_entity_graph(self, "graphrag", policy=GRAPHRAG)
        self.edge_table = self.store.table("graphrag_edges", _Edges)
        self.communities = Hierarchy(self.store, "graphrag_communities")
        self.changed = self.store.table("graphrag_changed", _Changed)
        self.report_writer = ReportWriter(self.llm, max_tokens=c.report_max_tokens, language=c.language)
        if not self.store.readonly and not self.store.get_meta(self.entity_graph.adopted_flag, False):
            self._adopt()

    def _adopt(self) -> None:
        """Convert an index written before the layer (once, on a writable open): its kernel
        extractions become the layer's per-chunk records. Chunks an insert cut short had stored
        but not merged yet are folded by the next change, which clusters the whole graph."""
        old = [chunk_record(x) for x in self.entity_graph.extractions.view(Extraction).all()]
        unmerged = self.store.table("graphrag_unmerged", _Unmerged, key="chunk_id") if old else None
        waiting = set(unmerged.keys()) if unmerged is not None else set()
        with self.store.transaction() as db:
            self.entity_graph.adopt(db, [x for x in old if x.chunk_id not in waiting])
            self.entity_graph.extractions.delete(db, waiting)
            if unmerged is not None:
                unmerged.delete(db, waiting)
            self.store.set_meta(db, self.entity_graph.adopted_flag, True)
            if waiting:
                self.store.set_meta(db, FULL_REBUILD, True)
                self.store.set_meta(db, UNFOLDED, sorted(waiting))

    # -- EntityGraphIndex hooks ---------------------------------------------------------------
    async def _plan(self, records: list[Any], removed: Sequence[str], stats: Stats, *, defer: bool = False) -> GraphChange:
        """The layer's change with, as its ``extra``, the profiles it changes as they were before
        (unless an earlier change since the last update holds them already, or the next change
        clusters the whole graph: a first build, or after a removal) and, when it removes
        chunks, the communities holding an entity it touched, to be dropped
        (:func:`prune_groups`), and the edge-table rows it changes."""
        change = await super()._plan(records, removed, stats, defer=defer)
        planned = change.extra = _Planned()
        if self.communities.groups.count() and not self.store.get_meta(FULL_REBUILD, False):  # else the whole graph is clustered next
            rows = {entity_profile(e): _Changed(id=entity_profile(e), entity=change.stored_entities.get(e)) for e in change.entities}
            rows.update({relation_profile(r): _Changed(id=relation_profile(r), relation=change.stored_relations.get(r)) for r in change.relations})
            held = self.changed.get(rows)
            planned.changed = [row for key, row in rows.items() if key not in held]
        if change.removed_chunks:
            planned.dropped, planned.kept = prune_groups(self.communities.all(), change.touched_entities)
            gone = [(rid, change.stored_relations[rid].source) for rid in change.removed_relations]
            sources = {r.source for r in change.relations.values()} | {source for _, source in gone}
            planned.edges = _update_edges(self.edge_table.get(sources), change.relations.values(), gone)
            add_counts(stats, {"communities_dropped": len(planned.dropped)})
        return change

    def _apply(self, db: Connection, change: GraphChange) -> None:
        super()._apply(db, change)
        planned: _Planned = change.extra
        self.changed.put(db, planned.changed)
        if change.removed_chunks:
            self.communities.delete(db, planned.dropped)
            self.communities.put(db, planned.kept)
            self.edge_table.delete(db, [row.id for row in planned.edges if not row.edges])
            self.edge_table.put(db, [row for row in planned.edges if row.edges])
            self.store.set_meta(db, FULL_REBUILD, True)

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        """The summaries an insert call left waiting; then, after a delete or a replacement (or
        one cut short), the full :meth:`_rebuild`; after inserts, the incremental
        :meth:`_update` (the full rebuild when the graph is empty)."""
        await super()._after_change(inserted, removed, stats)
        if unfolded := self.store.get_meta(UNFOLDED, None):
            await self._fold_unmerged(unfolded, stats)
        if removed or self.store.get_meta(FULL_REBUILD, False) or not self.communities.groups.count():
            await self._rebuild(stats)
        else:
            await self._update(stats)

    async def _fold_unmerged(self, chunk_ids: list[str], stats: Stats) -> None:
        """Fold the chunks an insert of an index written before the layer stored but had not
        merged when it was cut short (their extractions are read again, from the cache)."""
        records = await self._records(list(self.store.chunks(chunk_ids).values()))
        prepared = await self._plan(records, [], stats)
        with self.store.transaction() as db:
            self._apply(db, prepared)
            self.store.set_meta(db, UNFOLDED, None)

    async def arebuild(self) -> Stats:
        """Cluster the whole graph from scratch and check every report (those whose input is
        unchanged are reused). Inserts keep the communities up to date incrementally; this
        gives the communities a build from scratch would."""
        stats: Stats = {}
        async with self._writing():
            await self._rebuild(stats)
            with self.store.transaction() as db:
                self.store.set_meta(db, "pending_change", False)
            self.store.save_snapshots()
        return stats

    def rebuild(self) -> Stats:
        from rhizome.core.aio import run_sync

        return run_sync(self.arebuild())

    # -- the graph -----------------------------------------------------------------------------
    def _reports(self, graph: EntityGraph) -> GroupSummarizer:
        """The report stage over ``graph`` (its relations read whole as :func:`build_input` says)."""
        budget = self.report_writer.input_budget(self.config.report_max_input_tokens)
        return GroupSummarizer(
            self.store,
            REPORT_STAGE,
            build_input=lambda c, done: build_input(c, graph, done, budget),
            write=lambda data: self.report_writer.awrite(data, graph),
            identity=self.report_writer.identity,
            label="writing community reports",
        )

    async def _rebuild(self, stats: Stats) -> None:
        """Cluster the whole graph again and check every report (those whose input is
        unchanged are reused from the report stage)."""
        entities: dict[str, Any] = {e.id: e for e in self.entity_table.view(EntityOutline).all()}
        relations = self.entity_graph.edges()  # endpoints and weights: a report reads the text of those it shows
        old_edges = {e.id: e for e in self.edge_table.all()}
        old_communities = self.communities.all()
        c = self.config
        edges = _edge_rows(relations.values(), entities)
        weighted = _weighted(edges.values())
        structure = cluster_hierarchy(weighted, max_cluster_size=c.max_cluster_size, seed=c.leiden_seed, max_levels=c.max_levels)
        graph = EntityGraph.of(entities, relations, {c.id: c for c in structure}, read_relations=self.relation_table.view(RelationOutline).get)
        reports, counts = await self._reports(graph).asummarize(structure, only=set() if self.config.reports == "lazy" else None)
        graph.communities = reports
        community_vectors = await self._community_vectors(list(reports.values()), reports, graph)
        with self.store.transaction() as db:
            self.edge_table.replace(db, old_edges, edges)
            self.communities.replace(db, old_communities, reports, community_vectors)
            prune_stage(db, REPORT_STAGE, (c.metadata["input_digest"] for c in reports.values()))
            self.store.set_meta(db, "graphrag.leiden", leiden_library_versions())
            self.changed.delete(db, self.changed.keys())
            self.store.set_meta(db, FULL_REBUILD, False)
            self.store.set_meta(db, MODULARITY, _modularity(weighted, structure))
            if self.store.get_meta(LEGACY_EDGES, None) is not None:
                self.store.set_meta(db, LEGACY_EDGES, None)
        stats.update(
            entities=len(entities),
            relations=len(relations),
            communities=len(reports),
            levels=graph.levels(),
            reports_written=counts["written"],
            reports_reused=counts["reused"],
            community_embeddings=sum(len(b.ids) for b in community_vectors),
        )

    async def _community_vectors(self, communities: list[Community], reports: Mapping[str, Community], graph: EntityGraph) -> list[Any]:
        """Vectors of the ``communities`` whose text (their report, or their card) changed, by level."""
        return [
            await self.embed_changed(
                self.communities.collection(level),
                {g.id: _community_text(reports[g.id], graph) for g in communities if g.level == level},
                what=f"community reports (level {level})",
            )
            for level in sorted({g.level for g in communities})
        ]

    async def _update(self, stats: Stats) -> None:
        """Bring the graph up to date with the extractions inserted since the last rebuild or
        update, touching only what they change:

        - the profiles changed since (``graphrag_changed``: the layer folded the new chunks
          onto them and wrote their summaries and vectors) are compared with what they were;
        - the graph's structure comes from the edge table (one row per source entity), updated
          by row; the hierarchy is updated locally (:func:`recluster_hierarchy`): bounded Leiden
          iterations from the previous partition in which only the touched entities (whose
          relations or descriptions changed) may move, on the graph with the other entities
          collapsed into one fixed node per community. Stability check:
          the update is kept while its level-0 modularity is at least the last full
          clustering's less :data:`MODULARITY_TOLERANCE` and at most :data:`MOVABLE_SHARE` of
          the clustered entities could move; otherwise the whole graph is clustered again;
        - communities with the same members and no touched member keep their id and report,
          and so do those whose report input cannot have changed (:func:`_same_inputs`);
          report inputs are built (and reports written or found by their input digest) only
          for the others, from their members and the relations inside one of them, reading
          the kept children's reports;
        - only changed communities are embedded again.
        """
        clock = _Steps()
        pending = self.changed.all()
        held_e = {row.entity.id: row.entity for row in pending if row.entity is not None}
        held_r = {row.relation.id: row.relation for row in pending if row.relation is not None}
        entity_ids = [row.id[2:] for row in pending if row.id == entity_profile(row.id[2:])]
        relation_ids = [row.id[2:] for row in pending if row.id == relation_profile(row.id[2:])]
        entities = {k: e for k, e in self.entity_table.get(entity_ids).items() if e != held_e.get(k)}
        relations = {k: r for k, r in self.relation_table.get(relation_ids).items() if r != held_r.get(k)}
        clock.mark("read")

        # the structure: the whole weighted graph, clustered again only around what changed
        reshown = {k for k, e in entities.items() if k not in held_e or _shown(e) != _shown(held_e[k])}
        touched = reshown | _reweighed_ends(relations, held_r)
        edges = {row.id: row for row in self.edge_table.all()}
        legacy = not edges and self.relation_table.count() > 0  # an index from before the edge table
        if legacy:
            edges = _edge_rows(self.relation_table.all(), set(self.entity_table.keys()))
        neighbours = _new_neighbours(edges, [r for rid, r in relations.items() if rid not in held_r])
        new_edges = _update_edges(edges, relations.values(), ())
        weighted = _weighted(edges.values())
        old = self.communities.all()
        clock.mark("load")
        structure, kept_ids, modularity = self._recluster(weighted, old, touched, stats)
        clock.mark("cluster")
        structure_by_id = {g.id: g for g in structure}
        kept = {gid: structure_by_id[gid] for gid in kept_ids}  # with their reports
        # of the others, those whose report input cannot have changed keep their report too
        degree = weighted.degree()
        rows_changed = reshown | neighbours
        relations_shown = [r for rid, r in relations.items() if rid not in held_r or _row(r) != _row(held_r[rid])]
        reweighed = {rid: held_r[rid].weight for rid, r in relations.items() if rid in held_r and _row(r) == _row(held_r[rid])}
        same = _same_inputs(structure_by_id, kept, old, rows_changed, relations_shown, reweighed, edges, degree)
        kept.update(same)
        rewrite = [g for gid, g in structure_by_id.items() if gid not in kept]
        reports, graph, counts, read = await self._rewrite_reports(rewrite, kept, structure_by_id, entities, relations, edges, degree)
        clock.mark("reports")

        community_vectors = await self._community_vectors(rewrite, reports, graph)
        with self.store.transaction() as db:
            self.communities.replace(db, old, reports, community_vectors)
            self.changed.delete(db, [row.id for row in pending])
            self.store.set_meta(db, "graphrag.leiden", leiden_library_versions())
            if legacy:
                self.edge_table.put(db, edges.values())
                self.store.set_meta(db, LEGACY_EDGES, None)
            else:
                self.edge_table.put(db, new_edges)
            if modularity is not None:
                self.store.set_meta(db, MODULARITY, modularity)
        clock.mark("embed_write")
        stats.update(
            entities=self.entity_table.count(),
            relations=self.relation_table.count(),
            communities=len(reports),
            levels=1 + max((g.level for g in reports.values()), default=-1),
            communities_kept=len(kept),
            reports_kept_same_input=len(same),
            report_inputs_built=len(rewrite),
            report_relations_read=read,
            reports_written=counts["written"],
            reports_reused=counts["reused"],
            community_embeddings=sum(len(b.ids) for b in community_vectors),
            update_cpu_seconds=clock.seconds,
        )

    def _recluster(self, weighted: WeightedEdges, old: Mapping[str, Community], touched: set[str], stats: Stats) -> tuple[list[Community], Sequence[str], float | None]:
        """The hierarchy updated locally around ``touched`` (:func:`recluster_hierarchy`), or
        clustered again whole when the stability check fails; the ids of the communities kept
        with their reports, and the new reference modularity (after a full clustering)."""
        c = self.config
        structure, info = recluster_hierarchy(
            weighted, old, touched, max_cluster_size=c.max_cluster_size, seed=c.leiden_seed, max_levels=c.max_levels
        )
        reference = self.store.get_meta(MODULARITY, None)
        modularity = None
        kept_ids = info.get("kept_ids", ())
        if reference is None or info["modularity"] < reference - MODULARITY_TOLERANCE or info["movable"] > MOVABLE_SHARE * weighted.number_of_nodes():
            structure = cluster_hierarchy(weighted, max_cluster_size=c.max_cluster_size, seed=c.leiden_seed, max_levels=c.max_levels)
            modularity = _modularity(weighted, structure)
            stats["recluster"] = "full"
            kept_ids = ()  # communities kept only by id; reports reused by digest
        else:
            stats["recluster"] = "local"
        stats["reclustered_entities"] = info["movable"]
        return structure, kept_ids, modularity

    async def _rewrite_reports(
        self,
        rewrite: list[Community],
        kept: Mapping[str, Community],
        structure_by_id: Mapping[str, Community],
        entities: Mapping[str, Entity],
        relations: Mapping[str, Relation],
        edges: Mapping[str, _Edges],
        degree: Mapping[Any, int],
    ) -> tuple[dict[str, Community], EntityGraph, dict[str, int], int]:
        """The reports of the communities to ``rewrite``, from an entity graph of their members and
        the relations inside one of them (a report reads no other relation), degrees from the
        edges: every community's report, that graph, the report counts and how many stored
        relations were read whole."""
        where = _where(rewrite)
        members = set(where)

        def inside(s: str, t: str) -> bool:
            return t in where and s in where and not where[s].isdisjoint(where[t])

        # (read through views: decoding whole records cost more than the reports); the stored
        # relations are outlines from the edge table, read whole only where a context reaches
        loaded: dict[str, Any] = self.entity_table.view(EntityOutline).get(members - set(entities))
        loaded.update({k: e for k, e in entities.items() if k in members})
        around: dict[str, Any] = {
            rid: Edge(rid, source, target, weight)
            for source in members
            if source in edges
            for rid, target, weight in edges[source].edges
            if rid not in relations and inside(source, target)
        }
        around.update({k: r for k, r in relations.items() if inside(r.source, r.target)})
        graph = EntityGraph.build(loaded, around, structure_by_id)
        graph.degree = {e: degree.get(e, 0) for e in loaded}
        stored_relations = self.relation_table.view(RelationOutline)
        held: dict[str, Any] = dict(relations)  # whole relations at hand: the changed ones, then those read

        def whole(ids: Sequence[str]) -> dict[str, Any]:
            held.update(stored_relations.get([rid for rid in ids if rid not in held]))
            return {rid: held[rid] for rid in ids if rid in held}

        graph.read_relations = whole
        written, counts = await self._reports(graph).asummarize(
            rewrite, only=set() if self.config.reports == "lazy" else None, context=kept
        )
        return {**kept, **{g.id: written[g.id] for g in rewrite}}, graph, counts, len(held) - len(relations)

    async def areports(self, community_ids: Sequence[str]) -> dict[str, Community]:
        """The communities ``community_ids`` with their reports, writing the missing ones now
        (lazy mode; in eager mode every report already exists). Reports written here are stored
        when the index is writable, and kept in the store's memory when it is read-only. They
        are not stored when the graph changed while they were written (an insert or delete
        committed meanwhile): they describe communities it may have removed."""
        read = self.graph_generations()
        graph = self.graph()
        wanted = [graph.communities[c] for c in dict.fromkeys(community_ids) if c in graph.communities]
        missing = {c.id for c in wanted if not has_summary(c)}
        if not missing:
            return {c.id: c for c in wanted}
        subtree: dict[str, Community] = {}
        todo = [graph.communities[c] for c in missing]
        while todo:  # the missing ones and their descendants, whose reports a parent may use
            c = todo.pop()
            subtree[c.id] = c
            todo += [graph.communities[x] for x in c.children if x in graph.communities and x not in subtree]
        done, _ = await self._reports(graph).asummarize(list(subtree.values()), only=missing)
        if not self.store.readonly:
            with self.store.transaction() as db:  # the check and the write under one lock
                if self.graph_generations() == read:
                    self.communities.put(db, [done[c] for c in missing])
        return {c.id: done.get(c.id, c) for c in wanted}

    # -- answers -------------------------------------------------------------------------------
    def _answer_inputs(self, retrieval: Any) -> tuple[list[Any], dict[str, Any]]:
        """What an answer reads, and its wording: the reduce step of a global search over its
        points, most important first (the model cites point numbers, which map back to the
        reports and chunks they rest on), else the packed context of the other modes; both
        packed into GraphRAG reduce's ``max_context_tokens`` 12,000, answering in ``multiple
        paragraphs`` (GraphRAG's free-text answer-shape hint)."""
        shape = {"language": self.config.language, "response_type": "multiple paragraphs"}
        if retrieval.mode == "global":
            points = [h for h in retrieval.hits if h.kind == "point"] or list(retrieval.hits)
            return points, {"system": REDUCE_SYSTEM, "instructions": REDUCE_INSTRUCTIONS.format(**shape), "render": _point, "max_context_tokens": 12000}
        context = list(retrieval.context or retrieval.hits)
        return context, {"system": LOCAL_SYSTEM, "instructions": LOCAL_INSTRUCTIONS.format(**shape), "render": _item, "max_context_tokens": 12000}

    async def _answer(self, question: str, retrieval: Any) -> Any:
        """Offline, a global search answers with its three best points joined; the other modes
        as every method does (the sentence of their hits that best covers the question)."""
        if retrieval.mode == "global" and self.llm is None:
            from rhizome.core.retrieval.answer import Answer

            points = self._answer_inputs(retrieval)[0][:3]
            if not points:
                return Answer(text="No relevant information was found.", extractive=True)
            return Answer(text=" ".join(h.text.strip() for h in points), citations=points, extractive=True)
        return await super()._answer(question, retrieval)


def _point(hit: Hit) -> str:
    """A point as the reduce step shows it: its importance, then its text."""
    return f"(importance {hit.metadata.get('importance', round(hit.raw_score * 100))}) {hit.text.strip()}"


def _item(hit: Hit) -> str:
    """An item of a local context as an answer shows it: its kind and id, then its text."""
    return f"({hit.kind} {hit.id}) {hit.text.strip()}"


def _community_text(community: Community, graph: EntityGraph) -> str:
    """What a community's vector is made from: its report, or its card before it has one."""
    return full_content(community) if has_summary(community) else community_card(community, graph)


def _where(communities: Iterable[Community]) -> dict[str, set[str]]:
    """The communities each member of ``communities`` is in."""
    where: dict[str, set[str]] = {}
    for g in communities:
        for e in g.entity_ids:
            where.setdefault(e, set()).add(g.id)
    return where


def _shown(e: Entity) -> tuple[str, str, str]:
    """What a report's entity row shows of an entity."""
    return e.name, e.type, e.description


def _reweighed_ends(relations: Mapping[str, Relation], held_r: Mapping[str, Relation]) -> set[str]:
    """The ends of the relations new, or weighted or described otherwise: with the entities new
    or shown otherwise, those an update may move between communities."""
    return {
        x for rid, r in relations.items()
        if rid not in held_r or (r.weight, r.description) != (held_r[rid].weight, held_r[rid].description)
        for x in (r.source, r.target)
    }


def _edge_rows(relations: Any, entity_ids: Any) -> dict[str, _Edges]:
    """The edge-table rows of the relations between two of ``entity_ids``."""
    inside = (r for r in relations if r.source in entity_ids and r.target in entity_ids)
    return {row.id: row for row in _update_edges({}, inside, ())}


def _update_edges(rows: dict[str, _Edges], relations: Any, gone: Any) -> list[_Edges]:
    """Put ``relations`` into the edge-table ``rows`` (by source entity; changed in place) and
    take out the ``gone`` ``(relation id, source)`` pairs; returns the rows that changed (a row
    left with no edge is to be deleted)."""
    by_source: dict[str, dict[str, tuple[str, str, float]]] = {}
    for r in relations:
        by_source.setdefault(r.source, {})[r.id] = (r.id, r.target, r.weight)
    for rid, source in gone:
        by_source.setdefault(source, {})[rid] = None  # type: ignore[assignment]
    changed = []
    for source, updates in by_source.items():
        held = {e[0]: e for e in (rows[source].edges if source in rows else [])}
        new = {k: v for k, v in {**held, **updates}.items() if v is not None}
        if new != held:
            rows[source] = _Edges(id=source, edges=[new[k] for k in sorted(new)])
            changed.append(rows[source])
    return changed


def _weighted(rows: Any) -> WeightedEdges:
    """The graph Leiden runs on from edge-table rows, as :func:`weighted_graph` makes it from
    the relations: no self-loops, parallel relations summed, a weight of 0 counted as 1."""
    return WeightedEdges.from_edges(
        (row.id, target, max(float(w), 0.0) or 1.0) for row in rows for _, target, w in row.edges if target != row.id
    )


def _row(relation: Relation) -> tuple[Any, ...]:
    """What a report's relation row shows of a relation."""
    return relation.source, relation.target, relation.description, relation.predicate, relation.keywords


def _new_neighbours(rows: Mapping[str, _Edges], relations: Sequence[Relation]) -> set[str]:
    """The endpoints of ``relations`` (new ones) that were not yet linked in the edge-table
    ``rows``: their degree (distinct neighbours) grows."""
    def linked(u: str, v: str) -> bool:
        return u in rows and any(t == v for _, t, _ in rows[u].edges)

    return {x for r in relations if r.source != r.target and not (linked(r.source, r.target) or linked(r.target, r.source)) for x in (r.source, r.target)}


def _same_inputs(
    structure: Mapping[str, Community],
    kept: Mapping[str, Community],
    old: Mapping[str, Community],
    entities: set[str],
    relations: Sequence[Relation],
    reweighed: Mapping[str, float],
    rows: Mapping[str, _Edges],
    degree: Mapping[Any, int],
) -> dict[str, Community]:
    """The communities of ``structure`` not ``kept`` whose report input (:func:`build_input`) is
    the text their stored report was written from, so they keep it without the input being
    built again. The input shows its members' rows (name, type, description, degree), the rows
    of the relations between them (endpoints, description, combined degree) ranked by combined
    degree, then weight, then id, and maybe its children's reports; so it is unchanged when the
    community has the same id (so the same level and members) as a stored one, no member in
    ``entities`` (whose row changed: name, type or description, or a new neighbour), none of
    the ``relations`` whose row changed (new ones included) between two members, the same
    ranking of its relations where only weights changed (``reweighed``: the weights before; the
    ranking from the edge-table ``rows`` and ``degree``), and every child kept or itself one
    of these. Returns them with the structure's parent and children and the stored report."""
    where = _where(structure.values())

    def within(rs: Any) -> set[str]:
        return {gid for r in rs for gid in where.get(r.source, set()) & where.get(r.target, set())}

    shown = within(relations)
    ends = [(row.id, t) for row in rows.values() for rid, t, _ in row.edges if rid in reweighed]
    moved = {gid for s, t in ends for gid in where.get(s, set()) & where.get(t, set())}

    def same_ranking(g: Community) -> bool:
        members = set(g.entity_ids)
        inside = [(rid, s, t, w) for s in g.entity_ids if s in rows for rid, t, w in rows[s].edges if t in members]
        if not any(rid in reweighed for rid, _, _, _ in inside):
            return True

        def ranked(weight: Any) -> list[str]:
            return [x[-1] for x in sorted((-(degree.get(s, 0) + degree.get(t, 0)), -weight(rid, w), rid) for rid, s, t, w in inside)]

        return ranked(lambda rid, w: w) == ranked(lambda rid, w: reweighed.get(rid, w))

    same: dict[str, Community] = {}
    for g in sorted(structure.values(), key=lambda g: -g.level):  # children before parents
        if g.id in kept or g.id not in old or g.id in shown or not entities.isdisjoint(g.entity_ids):
            continue
        if not all(c in kept or c in same for c in g.children):
            continue
        if g.id in moved and not same_ranking(g):
            continue
        same[g.id] = old[g.id].model_copy(update={"parent": g.parent, "children": list(g.children)})
    return same


class _Steps:
    """CPU seconds of the steps of an update (reported in its stats)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.start = time.process_time()

    def mark(self, step: str) -> None:
        now = time.process_time()
        self.seconds[step] = round(now - self.start, 3)
        self.start = now


def _modularity(graph: Any, structure: Sequence[Community]) -> float:
    """Modularity of the level-0 partition of ``structure`` on ``graph``."""
    initial: dict[Hashable, str] = {e: g.id for g in structure if g.level == 0 for e in g.entity_ids}
    return modularity(graph, initial) if initial else 0.0


__all__ = ["GraphRAGIndex"]
