"""``RaptorIndex``: RAPTOR (Sarthi et al., 2024) on the Rhizome kernel.

The tree. Leaves are the chunks (100 tokens, sentence-aware, no overlap) with their vectors.
Each layer above is built from the one below: its nodes are clustered
(:mod:`rhizome.raptor.clustering`: UMAP, Gaussian mixtures chosen by BIC, soft membership,
over-long clusters clustered again), each cluster of two or more nodes gets one summary from
the chat model (or, offline, the kernel's extractive writer), and the summaries are embedded; a
cluster of one node gets none (it would restate its node) and the node is carried up into the
next layer as itself. Building stops at a layer of at most ``reduction_dimension`` + 1 nodes,
at one whose clusters are all of one node, or after ``max_layers`` layers. The summary
nodes are a kernel :class:`~rhizome.core.index.hierarchy.Hierarchy` (``raptor_tree``, a vector
collection per layer): ``level`` is the layer (1 = just above the leaves), ``children`` the
nodes of the layer below that the summary was written from (chunk ids at layer 1; at higher
layers summaries, or leaves and summaries carried up from lower), and
``entity_ids`` every leaf under the node, which its hits cite. Soft clustering makes the tree a
DAG: a node may be the child of several nodes (``parent`` stays empty; the children lists say
it all). Summaries are a resumable stage keyed by their input, written concurrently per layer.

Changes. An insert embeds the new leaves; then, while the leaves already in the tree outnumber
the new ones, each new leaf joins the layer-1 cluster whose centroid is nearest, the clusters
that changed are split when they outgrow the token limit, and only the summaries whose input
changed are written again, layer by layer up to the root (a node without a parent joins the
nearest cluster of the next layer the same way). Otherwise — the first build, or more new
leaves than old — the tree is built from scratch, and the stage results still answer every
cluster whose input is unchanged. A delete (or a replaced document) blanks, in its own
transaction, the summary and vector of every node above a removed leaf, so no search reads
them again; the next step writes them anew from what is left. :meth:`RaptorIndex.rebuild`
re-clusters the whole tree on demand.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from rhizome.core.aio import run_sync
from rhizome.core.graph.summarize import extractive_summary
from rhizome.core.index.base import ModeInfo, Stats, VectorBatch
from rhizome.core.index.hierarchy import (
    GroupInput,
    GroupSummarizer,
    Hierarchy,
    SummaryFields,
    community_key,
)
from rhizome.core.index.stages import prune_stage
from rhizome.core.index.writers import GroupWriter
from rhizome.core.naive import VectorIndex
from rhizome.core.progress import phase
from rhizome.core.retrieval.contract import pack
from rhizome.core.retrieval.passages import document_passages, joined, passages
from rhizome.core.store.storage import Connection
from rhizome.core.text import count_tokens, trimmed_sentences, truncate_tokens
from rhizome.core.types import Community, GraphContents
from rhizome.raptor.clustering import ClusterSettings, cluster
from rhizome.raptor.config import RaptorConfig
from rhizome.raptor.prompts import SUMMARY_SYSTEM, ClusterSummary, summary_prompt

STAGE = "raptor.summary"


def cap(text: str, max_tokens: int) -> str:
    """``text`` cut to its sentences that fit in ``max_tokens`` (the first one cut if it alone is longer)."""
    if count_tokens(text) <= max_tokens:
        return text
    sentences = [text[s:e] for s, e in trimmed_sentences(text)]
    return " ".join(t for _, t in pack(sentences, max_tokens, str, overhead=1)) or truncate_tokens(text, max_tokens)


class SummaryWriter(GroupWriter):
    """Writes one cluster's summary with the chat model, or extractively when there is none."""

    system = SUMMARY_SYSTEM
    schema = ClusterSummary
    reply_margin = 60

    def __init__(self, llm: Any, max_tokens: int) -> None:
        super().__init__(llm, max_tokens=max_tokens)

    def prompt(self, data: GroupInput | None) -> str:
        return summary_prompt("" if data is None else data.text, self.max_tokens)

    def offline(self, data: GroupInput, *context: Any) -> SummaryFields:
        return {"summary": extractive_summary(data.extra["texts"], self.max_tokens), "by": "offline"}

    def fields(self, answer: ClusterSummary) -> SummaryFields:
        return {"summary": cap(answer.summary.strip(), self.max_tokens), "by": "model"}


