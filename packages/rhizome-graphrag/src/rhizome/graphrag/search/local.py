"""Local search: passages ranked by graph evidence, and GraphRAG's packed local context.

The hits are passages, ranked by the kernel's evidence walk (:mod:`rhizome.core.retrieval.evidence`): each
name the question mentions is linked to its nearest entity, the relations nearest the question
(their vectors: ``source predicate target: description``) seed their two entities at their
relative weights, and the nearest chunks are passage seeds; a personalized PageRank walk over
the entity–passage graph from those seeds ranks the passages. The walk reaches the passage of a
question's second hop through the entities the first-hop passage mentions, and keeps a passage
near the question on top unless the graph's evidence outweighs it.

The context is GraphRAG's mixed local context: the query is matched to entity description
vectors (``top_k_entities``); then three sections share ``max_tokens``:

- community reports (``community_prop``, 15%): reports of the communities containing the matched
  entities, those containing most matched entities first, then by rating;
- entities and relationships (the rest, 35%): the matched entities, then relationships among
  them, then relationships to outside entities linked to many matched entities (at most
  ``top_k_relationships`` per matched entity);
- source chunks (``text_unit_prop``, 50%): the ranked passages, best first.

Each section adds rows in rank order until the next one would overflow its share. The whole
packed context is :attr:`~rhizome.core.retrieval.contract.Retrieval.context` (reports, entities,
relationships, chunks, each hit tagged with its ``section``); :meth:`LocalSearch.aretrieve`
ranks the passages without assembling it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from rhizome.core.extraction import query_names
from rhizome.core.index.hierarchy import has_summary
from rhizome.core.retrieval.contract import (
    BaseRetriever,
    Retrieval,
    by_rank,
    chunk_hit,
    chunk_hits,
    pack,
    provenance,
    query_vector,
    vector_search,
)
from rhizome.core.retrieval.evidence import (
    EvidenceParams,
    link_names,
    merge_seeds,
    relative_weights,
)
from rhizome.core.text import count_tokens
from rhizome.core.types import Entity, Hit, Relation
from rhizome.graphrag.reports import full_content, report_hit

SECTIONS = ("chunks", "entities", "relationships", "reports")
"""The order of a local search's hits: its evidence first."""


class LocalParams(EvidenceParams):
    """The settings of :class:`LocalSearch`: GraphRAG's local search context, and the kernel's
    evidence ranking of its passages (:class:`~rhizome.core.retrieval.evidence.EvidenceParams`)."""

    top_k_entities: int = Field(10, ge=1)
    """Entities matched to the query (GraphRAG ``top_k_mapped_entities`` 10)."""

    max_tokens: int = Field(12000, ge=1)
    """Context budget (GraphRAG local search ``max_context_tokens`` 12,000)."""

    text_unit_prop: float = Field(0.5, ge=0, le=1)
    """Share of the budget for source chunks (GraphRAG 0.5)."""

    community_prop: float = Field(0.15, ge=0, le=1)
    """Share for community reports (GraphRAG 0.15); the rest goes to entities and relationships."""

    top_k_relationships: int = Field(10, ge=1)
    """Relationships to outside entities per matched entity (GraphRAG 10)."""

    oversample: int = Field(2, ge=1)
    """Entity candidates fetched per wanted entity before filtering (GraphRAG fetches twice as
    many, 2)."""

    @model_validator(mode="after")
    def _shares_fit(self) -> LocalParams:
        if self.text_unit_prop + self.community_prop > 1.0:
            raise ValueError(f"text_unit_prop + community_prop must not exceed 1, got {self.text_unit_prop:g} + {self.community_prop:g}")
        return self


