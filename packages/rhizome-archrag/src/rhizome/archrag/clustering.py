"""One round of ArchRAG's attributed clustering (Algorithm 1, lines 3–9), without the model.

A round takes the nodes of one layer (entities, or the communities of the round before) with
their unit embeddings and the edges between them, and returns a partition of the nodes:

1. **Augment** (:func:`augment`): every existing edge is weighted by the cosine similarity of its
   endpoints (clipped at :data:`MIN_WEIGHT`, so a structural edge is never lost); then each node
   gains similarity edges to nodes it is not linked to, best first, while their cosine exceeds
   the ``percentile`` of the existing edges' weights, at most ``K`` per node where ``K`` is the
   layer's average degree over its non-isolated nodes (the paper: K = average degree; the
   authors' code: the 0.8 percentile threshold and ⌊1.5·K⌋ + 1 candidates per node).
2. **Cluster** (:func:`partition`): weighted Leiden, taking the leaves of the kernel's
   hierarchical Leiden so no community exceeds ``max_cluster_size`` unless Leiden cannot split it
   (the authors' ``hierarchical_leiden(max_cluster_size=15)``); or weighted spectral clustering
   into ⌈n / max_cluster_size⌉ groups (the paper's alternative). Isolated nodes are singletons.
   After an insert, :func:`repartition` updates the layer's previous partition instead: bounded
   Leiden iterations in which only the nodes the insert touched (and new nodes, and those of a
   community that lost a member) may move, so the other communities, and their reports, stay.
3. **Next layer** (:func:`community_edges`): communities are linked when an original edge
   crosses between them, weighted by how many do.

:func:`stop_reason` is the stopping condition T. The index runs the rounds, writes a report per
community with the model (or offline) and embeds it between them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeAlias

import networkx as nx
import numpy as np

from rhizome.core.errors import ConfigurationError
from rhizome.core.graph import (
    WeightedEdges,
    hierarchical_leiden,
    knn_similarity_arrays,
    leiden_update,
)
from rhizome.core.graph.similarity import unit_rows

MIN_WEIGHT = 0.01
"""Weight of an existing edge whose endpoints' cosine is at most this: Leiden ignores zero
weights, and the edge is a stated relation, so it keeps a small weight rather than vanish."""

Edges = Mapping[tuple[str, str], float]
Layer: TypeAlias = "nx.Graph | WeightedEdges"
"""A layer's graph: as :func:`augment` builds it, or any weighted networkx graph."""


def average_degree(ids: Sequence[str], edges: Edges) -> float:
    """Average degree of the nodes that have an edge (0 when none has)."""
    degree: dict[str, int] = defaultdict(int)
    for a, b in edges:
        if a != b:
            degree[a] += 1
            degree[b] += 1
    return sum(degree.values()) / len(degree) if degree else 0.0


def augment(
    ids: Sequence[str], vectors: np.ndarray, edges: Edges, *, percentile: float = 0.8, k: int | None = None
) -> WeightedEdges:
    """The layer's graph with cosine weights and KNN similarity edges (see the module docstring),
    held as arrays (the kernel's :class:`~rhizome.core.graph.WeightedEdges`: a layer of a large
    corpus has millions of edges, which a networkx graph would hold as Python dicts). ``k``:
    similarity edges per node (default: the average degree, at least 1). The similarity edges
    are those between two nodes ``edges`` does not link."""
    if not 0.0 <= percentile <= 1.0:
        raise ConfigurationError(f"knn_percentile must be between 0 and 1, got {percentile!r}")
    units = unit_rows(vectors)
    row = {key: i for i, key in enumerate(ids)}
    n = len(ids)
    # the layer's edges as positions in ids (a pair listed both ways is one edge), each weighted
    # by its ends' cosine; arrays, not a Python object per edge: a layer may have millions
    held = [(a, b) for a, b in edges if a != b and a in row and b in row]
    src = np.fromiter((row[a] for a, _ in held), dtype=np.int64, count=len(held))
    dst = np.fromiter((row[b] for _, b in held), dtype=np.int64, count=len(held))
    weights = np.fromiter((max(float(units[i] @ units[j]), MIN_WEIGHT) for i, j in zip(src.tolist(), dst.tolist(), strict=True)),
                          dtype=np.float64, count=len(held))
    del held
    keys, first = np.unique(np.minimum(src, dst) * n + np.maximum(src, dst), return_index=True)
    src, dst, kept = src[first], dst[first], weights[first]
    new_src = new_dst = np.empty(0, dtype=np.int64)
    new_weight = np.empty(0, dtype=np.float64)
    per_node = k if k is not None else max(1, round(average_degree(ids, edges)))
    live = np.flatnonzero(np.linalg.norm(units, axis=1) > 0.5)  # (a zero vector has no neighbours)
    if per_node >= 1 and live.size >= 2:
        every = live.size == n  # (the usual case: no copy of the layer's vectors)
        # arrays of positions, not a Python tuple per pair: a large layer has tens of millions
        low, high, score = knn_similarity_arrays(units if every else units[live],
                                                 k=int(math.floor(1.5 * per_node)) + 1, threshold=-1.0)
        if not every:
            low, high = live[low], live[high]
        rank = np.empty(n, dtype=np.int64)
        rank[sorted(range(n), key=ids.__getitem__)] = np.arange(n, dtype=np.int64)
        swap = rank[low] > rank[high]  # each pair as (earlier id, later id)
        u_at, v_at = np.where(swap, high, low), np.where(swap, low, high)
        del low, high, swap
        linked = np.isin(np.minimum(u_at, v_at) * n + np.maximum(u_at, v_at), keys)
        score64 = score.astype(np.float64)
        pool = weights if weights.size else score64[~linked]
        threshold = float(np.quantile(pool, percentile)) if pool.size else 1.0
        # best first (ties by the ids); the pairs are distinct, so only the layer's own edges
        # can hold one already
        candidate = np.flatnonzero((score64 > threshold) & ~linked)
        candidate = candidate[np.lexsort((rank[v_at[candidate]], rank[u_at[candidate]], -score[candidate]))]
        added = [0] * n
        chosen: list[int] = []
        for i, u, v in zip(candidate.tolist(), u_at[candidate].tolist(), v_at[candidate].tolist(), strict=True):
            if added[u] >= per_node and added[v] >= per_node:
                continue
            chosen.append(i)
            added[u] += 1
            added[v] += 1
        new_src, new_dst = u_at[chosen], v_at[chosen]
        new_weight = np.maximum(score64[chosen], MIN_WEIGHT)
    return WeightedEdges.from_positions(ids, np.concatenate([src, new_src]), np.concatenate([dst, new_dst]),
                                        np.concatenate([kept, new_weight]))



