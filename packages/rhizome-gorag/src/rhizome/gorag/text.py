"""Tokens, keyword normalisation and the corpus statistics behind GORAG's correlation score.

GORAG weighs a keyword–label edge with a "normalised TF-IDF" correlation score (paper Eq. 4)::

    CS(v, t) = count(v, t) / |t| * ln(|T| / (1 + df(v)))

where ``T`` is every text the classifier has seen so far — labelled texts, label descriptions
and the queries it indexed online — so the IDF grows as the classifier works. The paper does
not say how to count a phrase, how long a text is, or what to do when the score leaves [0, 1];
the choices below are recorded in docs/gorag.md ("Design choices"):

- a token is a lower-cased run of letters and digits (so ``machine_learning``, ``Machine
  Learning`` and ``machine-learning`` all read ``machine learning``); ``|t|`` is the number of
  tokens of ``t``;
- a keyword is normalised to its tokens joined by single spaces, and ``count(v, t)`` counts the
  occurrences of that token sequence in ``t`` (at least 1 when ``v`` was extracted from ``t``);
- ``df(v)`` counts the texts of ``T`` that contain ``v`` or yielded it;
- CS is clipped to ``[0, 1 - epsilon]`` so edge weights ``1 - CS`` stay in ``[epsilon, 1]``.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

_TOKEN = re.compile(r"[^\W_]+")


@functools.cache
def _stop_words() -> frozenset[str]:
    """scikit-learn's English stop words, imported on first use: importing scikit-learn (and
    SciPy with it) took about 1.7 s of every process that imports this module, such as
    ``rhizome mcp`` and ``rhizome serve`` at their start, which classify nothing until asked."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


STOP_WORDS: frozenset[str]
"""scikit-learn's English stop words (made on first use, see :func:`_stop_words`)."""


def __getattr__(name: str) -> Any:
    if name == "STOP_WORDS":
        return _stop_words()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def tokenize(text: str) -> list[str]:
    """Lower-cased runs of letters and digits; punctuation, underscores and hyphens separate."""
    return _TOKEN.findall(text.lower())


def normalize_keyword(keyword: str) -> str:
    """The node id of a keyword: its tokens joined by single spaces ("" when it has none)."""
    return " ".join(tokenize(keyword))


def name_keyword(label: str) -> str | None:
    """The keyword that stands for a label's name (its normalised name), or ``None`` for a
    name without a letter — a number or code such as ``2``, ``1990`` or ``4.5``: texts hold
    such numbers for every other reason (years, counts, sections), so they do not name it."""
    key = normalize_keyword(label)
    return key if any(c.isalpha() for c in key) else None


def display_name(label: str) -> str:
    """A label as words: ``machine_learning`` → ``machine learning``."""
    return " ".join(label.replace("_", " ").split())


def is_content_token(token: str) -> bool:
    """A token that may start, end or sit inside an offline keyword: not a stop word, at least
    two characters, not a bare number."""
    return len(token) >= 2 and token not in _stop_words() and not token.isdigit()


@functools.lru_cache(maxsize=1 << 18)
def word_stem(token: str) -> str:
    """The Snowball (Porter 2) English stem of a lower-cased word: ``depression`` and
    ``depressive`` → ``depress``, ``disorders`` → ``disord``. The ``snowballstemmer`` package,
    imported on first use, is the Snowball project's own Python build of the algorithm. Its
    stemmer keeps state while it works, so one thread at a time uses it."""
    with _STEMMER_LOCK:
        return _english_stemmer().stemWord(token)


_STEMMER_LOCK = threading.Lock()


@functools.cache
def _english_stemmer() -> Any:
    """Always the package's pure-Python English stemmer: ``snowballstemmer.stemmer`` hands out
    PyStemmer's C build instead when that is installed, and its older Snowball release stems
    some words otherwise ("emergency" → ``emerg``, not ``emergenc``), so a classifier's terms
    would depend on what else the environment holds and a saved one would meet other stems
    where it is loaded."""
    from snowballstemmer.english_stemmer import EnglishStemmer

    return EnglishStemmer()