@dataclass
class _Layer:
    """The nodes of one layer, as the layer above is built from them."""

    ids: list[str]
    vectors: np.ndarray
    tokens: np.ndarray
    texts: dict[str, str]
    leaves: dict[str, list[str]]
    """The leaves under each node (a leaf: itself)."""
    row: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.row = {key: i for i, key in enumerate(self.ids)}

    def take(self, keys: list[str]) -> _Layer:
        """The nodes ``keys`` of this layer (carried up into the next one)."""
        rows = [self.row[k] for k in keys]
        return _Layer(list(keys), self.vectors[rows], self.tokens[rows], {k: self.texts[k] for k in keys}, {k: self.leaves[k] for k in keys})

    def plus(self, other: _Layer) -> _Layer:
        if not other.ids:
            return self
        if not self.ids:
            return other
        return _Layer(self.ids + other.ids, np.concatenate([self.vectors, other.vectors]), np.concatenate([self.tokens, other.tokens]),
                      {**self.texts, **other.texts}, {**self.leaves, **other.leaves})


def _stale(group: Community) -> bool:
    """A node whose summary was blanked by a delete, to be written again."""
    return "summary_by" not in group.metadata


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


class RaptorIndex(VectorIndex):
    """A RAPTOR tree over the chunks, searched as a collapsed tree (default), by tree traversal,
    or as plain dense retrieval over the leaves (``naive``).

    The leaves are a :class:`~rhizome.core.naive.VectorIndex` (chunks and their vectors); the
    tree is built on them. Settings: :class:`~rhizome.raptor.config.RaptorConfig` (keyword
    arguments or ``config=``); the other parameters are
    :class:`~rhizome.core.index.base.BaseIndex`'s. ``llm`` writes the cluster summaries; without one
    they are extractive.
    """

    method: ClassVar[str] = "raptor"
    modes: ClassVar[Mapping[str, ModeInfo]] = {
        "collapsed": ModeInfo("the passages and cluster summaries of every tree layer nearest the query, under a token budget (RAPTOR's collapsed tree); for questions that need a passage or the gist of several", ("specific", "global"), retriever="rhizome.raptor.retrieval:CollapsedRetriever"),
        "traversal": ModeInfo("down the summary tree from its top layer, choosing the nearest nodes at each layer (RAPTOR's tree traversal); for broad, thematic questions", ("global",), retriever="rhizome.raptor.retrieval:TraversalRetriever"),
        "passages": ModeInfo("the passages (runs of a document's leaves up to 1,200 tokens) ranked by their own embedding and their best leaf's together; for questions a passage answers", ("specific",), retriever="rhizome.core.retrieval.passages:PassageRetriever"),
        "naive": ModeInfo("the passages (tree leaves) whose embeddings are nearest the query (no tree)", ("specific",), retriever="rhizome.core.naive:VectorRetriever"),
    }
    uses_llm: ClassVar[bool] = True
    PASSAGE_COLLECTION: ClassVar[str] = "raptor_passages"
    """Vectors of the passages (runs of a document's consecutive leaves) of the ``passages`` mode."""
    config_class = RaptorConfig
    config: RaptorConfig
    llm_per_document: ClassVar[bool] = False

    def _setup(self) -> None:
        self.tree = Hierarchy(self.store, "raptor_tree")
        self.writer = SummaryWriter(self.llm, self.config.summary_max_tokens)
        self.settings = ClusterSettings.of(self.config)

    def graph_contents(self) -> GraphContents:
        """The tree's summary nodes as communities: level, children (the nodes each was written
        from), and as members the leaves (chunk ids) each covers; for export and the demo."""
        return GraphContents(communities=list(self.tree.all().values()))

    # -- BaseIndex hooks (the leaves are embedded and stored as VectorIndex does) ----------------
    def _remove_document(self, db: Connection, document_id: str) -> int:
        removed = set(self.store.chunk_ids([document_id]))
        above = [g for g in self.tree.all().values() if not removed.isdisjoint(g.entity_ids)]
        if above:  # what they say was written from the removed leaves: gone until rewritten
            for level in {g.level for g in above}:
                self.store.delete_vectors(db, self.tree.collection(level), [g.id for g in above if g.level == level])
            self.tree.put(db, [g.model_copy(update={"summary": "", "metadata": {}}) for g in above])
        if self.store.has_collection(self.PASSAGE_COLLECTION):
            self.store.delete_vectors(db, self.PASSAGE_COLLECTION, document_passages(self.store, document_id, self.config.passage_tokens))
        return super()._remove_document(db, document_id)

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        await self._update(stats, rebuild=False)

    async def arebuild(self) -> Stats:
        """Cluster the whole tree again (after many inserts have grown it one leaf at a time);
        summaries whose input is unchanged come from the stage results."""
        stats: Stats = {}
        async with self._writing():
            await self._update(stats, rebuild=True)
            self.store.save_snapshots()
        return stats

    def rebuild(self) -> Stats:
        return run_sync(self.arebuild())

    # -- the tree --------------------------------------------------------------------------------
    def cluster_token_limit(self) -> int:
        """Tokens above which a cluster is clustered again: ``max_cluster_tokens``, or what one
        summary prompt can hold when that is less."""
        return max(self.config.chunk_size, self.writer.input_budget(self.config.max_cluster_tokens))

    def _leaves(self) -> _Layer:
        ids = self.store.chunk_ids()
        chunks = self.store.chunks(ids)
        vectors = self.store.collection(self.CHUNK_COLLECTION).vectors(ids) if ids else np.zeros((0, 1), np.float32)
        tokens = np.array([chunks[c].n_tokens for c in ids], dtype=np.int64)
        return _Layer(ids, vectors, tokens, {c: chunks[c].text for c in ids}, {c: [c] for c in ids})

    async def _update(self, stats: Stats, *, rebuild: bool) -> None:
        old = self.tree.all()
        leaves = self._leaves()
        placed = {c for g in old.values() for c in g.children}  # a leaf may be carried past layer 1
        new = [c for c in leaves.ids if c not in placed]
        small = self.config.reduction_dimension + 1
        batches: list[VectorBatch] = []
        counts = {"written": 0, "reused": 0}
        if rebuild or not placed or len(leaves.ids) <= small or len(new) > len(leaves.ids) - len(new):
            tree = await self._grow(1, leaves, {}, batches, counts)
            stats["tree_built"] = "full"
        else:
            tree = await self._place(old, leaves, batches, counts)
            stats["tree_built"] = "incremental"
        passage_vectors, stale = await self._passages()
        batches.append(passage_vectors)
        with self.store.transaction() as db:
            if stale:
                self.store.delete_vectors(db, self.PASSAGE_COLLECTION, stale)
            self.tree.delete(db, [g for key, g in old.items() if key not in tree])
            self.tree.put(db, [g for key, g in tree.items() if old.get(key) != g])
            for batch in batches:
                batch.write(db, self.store)
            prune_stage(db, STAGE, (g.metadata.get("input_digest", "") for g in tree.values()))
        levels = [g.level for g in tree.values()]
        stats.update(
            leaves=len(leaves.ids), layers=max(levels, default=0), summary_nodes=len(tree),
            summaries_written=counts["written"], summaries_reused=counts["reused"],
        )

    async def _passages(self) -> tuple[VectorBatch, list[str]]:
        """The vectors of the passages of the ``passages`` mode whose text changed, and the
        stored passages that are gone."""
        chunks = self.store.chunks(self.store.chunk_ids())
        texts = {key: joined(run) for key, run in passages(chunks.values(), self.config.passage_tokens)}
        stale = sorted(set(self.store.vector_ids(self.PASSAGE_COLLECTION)) - set(texts))
        return await self.embed_changed(self.PASSAGE_COLLECTION, texts, what="passages"), stale

    async def _grow(self, level: int, below: _Layer, tree: dict[str, Community], batches: list[VectorBatch], counts: dict[str, int]) -> dict[str, Community]:
        """Layers from ``level`` up, built from scratch over ``below``, added to ``tree``. A
        cluster of one node gets no summary (it would restate its node): the node is carried
        up into the next layer as itself. A layer whose clusters are all of one node is the top."""
        while level <= self.config.max_layers and len(below.ids) > self.config.reduction_dimension + 1:
            with phase(f"clustering (level {level})", len(below.ids), "node") as step:
                clusters = await asyncio.to_thread(cluster, below.vectors, below.tokens, self.cluster_token_limit(), self.settings)
                step.advance(len(below.ids))
            groups = [self._group(level, [below.ids[i] for i in members], below) for members in clusters if len(members) > 1]
            if not groups:
                break
            held = {c for g in groups for c in g.children}
            done = await self._summarise(level, groups, below, batches, counts)
            tree.update(done)
            below = await self._layer(level, list(done.values()), batches, below.take([c for c in below.ids if c not in held]))
            level += 1
        return tree

    async def _place(self, old: dict[str, Community], leaves: _Layer, batches: list[VectorBatch], counts: dict[str, int]) -> dict[str, Community]:
        """The tree after an insert or a delete, changed only where the leaves changed (see the
        module docstring). At each layer: the clusters lose the nodes that are gone (one left
        with a single node is dissolved, that node taking its place in the clusters above);
        nodes no cluster holds, here or above, join the cluster with the nearest centroid;
        clusters grown past the token limit are split; what no cluster of the layer holds is
        carried up into the next."""
        tree = {key: g.model_copy(deep=True) for key, g in old.items()}
        below = leaves
        changed = {c for c in leaves.ids if all(c not in g.children for g in old.values())}
        top = max(g.level for g in tree.values())
        for level in range(1, top + 1):
            here = {key: g for key, g in tree.items() if g.level == level}
            dirty = set()
            for key, g in list(here.items()):
                children = [c for c in g.children if c in below.row]
                if not children:  # every node it held is gone
                    del here[key], tree[key]
                    continue
                if children != g.children or _stale(g) or not changed.isdisjoint(children):
                    dirty.add(key)
                g.children = children
            for key, g in list(here.items()):  # a cluster of one node: the node takes its place above
                if len(g.children) == 1:
                    del here[key], tree[key]
                    dirty.discard(key)
                    self._substitute(tree, key, g.children[0])
                    changed.add(g.children[0])
            above = {c for g in tree.values() if g.level > level for c in g.children}
            held = {c for g in here.values() for c in g.children}
            orphans = [c for c in below.ids if c not in held and c not in above]
            if orphans and here:  # new or parentless nodes join the cluster with the nearest centroid
                keys = list(here)
                centroids = _unit(np.stack([_unit(below.vectors[[below.row[c] for c in here[k].children]]).mean(axis=0) for k in keys]))
                nearest = (_unit(below.vectors[[below.row[c] for c in orphans]]) @ centroids.T).argmax(axis=1)
                for node, i in zip(orphans, nearest):
                    here[keys[i]].children.append(node)
                    dirty.add(keys[i])
            for key in sorted(dirty):  # clusters that outgrew the limit are split
                rows = [below.row[c] for c in here[key].children]
                if len(rows) > 1 and int(below.tokens[rows].sum()) > self.cluster_token_limit():
                    parts = await asyncio.to_thread(cluster, below.vectors[rows], below.tokens[rows], self.cluster_token_limit(), self.settings)
                    if len(parts) > 1:
                        del here[key], tree[key]
                        dirty.discard(key)
                        for part in parts:
                            if len(part) > 1:  # a part of one node is carried up, and joins a cluster there
                                group = self._group(level, [below.ids[rows[i]] for i in part], below)
                                here[group.id] = group
                                dirty.add(group.id)
            if not here:  # nothing left at this layer: the layers above go too, and grow again
                tree = {key: g for key, g in tree.items() if g.level < level}
                break
            held = {c for g in here.values() for c in g.children}
            carried = below.take([c for c in below.ids if c not in held])
            for key in here:
                here[key].entity_ids = self._covered(here[key].children, below)
            before = {key: tree[key].summary if key in tree else None for key in here}
            done = await self._summarise(level, [here[key] for key in sorted(dirty) if key in here], below, batches, counts)
            here.update(done)
            tree.update(here)
            changed = {key for key in here if here[key].summary != before.get(key)} | (changed & set(carried.ids))
            below = await self._layer(level, [here[key] for key in sorted(here)], batches, carried)
        return await self._grow(1 + max((g.level for g in tree.values()), default=0), below, tree, batches, counts)

    @staticmethod
    def _substitute(tree: dict[str, Community], key: str, node: str) -> None:
        """``node`` in place of ``key`` among the children of every cluster in ``tree``."""
        for g in tree.values():
            if key in g.children:
                g.children = list(dict.fromkeys(node if c == key else c for c in g.children))

    def _group(self, level: int, children: list[str], below: _Layer) -> Community:
        return Community(id=community_key(level, children), level=level, entity_ids=self._covered(children, below), children=children)

    @staticmethod
    def _covered(children: list[str], below: _Layer) -> list[str]:
        return list(dict.fromkeys(leaf for c in children for leaf in below.leaves[c]))

    async def _summarise(self, level: int, groups: list[Community], below: _Layer, batches: list[VectorBatch], counts: dict[str, int]) -> dict[str, Community]:
        budget = self.writer.input_budget(self.config.max_cluster_tokens)

        def build_input(group: Community, _: Any) -> GroupInput:
            texts = [t for _, t in pack(group.children, budget, lambda c: below.texts[c], overhead=2)]
            return GroupInput(group=group, text="\n\n".join(texts), extra={"texts": texts})

        summarizer = GroupSummarizer(self.store, STAGE, build_input=build_input, write=self.writer.awrite,
                                     identity=self.writer.identity, label="summarising clusters")
        done, n = await summarizer.asummarize(groups)
        counts["written"] += n["written"]
        counts["reused"] += n["reused"]
        for key, group in done.items():
            group.metadata["tokens"] = count_tokens(group.summary)
            done[key] = group
        return done

    async def _layer(self, level: int, groups: list[Community], batches: list[VectorBatch], carried: _Layer) -> _Layer:
        """The nodes of layer ``level`` with their vectors (embedding the summaries that changed):
        its clusters' summaries, then the ``carried`` nodes of lower layers no cluster here holds."""
        texts = {g.id: g.summary for g in groups}
        batch = await self.embed_changed(self.tree.collection(level), texts, what=f"summaries (level {level})")
        batches.append(batch)
        fresh = dict(zip(batch.ids, batch.vectors if batch.ids else []))
        held = [key for key in texts if key not in fresh]
        stored = dict(zip(held, self.store.collection(self.tree.collection(level)).vectors(held))) if held else {}
        ids = list(texts)
        vectors = np.stack([fresh[k] if k in fresh else stored[k] for k in ids]) if ids else np.zeros((0, 1), np.float32)
        tokens = np.array([g.metadata.get("tokens", count_tokens(g.summary)) for g in groups], dtype=np.int64)
        return _Layer(ids, vectors, tokens, texts, {g.id: g.entity_ids for g in groups}).plus(carried)

    # -- reading ---------------------------------------------------------------------------------
__all__ = ["RaptorIndex", "SummaryWriter", "cap"]