def partition(graph: Layer, *, method: str = "leiden", max_cluster_size: int = 15, seed: int = 0xDEADBEEF) -> list[list[str]]:
    """The nodes of ``graph`` in communities (each a sorted member list; communities ordered by
    their first member): every node in exactly one."""
    graph = _arrays(graph)
    if graph.number_of_nodes() == 0:
        return []
    if method == "leiden":
        groups = _leiden_leaves(graph, max_cluster_size, seed)
    elif method == "spectral":
        groups = _spectral(graph, max_cluster_size, seed)
    else:
        raise ConfigurationError(f"clustering must be 'leiden' or 'spectral', got {method!r}")
    return sorted((sorted(g) for g in groups if g), key=lambda g: g[0])


MOVABLE_SHARE = 0.5
""":func:`repartition` gives up (the layer is partitioned whole) when more than this share of
its nodes may move."""


def repartition(
    graph: Layer, previous: Mapping[str, Sequence[str]], moved: set[str], *, max_cluster_size: int = 15, seed: int = 0xDEADBEEF
) -> list[list[str]] | None:
    """The nodes of ``graph`` in communities, updated from ``previous`` (community id → its
    members) by bounded Leiden iterations (the kernel's ``leiden_update``) in which only these
    nodes may change community: the ``moved`` ones, those in no previous community, and the
    members of a previous community that lost one; a community grown past ``max_cluster_size``
    is split as :func:`partition` splits. ``None`` when more than :data:`MOVABLE_SHARE` of the
    nodes may move (partition the layer whole instead). Same form as :func:`partition`."""
    graph = _arrays(graph)
    nodes = {str(n) for n in graph.nodes}
    initial: dict[Hashable, str] = {}
    movable: set[Hashable] = {n for n in moved if n in nodes}
    for cid, members in previous.items():
        present = [m for m in members if m in nodes]
        if len(present) < len(members):
            movable.update(present)
        initial.update(dict.fromkeys(present, cid))
    movable |= nodes - initial.keys()
    if len(movable) > MOVABLE_SHARE * len(nodes):
        return None
    membership, _ = leiden_update(graph, initial, movable=movable, seed=seed, weight="weight")
    grouped: dict[Any, list[str]] = defaultdict(list)
    for node in nodes:
        grouped[membership.get(node, node)].append(node)  # a node with no edge is alone
    groups: list[list[str]] = []
    for members in grouped.values():
        too_big = len(members) > max_cluster_size
        groups += _leiden_leaves(graph.subgraph(members), max_cluster_size, seed) if too_big else [members]
    return sorted((sorted(g) for g in groups if g), key=lambda g: g[0])


def _arrays(graph: Layer) -> WeightedEdges:
    return graph if isinstance(graph, WeightedEdges) else WeightedEdges.from_networkx(graph)


