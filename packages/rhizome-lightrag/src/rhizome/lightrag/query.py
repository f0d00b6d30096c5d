"""Dual-level retrieval ψ of LightRAG.

One model call turns the query into low-level keywords (specific entities and details) and
high-level keywords (themes); offline, rule-based keywords stand in. Then, per mode:

``local``   low-level keywords → entity vectors (the entities' name keys) → their relations
            (one hop) → the chunks the entities came from;
``global``  high-level keywords → relation vectors (the relations' theme keys) → their endpoint
            entities (one hop) → the chunks the relations came from;
``hybrid``  both, merged in turn (the paper's full LightRAG, and the default);
``mix``     hybrid plus a vector search over the chunks (the reference code's ``mix``);
``naive``   only the vector search over chunks (the baseline).

The context keeps LightRAG's three blocks — entity profiles, relation profiles, source chunks —
each cut to its token budget (:meth:`LightRAGRetriever.ablocks`; as
:attr:`~rhizome.core.retrieval.Retrieval.context`, each hit tagged with its ``section``). The
``k`` hits are the source chunks first (the text evidence, with provenance), then the profiles,
interleaved, scored by that rank.

Offline query keywords: the low-level keywords are the names and quoted phrases the query
contains (the rule-based mention finder of the kernel's offline extractor), the high-level
keywords its remaining content words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rhizome.core.errors import ConfigurationError, ModelOutputError
from rhizome.core.extraction import OfflineExtractor, content_words
from rhizome.core.extraction.keywords import QUESTION_WORDS
from rhizome.core.retrieval import (
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
from rhizome.core.text import count_tokens
from rhizome.core.types import Hit
from rhizome.lightrag.prompts import KEYWORDS_SYSTEM, keywords_prompt
from rhizome.lightrag.schema import QueryKeywords

KINDS = ("chunk", "relation", "entity")
_QUOTED = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”")
_FINDER = OfflineExtractor(window="sentence")


def offline_query_keywords(query: str) -> QueryKeywords:
    """Low-level keywords: names and quoted phrases of the query; high-level keywords: its other
    content words. With no name in the query both levels use the content words; with no content
    word at all both use the query itself."""
    low: list[str] = [(m.group(1) or m.group(2)).strip() for m in _QUOTED.finditer(query)]
    low += [display for display, _type, kind in _FINDER.find_mentions(query) if kind != "phrase" and display.lower() not in QUESTION_WORDS]
    low = list(dict.fromkeys(k for k in low if k))
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


class LightRAGRetriever(BaseRetriever):
    """Retrieval over a :class:`~rhizome.lightrag.index.LightRAGIndex`.

    Parameters
    ----------
    k:
        Hits returned (source chunks first, then profiles; default 4).
    mode:
        ``hybrid`` (default, the paper's LightRAG), ``local``, ``global``, ``mix`` or ``naive``.
    top_k:
        Entities (local) and relations (global) taken from the vector search (reference code:
        60 when the paper was published; 40 today).
    chunk_top_k:
        Chunks taken from the chunk vector search in ``mix`` and ``naive`` (at least ``k``).
    cosine_threshold:
        Vector hits below this similarity are dropped (reference code: 0.2).
    related_chunks:
        Source chunks taken per entity or relation (reference code: 5).
    max_entity_tokens, max_relation_tokens, max_total_tokens:
        Token budgets of the entity block, the relation block and the whole context; the chunk
        block gets what the first two leave of the total. Defaults 1,000 / 1,500 / 6,000 leave
        about 2,000 tokens of an 8,192-token window for the instructions, the question and the
        answer (the reference code's 6,000 / 8,000 / 30,000 assume a 32k model).
    kinds:
        Which hit kinds :meth:`aretrieve` returns (``chunk``, ``relation``, ``entity``).
    """

    def __init__(
        self,
        index: Any,
        k: int | None = None,
        mode: str = "hybrid",
        *,
        top_k: int = 60,
        chunk_top_k: int = 10,
        cosine_threshold: float = 0.2,
        related_chunks: int = 5,
        max_entity_tokens: int = 1000,
        max_relation_tokens: int = 1500,
        max_total_tokens: int = 6000,
        kinds: Sequence[str] = KINDS,
    ) -> None:
        super().__init__(index, k)
        if mode not in index.modes:
            raise ConfigurationError(f"unknown mode {mode!r}; modes: {', '.join(index.modes)}")
        if top_k < 1 or chunk_top_k < 1 or related_chunks < 1:
            raise ConfigurationError("top_k, chunk_top_k and related_chunks must be at least 1")
        if min(max_entity_tokens, max_relation_tokens) < 0 or max_total_tokens < 1:
            raise ConfigurationError("token budgets must be positive")
        unknown = set(kinds) - set(KINDS)
        if unknown or not kinds:
            raise ConfigurationError(f"kinds must be a non-empty subset of {KINDS}, got {list(kinds)}")
        self.mode = mode
        self.top_k = top_k
        self.chunk_top_k = chunk_top_k
        self.cosine_threshold = cosine_threshold
        self.related_chunks = related_chunks
        self.max_entity_tokens = max_entity_tokens
        self.max_relation_tokens = max_relation_tokens
        self.max_total_tokens = max_total_tokens
        self.kinds = tuple(kinds)

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
        """The three context blocks for ``query`` (``keywords`` skips the keyword call)."""
        check_query(query)
        source = "given"
        if keywords is None and self.mode != "naive":
            keywords, source = await self.akeywords(query)
        keywords = keywords or QueryKeywords(low_level_keywords=[], high_level_keywords=[])
        context = QueryContext(query=query, mode=self.mode, keywords=keywords, keyword_source=source)
        if self.index.store.manifest.embedding_dimension is None:
            return context
        low, high = keywords.low_level_keywords, keywords.high_level_keywords
        if self.mode == "local" and not low:
            low = high
        if self.mode == "global" and not high:
            high = low

        local = ([], [], []) if self.mode not in ("local", "hybrid", "mix") or not low else await self._local(", ".join(low))
        glob = ([], [], []) if self.mode not in ("global", "hybrid", "mix") or not high else await self._global(", ".join(high))
        vector_chunks: list[tuple[str, float, str]] = []
        if self.mode in ("mix", "naive"):
            vector_chunks = await self._chunk_search(query)

        entities = round_robin(local[0], glob[0], key=lambda x: x[0])
        relations = round_robin(glob[1], local[1], key=lambda x: x[0])
        chunks = round_robin(vector_chunks, local[2], glob[2], key=lambda x: x[0])
        context.entities = self._entity_hits(entities)
        context.relations = self._relation_hits(relations)
        used = sum(count_tokens(h.text) for h in context.entities + context.relations)
        context.chunks = self._chunk_hits(chunks, max(0, self.max_total_tokens - used))
        return context

    async def _asearch(self, query: str, k: int) -> Retrieval:
        """Source chunks first, then relation and entity profiles in turn (entities first in
        ``local`` mode), restricted to ``kinds``."""
        blocks = await self.ablocks(query)
        chunks = blocks.chunks if "chunk" in self.kinds else []
        relations = blocks.relations if "relation" in self.kinds else []
        entities = blocks.entities if "entity" in self.kinds else []
        first, second = (entities, relations) if self.mode == "local" else (relations, entities)
        hits = by_rank(chunks + round_robin(first, second, key=lambda h: (h.kind, h.id)))
        stats = {
            "keyword_source": blocks.keyword_source,
            "low_level_keywords": blocks.keywords.low_level_keywords,
            "high_level_keywords": blocks.keywords.high_level_keywords,
        }
        return Retrieval(query=query, hits=hits[:k], context=blocks.entities + blocks.relations + blocks.chunks, stats=stats)

    async def _search(self, collection: str, text: str, k: int) -> list[tuple[str, float]]:
        vector = await query_vector(self.index, text)
        return vector_search(self.index.store, collection, vector, k, self.cosine_threshold)

    async def _local(self, text: str) -> tuple[list, list, list]:
        index = self.index
        found = await self._search(index.ENTITY_COLLECTION, text, self.top_k)
        profiles = index.entity_table.get(e for e, _ in found)
        ents = [(e, s) for e, s in found if e in profiles]
        if not ents:
            return [], [], []
        score_of = dict(ents)
        edges = list({r.id: r for r in index.relation_table.find("source", score_of) + index.relation_table.find("target", score_of)}.values())
        degree = index.degrees(list({x for r in edges for x in (r.source, r.target)} | set(score_of)))
        edges.sort(key=lambda r: (-(degree.get(r.source, 0) + degree.get(r.target, 0)), -r.weight, r.id))
        edges = edges[: self.top_k]
        relations = [(r.id, score_of.get(r.source, score_of.get(r.target, 0.0)), r) for r in edges]
        # neighbours of each entity (through the kept relations) and the chunks they cite
        neighbours: dict[str, set[str]] = {}
        for r in edges:
            neighbours.setdefault(r.source, set()).add(r.target)
            neighbours.setdefault(r.target, set()).add(r.source)
        others = index.entity_table.get({n for ns in neighbours.values() for n in ns} - set(profiles))
        cited = {eid: set(e.source_chunk_ids) for eid, e in {**others, **profiles}.items()}
        chunks: list[tuple[str, float, str]] = []
        for eid, score in ents:
            sources = profiles[eid].source_chunk_ids
            counts = {c: sum(1 for n in neighbours.get(eid, ()) if c in cited.get(n, ())) for c in sources}
            position = {c: i for i, c in enumerate(sources)}
            ranked = sorted(sources, key=lambda c: (-counts[c], position[c]))[: self.related_chunks]
            chunks.extend((c, score, eid) for c in ranked)
        entities = [(e, s, profiles[e], degree.get(e, 0)) for e, s in ents]
        return entities, relations, chunks

    async def _global(self, text: str) -> tuple[list, list, list]:
        index = self.index
        found = await self._search(index.RELATION_COLLECTION, text, self.top_k)
        profiles = index.relation_table.get(r for r, _ in found)
        rels = [(r, s, profiles[r]) for r, s in found if r in profiles]
        if not rels:
            return [], [], []
        endpoint_ids = list(dict.fromkeys(x for _, _, rel in rels for x in (rel.source, rel.target)))
        ent_profiles = index.entity_table.get(endpoint_ids)
        degree = index.degrees(endpoint_ids)
        entities = []
        for _, score, rel in rels:
            for x in (rel.source, rel.target):
                if x in ent_profiles:
                    entities.append((x, score, ent_profiles[x], degree.get(x, 0)))
        chunks = [(c, score, rid) for rid, score, rel in rels for c in rel.source_chunk_ids[: self.related_chunks]]
        return entities, rels, chunks

    async def _chunk_search(self, query: str) -> list[tuple[str, float, str]]:
        found = await self._search(self.index.CHUNK_COLLECTION, query, max(self.chunk_top_k, self.k))
        return [(c, s, "vector") for c, s in found]

    # -- hits ------------------------------------------------------------------------------------
    def _cited(self, records: Sequence[Any]) -> dict[str, Any]:
        return self.index.store.chunks(list(dict.fromkeys(c for r in records for c in r.source_chunk_ids[:20])))

    def _entity_hits(self, entities: list[tuple]) -> list[Hit]:
        packed = pack(entities, self.max_entity_tokens, lambda x: f"{x[2].name} ({x[2].type or 'entity'}): {x[2].description}".strip())
        chunks = self._cited([x[2] for x, _ in packed])
        return [
            Hit(
                id=eid, text=text, score=float(score), kind="entity", provenance=provenance(chunks, e.source_chunk_ids),
                metadata={"section": "Entities", "name": e.name, "type": e.type, "degree": degree, "level": "low", "n_sources": len(e.source_chunk_ids)},
            )
            for (eid, score, e, degree), text in packed
        ]

    def _relation_hits(self, relations: list[tuple]) -> list[Hit]:
        names = {eid: e.name for eid, e in self.index.entity_table.get({x for _, _, r in relations for x in (r.source, r.target)}).items()}

        def text(item: tuple) -> str:
            rel = item[2]
            keywords = f" [{', '.join(rel.keywords)}]" if rel.keywords else ""
            return f"{names.get(rel.source, rel.source)} — {names.get(rel.target, rel.target)}{keywords}: {rel.description}".strip()

        packed = pack(relations, self.max_relation_tokens, text)
        chunks = self._cited([x[2] for x, _ in packed])
        return [
            Hit(
                id=rid, text=body, score=float(score), kind="relation", provenance=provenance(chunks, rel.source_chunk_ids),
                metadata={
                    "section": "Relations", "source": names.get(rel.source, rel.source), "target": names.get(rel.target, rel.target),
                    "keywords": list(rel.keywords), "weight": rel.weight, "level": "high", "n_sources": len(rel.source_chunk_ids),
                },
            )
            for (rid, score, rel), body in packed
        ]

    def _chunk_hits(self, chunks: list[tuple[str, float, str]], budget: int) -> list[Hit]:
        stored = self.index.store.chunks([c for c, _, _ in chunks])
        via: dict[str, list[str]] = {}
        for cid, _, reason in chunks:
            via.setdefault(cid, []).append(reason)
        items, seen = [], set()
        for cid, score, _ in chunks:  # the first (best-fused) place of each chunk
            if cid in stored and cid not in seen:
                seen.add(cid)
                items.append((stored[cid], score))
        return [
            chunk_hit(chunk, score, text=text, section="Sources", via=via[chunk.id])
            for (chunk, score), text in pack(items, budget, lambda x: x[0].text)
        ]


__all__ = ["KINDS", "LightRAGRetriever", "QueryContext", "offline_query_keywords"]
