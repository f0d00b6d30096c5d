"""ArchRAG's two searches over its C-HNSW index.

``hierarchical`` (the raw hits)
    Embed the query; hierarchical search (Algorithm 2) from the top layer down returns the
    ``k_per_layer`` nearest nodes of every layer (default 5, all layers; ``layers`` picks some).
    Layer 0's entities bring their relations as a textual subgraph: every relation between two
    retrieved entities, plus the ``max_relations`` (10) relations of a retrieved entity nearest
    the query. Each entity, relation and community is a hit scored by its cosine to the query,
    citing the chunks it was extracted from (a community: the chunks of its entities), nearest
    the query first by the chunk vectors (``rank_provenance``; off: source order, a
    community's most cited first).
``passages`` (the passages behind the hierarchical search)
    The same search, answered with passages: the kernel's evidence walk
    (:mod:`~rhizome.core.retrieval.evidence`) over the entity–passage graph starts from the layer-0
    entities and the endpoints of the relations the search retrieved (at their cosines'
    relative weights), from the entity each name the query mentions links to (weight 1) and
    from the passages nearest the query; with ``community_seeds=True`` also from the retrieved
    communities' members. The walk's ranking is the ranking. Each hit is one passage. The paper hands the model key points, not passages; this mode is
    for chains that want the evidence itself, and it is how the search is scored against
    dense retrieval.
``archrag`` (the paper's retrieval: adaptive filtering)
    The same nodes, as numbered rows per layer, packed into batches of at most
    ``filter_max_tokens``; every batch is one model call (all concurrently, bounded by the
    model's own limit) that lists key points with an importance score 0–100 and the rows each
    rests on. Points scoring 0 are dropped, the rest pooled across layers, sorted by score and
    cut where they would overflow ``context_max_tokens``; each point is a hit citing the chunks
    of its rows (of its whole batch when it names none). :meth:`ArchRAGIndex.answer` writes the
    answer from these points with the merge prompt, most important first.

    The three steps are the kernel's :class:`~rhizome.core.retrieval.contract.MapReduceSearch`
    (``aplan``: search and batch; ``amap``: one filter call; ``reduce``: pool, sort, cut), so
    ``langgraph_rhizome`` can run the filter calls as graph branches.

    Without a chat model nothing filters: every retrieved row is its own point, scored by its
    cosine to the query (× 100), and the same drop, sort and budget cut apply, so an offline
    search still returns ``k`` hits with provenance (topped up from the nearest chunks when the
    rows run out, as every mode is).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field, Strict, field_validator

from rhizome.archrag.index import community_text, relation_text
from rhizome.archrag.prompts import FILTER_PROMPT, FILTER_SYSTEM, FilterOutput
from rhizome.core.errors import ConfigurationError
from rhizome.core.extraction import query_names
from rhizome.core.models.budget import fit
from rhizome.core.retrieval.contract import (
    MAX_PROVENANCE_CHUNKS,
    BaseRetriever,
    MapPlan,
    MapReduceSearch,
    Retrieval,
    batch_texts,
    chunk_hits,
    pack,
    point_hit,
    provenance,
    query_vector,
    same_text,
    vector_search,
)
from rhizome.core.retrieval.evidence import (
    EvidenceParams,
    link_names,
    merge_seeds,
    relative_weights,
)
from rhizome.core.retrieval.params import RetrieverParams
from rhizome.core.types import Hit

Row = tuple[int, str, str]
"""A retrieved node: ``(layer, kind, id)``, kind ``entity``, ``relation`` or ``community``."""

EXACT_CHUNKS = 256
"""A node citing at most this many chunks has each scored against the query (``rank_provenance``)."""

NEAREST_POOL = 2000
"""How many of the index's chunks nearest the query a larger node's chunks are taken from."""

POINT_TOKENS = 80
"""Tokens a filter answer needs per point (a sentence or two, a score, row numbers)."""

MAX_POINTS = 10
"""Points a filter answer is expected to hold at most (room reserved for the reply)."""

QUERY_VECTORS = 32
"""Query vectors a filtered search keeps, so its plan and batches embed the query once."""

POINT_OVERHEAD = 12
"""Tokens of the analyst header each point gets in the merge prompt."""


class HierarchicalParams(RetrieverParams):
    """The settings of :class:`HierarchicalSearch` (and of the searches built on it). Where one
    is not given, the index's own setting of that name (:class:`~rhizome.archrag.config.ArchRAGConfig`)
    is used: the defaults below are its defaults."""

    k_per_layer: int = Field(5, ge=1)
    """Nodes retrieved from each layer (the paper's k = 5)."""

    layers: tuple[Annotated[int, Strict(), Field(ge=0)], ...] | None = Field(None, strict=False)
    """The layers to search (0 = entities, then the community layers; a list), default all."""

    ef_search: int = Field(100, ge=1)
    """C-HNSW beam of a query (the paper's synthetic run 100)."""

    rank_provenance: bool = True
    """Order the chunks each node cites by their cosine to the query; off: source order for
    entities and relations, most cited first for communities."""

    @field_validator("layers")
    @classmethod
    def _layers_once(cls, layers: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return None if layers is None else tuple(sorted(set(layers)))


class HierarchicalSearch(BaseRetriever):
    """Hierarchical search over the C-HNSW index, unfiltered (see the module docstring;
    settings: :class:`HierarchicalParams`)."""

    default_k = 10
    mode = "hierarchical"
    params_class = HierarchicalParams
    params: HierarchicalParams

    def __init__(self, index: Any, k: int | None = None, **settings: Any) -> None:
        super().__init__(index, k, **settings)
        wanted, held = self.params.layers, [0, *index.communities.levels()]
        if wanted is not None and not set(wanted) <= set(held):
            raise ConfigurationError(
                f"layers {sorted(set(wanted) - set(held))} do not exist in this index; its layers are "
                f"{', '.join(map(str, held))} (0 = entities, then the community layers)"
            )

    def _default_settings(self) -> Mapping[str, Any]:
        """The index's settings of the same names (:class:`~rhizome.archrag.config.ArchRAGConfig`)."""
        config = self.index.config
        return {name: getattr(config, name) for name in self.params_class.model_fields if name in type(config).model_fields}

    async def nodes(self, query: str, vector: Any = None) -> tuple[list[tuple[Row, float]], dict[str, Any], Any]:
        """The nodes hierarchical search finds, ``((layer, kind, id), cosine)`` layer by layer,
        nearest first (layer 0: entities, then their relations), what it found per layer, and
        the query vector (None when the index holds none; ``vector``: the one the caller has)."""
        vector = await query_vector(self.index, query) if vector is None else vector
        if vector is None:
            return [], {}, None
        hnsw, ids = await asyncio.to_thread(self.index.chnsw)  # built once per index state
        if hnsw is None:
            return [], {}, vector
        found = hnsw.search(vector[0], self.params.k_per_layer, ef=self.params.ef_search, layers=self.params.layers)
        ranked: list[tuple[Row, float]] = []
        for layer, rows in sorted(found.items()):
            kind = "entity" if layer == 0 else "community"
            ranked += [((layer, kind, ids[layer][row]), score) for row, score in rows]
        entities = [key for (layer, _, key), _ in ranked if layer == 0]
        relations = self._relations(self.index.graph(), entities, vector) if 0 in found else []
        at = len([r for r in ranked if r[0][0] == 0])
        ranked[at:at] = [((0, "relation", rid), score) for rid, score in relations]
        return ranked, {"layers": {layer: len(rows) for layer, rows in sorted(found.items())}, "relations": len(relations)}, vector

    def hits(self, ranked: Sequence[tuple[Row, float]], vector: Any = None) -> list[Hit]:
        """Hits for ranked nodes, each citing the chunks it comes from (a community: the chunks
        of its entities, most cited first); with the query ``vector`` and ``rank_provenance``,
        each node's chunks nearest the query first. A node whose chunks are all gone is left
        out."""
        graph = self.index.graph()
        ranking = self.params.rank_provenance and vector is not None
        relations = graph.whole_relations(key for (_, kind, key), _ in ranked if kind == "relation")
        sources = self._sources(ranked, graph, relations)  # one state of the graph for the whole call
        if ranking:
            sources = self._nearest_first(sources, vector)
        sources = {row: cids[: MAX_PROVENANCE_CHUNKS * 2] for row, cids in sources.items()}
        chunks = self._cited(sources)
        entities = graph.whole_entities(key for (_, kind, key), _ in ranked if kind == "entity")
        out = []
        for row, score in ranked:
            layer, kind, key = row
            if row not in sources or (kind == "entity" and key not in entities):  # an entity gone since the graph was read
                continue
            metadata: dict[str, Any] = {"layer": layer, "via": self.mode}
            if kind == "entity":
                entity = entities[key]
                text = f"{entity.name}: {entity.description}".strip().rstrip(":")
                metadata["name"] = entity.name
            elif kind == "relation":
                relation = relations[key]
                text = relation_text(relation, graph.name(relation.source), graph.name(relation.target))
            else:
                community = graph.communities[key]
                text = community_text(community)
                metadata.update(title=community.title, entities=len(community.entity_ids))
            hit = Hit(id=key, text=text, score=float(score), kind=kind, provenance=provenance(chunks, sources[row]), metadata=metadata)
            if hit.provenance.chunk_ids:
                out.append(hit)
        return out

    def _sources(self, ranked: Sequence[tuple[Row, float]], graph: Any = None, relations: Mapping[str, Any] | None = None) -> dict[Row, list[str]]:
        """The chunks each ranked node comes from (a community: its entities' chunks, most cited
        first); nodes no longer in ``graph`` (default: the index's now) are left out.
        ``relations``: the ranked relations read whole already."""
        graph = self.index.graph() if graph is None else graph
        if relations is None:
            relations = graph.whole_relations(key for (_, kind, key), _ in ranked if kind == "relation")
        sources: dict[Row, list[str]] = {}
        for row, _ in ranked:
            _, kind, key = row
            if kind == "entity" and key in graph.entities:
                sources[row] = graph.sources.get(key, [])
            elif kind == "relation" and key in relations:
                sources[row] = relations[key].source_chunk_ids
            elif kind == "community" and key in graph.communities:
                sources[row] = graph.community_chunks(graph.communities[key])
        return sources

    def _cited(self, sources: Mapping[Row, list[str]]) -> dict[str, Any]:
        """The stored chunks a hit of each node cites: its first :data:`MAX_PROVENANCE_CHUNKS`
        stored ones among ``sources`` (each node's first chunks, a margin for chunks gone since
        included), read in two steps: the first that many of every node, then the margin of the
        nodes some of those are gone for. Not every chunk a top-layer community cites (most of
        the corpus)."""
        limit, store = MAX_PROVENANCE_CHUNKS, self.index.store
        chunks = store.chunks(list(dict.fromkeys(c for ids in sources.values() for c in ids[:limit])))
        short = [ids[limit:] for ids in sources.values() if len(ids) > limit and sum(c in chunks for c in ids[:limit]) < limit]
        if short:
            chunks.update(store.chunks(list(dict.fromkeys(c for ids in short for c in ids if c not in chunks))))
        return chunks

    def live(self, ranked: Sequence[tuple[Row, float]]) -> list[Row]:
        """The ranked nodes that still cite a stored chunk among the first ones a hit would
        cite, in order: what :meth:`hits` keeps, without reading the chunks (first the
        :data:`MAX_PROVENANCE_CHUNKS` first of each node, then the margin of those that have
        none stored)."""
        limit, store = MAX_PROVENANCE_CHUNKS, self.index.store
        sources = {row: ids[: limit * 2] for row, ids in self._sources(ranked).items()}
        stored = set(store.stored_order({c for ids in sources.values() for c in ids[:limit]}))
        rest = {c for ids in sources.values() if stored.isdisjoint(ids[:limit]) for c in ids[limit:]}
        if rest:
            stored.update(store.stored_order(rest))
        return [row for row, _ in ranked if row in sources and not stored.isdisjoint(sources[row])]

    def _nearest_first(self, sources: dict[Row, list[str]], vector: Any, keep: int = MAX_PROVENANCE_CHUNKS * 2) -> dict[Row, list[str]]:
        """Each node's first ``keep`` chunks by their vector's cosine to the query (ties and
        chunks without a vector keep their order, after those with one), then the rest.

        A node citing up to :data:`EXACT_CHUNKS` chunks has them all scored. A larger one (a
        top-layer community cites most of the corpus) takes its chunks among the query's
        :data:`NEAREST_POOL` nearest chunks of the whole index: when at least ``keep`` of them
        score above the pool's last, they are its ``keep`` nearest (on an exact store; on an
        approximate one, as near as its search finds); otherwise all its chunks are scored. When
        the pool is every chunk of the index (fewer than :data:`NEAREST_POOL`), its scores serve
        the small nodes too. The pool is the same for every batch of one query: it is kept until
        the next query or a write of the chunk vectors."""
        store, name = self.index.store, self.index.CHUNK_COLLECTION
        if not store.has_collection(name):
            return sources
        held = store.collection(name, vector.shape[1])
        pool: dict[str, float] = {}
        every: dict[str, float] | None = None  # the pool, when it is every chunk of the index
        by_score: list[str] = []  # the pool, nearest first
        tied: set[str] = set()  # chunks of the pool whose score another one shares
        floor = -2.0
        if len(held) < NEAREST_POOL or any(len(cids) > EXACT_CHUNKS for cids in sources.values()):
            key = (store.vector_generation(name), vector.tobytes())
            pool, floor, every, by_score, tied = self.index.derived("archrag-pool", key, lambda: nearest_pool(held, vector))
        out: dict[Row, list[str]] = {}
        exact: dict[Row, list[str]] = {}
        for row, cids in sources.items():
            if len(cids) <= EXACT_CHUNKS:
                exact[row] = cids
                continue
            members = set(cids)
            if len(members) == len(cids) and tied.isdisjoint(members):  # the pool's order is the node's
                near = [c for c in by_score if c in members]
            else:  # equal scores keep the node's own order
                near = sorted((c for c in cids if c in pool), key=lambda c: -pool[c])
            if len(near) >= keep and pool[near[keep - 1]] > floor:
                first = set(near[:keep])
                out[row] = near[:keep] + [c for c in cids if c not in first]
            else:
                exact[row] = cids
        wanted = list(dict.fromkeys(c for cids in exact.values() for c in cids))
        if every is not None:  # the pool scored every chunk already
            score = every
        else:
            score = dict(held.search(vector, len(wanted), among=wanted)[0]) if wanted else {}  # one search, in faiss
        out.update({row: sorted(cids, key=lambda c: -score.get(c, -2.0)) for row, cids in exact.items()})
        return {row: out[row] for row in sources}

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

    async def _asearch(self, query: str, k: int) -> Retrieval:
        ranked, stats, vector = await self.nodes(query)
        return Retrieval(query=query, hits=self.hits(ranked, vector), stats=stats)


class PassageParams(HierarchicalParams, EvidenceParams):
    """The settings of :class:`PassageSearch`: :class:`HierarchicalParams`, the kernel's
    evidence ranking (:class:`~rhizome.core.retrieval.evidence.EvidenceParams`) and ``community_seeds``."""

    community_seeds: bool = False
    """Whether the retrieved communities seed their members (off: on musique-dev they lowered
    R@5 from 0.711 to 0.608 and made a query five times slower, see docs/archrag.md)."""


class PassageSearch(HierarchicalSearch):
    """The passages behind a hierarchical search, ranked by the kernel's evidence walk from
    what it retrieved (see the module docstring; settings: :class:`PassageParams`)."""

    mode = "passages"
    params_class = PassageParams
    params: PassageParams

    def seeds(self, ranked: Sequence[tuple[Row, float]]) -> dict[str, float]:
        """Seeds from what hierarchical search retrieved: the layer-0 entities and the
        endpoints of the retrieved relations, at their cosines' relative weights (one pool);
        each retrieved community at its relative weight among the communities, divided among
        its member entities."""
        graph, temperature = self.index.graph(), self.params.temperature
        ends: dict[str, tuple[str, ...]] = {}
        for (_, kind, key), _ in ranked:
            if kind == "entity" and key in graph.entities:
                ends[key] = (key,)
            elif kind == "relation" and key in graph.relations:
                ends[key] = (graph.relations[key].source, graph.relations[key].target)
        layer0 = [(key, score) for (_, kind, key), score in ranked if key in ends]
        seeds: dict[str, float] = {}
        for key, weight in relative_weights(layer0, temperature).items():
            for eid in ends[key]:
                seeds[eid] = max(weight, seeds.get(eid, 0.0))
        if self.params.community_seeds:
            found = [(key, score) for (_, kind, key), score in ranked if kind == "community" and key in graph.communities]
            shared: dict[str, float] = {}
            for key, weight in relative_weights(found, temperature).items():
                members = [e for e in graph.communities[key].entity_ids if e in graph.entities]
                for eid in members:
                    shared[eid] = max(weight / len(members), shared.get(eid, 0.0))
            seeds = merge_seeds(shared, seeds)
        return seeds

    async def _asearch(self, query: str, k: int) -> Retrieval:
        names = query_names(query)
        vectors = await query_vector(self.index, query, names)
        ranked, stats, vector = await self.nodes(query, None if vectors is None else vectors[:1])
        if vector is None or vectors is None:
            return Retrieval(query=query, hits=[], stats=stats)
        options = self.params
        dense = vector_search(self.index.store, self.index.CHUNK_COLLECTION, vector, max(options.dense_k, k))
        seeds = merge_seeds(self.seeds(ranked), await link_names(self.index, self.index.name_collection(), vectors[1:]))
        if options.chains:
            facts = vector_search(self.index.store, self.index.RELATION_COLLECTION, vector, options.fact_k)
            seeds = merge_seeds(seeds, self.index.chain_seeds(options, vector, facts)[0])
        walked = options.rank(self.index.evidence(), seeds, dense, limit=max(options.dense_k, k))
        stats["seed_entities"] = len(seeds)
        return Retrieval(query=query, hits=chunk_hits(self.index, walked[:k], via=self.mode), stats=stats)


class FilteredParams(HierarchicalParams):
    """The settings of :class:`FilteredSearch`: :class:`HierarchicalParams` and the two
    budgets of the filter (defaults: the index's settings of those names)."""

    filter_max_tokens: int = Field(4000, ge=1)
    """Tokens of retrieved rows per filter call; a layer's rows are batched under it (the
    authors' code 4,000)."""

    context_max_tokens: int = Field(4000, ge=1)
    """Budget of the sorted key points (spec §7.13: ~4,000)."""


class FilteredSearch(HierarchicalSearch, MapReduceSearch):
    """Hierarchical search with adaptive filtering (see the module docstring), as the kernel's
    map-reduce steps, so ``langgraph_rhizome`` can run the filter calls as graph branches:
    ``aplan`` searches the C-HNSW index and batches each layer's rows (ids); ``amap`` is one
    filter call (offline: the rows scored by cosine); ``reduce`` sorts the pooled points and
    cuts them to the budget. Settings: :class:`FilteredParams`."""

    mode = "archrag"
    params_class = FilteredParams
    params: FilteredParams

    def __init__(self, index: Any, k: int | None = None, **settings: Any) -> None:
        super().__init__(index, k, **settings)
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._vectors_lock = threading.Lock()

    async def _query_vector(self, query: str) -> Any:
        """The query's vector, embedded once for the plan and every batch of one search (the
        batches run apart, e.g. as graph branches): the last :data:`QUERY_VECTORS` queries'
        vectors are kept, under a lock, so one retriever still serves many threads."""
        with self._vectors_lock:
            if query in self._vectors:
                self._vectors.move_to_end(query)
                return self._vectors[query]
        vector = await query_vector(self.index, query)
        with self._vectors_lock:
            self._vectors[query] = vector
            while len(self._vectors) > QUERY_VECTORS:
                self._vectors.popitem(last=False)
        return vector

    async def aplan(self, query: str) -> MapPlan:
        """The rows of every searched layer, top layer first, in filter batches (offline: one
        batch per layer); ids are ``layer:kind:id``."""
        ranked, stats, _ = await self.nodes(query, await self._query_vector(query))
        batches = []
        if self.index.llm is None:  # one batch per layer: only which rows still cite chunks; amap ranks them
            by_layer: dict[int, list[Row]] = {}
            for row in self.live(ranked):
                by_layer.setdefault(row[0], []).append(row)
            batches = [[f"{layer}:{kind}:{key}" for layer, kind, key in rows] for _, rows in sorted(by_layer.items(), reverse=True)]
        else:  # the rows' texts, packed into filter calls
            with_text: dict[int, list[Hit]] = {}
            for hit in self.hits(ranked):
                with_text.setdefault(hit.metadata["layer"], []).append(hit)
            for layer, hits in sorted(with_text.items(), reverse=True):
                batches += [[f"{layer}:{h.kind}:{h.id}" for h in part] for part in self.batches(query, hits)]
        stats["filter_calls"] = len(batches) if self.index.llm is not None else 0
        return MapPlan(batches=batches, stats=stats)

    async def amap(self, query: str, batch: Sequence[str], k: int) -> list[Hit]:
        """One batch's points, score 0 dropped, best ``k`` first, each citing its rows' chunks."""
        rows = [decode(key) for key in batch]
        vector = await self._query_vector(query)
        if vector is None or not rows:
            return []
        hits = self.hits([(row, score) for row, score in zip(rows, self._cosines(rows, vector))], vector)
        if not hits:
            return []
        layer = hits[0].metadata["layer"]
        if self.index.llm is None:
            points = [self._point(h.text, round(100 * max(0.0, h.score)), [h], layer, offline=True) for h in hits]
        else:
            points = await self._filter(query, layer, hits)
        ranked = sorted((p for p in points if p.metadata["importance"] > 0), key=lambda p: -p.metadata["importance"])
        return ranked[:k]

    def reduce(self, query: str, points: Sequence[Hit], k: int) -> list[Hit]:
        """The pooled points, highest score first, each text once, cut where the next would
        overflow ``context_max_tokens`` and at ``k``."""
        seen: set[str] = set()
        unique = []
        for point in points:
            text = same_text(point.text)
            if text not in seen:
                seen.add(text)
                unique.append(point)
        return select(unique, self.params.context_max_tokens)[:k]

    async def _asearch(self, query: str, k: int) -> Retrieval:
        plan = await self.aplan(query)
        mapped = await asyncio.gather(*(self.amap(query, batch, k) for batch in plan.batches))
        pooled = [p for points in mapped for p in points]
        within = self.reduce(query, pooled, max(1, len(pooled)))  # every point the budget holds; the hits are its first k
        hits = within[:k]
        distinct = len({same_text(p.text) for p in pooled})
        stats = {**plan.stats, "batches": len(plan.batches), "points": len(hits), "over_budget": distinct - len(within)}
        return Retrieval(query=query, hits=hits, stats=stats)

    def _cosines(self, rows: Sequence[Row], vector: Any) -> list[float]:
        """Each row's cosine to the query, from its stored vector (0 when it has none)."""
        store, index = self.index.store, self.index
        names = {"entity": index.ENTITY_COLLECTION, "relation": index.RELATION_COLLECTION}
        by_collection: dict[str, list[int]] = {}  # one read per collection, not one per row
        for i, (layer, kind, _) in enumerate(rows):
            by_collection.setdefault(names.get(kind) or index.communities.collection(layer), []).append(i)
        out = [0.0] * len(rows)
        for name, positions in by_collection.items():
            if not store.has_collection(name):
                continue
            held, matrix = store.collection(name, vector.shape[1]).present([rows[i][2] for i in positions])
            found = dict(zip(held, matrix))
            for i in positions:
                if rows[i][2] in found:
                    out[i] = float(found[rows[i][2]] @ vector[0])
        return out

    def batches(self, query: str, hits: list[Hit]) -> list[list[Hit]]:
        """One layer's rows packed into filter calls of at most ``filter_max_tokens`` (less
        when the model's window holds less, with room for the points)."""
        budget = self._budget(query, hits[0].metadata["layer"] if hits else 0)
        return batch_texts(hits, budget, lambda hit: hit.text, overhead=4)

    def _budget(self, query: str, layer: int) -> int:
        fixed = [FILTER_SYSTEM, self._prompt(query, "", layer)]
        return max(50, fit(self.index.llm, self.params.filter_max_tokens, reply_tokens=POINT_TOKENS * MAX_POINTS, fixed=fixed))

    def _prompt(self, query: str, rows: str, layer: int) -> str:
        what = "entities and their relations" if layer == 0 else f"community reports of layer {layer}"
        return FILTER_PROMPT.format(question=query, what=what, rows=rows)

    async def _filter(self, query: str, layer: int, batch: list[Hit]) -> list[Hit]:
        """One filter call: the key points the model finds in one batch of rows."""
        budget = self._budget(query, layer)
        lines = [f"{i}. {h.text}" for i, h in enumerate(batch, 1)]
        rows = "\n".join(line for line, _ in pack(lines, budget, str, overhead=1))
        out = await self.index.llm.acomplete_json(self._prompt(query, rows, layer), FilterOutput, system=FILTER_SYSTEM)
        points = []
        for point in out.points:
            text = point.description.strip()
            if text:
                points.append(self._point(text, point.score, cited_rows(point.sources, batch), layer))
        return points

    def _point(self, text: str, score: float, rows: list[Hit], layer: int, *, offline: bool = False) -> Hit:
        """A point citing the first chunks of its ``rows``."""
        sources = [h.id for h in rows]
        cited = rows[0].provenance
        for h in rows[1:]:
            cited = cited.merge(h.provenance)
        kept = cited.chunk_ids[:MAX_PROVENANCE_CHUNKS]
        spans = [s for s in cited.spans if s.chunk_id in set(kept)]
        cited = cited.model_copy(update={"chunk_ids": kept, "spans": spans, "document_ids": list(dict.fromkeys(s.document_id for s in spans))})
        return point_hit(text, float(score), "|".join([text, *sources]), cited, layer=layer, sources=sources, via=self.mode, **({"offline": True} if offline else {}))


def nearest_pool(held: Any, vector: Any) -> tuple[dict[str, float], float, dict[str, float] | None, list[str], set[str]]:
    """The :data:`NEAREST_POOL` chunks of ``held`` nearest the query ``vector``, as
    :meth:`HierarchicalSearch._nearest_first` reads them: their scores, the last one's score
    (-2 when the pool is not full), the scores again when the pool is every chunk (else None),
    the chunks nearest first, and those whose score another one shares."""
    found = held.search(vector, NEAREST_POOL)[0]
    pool = dict(found)
    floor = found[-1][1] if len(found) == NEAREST_POOL else -2.0
    every = pool if len(found) < NEAREST_POOL and len(found) == len(held) else None
    alike = Counter(pool.values())
    return pool, floor, every, sorted(pool, key=pool.__getitem__, reverse=True), {c for c, score in pool.items() if alike[score] > 1}


def decode(key: str) -> Row:
    """A plan id ``layer:kind:id`` as ``(layer, kind, id)``."""
    layer, kind, rest = key.split(":", 2)
    return int(layer), kind, rest


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


__all__ = [
    "FilteredParams",
    "FilteredSearch",
    "HierarchicalParams",
    "HierarchicalSearch",
    "PassageParams",
    "PassageSearch",
    "cited_rows",
    "select",
]
