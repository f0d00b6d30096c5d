"""Dual-level retrieval ψ of LightRAG, with passages ranked by graph evidence.

One model call turns the query into low-level keywords (specific entities and details) and
high-level keywords (themes); offline, rule-based keywords stand in. The context is LightRAG's,
per mode:

``local``   low-level keywords → entity vectors (the entities' name keys) → their relations
            (one hop);
``global``  high-level keywords → relation vectors (the relations' theme keys) → their endpoint
            entities (one hop);
``hybrid``  both, merged in turn (the paper's full LightRAG, and the default);
``mix``     as hybrid (the reference code's ``mix`` adds vector-searched chunks; here every
            graph mode ranks its passages with them, below).

The index's ``naive`` mode (the vector search over chunks, the baseline) is the kernel's
:data:`~rhizome.core.naive.NAIVE`, not this retriever.

The passages (source chunks) are ranked by the kernel's evidence walk over the entity–passage
graph (:mod:`rhizome.core.retrieval.evidence`), with the nearest chunks as passage seeds in every mode.
Its entity seeds come from each mode's keywords: ``local`` links each low-level keyword to its
nearest entity name; ``global`` takes the endpoints of the relations nearest the query and its
high-level keywords (at their relative weights); ``hybrid`` both; ``mix`` both plus the entity
names nearest the whole query.

The context keeps LightRAG's three blocks — entity profiles, relation profiles, source chunks —
each cut to its token budget (:meth:`LightRAGRetriever.ablocks`; as
:attr:`~rhizome.core.retrieval.contract.Retrieval.context`, each hit tagged with its ``section``). The
``k`` hits are the ranked passages, then (only when they run out) the profiles, interleaved.

Offline query keywords: the low-level keywords are the names and quoted phrases the query
contains (:func:`~rhizome.core.extraction.query_names`), the high-level keywords its remaining
content words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from rhizome.core.errors import ModelOutputError
from rhizome.core.extraction import content_words, query_names
from rhizome.core.graph.lists import counts, profile_key
from rhizome.core.retrieval.contract import (
    MAX_PROVENANCE_CHUNKS,
    BaseRetriever,
    Retrieval,
    by_rank,
    check_query,
    chunk_hit,
    pack,
    provenance,
    query_vector,
    round_robin,
    vector_search,
)
from rhizome.core.retrieval.evidence import (
    EvidenceParams,
    link_names,
    merge_seeds,
    relative_weights,
)
from rhizome.core.text import count_tokens
from rhizome.core.types import Hit
from rhizome.lightrag.prompts import KEYWORDS_SYSTEM, keywords_prompt
from rhizome.lightrag.schema import QueryKeywords

Kind = Literal["chunk", "relation", "entity"]
KINDS: tuple[Kind, ...] = ("chunk", "relation", "entity")
"""The kinds of hit :class:`LightRAGRetriever` returns (its ``kinds`` setting picks among them)."""

MIX_NAME_WEIGHT = 0.5
"""Weight of the entity names nearest the whole query among ``mix``'s seeds (chosen on half of
musique-dev; see docs/lightrag.md)."""


def offline_query_keywords(query: str) -> QueryKeywords:
    """Low-level keywords: names and quoted phrases of the query; high-level keywords: its other
    content words. With no name in the query both levels use the content words; with no content
    word at all both use the query itself."""
    low = query_names(query)
    in_names = {w for name in low for w in content_words(name)}
    high = list(dict.fromkeys(w for w in content_words(query) if w not in in_names))
    low, high = low or list(high), high or list(low)
    if not low and not high:
        low = high = [query.strip()]
    return QueryKeywords(high_level_keywords=high, low_level_keywords=low)


@dataclass
class QueryContext:
    """What one query retrieved, in LightRAG's three blocks, each within its token budget."""

    query: str
    mode: str
    keywords: QueryKeywords
    keyword_source: str
    """``"llm"``, ``"offline"`` (no model) or ``"offline-fallback"`` (the model's JSON kept failing)."""
    entities: list[Hit] = field(default_factory=list)
    relations: list[Hit] = field(default_factory=list)
    chunks: list[Hit] = field(default_factory=list)
    ranked: list[tuple[str, float, list[str]]] = field(default_factory=list)
    """The passages ranked for the query (at most ``dense_k``), best first: ``(chunk id, score,
    via)``, ``via`` the rankings it came from (``graph``, ``vector``). The chunk block is its
    head, cut to budget."""


