"""HippoRAG's retrieval: personalized PageRank from the query's way into the graph.

``v2`` (HippoRAG 2, the default)
    The query is matched against the fact vectors (``fact_k`` = 10 nearest); the chat model,
    when there is one, keeps the facts that bear on the question (recognition memory, at most
    ``keep_facts`` = 4). The kept facts' subjects and objects become seeds, each at its best
    fact's weight relative to the other candidates (:func:`~rhizome.core.retrieval.evidence.relative_weights`),
    and so does each query entity's nearest phrase (weight 1). The nearest passages
    (``dense_k`` = 200) are passage seeds at their relative weights times ``passage_weight``.
    Personalized PageRank (damping 0.5) runs over phrases and passages, every seed phrase
    divided by the number of passages containing it (node specificity), and ranks the
    passages. No fact kept: dense retrieval.
``v1`` (HippoRAG 1's seeds)
    The query's named entities (the model's NER, or offline the names the query mentions) are
    linked to their nearest phrase each, weight 1; the walk is v2's, with the nearest passages
    as passage seeds. No entity linked: dense retrieval. With ``passage_weight=0`` the walk runs
    over the phrase graph alone and a passage scores the mass on its phrases, as in HippoRAG 1.
The index's ``naive`` mode (dense retrieval over the same passages, the baseline) is the
kernel's :data:`~rhizome.core.naive.NAIVE`, not this retriever.

The walk ranks; nothing is fused with the dense ranking afterwards
(:func:`~rhizome.core.retrieval.evidence.rank_passages`). ``temperature=None, passage_weight=0.05,
link_k=5, entity_seeds=False`` give HippoRAG 2 as published (min-max scaled passage seeds, fact
scores divided by the best, the five most specific fact phrases). ``chains=True`` adds the
phrases of the best chains of facts (:meth:`~rhizome.core.retrieval.evidence.FactGraph.chains`) to the seeds.
Every hit is a passage with its provenance, and in ``metadata``: ``via`` (``graph``: the
ranking above; ``dense-fallback``: no seed), ``seed_phrases`` and
``facts`` (the facts kept, v2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from rhizome.core.errors import ModelOutputError
from rhizome.core.extraction import query_names
from rhizome.core.extraction.schema import entity_key
from rhizome.core.retrieval.contract import (
    BaseRetriever,
    Retrieval,
    chunk_hits,
    query_vector,
    vector_search,
)
from rhizome.core.retrieval.evidence import (
    EvidenceParams,
    link_names,
    merge_seeds,
    relative_weights,
)
from rhizome.core.types import Relation
from rhizome.hipporag.prompts import (
    FILTER_SYSTEM,
    QUERY_SYSTEM,
    KeptFacts,
    NamedEntities,
    filter_prompt,
    query_ner_prompt,
)


class HippoRAGParams(EvidenceParams):
    """The settings of :class:`HippoRAGRetriever`: HippoRAG 2's fact filter and seeds, and the
    kernel's evidence walk (:class:`~rhizome.core.retrieval.evidence.EvidenceParams`: 200 nearest passages
    and 10 nearest facts). ``temperature=None, passage_weight=0.05, link_k=5,
    entity_seeds=False`` give HippoRAG 2 as published."""

    keep_facts: int = Field(4, ge=1)
    """Most facts the model's filter keeps (v2; 4)."""

    fact_filter: bool = True
    """Whether the chat model filters the facts (v2; with no model there is no filter and the
    ``fact_k`` facts are kept). Not to be confused with ``filter=``, the kernel's metadata
    filter every retriever takes."""

    link_k: int | None = Field(None, ge=1)
    """Most seed phrases taken from the facts, the most specific first (v2; ``None``, the
    default: every endpoint of the kept facts; HippoRAG 2's ``linking_top_k`` is 5)."""

    entity_seeds: bool = True
    """v2 also seeds each query entity's nearest phrase (``False``: the facts alone, as the
    paper)."""


