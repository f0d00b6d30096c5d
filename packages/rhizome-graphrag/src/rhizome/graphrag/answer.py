"""GraphRAG's answering steps, on the kernel's :func:`~rhizome.core.retrieval.answer.aanswer`: the reduce
step of global search over its points, and an answer over the packed context of the other modes.

Reduce: the points, most important first, are numbered and packed into ``max_context_tokens``
(GraphRAG reduce ``max_context_tokens`` 12,000); the model writes the answer and cites point
numbers, which map back to the reports and chunks they rest on. Without a model the global answer
joins the three best points; the other modes answer with the sentence of their hits that best
covers the question.
"""

from __future__ import annotations

from typing import Any

from rhizome.core.retrieval.answer import Answer
from rhizome.core.retrieval.answer import aanswer as kernel_answer
from rhizome.core.retrieval.contract import Retrieval
from rhizome.core.types import Hit
from rhizome.graphrag.prompts import (
    LOCAL_INSTRUCTIONS,
    LOCAL_SYSTEM,
    REDUCE_INSTRUCTIONS,
    REDUCE_SYSTEM,
)


def _point(hit: Hit) -> str:
    return f"(importance {hit.metadata.get('importance', round(hit.raw_score * 100))}) {hit.text.strip()}"


def _item(hit: Hit) -> str:
    return f"({hit.kind} {hit.id}) {hit.text.strip()}"


async def aanswer(
    question: str,
    retrieval: Retrieval,
    llm: Any = None,
    *,
    language: str = "English",
    response_type: str = "multiple paragraphs",
    max_context_tokens: int = 12000,
) -> Answer:
    """Answer ``question`` from a GraphRAG search (see the module docstring). ``response_type``
    is GraphRAG's free-text answer-shape hint."""
    hits, options = answer_inputs(retrieval, language=language, response_type=response_type, max_context_tokens=max_context_tokens)
    if retrieval.mode == "global" and llm is None:
        if not hits:
            return Answer(text="No relevant information was found.", extractive=True)
        return Answer(text=" ".join(h.text.strip() for h in hits[:3]), citations=hits[:3], extractive=True)
    if llm is None:  # a sentence copied from the ranked hits, not from the wider context
        return await kernel_answer(question, list(retrieval.hits))
    return await kernel_answer(question, hits, llm, **options)


def answer_inputs(
    retrieval: Retrieval, *, language: str = "English", response_type: str = "multiple paragraphs", max_context_tokens: int = 12000
) -> tuple[list[Hit], dict[str, Any]]:
    """What an answer reads, and its wording: the reduce over the points of a global search,
    else the packed context of the other modes."""
    if retrieval.mode == "global":
        points = [h for h in retrieval.hits if h.kind == "point"] or list(retrieval.hits)
        instructions = REDUCE_INSTRUCTIONS.format(language=language, response_type=response_type)
        return points, {"system": REDUCE_SYSTEM, "instructions": instructions, "render": _point, "max_context_tokens": max_context_tokens}
    instructions = LOCAL_INSTRUCTIONS.format(language=language, response_type=response_type)
    context = list(retrieval.context or retrieval.hits)
    return context, {"system": LOCAL_SYSTEM, "instructions": instructions, "render": _item, "max_context_tokens": max_context_tokens}


__all__ = ["aanswer", "answer_inputs"]
