"""C-HNSW: one proximity graph per layer of the attributed-community tree, joined by one link
from every node to its nearest node in the layer below (ArchRAG, Wang et al. 2025, §4.2 and
Algorithms 2 and 3).

Unlike HNSW, every node lives in exactly one layer (entities at layer 0, the communities of
clustering round ``i`` at layer ``i``), so a search visits each layer once and returns the ``k``
nearest nodes of every layer, entering each layer at the node the layer above points to.

Construction (Algorithm 3, read as the spec corrects it): the layers are built from the top
down and each node is inserted with the search routine. In the top layer the entry is the
layer's first node. Below it, the new node ``v`` descends greedily from the top to its nearest
node ``c`` in the layer above; ``c``'s current link ``s`` (the nearest node of this layer seen so
far that chose ``c``) is the entry, and ``v`` replaces it when ``v`` is nearer to ``c``. A layer
whose node has no entry yet starts from a seeded random node already inserted. The new node is
linked to the ``max_degree`` nearest nodes the beam search found (``m0`` at layer 0, ``m``
above), both ways; a node that then holds more than its maximum keeps its nearest.

Once a layer is built, every link from the layer above is set to its nearest node in it: by an
exact product when the two layers are small (``exact_links`` pairs), else by a beam search
started at the link Algorithm 3 left (or a random node). So the inter-layer links are the
nearest-neighbour map ψ the paper describes, not merely "a near node that chose me".

Distances are ``1 - cosine`` on L2-normalised float32 vectors (inner product, as the paper's
FAISS build). Everything is seeded: the same layers give the same graph.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rhizome.core.errors import ConfigurationError, InvalidInputError

EXACT_LINK_PAIRS = 20_000_000
"""Largest ``n_upper * n_lower`` for which inter-layer links are computed by an exact product
(about 80 MB of scores at a time at most); larger layer pairs use the beam search."""


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as contiguous float32 rows of norm 1 (zero rows stay zero)."""
    array = np.ascontiguousarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise InvalidInputError(f"each layer must be a 2-D array of vectors, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0)


@dataclass
class SearchCounter:
    """Distance evaluations of one search (what the benchmark compares across indexes)."""

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
    neighbours: list[np.ndarray] = field(init=False)
    """Per layer, an ``n x max_degree`` int32 array of neighbour rows, padded with -1."""
    degree: list[np.ndarray] = field(init=False)
    links: list[np.ndarray] = field(init=False)
    """Per layer, the row in the layer below each node links to (-1 at layer 0)."""

    def __post_init__(self) -> None:
        for name in ("m", "m0", "ef_construction", "ef_search"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")
        self.vectors = [unit_rows(layer) for layer in self.layers]
        if not self.vectors:
            raise InvalidInputError("a C-HNSW needs at least one layer")
        dims = {v.shape[1] for v in self.vectors}
        if len(dims) != 1:
            raise InvalidInputError(f"every layer must have the same dimension, got {sorted(dims)}")
        for i, v in enumerate(self.vectors):
            if i > 0 and len(v) and not len(self.vectors[i - 1]):
                raise InvalidInputError(f"layer {i} has nodes but layer {i - 1} is empty")
        self.neighbours = [np.full((len(v), self.max_degree(i)), -1, dtype=np.int32) for i, v in enumerate(self.vectors)]
        self.degree = [np.zeros(len(v), dtype=np.int32) for v in self.vectors]
        self.links = [np.full(len(v), -1, dtype=np.int64) for v in self.vectors]
        self._rng = np.random.default_rng(self.seed)
        self._build()

    @property
    def top(self) -> int:
        """The highest layer that holds nodes (-1 when every layer is empty)."""
        return max((i for i, v in enumerate(self.vectors) if len(v)), default=-1)

    def max_degree(self, layer: int) -> int:
        return self.m0 if layer == 0 else self.m

    # -- search ----------------------------------------------------------------------------------
    def search_layer(
        self, layer: int, query: np.ndarray, entries: Sequence[int], ef: int, counter: SearchCounter | None = None
    ) -> list[tuple[float, int]]:
        """Beam search of one layer's graph from ``entries``: the ``ef`` nearest nodes found, as
        ``(distance, row)`` nearest first (the paper's SearchLayer with a beam of ``ef``)."""
        vectors, neighbours, degree = self.vectors[layer], self.neighbours[layer], self.degree[layer]
        entries = list(dict.fromkeys(int(e) for e in entries))
        visited = np.zeros(len(vectors), dtype=bool)
        visited[entries] = True
        dists = (1.0 - vectors[entries] @ query).tolist()
        if counter is not None:
            counter.distances += len(entries)
        candidates = list(zip(dists, entries))
        heapq.heapify(candidates)
        best = [(-d, e) for d, e in candidates]
        heapq.heapify(best)
        while len(best) > ef:
            heapq.heappop(best)
        while candidates:
            dist, node = heapq.heappop(candidates)
            if dist > -best[0][0] and len(best) >= ef:
                break
            row = neighbours[node, : degree[node]]
            fresh = row[~visited[row]]
            if not len(fresh):
                continue
            visited[fresh] = True
            scores = 1.0 - vectors[fresh] @ query
            if counter is not None:
                counter.distances += len(fresh)
            if len(best) >= ef:  # only nodes nearer than the furthest kept can enter
                near = scores < -best[0][0]
                fresh, scores = fresh[near], scores[near]
            for d, x in zip(scores.tolist(), fresh.tolist()):
                if len(best) < ef or d < -best[0][0]:
                    heapq.heappush(candidates, (d, x))
                    heapq.heappush(best, (-d, x))
                    if len(best) > ef:
                        heapq.heappop(best)
        return sorted((-d, x) for d, x in best)

    def entry(self) -> int:
        """Where every search starts: the first node of the top layer."""
        return 0

    def search(
        self, query: np.ndarray, k: int, *, ef: int | None = None, layers: Sequence[int] | None = None,
        counter: SearchCounter | None = None,
    ) -> dict[int, list[tuple[int, float]]]:
        """Algorithm 2: from the top layer down, the ``k`` nearest nodes of each layer (beam
        ``max(ef, k)``), each layer entered at the link of the best node found in the layer
        above. Returns ``{layer: [(row, cosine), ...]}`` best first, for ``layers`` (default
        all); layers not asked for are still descended through, with a beam of one, to find
        the entry of the next."""
        if self.top < 0:
            return {}
        q = unit_rows(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
        wanted = set(range(self.top + 1)) if layers is None else set(layers)
        width = max(ef or self.ef_search, k)
        node = self.entry()
        out: dict[int, list[tuple[int, float]]] = {}
        for layer in range(self.top, -1, -1):
            if layer not in wanted and not any(x < layer for x in wanted):
                node = max(0, int(self.links[layer][node])) if layer > 0 else node
                continue
            found = self.search_layer(layer, q, [node], width if layer in wanted else 1, counter)
            if layer in wanted:
                out[layer] = [(row, 1.0 - d) for d, row in found[:k]]
            if layer > 0:
                link = int(self.links[layer][found[0][1]])
                node = link if link >= 0 else 0
        return out

    # -- construction ----------------------------------------------------------------------------
    def _nearest_above(self, layer: int, vector: np.ndarray) -> int:
        """Greedy 1-NN descent from the top layer to ``layer`` (the node whose link gives the
        entry into ``layer - 1``)."""
        node = self.entry()
        for upper in range(self.top, layer - 1, -1):
            node = self.search_layer(upper, vector, [node], 1)[0][1]
            if upper > layer:
                link = int(self.links[upper][node])
                node = link if link >= 0 else 0
        return node

    def _connect(self, layer: int, node: int, found: list[tuple[float, int]]) -> None:
        vectors, neighbours, degree = self.vectors[layer], self.neighbours[layer], self.degree[layer]
        limit = self.max_degree(layer)
        chosen = [x for _, x in found if x != node][:limit]
        neighbours[node, : len(chosen)] = chosen
        degree[node] = len(chosen)
        for other in chosen:
            d = degree[other]
            if d < limit:
                neighbours[other, d] = node
                degree[other] = d + 1
                continue
            held = np.append(neighbours[other, :d], node)
            keep = held[np.argsort(1.0 - vectors[held] @ vectors[other], kind="stable")[:limit]]
            neighbours[other, :limit] = keep

    def _build(self) -> None:
        top = self.top
        for layer in range(top, -1, -1):
            vectors = self.vectors[layer]
            for node in range(len(vectors)):
                if node == 0:
                    continue
                vector = vectors[node]
                if layer == top:
                    start = 0
                else:
                    above = self._nearest_above(layer + 1, vector)
                    held = int(self.links[layer + 1][above])
                    target = self.vectors[layer + 1][above]
                    if held < 0 or float(vectors[node] @ target) > float(vectors[held] @ target):
                        self.links[layer + 1][above] = node
                    start = held if held >= 0 else int(self._rng.integers(node))
                self._connect(layer, node, self.search_layer(layer, vector, [start], self.ef_construction))
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
        for row in range(len(upper)):
            start = int(links[row]) if links[row] >= 0 else int(self._rng.integers(len(lower)))
            links[row] = self.search_layer(layer, upper[row], [start], self.ef_construction)[0][1]


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
