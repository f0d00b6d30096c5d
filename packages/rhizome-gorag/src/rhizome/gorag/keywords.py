"""What a text yields to the graph: its keywords (from a model, a function, or offline by
TF-IDF) and, for a new label, a model-written description (paper Eq. 12)."""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rhizome.core.errors import InvalidInputError
from rhizome.core.models.budget import fit
from rhizome.core.text import truncate_tokens
from rhizome.gorag import prompts
from rhizome.gorag.text import TermStats, content_ngrams, display_name, normalize_keyword

KeywordFunction = Callable[[str], "Sequence[str] | Awaitable[Sequence[str]]"]


def clean_keywords(keywords: Sequence[str], max_keywords: int) -> list[str]:
    """Normalised, de-duplicated keywords in their order, at most ``max_keywords`` (docs/gorag.md, "keyword format");
    anything that is not a string, or has no token, is dropped."""
    out: list[str] = []
    for keyword in keywords:
        if not isinstance(keyword, str):
            continue
        v = normalize_keyword(keyword)
        if v and v not in out:
            out.append(v)
    return out[:max_keywords]


def tfidf_keywords(
    stats: TermStats, tokens: Sequence[str], *, max_ngram: int, max_keywords: int, virtual: bool
) -> list[str]:
    """Top content n-grams of a text by tf · smoothed idf over ``T`` (counting the text
    itself when it is not in ``T`` yet: ``virtual``). Smoothing (``ln((1+N)/(1+df)) + 1``, as in
    scikit-learn) keeps every candidate's score positive, so even a first, lone text yields
    keywords; the edge weights use the paper's unsmoothed CS."""
    extra = 1 if virtual else 0
    return _top_grams(
        content_ngrams(tokens, max_ngram), len(tokens), stats.n_texts + extra, lambda g: stats.df(g) + extra, max_keywords
    )


def joining_tfidf_keywords(
    stats: TermStats, token_lists: Sequence[Sequence[str]], *, max_ngram: int, max_keywords: int
) -> list[list[str]]:
    """The offline keywords of texts about to join ``T`` together: for each, what
    :func:`tfidf_keywords` gives once all of them are in ``T``, read without adding them (a
    round's texts get their keywords before the round changes anything). A text holds a
    content n-gram exactly when the n-gram is among its own content n-grams, so the texts'
    n-gram counts are what joining them would add to each document frequency."""
    grams = [content_ngrams(tokens, max_ngram) for tokens in token_lists]
    joining: Counter[str] = Counter()
    for own in grams:
        joining.update(own.keys())
    n = stats.n_texts + len(token_lists)
    return [
        _top_grams(own, len(tokens), n, lambda g: stats.df(g) + joining[g], max_keywords)
        for own, tokens in zip(grams, token_lists)
    ]


def _top_grams(
    grams: Counter[str], length: int, n: int, df: Callable[[str], int], max_keywords: int
) -> list[str]:
    """The ``max_keywords`` n-grams of a text of ``length`` tokens with the highest
    tf · smoothed idf, ``n`` texts in ``T`` and ``df`` their document frequencies."""
    if not grams:
        return []
    scored = []
    for gram, count in grams.items():
        idf = math.log((1 + n) / (1 + df(gram))) + 1.0
        scored.append((-(count / length) * idf, -gram.count(" "), gram))
    scored.sort()
    return [gram for _, _, gram in scored[:max_keywords]]


async def model_keywords(
    text: str,
    *,
    function: KeywordFunction | None,
    llm: Any,
    max_keywords: int,
    max_text_tokens: int,
) -> list[str]:
    """The keywords of ``text`` from the user's ``function`` (sync or async) when there is one,
    else from the chat model (the paper), cleaned."""
    if function is not None:
        value = function(text)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise InvalidInputError(
                f"the keyword function must return a list of strings, got {type(value).__name__}"
            )
        return clean_keywords(list(value), max_keywords)
    shell = prompts.EXTRACT.format(max_keywords=max_keywords, text="")
    budget = fit(llm, max_text_tokens, reply_tokens=20 * max_keywords, fixed=[prompts.EXTRACT_SYSTEM, shell])
    prompt = prompts.EXTRACT.format(max_keywords=max_keywords, text=truncate_tokens(text, budget))
    answer = await llm.acomplete_json(prompt, prompts.KeywordList, system=prompts.EXTRACT_SYSTEM)
    return clean_keywords(answer.keywords, max_keywords)


async def describe_label(llm: Any, label: str, examples: list[str], *, example_tokens: int) -> str:
    """A short description of a new label written by the model from its name and a few
    example texts, each cut to ``example_tokens`` (Eq. 12; docs/gorag.md, "label descriptions")."""
    shown = ""
    if examples:
        shown = prompts.DESCRIBE_EXAMPLES.format(
            examples="\n".join(f"- {truncate_tokens(' '.join(e.split()), example_tokens)}" for e in examples)
        )
    prompt = prompts.DESCRIBE.format(name=display_name(label), examples=shown)
    answer = await llm.acomplete_json(prompt, prompts.LabelDescription, system=prompts.DESCRIBE_SYSTEM)
    return answer.description.strip()


__all__ = [
    "KeywordFunction",
    "clean_keywords",
    "describe_label",
    "joining_tfidf_keywords",
    "model_keywords",
    "tfidf_keywords",
]
