"""Global search: map community reports to rated key points; the points are the hits.

Which reports. With ``dynamic=False`` (the paper) every community at ``level`` (plus shallower
leaves, so the level partitions the graph) is mapped. With ``dynamic=True`` (GraphRAG's dynamic
community selection) the search starts at the root communities, rates each report's relevance
to the query (0–5), keeps those rated at least ``threshold`` and descends only into their
children, down to ``max_level``; a relevant parent is replaced by its relevant children unless
``keep_parent``. To bound the rating calls, only the ``candidate_limit`` communities of a step
most similar to the query (report embeddings) are rated, and never more than
``max_rating_calls`` in all.

Map. Reports are shuffled (seeded) and packed into batches of at most ``map_max_tokens``; each
batch is one model call returning points with an importance score 0–100 and the report ids they
rest on; all batches run concurrently (bounded by the model's own concurrency limit). Points
scoring above ``min_score`` are ranked by score, then by the rating of their report, and
returned as ``point`` hits. The three steps are :class:`~rhizome.core.retrieval.contract.MapReduceSearch`'s
(``aplan``, ``amap``, ``reduce``), so ``langgraph_rhizome`` can run the batches as graph
branches. The final answer (the reduce step of the paper) is ``GraphRAGIndex.answer(question,
mode="global")``.

Offline (no model): ratings and point scores are the share of the query's content words found
in the report (or point) text; the points of a report are its summary and its findings. With
ratings that cheap, every community on the way down is rated (no candidate limit, so no query
embedding): the words of each report and point, and which communities each word occurs in, are
kept until the graph changes, so a query counts its words' communities instead of comparing
itself with every report.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict
from collections.abc import Sequence, Set
from typing import Any

from pydantic import Field

from rhizome.core.index.hierarchy import has_summary
from rhizome.core.models.budget import fit
from rhizome.core.models.embeddings import hashed_features
from rhizome.core.retrieval.contract import (
    MapPlan,
    MapReduceSearch,
    batch_texts,
    best_distinct,
    point_hit,
    provenance,
    query_vector,
)
from rhizome.core.retrieval.params import RetrieverParams
from rhizome.core.text import count_tokens, truncate_tokens
from rhizome.core.types import Community, Hit
from rhizome.graphrag.prompts import MAP_PROMPT, MAP_SYSTEM, RATE_PROMPT, RATE_SYSTEM
from rhizome.graphrag.reports import community_card, full_content, short_content
from rhizome.graphrag.schemas import MapOutput, RatingOutput

MAP_OVERHEAD_TOKENS = 400
"""Tokens of ``map_max_tokens`` kept for the prompt around the reports."""

POINT_TOKENS = 100
"""Tokens a map answer needs per point (a sentence or two, a score, report ids)."""


def relevance_words(text: str) -> set[str]:
    """Normalised content words (no stopwords), the unit of offline relevance."""
    return {f for f in hashed_features(text) if " " not in f}


def share(query_words: Set[str], words: Set[str]) -> float:
    """Share of the query's content words among ``words`` (0..1)."""
    return len(query_words & words) / len(query_words) if query_words else 0.0


class GlobalParams(RetrieverParams):
    """The settings of :class:`GlobalSearch`: which communities it reads and how it maps them."""

    level: int = Field(2, ge=0)
    """Community level mapped when ``dynamic`` is off (GraphRAG's query default 2)."""

    dynamic: bool = True
    """Dynamic community selection (GraphRAG's ``dynamic_community_selection``; off in the paper,
    on here by default to bound the cost of a query — see docs/graphrag.md)."""

    threshold: float = Field(1, ge=0, le=5)
    """Lowest relevance rating (0–5) that keeps a community (GraphRAG 1)."""

    max_level: int = Field(2, ge=0)
    """Deepest level dynamic selection descends to (GraphRAG 2)."""

    keep_parent: bool = False
    """Keep a relevant parent next to its relevant children (GraphRAG False)."""

    candidate_limit: int = Field(16, ge=1)
    """Communities rated per step, the most query-similar first (not in GraphRAG; 16)."""

    max_rating_calls: int = Field(64, ge=1)
    """Budget of rating calls per query (not in GraphRAG; 64)."""

    rate_max_tokens: int = Field(500, ge=1)
    """Tokens of a report shown to the rater (title, summary, finding headlines; 500)."""

    map_max_tokens: int = Field(12000, gt=MAP_OVERHEAD_TOKENS)
    """Report tokens per map call, the prompt's :data:`MAP_OVERHEAD_TOKENS` included (GraphRAG
    ``data_max_tokens`` 12,000)."""

    max_points: int = Field(10, ge=1)
    """Points asked for per map call (not in GraphRAG, whose map answer is bounded by
    ``map_max_length`` 1,000 tokens; 10)."""

    min_score: float = Field(0.0, ge=0, le=100)
    """Points scoring at or below this (0–100) are dropped (GraphRAG drops score 0)."""

    seed: int = 86
    """Shuffle seed of the map batches (GraphRAG's context builder uses 86)."""

    max_new_reports: int = Field(8, ge=1)
    """Lazy mode: most reports one query may write; the selected communities still without a
    report are taken by relevance rating, then query similarity (not in GraphRAG; in the spirit
    of LazyGraphRAG's relevance-test budget; 8)."""

    offline_batch: int = Field(20, ge=1)
    """Offline only: reports per map batch. With no prompt to fill, batches only split the work
    — into the parallel branches of ``langgraph_rhizome``'s global search graph; the points do
    not depend on it (not in GraphRAG; 20)."""


