"""Writing an answer from retrieved hits, with citations: the one answering step of every method.

Answering belongs to the user's chain or agent; this is for those who want one call
(``index.answer(question, mode=...)``). With a chat model it numbers the context items, packs
them into a token budget (``max_context_tokens``, less when the model's context window holds
less with room for the answer) and asks for a JSON answer citing the numbers; without one it answers
extractively, returning the context sentence that best covers the question's words. Methods
vary only the words around the context (``system``, ``instructions``) and how an item is shown
(``render``); hits with a ``section`` in their metadata are grouped under section headers.
:func:`astream_answer` gives the model's answer in pieces as it is written (citing ``[n]``
inline, since a stream cannot be JSON).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from rhizome.core.extraction.schema import Numbers
from rhizome.core.models.budget import fit
from rhizome.core.models.embeddings import hashed_features
from rhizome.core.retrieval.contract import pack
from rhizome.core.text import trimmed_sentences
from rhizome.core.types import Hit

ANSWER_SYSTEM = (
    "You answer questions using only the numbered context items you are given. If they do not "
    "contain the answer, say that you do not know. Cite the numbers of the items you used."
)

ANSWER_INSTRUCTIONS = "Answer in one to three sentences."

JSON_REPLY = "Reply as JSON with the answer and the numbers of the context items you used."
TEXT_REPLY = "Cite the numbers of the context items you use in square brackets, like [1]."

ANSWER_REPLY_TOKENS = 1000
"""Tokens kept free in the model's window for the answer (a few paragraphs and citations)."""


class _AnswerSchema(BaseModel):
    answer: str = Field(description="the answer")
    citations: Numbers = Field(default_factory=list, description="numbers of the context items used")


class Answer(BaseModel):
    """An answer and the hits it rests on."""

    text: str
    citations: list[Hit] = Field(default_factory=list)
    extractive: bool = False
    """True when no model wrote the answer (it is a sentence copied from the context)."""

    @property
    def chunk_ids(self) -> list[str]:
        """The chunks the cited hits rest on."""
        return list(dict.fromkeys(c for hit in self.citations for c in hit.provenance.chunk_ids))

    @property
    def document_ids(self) -> list[str]:
        return list(dict.fromkeys(d for hit in self.citations for d in hit.provenance.document_ids))


def render_hit(hit: Hit) -> str:
    """How a hit is shown in a context: its title or document, then its text."""
    label = hit.metadata.get("title") or (hit.provenance.document_ids[0] if hit.provenance.document_ids else hit.id)
    return f"({label}) {' '.join(hit.text.split())}"


def build_context(hits: Sequence[Hit], max_tokens: int = 3000, render: Callable[[Hit], str] = render_hit) -> tuple[str, list[Hit]]:
    """Numbered items ``[1] ...`` that fit in ``max_tokens`` (a first item too long alone is
    cut), grouped under ``-----section-----`` headers where hits carry a ``section``; and the
    hits in numbering order."""
    blocks: list[tuple[Hit, str]] = []
    section = None
    for number, hit in enumerate(hits, start=1):
        header = hit.metadata.get("section")
        block = f"[{number}] {render(hit)}"
        if header and header != section:
            block = f"-----{header}-----\n{block}"
        section = header or section
        blocks.append((hit, block))
    packed = pack(blocks, max_tokens, lambda item: item[1], overhead=1)
    return "\n".join(text for _, text in packed), [hit for (hit, _), _ in packed]


async def aanswer(
    question: str,
    hits: Sequence[Hit],
    llm: Any = None,
    *,
    system: str = ANSWER_SYSTEM,
    instructions: str = ANSWER_INSTRUCTIONS,
    render: Callable[[Hit], str] = render_hit,
    max_context_tokens: int = 3000,
) -> Answer:
    """Answer ``question`` from ``hits`` (see the module docstring); with ``llm=None`` the
    answer is extractive."""
    if not hits:
        return Answer(text="No relevant passages were found.", extractive=llm is None)
    if llm is None:
        return _extractive(question, hits)
    prompt, used = answer_prompt(
        question, hits, llm, system=system, instructions=instructions, render=render, max_context_tokens=max_context_tokens, reply=JSON_REPLY
    )
    result = await llm.acomplete_json(prompt, _AnswerSchema, system=system)
    cited = [used[i - 1] for i in dict.fromkeys(result.citations) if 1 <= i <= len(used)]
    return Answer(text=result.answer.strip(), citations=cited)


