"""Summaries of merged descriptions, with a model or extractively.

When an entity or relation is seen in many chunks its descriptions pile up. GraphRAG summarises
them into one (at most 500 tokens); LightRAG does so when a merge brings at least 8 fragments
or their length exceeds a budget. :class:`DescriptionSummarizer` covers both: descriptions that
fit the budget are joined as they are (no model call); longer ones are summarised by the chat
model — map-reduce when they exceed the model's input budget — or, offline, cut down to the
sentences most shared with the other descriptions. :meth:`DescriptionSummarizer.job` makes one
summary a job of a resumable stage (the entity-graph layer runs them so), so an interrupted
build pays only for the summaries it had not written.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from rhizome.core.errors import ConfigurationError, PromptTooLongError
from rhizome.core.index.stages import Job, digest
from rhizome.core.models.budget import fit
from rhizome.core.models.embeddings import hashed_features
from rhizome.core.text import (
    count_tokens,
    min_tokens,
    trimmed_sentences,
    truncate_tokens,
    within_tokens,
)

SUMMARY_SYSTEM = (
    "You merge notes about one subject into a single faithful description. Keep every distinct "
    "fact, resolve repetitions, mention contradictions instead of choosing a side, and add "
    "nothing that the notes do not say."
)


class _Summary(BaseModel):
    summary: str = Field(description="one coherent description written in the third person")


def _prompt(subject: str, fragments: Sequence[str], max_tokens: int, language: str) -> str:
    notes = "\n".join(f"- {f.strip()}" for f in fragments)
    return (
        f"Subject: {subject}\n\nNotes:\n{notes}\n\n"
        f"Write one description of the subject in {language}, at most about {max_tokens} tokens, "
        "that combines all the notes. Reply as JSON."
    )


class DescriptionSummarizer:
    """Merge many descriptions of one entity or relation into one.

    Parameters
    ----------
    llm:
        A chat model, or ``None`` for the extractive offline summary.
    max_tokens:
        Budget of a summary, and the size up to which descriptions are simply joined (GraphRAG's
        ``max_summary_length`` 500; LightRAG's summary budget is larger).
    min_fragments:
        Summarise once this many distinct descriptions exist even when they fit the budget
        (LightRAG's ``force_llm_summary_on_merge``, 8); ``None`` disables.
    max_input_tokens:
        Most description tokens sent in one call (less when the model's context window holds
        less with room for the summary); more are summarised in groups first, then the group
        summaries together (sized for an 8k-context local model).
    language:
        Language the model writes in.
    """

    def __init__(
        self,
        llm: Any = None,
        *,
        max_tokens: int = 500,
        min_fragments: int | None = None,
        max_input_tokens: int = 4000,
        language: str = "English",
    ) -> None:
        if max_tokens < 16 or max_input_tokens < max_tokens:
            raise ConfigurationError("max_tokens must be >= 16 and max_input_tokens >= max_tokens")
        if min_fragments is not None and min_fragments < 2:
            raise ConfigurationError("min_fragments must be at least 2 (or None)")
        self.llm = llm
        self.max_tokens = max_tokens
        self.min_fragments = min_fragments
        self.max_input_tokens = max_input_tokens
        self.language = language

    def joined(self, descriptions: Sequence[str]) -> str | None:
        """``descriptions`` (duplicates removed) joined as they are when that needs no summary
        (few enough fragments and tokens), else ``None``: the description a record gets without
        a summary call, deciding and joining in one pass."""
        fragments = _distinct(descriptions, stop=self.min_fragments)
        if self.min_fragments is not None and len(fragments) >= self.min_fragments:
            return None
        text = "\n".join(fragments)
        return text if within_tokens(text, self.max_tokens) else None

    async def asummarize(self, subject: str, descriptions: Sequence[str]) -> str:
        """One description of ``subject`` from ``descriptions`` (duplicates removed)."""
        fragments = _distinct(descriptions)
        if not fragments:
            return ""
        text = self.joined(fragments)
        if text is not None:
            return text
        if self.llm is None:
            return extractive_summary(fragments, self.max_tokens)
        return await self._reduce(subject, fragments)

    def digest(self, subject: str, descriptions: Sequence[str]) -> str:
        """The stage digest of the summary of ``descriptions`` about ``subject``: what it is made
        of and what writes it (budget, language, model)."""
        return digest(subject, list(descriptions), self.max_tokens, self.language, getattr(self.llm, "name", None))

    def job(self, subject: str, descriptions: Sequence[str]) -> Job:
        """The stage job (:func:`~rhizome.core.index.stages.arun_stage`) of the summary of
        ``descriptions`` about ``subject``: its digest and the call that writes it."""
        return self.digest(subject, descriptions), functools.partial(self.asummarize, subject, descriptions)

    async def _reduce(self, subject: str, fragments: list[str], depth: int = 0) -> str:
        # the input budget, less when the model's window holds less with room for the summary
        limit = fit(
            self.llm,
            self.max_input_tokens,
            reply_tokens=self.max_tokens + 50,
            fixed=[SUMMARY_SYSTEM, _prompt(subject, [], self.max_tokens, self.language)],
        )
        if depth and limit < 2 * (self.max_tokens + 2):  # groups of one summary would never shrink
            raise PromptTooLongError(
                f"the context window of {getattr(self.llm, 'name', 'the model')} cannot hold two "
                f"{self.max_tokens}-token summaries to merge — raise --num-ctx (RHIZOME_NUM_CTX, num_ctx=) or "
                "lower the summary length"
            )
        groups: list[list[str]] = [[]]
        used = 0
        for fragment in fragments:
            fragment = truncate_tokens(fragment, max(1, limit - 2))
            tokens = count_tokens(fragment) + 2  # the "- " and line break around it
            if groups[-1] and used + tokens > limit:
                groups.append([])
                used = 0
            groups[-1].append(fragment)
            used += tokens
        summaries = []
        for group in groups:
            result = await self.llm.acomplete_json(
                _prompt(subject, group, self.max_tokens, self.language), _Summary, system=SUMMARY_SYSTEM
            )
            summaries.append(result.summary.strip())
        if len(summaries) == 1:
            return summaries[0]
        return await self._reduce(subject, summaries, depth + 1)


def _distinct(descriptions: Sequence[str], stop: int | None = None) -> list[str]:
    """The distinct non-blank descriptions, stripped, in first-seen order; only the first
    ``stop`` of them when ``stop`` is given (a long profile is not read to its end to learn that
    it has too many)."""
    seen: dict[str, None] = {}
    for d in descriptions:
        d = d.strip() if d else ""
        if d:
            seen[d] = None
            if stop is not None and len(seen) >= stop:
                break
    return list(seen)


def extractive_summary(fragments: Sequence[str], max_tokens: int) -> str:
    """The sentences of ``fragments`` that share most words with the rest, in their original
    order, within ``max_tokens``. Repeated sentences count once."""
    sentences = list(dict.fromkeys(fragment[start:end] for fragment in fragments for start, end in trimmed_sentences(fragment, headings=False)))
    if not sentences:
        return ""
    features = [set(hashed_features(s)) for s in sentences]
    totals: dict[str, int] = {}
    for fs in features:
        for f in fs:
            totals[f] = totals.get(f, 0) + 1
    # centrality: how many other sentences share each of this sentence's words
    scores = [sum(totals[f] - 1 for f in fs) / (1 + len(fs)) ** 0.5 for fs in features]
    chosen: set[int] = set()
    budget = max_tokens
    for i in sorted(range(len(sentences)), key=lambda i: (-scores[i], i)):
        if min_tokens(sentences[i]) > budget:  # surely too long: not tokenised
            continue
        tokens = count_tokens(sentences[i])
        if tokens <= budget:
            chosen.add(i)
            budget -= tokens
    if not chosen:
        return truncate_tokens(sentences[0], max_tokens)
    return " ".join(sentences[i] for i in sorted(chosen))


__all__ = ["DescriptionSummarizer", "extractive_summary"]