class GlobalSearch(MapReduceSearch):
    """GraphRAG global search (map step) with optional dynamic community selection (``k``:
    points returned, default 50: the points are what the reduce step answers from; settings:
    :class:`GlobalParams`)."""

    default_k = 50
    mode = "global"
    params_class = GlobalParams
    params: GlobalParams

    def _offline_profile(self, community: Community, graph: Any) -> tuple[frozenset[str], list[tuple[str, frozenset[str]]]]:
        """Offline: the content words of a community's report (or card) and its points, each
        with its words. Kept until the graph changes: every query reads the same reports."""
        # kept on the graph itself: a cache keyed by id(graph) could outlive its graph and be
        # served to a new one at the same address, with the reports of before a delete
        cache = graph.cache.setdefault("global-offline-profiles", {})
        key = (community.id, has_summary(community))
        found = cache.get(key)
        if found is None:
            if not key[1]:
                found = (frozenset(relevance_words(community_card(community, graph))), [])
            else:
                candidates = [community.summary] + [f"{f.get('summary', '')}: {f.get('explanation', '')}" for f in community.findings]
                points = [(t.strip(), frozenset(relevance_words(t))) for t in candidates if t.strip()]
                found = (frozenset(relevance_words(full_content(community))), points)
            cache[key] = found
        return found

    def _offline_ratings(self, query_words: Set[str], graph: Any) -> dict[str, int]:
        """Offline: the rating (0–5) of every community whose report (or card) holds one of the
        query's content words, ``5 × share`` rounded; every other community rates 0. Counted
        from the communities each word occurs in (kept with the graph), not community by
        community."""
        postings = graph.cache.get("global-offline-postings")
        if postings is None:
            postings = defaultdict(list)
            for community in graph.communities.values():
                for word in self._offline_profile(community, graph)[0]:
                    postings[word].append(community.id)
            graph.cache["global-offline-postings"] = postings
        found = Counter(cid for word in query_words for cid in postings.get(word, ()))
        return {cid: int(5 * (n / len(query_words)) + 0.5) for cid, n in found.items()}

    async def _similarity(self, query: str) -> dict[str, float]:
        """Cosine similarity of the query to every community's embedded report (or card)."""
        vector = await query_vector(self.index, query)
        size = len(self.index.graph().communities)
        return dict(self.index.communities.search(vector, size)) if vector is not None and size else {}

    # -- selection -------------------------------------------------------------------------------
    async def aselect(self, query: str) -> tuple[list[Community], dict[str, Any]]:
        """The communities whose reports the map step reads, and what choosing them cost
        (``rating_calls``, ``rated``, ``pruned``, ``ratings`` and, with a model, ``similarity``
        by id). Offline every community on the way down is rated, so no similarity is needed."""
        graph = self.index.graph()
        stats: dict[str, Any] = {"rating_calls": 0, "rated": 0, "pruned": 0, "ratings": {}, "similarity": {}}
        if not self.params.dynamic:
            return sorted(graph.frontier(self.params.level), key=lambda c: (c.level, c.id)), stats
        llm = self.index.llm
        query_words = relevance_words(query)
        if llm is not None:
            stats["similarity"] = await self._similarity(query)
        similarity = stats["similarity"]
        offline = self._offline_ratings(query_words, graph) if llm is None and query_words else {}
        selected: list[Community] = []
        parents: set[str] = set()
        step = graph.cache.get("global-roots")
        if step is None:
            step = graph.cache["global-roots"] = sorted(graph.roots(), key=lambda c: c.id)
        calls = 0
        while step:
            step = sorted(step, key=lambda c: (-similarity.get(c.id, 0.0), c.id))
            limit = min(self.params.candidate_limit, self.params.max_rating_calls - calls) if llm is not None else len(step)
            rated_now, skipped = step[: max(0, limit)], step[max(0, limit) :]
            stats["pruned"] += len(skipped)

            async def rate(c: Community) -> int:
                shown = self.params.rate_max_tokens
                text = short_content(c, shown) if has_summary(c) else community_card(c, graph, shown)
                out = await llm.acomplete_json(RATE_PROMPT.format(question=query, report=text), RatingOutput, system=RATE_SYSTEM)
                return out.rating

            if llm is None:
                ratings = [offline.get(c.id, 0) for c in rated_now]
            else:
                ratings = await asyncio.gather(*(rate(c) for c in rated_now))
                calls += len(rated_now)
            stats["rated"] += len(rated_now)
            nxt: list[Community] = []
            for community, rating in zip(rated_now, ratings):
                stats["ratings"][community.id] = rating
                if rating < self.params.threshold:
                    stats["pruned"] += 1
                    continue
                selected.append(community)
                children = [graph.communities[c] for c in community.children if c in graph.communities]
                if children and community.level < self.params.max_level:
                    nxt.extend(children)
                    parents.add(community.id)
            step = nxt
        stats["rating_calls"] = calls
        # a relevant parent is replaced by its relevant children (unless keep_parent); it stays
        # when none of its children turned out relevant
        chosen = {c.id for c in selected}
        kept = [c for c in selected if self.params.keep_parent or c.id not in parents or not any(x in chosen for x in c.children)]
        return kept, stats

    # -- plan, map, reduce ------------------------------------------------------------------------
    async def aplan(self, query: str) -> MapPlan:
        """The selected communities with a report (written now in lazy mode), in map batches:
        shuffled and packed by tokens for the model (:meth:`batches`); offline, in selection
        order, ``offline_batch`` at a time."""
        graph = self.index.graph()
        if not graph.communities:
            return MapPlan()
        selected, stats = await self.aselect(query)
        missing = [c for c in selected if not has_summary(c)]
        if len(missing) > self.params.max_new_reports:
            ratings, similarity = stats["ratings"], stats["similarity"] or await self._similarity(query)
            missing.sort(key=lambda c: (-ratings.get(c.id, 0), -similarity.get(c.id, 0.0), c.id))
            dropped = {c.id for c in missing[self.params.max_new_reports :]}
            selected = [c for c in selected if c.id not in dropped]
            stats["over_report_budget"] = len(dropped)
        reports = await self.index.areports([c.id for c in selected])
        communities = [reports[c.id] for c in selected if c.id in reports and reports[c.id].title]
        stats.pop("similarity")
        stats["communities"] = len(communities)
        if self.index.llm is None:  # no prompt to fill: fixed-size batches in selection order
            ids = [c.id for c in communities]
            size = self.params.offline_batch
            batches = [ids[i : i + size] for i in range(0, len(ids), size)]
        else:
            batches = [[c.id for c, _ in batch] for batch in self.batches(communities, query)]
        stats["map_calls"] = len(batches) if self.index.llm is not None else 0
        return MapPlan(batches=batches, stats=stats)

    async def amap(self, query: str, batch: Sequence[str], k: int) -> list[Hit]:
        """The ``k`` best points of one batch of communities scoring above ``min_score``, each
        citing the chunks of the reports it rests on."""
        return await self.acite(query, await self.apoints(query, batch, k))

    async def apoints(self, query: str, batch: Sequence[str], k: int) -> list[Hit]:
        """:meth:`amap`'s points, citing nothing yet (the reduce reads their scores, ratings
        and texts only)."""
        reports = await self.index.areports(batch)
        communities = [reports[cid] for cid in batch if cid in reports]
        if self.index.llm is None:
            points = self._offline_points(query, communities)
        else:
            points = await self._model_points(query, self._texts(communities, self._budget(query)))
        # no batch gives more than k of the k best: the points the reduce would keep, chosen
        # before any of them becomes a hit
        kept = best_distinct([p for p in points if p["score"] > self.params.min_score], k,
                             lambda p: self.order(p["score"] / 100.0, p["rating"]), lambda p: p["description"])
        return [
            point_hit(p["description"], p["score"], p["description"] + "|".join(p["reports"]), rating=p["rating"], report_ids=p["reports"],
                      titles=[reports[c].title for c in p["reports"] if c in reports])
            for p in kept
        ]

    async def acite(self, query: str, points: list[Hit]) -> list[Hit]:
        """``points``, each citing the chunks of the reports it rests on (the first 20 of each
        report's, most cited first)."""
        graph = self.index.graph()
        groups = {tuple(h.metadata["report_ids"]) for h in points}
        reports = {cid for g in groups for cid in g if cid in graph.communities}
        cited = {cid: graph.community_chunks(graph.communities[cid])[:20] for cid in reports}
        chunks = self.index.store.chunks(sorted({x for ids in cited.values() for x in ids}))
        sources = {g: provenance(chunks, [x for cid in g for x in cited.get(cid, [])]) for g in groups}
        return [h.model_copy(update={"provenance": sources[tuple(h.metadata["report_ids"])]}) for h in points]

    @staticmethod
    def order(score: float, rating: float) -> tuple[float, float]:
        """Higher importance first, then the higher-rated report (GraphRAG's reduce order)."""
        return (-score, -rating)

    def point_key(self, point: Hit) -> Any:
        """:meth:`order` of a point hit."""
        return self.order(point.score, point.metadata.get("rating", 0.0))

    def explain(self, plan: MapPlan, hits: list[Hit]) -> list[str]:
        """Why no point came back: no report rated relevant, or none of their points scored."""
        if hits:
            return []
        stats = plan.stats
        if self.params.dynamic and not stats.get("communities"):
            return [f"no community report was rated relevant to the query (of {stats.get('rated', 0)} rated, "
                    f"{stats.get('pruned', 0)} fell under the threshold {self.params.threshold})"]
        return [f"no key point of the {stats.get('communities', 0)} reports mapped scored above {self.params.min_score}"]

    def _offline_points(self, query: str, communities: list[Community]) -> list[dict[str, Any]]:
        """Offline: each report's summary and findings, scored by the query's words they hold."""
        query_words, graph = relevance_words(query), self.index.graph()
        return [
            {"description": text, "score": round(100.0 * share(query_words, words), 1), "reports": [community.id], "rating": community.rating or 0.0}
            for community in communities
            for text, words in self._offline_profile(community, graph)[1]
        ]

    def _map_prompt(self, query: str, reports: str) -> str:
        return MAP_PROMPT.format(question=query, reports=reports, language=self.index.config.language, max_points=self.params.max_points)

    def batches(self, communities: list[Community], query: str = "") -> list[list[tuple[Community, str]]]:
        """Shuffled reports packed into map batches under ``map_max_tokens`` (less when the
        model's context window holds less, with room for ``max_points`` points)."""
        ordered = list(communities)
        random.Random(self.params.seed).shuffle(ordered)
        budget = self._budget(query)  # each report with the blank line before the next
        return batch_texts(self._texts(ordered, budget), budget, lambda item: item[1], overhead=2)

    def _budget(self, query: str) -> int:
        return fit(
            self.index.llm,
            self.params.map_max_tokens - MAP_OVERHEAD_TOKENS,
            reply_tokens=POINT_TOKENS * self.params.max_points,
            fixed=[MAP_SYSTEM, self._map_prompt(query, "")],
        )

    def _texts(self, communities: list[Community], budget: int) -> list[tuple[Community, str]]:
        """Each report as the map prompt shows it, cut to ``budget`` tokens."""
        texts = [(c, f"----- report {c.id} -----\n{full_content(c)}") for c in communities]
        return [(c, truncate_tokens(text, budget) if count_tokens(text) + 2 > budget else text) for c, text in texts]

    async def _model_points(self, query: str, batch: list[tuple[Community, str]]) -> list[dict[str, Any]]:
        """One map call: the points the model finds in one batch of reports."""
        prompt = self._map_prompt(query, "\n\n".join(text for _, text in batch))
        output = await self.index.llm.acomplete_json(prompt, MapOutput, system=MAP_SYSTEM)
        ids = [c.id for c, _ in batch]
        ratings = {c.id: c.rating or 0.0 for c, _ in batch}
        points = []
        for point in output.points:
            cited = [r for r in point.reports if r in ratings] or ids
            points.append({"description": point.description.strip(), "score": point.score, "reports": cited, "rating": max(ratings[r] for r in cited)})
        return [p for p in points if p["description"]]


__all__ = ["GlobalParams", "GlobalSearch"]