class LightRAGParams(EvidenceParams):
    """The settings of :class:`LightRAGRetriever`: LightRAG's keyword searches and context
    budgets, and the kernel's evidence ranking of its passages
    (:class:`~rhizome.core.retrieval.evidence.EvidenceParams`: 200 nearest chunks and 10 nearest relations
    per text)."""

    top_k: int = Field(60, ge=1)
    """Entities (local) and relations (global) taken from the vector search (reference code: 60
    when the paper was published; 40 today)."""

    cosine_threshold: float = Field(0.2, ge=-1, le=1)
    """Entities and relations the keyword searches find below this similarity are dropped
    (reference code: 0.2). The chunks of the passage ranking are not cut by it."""

    max_entity_tokens: int = Field(1000, ge=0)
    """Token budget of the entity block (1,000; the reference code's 6,000 assumes a 32k model)."""

    max_relation_tokens: int = Field(1500, ge=0)
    """Token budget of the relation block (1,500; the reference code's 8,000)."""

    max_total_tokens: int = Field(6000, ge=1)
    """Token budget of the whole context; the chunk block gets what the entity and relation
    blocks leave of it. 6,000 leaves about 2,000 tokens of an 8,192-token window for the
    instructions, the question and the answer (the reference code's 30,000 assumes a 32k model)."""

    kinds: tuple[Kind, ...] = Field(KINDS, min_length=1, strict=False)
    """Which hit kinds :meth:`LightRAGRetriever.aretrieve` returns (``chunk``, ``relation``,
    ``entity``; a list or tuple)."""


