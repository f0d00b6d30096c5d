"""Personalized PageRank on scipy sparse matrices, and its bridge from networkx graphs.

:func:`personalized_pagerank` runs power iteration on a scipy sparse adjacency matrix, as HippoRAG
does to spread query-entity scores over its knowledge graph; :func:`graph_to_csr` and
:func:`pagerank_scores` connect it to networkx graphs. The result is the same for the same input
on the same library versions.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar, cast

import networkx as nx
import numpy as np
import scipy.sparse as sp

from rhizome.core.errors import ConfigurationError, InvalidInputError

try:  # scipy's CSR matrix-vector kernel, the one ``matrix @ vector`` runs
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover - a scipy that moved it: ``@`` instead
    _csr_matvec = None
from rhizome.core.graph._common import NodeId, _check_graph, _check_positive_int, _edge_weight

DEFAULT_PPR_DAMPING = 0.5
"""Probability of following an edge in personalized PageRank; HippoRAG's paper and run scripts
(v1 ``--damping 0.5``, v2 ``damping=0.5``). The teleport probability is ``1 - damping``."""


def graph_to_csr(
    graph: nx.Graph,
    nodes: Sequence[NodeId] | None = None,
    weight: str | None = "weight",
) -> tuple[sp.csr_matrix, list[NodeId]]:
    """The weighted adjacency matrix of ``graph`` as a scipy CSR matrix, rows = edge sources.

    Entry ``[i, j]`` is the weight of the edge from ``nodes[i]`` to ``nodes[j]``. Undirected
    edges appear in both directions (a self-loop once, on the diagonal); directed edges only
    from source to target; parallel multigraph edges are summed. A missing weight attribute
    counts as 1.0 and ``weight=None`` makes every edge 1.0. This matches
    ``networkx.to_scipy_sparse_array``, which ``networkx.pagerank`` uses.

    Args:
        graph: Any networkx graph.
        nodes: Row/column order. Default: the graph's own node order (insertion order). When
            given, it must list distinct nodes of the graph; edges touching other nodes are left
            out (the matrix of the induced subgraph).
        weight: Edge attribute holding the weight, or None for an unweighted graph.

    Returns:
        ``(matrix, nodes)``: an ``n x n`` float64 CSR matrix and the node list its rows follow.

    Raises:
        InvalidInputError: ``graph`` is not a networkx graph, ``nodes`` repeats a node or names
            one not in the graph, or an edge weight is not a finite non-negative number.
    """
    _check_graph(graph)
    if nodes is None:
        order = list(graph.nodes)
    else:
        order = list(nodes)
        missing = [node for node in order if node not in graph]
        if missing:
            raise InvalidInputError(
                f"{len(missing)} of the requested nodes are not in the graph, e.g. "
                f"{missing[0]!r}. Pass only nodes of the graph, or nodes=None for all of them."
            )
        if len(set(order)) != len(order):
            raise InvalidInputError("nodes lists the same node more than once; pass each once.")
    index = {node: i for i, node in enumerate(order)}
    directed = graph.is_directed()
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    edge_source = graph.edges(order, data=True) if nodes is not None else graph.edges(data=True)
    for u, v, data in edge_source:
        i, j = index.get(u), index.get(v)
        if i is None or j is None:
            continue
        w = _edge_weight(data, weight, u, v)
        rows.append(i)
        cols.append(j)
        vals.append(w)
        if not directed and i != j:
            rows.append(j)
            cols.append(i)
            vals.append(w)
    n = len(order)
    matrix = sp.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    return matrix, order


def _check_damping(damping: float) -> float:
    try:
        value = float(damping)
    except (TypeError, ValueError):
        raise ConfigurationError(f"damping must be a number, got {damping!r}.") from None
    if not 0.0 <= value < 1.0:
        raise ConfigurationError(
            f"damping must be in [0, 1), got {damping!r}. It is the probability of following an "
            f"edge (HippoRAG uses {DEFAULT_PPR_DAMPING}; classic PageRank 0.85)."
        )
    return value


def _as_transition_source(matrix: Any) -> sp.csr_matrix:
    """Validate an adjacency matrix and return it as float64 CSR."""
    if sp.issparse(matrix):
        csr = sp.csr_matrix(matrix, dtype=np.float64)
    else:
        try:
            dense = np.asarray(matrix, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"matrix must be a scipy sparse matrix or a 2-D numeric array, got "
                f"{type(matrix).__name__}."
            ) from None
        if dense.ndim != 2:
            raise InvalidInputError(f"matrix must be 2-D, got shape {dense.shape}.")
        csr = sp.csr_matrix(dense)
    if csr.shape[0] != csr.shape[1]:
        raise InvalidInputError(f"matrix must be square (n x n adjacency), got shape {csr.shape}.")
    csr.sum_duplicates()
    if csr.data.size and (not np.all(np.isfinite(csr.data)) or csr.data.min() < 0):
        raise InvalidInputError(
            "matrix has negative or non-finite entries; PageRank needs finite non-negative "
            "edge weights."
        )
    return csr


def _normalised_personalization(personalization: Any, n: int) -> np.ndarray:
    try:
        p = np.asarray(personalization, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(
            "personalization must be a 1-D array of numbers, one per node."
        ) from None
    if p.shape != (n,):
        raise InvalidInputError(
            f"personalization must have shape ({n},) to match the {n} x {n} matrix, got {p.shape}."
        )
    if not np.all(np.isfinite(p)) or (p.size and p.min() < 0):
        raise InvalidInputError("personalization must hold finite, non-negative numbers.")
    total = float(p.sum())
    if total <= 0:
        raise InvalidInputError(
            "personalization is all zeros, so the walk has nowhere to restart. Give at least "
            "one seed node a positive weight (e.g. the nodes linked to the query)."
        )
    return p / total


class Transition:
    """The random walk of a weighted graph, prepared once for many personalized PageRank runs
    (pass it to :func:`personalized_pagerank` in place of the adjacency matrix)."""

    def __init__(self, matrix_t: sp.csr_matrix, dangling: np.ndarray) -> None:
        self.matrix_t = matrix_t
        """The transposed row-normalised adjacency: column-stochastic on non-dangling columns."""
        self.dangling = np.flatnonzero(dangling)
        """The positions of the nodes without out-edges."""

    @classmethod
    def of(cls, matrix: Any) -> Transition:
        """The walk of an ``n x n`` weighted adjacency (validated as for
        :func:`personalized_pagerank`)."""
        adjacency = _as_transition_source(matrix)
        out_weight = np.asarray(adjacency.sum(axis=1)).ravel()
        dangling = out_weight <= 0
        inverse = np.zeros(adjacency.shape[0], dtype=np.float64)
        inverse[~dangling] = 1.0 / out_weight[~dangling]
        return cls((sp.diags(inverse) @ adjacency).T.tocsr(), dangling)


def _matvec(matrix: sp.csr_matrix, vector: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` written into ``out`` (float64 CSR and vectors): scipy's own kernel,
    called without the dispatch and the new array of ``@`` on every iteration of a walk (the
    same sums in the same order, so the same numbers)."""
    if _csr_matvec is None or matrix.dtype != np.float64 or vector.dtype != np.float64:
        return np.asarray(matrix @ vector)
    out.fill(0.0)
    _csr_matvec(matrix.shape[0], matrix.shape[1], matrix.indptr, matrix.indices, matrix.data, vector, out)
    return out