class LocalSearch(BaseRetriever):
    """GraphRAG local search over a :class:`~rhizome.graphrag.index.GraphRAGIndex` (``k``: hits
    returned, default 4; settings: :class:`LocalParams`)."""

    mode = "local"
    params_class = LocalParams
    params: LocalParams

    def match_entities(self, vector: Any) -> list[tuple[Entity, float]]:
        """The ``top_k_entities`` entities whose description vectors are nearest the query's ``vector``."""
        graph = self.index.graph()
        wanted, oversample = self.params.top_k_entities, self.params.oversample
        ranked = vector_search(self.index.store, self.index.ENTITY_COLLECTION, vector, wanted * oversample)
        kept = [(eid, score) for eid, score in ranked if eid in graph.entities][:wanted]
        found = graph.whole_entities(eid for eid, _ in kept)
        return [(found[eid], score) for eid, score in kept if eid in found]

    async def arank(
        self,
        query: str,
        limit: int | None = None,
        *,
        followups: Sequence[str] = (),
        followup_weight: float = 1.0,
        entities: Mapping[str, float] | None = None,
        embedded: Mapping[str, np.ndarray] | None = None,
    ) -> tuple[list[tuple[str, float]], Any]:
        """The passages (chunk ids) ranked for ``query``, at most ``limit`` (default
        ``dense_k``), and the query vector: the kernel's evidence walk from the entities the
        question names, the endpoints of the relations nearest it (:meth:`fact_seeds`) and its
        nearest chunks (:meth:`~rhizome.core.retrieval.evidence.EvidenceParams.rank`).

        ``followups`` (DRIFT's questions) take part at ``followup_weight``: the names each adds
        are linked to entities at that weight, and each one's nearest chunks are further passage
        seeds at that weight (the walk is linear in its seeds, so one walk stands for the
        weighted sum of one walk per follow-up). All texts are embedded in one call.
        ``entities`` (entity id → weight) are further seeds known without linking, such as the
        members of the communities DRIFT's offline follow-ups turn to. ``embedded``: vectors the
        caller already has, by text (DRIFT embeds the question and its names up front)."""
        names = query_names(query)
        asked = list(dict.fromkeys(f for f in followups if f != query))
        added = list(dict.fromkeys(n for f in asked for n in query_names(f) if n not in names))
        texts = [query, *names, *asked, *added]
        known = dict(embedded or {})
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            found = await query_vector(self.index, missing[0], missing[1:])
            if found is None:
                return [], None
            known.update(zip(missing, found))
        vectors = np.stack([known[t] for t in texts])
        index, options = self.index, self.params
        # the names of the question (weight 1) and of its follow-ups, each its nearest entity
        name_rows = [1 + i for i in range(len(names))] + [1 + len(names) + len(asked) + i for i in range(len(added))]
        name_weights = [1.0] * len(names) + [followup_weight] * len(added)
        seeds = merge_seeds(
            await link_names(index, index.name_collection(), vectors[name_rows] if name_rows else None, name_weights),
            self.fact_seeds(vectors[:1]),
            entities or {},
        )
        # the nearest chunks of the question and of each follow-up
        own = 1 + len(names)
        dense, *more = [
            vector_search(index.store, index.CHUNK_COLLECTION, row, options.dense_k)
            for row in (vectors[:1], *(vectors[i : i + 1] for i in range(own, own + len(asked))))
        ]
        limit = limit or options.dense_k
        ranked = options.rank(index.evidence(), seeds, dense, limit=limit, more_dense=more, more_weight=followup_weight)
        return ranked[:limit], vectors[:1]

    def fact_seeds(self, vector: np.ndarray) -> dict[str, float]:
        """Entity seeds from what the question states: the endpoints of the relations nearest it
        (an index built before relations had vectors: the entities whose descriptions are
        nearest), at their relative weights."""
        index, options = self.index, self.params
        if seeds := index.fact_seeds(options, vector):
            return seeds
        return relative_weights(vector_search(index.store, index.ENTITY_COLLECTION, vector, options.fact_k), options.temperature)

    async def _ahits(self, query: str, k: int) -> Retrieval:
        ranked, _ = await self.arank(query, max(k, self.params.dense_k))
        return Retrieval(query=query, hits=by_rank(chunk_hits(self.index, ranked[:k])))

    async def _asearch(self, query: str, k: int) -> Retrieval:
        found, ranked = await self._alocal(query, max(k, self.params.dense_k))
        stats = {f"{s}_in_context": sum(1 for h in found if h.metadata["section"] == s) for s in SECTIONS}
        return Retrieval(query=query, hits=by_rank(chunk_hits(self.index, ranked[:k])), context=found, stats=stats)

    async def abuild(self, query: str) -> list[Hit]:
        """The packed context, in context order: reports, entities, relationships, chunks."""
        return (await self._alocal(query))[0]

    async def _alocal(self, query: str, limit: int | None = None) -> tuple[list[Hit], list[tuple[str, float]]]:
        passages, vector = await self.arank(query, limit)
        graph = self.index.graph()
        matched = self.match_entities(vector) if graph.entities and vector is not None else []
        if not matched:
            return [], passages
        selected = [e for e, _ in matched]
        similarity = {e.id: s for e, s in matched}
        selected_ids = set(similarity)
        p = self.params
        community_budget = int(p.max_tokens * p.community_prop)
        text_budget = int(p.max_tokens * p.text_unit_prop)
        local_budget = p.max_tokens - community_budget - text_budget

        # -- communities --------------------------------------------------------------------
        counts = Counter(cid for e in selected for cid in graph.communities_of.get(e.id, ()))
        ranked = sorted(counts, key=lambda c: (-counts[c], -(graph.communities[c].rating or 0.0), graph.communities[c].level, c))
        reports = []
        if ranked and community_budget > 0:
            # lazy mode writes only what could fit: a report is rarely under 200 tokens
            written = await self.index.areports(ranked[: max(1, community_budget // 200)])
            candidates = [written[c] for c in ranked if c in written and has_summary(written[c])]
            reports = pack(candidates, community_budget, full_content, overhead=2, cut_first=False)

        # -- entities and relationships -----------------------------------------------------
        entity_rows = pack(selected, local_budget, _entity_text, overhead=2, cut_first=False)
        used = sum(count_tokens(t) + 2 for _, t in entity_rows)
        in_network: dict[str, Any] = {}  # the graph's relations: outlines, read whole once packed
        out_network: dict[str, Any] = {}
        for entity in selected:
            for rid in graph.relations_of.get(entity.id, ()):
                relation = graph.relations[rid]
                inside = relation.source in selected_ids and relation.target in selected_ids
                (in_network if inside else out_network)[rid] = relation

        def outside_of(r: Any) -> str:
            return r.target if r.source in selected_ids else r.source

        links = Counter(outside_of(r) for r in out_network.values())
        ordered_in = sorted(in_network.values(), key=lambda r: (-graph.combined_degree(r), -r.weight, r.id))
        ordered_out = sorted(
            out_network.values(), key=lambda r: (-links[outside_of(r)], -graph.combined_degree(r), -r.weight, r.id)
        )[: p.top_k_relationships * len(selected)]
        whole = graph.whole_relations(r.id for r in ordered_in + ordered_out)
        relation_rows = pack(list(whole.values()), local_budget - used, lambda r: _relation_text(r, graph), overhead=2, cut_first=False)

        # -- source chunks, in the order of the passage ranking ------------------------------
        chunk_ids = [cid for cid, _ in passages]
        cited = set(chunk_ids)  # every chunk any hit may cite
        for community, _ in reports:
            cited.update(graph.community_chunks(community)[:20])
        for record, _ in relation_rows + entity_rows:
            cited.update(record.source_chunk_ids[:20])
        chunks = self.index.store.chunks(sorted(cited))
        chunk_rows = pack([chunks[c] for c in chunk_ids if c in chunks], text_budget, lambda c: c.text, overhead=2, cut_first=False)

        # -- the context, in GraphRAG's order ------------------------------------------------
        context = [report_hit(c, counts[c.id] / len(selected), chunks, graph, "reports") for c, _ in reports]
        context += [
            Hit(
                id=e.id, text=_entity_text(e), score=similarity.get(e.id, 0.0), kind="entity",
                provenance=provenance(chunks, e.source_chunk_ids),
                metadata={"section": "entities", "name": e.name, "type": e.type, "degree": graph.degree.get(e.id, 0)},
            )
            for e, _ in entity_rows
        ]
        context += [
            Hit(
                id=r.id, text=_relation_text(r, graph), score=1.0 / (1 + rank), kind="relation",
                provenance=provenance(chunks, r.source_chunk_ids),
                metadata={"section": "relationships", "source": r.source, "target": r.target, "weight": r.weight, "in_network": r.id in in_network},
            )
            for rank, (r, _) in enumerate(relation_rows)
        ]
        context += [chunk_hit(c, 1.0 / (1 + rank), section="chunks") for rank, (c, _) in enumerate(chunk_rows)]
        return context, passages


def _entity_text(entity: Entity) -> str:
    kind = f" ({entity.type})" if entity.type else ""
    return f"{entity.name}{kind}: {entity.description}".strip()


def _relation_text(relation: Relation, graph: Any) -> str:
    label = f" [{relation.predicate}]" if relation.predicate else ""
    return f"{graph.name(relation.source)} – {graph.name(relation.target)}{label}: {relation.description}".strip()


__all__ = ["LocalParams", "LocalSearch"]
