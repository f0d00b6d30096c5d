"""DRIFT-style search: a global primer over report embeddings, then local follow-ups.

1. Primer. The query is matched to the community report vectors (``primer_k`` reports); with a
   model, the reports are split into ``primer_folds`` folds and each fold is one call returning
   what the reports say, follow-up questions and a score.
2. Follow-ups. The best pending questions (``followups_per_depth``, by the score of the step that
   asked them) each run a local search with DRIFT's local settings (90% chunks, 10% reports);
   with a model, one call per follow-up reads that context and answers it, possibly asking
   further questions. This repeats ``n_depth`` times.

Offline there is no model to ask questions: each of the best primer reports gives one follow-up,
the question turned to that community's three most connected members (the ones its title
names), one round deep.

Hits: passages, ranked as local search ranks them (the kernel's evidence walk, see
:class:`LocalSearch`) with further seeds at ``followup_weight``: the entities the names of
every follow-up question link to and that question's nearest passages, or offline the members
each follow-up turns to, which need no embedding. The follow-ups add the passages the question
alone does not reach. The context (:meth:`asearch`) holds the intermediate answers
(``point`` hits citing their reports and chunks), then the local contexts of the question and
its follow-ups interleaved round-robin (chunks first), then the primer reports; offline,
:meth:`aretrieve` skips those contexts, which no model step reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic import Field, model_validator

from rhizome.core.extraction import query_names
from rhizome.core.models.budget import fit
from rhizome.core.retrieval.contract import (
    BaseRetriever,
    Retrieval,
    by_rank,
    chunk_hits,
    dedupe,
    point_hit,
    provenance,
    query_vector,
    round_robin,
)
from rhizome.core.retrieval.evidence import EvidenceParams, merge_seeds, relative_weights
from rhizome.core.text import truncate_tokens
from rhizome.core.types import Community, Hit
from rhizome.graphrag.prompts import DRIFT_FOLLOWUP_PROMPT, DRIFT_PRIMER_PROMPT, DRIFT_SYSTEM
from rhizome.graphrag.reports import full_content, report_hit
from rhizome.graphrag.schemas import DriftStep
from rhizome.graphrag.search.local import LocalSearch

STEP_REPLY_TOKENS = 800
"""Tokens kept free for one step's answer: a partial answer, follow-up questions, a score."""

FOCUS_MEMBERS = 3
"""Members of a primer community an offline follow-up turns to (the ones its title names)."""


@dataclass(order=True)
class _Action:
    priority: float
    question: str = field(compare=False)
    depth: int = field(compare=False)
    entities: tuple[str, ...] = field(default=(), compare=False)
    """Offline: the members of the primer community the follow-up turns to (walk seeds)."""
    weight: float = field(default=1.0, compare=False)
    """Offline: that community's weight relative to the other primer reports."""


class DriftParams(EvidenceParams):
    """The settings of :class:`DriftSearch`: the primer, the follow-ups, DRIFT's local search
    and the kernel's evidence ranking of the local searches
    (:class:`~rhizome.core.retrieval.evidence.EvidenceParams`)."""

    primer_k: int = Field(20, ge=1)
    """Reports read by the primer (GraphRAG ``drift_k_followups`` 20)."""

    primer_folds: int = Field(5, ge=1)
    """Primer calls the reports are split over (GraphRAG ``primer_folds`` 5)."""

    n_depth: int = Field(3, ge=1)
    """Rounds of follow-ups (GraphRAG ``n_depth`` 3)."""

    followups_per_depth: int = Field(3, ge=1)
    """Follow-up questions run per round (not fixed by GraphRAG; 3)."""

    local_top_k_entities: int = Field(10, ge=1)
    """Entities DRIFT's local search matches to a question (GraphRAG DRIFT's local search: 10)."""

    local_max_tokens: int = Field(12000, ge=1)
    """Budget of DRIFT's local context (GraphRAG DRIFT's local search: 12,000)."""

    local_text_unit_prop: float = Field(0.9, ge=0, le=1)
    """Share of the local budget for source chunks (GraphRAG DRIFT's local search: 0.9)."""

    local_community_prop: float = Field(0.1, ge=0, le=1)
    """Share of the local budget for community reports (GraphRAG DRIFT's local search: 0.1)."""

    context_max_tokens: int = Field(8000, ge=1)
    """Tokens of a follow-up's local context shown to the model (8,000)."""

    pool: int = Field(50, ge=1)
    """Passages ranked before the cut to ``k`` (50)."""

    followup_weight: float = Field(0.25, ge=0)
    """Weight of each follow-up's seeds against the question's own (0.25): offline, the members
    its community's title names, times that community's weight relative to the other primer
    reports. At 0.5 the offline follow-ups moved passages the question is about out of the
    first two (musique-dev R@2 0.449 against dense 0.450; 0.466 at 0.25, 0.470 at 0.1)."""

    @model_validator(mode="after")
    def _shares_fit(self) -> DriftParams:
        if self.local_text_unit_prop + self.local_community_prop > 1.0:
            raise ValueError(
                "local_text_unit_prop + local_community_prop must not exceed 1, got "
                f"{self.local_text_unit_prop:g} + {self.local_community_prop:g}"
            )
        return self