def content_ngrams(tokens: Sequence[str], max_n: int, stem: Callable[[str], str] | None = None) -> Counter[str]:
    """Occurrences of every n-gram (n <= ``max_n``) made only of content tokens that stand next
    to each other in ``tokens``: the offline keyword candidates of a text. With ``stem``, each
    content token is read as ``stem(token)`` (which tokens are content is decided first)."""
    grams: Counter[str] = Counter()
    run: list[str] = []

    def flush() -> None:
        for n in range(1, max_n + 1):
            for i in range(len(run) - n + 1):
                grams[" ".join(run[i : i + n])] += 1

    for token in tokens:
        if is_content_token(token):
            run.append(stem(token) if stem else token)
        else:
            flush()
            run = []
    flush()
    return grams


def phrase_count(phrase: str, padded_text: str) -> int:
    """Occurrences of the normalised ``phrase`` in a text given as ``" " + tokens + " "``."""
    if not phrase:
        return 0
    return padded_text.count(f" {phrase} ")


def correlation_score(count: int, length: int, n_texts: int, df: int, epsilon: float) -> float:
    """Eq. 4 of the paper, clipped to ``[0, 1 - epsilon]`` (docs/gorag.md, "CS out of range"): natural log; a keyword
    found in nearly every text gets a negative IDF and so a score of 0 (weight 1)."""
    if length <= 0 or n_texts <= 0:
        return 0.0
    value = (count / length) * math.log(n_texts / (1 + df))
    return min(max(value, 0.0), 1.0 - epsilon)


class TermStats:
    """Document frequencies over the texts ``T`` the classifier has seen.

    Content n-grams (the offline keyword candidates) are counted exactly as texts arrive. Any
    other phrase (a model keyword with a stop word inside, "theory of mind") is counted by
    scanning the stored texts once and then only the texts added since (cached per phrase).
    ``extra`` counts texts that yielded a keyword without containing it (a model paraphrase),
    so that ``df(v)`` = texts that contain ``v`` or yielded it (docs/gorag.md, "count, |t|, df").
    """

    def __init__(self, max_ngram: int = 3) -> None:
        self.max_ngram = max_ngram
        self.ngram_df: Counter[str] = Counter()
        self.extra: Counter[str] = Counter()
        self.texts: list[str] = []  # " " + normalised tokens + " ", for phrase scans
        self._scans: dict[str, tuple[int, int]] = {}

    @property
    def n_texts(self) -> int:
        return len(self.texts)

    def is_ngram_key(self, phrase: str) -> bool:
        tokens = phrase.split(" ")
        return 0 < len(tokens) <= self.max_ngram and all(is_content_token(t) for t in tokens)

    def add_text(self, tokens: Sequence[str]) -> int:
        """Add one text to ``T``; returns its position."""
        self.ngram_df.update(content_ngrams(tokens, self.max_ngram).keys())
        self.texts.append(f" {' '.join(tokens)} ")
        return len(self.texts) - 1

    def add_yielded(self, position: int, keywords: Iterable[str]) -> None:
        """Record that the text at ``position`` yielded ``keywords`` (normalised)."""
        padded = self.texts[position]
        for keyword in keywords:
            if phrase_count(keyword, padded) == 0:
                self.extra[keyword] += 1

    def containing(self, phrase: str) -> int:
        """Texts of ``T`` that contain ``phrase``."""
        if self.is_ngram_key(phrase):
            return self.ngram_df.get(phrase, 0)
        count, upto = self._scans.get(phrase, (0, 0))
        needle = f" {phrase} "
        for padded in self.texts[upto:]:
            if needle in padded:
                count += 1
        self._scans[phrase] = (count, len(self.texts))
        return count

    def df(self, phrase: str) -> int:
        return self.containing(phrase) + self.extra.get(phrase, 0)

    # -- persistence ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "max_ngram": self.max_ngram,
            "texts": [t[1:-1] for t in self.texts],
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TermStats:
        stats = cls(int(data["max_ngram"]))
        for text in data["texts"]:
            stats.add_text(text.split(" ") if text else [])
        stats.extra.update({str(k): int(v) for k, v in data["extra"].items()})
        return stats


def text_key(tokens: Sequence[str]) -> str:
    """A text's key among the classifier's self-indexed texts: a digest of its tokens."""
    return hashlib.blake2b(" ".join(tokens).encode("utf-8"), digest_size=16).hexdigest()


__all__ = [
    "STOP_WORDS",
    "TermStats",
    "content_ngrams",
    "correlation_score",
    "display_name",
    "is_content_token",
    "name_keyword",
    "normalize_keyword",
    "phrase_count",
    "text_key",
    "tokenize",
    "word_stem",
]
