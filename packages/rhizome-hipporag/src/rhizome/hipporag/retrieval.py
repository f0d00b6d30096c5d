"""HippoRAG's retrieval: personalized PageRank from the query's way into the graph.

``v2`` (HippoRAG 2, the default)
    The query is matched against the fact vectors (``fact_k`` = 5 best); the chat model, when
    there is one, keeps the facts that bear on the question (recognition memory, at most
    ``keep_facts`` = 4). The kept facts' subjects and objects become seeds, each weighted by
    its facts' scores (scaled so the best fact scores 1, averaged over its facts) divided by
    the number of passages containing it (node specificity); the ``link_k`` = 5 best seeds are
    kept. The dense scores of the nearest passages are passage seeds at weight 0.05.
    Personalized PageRank (damping 0.5) runs over phrases and passages. No fact kept: dense
    retrieval.
``v1`` (HippoRAG 1)
    The query's named entities (the model's NER, or offline the names the query mentions) are
    linked to their nearest phrase each; every linked phrase is a seed of weight 1 divided by
    its passage count. PageRank runs over the phrase graph; a passage scores the mass on its
    phrases. No entity linked: dense retrieval.
``naive``
    Dense retrieval over the same passages (the baseline).

In both graph modes the walk's ranking is then fused with the dense ranking and dense
retrieval's first passages keep the lead (:func:`~rhizome.core.evidence.rank_passages`;
``dense_weight=0`` and ``dense_lead=0`` give the walk's ranking alone, as the papers rank).
Every hit is a passage with its provenance, and in ``metadata``: ``via`` (``graph``: the
ranking above; ``dense``: naive mode; ``dense-fallback``: no seed), ``seed_phrases`` and
``facts`` (the facts kept, v2).
"""

from __future__ import annotations

from typing import Any

from rhizome.core.errors import ConfigurationError, ModelOutputError
from rhizome.core.evidence import (
    DEFAULT_DENSE_LEAD,
    DEFAULT_LINK_K,
    DEFAULT_PASSAGE_SEED,
    link_entities,
    rank_passages,
)
from rhizome.core.extraction import query_names
from rhizome.core.extraction.schema import entity_key
from rhizome.core.graph import DEFAULT_PPR_DAMPING
from rhizome.core.retrieval import (
    BaseRetriever,
    Retrieval,
    check_flag,
    check_non_negative,
    check_positive,
    chunk_hits,
    query_vector,
    vector_search,
)
from rhizome.hipporag.prompts import (
    FILTER_SYSTEM,
    QUERY_SYSTEM,
    KeptFacts,
    NamedEntities,
    filter_prompt,
    query_ner_prompt,
)


