"""Hierarchies of groups and their summaries, written bottom-up, level by level.

GraphRAG's communities, ArchRAG's attributed-community layers and RAPTOR's tree are the same
shape: groups of members at several levels, each group with a parent and children, each with a
summary written from its members — or, when they do not fit, from its children's summaries.
This module holds that shape once:

- :func:`cluster_hierarchy` — hierarchical Leiden over a networkx graph, as
  :class:`~rhizome.core.types.Community` records whose ids derive from their level and
  members, so a group that keeps its members keeps its id (and its summary) across re-clustering;
- :class:`Hierarchy` — the groups of one index as a record table plus one vector collection per
  level;
- :func:`recluster_hierarchy` — the same hierarchy after a change, clustered again only where
  the change is: bounded Leiden iterations from the previous partition, in which only the
  changed members may move, level by level; a group whose members and
  their relations did not change is kept as it was, with its whole subtree and summaries;
- :func:`prune_groups` — what removing members does to the groups before the next clustering:
  the groups that held them go (their summaries were written from them), the rest stay reachable;
- :class:`GroupSummarizer` — writes the summaries of chosen groups, deepest level first, each
  level concurrently, through a resumable stage (:mod:`rhizome.core.index.stages`): a group whose input
  is unchanged reuses its summary, each new summary is committed as it arrives, and eager
  (every group at build time) and lazy (only the groups a query needs) are the same call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import networkx as nx
import numpy as np

from rhizome.core.graph import (
    WeightedEdges,
    communities_from_membership,
    hierarchical_leiden,
    leiden_update,
)
from rhizome.core.index.stages import arun_stage, digest, stored_results
from rhizome.core.progress import phase
from rhizome.core.retrieval.contract import vector_search
from rhizome.core.types import Community


def community_key(level: int, members: Sequence[str]) -> str:
    """Stable id of a group: its level and a hash of its sorted member ids."""
    blob = json.dumps([level, sorted(members)], ensure_ascii=False).encode("utf-8")
    return f"comm-{level}-{hashlib.sha256(blob).hexdigest()[:16]}"


def cluster_hierarchy(graph: nx.Graph | WeightedEdges, *, max_cluster_size: int, seed: int, max_levels: int = 10) -> list[Community]:
    """Hierarchical Leiden groups of ``graph`` (level 0 = coarsest), without summaries. Each
    group's ``metadata`` holds its hierarchy label (``"L0-C3"``) and size."""
    if graph.number_of_nodes() == 0:
        return []
    with phase("clustering (hierarchical Leiden)", graph.number_of_nodes(), "node") as step:
        hierarchy = hierarchical_leiden(graph, max_cluster_size=max_cluster_size, seed=seed, max_levels=max_levels)
        step.advance(graph.number_of_nodes())
    ids = {c.id: community_key(c.level, [str(n) for n in c.nodes]) for c in hierarchy}
    return [
        Community(
            id=ids[c.id],
            level=c.level,
            entity_ids=[str(n) for n in c.nodes],
            parent=ids[c.parent] if c.parent else None,
            children=[ids[x] for x in c.children],
            metadata={"label": c.id, "size": c.size},
        )
        for c in hierarchy
    ]


