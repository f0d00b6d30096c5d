"""Answering from a LightRAG context (paper §3.2, generation G).

The model sees the three context blocks — entity profiles, relation profiles and source
passages — numbered, and answers citing the numbers. Without a model the answer is extractive
(the kernel's: the source sentence that best covers the question), over the source chunks.
"""

from __future__ import annotations

from typing import Any

from rhizome.core.aio import run_sync
from rhizome.core.answer import Answer
from rhizome.core.answer import aanswer as extractive_answer
from rhizome.core.types import Hit
from rhizome.lightrag.prompts import ANSWER_SYSTEM, answer_prompt
from rhizome.lightrag.query import LightRAGRetriever, QueryContext
from rhizome.lightrag.schema import AnswerOutput


def format_context(context: QueryContext) -> tuple[str, list[Hit]]:
    """The numbered context text and the hits in numbering order."""
    blocks: list[str] = []
    order: list[Hit] = []
    for title, hits in (("Entities", context.entities), ("Relations", context.relations), ("Sources", context.chunks)):
        if not hits:
            continue
        lines = [f"-----{title}-----"]
        for hit in hits:
            order.append(hit)
            label = hit.metadata.get("title")
            prefix = f"({label}) " if title == "Sources" and label else ""
            lines.append(f"[{len(order)}] {prefix}{' '.join(hit.text.split())}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks), order


async def aanswer(
    retriever: Any,
    question: str,
    llm: Any = None,
    *,
    response_type: str = "one short paragraph",
) -> Answer:
    """Retrieve with ``retriever`` (a :class:`LightRAGRetriever`, or an index: its default
    retriever) and answer ``question``. ``llm`` defaults to the index's chat model; with none
    the answer is extractive."""
    if not isinstance(retriever, LightRAGRetriever):
        retriever = retriever.as_retriever()
    llm = llm if llm is not None else retriever.index.llm
    context = await retriever.acontext(question)
    if llm is None:
        return await extractive_answer(question, context.chunks or context.relations + context.entities, None)
    text, order = format_context(context)
    if not order:
        return Answer(text="No relevant context was found.")
    result = await llm.acomplete_json(answer_prompt(question, text, response_type), AnswerOutput, system=ANSWER_SYSTEM)
    cited = [order[i - 1] for i in dict.fromkeys(result.citations) if 1 <= i <= len(order)]
    return Answer(text=result.answer.strip(), citations=cited)


def answer(retriever: Any, question: str, llm: Any = None, *, response_type: str = "one short paragraph") -> Answer:
    return run_sync(aanswer(retriever, question, llm, response_type=response_type))


__all__ = ["aanswer", "answer", "format_context"]
