"""The metrics of the harness: passage recall for hotpotqa and the answer-content proxy for the
medical questions."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rhizome.core.embeddings import STOPWORDS
from rhizome.core.text import count_tokens, truncate_tokens
from rhizome.core.types import Hit

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


PASSAGE_KINDS = frozenset({"chunk", "segment"})


def ranked_documents(hits: Sequence[Hit]) -> list[str]:
    """Passages in rank order: first the documents of the passage-like hits (chunks, segments)
    in the order they come, then the documents cited by the other hits (entities, relations,
    communities, summaries, points). A community report can cite dozens of passages in no
    meaningful order; letting it fill the top of the ranking would measure that order, not the
    retriever. A retriever that returns no passages is still ranked by what its hits cite."""
    first = [doc for hit in hits if hit.kind in PASSAGE_KINDS for doc in hit.provenance.document_ids]
    rest = [doc for hit in hits if hit.kind not in PASSAGE_KINDS for doc in hit.provenance.document_ids]
    return list(dict.fromkeys([*first, *rest]))


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of the gold passages among the first ``k`` ranked passages (HippoRAG's Recall@k)."""
    if not gold:
        return 0.0
    top = set(ranked[:k])
    return sum(1 for g in gold if g in top) / len(gold)


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