def recluster_hierarchy(
    graph: nx.Graph | WeightedEdges,
    previous: Mapping[str, Community],
    touched: Iterable[str],
    *,
    max_cluster_size: int,
    seed: int,
    max_levels: int = 10,
    n_iterations: int = 2,
) -> tuple[list[Community], dict[str, Any]]:
    """:func:`cluster_hierarchy` of ``graph`` updated from the ``previous`` hierarchy after the
    members ``touched`` (new nodes, or nodes whose relations or descriptions changed) changed.

    Level by level, from the coarsest: the groups of a (sub)graph start from their previous
    partition (a node new to the level starts alone) and get at most ``n_iterations`` Leiden
    iterations (:func:`~rhizome.core.graph.leiden.leiden_update`) in which only the touched
    nodes and the nodes new to the level may change group (letting their neighbours move too
    made half of a dense co-occurrence graph movable after 100 new documents). A resulting group
    with the same members as a previous one and no touched member is the previous group with
    its whole subtree (same ids, summaries kept); any other group gets the id of its level and
    members (:func:`community_key`) and, when larger than ``max_cluster_size``, is split the same
    way below (from scratch, with :func:`~rhizome.core.graph.leiden.hierarchical_leiden`, where
    it has no previous split). Nodes that left the graph simply drop out.

    The Leiden iterations run on a collapsed graph (:func:`update_collapsed`): the nodes that
    may not move are merged into one node per previous group, so a (sub)graph is clustered as
    its movable nodes plus one node per group, with the same moves open to each movable node
    and the same modularity.

    Returns the groups and ``{"movable": how many nodes could move, "kept_ids": ids of the groups
    kept as they were, "modularity": modularity of the new level-0 partition}`` for the caller's stability
    check (an update that is not good enough calls for :func:`cluster_hierarchy`)."""
    if not isinstance(graph, WeightedEdges):
        graph = WeightedEdges.from_networkx(graph)
    touched = {t for t in touched if t in graph}
    at_level: dict[int, dict[str, str]] = {}
    for group in previous.values():
        members = at_level.setdefault(group.level, {})
        for e in group.entity_ids:
            members[e] = group.id
    movable = touched
    out: list[Community] = []
    kept: set[str] = set()
    info: dict[str, Any] = {"movable": len(movable), "kept_ids": kept, "modularity": 0.0}

    def keep(gid: str, parent: str | None) -> None:
        group = previous[gid]
        out.append(group if group.parent == parent else group.model_copy(update={"parent": parent}))
        kept.add(gid)
        for child in group.children:
            if child in previous:
                keep(child, gid)

    def fresh(sub: WeightedEdges, level: int, parent: str | None) -> list[str]:
        found = hierarchical_leiden(sub, max_cluster_size=max_cluster_size, seed=seed, max_levels=max_levels - level)
        ids = {c.id: community_key(level + c.level, [str(n) for n in c.nodes]) for c in found}
        for c in found:
            out.append(Community(
                id=ids[c.id], level=level + c.level, entity_ids=[str(n) for n in c.nodes],
                parent=ids[c.parent] if c.parent else parent, children=[ids[x] for x in c.children],
                metadata={"label": ids[c.id], "size": c.size},
            ))
        tops = [ids[c.id] for c in found if c.parent is None]
        return tops if level == 0 or len(tops) > 1 else _drop(out, tops)

    def split(sub: WeightedEdges, level: int, parent: str | None) -> list[str]:
        before = at_level.get(level, {})
        initial = {n: before[n] for n in sub if n in before}
        if not initial:
            return fresh(sub, level, parent)
        moving = {n for n in sub if n in movable or n not in initial}
        membership, quality = update_collapsed(sub, initial, moving, seed=seed, n_iterations=n_iterations)
        if level == 0:
            info["modularity"] = quality
        parts = communities_from_membership(membership)
        if level and len(parts) < 2:  # not split: the group stays a leaf
            return []
        ids = []
        for part in parts:
            members = [str(m) for m in part]
            gid = before.get(members[0])
            old = previous.get(gid) if gid is not None else None
            if old is not None and len(old.entity_ids) == len(members) and set(old.entity_ids) == set(members) and touched.isdisjoint(members):
                keep(old.id, parent)
                ids.append(old.id)
                continue
            cid = community_key(level, members)
            group = Community(id=cid, level=level, entity_ids=members, parent=parent, metadata={"label": cid, "size": len(members)})
            out.append(group)
            if len(members) > max_cluster_size and level + 1 < max_levels:
                group.children = split(graph.subgraph(members), level + 1, cid)
            ids.append(cid)
        return ids

    if graph.number_of_nodes():
        with phase("clustering (Leiden, updating)", graph.number_of_nodes(), "node") as step:
            split(graph, 0, None)
            step.advance(graph.number_of_nodes())
    return out, info


def update_collapsed(
    graph: WeightedEdges, initial: Mapping[Any, str], movable: set[Any], *, seed: int, n_iterations: int = 2
) -> tuple[dict[Any, int], float]:
    """:func:`~rhizome.core.graph.leiden.leiden_update` of ``graph`` from the partition
    ``initial`` in which only the ``movable`` nodes may change group, run on the graph with the
    other nodes merged into one node per group (:meth:`WeightedEdges.collapse`).

    Why the result is the one the whole graph gives: a fixed node never changes group, so the
    fixed nodes of a group always sit together; what decides a movable node's move is its
    edge weight to each group and each group's total degree, and the merged node keeps both
    (edges inside a group become its self-loop). The modularity of a partition that keeps the
    merged nodes whole is the same on both graphs (tested in ``tests/core``). Returns
    ``({node: group number}, modularity)`` as ``leiden_update`` does."""
    fixed = {n: initial[n] for n in graph if n not in movable and n in initial}
    small, position = graph.collapse(fixed)
    start: dict[Any, str] = {}
    for key in small.nodes:
        kind, value = cast(tuple[str, Any], key)  # collapse() names nodes ("group" | "node", id)
        if kind == "group":
            start[key] = value
        elif value in initial:
            start[key] = initial[value]
    moving = {key for key in small.nodes if cast(tuple[str, Any], key)[0] == "node"}
    membership, quality = leiden_update(small, start, movable=moving, seed=seed, n_iterations=n_iterations)
    return {n: membership[small.nodes[position[i]]] for i, n in enumerate(graph.nodes)}, quality


