"""``ArchRAGIndex``: ArchRAG (Wang, Fang, Zhou, Liu, Ma; arXiv 2502.09891) on the Rhizome kernel.

Indexing: chunks (600 tokens, 100 overlap) → entities and relations per chunk through the
kernel's extraction spec (the chat model's GraphRAG-style extraction with gleaning, the offline
extractor, or imported OpenIE triples) → merged, multi-description entities and relations
summarised (a resumable stage) → entity vectors of ``name description`` and relation vectors →
**attributed communities** by Algorithm 1, round after round: the layer's graph is augmented
with KNN similarity edges and weighted by cosine similarity (:mod:`rhizome.archrag.clustering`),
clustered (weighted Leiden, or spectral), each community gets a JSON report from the chat model
(or an extractive one offline; the kernel's :class:`~rhizome.core.index.hierarchy.GroupSummarizer`,
a resumable stage keyed by the report's input) whose ``title + summary`` is embedded, and the
communities linked by crossing KG relations are the next round's graph — until a round makes
fewer than ``min_communities`` communities, stops shrinking the layer, or ``max_layers`` is
reached. The communities are a kernel :class:`~rhizome.core.index.hierarchy.Hierarchy`
(``archrag_communities``: level = layer, ``entity_ids`` = every entity under the community,
``children`` = the communities one layer down, ``parent`` = the one above; a vector collection
per layer).

The **C-HNSW** index (:mod:`rhizome.archrag.chnsw`) is built from the stored vectors — entities
at layer 0, each community layer above — when a search first needs it after a change, and kept
until the next change; being seeded, it is the same graph in every process.

Records: the kernel's entity-graph layer (:class:`~rhizome.core.graph.store.EntityGraphStore`,
tables and collections prefixed ``archrag_``: :data:`ARCHRAG`) keeps each chunk's extraction
and the entity and relation profiles with their vectors.

Changes: an insert extracts only the new chunks and the layer folds them onto the profiles they
touch (summaries and vectors only for the profiles that changed); a delete re-folds the profiles
the removed chunks supported from the chunks left. Either way the layers of communities are
then built again from the profiles: reports and embeddings are keyed by their input, so only
communities whose input changed are paid for, and an interrupted build loses only the calls in
flight. Between a delete's commit and the end of its rebuild, hits cite only chunks still
stored (a hit left with none is dropped).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from rhizome.archrag.chnsw import CHNSW, LayerSearch
from rhizome.archrag.clustering import augment, community_edges, partition, repartition, stop_reason
from rhizome.archrag.config import ArchRAGConfig
from rhizome.archrag.prompts import (
    CHILDREN_NOTE,
    MERGE_INSTRUCTIONS,
    MERGE_SYSTEM,
    REPORT_PROMPT,
    REPORT_SYSTEM,
)
from rhizome.core.graph.entity_graph import EntityGraph, EntityOutline, RelationOutline
from rhizome.core.graph.lists import ENTITY_KEY
from rhizome.core.graph.mentions import chunk_record
from rhizome.core.graph.profiles import FoldPolicy, triple_key
from rhizome.core.graph.store import GraphChange
from rhizome.core.index.base import ModeInfo, Stats, VectorBatch
from rhizome.core.index.entity_index import EntityGraphIndex, StoredEntityGraph, open_entity_graph
from rhizome.core.index.hierarchy import (
    GroupInput,
    GroupSummarizer,
    Hierarchy,
    SummaryFields,
    community_key,
    has_summary,
)
from rhizome.core.index.stages import digest, prune_stage
from rhizome.core.index.writers import GroupWriter, cell, offline_summary
from rhizome.core.naive import NAIVE
from rhizome.core.retrieval.contract import pack
from rhizome.core.store.storage import Connection
from rhizome.core.types import Community, Entity, Hit, Relation

REPORT_STAGE = "archrag.report"
RELATION_PART = 256
"""Relations a report context reads whole at a time."""


def entity_text(entity: Entity) -> str:
    """What an entity's vector is made from: its name and description (the authors' code)."""
    return f"{entity.name} {entity.description}".strip()


def relation_text(relation: Relation, source: str, target: str) -> str:
    """A relation as it is embedded and shown: ``source — target: description`` (``source``,
    ``target``: its entities' names)."""
    said = (relation.description or relation.predicate or ", ".join(relation.keywords)).strip()
    return f"{source} — {target}: {said}" if said else f"{source} — {target}"


ARCHRAG = FoldPolicy(relation_key=triple_key, entity_text=entity_text, relation_text=relation_text)
"""ArchRAG's graph: GraphRAG-style extraction folded into a relation per subject, predicate and
object, weights summed, descriptions summarised past the budget."""


def community_text(community: Community) -> str:
    """What a community's vector is made from and what a search shows: title and summary."""
    return f"{community.title}\n{community.summary}".strip()


class _Touched(BaseModel):
    """An entity whose place in the layers' graph changed since they were last built (a row of
    ``archrag_touched``)."""

    id: str


def _moved(change: GraphChange) -> set[str]:
    """The entities whose place in the layers' graph a change can alter: new and removed ones,
    those whose vector changes (re-embedded, or waiting for it or for their summary) and the ends of new
    and removed relations. A layer's edges are the pairs of related entities weighted by their
    vectors' cosine, so an entity that only gained a citation or another statement of a known
    pair keeps its place."""
    moved = {*change.added_entities, *change.removed_entities, *change.entity_vectors[0]}
    moved.update(key[len(ENTITY_KEY):] for key in (*change.pending, *change.unembedded) if key.startswith(ENTITY_KEY))
    for rid in change.added_relations:
        moved.update((change.relations[rid].source, change.relations[rid].target))
    for rid in change.removed_relations:
        moved.update((change.stored_relations[rid].source, change.stored_relations[rid].target))
    return moved


class ReportWriter(GroupWriter):
    """Writes one community's report with the chat model, or extractively without one."""

    system = REPORT_SYSTEM

    def prompt(self, data: GroupInput | None) -> str:
        members = "entities and their relations" if data is not None and data.group.level == 1 else "communities"
        return REPORT_PROMPT.format(
            members=members, children_note=CHILDREN_NOTE if data is None or data.children else "", language=self.language,
            max_tokens=self.max_tokens, context="" if data is None else data.text,
        )

    def offline(self, data: GroupInput, *context: Any) -> SummaryFields:
        return offline_report(data)


def offline_report(data: GroupInput) -> SummaryFields:
    """An extractive report: the title names the best-connected members, the summary keeps the
    most central sentences of the children's summaries and members' descriptions."""
    names: list[str] = data.extra["names"]
    title = ", ".join(names[:3]) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")
    summary = offline_summary(data.children, data.extra["descriptions"], names)
    findings = [{"summary": c.title, "explanation": cell(c.summary, 120)} for c in data.children[:5]]
    findings += [{"summary": line.split(": ", 1)[0], "explanation": line} for line in data.extra["relations"][: 8 - len(findings)]]
    return {"title": title or data.group.id, "summary": summary, "rating": None, "findings": findings, "by": "offline"}


class ArchRAGIndex(StoredEntityGraph, EntityGraphIndex):
    """An ArchRAG index: an entity graph, attributed communities in layers, a C-HNSW index over
    them, and hierarchical search with adaptive filtering.

    Modes: ``archrag`` (default: hierarchical search, the layer-0 textual subgraph, and the chat
    model's key points per layer, scored, sorted and cut to a budget), ``hierarchical`` (the
    entities, relations and communities hierarchical search retrieves, unfiltered), ``passages``
    (the passages behind them, ranked by the kernel's evidence walk from them and from the
    passages nearest the question) and ``naive``
    (dense retrieval over the same chunks). Settings:
    :class:`~rhizome.archrag.config.ArchRAGConfig`; the other parameters are
    :class:`~rhizome.core.index.base.BaseIndex`'s. ``llm`` extracts, summarises, writes the reports
    and filters at query time; without one every step runs offline.
    """

    method: ClassVar[str] = "archrag"
    modes: ClassVar[Mapping[str, ModeInfo]] = {
        "archrag": ModeInfo("key points the model draws from the entities, relations and community reports nearest the question at every layer of the community tree (ArchRAG's hierarchical search with adaptive filtering); for specific and broad questions alike", ("specific", "multi-hop", "global"), retriever="rhizome.archrag.retrieval:FilteredSearch"),
        "hierarchical": ModeInfo("the entities, relations and community reports nearest the question at every layer of the community tree, without model filtering", ("specific", "global"), retriever="rhizome.archrag.retrieval:HierarchicalSearch"),
        "passages": ModeInfo("the passages behind the entities, relations and communities hierarchical search retrieves, ranked by a walk over the entity graph from them together with the passages nearest the question", ("specific", "multi-hop"), retriever="rhizome.archrag.retrieval:PassageSearch"),
        "naive": NAIVE,
    }
    config_class = ArchRAGConfig
    config: ArchRAGConfig
    ENTITY_COLLECTION: ClassVar[str] = "archrag_entities"
    RELATION_COLLECTION: ClassVar[str] = "archrag_relations"
    NAME_COLLECTION: ClassVar[str] = "archrag_names"
    """Entity names alone, what the names a query mentions are linked to."""

    def _setup(self) -> None:
        c = self.config
        self.entity_graph = open_entity_graph(self, "archrag", policy=ARCHRAG)
        self.communities = Hierarchy(self.store, "archrag_communities")
        self.touched = self.store.table("archrag_touched", _Touched)
        self.report_writer = ReportWriter(self.llm, max_tokens=c.report_max_tokens, language=c.language)
        self.entity_graph.adopt_once(chunk_record)

    # -- EntityGraphIndex hooks ---------------------------------------------------------------
    def _apply(self, db: Connection, change: GraphChange) -> None:
        """Write ``change`` and note the entities the layers must let move, unless there are no
        layers yet (the next change partitions them whole)."""
        super()._apply(db, change)
        if self.communities.groups.count():
            self.touched.put(db, [_Touched(id=e) for e in _moved(change)])

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        """The layers follow the change: after inserts, updated around the entities they touched
        (:func:`~rhizome.archrag.clustering.repartition`); after a delete, partitioned whole."""
        await super()._after_change(inserted, removed, stats)
        await self._rebuild(stats, local=not removed)

    # -- the graph and its layers ----------------------------------------------------------
    def chnsw(self) -> tuple[CHNSW | None, list[list[str]]]:
        """The C-HNSW index over the stored vectors and the ids of each layer's rows (built on
        first use after a change; an index directory keeps it for the processes that open it)."""
        key = (self.entity_table.generation(), self.communities.groups.generation(), self.store.embedding_dimension)
        held = self.derived("chnsw", key, self._build_chnsw, saved=LayerSearch)
        return held.chnsw, held.ids

    def _build_chnsw(self) -> LayerSearch:
        store = self.store
        if store.embedding_dimension is None or not store.has_collection(self.ENTITY_COLLECTION):
            return LayerSearch(None, [])
        ids = [sorted(self.entity_table.keys())]
        groups = self.communities.all().values()
        for level in self.communities.levels():
            ids.append(sorted(c.id for c in groups if c.level == level))
        names = [self.ENTITY_COLLECTION] + [self.communities.collection(level) for level in self.communities.levels()]
        layers, kept = [], []
        for collection, keys in zip(names, ids):
            if not store.has_collection(collection):
                break
            # the held keys and their vectors in one read: a writer may drop some in between
            held, vectors = store.collection(collection, store.embedding_dimension).present(keys)
            if not held:
                break
            layers.append(vectors)
            kept.append(held)
        if not layers:
            return LayerSearch(None, [])
        c = self.config
        return LayerSearch(CHNSW(layers, m=c.m, m0=c.m0, ef_construction=c.ef_construction, ef_search=c.ef_search, seed=c.leiden_seed % 2**32), kept)

    async def _rebuild(self, stats: Stats, *, local: bool = False) -> None:
        """Build the layers of communities again from the stored profiles and their vectors;
        ``local``: each layer updated from the stored one around what changed, where it can be."""
        # the entities in the order of their first mention, chunk by chunk: the layers depend on it
        # (outlines: what the layers and reports read, without the profiles' lists; of the
        # relations their endpoints and weights, their text read where a report needs it)
        entities: dict[str, Any] = self.entity_table.view(EntityOutline).get(self.entity_graph.first_seen(self.store.chunk_ids()))
        graph = EntityGraph.of(entities, self.entity_graph.edges(), {}, read_relations=self.relation_table.view(RelationOutline).get)
        old_communities = self.communities.all()
        vectors = self._vectors(self.ENTITY_COLLECTION, list(graph.entities), None)
        touched = self.touched.keys()
        moved = set(touched) if local else None
        layers, batches, counts = await self._cluster(graph, vectors, stats, old_communities, moved)
        with self.store.transaction() as db:
            self.communities.replace(db, old_communities, layers, batches)
            prune_stage(db, REPORT_STAGE, (c.metadata["input_digest"] for c in layers.values()))
            self.touched.delete(db, touched)
        await asyncio.to_thread(self.chnsw)  # the C-HNSW of the new state, so the first query does not wait
        stats.update(
            entities=len(graph.entities), relations=len(graph.relations), communities=len(layers),
            layers=max((c.level for c in layers.values()), default=0),
            reports_written=counts["written"], reports_reused=counts["reused"],
        )

    def _vectors(self, collection: str, keys: list[str], fresh: VectorBatch | None) -> np.ndarray:
        """The vectors of ``keys``: just embedded (``fresh``) or stored."""
        new = dict(zip(fresh.ids, fresh.vectors)) if fresh is not None and fresh.ids else {}
        held = [k for k in keys if k not in new]
        stored = dict(zip(held, self.store.collection(collection).vectors(held))) if held else {}
        if not keys:
            return np.zeros((0, self.store.embedding_dimension or 1), dtype=np.float32)
        return np.stack([new[k] if k in new else stored[k] for k in keys]).astype(np.float32)

    async def _cluster(
        self, graph: EntityGraph, vectors: np.ndarray, stats: Stats, old: Mapping[str, Community], moved: set[str] | None = None
    ) -> tuple[dict[str, Community], list[VectorBatch], dict[str, int]]:
        """Algorithm 1: the attributed communities of every layer, their vector batches and
        how many reports were written or reused (see the module docstring). With ``moved``
        (the entities changed since the layers were built), each layer is first updated from
        its stored partition (:func:`~rhizome.archrag.clustering.repartition`)."""
        c = self.config
        base: dict[tuple[str, str], float] = {}
        for _, source, target in graph.ends():
            if source != target:
                pair = (min(source, target), max(source, target))
                base[pair] = base.get(pair, 0.0) + 1.0
        ids, edges = list(graph.entities), dict(base)
        done: dict[str, Community] = {}
        batches: list[VectorBatch] = []
        counts = {"written": 0, "reused": 0}
        level, reason = 1, None
        while len(ids) >= 2 and reason is None:
            layer = augment(ids, vectors, edges, percentile=c.knn_percentile, k=c.knn_k)
            previous = {g.id: g.entity_ids if level == 1 else g.children for g in old.values() if g.level == level}
            grouped = None
            if moved is not None and previous and c.clustering == "leiden":
                grouped = repartition(layer, previous, moved if level == 1 else set(), max_cluster_size=c.max_cluster_size, seed=c.leiden_seed)
            stats[f"layer_{level}"] = "full" if grouped is None else "local"
            if grouped is None:
                grouped = partition(layer, method=c.clustering, max_cluster_size=c.max_cluster_size, seed=c.leiden_seed)
            reason = stop_reason(level, len(ids), len(grouped), max_layers=c.max_layers, min_communities=c.min_communities, min_shrink=c.min_shrink)
            if reason == "no-shrink":
                break
            groups = []
            for members in grouped:
                leaves = members if level == 1 else sorted({e for m in members for e in done[m].entity_ids})
                groups.append(Community(
                    id=community_key(level, members), level=level, entity_ids=leaves,
                    children=[] if level == 1 else members, metadata={"size": len(members)},
                ))
            reports = await self._reports(graph, groups, done, counts, old)
            for group in reports.values():
                for child in group.children:
                    done[child] = done[child].model_copy(update={"parent": group.id})
            done.update(reports)
            keys = [g.id for g in groups]
            batch = await self.embed_changed(self.communities.collection(level), {k: community_text(reports[k]) for k in keys}, what=f"community summaries (layer {level})")
            batches.append(batch)
            vectors = self._vectors(self.communities.collection(level), keys, batch)
            ids, edges = keys, community_edges([g.entity_ids for g in groups], keys, base)
            level += 1
        stats["stopped"] = reason or ("too-few-nodes" if len(ids) < 2 else "")
        return done, batches, counts

    async def _reports(
        self, graph: EntityGraph, groups: list[Community], done: Mapping[str, Community], counts: dict[str, int], old: Mapping[str, Community]
    ) -> dict[str, Community]:
        """The layer's communities with their reports: a stored community (same id: the same
        layer and members) whose report source is unchanged (:func:`report_source`) keeps its
        report; the others' are written, or found in the report stage by their input."""
        budget = self.report_writer.input_budget(self.config.report_max_input_tokens)
        identity = self.report_writer.identity
        inner = inner_relations(groups, graph)
        rows = graph.cache.get("archrag-rows")
        if rows is None:  # once for every layer; the relations' text read by columns, no record decoded
            rows = graph.cache["archrag-rows"] = report_rows(graph, lambda ids: self.relation_table.fields("source", "target", "description", "predicate", keys=ids, ordered=False))
        sources = {g.id: report_source(g, rows, done, budget, identity, inner[g.id]) for g in groups}
        kept = {
            g.id: held.model_copy(update={"parent": None, "children": g.children, "metadata": {**held.metadata, "size": g.metadata["size"]}})
            for g in groups
            if (held := old.get(g.id)) is not None and has_summary(held) and held.metadata.get("source") == sources[g.id]
        }

        def build_input(group: Community, _: Any) -> GroupInput:
            return report_input(group, graph, done, budget, inner[group.id])

        summarizer = GroupSummarizer(self.store, REPORT_STAGE, build_input=build_input, write=self.report_writer.awrite,
                                     identity=identity, label="community reports")
        reports, n = await summarizer.asummarize([g for g in groups if g.id not in kept], context=kept)
        for gid, source in sources.items():
            reports[gid].metadata["source"] = source
        counts["written"] += n["written"]
        counts["reused"] += n["reused"] + len(kept)
        return reports

    # -- answers ---------------------------------------------------------------------------
    def _answer_inputs(self, retrieval: Any) -> tuple[list[Any], dict[str, Any]]:
        """What an answer reads: the points of an ``archrag`` search, most important first, with
        the merge prompt; the hits of the other modes with the kernel's answer prompt."""
        if retrieval.mode != "archrag":
            return super()._answer_inputs(retrieval)
        points = [h for h in retrieval.hits if h.kind == "point"] or list(retrieval.hits)
        instructions = MERGE_INSTRUCTIONS.format(response_type="a short answer, then a brief explanation")
        return points, {"system": MERGE_SYSTEM, "instructions": instructions, "render": _point, "max_context_tokens": self.config.context_max_tokens}


def _point(hit: Hit) -> str:
    """A point as the merge prompt shows it: its importance, then its text."""
    return f"Importance score: {hit.metadata.get('importance', round(hit.raw_score * 100))}\n{hit.text.strip()}"


def _context(group: Community, graph: EntityGraph, done: Mapping[str, Community], inner: set[str]) -> tuple[list[Entity], Iterator[Relation], list[Community]]:
    """What a community's report reads: its entities, most connected first; the relations
    among them (``inner``), by combined degree, read :data:`RELATION_PART` at a time as they are asked for (a
    report shows a few hundred at most; a top community holds every relation); its children's reports."""
    members = graph.members(Community(id=group.id, level=group.level, entity_ids=group.entity_ids))
    order = sorted(inner, key=lambda rid: (-graph.combined_degree(graph.relations[rid]), rid))
    relations = (r for i in range(0, len(order), RELATION_PART) for r in graph.whole_relations(order[i : i + RELATION_PART]).values())
    return members, relations, [done[c] for c in group.children if c in done]


def inner_relations(groups: Sequence[Community], graph: EntityGraph) -> dict[str, set[str]]:
    """The ids of the relations between two entities of each of a layer's communities (which
    hold each entity once), in one pass over the relations."""
    owner = {e: g.id for g in groups for e in g.entity_ids}
    inner: dict[str, set[str]] = {g.id: set() for g in groups}
    for rid, source, target in graph.ends():
        if (gid := owner.get(source)) is not None and owner.get(target) == gid:
            inner[gid].add(rid)
    return inner


def report_rows(graph: EntityGraph, read: Callable[[Sequence[str]], Iterable[tuple[str, str, str, str | None, str | None]]]) -> dict[str, str]:
    """A short digest of each entity's and relation's row (``r:`` and its id), what :func:`report_source`
    is made from; ``read``: the id, source, target, description and predicate (``None``: ``""``) of given relations."""
    rows = {e.id: _short(e.id, e.name, e.type, e.description, graph.degree.get(e.id, 0)) for e in graph.entities.values()}
    ids = list(graph.relations)
    for i in range(0, len(ids), 4096):
        for rid, source, target, description, predicate in read(ids[i : i + 4096]):
            rows[f"r:{rid}"] = _short(rid, source, target, description or "", predicate or "", graph.combined_degree(graph.relations[rid]))
    return rows


def report_source(group: Community, rows: Mapping[str, str], done: Mapping[str, Community], budget: int, identity: Any, inner: set[str]) -> str:
    """A digest of everything a community's report input is made from (what :func:`report_input`
    reads, whose order and cut follow from it, and the writer): while it is the one a stored
    report was written with, the report stands and its input is not built again. Made from the
    short digest of each member's and each inner relation's row (:func:`report_rows`)."""
    children = [done[c] for c in group.children if c in done]
    return digest(
        identity, budget, group.level, [rows[e] for e in sorted(set(group.entity_ids)) if e in rows],
        [rows[f"r:{r}"] for r in sorted(inner)],
        [(c.id, c.title, c.summary, c.rating) for c in children],
    )


def _short(*parts: Any) -> str:
    """A short stable digest of a row's values."""
    return hashlib.blake2b("\x1f".join(map(str, parts)).encode("utf-8"), digest_size=8).hexdigest()


def report_input(group: Community, graph: EntityGraph, done: Mapping[str, Community], budget: int, inner: set[str]) -> GroupInput:
    """The context of one community's report: at layer 1 its entities and the relations among
    them, most connected first; above, the reports of its children first, then entity and
    relation rows while they fit (the authors' code). Cut to ``budget`` tokens; a row is made
    only when the rows before it fit (a top community holds every entity)."""
    members, relations, children = _context(group, graph, done, inner)
    shown, stated = itertools.tee(relations)  # one read serves the rows and the findings
    names = {e.id: e.name for e in members}

    def row(item: tuple[str, Any]) -> str:
        kind, x = item
        if kind == "community":
            return f"{x.id}|{cell(x.title, 40)}|{cell(x.summary, 300)}|{'' if x.rating is None else x.rating}"
        if kind == "entity":
            return f"{x.name}|{cell(x.type, 10)}|{cell(x.description, 200)}|{graph.degree.get(x.id, 0)}"
        if kind == "relation":
            return f"{names[x.source]}|{names[x.target]}|{cell(x.description or x.predicate, 150)}|{graph.combined_degree(x)}"
        return str(x)

    items: list[tuple[str, Any]] = []
    if children:
        items += [("head", "-----Communities-----"), ("head", "id|title|summary|rating"), *(("community", c) for c in children)]
    items += [("head", "-----Entities-----"), ("head", "entity|type|description|degree"), *(("entity", e) for e in members)]
    items += [("head", "-----Relationships-----"), ("head", "source|target|description|combined_degree")]
    text = "\n".join(body for _, body in pack(itertools.chain(items, (("relation", r) for r in shown)), budget, row, overhead=1, cut_first=False))
    return GroupInput(
        group=group, text=text, children=children,
        extra={
            "names": [e.name for e in members],
            "descriptions": [e.description for e in members[:12] if e.description],
            "relations": [f"{names[r.source]} – {names[r.target]}: {cell(r.description or r.predicate, 100)}"
                          for r in itertools.islice((r for r in stated if r.description or r.predicate), 8)],  # a bare pair states nothing
        },
    )


__all__ = ["ArchRAGIndex", "ReportWriter", "community_text", "entity_text", "inner_relations", "offline_report", "relation_text", "report_input", "report_rows", "report_source"]