def answer_prompt(
    question: str,
    hits: Sequence[Hit],
    llm: Any = None,
    *,
    system: str = ANSWER_SYSTEM,
    instructions: str = ANSWER_INSTRUCTIONS,
    render: Callable[[Hit], str] = render_hit,
    max_context_tokens: int = 3000,
    reply: str = TEXT_REPLY,
) -> tuple[str, list[Hit]]:
    """The answer prompt (its context packed to fit ``llm``'s window, when it says) and the
    hits it numbers; ``reply`` asks for inline ``[n]`` citations (:data:`TEXT_REPLY`, for text
    and streams, resolved by :func:`cited`) or JSON (:data:`JSON_REPLY`)."""

    def prompt(context: str) -> str:
        return f"Context:\n\n{context}\n\nQuestion: {question}\n\n{instructions} {reply}"

    budget = fit(llm, max_context_tokens, reply_tokens=ANSWER_REPLY_TOKENS, fixed=[system, prompt("")])
    context, used = build_context(hits, budget, render)
    return prompt(context), used


async def astream_answer(
    question: str,
    hits: Sequence[Hit],
    llm: Any = None,
    *,
    system: str = ANSWER_SYSTEM,
    instructions: str = ANSWER_INSTRUCTIONS,
    render: Callable[[Hit], str] = render_hit,
    max_context_tokens: int = 3000,
) -> AsyncIterator[str]:
    """The answer of :func:`aanswer` as the model writes it, in pieces of text, citing context
    items inline as ``[n]`` (a stream cannot be JSON). Without a model, or without hits, the
    answer :func:`aanswer` gives comes as one piece."""
    if llm is None or not hits or not hasattr(llm, "astream"):
        yield (await aanswer(question, hits, llm, system=system, instructions=instructions, render=render, max_context_tokens=max_context_tokens)).text
        return
    prompt, _ = answer_prompt(
        question, hits, llm, system=system, instructions=instructions, render=render, max_context_tokens=max_context_tokens
    )
    async for piece in llm.astream(prompt, system=system):
        yield piece


_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def cited(text: str, numbered: Sequence[Hit]) -> list[Hit]:
    """The hits an answer cites inline as ``[n]`` (or ``[n, m]``), ``numbered`` being the hits
    its prompt numbered from 1 (:func:`answer_prompt`), in first-cited order; numbers outside
    the context are ignored."""
    numbers = [int(n) for group in _CITATION.findall(text) for n in group.split(",")]
    return [numbered[n - 1] for n in dict.fromkeys(numbers) if 1 <= n <= len(numbered)]


def answer(question: str, hits: Sequence[Hit], llm: Any = None, **options: Any) -> Answer:
    from rhizome.core.aio import run_sync

    return run_sync(aanswer(question, hits, llm, **options))


def _extractive(question: str, hits: Sequence[Hit]) -> Answer:
    """The context sentence that best covers the question: each question word counts by how
    rare it is among the candidate sentences (a name that every sentence repeats tells less
    than the one word that only the answer contains), lightly preferring higher-ranked hits.
    Markdown headings are not answers."""
    wanted = {f for f in hashed_features(question) if " " not in f}
    candidates: list[tuple[int, str, set[str], Hit]] = []
    for rank, hit in enumerate(hits):
        for start, end in trimmed_sentences(hit.text, headings=False):
            sentence = hit.text[start:end]
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


__all__ = [
    "ANSWER_SYSTEM",
    "JSON_REPLY",
    "TEXT_REPLY",
    "Answer",
    "aanswer",
    "answer",
    "answer_prompt",
    "astream_answer",
    "build_context",
    "cited",
    "render_hit",
]
