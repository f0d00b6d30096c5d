"""Rerankers: a second look at a search's candidate hits, scored against the query.

A **reranker** is any callable ``reranker(query, texts) -> scores``, sync or async, returning
one finite score per text, higher meaning more relevant (:class:`Reranker`). A cross-encoder, an
LLM judging passages, a LangChain document compressor or a LlamaIndex node postprocessor
(through the adapters of ``langchain_rhizome`` and ``llama_index.retrievers.rhizome``) all fit.

Every method and mode takes one: ``index.as_retriever(k=4, reranker=..., rerank_candidates=20)``.
The search then asks the mode for ``rerank_candidates`` hits (default :data:`RERANK_CANDIDATES`,
never fewer than ``k``: the **over-fetch**), after its metadata filter and fill, and
:func:`arerank` keeps the ``k`` the reranker scores highest, in its order. A reranked hit keeps
its id, text, kind and provenance; its score is the reranker's, and the mode's own score moves
to ``metadata["retrieval_score"]``. A mode that reranks inside its own search (spRAG reranks the
candidate chunks before choosing segments) sets
:attr:`~rhizome.core.retrieval.contract.BaseRetriever.reranks_itself` and gets the same
reranker there instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rhizome.core.errors import ConfigurationError
from rhizome.core.types import Hit

RERANK_CANDIDATES = 20
"""How many hits a reranked search asks its mode for, unless ``rerank_candidates`` says (and
never fewer than ``k``)."""


@runtime_checkable
class Reranker(Protocol):
    """Scores ``texts`` against ``query`` (one finite score per text, higher is more relevant;
    may be a coroutine function)."""

    def __call__(self, query: str, texts: list[str]) -> Sequence[float] | Awaitable[Sequence[float]]: ...


def check_reranker(reranker: Any) -> Reranker | None:
    """``reranker`` if it is one (``None``: none); a :class:`ConfigurationError` otherwise."""
    if reranker is None or callable(reranker):
        return reranker
    raise ConfigurationError(
        f"a reranker is a callable reranker(query, texts) -> scores, not a {type(reranker).__name__}; wrap a LangChain "
        "document compressor with langchain_rhizome.CompressorReranker, a LlamaIndex node postprocessor with "
        "llama_index.retrievers.rhizome.PostprocessorReranker"
    )


async def ascores(reranker: Reranker, query: str, texts: list[str]) -> np.ndarray:
    """The reranker's scores of ``texts`` (checked: one finite score each)."""
    if not texts:
        return np.zeros(0)
    scores: Any = reranker(query, texts)
    if inspect.isawaitable(scores):
        scores = await scores
    try:
        scores = np.asarray(scores, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        scores = np.zeros(0)
    if len(scores) != len(texts) or not np.isfinite(scores).all():
        raise ConfigurationError(f"the reranker must return one finite score per text: {len(texts)} texts, got {scores.size} usable scores")
    return scores


async def arerank(reranker: Reranker, query: str, hits: list[Hit], k: int) -> list[Hit]:
    """The ``k`` of ``hits`` that ``reranker`` scores highest, best first (ties keep the
    search's order), each with the reranker's score and its own in ``metadata["retrieval_score"]``."""
    scores = await ascores(reranker, query, [hit.text for hit in hits])
    order = sorted(range(len(hits)), key=lambda i: -scores[i])[:k]
    return [hits[i].model_copy(update={"score": float(scores[i]), "metadata": {**hits[i].metadata, "retrieval_score": hits[i].score}})
            for i in order]


def kept_scores(n: int, kept: Sequence[tuple[int, float | None]]) -> list[float]:
    """Scores of ``n`` texts from what a reranker that returns a subset, best first, gave back
    (``kept``: each text's position and the score it came with, if any): those scores when every
    kept text has one, else its rank (the first kept ``1``, falling towards ``0``); a text not kept
    scores below every kept one."""
    given = [score for _, score in kept]
    if kept and all(isinstance(score, (int, float)) for score in given):
        scores = {i: float(score) for i, score in kept if score is not None}
        floor = min(scores.values()) - 1.0
    else:
        scores = {i: 1.0 - rank / len(kept) for rank, (i, _) in enumerate(kept)}
        floor = 0.0
    return [scores.get(i, floor) for i in range(n)]


def candidates(k: int, wanted: int | None) -> int:
    """How many hits a reranked search of ``k`` asks for (``wanted``: the setting, if given)."""
    if wanted is not None and (not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 1):
        raise ConfigurationError(f"rerank_candidates must be a positive integer, got {wanted!r}")
    return max(k, wanted or RERANK_CANDIDATES)


__all__ = ["RERANK_CANDIDATES", "Reranker", "arerank", "ascores", "candidates", "check_reranker", "kept_scores"]