def _leiden_leaves(graph: WeightedEdges, max_cluster_size: int, seed: int) -> list[list[str]]:
    hierarchy = hierarchical_leiden(graph, max_cluster_size=max_cluster_size, seed=seed, weight="weight")
    placed: set[str] = set()
    groups = []
    for community in hierarchy.leaves():
        members = [str(n) for n in community.nodes]
        placed.update(members)
        groups.append(members)
    groups += [[str(n)] for n in graph.nodes if str(n) not in placed]
    return groups


def _spectral(graph: WeightedEdges, max_cluster_size: int, seed: int) -> list[list[str]]:
    """Weighted spectral clustering: the smallest eigenvectors of the normalised Laplacian, rows
    normalised, grouped by seeded k-means into ⌈n / max_cluster_size⌉ clusters."""
    nodes = [str(n) for n in graph.nodes]  # node order: sorted, as the matrix rows
    n = len(nodes)
    clusters = max(1, math.ceil(n / max_cluster_size))
    if clusters == 1 or n <= 2:
        return [nodes]
    import scipy.sparse as sp
    from scipy.sparse.linalg import eigsh

    e = graph.edges
    both = e.src != e.dst
    rows, cols = np.concatenate([e.src, e.dst[both]]), np.concatenate([e.dst, e.src[both]])
    matrix = sp.csr_array((np.concatenate([e.weight, e.weight[both]]), (rows, cols)), shape=(n, n))
    degree = np.asarray(matrix.sum(axis=1)).ravel()
    inv = np.where(degree > 0, 1.0 / np.sqrt(np.where(degree > 0, degree, 1.0)), 0.0)
    norm = sp.diags(inv) @ matrix @ sp.diags(inv)  # largest of D^-1/2 A D^-1/2 = smallest of the Laplacian
    dims = min(clusters, n - 1)
    if n <= 400:
        values, vectors = np.linalg.eigh(norm.toarray())
        embedding = vectors[:, np.argsort(-values)[:dims]]
    else:
        start = np.random.default_rng(seed).standard_normal(n)
        values, vectors = eigsh(norm, k=dims, which="LA", v0=start)
        embedding = vectors[:, np.argsort(-values)]
    embedding = embedding / np.maximum(np.linalg.norm(embedding, axis=1, keepdims=True), 1e-12)
    labels = kmeans(embedding, clusters, seed=seed)
    groups: dict[int, list[str]] = defaultdict(list)
    for node, label in zip(nodes, labels):
        groups[int(label)].append(node)
    return list(groups.values())


def kmeans(points: np.ndarray, k: int, *, seed: int = 0, iterations: int = 50) -> np.ndarray:
    """Seeded Lloyd's k-means with k-means++ starts: a label per row."""
    rng = np.random.default_rng(seed % (2**63))
    n = len(points)
    k = min(k, n)
    centres = [points[rng.integers(n)]]
    for _ in range(1, k):
        dist = np.min(((points[:, None, :] - np.asarray(centres)[None]) ** 2).sum(-1), axis=1)
        total = dist.sum()
        centres.append(points[rng.choice(n, p=dist / total)] if total > 0 else points[rng.integers(n)])
    centre = np.asarray(centres)
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iterations):
        fresh = np.argmin(((points[:, None, :] - centre[None]) ** 2).sum(-1), axis=1)
        if _ and np.array_equal(fresh, labels):
            break
        labels = fresh
        for c in range(k):
            members = points[labels == c]
            if len(members):
                centre[c] = members.mean(axis=0)
    return labels


def community_edges(groups: Sequence[Sequence[str]], keys: Sequence[str], edges: Edges) -> dict[tuple[str, str], float]:
    """The next layer's edges: communities ``keys[i]`` (holding ``groups[i]``) linked when an
    edge of ``edges`` crosses between them, weighted by the number of crossing edges."""
    owner = {member: key for key, group in zip(keys, groups) for member in group}
    out: dict[tuple[str, str], float] = defaultdict(float)
    for a, b in edges:
        ca, cb = owner.get(a), owner.get(b)
        if ca is None or cb is None or ca == cb:
            continue
        out[(min(ca, cb), max(ca, cb))] += 1.0
    return dict(out)


def stop_reason(level: int, nodes: int, communities: int, *, max_layers: int, min_communities: int, min_shrink: float) -> str | None:
    """Why clustering stops after round ``level`` (which turned ``nodes`` nodes into
    ``communities``), or ``None`` to go on. ``"no-shrink"`` means the round itself is dropped:
    its communities are (nearly) its nodes again."""
    if communities >= min_shrink * nodes:
        return "no-shrink"
    if communities < min_communities:
        return "few-communities"
    if level >= max_layers:
        return "max-layers"
    return None


__all__ = ["MIN_WEIGHT", "augment", "average_degree", "community_edges", "kmeans", "partition", "stop_reason"]
