"""Writers of group summaries: one group's :class:`~rhizome.core.index.hierarchy.GroupInput` in, its
:data:`~rhizome.core.index.hierarchy.SummaryFields` out, by the chat model when there is one and
extractively when there is none. The kernel's :class:`~rhizome.core.index.hierarchy.GroupSummarizer`
schedules them; a method's writer gives only its prompt, its answer's JSON shape and its
offline summary, and :class:`GroupWriter` the rest: what identifies the writer in a summary's
stage digest, how much context a prompt may hold in the model's window, and the choice between
model and offline.

:class:`CommunityReport` is the report shape GraphRAG and ArchRAG both ask for: title, summary,
a 0–10 rating with its reason, and findings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator

from rhizome.core.graph.summarize import extractive_summary
from rhizome.core.index.hierarchy import GroupInput, SummaryFields
from rhizome.core.models.budget import fit
from rhizome.core.models.lenient import LenientModel, clamped
from rhizome.core.text import truncate_tokens
from rhizome.core.types import Community


def _filled(value: str) -> str:
    if not value or not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


class Finding(LenientModel):
    """One insight of a community report."""

    summary: str = Field(description="a one-line headline of the insight")
    explanation: str = Field(description="a short paragraph explaining it, grounded in the data")

    @field_validator("summary", "explanation")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _filled(value)


class CommunityReport(LenientModel):
    """A community report as the model writes it."""

    title: str = Field(description="a short, specific title naming the community's most important members")
    summary: str = Field(description="a few sentences on what the members are and how they connect")
    rating: clamped(0, 10) = Field(description="how significant the community is, 0 (hardly) to 10 (very)")  # type: ignore[valid-type]
    rating_explanation: str = Field(default="", description="one sentence on the rating")
    findings: list[Finding] = Field(description="five to ten key insights about the community")

    @field_validator("title", "summary")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _filled(value)

    @field_validator("findings")
    @classmethod
    def _some_findings(cls, value: list[Finding]) -> list[Finding]:
        if not value:
            raise ValueError("give at least one finding")
        return value

    def fields(self) -> SummaryFields:
        """The summary fields a group takes from this report."""
        return {
            "title": self.title,
            "summary": self.summary,
            "rating": self.rating,
            "findings": [{"summary": f.summary, "explanation": f.explanation} for f in self.findings],
            "metadata": {"rating_explanation": self.rating_explanation},
            "by": "model",
        }


def cell(text: Any, limit: int = 0) -> str:
    """``text`` as a cell of a report context's ``|``-separated rows: on one line, ``|`` written
    as ``/``, cut to ``limit`` tokens (0: whole)."""
    text = " ".join(str(text).split()).replace("|", "/")
    return truncate_tokens(text, limit) if limit else text


def offline_summary(children: Sequence[Community], descriptions: Sequence[str], names: Sequence[str]) -> str:
    """An offline report's summary (GraphRAG's and ArchRAG's): the most central sentences of
    the children's summaries and the members' ``descriptions``, or else a line naming the
    members (``names``, most connected first)."""
    fragments = [c.summary for c in children] + [d for d in descriptions if d]
    return extractive_summary(fragments, 120) or f"A group of {len(names)} related entities: {', '.join(names[:8])}."


class GroupWriter:
    """Writes one group's summary with the chat model, or offline when ``llm`` is ``None``.

    A subclass sets :attr:`system` and gives :meth:`prompt` and :meth:`offline`; one whose
    model answers in another shape than a :class:`CommunityReport` sets :attr:`schema` and
    gives :meth:`fields` too.

    Parameters
    ----------
    llm:
        Chat model, or ``None`` for offline summaries.
    max_tokens:
        Length the model is asked to keep a summary within.
    language:
        Language of the summaries, for writers whose prompt names one (``None``: the prompt
        names none, and the language is no part of :attr:`identity`).
    """

    system: ClassVar[str]
    """The system message of every request."""
    schema: ClassVar[type[BaseModel]] = CommunityReport
    """The JSON shape the model fills in."""
    reply_margin: ClassVar[int] = 0
    """Tokens kept free beyond ``max_tokens`` for the answer's JSON around the summary."""

    def __init__(self, llm: Any = None, *, max_tokens: int, language: str | None = None) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.language = language

    @property
    def identity(self) -> list[Any]:
        """What besides its input decides a summary (part of its stage digest, so a change of
        model, language or length writes the summaries again)."""
        settings = [self.max_tokens] if self.language is None else [self.language, self.max_tokens]
        return ["offline" if self.llm is None else "model", getattr(self.llm, "name", ""), *settings]

    def prompt(self, data: GroupInput | None) -> str:
        """The request for ``data``; for ``None``, the request around an empty context with
        every optional part it can have (what :meth:`input_budget` sets aside)."""
        raise NotImplementedError

    def offline(self, data: GroupInput, *context: Any) -> SummaryFields:
        """The summary written without a model (``context``: what :meth:`awrite` was given
        beside the input)."""
        raise NotImplementedError

    def fields(self, answer: Any) -> SummaryFields:
        """The summary fields of a valid answer."""
        return answer.fields()

    def input_budget(self, wanted: int) -> int:
        """Tokens of context a prompt may hold: ``wanted``, less when the model's window holds
        less with room for the answer."""
        return fit(self.llm, wanted, reply_tokens=self.max_tokens + self.reply_margin, fixed=[self.system, self.prompt(None)])

    async def awrite(self, data: GroupInput, *context: Any) -> SummaryFields:
        """The summary fields of one group; ``context`` is what the offline writer reads beside
        the input (GraphRAG's: the entity graph)."""
        if self.llm is None:
            return self.offline(data, *context)
        answer = await self.llm.acomplete_json(self.prompt(data), self.schema, system=self.system)
        return self.fields(answer)


__all__ = ["CommunityReport", "Finding", "GroupWriter", "cell", "offline_summary"]