class HippoRAGRetriever(BaseRetriever):
    """Retrieval over a :class:`~rhizome.hipporag.index.HippoRAGIndex` (``k``: passages
    returned, default 4; ``mode``: ``v2``, the default, or ``v1``; settings:
    :class:`HippoRAGParams`)."""

    modes = ("v2", "v1")
    params_class = HippoRAGParams
    params: HippoRAGParams

    # -- the model's steps (offline stand-ins without one) ---------------------------------------
    async def aquery_entities(self, query: str) -> list[str]:
        """The query's named entities: the model's NER, or (no model, or its JSON kept failing)
        the names the query mentions."""
        llm = self.index.llm
        if llm is not None:
            try:
                found = (await llm.acomplete_json(query_ner_prompt(query), NamedEntities, system=QUERY_SYSTEM)).named_entities
            except ModelOutputError:
                found = []
            if found:
                return list(dict.fromkeys(found))
        return query_names(query)

    async def afilter(self, query: str, facts: list[tuple[str, list[str], float]]) -> list[tuple[str, list[str], float]]:
        """HippoRAG 2's recognition memory: the facts the model keeps (at most ``keep_facts``,
        matched back to the candidates by their normalised parts). Without a model, or with
        ``fact_filter=False``, every candidate is kept; if the model's JSON keeps failing, too."""
        llm = self.index.llm
        if llm is None or not self.params.fact_filter or not facts:
            return facts
        try:
            answer = await llm.acomplete_json(filter_prompt(query, [f for _, f, _ in facts], self.params.keep_facts), KeptFacts, system=FILTER_SYSTEM)
        except ModelOutputError:
            return facts
        by_key = {tuple(entity_key(x) for x in parts): (fid, parts, score) for fid, parts, score in facts}
        kept: dict[str, tuple[str, list[str], float]] = {}
        for triple in answer.facts:
            found = by_key.get(tuple(entity_key(str(x)) for x in triple))
            if found is not None:
                kept.setdefault(found[0], found)
        return list(kept.values())[: self.params.keep_facts]

    # -- the search ------------------------------------------------------------------------------
    async def _asearch(self, query: str, k: int) -> Retrieval:
        index, options = self.index, self.params
        entities = await self.aquery_entities(query) if self.mode == "v1" or self.params.entity_seeds else []
        vectors = await query_vector(index, query, entities)  # the query and its entities in one call
        vector = None if vectors is None else vectors[:1]
        dense = vector_search(index.store, index.CHUNK_COLLECTION, vector, max(options.dense_k, k))
        stats: dict[str, Any] = {}
        seeds: dict[str, float] = {}
        kept: list[tuple[str, list[str], float]] = []
        chains: list[Any] = []
        if self.mode == "v2" and vectors is not None:
            seeds, kept, chains = await self._fact_seeds(query, vector)
            if kept and entities:  # no fact kept: dense retrieval, as HippoRAG 2
                seeds = merge_seeds(seeds, await link_names(index, index.PHRASE_COLLECTION, vectors[1:]))
            stats["facts_kept"] = len(kept)
        elif self.mode == "v1" and vectors is not None:  # each query entity's nearest phrase, weight 1
            seeds = await link_names(index, index.PHRASE_COLLECTION, vectors[1:])
        stats["seed_phrases"] = len(seeds)
        if not seeds:  # nothing to start a walk from: dense retrieval
            notes = [
                f"the {self.mode} search had nothing to start its walk from ("
                + ("no fact of the graph was kept for this query" if self.mode == "v2" else "no entity the query names is in the graph")
                + "): the hits are the passages nearest to the query"
            ]
            return Retrieval(query=query, hits=chunk_hits(index, dense[:k], via="dense-fallback"), stats=stats, notes=notes)
        # HippoRAG 1's phrase graph when passages are no seeds; else phrases and passages
        graph = index.graph(passage_nodes=self.mode == "v2" or options.passage_weight > 0)
        ranked = options.rank(graph, seeds, dense, limit=max(k, options.dense_k))
        names = index.entity_graph.names(list(seeds))
        facts = [" ".join(x for x in parts if x) for _, parts, _ in kept]
        metadata: dict[str, Any] = {"seed_phrases": [names.get(s, s) for s in seeds], "facts": facts}
        if chains:
            metadata["chains"] = self._chain_texts(chains[:3])
            stats["chains"] = len(chains)
        hits = chunk_hits(index, ranked[:k], via="graph", **metadata)
        return Retrieval(query=query, hits=hits, stats=stats)

    async def _fact_seeds(self, query: str, vector: Any) -> tuple[dict[str, float], list[tuple[str, list[str], float]], list[Any]]:
        """Seed phrases from the facts nearest the query (after the filter), each at its best
        fact's weight relative to the candidates, and the chains of facts when they are on."""
        index, options = self.index, self.params
        found = vector_search(index.store, index.FACT_COLLECTION, vector, options.fact_k)
        if not found:
            return {}, [], []
        records = index.facts.get([fid for fid, _ in found])
        parts = self._parts(records)
        facts = [(fid, parts[fid], score) for fid, score in found if fid in parts]
        kept = await self.afilter(query, facts)
        if not kept:
            return {}, [], []
        if options.temperature is None:  # HippoRAG 2: each fact's score over the best kept one
            top = max(score for _, _, score in kept)
            weight = {fid: (score / top if top > 0 else 1.0) for fid, _, score in kept}
        else:  # relative to every candidate, so a filter that keeps weak facts keeps them weak
            weight = relative_weights([(fid, score) for fid, _, score in facts], options.temperature)
        phrases: dict[str, float] = {}
        for fid, _, _ in kept:
            for phrase in (records[fid].source, records[fid].target):
                phrases[phrase] = max(weight[fid], phrases.get(phrase, 0.0))
        if self.params.link_k is not None:
            passages = index.graph().passages_of
            best = sorted(phrases, key=lambda p: (-phrases[p] / max(1, passages.get(p, 1)), p))[: self.params.link_k]
            phrases = {p: phrases[p] for p in best}
        more, chains = index.chain_seeds(options, vector, [(fid, s) for fid, _, s in kept])
        return merge_seeds(phrases, more), kept, chains

    def _parts(self, records: Mapping[str, Relation]) -> dict[str, list[str]]:
        """Each fact as ``[subject, predicate, object]``, its phrases by name."""
        names = self.index.entity_graph.names({x for r in records.values() for x in (r.source, r.target)})
        return {fid: [names.get(r.source, r.source), r.predicate, names.get(r.target, r.target)] for fid, r in records.items()}

    def _chain_texts(self, chains: list[Any]) -> list[str]:
        """Each chain as its facts' texts joined by ``→``."""
        parts = self._parts(self.index.facts.get(list({f for c in chains for f in c.facts})))
        return [" → ".join(" ".join(x for x in parts[f] if x) for f in chain.facts if f in parts) for chain in chains]


__all__ = ["HippoRAGParams", "HippoRAGRetriever"]