def personalized_pagerank(
    matrix: Any,
    personalization: Any,
    *,
    damping: float = DEFAULT_PPR_DAMPING,
    tol: float = 1e-8,
    max_iter: int = 100,
) -> np.ndarray:
    """Personalized PageRank scores of the nodes of a weighted graph, by power iteration.

    A random walker starts on a node drawn from ``personalization``; at every step it follows
    an out-edge with probability ``damping`` (choosing edges in proportion to their weight) and
    otherwise jumps back to a node drawn from ``personalization``. From a node without
    out-edges (a dangling node) it always jumps back. The result is the walker's long-run
    distribution over nodes. This is the same fixed point as
    ``networkx.pagerank(G, alpha=damping, personalization=...)`` and igraph's prpack PPR.

    ``damping`` is the probability of *following an edge*; the teleport (restart) probability
    is ``1 - damping``. HippoRAG uses 0.5, which keeps most of the mass close to the seeds.

    Formally, with ``P`` the row-normalised adjacency (``P[i, j] = A[i, j] / sum_k A[i, k]``),
    ``d`` the damping and ``p`` the normalised personalization, the iteration is
    ``x <- d * (P^T x + (sum of x over dangling nodes) * p) + (1 - d) * p``; ``P^T`` is the
    column-stochastic transition matrix. It starts from ``p`` and stops once the L1 change
    between two iterations is below ``tol``. The error shrinks by a factor of ``damping`` per
    iteration, so at 0.5 about 30 iterations reach 1e-8; at 0.85 the default ``max_iter`` may
    not, in which case a ``RuntimeWarning`` is issued and the last iterate is returned.

    Args:
        matrix: ``n x n`` weighted adjacency (scipy sparse or dense), rows are edge sources.
            Entries must be finite and non-negative; self-loops are ordinary edges. A
            :class:`Transition` made from it once serves many runs.
        personalization: ``n`` non-negative restart weights; normalised to sum to 1 here.
        damping: Probability of following an edge, in [0, 1). Default 0.5, HippoRAG's.
        tol: Convergence threshold on the L1 change between iterations (> 0).
        max_iter: Maximum number of iterations (>= 1).

    Returns:
        A float64 array of ``n`` non-negative scores summing to 1.

    Raises:
        InvalidInputError: The matrix is not square or has negative/non-finite entries, or the
            personalization has the wrong shape, negative entries or sums to zero.
        ConfigurationError: ``damping``, ``tol`` or ``max_iter`` is out of range.
    """
    damping = _check_damping(damping)
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol > 0):
        raise ConfigurationError(f"tol must be a positive number, got {tol!r}.")
    max_iter = _check_positive_int("max_iter", max_iter)
    walk = matrix if isinstance(matrix, Transition) else Transition.of(matrix)
    transition_t, dangling = walk.matrix_t, walk.dangling
    p = _normalised_personalization(personalization, transition_t.shape[0])

    teleport = (1.0 - damping) * p
    x = p.copy()
    change = np.empty_like(x)
    spare = np.empty_like(x)  # two buffers in turn: an iteration allocates nothing
    for _ in range(max_iter):
        previous = x
        x = _matvec(transition_t, previous, spare)
        spare = previous
        if dangling.size:  # the walkers on dangling nodes restart
            x += previous[dangling].sum() * p
        x *= damping
        x += teleport
        np.subtract(x, previous, out=change)
        if float(np.abs(change, out=change).sum()) < tol:
            return x / x.sum()
    warnings.warn(
        f"personalized PageRank did not converge to tol={tol} within max_iter={max_iter} "
        f"iterations (damping={damping}); returning the last iterate. Raise max_iter or tol.",
        RuntimeWarning,
        stacklevel=2,
    )
    return x / x.sum()