class LightRAGRetriever(BaseRetriever):
    """Retrieval over a :class:`~rhizome.lightrag.index.LightRAGIndex`.

    ``k``: hits returned (source chunks first, then profiles; default 4); ``mode``: ``hybrid``
    (default, the paper's LightRAG), ``local``, ``global`` or ``mix``; settings:
    :class:`LightRAGParams`.
    """

    modes = ("hybrid", "local", "global", "mix")
    """The index's ``naive`` mode is the kernel's."""
    params_class = LightRAGParams
    params: LightRAGParams

    # -- keywords --------------------------------------------------------------------------------
    async def akeywords(self, query: str) -> tuple[QueryKeywords, str]:
        """Low- and high-level keywords of ``query`` and where they came from. With a model: one
        JSON call (validated, retried by the model layer); if its JSON keeps failing, or both
        lists come back empty, the offline keywords are used instead of returning nothing."""
        llm = self.index.llm
        if llm is None:
            return offline_query_keywords(query), "offline"
        try:
            answer = await llm.acomplete_json(keywords_prompt(query), QueryKeywords, system=KEYWORDS_SYSTEM)
        except ModelOutputError:
            return offline_query_keywords(query), "offline-fallback"
        low = [k.strip() for k in answer.low_level_keywords if k and k.strip()]
        high = [k.strip() for k in answer.high_level_keywords if k and k.strip()]
        if not low and not high:
            return offline_query_keywords(query), "offline-fallback"
        return QueryKeywords(low_level_keywords=low, high_level_keywords=high), "llm"

    # -- the search ------------------------------------------------------------------------------
    async def ablocks(self, query: str, *, keywords: QueryKeywords | None = None) -> QueryContext:
        """The three context blocks for ``query`` and its ranked passages (``keywords`` skips
        the keyword call)."""
        context, vectors = await self._aranked(query, keywords)
        self._blocks(context, vectors)
        return context

    async def _aranked(self, query: str, keywords: QueryKeywords | None) -> tuple[QueryContext, dict[str, Any]]:
        """The keywords and the passage ranking of ``query`` (blocks left empty), and the query
        vectors (every text of the query embedded in one call)."""
        check_query(query)
        source = "given"
        if keywords is None:
            keywords, source = await self.akeywords(query)
        context = QueryContext(query=query, mode=str(self.mode), keywords=keywords, keyword_source=source)
        low, high = keywords.low_level_keywords, keywords.high_level_keywords
        if self.mode == "local" and not low:
            low = high
        if self.mode == "global" and not high:
            high = low
        low = low if self.mode in ("local", "hybrid", "mix") else []
        high = high if self.mode in ("global", "hybrid", "mix") else []
        texts = [", ".join(low)] if low else []
        texts += [", ".join(high)] if high else []
        matrix = await query_vector(self.index, query, texts + low)
        if matrix is None:
            return context, {}
        vectors = {"query": matrix[:1], "low": matrix[1:2] if low else None}
        vectors["high"] = matrix[len(texts) : len(texts) + 1] if high else None
        vectors["names"] = matrix[1 + len(texts) :] if low else None
        options = self.params
        dense = self._search(self.index.CHUNK_COLLECTION, vectors["query"], options.dense_k)
        dense_ids = {c for c, _ in dense}
        walked = options.rank(self.index.evidence(), await self._seeds(vectors), dense, limit=options.dense_k)
        context.ranked = [(c, s, ["graph", "vector"] if c in dense_ids else ["graph"]) for c, s in walked]
        return context, vectors

    def _blocks(self, context: QueryContext, vectors: dict[str, Any]) -> None:
        """Fill in the entity, relation and chunk blocks of ``context``."""
        if not vectors:
            return
        local = self._local(vectors["low"]) if vectors["low"] is not None else ([], [])
        glob = self._global(vectors["high"]) if vectors["high"] is not None else ([], [])
        context.entities = self._entity_hits(round_robin(local[0], glob[0], key=lambda x: x[0]))
        context.relations = self._relation_hits(round_robin(glob[1], local[1], key=lambda x: x[0]))
        used = sum(count_tokens(h.text) for h in context.entities + context.relations)
        context.chunks = self._chunk_hits(context.ranked, max(0, self.params.max_total_tokens - used))

    async def _asearch(self, query: str, k: int) -> Retrieval:
        return await self._search_blocks(query, k, context=True)

    async def _ahits(self, query: str, k: int) -> Retrieval:
        return await self._search_blocks(query, k, context=False)

    async def _search_blocks(self, query: str, k: int, *, context: bool) -> Retrieval:
        """The ranked passages first, then relation and entity profiles in turn (entities first
        in ``local`` mode), restricted to ``kinds``. The blocks are assembled only for the
        context, or when the passages are fewer than ``k``."""
        found, vectors = await self._aranked(query, None)
        chunks = []
        if "chunk" in self.params.kinds:
            head = found.ranked[:k]
            stored = self.index.store.chunks([c for c, _, _ in head])
            chunks = [chunk_hit(stored[c], score, via=via) for c, score, via in head if c in stored]
        if context or len(chunks) < k:
            self._blocks(found, vectors)
        relations = found.relations if "relation" in self.params.kinds else []
        entities = found.entities if "entity" in self.params.kinds else []
        first, second = (entities, relations) if self.mode == "local" else (relations, entities)
        hits = by_rank(chunks + round_robin(first, second, key=lambda h: (h.kind, h.id)))
        stats = {
            "keyword_source": found.keyword_source,
            "low_level_keywords": found.keywords.low_level_keywords,
            "high_level_keywords": found.keywords.high_level_keywords,
        }
        notes = []
        if context and not found.entities and not found.relations:
            words = ", ".join(dict.fromkeys(found.keywords.low_level_keywords + found.keywords.high_level_keywords)) or "none"
            notes.append(f"no entity or relation is within cosine {self.params.cosine_threshold} of the query's keywords "
                         f"({words}): the context holds passages only")
        return Retrieval(query=query, hits=hits[:k], context=found.entities + found.relations + found.chunks, stats=stats, notes=notes)

    async def _seeds(self, vectors: dict[str, Any]) -> dict[str, float]:
        """Where the walk starts: each low-level keyword's nearest entity name, weight 1
        (``local``); the endpoints of the relations nearest the query at their relative weights
        (``global``); both (``hybrid``); in ``mix`` also the entity names nearest the whole query,
        at half their relative weights. The high-level keywords pick the relation profiles of the
        context (:meth:`ablocks`), not the seeds: offline they are the query's own words, and
        matched on their own they seeded relations the query does not ask about (musique-dev:
        hybrid R@5 0.711 with them, 0.746 without; docs/lightrag.md)."""
        index, options = self.index, self.params
        found: list[dict[str, float]] = []
        if self.mode in ("local", "hybrid", "mix"):
            found.append(await link_names(index, index.NAME_COLLECTION, vectors["names"]))
        if self.mode in ("global", "hybrid", "mix"):
            found.append(index.fact_seeds(options, vectors["query"]))
        if self.mode == "mix":
            names = relative_weights(vector_search(index.store, index.NAME_COLLECTION, vectors["query"], options.fact_k), options.temperature)
            found.append({key: MIX_NAME_WEIGHT * weight for key, weight in names.items()})
        return merge_seeds(*found)

    def _search(self, collection: str, vector: Any, k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest of ``collection``. The cosine threshold applies to the keyword
        searches of entities and relations, not to the chunks: the passage ranking fuses the
        whole dense ranking (a cut one dropped dense retrieval's evidence, and its lead, from
        the fusion whenever the embedder's cosines run low)."""
        threshold = None if collection == self.index.CHUNK_COLLECTION else self.params.cosine_threshold
        return vector_search(self.index.store, collection, vector, k, threshold)

    def _local(self, vector: Any) -> tuple[list, list]:
        index = self.index
        found = self._search(index.ENTITY_COLLECTION, vector, self.params.top_k)
        profiles = index.entity_table.get(e for e, _ in found)
        ents = [(e, s) for e, s in found if e in profiles]
        if not ents:
            return [], []
        score_of = dict(ents)
        edges = list({r.id: r for r in index.relation_table.find("source", score_of) + index.relation_table.find("target", score_of)}.values())
        degree = index.entity_graph.degrees(list({x for r in edges for x in (r.source, r.target)} | set(score_of)))
        edges.sort(key=lambda r: (-(degree.get(r.source, 0) + degree.get(r.target, 0)), -r.weight, r.id))
        edges = edges[: self.params.top_k]
        relations = [(r.id, score_of.get(r.source, score_of.get(r.target, 0.0)), r) for r in edges]
        entities = [(e, s, profiles[e], degree.get(e, 0)) for e, s in ents]
        return entities, relations

    def _global(self, vector: Any) -> tuple[list, list]:
        index = self.index
        found = self._search(index.RELATION_COLLECTION, vector, self.params.top_k)
        profiles = index.relation_table.get(r for r, _ in found)
        rels = [(r, s, profiles[r]) for r, s in found if r in profiles]
        if not rels:
            return [], []
        endpoint_ids = list(dict.fromkeys(x for _, _, rel in rels for x in (rel.source, rel.target)))
        ent_profiles = index.entity_table.get(endpoint_ids)
        degree = index.entity_graph.degrees(endpoint_ids)
        entities = [(x, score, ent_profiles[x], degree.get(x, 0)) for _, score, rel in rels for x in (rel.source, rel.target) if x in ent_profiles]
        return entities, rels

    # -- hits ------------------------------------------------------------------------------------
    def _cited(self, records: Sequence[Any]) -> tuple[dict[str, list[str]], dict[str, Any]]:
        """The first chunk ids each profile cites (as many as a hit's provenance takes), by
        profile key, and those chunks."""
        sources = self.index.entity_graph.lists.sources(records, limit=MAX_PROVENANCE_CHUNKS)
        return sources, self.index.store.chunks(list(dict.fromkeys(c for ids in sources.values() for c in ids)))

    def _entity_hits(self, entities: list[tuple]) -> list[Hit]:
        packed = pack(entities, self.params.max_entity_tokens, lambda x: f"{x[2].name} ({x[2].type or 'entity'}): {x[2].description}".strip())
        sources, chunks = self._cited([x[2] for x, _ in packed])
        return [
            Hit(
                id=eid, text=text, score=float(score), kind="entity", provenance=provenance(chunks, sources[profile_key(e)]),
                metadata={"section": "Entities", "name": e.name, "type": e.type, "degree": degree, "level": "low", "n_sources": counts(e)[0]},
            )
            for (eid, score, e, degree), text in packed
        ]

    def _relation_hits(self, relations: list[tuple]) -> list[Hit]:
        names = {eid: e.name for eid, e in self.index.entity_table.get({x for _, _, r in relations for x in (r.source, r.target)}).items()}

        def text(item: tuple) -> str:
            rel = item[2]
            keywords = f" [{', '.join(rel.keywords)}]" if rel.keywords else ""
            return f"{names.get(rel.source, rel.source)} — {names.get(rel.target, rel.target)}{keywords}: {rel.description}".strip()

        packed = pack(relations, self.params.max_relation_tokens, text)
        sources, chunks = self._cited([x[2] for x, _ in packed])
        return [
            Hit(
                id=rid, text=body, score=float(score), kind="relation", provenance=provenance(chunks, sources[profile_key(rel)]),
                metadata={
                    "section": "Relations", "source": names.get(rel.source, rel.source), "target": names.get(rel.target, rel.target),
                    "keywords": list(rel.keywords), "weight": rel.weight, "level": "high", "n_sources": counts(rel)[0],
                },
            )
            for (rid, score, rel), body in packed
        ]

    def _chunk_hits(self, chunks: list[tuple[str, float, list[str]]], budget: int) -> list[Hit]:
        stored = self.index.store.chunks([c for c, _, _ in chunks])
        items = [(stored[cid], score, via) for cid, score, via in chunks if cid in stored]
        return [
            chunk_hit(chunk, score, text=text, section="Sources", via=via)
            for (chunk, score, via), text in pack(items, budget, lambda x: x[0].text)
        ]


__all__ = ["KINDS", "LightRAGParams", "LightRAGRetriever", "QueryContext", "offline_query_keywords"]
