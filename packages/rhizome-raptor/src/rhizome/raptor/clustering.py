"""RAPTOR's clustering of one layer: soft Gaussian-mixture clusters in a UMAP reduction.

For the nodes of a layer (their embeddings and token counts):

0. **parts** (our choice, for scale): a layer of more than ``partition_nodes`` nodes is cut in
   two by 2-means of the unit vectors, and each half again while it is larger; steps 1 to 3 run
   in each part on its own, so no UMAP or mixture ever sees more than that many nodes and a
   layer costs time linear in its nodes (a layer at most that large is clustered whole);
1. **global**: UMAP to ``reduction_dimension`` dimensions with the cosine metric and
   √(n − 1) neighbours (PCA for sets of fewer than ``umap_min_nodes``); a Gaussian mixture whose number of components minimises the BIC
   (1 to ``max_clusters`` − 1; the search stops once ``bic_patience`` candidates in a row have not
   lowered it); every node joins each component whose probability for it
   exceeds ``membership_threshold`` (soft clustering: a node may be in several clusters);
2. **local**: each global cluster of more than ``reduction_dimension`` + 1 nodes is reduced
   again on its own (UMAP, ``local_neighbors`` neighbours) and split the same way;
3. **length**: a cluster whose nodes hold more than the token limit is clustered again, the
   whole procedure on its nodes alone, as long as that splits it (a set the mixtures keep
   whole stays as it is: no endless recursion).

umap-learn and scikit-learn are imported on first use (numba compiles UMAP's functions then).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np


def _one_thread() -> Any:
    """Native thread pools limited to one thread. scikit-learn's k-means initialisation of the
    mixtures, left to OpenMP, spends many times its work waiting for threads on a busy
    two-core machine (75x slower there); UMAP runs on one thread anyway once its random state
    is fixed."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1)


@dataclass(frozen=True)
class ClusterSettings:
    """The clustering settings of :class:`~rhizome.raptor.config.RaptorConfig`."""

    reduction_dimension: int = 10
    local_neighbors: int = 10
    max_clusters: int = 50
    bic_sample: int = 2000
    membership_threshold: float = 0.1
    seed: int = 224
    umap_min_nodes: int = 50
    bic_patience: int = 10
    partition_nodes: int = 2000

    @classmethod
    def of(cls, config: Any) -> ClusterSettings:
        return cls(**{name: getattr(config, name) for name in cls.__dataclass_fields__})


def reduce(vectors: np.ndarray, dimension: int, neighbours: int, seed: int, umap_min_nodes: int = 0) -> np.ndarray:
    """``vectors`` reduced to ``dimension`` dimensions (at most n − 2) by UMAP with the cosine
    metric and ``neighbours`` neighbours, or, for fewer than ``umap_min_nodes`` vectors, by PCA
    of the unit vectors; vectors with no more dimensions than that are returned as they are."""
    n, width = vectors.shape
    if width <= dimension:
        return vectors
    if n < umap_min_nodes:
        from sklearn.decomposition import PCA

        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return np.asarray(PCA(n_components=min(dimension, n - 2), random_state=seed).fit_transform(unit), dtype=np.float64)
    with warnings.catch_warnings(), _one_thread():
        warnings.simplefilter("ignore")  # a fixed random_state turns off UMAP's threads, and says so
        from umap import UMAP

        model = UMAP(n_neighbors=max(2, min(neighbours, n - 1)), n_components=min(dimension, n - 2), metric="cosine", random_state=seed)
        return np.asarray(model.fit_transform(vectors), dtype=np.float64)


