"""Local search: entities matched to the query and their neighbourhood, packed into a budget.

As GraphRAG's mixed local context: the query is embedded and matched to entity description
vectors (``k`` entities); then three sections share ``max_tokens``:

- community reports (``community_prop``, 15%): reports of the communities containing the matched
  entities, those containing most matched entities first, then by rating;
- entities and relationships (the rest, 35%): the matched entities, then relationships among
  them, then relationships to outside entities linked to many matched entities (at most
  ``top_k_relationships`` per matched entity);
- source chunks (``text_unit_prop``, 50%): the chunks the matched entities come from, in the
  order of the entities, chunks carrying more of the entity's relationships first.

Each section adds rows in rank order until the next one would overflow its share.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rhizome.core.text import count_tokens
from rhizome.core.types import Community, Entity, Hit, Relation
from rhizome.graphrag.reports import full_content
from rhizome.graphrag.search._common import (
    SyncRetrieve,
    check_k,
    check_positive,
    check_prop,
    check_query,
    provenance,
    query_vector,
    search_collection,
)


@dataclass
class LocalContext:
    """The packed context of one local search."""

    hits: list[Hit] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    budgets: dict[str, int] = field(default_factory=dict)


class LocalSearch(SyncRetrieve):
    """GraphRAG local search over a :class:`~rhizome.graphrag.index.GraphRAGIndex`.

    Parameters
    ----------
    k:
        Entities matched to the query (GraphRAG ``top_k_mapped_entities`` 10).
    max_tokens:
        Context budget (GraphRAG local search ``max_context_tokens`` 12,000).
    text_unit_prop:
        Share of the budget for source chunks (GraphRAG 0.5).
    community_prop:
        Share for community reports (GraphRAG 0.15); the rest goes to entities and relationships.
    top_k_relationships:
        Relationships to outside entities per matched entity (GraphRAG 10).
    oversample:
        Entity candidates fetched per wanted entity before filtering (GraphRAG fetches twice as
        many, 2).
    """

    def __init__(
        self,
        index: Any,
        k: int | None = None,
        *,
        max_tokens: int = 12000,
        text_unit_prop: float = 0.5,
        community_prop: float = 0.15,
        top_k_relationships: int = 10,
        oversample: int = 2,
    ) -> None:
        self.index = index
        self.k = check_k(k, 10)
        self.max_tokens = check_positive("max_tokens", max_tokens)
        self.text_unit_prop = check_prop("text_unit_prop", text_unit_prop)
        self.community_prop = check_prop("community_prop", community_prop)
        if self.text_unit_prop + self.community_prop > 1.0:
            from rhizome.core.errors import ConfigurationError

            raise ConfigurationError("text_unit_prop + community_prop must not exceed 1")
        self.top_k_relationships = check_positive("top_k_relationships", top_k_relationships)
        self.oversample = check_positive("oversample", oversample)

    async def aretrieve(self, query: str, k: int | None = None) -> list[Hit]:
        return (await self.abuild(query, k)).hits

    async def match_entities(self, query: str, k: int) -> list[tuple[Entity, float]]:
        graph = self.index.graph()
        vector = await query_vector(self.index, query)
        ranked = search_collection(self.index, self.index.ENTITY_COLLECTION, vector, k * self.oversample)
        out = [(graph.entities[eid], score) for eid, score in ranked if eid in graph.entities]
        return out[:k]

    async def abuild(self, query: str, k: int | None = None) -> LocalContext:
        """The packed context (hits in context order: reports, entities, relationships, chunks)."""
        check_query(query)
        k = check_k(k, self.k)
        context = LocalContext()
        graph = self.index.graph()
        if not graph.entities:
            return context
        matched = await self.match_entities(query, k)
        if not matched:
            return context
        selected = [e for e, _ in matched]
        similarity = {e.id: s for e, s in matched}
        selected_ids = {e.id for e in selected}

        community_budget = int(self.max_tokens * self.community_prop)
        text_budget = int(self.max_tokens * self.text_unit_prop)
        local_budget = self.max_tokens - community_budget - text_budget
        context.budgets = {"reports": community_budget, "entities": local_budget, "chunks": text_budget}

        # -- communities --------------------------------------------------------------------
        counts = Counter(cid for e in selected for cid in graph.communities_of.get(e.id, ()))
        ranked_communities = sorted(
            counts,
            key=lambda c: (-counts[c], -(graph.communities[c].rating or 0.0), graph.communities[c].level, c),
        )
        community_hits: list[tuple[Community, float]] = []
        if ranked_communities and community_budget > 0:
            # lazy mode writes only what could fit: a report is rarely under 200 tokens
            wanted = ranked_communities[: max(1, community_budget // 200)]
            reports = await self.index.areports(wanted)
            used = 0
            for cid in wanted:
                community = reports.get(cid)
                if community is None or not community.title:
                    continue
                tokens = count_tokens(full_content(community)) + 2
                if used + tokens > community_budget:
                    break
                used += tokens
                community_hits.append((community, counts[cid] / len(selected)))
            context.tokens["reports"] = used

        # -- entities and relationships -----------------------------------------------------
        entity_rows: list[tuple[Entity, int]] = []
        used = 0
        for entity in selected:
            tokens = count_tokens(_entity_text(entity)) + 2
            if used + tokens > local_budget:
                break
            used += tokens
            entity_rows.append((entity, tokens))
        in_network: dict[str, Relation] = {}
        out_network: dict[str, Relation] = {}
        for entity in selected:
            for rid in graph.relations_of.get(entity.id, ()):
                relation = graph.relations[rid]
                if relation.source in selected_ids and relation.target in selected_ids:
                    in_network[rid] = relation
                else:
                    out_network[rid] = relation
        links: Counter[str] = Counter()
        for relation in out_network.values():
            outside = relation.target if relation.source in selected_ids else relation.source
            links[outside] += 1
        ordered_in = sorted(in_network.values(), key=lambda r: (-graph.combined_degree(r), -r.weight, r.id))

        def outside_of(r: Relation) -> str:
            return r.target if r.source in selected_ids else r.source

        ordered_out = sorted(
            out_network.values(),
            key=lambda r: (-links[outside_of(r)], -graph.combined_degree(r), -r.weight, r.id),
        )[: self.top_k_relationships * len(selected)]
        relation_rows: list[tuple[Relation, int]] = []
        for relation in ordered_in + ordered_out:
            tokens = count_tokens(_relation_text(relation, graph)) + 2
            if used + tokens > local_budget:
                break
            used += tokens
            relation_rows.append((relation, tokens))
        context.tokens["entities"] = used

        # -- source chunks ------------------------------------------------------------------
        order: dict[str, tuple[int, int]] = {}
        for position, entity in enumerate(selected):
            relation_chunks: Counter[str] = Counter()
            for rid in graph.relations_of.get(entity.id, ()):
                relation_chunks.update(graph.relations[rid].source_chunk_ids)
            for cid in entity.source_chunk_ids:
                if cid not in order:
                    order[cid] = (position, -relation_chunks[cid])
        chunk_ids = sorted(order, key=lambda c: (order[c], c))
        # every chunk any hit may cite
        cited: set[str] = set(chunk_ids)
        for community, _ in community_hits:
            cited.update(graph.community_chunks(community)[:20])
        for relation, _ in relation_rows:
            cited.update(relation.source_chunk_ids[:20])
        for entity, _ in entity_rows:
            cited.update(entity.source_chunk_ids[:20])
        chunks = self.index.store.chunks(sorted(cited))
        chunk_rows = []
        used = 0
        for cid in chunk_ids:
            chunk = chunks.get(cid)
            if chunk is None:
                continue
            tokens = count_tokens(chunk.text) + 2
            if used + tokens > text_budget:
                break
            used += tokens
            chunk_rows.append((chunk, tokens))
        context.tokens["chunks"] = used

        # -- hits ---------------------------------------------------------------------------
        hits: list[Hit] = []
        for community, score in community_hits:
            hits.append(
                Hit(
                    id=community.id,
                    text=full_content(community),
                    score=score,
                    kind="community",
                    provenance=provenance(chunks, graph.community_chunks(community)),
                    metadata={
                        "section": "reports",
                        "title": community.title,
                        "level": community.level,
                        "rating": community.rating,
                        "tokens": count_tokens(full_content(community)) + 2,
                    },
                )
            )
        for entity, tokens in entity_rows:
            hits.append(
                Hit(
                    id=entity.id,
                    text=_entity_text(entity),
                    score=similarity.get(entity.id, 0.0),
                    kind="entity",
                    provenance=provenance(chunks, entity.source_chunk_ids),
                    metadata={
                        "section": "entities",
                        "name": entity.name,
                        "type": entity.type,
                        "degree": graph.degree.get(entity.id, 0),
                        "tokens": tokens,
                    },
                )
            )
        for rank, (relation, tokens) in enumerate(relation_rows):
            hits.append(
                Hit(
                    id=relation.id,
                    text=_relation_text(relation, graph),
                    score=1.0 / (1 + rank),
                    kind="relation",
                    provenance=provenance(chunks, relation.source_chunk_ids),
                    metadata={
                        "section": "relationships",
                        "source": relation.source,
                        "target": relation.target,
                        "weight": relation.weight,
                        "in_network": relation.id in in_network,
                        "tokens": tokens,
                    },
                )
            )
        for rank, (chunk, tokens) in enumerate(chunk_rows):
            metadata: dict[str, Any] = {
                "section": "chunks",
                "document_id": chunk.document_id,
                "chunk_index": chunk.index,
                "tokens": tokens,
            }
            if "title" in chunk.metadata:
                metadata["title"] = chunk.metadata["title"]
            hits.append(
                Hit(id=chunk.id, text=chunk.text, score=1.0 / (1 + rank), kind="chunk", provenance=chunk.provenance(), metadata=metadata)
            )
        context.hits = hits
        return context


def _entity_text(entity: Entity) -> str:
    kind = f" ({entity.type})" if entity.type else ""
    return f"{entity.name}{kind}: {entity.description}".strip()


def _relation_text(relation: Relation, graph: Any) -> str:
    source = graph.entities[relation.source].name if relation.source in graph.entities else relation.source
    target = graph.entities[relation.target].name if relation.target in graph.entities else relation.target
    label = f" [{relation.predicate}]" if relation.predicate else ""
    return f"{source} – {target}{label}: {relation.description}".strip()


__all__ = ["LocalContext", "LocalSearch"]
