"""The metrics of the harness: passage recall (hotpotqa, musique) with paired statistics against
a baseline, and the answer-content proxy for the medical questions."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from rhizome.core.models.embeddings import STOPWORDS
from rhizome.core.text import count_tokens, truncate_tokens
from rhizome.core.types import Hit

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def ranked_documents(hits: Sequence[Hit]) -> list[str]:
    """Passages in rank order: the hits in the order returned, each putting every document its
    provenance cites, in that order, at its rank (a hit citing 20 passages puts all 20 there);
    a passage cited again later keeps its first place. No kind of hit is moved ahead of another,
    so a retriever that ranks a broad community report first pays for it."""
    return list(dict.fromkeys(doc for hit in hits for doc in hit.provenance.document_ids))


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of the gold passages among the first ``k`` ranked passages (HippoRAG's Recall@k)."""
    if not gold:
        return 0.0
    top = set(ranked[:k])
    return sum(1 for g in gold if g in top) / len(gold)


def paired_counts(scores: Sequence[float], baseline: Sequence[float]) -> dict[str, int]:
    """Question by question against the baseline: how often the scores are higher (wins),
    lower (losses) or equal (ties)."""
    diff = np.subtract(scores, baseline)
    return {"wins": int((diff > 0).sum()), "losses": int((diff < 0).sum()), "ties": int((diff == 0).sum())}


def bootstrap_ci(values: Sequence[float], resamples: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (one per question): ``resamples``
    resamples of the questions with replacement, drawn from a generator seeded with ``seed``.
    Applied to paired differences it is the interval of the mean difference."""
    x = np.asarray(values, dtype=float)
    means = x[np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    low, high = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def content_words(text: str) -> set[str]:
    """Lower-cased words that are not stopwords and are longer than two characters."""
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS and len(w) > 2}


def budgeted_context(hits: Sequence[Hit], max_tokens: int) -> str:
    """The hits' texts in rank order, cut at ``max_tokens`` tokens in all."""
    parts, budget = [], max_tokens
    for hit in hits:
        if budget <= 0:
            break
        text = truncate_tokens(hit.text, budget)
        parts.append(text)
        budget -= count_tokens(text)
    return "\n".join(parts)


def answer_coverage(context: str, answer: str) -> float:
    """Share of the reference answer's content words found in the context (the medical proxy)."""
    wanted = content_words(answer)
    if not wanted:
        return 0.0
    have = content_words(context)
    return len(wanted & have) / len(wanted)
