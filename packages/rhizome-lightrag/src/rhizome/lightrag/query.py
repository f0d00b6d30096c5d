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
each cut to its token budget. :meth:`LightRAGRetriever.acontext` returns all three;
:meth:`LightRAGRetriever.aretrieve` returns ``k`` hits: the source chunks first (the text
evidence, with provenance), then the profiles, interleaved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rhizome.core.aio import run_sync
from rhizome.core.errors import (
    ConfigurationError,
    IndexMismatchError,
    InvalidInputError,
    ModelOutputError,
)
from rhizome.core.text import count_tokens, truncate_tokens
from rhizome.core.types import Hit, Provenance, Span
from rhizome.lightrag.keywords import offline_query_keywords
from rhizome.lightrag.prompts import KEYWORDS_SYSTEM, keywords_prompt
from rhizome.lightrag.schema import QueryKeywords

KINDS = ("chunk", "relation", "entity")
PROVENANCE_CHUNKS = 20
"""Most source chunks listed in the provenance of one entity or relation hit."""


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


def _round_robin(*lists: Sequence[Any], key: Any = lambda x: x) -> list[Any]:
    out, seen = [], set()
    for i in range(max((len(x) for x in lists), default=0)):
        for items in lists:
            if i < len(items):
                tag = key(items[i])
                if tag not in seen:
                    seen.add(tag)
                    out.append(items[i])
    return out


