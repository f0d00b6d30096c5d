"""A chat model as a reranker: :class:`LLMReranker` judges a search's candidate passages.

Any Rhizome chat model serves — Ollama, an OpenAI-compatible server, a LangChain or LlamaIndex
model through :mod:`rhizome.core.models.adapters`, the fakes — since it asks through the model
layer's ``acomplete_json``: structured output where the server has it, validation and retries,
the model-call cache (the same query over the same passages is answered from it) and the usage
counters of :func:`~rhizome.core.models.base.usage_scope` (a retriever's ``stats``).

Two ways to ask, chosen by ``method``:

- ``"listwise"`` (default): one prompt lists the numbered passages and the model answers with
  their numbers, most useful first. When the passages do not all fit one prompt (``window``, or
  fewer for the model's context window), windows of them are ranked from the last candidates up
  to the first, each overlapping the one before by half, so a strong passage found late can
  climb to the top (the sliding window of RankGPT, Sun et al. 2023). A window's calls follow one
  another, since each starts from the order the one before left.
- ``"pointwise"``: each passage is graded on its own, 0 (nothing to do with the query) to 10
  (answers it, or holds a fact the answer needs); ``batch_size`` passages share one prompt, and
  the prompts of one query go out at once (the model's ``max_concurrency`` bounds them).

The context budget: a passage is cut to ``max_passage_tokens`` (the kernel's token helpers),
and a prompt holds as many passages as the model's ``context_window`` leaves room for after the
instructions, the query and the answer (:func:`rhizome.core.models.budget.fit`); with an
unknown window, ``window`` / ``batch_size``. A window too small for even one cut passage is a
:class:`~rhizome.core.errors.PromptTooLongError` that says so.

Answers are read leniently (a bare list, numbers written as ``"[3]"`` or ``"passage 3"``, a
mapping from passage number to grade): numbers that name no passage of the prompt are ignored,
a passage named twice counts where it is first named. What the model leaves out, or an answer
that stays invalid after the model layer's retries (:class:`~rhizome.core.errors.ModelOutputError`),
falls back to the order the passages came in: in a listwise window the passages not named
follow the named ones in their incoming order; in pointwise grading an ungraded passage keeps
its place behind the passage the search ranked just above it (it takes that one's grade; ties
keep the search's order), a first passage ungraded takes the best grade given, and with no
grade at all the incoming order stands. Every passage gets exactly one score, so the reranking
step of :mod:`rhizome.core.retrieval.rerank` never loses or repeats a hit, and the hits keep
their provenance there. A server that is down or a prompt that does not fit is an error, not a
fallback.

Scores are in ``[0, 1]`` (spRAG reads a reranker's score as relevance): a grade divided by 10;
for listwise, ``1 - rank / n`` over the final order.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, model_validator

from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError, ModelOutputError, PromptTooLongError
from rhizome.core.models.budget import fit
from rhizome.core.models.lenient import LenientModel
from rhizome.core.retrieval.rerank import kept_scores
from rhizome.core.text import truncate_tokens

METHODS = ("listwise", "pointwise")

WINDOW = 20
"""Passages in one listwise prompt at most (RankGPT's window)."""

BATCH_SIZE = 5
"""Passages graded in one pointwise prompt at most."""

MAX_PASSAGE_TOKENS = 200
"""Tokens of a passage shown to the model at most; the rest is cut."""

MIN_PASSAGE_TOKENS = 24
"""The least of a passage worth showing: a context window leaving less is an error."""

PASSAGE_OVERHEAD = 6
"""Tokens a passage costs beyond its text in a prompt (its number, separators)."""

MAX_GRADE = 10

SYSTEM = (
    "You are a careful search assistant. You read a search query and numbered passages, and judge "
    "how much each passage helps to answer the query. Reply with JSON only."
)


def _listwise_prompt(query: str, passages: Sequence[str]) -> str:
    n = len(passages)
    return (
        f"Query: {query}\n\n"
        f"Passages:\n{_numbered(passages)}\n\n"
        f"Put the {n} passages in order of usefulness for answering the query: first the passage that answers it "
        "or holds a fact the answer depends on, last the one that has least to do with it. "
        'Reply with a JSON object {"ranking": [...]} whose list holds the passage numbers, most useful first, '
        f"each of the numbers 1 to {n} once."
    )


def _pointwise_prompt(query: str, passages: Sequence[str]) -> str:
    return (
        f"Query: {query}\n\n"
        f"Passages:\n{_numbered(passages)}\n\n"
        f"Grade each passage on its own, from 0 to {MAX_GRADE}: {MAX_GRADE} when it answers the query or holds a "
        "fact the answer depends on, around 5 when it is on the subject but does not help to answer, 0 when it "
        'has nothing to do with the query. Reply with a JSON object {"grades": [{"passage": 1, "grade": 7}, ...]} '
        "with one entry for every passage."
    )


def _numbered(passages: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {' '.join(text.split())}" for i, text in enumerate(passages, 1))


_INTEGER = re.compile(r"\d+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _passage_numbers(value: Any) -> list[int]:
    """The passage numbers in a ranking however it was written: a list of numbers or of texts
    naming them (``"[3]"``, ``"passage 3"``), or one text such as ``"3 > 1 > 2"``."""
    if isinstance(value, str):
        return [int(x) for x in _INTEGER.findall(value)]
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [int(value)] if float(value).is_integer() else []
    if isinstance(value, dict):  # {"passage": 3} or {"id": 3, ...}
        return next((_passage_numbers(v) for k, v in value.items() if k in ("passage", "id", "number", "index")), [])
    if isinstance(value, list):
        return [n for item in value for n in _passage_numbers(item)[:1]]
    return []


def _answer_value(data: Any, name: str, kinds: tuple[type, ...]) -> Any:
    """``data[name]``; when the answer used another key, its first value of one of ``kinds``;
    else the answer itself (a bare list, or a mapping from passage number to grade)."""
    if not isinstance(data, dict):
        return data
    if name in data:
        return data[name]
    return next((v for v in data.values() if isinstance(v, kinds)), data)


class RankingAnswer(LenientModel):
    """A listwise answer: passage numbers, most useful first."""

    ranking: list[int] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _lenient(cls, data: Any) -> Any:
        return {"ranking": _passage_numbers(_answer_value(data, "ranking", (list, str)))}


class PassageGrade(BaseModel):
    passage: int
    grade: float


def _grade_entries(value: Any) -> list[dict[str, float]]:
    """Grades however they were written: ``[{"passage": 1, "grade": 7}, ...]``, a mapping
    ``{"1": 7}``, or a bare list of grades in passage order. Entries without a usable number
    are left out (their passage stays ungraded)."""
    out: list[dict[str, float]] = []
    if isinstance(value, dict):
        value = [{"passage": k, "grade": v} for k, v in value.items()]
    if not isinstance(value, list):
        return out
    for position, item in enumerate(value, 1):
        if isinstance(item, dict):
            numbers = _passage_numbers(item.get("passage", item.get("id", item.get("number", position))))
            grade = _grade_value(item.get("grade", item.get("score", item.get("relevance"))))
        else:
            numbers, grade = [position], _grade_value(item)
        if numbers and grade is not None:
            out.append({"passage": numbers[0], "grade": grade})
    return out


def _grade_value(value: Any) -> float | None:
    if isinstance(value, str):
        found = _NUMBER.search(value)
        value = float(found.group()) if found else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:  # not NaN
        return float(min(MAX_GRADE, max(0, value)))
    return None


class GradesAnswer(LenientModel):
    """A pointwise answer: a grade from 0 to 10 for each numbered passage."""

    grades: list[PassageGrade] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _lenient(cls, data: Any) -> Any:
        return {"grades": _grade_entries(_answer_value(data, "grades", (list,)))}


@dataclass
class Ranking:
    """What one reranking found: ``order`` (the passages' positions, best first: a permutation
    of the incoming positions), ``scores`` (one per passage, in incoming order, in ``[0, 1]``),
    ``grades`` (pointwise: the grade each passage got, ``None`` where none could be read) and
    ``fallback`` (the positions the model's answers did not place, put by the incoming order)."""

    order: list[int]
    scores: list[float]
    grades: list[float | None] = field(default_factory=list)
    fallback: list[int] = field(default_factory=list)


class LLMReranker:
    """A :class:`~rhizome.core.retrieval.rerank.Reranker` that asks a chat model (see the module
    docstring): ``index.as_retriever(reranker=LLMReranker(llm), rerank_candidates=20)``.

    Parameters
    ----------
    llm:
        Any Rhizome chat model (``acomplete_json``); its cache, retries and context window apply.
    method:
        ``"listwise"`` (one prompt ranks a window of passages) or ``"pointwise"`` (each passage
        graded 0-10 on its own).
    window:
        Listwise: passages in one prompt at most (fewer when the context window says so).
    batch_size:
        Pointwise: passages graded in one prompt at most (fewer when the context window says so).
    max_passage_tokens:
        A passage is cut to this many tokens before it is shown to the model.
    """

    def __init__(
        self,
        llm: Any,
        *,
        method: str = "listwise",
        window: int = WINDOW,
        batch_size: int = BATCH_SIZE,
        max_passage_tokens: int = MAX_PASSAGE_TOKENS,
    ) -> None:
        if not callable(getattr(llm, "acomplete_json", None)):
            raise ConfigurationError(
                f"LLMReranker needs a chat model with acomplete_json (a Rhizome model: ollama:MODEL, openai:MODEL, or a "
                f"LangChain / LlamaIndex model wrapped by rhizome.core.models.adapters), not a {type(llm).__name__}"
            )
        if method not in METHODS:
            raise ConfigurationError(f"LLMReranker's method is one of {', '.join(METHODS)}, not {method!r}")
        for name, value, least in (("window", window, 2), ("batch_size", batch_size, 1),
                                   ("max_passage_tokens", max_passage_tokens, MIN_PASSAGE_TOKENS)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigurationError(f"LLMReranker's {name} must be an integer of at least {least}, got {value!r}")
        self.llm = llm
        self.method = method
        self.window = window
        self.batch_size = batch_size
        self.max_passage_tokens = max_passage_tokens

    def __repr__(self) -> str:
        return f"LLMReranker({getattr(self.llm, 'name', type(self.llm).__name__)!r}, method={self.method!r})"

    async def __call__(self, query: str, texts: list[str]) -> list[float]:
        """The scores of ``texts`` against ``query`` (the :class:`Reranker` call)."""
        return (await self.arank(query, texts)).scores

    def rank(self, query: str, texts: Sequence[str]) -> Ranking:
        return run_sync(self.arank(query, texts))

    async def arank(self, query: str, texts: Sequence[str]) -> Ranking:
        """The model's ranking of ``texts`` for ``query``, with what fell back to the incoming order."""
        texts = list(texts)
        if not texts:
            return Ranking(order=[], scores=[])
        if len(texts) == 1:  # nothing to order: no call
            return Ranking(order=[0], scores=[1.0], grades=[None] if self.method == "pointwise" else [], fallback=[])
        if self.method == "listwise":
            return await self._listwise(query, texts)
        return await self._pointwise(query, texts)

    # -- the context budget ----------------------------------------------------------------------
    def _layout(self, query: str, most: int, least: int) -> tuple[int, int]:
        """How many passages one prompt holds (from ``least`` to ``most``) and the tokens each
        may keep, for the model's context window."""
        prompt = _listwise_prompt if self.method == "listwise" else _pointwise_prompt
        reply = most * (6 if self.method == "listwise" else 14) + 16  # the JSON answer, generously
        per_passage = self.max_passage_tokens + PASSAGE_OVERHEAD
        budget = fit(self.llm, most * per_passage, reply_tokens=reply, fixed=[SYSTEM, prompt(query, [])])
        held = min(most, budget // per_passage)
        if held >= least:
            return held, self.max_passage_tokens
        cut = budget // least - PASSAGE_OVERHEAD
        if cut < MIN_PASSAGE_TOKENS:
            raise PromptTooLongError(
                f"the context window of {getattr(self.llm, 'name', 'the chat model')} leaves room for no passage to rerank "
                f"beside the instructions, the query and the answer ({budget} tokens for {least} passages); raise "
                "--num-ctx (num_ctx=, context_window=) or shorten the query"
            )
        return least, cut

    # -- listwise --------------------------------------------------------------------------------
    async def _listwise(self, query: str, texts: list[str]) -> Ranking:
        size, cut = self._layout(query, min(self.window, len(texts)), 2)
        shown = [truncate_tokens(text, cut) for text in texts]
        order = list(range(len(texts)))
        named: set[int] = set()
        step = max(1, size // 2)
        start = max(0, len(order) - size)
        while True:  # from the last window up to the first, each overlapping the one before
            window = order[start:start + size]
            ranked = await self._rank_window(query, [shown[i] for i in window])
            taken = set(ranked)
            named.update(window[j] for j in taken)
            left = [i for j, i in enumerate(window) if j not in taken]  # not named: in the order they came
            order[start:start + size] = [window[j] for j in ranked] + left
            if start == 0:
                break
            start = max(0, start - step)
        scores = kept_scores(len(order), [(i, None) for i in order])
        return Ranking(order=order, scores=scores, fallback=sorted(set(order) - named))

    async def _rank_window(self, query: str, passages: list[str]) -> list[int]:
        """The window's positions the model ranked, best first (each at most once; the ones it
        left out, or every one when its answer stayed invalid, are not in the list)."""
        try:
            answer = await self.llm.acomplete_json(_listwise_prompt(query, passages), RankingAnswer, system=SYSTEM)
        except ModelOutputError:
            return []
        return list(dict.fromkeys(n - 1 for n in answer.ranking if 1 <= n <= len(passages)))

    # -- pointwise -------------------------------------------------------------------------------
    async def _pointwise(self, query: str, texts: list[str]) -> Ranking:
        size, cut = self._layout(query, min(self.batch_size, len(texts)), 1)
        shown = [truncate_tokens(text, cut) for text in texts]
        batches = [list(range(i, min(i + size, len(texts)))) for i in range(0, len(texts), size)]
        answers = await asyncio.gather(*(self._grade_batch(query, [shown[i] for i in batch]) for batch in batches))
        grades: list[float | None] = [grade for answer in answers for grade in answer]
        return _graded(grades)

    async def _grade_batch(self, query: str, passages: list[str]) -> list[float | None]:
        """The grade of each passage of one prompt, ``None`` where the answer gave none."""
        try:
            answer = await self.llm.acomplete_json(_pointwise_prompt(query, passages), GradesAnswer, system=SYSTEM)
        except ModelOutputError:
            return [None] * len(passages)
        grades: list[float | None] = [None] * len(passages)
        for entry in answer.grades:
            if 1 <= entry.passage <= len(passages) and grades[entry.passage - 1] is None:
                grades[entry.passage - 1] = entry.grade
        return grades


def _graded(grades: list[float | None]) -> Ranking:
    """A pointwise :class:`Ranking` from the grades read (``None``: ungraded), in incoming order."""
    n = len(grades)
    given = [g for g in grades if g is not None]
    fallback = [i for i, g in enumerate(grades) if g is None]
    if not given:
        scores = kept_scores(n, [(i, None) for i in range(n)])
    else:
        held: list[float] = []
        for g in grades:  # an ungraded passage takes the grade of the one ranked just above it
            held.append(g if g is not None else (held[-1] if held else max(given)))
        scores = [g / MAX_GRADE for g in held]
    order = sorted(range(n), key=lambda i: -scores[i])  # stable: ties keep the incoming order
    return Ranking(order=order, scores=scores, grades=grades, fallback=fallback)


__all__ = ["BATCH_SIZE", "GradesAnswer", "LLMReranker", "MAX_PASSAGE_TOKENS", "METHODS", "Ranking", "RankingAnswer", "WINDOW"]
