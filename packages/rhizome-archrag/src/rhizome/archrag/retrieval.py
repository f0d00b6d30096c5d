"""ArchRAG's two searches over its C-HNSW index.

``hierarchical`` (the raw hits)
    Embed the query; hierarchical search (Algorithm 2) from the top layer down returns the
    ``k_per_layer`` nearest nodes of every layer (default 5, all layers; ``layers`` picks some).
    Layer 0's entities bring their relations as a textual subgraph: every relation between two
    retrieved entities, plus the ``max_relations`` (10) relations of a retrieved entity nearest
    the query. Each entity, relation and community is a hit scored by its cosine to the query,
    citing the chunks it was extracted from (a community: the chunks of its entities, most
    cited first).
``archrag`` (the paper's retrieval: adaptive filtering)
    The same nodes, as numbered rows per layer, packed into batches of at most
    ``filter_max_tokens``; every batch is one model call (all concurrently, bounded by the
    model's own limit) that lists key points with an importance score 0–100 and the rows each
    rests on. Points scoring 0 are dropped, the rest pooled across layers, sorted by score and
    cut where they would overflow ``context_max_tokens``; each point is a hit citing the chunks
    of its rows (of its whole batch when it names none). :meth:`ArchRAGIndex.answer` writes the
    answer from these points with the merge prompt, most important first.

    Without a chat model nothing filters: every retrieved row is its own point, scored by its
    cosine to the query (× 100), and the same drop, sort and budget cut apply, so an offline
    search still returns ``k`` hits with provenance (topped up from the nearest chunks when the
    rows run out, as every mode is).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from typing import Any

from rhizome.archrag.index import community_text, relation_text
from rhizome.archrag.prompts import (
    FILTER_PROMPT,
    FILTER_SYSTEM,
    MERGE_INSTRUCTIONS,
    MERGE_SYSTEM,
    FilterOutput,
)
from rhizome.core.errors import ConfigurationError
from rhizome.core.models.budget import fit
from rhizome.core.retrieval import (
    MAX_PROVENANCE_CHUNKS,
    BaseRetriever,
    Retrieval,
    check_positive,
    pack,
    provenance,
    query_vector,
    vector_search,
)
from rhizome.core.text import count_tokens, truncate_tokens
from rhizome.core.types import Chunk, Hit

POINT_TOKENS = 80
"""Tokens a filter answer needs per point (a sentence or two, a score, row numbers)."""

MAX_POINTS = 10
"""Points a filter answer is expected to hold at most (room reserved for the reply)."""

POINT_OVERHEAD = 12
"""Tokens of the analyst header each point gets in the merge prompt."""


class HierarchicalSearch(BaseRetriever):
    """Hierarchical search over the C-HNSW index, unfiltered (see the module docstring).

    ``k_per_layer``: nodes per layer (default the config's 5); ``layers``: the layers to return
    (default all; 0 = entities); ``ef_search``: the beam (default the config's)."""

    default_k = 10
    mode = "hierarchical"

    def __init__(
        self, index: Any, k: int | None = None, *, k_per_layer: int | None = None, layers: Sequence[int] | None = None,
        ef_search: int | None = None,
    ) -> None:
        super().__init__(index, k)
        config = index.config
        self.k_per_layer = check_positive("k_per_layer", config.k_per_layer if k_per_layer is None else k_per_layer)
        self.ef_search = check_positive("ef_search", config.ef_search if ef_search is None else ef_search)
        if layers is not None and (isinstance(layers, (str, bytes)) or not all(isinstance(x, int) and x >= 0 for x in layers)):
            raise ConfigurationError(f"layers must be a list of layer numbers (0 = entities), got {layers!r}")
        self.layers = None if layers is None else tuple(sorted(set(layers)))

    async def rows(self, query: str) -> tuple[dict[int, list[Hit]], dict[str, Any]]:
        """The hits of every searched layer, nearest first (layer 0: entities, then relations)."""
        vector = await query_vector(self.index, query)
        if vector is None:
            return {}, {}
        hnsw, ids = await asyncio.to_thread(self.index.chnsw)  # built once per index state
        if hnsw is None:
            return {}, {}
        found = hnsw.search(vector[0], self.k_per_layer, ef=self.ef_search, layers=self.layers)
        graph = self.index.graph()
        layers: dict[int, list[tuple[str, float]]] = {
            layer: [(ids[layer][row], score) for row, score in rows] for layer, rows in found.items()
        }
        entities = [key for key, _ in layers.get(0, [])]
        relations = self._relations(graph, entities, vector) if 0 in layers else []
        wanted: list[str] = []
        for eid in entities:
            wanted += graph.entities[eid].source_chunk_ids if eid in graph.entities else []
        for rid, _ in relations:
            wanted += graph.relations[rid].source_chunk_ids
        cited = {layer: {key: graph.community_chunks(graph.communities[key]) for key, _ in nodes if key in graph.communities}
                 for layer, nodes in layers.items() if layer > 0}
        wanted += [cid for per in cited.values() for cids in per.values() for cid in cids[:MAX_PROVENANCE_CHUNKS * 2]]
        chunks = self.index.store.chunks(list(dict.fromkeys(wanted)))
        names = {eid: e.name for eid, e in graph.entities.items()}
        out: dict[int, list[Hit]] = {}
        for layer, nodes in sorted(layers.items()):
            hits = []
            if layer == 0:
                for eid, score in nodes:
                    entity = graph.entities.get(eid)
                    if entity is not None:
                        text = f"{entity.name}: {entity.description}".strip().rstrip(":")
                        hits.append(self._hit(eid, text, score, "entity", chunks, entity.source_chunk_ids, layer=0, name=entity.name))
                for rid, score in relations:
                    relation = graph.relations[rid]
                    hits.append(self._hit(rid, relation_text(relation, names), score, "relation", chunks, relation.source_chunk_ids, layer=0))
            else:
                for key, score in nodes:
                    community = graph.communities.get(key)
                    if community is not None:
                        hits.append(self._hit(key, community_text(community), score, "community", chunks, cited[layer].get(key, []),
                                              layer=layer, title=community.title, entities=len(community.entity_ids)))
            out[layer] = [h for h in hits if h.provenance.chunk_ids]
        return out, {"layers": {layer: len(hits) for layer, hits in out.items()}, "relations": len(relations)}

    def _relations(self, graph: Any, entities: list[str], vector: Any) -> list[tuple[str, float]]:
        """Relations among the retrieved entities, and the ``max_relations`` of theirs nearest
        the query (spec §7.12)."""
        chosen = set(entities)
        incident = {rid for eid in entities for rid in graph.relations_of.get(eid, ())}
        if not incident:
            return []
        ranked = vector_search(self.index.store, self.index.RELATION_COLLECTION, vector, len(incident), among=incident)
        inside = [(rid, s) for rid, s in ranked if graph.relations[rid].source in chosen and graph.relations[rid].target in chosen]
        near = [(rid, s) for rid, s in ranked if (rid, s) not in inside][: self.index.config.max_relations]
        return sorted(inside + near, key=lambda p: (-p[1], p[0]))

    def _hit(self, key: str, text: str, score: float, kind: Any, chunks: dict[str, Chunk], chunk_ids: Sequence[str], **metadata: Any) -> Hit:
        return Hit(id=key, text=text, score=float(score), kind=kind, provenance=provenance(chunks, chunk_ids),
                   metadata={**metadata, "via": self.mode})

    async def _asearch(self, query: str, k: int) -> Retrieval:
        rows, stats = await self.rows(query)
        return Retrieval(query=query, hits=[h for hits in rows.values() for h in hits], stats=stats)


class FilteredSearch(HierarchicalSearch):
    """Hierarchical search with adaptive filtering (see the module docstring).

    Besides :class:`HierarchicalSearch`'s options: ``filter_max_tokens`` (rows per filter call)
    and ``context_max_tokens`` (the budget of the sorted points); defaults from the config."""

    mode = "archrag"

    def __init__(self, index: Any, k: int | None = None, *, filter_max_tokens: int | None = None,
                 context_max_tokens: int | None = None, **options: Any) -> None:
        super().__init__(index, k, **options)
        config = index.config
        self.filter_max_tokens = check_positive("filter_max_tokens", config.filter_max_tokens if filter_max_tokens is None else filter_max_tokens)
        self.context_max_tokens = check_positive("context_max_tokens", config.context_max_tokens if context_max_tokens is None else context_max_tokens)

    async def _asearch(self, query: str, k: int) -> Retrieval:
        rows, stats = await self.rows(query)
        llm = self.index.llm
        if llm is None:
            points = [self._point(h.text, round(100 * max(0.0, h.score)), [h], layer, offline=True) for layer, hits in rows.items() for h in hits]
            stats["filter_calls"] = 0
        else:
            batches = [(layer, batch) for layer, hits in sorted(rows.items(), reverse=True) for batch in self.batches(query, hits)]
            found = await asyncio.gather(*(self._filter(query, layer, batch) for layer, batch in batches))
            points = [p for ps in found for p in ps]
            stats["filter_calls"] = len(batches)
        kept = select(points, self.context_max_tokens)
        stats.update(points=len(kept), zero_scores=sum(p.metadata["importance"] <= 0 for p in points), over_budget=len([p for p in points if p.metadata["importance"] > 0]) - len(kept))
        return Retrieval(query=query, hits=kept, stats=stats)

    def batches(self, query: str, hits: list[Hit]) -> list[list[Hit]]:
        """One layer's rows packed into filter calls of at most ``filter_max_tokens`` (less
        when the model's window holds less, with room for the points)."""
        budget = fit(self.index.llm, self.filter_max_tokens, reply_tokens=POINT_TOKENS * MAX_POINTS,
                     fixed=[FILTER_SYSTEM, self._prompt(query, "", 0)])
        budget = max(budget, 50)
        out: list[list[Hit]] = [[]]
        used = 0
        for hit in hits:
            tokens = count_tokens(hit.text) + 4
            if out[-1] and used + tokens > budget:
                out.append([])
                used = 0
            out[-1].append(hit)
            used += tokens
        return [b for b in out if b]

    def _prompt(self, query: str, rows: str, layer: int) -> str:
        what = "entities and their relations" if layer == 0 else f"community reports of layer {layer}"
        return FILTER_PROMPT.format(question=query, what=what, rows=rows)

    async def _filter(self, query: str, layer: int, batch: list[Hit]) -> list[Hit]:
        """One filter call: the key points the model finds in one batch of rows."""
        budget = fit(self.index.llm, self.filter_max_tokens, reply_tokens=POINT_TOKENS * MAX_POINTS,
                     fixed=[FILTER_SYSTEM, self._prompt(query, "", layer)])
        lines = [f"{i}. {h.text}" for i, h in enumerate(batch, 1)]
        rows = "\n".join(line for line, _ in pack(lines, max(budget, 50), str, overhead=1))
        if count_tokens(rows) > max(budget, 50):
            rows = truncate_tokens(rows, max(budget, 50))
        out = await self.index.llm.acomplete_json(self._prompt(query, rows, layer), FilterOutput, system=FILTER_SYSTEM)
        points = []
        for point in out.points:
            text = point.description.strip()
            if text:
                points.append(self._point(text, point.score, cited_rows(point.sources, batch), layer))
        return points

    def _point(self, text: str, score: float, rows: list[Hit], layer: int, *, offline: bool = False) -> Hit:
        sources = [h.id for h in rows]
        key = hashlib.sha256("|".join([text, *sources]).encode("utf-8")).hexdigest()[:16]
        cited = rows[0].provenance
        for h in rows[1:]:
            cited = cited.merge(h.provenance)
        cited = cited.model_copy(update={
            "chunk_ids": cited.chunk_ids[:MAX_PROVENANCE_CHUNKS],
            "spans": [s for s in cited.spans if s.chunk_id in set(cited.chunk_ids[:MAX_PROVENANCE_CHUNKS])],
        })
        cited = cited.model_copy(update={"document_ids": list(dict.fromkeys(s.document_id for s in cited.spans))})
        metadata = {"importance": float(score), "layer": layer, "sources": sources, "via": self.mode}
        if offline:
            metadata["offline"] = True
        return Hit(id=f"point-{key}", text=text, score=float(score) / 100.0, kind="point", provenance=cited, metadata=metadata)


def cited_rows(sources: Sequence[str], batch: list[Hit]) -> list[Hit]:
    """The rows of ``batch`` a point names by number ("3", "row 3", "[3]"); the whole batch
    when it names none that exists."""
    numbers = [int(n) for s in sources for n in re.findall(r"\d+", str(s))]
    picked = [batch[n - 1] for n in dict.fromkeys(numbers) if 1 <= n <= len(batch)]
    return picked or list(batch)


def select(points: Sequence[Hit], budget: int) -> list[Hit]:
    """Points without those scoring 0, highest score first (ties keep their order), cut where
    the next would overflow ``budget`` tokens (at least one point is kept)."""
    ranked = sorted((p for p in points if p.metadata["importance"] > 0), key=lambda p: -p.metadata["importance"])
    kept = [p for p, _ in pack(ranked, budget, lambda p: p.text, overhead=POINT_OVERHEAD, cut_first=False)]
    return kept or ranked[:1]


def render_point(hit: Hit) -> str:
    """A point as the merge prompt shows it: its importance, then its text."""
    return f"Importance score: {hit.metadata.get('importance', round(hit.score * 100))}\n{hit.text.strip()}"


def answer_inputs(retrieval: Retrieval, config: Any) -> tuple[list[Hit], dict[str, Any]]:
    """What :meth:`ArchRAGIndex.answer` reads: the points of an ``archrag`` search with the
    merge prompt; the hits of the other modes with the kernel's answer prompt."""
    if retrieval.mode == "archrag":
        points = [h for h in retrieval.hits if h.kind == "point"] or list(retrieval.hits)
        return points, {
            "system": MERGE_SYSTEM, "instructions": MERGE_INSTRUCTIONS.format(response_type="a short answer, then a brief explanation"),
            "render": render_point, "max_context_tokens": config.context_max_tokens,
        }
    return list(retrieval.context or retrieval.hits), {}


__all__ = ["FilteredSearch", "HierarchicalSearch", "answer_inputs", "cited_rows", "render_point", "select"]
