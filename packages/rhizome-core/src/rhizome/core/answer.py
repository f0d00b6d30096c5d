"""Writing an answer from retrieved hits, with citations.

Answering belongs to the user's chain or agent; this helper is for those who want one call. With
a chat model it asks for a JSON answer that cites the numbered context passages; without one it
answers extractively, returning the context sentence that best covers the question's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from rhizome.core.embeddings import hashed_features
from rhizome.core.text import count_tokens, split_sentences, truncate_tokens
from rhizome.core.types import Hit

ANSWER_SYSTEM = (
    "You answer questions using only the numbered context passages you are given. "
    "If they do not contain the answer, say that you do not know. Keep the answer short."
)


class _AnswerSchema(BaseModel):
    answer: str = Field(description="the answer, in one to three sentences")
    citations: list[int] = Field(default_factory=list, description="numbers of the passages used")


class Answer(BaseModel):
    """An answer and the hits it rests on."""

    text: str
    citations: list[Hit] = Field(default_factory=list)
    extractive: bool = False
    """True when no model wrote the answer (it is a sentence copied from the context)."""


def build_context(hits: Sequence[Hit], max_tokens: int = 3000) -> tuple[str, list[Hit]]:
    """Numbered passages ``[1] ...`` that fit in ``max_tokens``, and the hits they come from."""
    parts: list[str] = []
    used: list[Hit] = []
    budget = max_tokens
    for hit in hits:
        label = hit.metadata.get("title") or (hit.provenance.document_ids[0] if hit.provenance.document_ids else hit.id)
        block = f"[{len(used) + 1}] ({label}) {hit.text.strip()}"
        tokens = count_tokens(block)
        if tokens > budget:
            if not used and budget > 20:
                block = truncate_tokens(block, budget)
            else:
                break
        parts.append(block)
        used.append(hit)
        budget -= min(tokens, budget)
    return "\n\n".join(parts), used


async def aanswer(question: str, hits: Sequence[Hit], llm: Any = None, *, max_context_tokens: int = 3000) -> Answer:
    """Answer ``question`` from ``hits``; with ``llm=None`` the answer is extractive."""
    if not hits:
        return Answer(text="No relevant passages were found.", extractive=llm is None)
    if llm is None:
        return _extractive(question, hits)
    context, used = build_context(hits, max_context_tokens)
    prompt = f"Context passages:\n\n{context}\n\nQuestion: {question}\n\nReply as JSON with the answer and the numbers of the passages you used."
    result = await llm.acomplete_json(prompt, _AnswerSchema, system=ANSWER_SYSTEM)
    cited = [used[i - 1] for i in dict.fromkeys(result.citations) if 1 <= i <= len(used)]
    return Answer(text=result.answer.strip(), citations=cited)


def answer(question: str, hits: Sequence[Hit], llm: Any = None, *, max_context_tokens: int = 3000) -> Answer:
    from rhizome.core.aio import run_sync

    return run_sync(aanswer(question, hits, llm, max_context_tokens=max_context_tokens))


def _extractive(question: str, hits: Sequence[Hit]) -> Answer:
    """The context sentence that best covers the question: each question word counts by how
    rare it is among the candidate sentences (a name that every sentence repeats tells less
    than the one word that only the answer contains), lightly preferring higher-ranked hits.
    Markdown headings are not answers."""
    wanted = {f for f in hashed_features(question) if " " not in f}
    candidates: list[tuple[int, str, set[str], Hit]] = []
    for rank, hit in enumerate(hits):
        for start, end in split_sentences(hit.text):
            sentence = hit.text[start:end].strip()
            if not sentence or sentence.startswith("#"):
                continue
            have = {f for f in hashed_features(sentence) if " " not in f}
            if have:
                candidates.append((rank, sentence, have, hit))
    if not candidates:
        return Answer(text=hits[0].text.strip(), citations=[hits[0]], extractive=True)
    spread = {w: sum(1 for _, _, have, _ in candidates if w in have) for w in wanted}
    weight = {w: 1.0 / n for w, n in spread.items() if n}
    total = sum(weight.values()) or 1.0
    best = max(
        candidates,
        key=lambda c: (sum(weight.get(w, 0.0) for w in wanted & c[2]) / total - 0.01 * c[0], -c[0]),
    )
    return Answer(text=best[1], citations=[best[3]], extractive=True)


__all__ = ["Answer", "aanswer", "answer", "build_context"]