class LightRAGRetriever:
    """Retrieval over a :class:`~rhizome.lightrag.index.LightRAGIndex`.

    Parameters
    ----------
    k:
        Hits returned by :meth:`aretrieve` (source chunks first, then profiles).
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
        k: int = 4,
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
        _check_k(k)
        if mode not in index.modes:
            raise ConfigurationError(f"unknown mode {mode!r}; modes: {', '.join(index.modes)}")
        if top_k < 1 or chunk_top_k < 1 or related_chunks < 1:
            raise ConfigurationError("top_k, chunk_top_k and related_chunks must be at least 1")
        if min(max_entity_tokens, max_relation_tokens) < 0 or max_total_tokens < 1:
            raise ConfigurationError("token budgets must be positive")
        unknown = set(kinds) - set(KINDS)
        if unknown or not kinds:
            raise ConfigurationError(f"kinds must be a non-empty subset of {KINDS}, got {list(kinds)}")
        self.index = index
        self.k = k
        self.mode = mode
        self.top_k = top_k
        self.chunk_top_k = chunk_top_k
        self.cosine_threshold = cosine_threshold
        self.related_chunks = related_chunks
        self.max_entity_tokens = max_entity_tokens
        self.max_relation_tokens = max_relation_tokens
        self.max_total_tokens = max_total_tokens
        self.kinds = tuple(kinds)

    @property
    def embedder(self) -> Any:
        return self.index.embedder

    # -- keywords --------------------------------------------------------------------------------
    async def akeywords(self, query: str) -> tuple[QueryKeywords, str]:
        """Low- and high-level keywords of ``query`` and where they came from. With a model: one
        JSON call (validated, retried by the model layer); if its JSON keeps failing, or both
        lists come back empty, the offline keywords are used instead of returning nothing."""
        llm = self.index.llm
        if llm is None:
            return offline_query_keywords(query, self.index.offline_extractor.inner), "offline"
        try:
            answer = await llm.acomplete_json(keywords_prompt(query), QueryKeywords, system=KEYWORDS_SYSTEM)
        except ModelOutputError:
            return offline_query_keywords(query, self.index.offline_extractor.inner), "offline-fallback"
        low = [k.strip() for k in answer.low_level_keywords if k and k.strip()]
        high = [k.strip() for k in answer.high_level_keywords if k and k.strip()]
        if not low and not high:
            return offline_query_keywords(query, self.index.offline_extractor.inner), "offline-fallback"
        return QueryKeywords(low_level_keywords=low, high_level_keywords=high), "llm"

    # -- the search ------------------------------------------------------------------------------
    async def acontext(self, query: str, *, keywords: QueryKeywords | None = None) -> QueryContext:
        """The three context blocks for ``query`` (``keywords`` skips the keyword call)."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("the query must be a non-empty string")
        source = "given"
        if keywords is None and self.mode != "naive":
            keywords, source = await self.akeywords(query)
        keywords = keywords or QueryKeywords(low_level_keywords=[], high_level_keywords=[])
        context = QueryContext(query=query, mode=self.mode, keywords=keywords, keyword_source=source)
        store = self.index.store
        if store.manifest.embedding_dimension is None:
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

        entities = _round_robin(local[0], glob[0], key=lambda x: x[0])
        relations = _round_robin(glob[1], local[1], key=lambda x: x[0])
        chunks = _round_robin(vector_chunks, local[2], glob[2], key=lambda x: x[0])
        context.entities = self._entity_hits(entities)
        context.relations = self._relation_hits(relations)
        used = sum(count_tokens(h.text) for h in context.entities + context.relations)
        context.chunks = self._chunk_hits(chunks, max(0, self.max_total_tokens - used))
        return context

    async def aretrieve(self, query: str, k: int | None = None) -> list[Hit]:
        """``k`` hits: source chunks first, then relation and entity profiles in turn (entities
        first in ``local`` mode), restricted to ``kinds``."""
        k = _check_k(self.k if k is None else k)
        context = await self.acontext(query)
        chunks = context.chunks if "chunk" in self.kinds else []
        relations = context.relations if "relation" in self.kinds else []
        entities = context.entities if "entity" in self.kinds else []
        profiles = _round_robin(entities, relations, key=lambda h: (h.kind, h.id)) if self.mode == "local" else _round_robin(
            relations, entities, key=lambda h: (h.kind, h.id)
        )
        return (chunks + profiles)[:k]

    def retrieve(self, query: str, k: int | None = None) -> list[Hit]:
        return run_sync(self.aretrieve(query, k))

    def context(self, query: str, *, keywords: QueryKeywords | None = None) -> QueryContext:
        return run_sync(self.acontext(query, keywords=keywords))

    async def _query_vector(self, text: str) -> Any:
        vector = await self.embedder.aembed_query([text])
        known = self.index.store.manifest.embedding_dimension
        if known is not None and known != vector.shape[1]:
            raise IndexMismatchError(
                f"the index holds {known}-dimensional vectors but {self.embedder.name} gives "
                f"{vector.shape[1]}; query with the embedder the index was built with"
            )
        return vector

    def _search(self, collection: str, vector: Any, k: int) -> list[tuple[str, float]]:
        store = self.index.store
        found = store.collection(collection, vector.shape[1]).search(vector, k)[0]
        return [(key, score) for key, score in found if score >= self.cosine_threshold]

    async def _local(self, text: str) -> tuple[list, list, list]:
        graph = self.index.graph
        found = self._search(self.index.ENTITY_COLLECTION, await self._query_vector(text), self.top_k)
        profiles = graph.entities([e for e, _ in found])
        ents = [(e, s) for e, s in found if e in profiles]
        if not ents:
            return [], [], []
        score_of = dict(ents)
        edges = graph.incident(score_of)
        degree = {eid: row[2] for eid, row in graph.entity_rows({x for r in edges for x in (r[1], r[2])} | set(score_of)).items()}
        edges.sort(key=lambda r: (-(degree.get(r[1], 0) + degree.get(r[2], 0)), -r[3], r[0]))
        edges = edges[: self.top_k]
        rel_profiles = graph.relations([r[0] for r in edges])
        relations = [(r[0], score_of.get(r[1], score_of.get(r[2], 0.0)), rel_profiles[r[0]]) for r in edges if r[0] in rel_profiles]
        # neighbours of each entity (through the kept relations) and the chunks they cite
        neighbours: dict[str, set[str]] = {}
        for _, source, target, _ in edges:
            neighbours.setdefault(source, set()).add(target)
            neighbours.setdefault(target, set()).add(source)
        others = graph.entities({n for ns in neighbours.values() for n in ns} - set(profiles))
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
        graph = self.index.graph
        found = self._search(self.index.RELATION_COLLECTION, await self._query_vector(text), self.top_k)
        profiles = graph.relations([r for r, _ in found])
        rels = [(r, s, profiles[r]) for r, s in found if r in profiles]
        if not rels:
            return [], [], []
        endpoint_ids = list(dict.fromkeys(x for _, _, rel in rels for x in (rel.source, rel.target)))
        ent_profiles = graph.entities(endpoint_ids)
        degree = {eid: row[2] for eid, row in graph.entity_rows(endpoint_ids).items()}
        entities = []
        for _, score, rel in rels:
            for x in (rel.source, rel.target):
                if x in ent_profiles:
                    entities.append((x, score, ent_profiles[x], degree.get(x, 0)))
        chunks = [(c, score, rid) for rid, score, rel in rels for c in rel.source_chunk_ids[: self.related_chunks]]
        return entities, rels, chunks

    async def _chunk_search(self, query: str) -> list[tuple[str, float, str]]:
        found = self._search(self.index.CHUNK_COLLECTION, await self._query_vector(query), max(self.chunk_top_k, self.k))
        return [(c, s, "vector") for c, s in found]

    # -- hits ------------------------------------------------------------------------------------
    def _provenance(self, chunk_ids: Sequence[str]) -> Provenance:
        ids = list(chunk_ids)[:PROVENANCE_CHUNKS]
        if not ids:
            return Provenance()
        marks = ",".join("?" * len(ids))
        rows = self.index.store.query(
            f'SELECT id, document_id, start, "end", metadata FROM chunks WHERE id IN ({marks})', ids
        )
        by_id = {r[0]: r for r in rows}
        documents, chunks, spans, sources = [], [], [], []
        for cid in ids:
            row = by_id.get(cid)
            if row is None:
                continue
            chunks.append(cid)
            documents.append(row[1])
            spans.append(Span(document_id=row[1], chunk_id=cid, start=row[2], end=row[3]))
            source = json.loads(row[4]).get("source")
            if source:
                sources.append(str(source))
        return Provenance(
            document_ids=list(dict.fromkeys(documents)),
            chunk_ids=chunks,
            spans=spans,
            sources=list(dict.fromkeys(sources)),
        )

    def _budgeted(self, items: list[tuple[Any, str]], budget: int) -> list[tuple[Any, str]]:
        out = []
        for item, text in items:
            tokens = count_tokens(text)
            if tokens > budget:
                if not out and budget > 20:
                    out.append((item, truncate_tokens(text, budget)))
                break
            out.append((item, text))
            budget -= tokens
        return out

    def _entity_hits(self, entities: list[tuple]) -> list[Hit]:
        texts = [((eid, score, e, degree), f"{e.name} ({e.type or 'entity'}): {e.description}".strip()) for eid, score, e, degree in entities]
        hits = []
        for (eid, score, e, degree), text in self._budgeted(texts, self.max_entity_tokens):
            hits.append(
                Hit(
                    id=eid,
                    text=text,
                    score=float(score),
                    kind="entity",
                    provenance=self._provenance(e.source_chunk_ids),
                    metadata={"name": e.name, "type": e.type, "degree": degree, "level": "low", "n_sources": len(e.source_chunk_ids)},
                )
            )
        return hits

    def _relation_hits(self, relations: list[tuple]) -> list[Hit]:
        graph = self.index.graph
        names = {eid: row[0] for eid, row in graph.entity_rows({x for _, _, r in relations for x in (r.source, r.target)}).items()}
        texts = []
        for rid, score, rel in relations:
            a, b = names.get(rel.source, rel.source), names.get(rel.target, rel.target)
            keywords = f" [{', '.join(rel.keywords)}]" if rel.keywords else ""
            texts.append(((rid, score, rel, a, b), f"{a} — {b}{keywords}: {rel.description}".strip()))
        hits = []
        for (rid, score, rel, a, b), text in self._budgeted(texts, self.max_relation_tokens):
            hits.append(
                Hit(
                    id=rid,
                    text=text,
                    score=float(score),
                    kind="relation",
                    provenance=self._provenance(rel.source_chunk_ids),
                    metadata={
                        "source": a,
                        "target": b,
                        "keywords": list(rel.keywords),
                        "weight": rel.weight,
                        "level": "high",
                        "n_sources": len(rel.source_chunk_ids),
                    },
                )
            )
        return hits

    def _chunk_hits(self, chunks: list[tuple[str, float, str]], budget: int) -> list[Hit]:
        stored = self.index.store.chunks([c for c, _, _ in chunks])
        via: dict[str, list[str]] = {}
        for cid, _, reason in chunks:
            via.setdefault(cid, []).append(reason)
        items = []
        for cid, score, _ in chunks:
            chunk = stored.get(cid)
            if chunk is not None and all(item[0][0] != cid for item in items):
                items.append(((cid, score, chunk), chunk.text))
        hits = []
        for (cid, score, chunk), text in self._budgeted(items, budget):
            metadata: dict[str, Any] = {"document_id": chunk.document_id, "chunk_index": chunk.index, "via": via[cid]}
            for key in ("title", "source"):
                if key in chunk.metadata:
                    metadata[key] = chunk.metadata[key]
            provenance = chunk.provenance()
            if text != chunk.text:  # cut to the budget: the span covers what is returned
                provenance.spans[0] = Span(document_id=chunk.document_id, chunk_id=cid, start=chunk.start, end=chunk.start + len(text))
            hits.append(Hit(id=cid, text=text, score=float(score), kind="chunk", provenance=provenance, metadata=metadata))
        return hits


def _check_k(k: int) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidInputError(f"k must be a positive integer, got {k!r}")
    return k


__all__ = ["KINDS", "LightRAGRetriever", "QueryContext"]
