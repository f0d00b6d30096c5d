"""Answers from GraphRAG hits: the reduce step of global search, and the answer over a local (or
DRIFT, or basic) context, each citing report and chunk ids.

Reduce: the points, most important first, are numbered and packed into ``max_context_tokens``
(GraphRAG reduce ``max_context_tokens`` 12,000); the model writes the answer and cites point
numbers, which are mapped back to the reports and chunks they rest on. Without a model the answer
is extractive: the best points (global) or the context sentence that best covers the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from rhizome.core.answer import Answer
from rhizome.core.answer import aanswer as kernel_answer
from rhizome.core.text import count_tokens, truncate_tokens
from rhizome.core.types import Hit
from rhizome.graphrag.prompts import LOCAL_PROMPT, LOCAL_SYSTEM, REDUCE_PROMPT, REDUCE_SYSTEM
from rhizome.graphrag.schemas import AnswerOutput


class GraphRAGAnswer(Answer):
    """An answer with the community reports and chunks it cites."""

    report_ids: list[str] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)


def _pack(hits: Sequence[Hit], max_tokens: int, render: Any) -> tuple[str, list[Hit]]:
    parts, used = [], []
    budget = max_tokens
    for hit in hits:
        block = render(len(used) + 1, hit)
        tokens = count_tokens(block) + 1
        if tokens > budget:
            if not used and budget > 20:
                block, tokens = truncate_tokens(block, budget), budget
            else:
                break
        parts.append(block)
        used.append(hit)
        budget -= tokens
    return "\n\n".join(parts), used


def _citations(cited: Sequence[Hit]) -> tuple[list[str], list[str]]:
    reports: list[str] = []
    chunks: list[str] = []
    for hit in cited:
        if hit.kind == "community":
            reports.append(hit.id)
        reports.extend(hit.metadata.get("report_ids", []))
        if hit.kind == "chunk":
            chunks.append(hit.id)
        chunks.extend(hit.provenance.chunk_ids)
    return list(dict.fromkeys(reports)), list(dict.fromkeys(chunks))


async def aanswer(
    question: str,
    hits: Sequence[Hit],
    llm: Any = None,
    *,
    mode: str = "local",
    language: str = "English",
    response_type: str = "multiple paragraphs",
    max_context_tokens: int = 12000,
) -> GraphRAGAnswer:
    """Answer ``question`` from the hits of a GraphRAG search.

    ``mode="global"`` runs the reduce step over ``point`` hits; other modes answer over the
    numbered context. ``response_type`` is GraphRAG's free-text answer-shape hint ("multiple
    paragraphs" by default).
    """
    if not hits:
        return GraphRAGAnswer(text="No relevant information was found.", extractive=llm is None)
    if mode == "global":
        points = sorted(hits, key=lambda h: -h.score)
        if llm is None:
            top = points[:3]
            reports, chunks = _citations(top)
            text = " ".join(h.text.strip() for h in top)
            return GraphRAGAnswer(text=text, citations=list(top), extractive=True, report_ids=reports, chunk_ids=chunks)
        context, used = _pack(
            points,
            max_context_tokens,
            lambda i, h: f"[{i}] (importance {h.metadata.get('importance', round(h.score * 100))}) {h.text.strip()}",
        )
        prompt = REDUCE_PROMPT.format(question=question, points=context, language=language, response_type=response_type)
        out = await llm.acomplete_json(prompt, AnswerOutput, system=REDUCE_SYSTEM)
    else:
        if llm is None:
            base = await kernel_answer(question, hits, None)
            reports, chunks = _citations(base.citations)
            return GraphRAGAnswer(text=base.text, citations=base.citations, extractive=True, report_ids=reports, chunk_ids=chunks)
        context, used = _pack(hits, max_context_tokens, lambda i, h: f"[{i}] ({h.kind} {h.id}) {h.text.strip()}")
        prompt = LOCAL_PROMPT.format(question=question, context=context, language=language, response_type=response_type)
        out = await llm.acomplete_json(prompt, AnswerOutput, system=LOCAL_SYSTEM)
    cited = [used[i - 1] for i in dict.fromkeys(out.citations) if 1 <= i <= len(used)]
    reports, chunks = _citations(cited)
    return GraphRAGAnswer(text=out.answer.strip(), citations=cited, report_ids=reports, chunk_ids=chunks)


def answer(question: str, hits: Sequence[Hit], llm: Any = None, **kwargs: Any) -> GraphRAGAnswer:
    from rhizome.core.aio import run_sync

    return run_sync(aanswer(question, hits, llm, **kwargs))


__all__ = ["GraphRAGAnswer", "aanswer", "answer"]