def _drop(groups: list[Community], ids: list[str]) -> list[str]:
    """Remove a lone top group (a subgraph Leiden did not split) and keep its level free."""
    gone = set(ids)
    groups[:] = [g for g in groups if g.id not in gone]
    return []


def prune_groups(groups: Mapping[str, Community], members: Iterable[str]) -> tuple[list[Community], list[Community]]:
    """What removing or changing ``members`` does to a hierarchy until it is clustered again.

    Every group holding one of ``members`` is dropped, with its ancestors (a parent holds its
    children's members, and its summary may be written from theirs): their summaries and
    vectors were made from what the members were. The groups left keep their summaries; one
    whose parent was dropped becomes a root, so every group left is still reached from a root.
    Returns ``(dropped, changed)``: the groups to delete and the changed copies to store."""
    wanted = set(members)
    dropped = {gid for gid, g in groups.items() if not wanted.isdisjoint(g.entity_ids)}
    todo = list(dropped)
    while todo:
        parent = groups[todo.pop()].parent
        if parent is not None and parent in groups and parent not in dropped:
            dropped.add(parent)
            todo.append(parent)
    changed = []
    for gid, group in groups.items():
        if gid in dropped:
            continue
        parent = None if group.parent in dropped else group.parent
        children = [c for c in group.children if c not in dropped]
        if parent != group.parent or children != group.children:
            changed.append(group.model_copy(update={"parent": parent, "children": children}))
    return [groups[gid] for gid in sorted(dropped)], changed


def has_summary(group: Community) -> bool:
    return bool(group.title and group.metadata.get("summary_by"))


class Hierarchy:
    """The groups of one index (a record table of :class:`Community`) and their vectors (one
    collection per level, ``<name>_L<level>``)."""

    def __init__(self, store: Any, name: str) -> None:
        self.store = store
        self.name = name
        self.groups = store.table(name, Community, lookups=("level",))

    def collection(self, level: int) -> str:
        return f"{self.name}_L{level}"

    def all(self) -> dict[str, Community]:
        return {g.id: g for g in self.groups.all()}

    def levels(self) -> list[int]:
        return sorted(int(level) for level in self.groups.distinct("level"))

    def put(self, db: Any, groups: Sequence[Community]) -> None:
        self.groups.put(db, groups)

    def delete(self, db: Any, groups: Sequence[Community]) -> None:
        """Remove groups and their vectors."""
        self.groups.delete(db, [g.id for g in groups])
        for level in {g.level for g in groups}:
            self.store.delete_vectors(db, self.collection(level), [g.id for g in groups if g.level == level])

    def replace(self, db: Any, old: Mapping[str, Community], new: Mapping[str, Community], vectors: Iterable[Any] = ()) -> None:
        """Write a rebuilt or updated hierarchy back over ``old`` (as :meth:`all` read it): the
        groups gone deleted with their vectors, those that differ written, and the ``vectors``
        (vector batches of the groups whose text changed)."""
        self.delete(db, [g for k, g in old.items() if k not in new])
        self.put(db, [g for k, g in new.items() if old.get(k) != g])
        for batch in vectors:
            batch.write(db, self.store)

    def search(self, vector: np.ndarray | None, k: int, levels: Sequence[int] | None = None) -> list[tuple[str, float]]:
        """The ``k`` groups most similar to ``vector`` over the given levels (default all)."""
        found = []
        for level in self.levels() if levels is None else levels:
            found += vector_search(self.store, self.collection(level), vector, k)
        return sorted(found, key=lambda x: -x[1])[:k]


