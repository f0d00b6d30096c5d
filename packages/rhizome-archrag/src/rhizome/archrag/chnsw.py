"""C-HNSW: one proximity graph per layer of the attributed-community tree, joined by one link
from every node to its nearest node in the layer below (ArchRAG, Wang et al. 2025, §4.2 and
Algorithms 2 and 3), over faiss.

Unlike HNSW, every node lives in exactly one layer (entities at layer 0, the communities of
clustering round ``i`` at layer ``i``), so a search visits each layer once and returns the ``k``
nearest nodes of every layer, entering each layer at the node the layer above points to.

Each layer's proximity graph is a faiss ``IndexHNSWFlat`` (inner product on L2-normalised
float32 vectors, so distance is ``1 - cosine``) whose nodes all sit on faiss's level 0: a
single flat graph per layer, with ``m0`` neighbours per node at layer 0 and ``m`` above. faiss
chooses a new node's neighbours by the HNSW heuristic (a candidate is dropped when it is nearer
to an already chosen neighbour than to the new node) and prunes a full list the same way. The
inter-layer links are numpy arrays. Searching a layer is faiss's ``search_level_0`` from a
given entry node (a beam of ``ef``), so the whole of Algorithm 2 runs in C++ but for one call
per layer.

Construction (Algorithm 3, read as the spec corrects it): the layers are built from the top
down and each node is inserted by faiss's own insertion routine (beam search of width
``ef_construction`` from an entry node, then linking both ways), one node at a time so that
each has the entry Algorithm 3 gives it. In the top layer the entry is the layer's first node.
Below it, the new node ``v`` descends greedily from the top to its nearest node ``c`` in the
layer above; ``c``'s current link ``s`` (the node of this layer nearest to ``c`` among those
already inserted that chose ``c``) is the entry, and ``v`` replaces it when ``v`` is nearer to
``c``. A node whose ``c`` has no link yet enters at a seeded random node already inserted.
(The descents of a layer's nodes only read the layers above, which are finished, so they run
as one batched search before the layer's nodes are inserted in order.)

Once a layer is built, every link from the layer above is set to its nearest node in it: by an
exact product when the two layers are small (``exact_links`` pairs), else by a beam search
started at the link Algorithm 3 left (or a random node). So the inter-layer links are the
nearest-neighbour map ψ the paper describes, not merely "a near node that chose me".

Everything is seeded and single-threaded where order matters: the same layers give the same
graph in every process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rhizome.core.errors import InvalidInputError
from rhizome.core.graph.similarity import unit_rows
from rhizome.core.retrieval.contract import check_positive
from rhizome.core.store.vectors import threads_for

EXACT_LINK_PAIRS = 20_000_000
"""Largest ``n_upper * n_lower`` for which inter-layer links are computed by an exact product
(about 80 MB of scores at a time at most); larger layer pairs use the beam search."""


@dataclass
class SearchCounter:
    """Distance evaluations of searches (what the benchmark compares across indexes), read from
    faiss's global HNSW statistics: exact when no other HNSW search runs at the same time."""

    distances: int = 0


