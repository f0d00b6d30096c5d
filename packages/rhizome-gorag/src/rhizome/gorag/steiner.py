"""Steiner trees over a weighted undirected graph, as GORAG's candidate-label retrieval needs.

Two algorithms (docs/gorag.md, "Steiner algorithm"):

- ``"mehlhorn"`` (default): Mehlhorn's (1988) 2-approximation — Voronoi regions of the
  terminals by one multi-source Dijkstra, the cheapest bridge edge between each pair of
  regions, a minimum spanning tree of that terminal graph, its edges expanded into shortest
  paths, then a spanning tree of the result with non-terminal leaves pruned. Cost at most
  2·(1 − 1/ℓ) times the optimum for ℓ leaves; this is what the paper's prose claims.
- ``"mst_prune"``: Algorithm 2 as printed in the paper — the minimal subtree of the global
  minimum spanning tree that spans the terminals. It has no approximation bound (a cycle whose
  one heaviest edge joins the two terminals is a counterexample), and is kept for fidelity.

Both work per connected component: terminals in different components are spanned separately
and the result is a forest (docs/gorag.md, "disconnected graph"). A component holding a single terminal contributes no
edge; callers decide what a lone terminal means (GORAG: its nearest labels).

The heavy part runs on a SciPy sparse matrix of the graph's *core*: every node except pendant
ones (degree 1, not in ``keep``, hanging off a core node). A pendant node can never be inside a
Steiner tree, and a pendant terminal must join through its one edge, so it is replaced by its
neighbour and the edge added back. GORAG's graph is mostly pendants (keywords indexed online
hang off one label), so the core is small and stays valid while pendants are added; a solver
must be rebuilt after any other change.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import (
    breadth_first_order,
    connected_components,
    dijkstra,
    minimum_spanning_tree,
)

from rhizome.core.errors import ConfigurationError, InvalidInputError

SteinerMethod = Literal["mehlhorn", "mst_prune"]
STEINER_METHODS: tuple[str, ...] = ("mehlhorn", "mst_prune")

Edge = tuple[Hashable, Hashable, float]


@dataclass
class SteinerResult:
    """A Steiner forest: its edges (``(u, v, weight)``), total cost, and the terminals grouped
    by connected component (a group of one is a lone terminal)."""

    edges: list[Edge] = field(default_factory=list)
    cost: float = 0.0
    groups: list[list[Hashable]] = field(default_factory=list)

    @property
    def nodes(self) -> set[Hashable]:
        out: set[Hashable] = {n for group in self.groups for n in group}
        for u, v, _ in self.edges:
            out.add(u)
            out.add(v)
        return out


class SteinerSolver:
    """Steiner trees over one state of ``graph`` (edge attribute ``weight``, all positive).

    Build once per graph state and call :meth:`solve` per query; adding pendant nodes that hang
    off core nodes keeps a solver valid, any other change needs a new one.
    """

    def __init__(
        self,
        graph: nx.Graph,
        *,
        method: str = "mehlhorn",
        keep: Iterable[Hashable] = (),
        weight: str = "weight",
    ) -> None:
        if method not in STEINER_METHODS:
            raise ConfigurationError(
                f"unknown Steiner method {method!r}; use one of {', '.join(STEINER_METHODS)}"
            )
        self.graph = graph
        self.method = method
        self.weight = weight
        keep = set(keep)

        def is_pendant(node: Hashable) -> bool:
            if node in keep or graph.degree(node) != 1:
                return False
            (neighbour,) = graph[node]
            return neighbour in keep or graph.degree(neighbour) >= 2

        self.nodes: list[Hashable] = [n for n in graph.nodes if not is_pendant(n)]
        self.index: dict[Hashable, int] = {n: i for i, n in enumerate(self.nodes)}
        n = len(self.nodes)
        rows, cols, data = [], [], []
        for u, v, w in graph.edges(data=weight):
            i, j = self.index.get(u), self.index.get(v)
            if i is None or j is None or i == j:
                continue
            w = float(w)
            if not w > 0:
                raise InvalidInputError(f"edge ({u!r}, {v!r}) has weight {w}; Steiner weights must be positive")
            rows.append(min(i, j))
            cols.append(max(i, j))
            data.append(w)
        self.eu = np.asarray(rows, dtype=np.int64)
        self.ev = np.asarray(cols, dtype=np.int64)
        self.ew = np.asarray(data, dtype=np.float64)
        sym = coo_matrix(
            (np.concatenate([self.ew, self.ew]), (np.concatenate([self.eu, self.ev]), np.concatenate([self.ev, self.eu]))),
            shape=(n, n),
        ).tocsr()
        self.matrix = sym
        self.n_components, self.component = connected_components(sym, directed=False)
        self._parent: np.ndarray | None = None
        self._depth: np.ndarray | None = None
        if method == "mst_prune":
            self._build_mst()

    # -- helpers ---------------------------------------------------------------------------------
    def _w(self, i: int, j: int) -> float:
        return float(self.matrix[i, j])

    def map_terminal(self, node: Hashable) -> tuple[int, Edge | None]:
        """The core node standing for ``node`` and, for a pendant, the edge that joins it."""
        i = self.index.get(node)
        if i is not None:
            return i, None
        if node not in self.graph:
            raise InvalidInputError(f"terminal {node!r} is not a node of the graph")
        if self.graph.degree(node) == 1:
            (neighbour,) = self.graph[node]
            j = self.index.get(neighbour)
            if j is not None:
                return j, (neighbour, node, float(self.graph[node][neighbour][self.weight]))
        raise RuntimeError(f"the graph changed around {node!r} since this solver was built; build a new one")

    def distances(self, core_nodes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Shortest-path distances and predecessors from each of ``core_nodes`` over the core."""
        dist, pred = dijkstra(self.matrix, directed=True, indices=list(core_nodes), return_predecessors=True)
        return np.atleast_2d(dist), np.atleast_2d(pred)

    # -- solving ---------------------------------------------------------------------------------
    def solve(self, terminals: Iterable[Hashable]) -> SteinerResult:
        """The Steiner forest spanning ``terminals`` (duplicates ignored)."""
        terminals = list(dict.fromkeys(terminals))
        pendant_edges: list[Edge] = []
        core_terms: dict[int, list[Hashable]] = {}
        for node in terminals:
            i, edge = self.map_terminal(node)
            if edge is not None:
                pendant_edges.append(edge)
            core_terms.setdefault(i, []).append(node)
        by_component: dict[int, list[int]] = {}
        for i in core_terms:
            by_component.setdefault(int(self.component[i]), []).append(i)
        core_edges: set[tuple[int, int]] = set()
        for group in by_component.values():
            if len(group) < 2:
                continue
            if self.method == "mehlhorn":
                core_edges |= self._mehlhorn(group)
            else:
                core_edges |= self._mst_subtree(group)
        edges: list[Edge] = [(self.nodes[i], self.nodes[j], self._w(i, j)) for i, j in sorted(core_edges)]
        edges.extend(pendant_edges)
        groups = [[t for i in group for t in core_terms[i]] for group in by_component.values()]
        return SteinerResult(edges=edges, cost=float(sum(w for _, _, w in edges)), groups=groups)

    def _mehlhorn(self, terminals: list[int]) -> set[tuple[int, int]]:
        dist, pred, source = dijkstra(
            self.matrix, directed=True, indices=terminals, min_only=True, return_predecessors=True
        )
        su, sv = source[self.eu], source[self.ev]
        ok = (su >= 0) & (sv >= 0) & (su != sv)
        if not ok.any():
            return set()
        idx = np.nonzero(ok)[0]
        a = np.minimum(su[idx], sv[idx])
        b = np.maximum(su[idx], sv[idx])
        cost = dist[self.eu[idx]] + self.ew[idx] + dist[self.ev[idx]]
        order = np.lexsort((cost, b, a))
        parent: dict[int, int] = {t: t for t in terminals}

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        # the cheapest bridge per pair of regions, then Kruskal over those bridges
        first = np.ones(len(order), dtype=bool)
        first[1:] = (a[order][1:] != a[order][:-1]) | (b[order][1:] != b[order][:-1])
        bridges = order[first]
        bridges = bridges[np.argsort(cost[bridges], kind="stable")]
        chosen: set[tuple[int, int]] = set()

        def walk(x: int) -> None:
            while pred[x] >= 0:
                p = int(pred[x])
                chosen.add((min(p, x), max(p, x)))
                x = p

        needed = len(terminals) - 1
        for k in bridges:
            ra, rb = find(int(a[k])), find(int(b[k]))
            if ra == rb:
                continue
            parent[ra] = rb
            u, v = int(self.eu[idx[k]]), int(self.ev[idx[k]])
            chosen.add((u, v))
            walk(u)
            walk(v)
            needed -= 1
            if needed == 0:
                break
        return _spanning_pruned(chosen, set(terminals), self._w)

    def _build_mst(self) -> None:
        n = len(self.nodes)
        tree = minimum_spanning_tree(self.matrix)
        sym = (tree + tree.T).tocsr()
        parent = np.full(n, -1, dtype=np.int64)
        depth = np.zeros(n, dtype=np.int64)
        seen = np.zeros(n, dtype=bool)
        for root in range(n):
            if seen[root]:
                continue
            order, preds = breadth_first_order(sym, root, directed=False, return_predecessors=True)
            for node in order:
                seen[node] = True
                p = preds[node]
                if p >= 0:
                    parent[node] = p
                    depth[node] = depth[p] + 1
        self._parent, self._depth = parent, depth

    def _mst_subtree(self, terminals: list[int]) -> set[tuple[int, int]]:
        parent, depth = self._parent, self._depth
        assert parent is not None and depth is not None
        hits: dict[int, int] = {}
        for t in terminals:
            x = t
            while x >= 0:
                hits[x] = hits.get(x, 0) + 1
                x = int(parent[x])
        common = [x for x, c in hits.items() if c == len(terminals)]
        top = max(common, key=lambda x: depth[x])
        edges: set[tuple[int, int]] = set()
        for t in terminals:
            x = t
            while x != top:
                p = int(parent[x])
                edge = (min(p, x), max(p, x))
                if edge in edges:
                    break
                edges.add(edge)
                x = p
        return edges


def _spanning_pruned(edges: set[tuple[int, int]], terminals: set[int], weight) -> set[tuple[int, int]]:
    """A minimum spanning tree of the subgraph ``edges``, with non-terminal leaves removed."""
    sub = nx.Graph()
    sub.add_weighted_edges_from((u, v, weight(u, v)) for u, v in edges)
    tree = nx.minimum_spanning_tree(sub)
    leaves = [n for n in tree.nodes if tree.degree(n) <= 1 and n not in terminals]
    while leaves:
        node = leaves.pop()
        neighbours = list(tree[node])
        tree.remove_node(node)
        leaves.extend(m for m in neighbours if tree.degree(m) <= 1 and m not in terminals)
    return {(min(u, v), max(u, v)) for u, v in tree.edges}


def steiner_tree(
    graph: nx.Graph, terminals: Iterable[Hashable], *, method: str = "mehlhorn", weight: str = "weight"
) -> SteinerResult:
    """One-off Steiner forest of ``graph`` spanning ``terminals`` (builds a solver each call)."""
    return SteinerSolver(graph, method=method, weight=weight).solve(terminals)


__all__ = ["STEINER_METHODS", "SteinerMethod", "SteinerResult", "SteinerSolver", "steiner_tree"]