@dataclass
class GroupInput:
    """What one group's summary is written from: the context ``text`` (its members, or its
    children's summaries where the members do not fit) and the children it used."""

    group: Community
    text: str
    children: list[Community] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else the writer needs (e.g. the members it packed)."""


SummaryFields = dict[str, Any]
"""What a writer returns: ``title``, ``summary``, ``rating``, ``findings`` and any metadata."""


class GroupSummarizer:
    """Writes group summaries bottom-up (see the module docstring).

    Parameters
    ----------
    store:
        The index store (the stage results live there).
    stage:
        Name of the resumable stage, e.g. ``"graphrag.report"``.
    build_input:
        ``(group, groups so far by id) -> GroupInput``: the context of one group, given the
        groups already summarised (children come before parents).
    write:
        ``async (GroupInput) -> SummaryFields``: the model (or offline) writer.
    identity:
        What besides the input decides a summary (writer kind, model name, language, length):
        part of every digest, so changing it rewrites the summaries.
    label:
        What the progress phases of each level are called (default: ``stage``).
    """

    def __init__(
        self,
        store: Any,
        stage: str,
        *,
        build_input: Callable[[Community, Mapping[str, Community]], GroupInput],
        write: Callable[[GroupInput], Awaitable[SummaryFields]],
        identity: Any,
        label: str | None = None,
    ) -> None:
        self.store = store
        self.stage = stage
        self.label = label or stage
        self.build_input = build_input
        self.write = write
        self.identity = identity

    def input_digest(self, data: GroupInput) -> str:
        return digest(self.identity, data.text)

    async def asummarize(
        self,
        groups: Sequence[Community],
        *,
        only: set[str] | None = None,
        stored_only: bool = False,
        context: Mapping[str, Community] | None = None,
    ) -> tuple[dict[str, Community], dict[str, int]]:
        """``groups`` by id with summaries for those in ``only`` (default all), deepest level
        first; with ``stored_only`` nothing is written, held summaries are attached where their
        input matches. ``context``: groups left as they are (with their summaries) that the
        inputs of ``groups`` may read — the unchanged children of a changed group. Returns the
        groups (and the ``context``) and ``{"written": n, "reused": n}``."""
        result: dict[str, Community] = dict(context or {})
        result.update({g.id: _bare(g) for g in groups})
        counts = {"written": 0, "reused": 0}
        by_level: dict[int, list[Community]] = {}
        for g in groups:
            by_level.setdefault(g.level, []).append(g)
        for level in sorted(by_level, reverse=True):
            jobs: dict[str, tuple[str, Callable[[], Awaitable[Any]]]] = {}
            inputs: dict[str, GroupInput] = {}
            digests: dict[str, str] = {}
            for g in by_level[level]:
                data = self.build_input(result[g.id], result)
                inputs[g.id] = data
                digests[g.id] = self.input_digest(data)
                result[g.id].metadata["input_digest"] = digests[g.id]  # also on groups left without a summary
                wanted = (only is None or g.id in only) and not stored_only
                if wanted:
                    jobs[g.id] = (digests[g.id], lambda data=data: self.write(data))  # type: ignore[misc]
            held = _held(self.store, self.stage, {gid: d for gid, d in digests.items() if gid not in jobs})
            for gid, fields in held.items():
                result[gid] = _with(result[gid], fields, inputs[gid], digests[gid])
                counts["reused"] += 1
            if jobs:
                done, fresh = await arun_stage(self.store, self.stage, jobs, label=f"{self.label} (level {level})")
                counts["written"] += fresh
                counts["reused"] += len(jobs) - fresh
                for gid, fields in done.items():
                    result[gid] = _with(result[gid], fields, inputs[gid], jobs[gid][0])
        return result, counts


def _held(store: Any, stage: str, digests: Mapping[str, str]) -> dict[str, Any]:
    found = stored_results(store, stage, digests.values())
    return {gid: found[d] for gid, d in digests.items() if d in found}


def _bare(group: Community) -> Community:
    """The group without a summary (its structure and label only)."""
    return Community(
        id=group.id, level=group.level, entity_ids=list(group.entity_ids), parent=group.parent,
        children=list(group.children), metadata={k: v for k, v in group.metadata.items() if k in ("label", "size")},
    )


def _with(group: Community, fields: SummaryFields, data: GroupInput, input_digest: str) -> Community:
    out = group.model_copy()  # the lists stay shared with ``group``, which is a bare working copy
    out.metadata = dict(group.metadata)
    out.title = str(fields.get("title", ""))
    out.summary = str(fields.get("summary", ""))
    out.rating = float(fields["rating"]) if fields.get("rating") is not None else None
    out.findings = list(fields.get("findings", []))
    out.metadata.update(fields.get("metadata", {}))
    out.metadata.update(summary_by=fields.get("by", "model"), input_digest=input_digest, from_children=[c.id for c in data.children])
    return out


__all__ = [
    "GroupInput",
    "GroupSummarizer",
    "Hierarchy",
    "SummaryFields",
    "cluster_hierarchy",
    "community_key",
    "has_summary",
    "prune_groups",
    "recluster_hierarchy",
    "update_collapsed",
]