def mixture_probabilities(points: np.ndarray, settings: ClusterSettings) -> np.ndarray:
    """Membership probabilities (nodes × components) of the Gaussian mixture whose number of
    components has the lowest BIC among 1 to min(``max_clusters``, n) − 1, in increasing order
    until ``bic_patience`` candidates in a row have not lowered it (0: all of them). The
    candidates are fitted on at most ``bic_sample`` nodes; the chosen one on all of them."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    n = len(points)
    if n < 3:
        return np.ones((n, 1))
    sample = points
    if n > settings.bic_sample:
        rows = np.random.default_rng(settings.seed).choice(n, settings.bic_sample, replace=False)
        sample = points[np.sort(rows)]
    best, best_bic, stale = 1, math.inf, 0
    with _one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # candidates with more components than distinct nodes
        for components in range(1, min(settings.max_clusters, len(sample))):
            bic = GaussianMixture(components, random_state=settings.seed).fit(sample).bic(sample)
            if bic < best_bic:
                best, best_bic, stale = components, bic, 0
            else:
                stale += 1
                if stale == settings.bic_patience:
                    break
        if best == 1:
            return np.ones((n, 1))
        return GaussianMixture(best, random_state=settings.seed).fit(points).predict_proba(points)


def soft_clusters(probabilities: np.ndarray, threshold: float) -> list[np.ndarray]:
    """Row indices of each component: the rows whose probability for it exceeds ``threshold``,
    plus the rows for which it is the most probable (so every row is in a cluster). Empty
    components are left out."""
    members = probabilities > threshold
    members[np.arange(len(probabilities)), probabilities.argmax(axis=1)] = True
    return [np.flatnonzero(column) for column in members.T if column.any()]


def partition(vectors: np.ndarray, most: int, seed: int) -> list[np.ndarray]:
    """Row indices of parts of at most ``most`` rows (step 0 of the module docstring): the
    rows split in two by 2-means of their unit vectors, and each part again while it is
    larger. One part, all rows, when there are at most ``most``."""
    todo, parts = [np.arange(len(vectors))], []
    if len(vectors) <= most:
        return todo
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    while todo:
        rows = todo.pop()
        if len(rows) <= most:
            parts.append(rows)
            continue
        with _one_thread(), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # one distinct vector: handled below
            side = KMeans(2, n_init=1, random_state=seed).fit_predict(unit[rows]).astype(bool)
        if side.all() or not side.any():  # identical vectors: halve them as they come
            side = np.arange(len(rows)) >= len(rows) // 2
        todo += [rows[side], rows[~side]]
    return parts


def _split(vectors: np.ndarray, settings: ClusterSettings, *, again: bool = False) -> list[np.ndarray]:
    """Steps 1 and 2 of the module docstring. A set of at most ``reduction_dimension`` + 1
    nodes is one cluster, unless it is clustered ``again`` for its length (then the global
    step runs on it, reducing to at most n − 2 dimensions, as in the reference)."""
    n, small = len(vectors), settings.reduction_dimension + 1
    if n < 3 or (n <= small and not again):
        return [np.arange(n)]
    reduced = reduce(vectors, settings.reduction_dimension, int(math.sqrt(n - 1)), settings.seed, settings.umap_min_nodes)
    out: list[np.ndarray] = []
    for group in soft_clusters(mixture_probabilities(reduced, settings), settings.membership_threshold):
        if len(group) <= small:
            out.append(group)
            continue
        local = reduce(vectors[group], settings.reduction_dimension, settings.local_neighbors, settings.seed, settings.umap_min_nodes)
        out += [group[part] for part in soft_clusters(mixture_probabilities(local, settings), settings.membership_threshold)]
    return out


def cluster(vectors: np.ndarray, tokens: np.ndarray, limit: int, settings: ClusterSettings) -> list[list[int]]:
    """The clusters of one layer as lists of row indices (see the module docstring): soft, so a
    row may be in several; every row is in at least one; no two clusters are equal."""
    vectors, tokens = np.asarray(vectors, dtype=np.float64), np.asarray(tokens)
    out: list[list[int]] = []
    for rows in partition(vectors, settings.partition_nodes, settings.seed):
        out += [[int(rows[i]) for i in members] for members in _cluster(vectors[rows], tokens[rows], limit, settings)]
    return out


def _cluster(vectors: np.ndarray, tokens: np.ndarray, limit: int, settings: ClusterSettings, *, again: bool = False) -> list[list[int]]:
    out: list[list[int]] = []
    n = len(vectors)
    for group in _split(vectors, settings, again=again):
        # clustering the whole set again would repeat this very call: the guard against endless recursion
        repeat = len(group) == n and (again or n > settings.reduction_dimension + 1)
        if len(group) > 1 and int(tokens[group].sum()) > limit and not repeat:
            parts = _cluster(vectors[group], tokens[group], limit, settings, again=True)
            if all(len(part) < len(group) for part in parts):
                out += [[int(group[i]) for i in part] for part in parts]
                continue
        out.append([int(i) for i in group])
    return [list(members) for members in dict.fromkeys(tuple(m) for m in out)]


__all__ = ["ClusterSettings", "cluster", "mixture_probabilities", "partition", "reduce", "soft_clusters"]
