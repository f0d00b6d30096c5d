"""RAPTOR's two ways of searching its tree.

``collapsed`` (the paper's best)
    Every node of every layer — leaves and summaries — ranked together by cosine similarity to
    the query; the best ``k`` are taken in that order while they fit in ``max_tokens`` (2,000):
    the first node that would overflow the budget ends the search, as in the reference code.
    The context (what :meth:`answer` reads) is the same ranking filled up to the budget, not cut
    at ``k``: the paper's 2,000 tokens of context.
``traversal``
    From the top layer down: the ``top_k`` nodes (default ``k``) most similar to the query among
    the top layer (every node no summary holds), then among the children of the summaries chosen
    above, down to the leaves (a leaf carried up past a layer may be chosen beside summaries). Every
    chosen node is a candidate; the best ``k`` by similarity are the hits, within the same budget.
    The context is the chosen nodes in the order they were chosen, top layer first, within the
    budget. Nodes are chosen by the top-k rule only (the reference's threshold rule compares a
    distance the wrong way round; it is not offered).

Every hit carries its ``layer`` (0 for a leaf) in ``metadata``; a summary's hit also carries its
``children`` (the nodes it was written from) and how many ``leaves`` it covers, and
cites those leaves in its provenance, the ones most similar to the query first (at most
:data:`~rhizome.core.retrieval.contract.MAX_PROVENANCE_CHUNKS`). ``max_tokens`` may end the hits before
``k``; the nearest chunks do not top them up (that would break the budget).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from rhizome.core.retrieval.contract import (
    MAX_PROVENANCE_CHUNKS,
    BaseRetriever,
    Retrieval,
    chunk_hit,
    pack,
    provenance,
    query_vector,
    vector_search,
)
from rhizome.core.retrieval.params import RetrieverParams
from rhizome.core.types import Community, Hit

Ranked = list[tuple[str, float, int]]
"""``(node id, cosine, layer)``, best first."""


class TreeParams(RetrieverParams):
    """The settings of :class:`CollapsedRetriever` (and of :class:`TraversalRetriever`)."""

    max_tokens: int = Field(2000, ge=1)
    """Token budget of the hits and of the context (the paper's 2,000; default: the index's
    ``context_tokens``)."""


class TraversalParams(TreeParams):
    """The settings of :class:`TraversalRetriever`: the budget and the width of the walk down."""

    top_k: int | None = Field(None, ge=1)
    """Nodes chosen per layer (default: ``k``)."""


class _TreeRetriever(BaseRetriever):
    """What both modes share: the budget and turning ranked nodes into hits."""

    fill = False
    params_class = TreeParams
    params: TreeParams

    def _default_settings(self) -> Mapping[str, Any]:
        return {"max_tokens": self.index.config.context_tokens}

    async def _search(self, query: str, k: int, *, context: bool) -> Retrieval:
        raise NotImplementedError

    async def _ahits(self, query: str, k: int) -> Retrieval:
        return await self._search(query, k, context=False)  # the context costs more than the hits

    async def _asearch(self, query: str, k: int) -> Retrieval:
        return await self._search(query, k, context=True)

    def _hits(self, ranked: Ranked, vector: np.ndarray) -> list[Hit]:
        """Hits for ``ranked`` nodes, taken in order while they fit in the budget."""
        store, tree = self.index.store, self.index.tree
        chunks = store.chunks([key for key, _, layer in ranked if layer == 0])
        groups = tree.groups.get([key for key, _, layer in ranked if layer > 0])
        nodes = [(key, score, layer) for key, score, layer in ranked if key in (chunks if layer == 0 else groups)]
        text = {key: chunks[key].text if layer == 0 else groups[key].summary for key, _, layer in nodes}
        out = []
        for (key, score, layer), _ in pack(nodes, self.params.max_tokens, lambda n: text[n[0]], overhead=2, cut_first=False):
            if layer == 0:
                out.append(chunk_hit(chunks[key], score, layer=0, via=self.mode))
            else:
                out.append(self._summary_hit(groups[key], score, vector))
        return out

    def _summary_hit(self, group: Community, score: float, vector: np.ndarray) -> Hit:
        leaves = self.index.store.collection(self.index.CHUNK_COLLECTION)
        covered, matrix = leaves.present(group.entity_ids)
        if covered:  # the leaves most similar to the query first
            order = np.argsort(-(matrix @ vector[0]), kind="stable")
            covered = [covered[i] for i in order]
        cited = provenance(self.index.store.chunks(covered[:MAX_PROVENANCE_CHUNKS]), covered)
        return Hit(
            id=group.id, text=group.summary, score=float(score), kind="summary", provenance=cited,
            metadata={"layer": group.level, "children": list(group.children), "leaves": len(group.entity_ids), "via": self.mode},
        )

    def _similar(self, collection: str, keys: Sequence[str], vector: np.ndarray) -> list[tuple[str, float]]:
        """``keys`` (those with a vector in ``collection``) by cosine to the query, best first."""
        if not keys or not self.index.store.has_collection(collection):
            return []
        stored = self.index.store.collection(collection, vector.shape[1])
        present, matrix = stored.present(keys)
        if not present:
            return []
        scores = matrix @ vector[0]
        return sorted(zip(present, (float(s) for s in scores)), key=lambda p: (-round(p[1], 6), p[0]))


class CollapsedRetriever(_TreeRetriever):
    """Collapsed-tree search (see the module docstring; settings: :class:`TreeParams`)."""

    mode = "collapsed"

    def _ranked(self, vector: np.ndarray, n: int) -> Ranked:
        """The ``n`` nodes most similar to the query over the leaves and every summary layer."""
        store, tree = self.index.store, self.index.tree
        ranked = [(key, score, 0) for key, score in vector_search(store, self.index.CHUNK_COLLECTION, vector, n)]
        for level in tree.levels():
            ranked += [(key, score, level) for key, score in vector_search(store, tree.collection(level), vector, n)]
        return sorted(ranked, key=lambda node: (-round(node[1], 6), node[2], node[0]))[:n]

    async def _search(self, query: str, k: int, *, context: bool) -> Retrieval:
        vector = await query_vector(self.index, query)
        if vector is None:
            return Retrieval(query=query)
        hits = self._hits(self._ranked(vector, k), vector)
        result = Retrieval(query=query, hits=hits, stats={"summary_hits": sum(h.kind == "summary" for h in hits)})
        if context:  # the same ranking filled to the budget, not cut at k: the paper's 2,000 tokens
            result.context = self._hits(self._ranked(vector, max(k, self.params.max_tokens // 10)), vector)
        return result


class TraversalRetriever(_TreeRetriever):
    """Tree-traversal search (see the module docstring; settings: :class:`TraversalParams`)."""

    mode = "traversal"
    params_class = TraversalParams
    params: TraversalParams

    async def _choose(self, query: str, k: int) -> tuple[np.ndarray | None, Ranked, dict[int, list[str]]]:
        """The query vector, every chosen node in the order chosen, and the ids per layer."""
        vector = await query_vector(self.index, query)
        chosen: Ranked = []
        path: dict[int, list[str]] = {}
        if vector is None:
            return vector, chosen, path
        width = self.params.top_k or k
        shape, roots = self._tree()
        if not roots:  # no tree: the nearest leaves
            layer = [(key, score, 0) for key, score in vector_search(self.index.store, self.index.CHUNK_COLLECTION, vector, width)]
        else:
            layer = self._scored(roots, vector)[:width]
        while layer:
            chosen += layer
            for key, _, level in layer:
                path.setdefault(level, []).append(key)
            children = list(dict.fromkeys(c for key, _, level in layer if level > 0 and key in shape for c in shape[key][1]))
            layer = self._scored([(c, shape[c][0] if c in shape else 0) for c in children], vector)[:width]
        return vector, chosen, path

    def _tree(self) -> tuple[dict[str, tuple[int, list[str]]], list[tuple[str, int]]]:
        """Each summary's level and children (what the traversal walks, without reading the
        summaries, whose leaf lists are most of a record), and the nodes no summary holds with
        their layers (the top layer, and any node carried up to it; none when there is no
        tree). Kept until the tree or the leaves change."""
        store, tree = self.index.store, self.index.tree

        def build() -> tuple[dict[str, tuple[int, list[str]]], list[tuple[str, int]]]:
            shape = {g.id: (g.level, list(g.children)) for g in tree.all().values()}
            if not shape:
                return shape, []
            held = {c for _, children in shape.values() for c in children}
            return shape, [(key, level) for key, (level, _) in shape.items() if key not in held] + [(c, 0) for c in store.chunk_ids() if c not in held]

        key = (tree.groups.generation(), store.vector_generation(self.index.CHUNK_COLLECTION))
        return self.index.derived("raptor:tree", key, build)

    def _scored(self, nodes: list[tuple[str, int]], vector: np.ndarray) -> Ranked:
        """``nodes`` (of any layers) by cosine to the query, best first."""
        by_level: dict[int, list[str]] = {}
        for key, level in nodes:
            by_level.setdefault(level, []).append(key)
        scored = [
            (key, score, level)
            for level, keys in by_level.items()
            for key, score in self._similar(self.index.CHUNK_COLLECTION if level == 0 else self.index.tree.collection(level), keys, vector)
        ]
        return sorted(scored, key=lambda n: (-round(n[1], 6), n[2], n[0]))

    async def _search(self, query: str, k: int, *, context: bool) -> Retrieval:
        vector, chosen, path = await self._choose(query, k)
        best = sorted(chosen, key=lambda n: (-round(n[1], 6), n[2], n[0]))[:k]
        result = Retrieval(query=query, stats={"path": path})
        if vector is not None:
            result.hits = self._hits(best, vector)
            result.context = self._hits(chosen, vector) if context else []
        return result


__all__ = ["CollapsedRetriever", "TraversalParams", "TraversalRetriever", "TreeParams"]