class DriftSearch(BaseRetriever):
    """DRIFT search over a :class:`~rhizome.graphrag.index.GraphRAGIndex` (``k``: hits
    returned, default 4; settings: :class:`DriftParams`)."""

    mode = "drift"
    params_class = DriftParams
    params: DriftParams

    def __init__(self, index: Any, k: int | None = None, **settings: Any) -> None:
        super().__init__(index, k, **settings)
        p = self.params
        self.local = LocalSearch(
            index, top_k_entities=p.local_top_k_entities, max_tokens=p.local_max_tokens,
            text_unit_prop=p.local_text_unit_prop, community_prop=p.local_community_prop, **p.evidence(),
        )
        """The local search DRIFT runs for the question and each follow-up."""

    async def _asearch(self, query: str, k: int) -> Retrieval:
        return await self._drift(query, k, context=True)

    async def _ahits(self, query: str, k: int) -> Retrieval:
        # offline, no step reads the local contexts: only the questions asked are needed
        return await self._drift(query, k, context=self.index.llm is not None)

    async def _drift(self, query: str, k: int, *, context: bool) -> Retrieval:
        graph = self.index.graph()
        names = query_names(query)  # embedded with the question, for the walk's linking
        vectors = await query_vector(self.index, query, names)
        embedded = dict(zip([query, *names], vectors)) if vectors is not None else {}
        ranked = self.index.communities.search(vectors[:1], self.params.primer_k) if vectors is not None else []
        ids = [cid for cid, _ in ranked if cid in graph.communities]
        similarity = dict(ranked)
        reports = await self.index.areports(ids)
        primer = [reports[c] for c in ids if c in reports and reports[c].title]
        points, actions = await self._prime(query, primer, graph, similarity)
        local_lists: list[list[Hit]] = [await self.local.abuild(query)] if context else []
        asked, steps = await self._follow_ups(query, actions, points, local_lists, context)

        # the follow-ups with a question are linked and searched by it; the offline ones seed the
        # walk with the members of their community directly, with no text to embed
        seeds = merge_seeds(*({e: self.params.followup_weight * a.weight for e in a.entities} for a in asked))
        texts = [a.question for a in asked if not a.entities]
        walked, _ = await self.local.arank(
            query, max(k, self.params.pool), followups=texts, followup_weight=self.params.followup_weight, entities=seeds, embedded=embedded
        )
        hits = by_rank(chunk_hits(self.index, walked[:k]))
        stats = {"primer_reports": len(primer), "follow_ups": steps, "points": len(points)}
        if not context:
            return Retrieval(query=query, hits=hits, stats=stats)
        return Retrieval(query=query, hits=hits, context=self._context(points, primer, local_lists, graph, similarity), stats=stats)

    async def _prime(
        self, query: str, primer: list[Community], graph: Any, similarity: dict[str, float]
    ) -> tuple[list[_Point], list[_Action]]:
        """The primer: with a model, each fold of the primer reports answered (a point) with
        follow-up questions; offline, one follow-up per report, searched from its community's
        most connected members at the report's weight relative to the others."""
        llm, language = self.index.llm, self.index.config.language
        points: list[_Point] = []
        actions: list[_Action] = []
        if llm is not None and primer:
            folds = [primer[i :: self.params.primer_folds] for i in range(self.params.primer_folds)]
            folds = [f for f in folds if f]
            prompt = partial(DRIFT_PRIMER_PROMPT.format, question=query, language=language, n_followups=self.params.followups_per_depth)
            texts = ["\n\n".join(f"----- report {c.id} -----\n{full_content(c)}" for c in fold) for fold in folds]
            for fold, step in zip(folds, await asyncio.gather(*(self._step(prompt, text) for text in texts))):
                chunk_ids = [x for c in fold for x in graph.community_chunks(c)[:5]]
                if step.answer.strip():
                    points.append((step.score, step.answer.strip(), [c.id for c in fold], chunk_ids))
                actions += [_Action(-step.score, q.strip(), 1) for q in step.follow_ups if q.strip()]
        else:
            weight = relative_weights([(c.id, similarity.get(c.id, 0.0)) for c in primer], self.params.temperature)
            for rank, community in enumerate(primer[: self.params.followups_per_depth]):
                focus = tuple(e.id for e in graph.members(community, FOCUS_MEMBERS))
                actions.append(_Action(float(rank), f"{query} {community.title}", 1, focus, weight[community.id]))
        return points, actions

    async def _follow_ups(
        self, query: str, actions: list[_Action], points: list[_Point], local_lists: list[list[Hit]], context: bool
    ) -> tuple[list[_Action], int]:
        """The follow-ups, depth by depth (each question once, the best first); with a model,
        each is answered from its local context (a point) and may ask more. ``actions``,
        ``points`` and ``local_lists`` (the contexts built, with ``context``) grow in place;
        returns the follow-ups asked and how many there were."""
        llm, language = self.index.llm, self.index.config.language
        asked: list[_Action] = []
        done: set[str] = {query.lower()}
        steps = 0
        for depth in range(1, self.params.n_depth + 1):
            fresh: dict[str, _Action] = {}  # each question once, its best asking first
            for action in sorted(a for a in actions if a.depth == depth):
                fresh.setdefault(action.question.lower(), action)
            todo = [a for question, a in fresh.items() if question not in done][: self.params.followups_per_depth]
            done.update(a.question.lower() for a in todo)
            if not todo:
                break
            asked += todo
            contexts = list(await asyncio.gather(*(self.local.abuild(a.question) for a in todo))) if context else []
            steps += len(todo)
            local_lists.extend(contexts)
            if llm is None or depth == self.params.n_depth:
                continue
            asks = [
                partial(DRIFT_FOLLOWUP_PROMPT.format, question=query, sub_question=a.question, language=language, n_followups=self.params.followups_per_depth)
                for a in todo
            ]
            answers = await asyncio.gather(*(self._step(ask, "\n\n".join(f"[{h.kind}] {h.text}" for h in c)) for ask, c in zip(asks, contexts)))
            for found, step in zip(contexts, answers):
                chunk_ids = [x for h in found for x in h.provenance.chunk_ids][:10]
                report_ids = [h.id for h in found if h.kind == "community"]
                if step.answer.strip():
                    points.append((step.score, step.answer.strip(), report_ids, chunk_ids))
                actions += [_Action(-step.score, q.strip(), depth + 1) for q in step.follow_ups if q.strip()]
        return asked, steps

    async def _step(self, prompt: Callable[..., str], context: str) -> DriftStep:
        """One model step: ``prompt`` (filled in with ``context=``) around ``context``, cut to
        ``context_max_tokens`` or what the model's window leaves beside the prompt and the reply."""
        llm = self.index.llm
        budget = fit(llm, self.params.context_max_tokens, reply_tokens=STEP_REPLY_TOKENS, fixed=[DRIFT_SYSTEM, prompt(context="")])
        return await llm.acomplete_json(prompt(context=truncate_tokens(context, budget)), DriftStep, system=DRIFT_SYSTEM)

    def _context(
        self, points: list[_Point], primer: list[Community], local_lists: list[list[Hit]], graph: Any, similarity: dict[str, float]
    ) -> list[Hit]:
        """The answer's context: the points best first, the follow-ups' local hits interleaved
        (chunks and entities first), then the primer reports."""
        chunk_pool = {x for _, _, _, ids in points for x in ids}
        chunk_pool.update(x for c in primer for x in graph.community_chunks(c)[:20])
        chunks = self.index.store.chunks(sorted(chunk_pool))
        ordered = [
            point_hit(text, score, text, provenance(chunks, chunk_ids), report_ids=report_ids)
            for score, text, report_ids, chunk_ids in sorted(points, key=lambda p: -p[0])
        ]
        priority = {"chunk": 0, "entity": 1, "relation": 2, "community": 3}
        ordered += round_robin(*(sorted(found, key=lambda h: priority.get(h.kind, 4)) for found in local_lists), key=lambda h: (h.kind, h.id))
        ordered += [report_hit(c, similarity.get(c.id, 0.0), chunks, graph, "primer") for c in primer]
        return dedupe(ordered)


_Point = tuple[float, str, list[str], list[str]]
"""A point of the answer: its score, its text, the reports and the chunks it comes from."""


__all__ = ["DriftParams", "DriftSearch"]