DEFAULT_LOCAL_EPSILON = 1e-5
"""Mass per link below which :func:`local_pagerank` stops spreading a node's mass (the
personalization sums to 1)."""


class Neighbours:
    """A weighted graph's out-links by source (CSR rows), prepared once for many
    :func:`local_pagerank` runs: the arrays the walk reads, without the transposed matrix of
    :class:`Transition`."""

    def __init__(self, matrix: Any) -> None:
        adjacency = _as_transition_source(matrix)
        self.indptr = adjacency.indptr.astype(np.int64, copy=False)
        self.indices = adjacency.indices
        self.weights = adjacency.data
        self.degree = np.diff(self.indptr)
        """Out-links of each node."""
        self.out_weight = np.asarray(adjacency.sum(axis=1)).ravel()

    def __len__(self) -> int:
        return len(self.degree)


def local_pagerank(
    graph: Neighbours,
    personalization: Any,
    *,
    damping: float = DEFAULT_PPR_DAMPING,
    epsilon: float = DEFAULT_LOCAL_EPSILON,
    tol: float = 1e-4,
    max_hops: int = 100,
) -> np.ndarray:
    """Personalized PageRank spread hop by hop from the seeds, touching only their
    neighbourhood: the walk of :func:`personalized_pagerank`, approximated so that its cost
    depends on ``epsilon`` and not on the size of the graph.

    The stationary distribution is the sum over hops of where the walkers are after ``k``
    steps, ``sum_k (damping P^T)^k p``, scaled to sum to 1 (a walker on a node without
    out-links restarts). Hop by hop, each node holding mass passes ``damping`` of it to its
    neighbours in proportion to the links' weights, but only when its mass per out-link is at
    least ``epsilon``; a node below that keeps its mass where it is. Each link followed
    carries at least ``epsilon × damping`` of a total that shrinks by ``damping`` a hop, so a
    walk follows at most about ``1 / epsilon`` links however large the graph. Hubs (many links,
    little mass on each) are where mass stops; the mass that stopped, and what is still moving
    when it falls below ``tol``, count in the total the scores are divided by as the walk would
    have spread them. So each score is a lower estimate of :func:`personalized_pagerank`'s (on a
    graph where every node has out-links; nodes the walk does not reach score 0), and the
    scores sum to less than 1 by what stopped.

    Args:
        graph: The graph's :class:`Neighbours`.
        personalization: ``n`` non-negative restart weights, normalised here.
        damping: Probability of following a link, in [0, 1).
        epsilon: Mass per out-link below which a node's mass stays (> 0).
        tol: Stop once the mass still moving is below this (> 0).
        max_hops: Most hops (>= 1).

    Returns:
        A float64 array of ``n`` non-negative scores summing to at most 1.
    """
    damping = _check_damping(damping)
    for name, value in (("epsilon", epsilon), ("tol", tol)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ConfigurationError(f"{name} must be a positive number, got {value!r}.")
    max_hops = _check_positive_int("max_hops", max_hops)
    n = len(graph)
    p = _normalised_personalization(personalization, n)
    node = np.flatnonzero(p)
    mass = p[node]
    visits = np.zeros(n, dtype=np.float64)
    slot = np.empty(n, dtype=np.int64)  # a scratch map from node to its place in one hop's list
    stopped = 0.0  # mass that did not move on, as it would have moved (times damping)
    for _ in range(max_hops):
        visits[node] += mass
        weight = graph.out_weight[node]
        links = np.where(weight > 0, graph.degree[node], 0)  # links of weight 0 alone lead nowhere
        spread = (links > 0) & (mass >= epsilon * links)
        stopped += damping * float(mass[~spread & (links > 0)].sum())
        source, share = node[spread], damping * mass[spread] / weight[spread]
        count = links[spread]
        if not source.size:
            break
        first = np.cumsum(count) - count
        link = np.repeat(graph.indptr[source] - first, count) + np.arange(int(count.sum()))
        target, moved = graph.indices[link], np.repeat(share, count) * graph.weights[link]
        order = np.arange(target.size)
        slot[target] = order
        node = target[slot[target] == order]  # each target once
        slot[node] = np.arange(node.size)
        mass = np.bincount(slot[target], weights=moved, minlength=node.size)
        if float(mass.sum()) < tol:
            stopped += float(mass.sum())
            break
    else:
        stopped += float(mass.sum())
    return visits / (visits.sum() + stopped / (1.0 - damping))


N = TypeVar("N", bound=Hashable)
"""A node id of the caller's graph (the scores come back keyed alike)."""


def pagerank_scores(
    graph: nx.Graph,
    seeds: Mapping[N, float],
    *,
    damping: float = DEFAULT_PPR_DAMPING,
    weight: str | None = "weight",
    tol: float = 1e-8,
    max_iter: int = 100,
) -> dict[N, float]:
    """Personalized PageRank on a networkx graph, restarting at ``seeds``.

    A convenience wrapper around :func:`graph_to_csr` and :func:`personalized_pagerank`.
    Undirected graphs are walked in both directions; directed graphs only along their edges.

    Args:
        graph: Any networkx graph.
        seeds: ``{node: restart weight}``; weights must be non-negative and not all zero, and
            every node must be in the graph. Nodes not listed get weight 0. Normalised here.
        damping: Probability of following an edge, in [0, 1). Default 0.5, HippoRAG's.
        weight: Edge attribute holding the weight, or None for an unweighted graph.
        tol: Convergence threshold, see :func:`personalized_pagerank`.
        max_iter: Maximum number of iterations.

    Returns:
        ``{node: score}`` for every node of the graph, in graph order; scores sum to 1.

    Raises:
        InvalidInputError: A seed is not in the graph, the seed weights are unusable (negative,
            all zero, none given) or an edge weight is unusable.
        ConfigurationError: ``damping``, ``tol`` or ``max_iter`` is out of range.
    """
    matrix, nodes = graph_to_csr(graph, weight=weight)
    index = {node: i for i, node in enumerate(nodes)}
    missing = [node for node in seeds if node not in index]
    if missing:
        raise InvalidInputError(
            f"{len(missing)} seed node(s) are not in the graph, e.g. {missing[0]!r}. Link the "
            f"query to nodes of this graph before running PageRank."
        )
    personalization = np.zeros(len(nodes), dtype=np.float64)
    for node, value in seeds.items():
        try:
            personalization[index[node]] = float(value)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"seed weight of {node!r} is not a number: {value!r}."
            ) from None
    scores = personalized_pagerank(
        matrix, personalization, damping=damping, tol=tol, max_iter=max_iter
    )
    return {cast(N, node): float(score) for node, score in zip(nodes, scores, strict=True)}  # the graph's own nodes


__all__ = [
    "DEFAULT_LOCAL_EPSILON",
    "DEFAULT_PPR_DAMPING",
    "Neighbours",
    "Transition",
    "graph_to_csr",
    "local_pagerank",
    "pagerank_scores",
    "personalized_pagerank",
]