class HippoRAGRetriever(BaseRetriever):
    """Retrieval over a :class:`~rhizome.hipporag.index.HippoRAGIndex`.

    Parameters
    ----------
    k:
        Passages returned (default 4).
    mode:
        ``v2`` (default), ``v1`` or ``naive``.
    fact_k:
        Facts matched to the query (v2; HippoRAG 2's 5).
    keep_facts:
        Most facts the model's filter keeps (v2; 4).
    fact_filter:
        Whether the chat model filters the facts (v2; with no model there is no filter and the
        ``fact_k`` facts are kept). Not to be confused with ``filter=``, the kernel's metadata
        filter every retriever takes.
    link_k:
        Seed phrases kept (v2's ``linking_top_k`` 5); v1 links one phrase per query entity.
    dense_k:
        Nearest passages taken as passage seeds and into the fusion (200, HippoRAG 2's
        ``retrieval_top_k``).
    passage_seed, damping:
        Weight of the passage seeds (0.05) and the walk's damping (0.5), HippoRAG 2's.
    dense_weight, dense_lead:
        Weight of the dense ranking in the fusion with the walk (1; 0: the walk alone) and how
        many of dense retrieval's first passages stay first (2; 0: none).
    """

    def __init__(
        self,
        index: Any,
        k: int | None = None,
        mode: str = "v2",
        *,
        fact_k: int = 5,
        keep_facts: int = 4,
        fact_filter: bool = True,
        link_k: int = DEFAULT_LINK_K,
        dense_k: int = 200,
        passage_seed: float = DEFAULT_PASSAGE_SEED,
        damping: float = DEFAULT_PPR_DAMPING,
        dense_weight: float = 0.0,
        dense_lead: int = DEFAULT_DENSE_LEAD,
        entity_seeds: bool = True,
    ) -> None:
        super().__init__(index, k)
        if mode not in index.modes:
            raise ConfigurationError(f"unknown mode {mode!r}; modes: {', '.join(index.modes)}")
        self.mode = mode
        self.fact_k = check_positive("fact_k", fact_k)
        self.keep_facts = check_positive("keep_facts", keep_facts)
        self.fact_filter = check_flag("fact_filter", fact_filter)
        self.link_k = check_positive("link_k", link_k)
        self.dense_k = check_positive("dense_k", dense_k)
        self.passage_seed = check_non_negative("passage_seed", passage_seed)
        if not 0.0 <= damping < 1.0:
            raise ConfigurationError(f"damping must be in [0, 1), got {damping!r}")
        self.damping = float(damping)
        self.dense_weight = check_non_negative("dense_weight", dense_weight)
        self.dense_lead = int(check_non_negative("dense_lead", dense_lead))
        self.entity_seeds = check_flag("entity_seeds", entity_seeds)

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
        if llm is None or not self.fact_filter or not facts:
            return facts
        try:
            answer = await llm.acomplete_json(filter_prompt(query, [f for _, f, _ in facts], self.keep_facts), KeptFacts, system=FILTER_SYSTEM)
        except ModelOutputError:
            return facts
        by_key = {tuple(entity_key(x) for x in parts): (fid, parts, score) for fid, parts, score in facts}
        kept: dict[str, tuple[str, list[str], float]] = {}
        for triple in answer.facts:
            found = by_key.get(tuple(entity_key(str(x)) for x in triple))
            if found is not None:
                kept.setdefault(found[0], found)
        return list(kept.values())[: self.keep_facts]

    # -- the search ------------------------------------------------------------------------------
    async def _asearch(self, query: str, k: int) -> Retrieval:
        index = self.index
        vector = await query_vector(index, query)
        dense = vector_search(index.store, index.CHUNK_COLLECTION, vector, max(self.dense_k, k))
        stats: dict[str, Any] = {}
        seeds: dict[str, float] = {}
        kept: list[tuple[str, list[str], float]] = []
        if self.mode == "v2":
            seeds, kept = await self._fact_seeds(query, vector)
            if kept and self.entity_seeds:  # no fact kept: dense retrieval, as HippoRAG 2
                for phrase, weight in (await self._entity_seeds(query)).items():
                    seeds[phrase] = max(seeds.get(phrase, 0.0), weight)
            stats["facts_kept"] = len(kept)
        elif self.mode == "v1":
            seeds = await self._entity_seeds(query)
        stats["seed_phrases"] = len(seeds)
        if not seeds:  # naive mode, or nothing to start a walk from: dense retrieval
            via = "dense" if self.mode == "naive" else "dense-fallback"
            notes = [] if self.mode == "naive" else [
                f"the {self.mode} search had nothing to start its walk from ("
                + ("no fact of the graph was kept for this query" if self.mode == "v2" else "no entity the query names is in the graph")
                + "): the hits are the passages nearest to the query"
            ]
            return Retrieval(query=query, hits=chunk_hits(index, dense[:k], via=via), stats=stats, notes=notes)
        graph = index.graph(passage_nodes=self.mode == "v2")
        ranked = rank_passages(
            graph, seeds, dense, passage_seed=self.passage_seed, damping=self.damping,
            dense_weight=self.dense_weight, dense_lead=self.dense_lead,
        )
        names = index.names(list(seeds))
        facts = [" ".join(x for x in parts if x) for _, parts, _ in kept]
        seed_names = [names.get(s, s) for s in seeds]
        hits = chunk_hits(index, ranked[:k], via="graph", seed_phrases=seed_names, facts=facts)
        return Retrieval(query=query, hits=hits, stats=stats)

    async def _fact_seeds(self, query: str, vector: Any) -> tuple[dict[str, float], list[tuple[str, list[str], float]]]:
        """Seed phrases from the facts nearest the query (after the filter)."""
        index = self.index
        found = vector_search(index.store, index.FACT_COLLECTION, vector, self.fact_k)
        if not found:
            return {}, []
        records = index.facts.get([fid for fid, _ in found])
        names = index.names(list({x for r in records.values() for x in (r.source, r.target)}))
        facts = [
            (fid, [names.get(r.source, r.source), r.predicate, names.get(r.target, r.target)], score)
            for fid, score in found
            if (r := records.get(fid)) is not None
        ]
        kept = await self.afilter(query, facts)
        if not kept:
            return {}, []
        top = max(score for _, _, score in kept)
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for fid, _, score in kept:
            fact = records[fid]
            for phrase in (fact.source, fact.target):
                sums[phrase] = sums.get(phrase, 0.0) + (score / top if top > 0 else 1.0)
                counts[phrase] = counts.get(phrase, 0) + 1
        weights = {p: sums[p] / counts[p] for p in sums}
        passages = index.graph().passages_of
        best = sorted(weights, key=lambda p: (-weights[p] / max(1, passages.get(p, 1)), p))[: self.link_k]
        return {p: weights[p] for p in best}, kept

    async def _entity_seeds(self, query: str) -> dict[str, float]:
        """Each query entity's nearest phrase, weight 1 (specificity is applied by the walk)."""
        entities = await self.aquery_entities(query)
        if not entities:
            return {}
        vectors = await query_vector(self.index, entities[0], entities[1:])
        linked = await link_entities(self.index, self.index.PHRASE_COLLECTION, vectors, 1)
        return dict.fromkeys(linked, 1.0)


__all__ = ["HippoRAGRetriever"]