@dataclass
class CHNSW:
    """A C-HNSW index over ``layers`` (``layers[0]``: the bottom layer; each an ``n_i x d``
    array). Built on construction; :meth:`search` is Algorithm 2.

    ``m``: links per node above layer 0 (paper 32); ``m0``: links per node at layer 0 (the
    authors' code 64); ``ef_construction``: beam width while inserting (paper's synthetic run
    100); ``ef_search``: default beam width of a query (at least ``k``); ``seed``: the random
    entries."""

    layers: Sequence[np.ndarray]
    m: int = 32
    m0: int = 64
    ef_construction: int = 100
    ef_search: int = 100
    seed: int = 0
    exact_links: int = EXACT_LINK_PAIRS
    vectors: list[np.ndarray] = field(init=False)
    graphs: list[Any] = field(init=False)
    """Per layer, a faiss ``IndexHNSWFlat`` whose nodes all sit on level 0 (None when empty)."""
    links: list[np.ndarray] = field(init=False)
    """Per layer, the row in the layer below each node links to (-1 at layer 0)."""

    def __post_init__(self) -> None:
        for name in ("m", "m0", "ef_construction", "ef_search"):
            check_positive(name, getattr(self, name))
        self.vectors = [unit_rows(layer) for layer in self.layers]
        if not self.vectors:
            raise InvalidInputError("a C-HNSW needs at least one layer")
        dims = {v.shape[1] for v in self.vectors}
        if len(dims) != 1:
            raise InvalidInputError(f"every layer must have the same dimension, got {sorted(dims)}")
        for i, v in enumerate(self.vectors):
            if i > 0 and len(v) and not len(self.vectors[i - 1]):
                raise InvalidInputError(f"layer {i} has nodes but layer {i - 1} is empty")
        self.graphs = [None] * len(self.vectors)
        self.links = [np.full(len(v), -1, dtype=np.int64) for v in self.vectors]
        self._rng = np.random.default_rng(self.seed)
        self._params: dict[int, Any] = {}
        self._top = max((i for i, v in enumerate(self.vectors) if len(v)), default=-1)
        self._build()

    @property
    def top(self) -> int:
        """The highest layer that holds nodes (-1 when every layer is empty)."""
        return self._top

    def max_degree(self, layer: int) -> int:
        return self.m0 if layer == 0 else self.m

    def neighbours(self, layer: int) -> np.ndarray:
        """Layer ``layer``'s proximity graph: an ``n x max_degree`` int array of neighbour rows,
        padded with -1."""
        import faiss

        graph = self.graphs[layer]
        if graph is None:
            return np.zeros((0, self.max_degree(layer)), dtype=np.int32)
        return faiss.vector_to_array(graph.hnsw.neighbors).reshape(graph.ntotal, self.max_degree(layer))

    def degrees(self, layer: int) -> np.ndarray:
        """How many neighbours each node of ``layer`` has."""
        return (self.neighbours(layer) >= 0).sum(axis=1)

    # -- search ----------------------------------------------------------------------------------
    def search_layer(
        self, layer: int, queries: np.ndarray, entries: np.ndarray, k: int, ef: int, counter: SearchCounter | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Beam search (width ``max(ef, k)``) of one layer's graph for each row of ``queries``
        (unit float32), from its entry row in ``entries``: ``(cosines, rows)``, both
        ``len(queries) x k``, best first (row -1 past the end of a small layer)."""
        import faiss

        n = len(queries)
        entry = np.ascontiguousarray(entries, dtype=np.int32).reshape(n, 1)
        if n == 1:
            entry_scores = np.array([[float(queries[0] @ self.vectors[layer][entry[0, 0]])]], dtype=np.float32)
        else:
            entry_scores = np.einsum("ij,ij->i", queries, self.vectors[layer][entry[:, 0]]).astype(np.float32).reshape(n, 1)
        scores = np.empty((n, k), dtype=np.float32)
        rows = np.empty((n, k), dtype=np.int64)
        width = max(ef, k)
        params = self._params.get(width)
        if params is None:
            params = self._params[width] = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # faiss stubs lack the HNSW search API
            params.efSearch = width
        before = faiss.cvar.hnsw_stats.ndis if counter is not None else 0  # type: ignore[attr-defined]
        self.graphs[layer].search_level_0(
            n, faiss.swig_ptr(queries), k, faiss.swig_ptr(entry), faiss.swig_ptr(entry_scores),
            faiss.swig_ptr(scores), faiss.swig_ptr(rows), 1, 1, params,
        )
        if counter is not None:
            counter.distances += faiss.cvar.hnsw_stats.ndis - before  # type: ignore[attr-defined]
        return scores, rows

    def entry(self) -> int:
        """Where every search starts: the first node of the top layer."""
        return 0

    def search_many(
        self, queries: np.ndarray, k: int, *, ef: int | None = None, layers: Sequence[int] | None = None,
        counter: SearchCounter | None = None,
    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Algorithm 2 for each row of ``queries``: from the top layer down, the ``k`` nearest
        nodes of each layer (beam ``max(ef, k)``), each layer entered at the link of the best
        node found in the layer above. Returns ``{layer: (cosines, rows)}`` (each
        ``len(queries) x k``, best first, row -1 where a layer has fewer than ``k`` nodes) for
        ``layers`` (default all); layers not asked for are still descended through, with a
        beam of one, to find the entry of the next."""
        top = self._top
        if top < 0:
            return {}
        q = unit_rows(np.asarray(queries, dtype=np.float32).reshape(-1, self.vectors[0].shape[1]))
        wanted = set(range(top + 1)) if layers is None else set(layers)
        width = ef or self.ef_search
        node = np.full(len(q), self.entry(), dtype=np.int64)
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        with threads_for(len(q)):
            for layer in range(top, min(wanted, default=0) - 1, -1):
                here = layer in wanted
                scores, rows = self.search_layer(layer, q, node, k if here else 1, width if here else 1, counter)
                if here:
                    out[layer] = (scores, rows)
                if layer > 0:
                    node = self.links[layer][rows[:, 0]]  # every node above layer 0 is linked
        return out

    def search(
        self, query: np.ndarray, k: int, *, ef: int | None = None, layers: Sequence[int] | None = None,
        counter: SearchCounter | None = None,
    ) -> dict[int, list[tuple[int, float]]]:
        """:meth:`search_many` for one query: ``{layer: [(row, cosine), ...]}`` best first."""
        found = self.search_many(np.asarray(query).reshape(1, -1), k, ef=ef, layers=layers, counter=counter)
        return {
            layer: [(int(r), float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]
            for layer, (scores, rows) in found.items()
        }

    # -- kept as arrays ----------------------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The built index as arrays: each layer's faiss graph serialized (its vectors inside),
        its links and the settings; :meth:`from_arrays` reads them without building again."""
        import faiss

        settings = [self.m, self.m0, self.ef_construction, self.ef_search, self.seed, self.exact_links, self.vectors[0].shape[1]]
        out: dict[str, np.ndarray] = {"settings": np.asarray(settings, dtype=np.int64)}
        for i, (graph, links) in enumerate(zip(self.graphs, self.links, strict=True)):
            out[f"graph{i}"] = faiss.serialize_index(graph) if graph is not None else np.empty(0, dtype=np.uint8)
            out[f"links{i}"] = links
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> CHNSW:
        """The index :meth:`to_arrays` gave these arrays for, searched exactly as it was."""
        import faiss

        m, m0, ef_construction, ef_search, seed, exact_links, dim = (int(x) for x in arrays["settings"])
        self = cls.__new__(cls)
        self.m, self.m0, self.ef_construction, self.ef_search, self.seed, self.exact_links = m, m0, ef_construction, ef_search, seed, exact_links
        count = sum(1 for name in arrays if name.startswith("links"))
        self.graphs = [faiss.deserialize_index(arrays[f"graph{i}"]) if arrays[f"graph{i}"].size else None for i in range(count)]
        self.vectors = [
            # the stored floats of the graph's IndexFlat: the unit rows it was built from
            faiss.vector_to_array(faiss.downcast_index(g.storage).codes).view(np.float32).reshape(-1, dim)  # type: ignore[attr-defined]
            if g is not None else np.zeros((0, dim), dtype=np.float32)
            for g in self.graphs
        ]
        self.layers = self.vectors
        self.links = [np.asarray(arrays[f"links{i}"], dtype=np.int64) for i in range(count)]
        self._rng = np.random.default_rng(seed)
        self._params = {}
        self._top = max((i for i, v in enumerate(self.vectors) if len(v)), default=-1)
        return self

    # -- construction ----------------------------------------------------------------------------
    def _graph(self, layer: int) -> Any:
        import faiss

        dim = self.vectors[layer].shape[1]
        graph = faiss.IndexHNSWFlat(dim, max(1, self.max_degree(layer) // 2), faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.set_nb_neighbors(0, self.max_degree(layer))  # type: ignore[attr-defined]
        graph.hnsw.efConstruction = self.ef_construction
        return graph

    def _entries(self, layer: int) -> np.ndarray:
        """Algorithm 3's entry of every node of ``layer`` (below the top), in insertion order,
        updating the links of the layer above as it goes (-1: the layer's first node)."""
        vectors, upper = self.vectors[layer], self.vectors[layer + 1]
        found = self.search_many(vectors, 1, ef=1, layers=[layer + 1])  # greedy 1-NN descent
        above = found[layer + 1][1][:, 0]
        closeness = np.einsum("ij,ij->i", vectors, upper[above]).tolist()
        held = [-1] * len(upper)
        held_closeness = [0.0] * len(upper)
        picks = self._rng.random(len(vectors))
        entries = np.empty(len(vectors), dtype=np.int64)
        for node, (c, near) in enumerate(zip(above.tolist(), closeness)):
            s = held[c]
            entries[node] = s if s >= 0 else (int(picks[node] * node) if node else -1)
            if s < 0 or near > held_closeness[c]:
                held[c], held_closeness[c] = node, near
        self.links[layer + 1][:] = held
        return entries

    def _build(self) -> None:
        top = self.top
        for layer in range(top, -1, -1):
            vectors = self.vectors[layer]
            entries = np.zeros(len(vectors), dtype=np.int64) if layer == top else self._entries(layer)
            entries[0] = -1
            graph = self._graph(layer)
            levels = graph.hnsw.levels
            with threads_for(1):
                for node in range(len(vectors)):
                    levels.push_back(1)  # preset: every node on faiss's level 0 only
                    graph.hnsw.entry_point = int(entries[node])
                    graph.add(vectors[node : node + 1])
            graph.hnsw.entry_point = self.entry()
            self.graphs[layer] = graph
            if layer < top:
                self._link_layer(layer)

    def _link_layer(self, layer: int) -> None:
        """Every node of ``layer + 1`` linked to its nearest node of ``layer``."""
        upper, lower = self.vectors[layer + 1], self.vectors[layer]
        links = self.links[layer + 1]
        if len(upper) * len(lower) <= self.exact_links:
            step = max(1, self.exact_links // max(1, len(lower)) // 4)
            for start in range(0, len(upper), step):
                links[start : start + step] = np.argmax(upper[start : start + step] @ lower.T, axis=1)
            return
        missing = links < 0
        links[missing] = self._rng.integers(len(lower), size=int(missing.sum()))
        links[:] = self.search_layer(layer, upper, links, 1, self.ef_construction)[1][:, 0]


@dataclass
class LayerSearch:
    """A C-HNSW (``None`` before any layer has vectors) with the ids of each layer's rows: what
    an index searches, kept as arrays in its directory (``graphs/chnsw.npz``) so that a process
    opening it reads them instead of building the graphs again."""

    chnsw: CHNSW | None
    ids: list[list[str]]

    def to_arrays(self) -> dict[str, np.ndarray]:
        out = self.chnsw.to_arrays() if self.chnsw is not None else {}
        out.update({f"ids{i}": np.asarray(ids, dtype=str) for i, ids in enumerate(self.ids)})
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> LayerSearch:
        count = sum(1 for name in arrays if name.startswith("ids"))
        return cls(CHNSW.from_arrays(arrays) if "settings" in arrays else None, [arrays[f"ids{i}"].tolist() for i in range(count)])


def brute_force(layers: Sequence[np.ndarray], query: np.ndarray, k: int) -> dict[int, list[tuple[int, float]]]:
    """The exact ``k`` nearest rows of every layer by cosine (what C-HNSW approximates)."""
    q = unit_rows(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
    out = {}
    for i, layer in enumerate(layers):
        if not len(layer):
            continue
        scores = layer @ q
        top = np.argsort(-scores, kind="stable")[:k]
        out[i] = [(int(r), float(scores[r])) for r in top]
    return out


__all__ = ["CHNSW", "SearchCounter", "brute_force", "unit_rows"]
