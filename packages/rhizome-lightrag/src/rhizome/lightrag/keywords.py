"""Keywords without a model: the offline stand-ins for LightRAG's keyword steps.

- :func:`content_keywords` — the most frequent content words of a text (a chunk's
  ``content_keywords``, a co-occurrence relation's theme keywords).
- :func:`offline_query_keywords` — the query's low-level keywords are the names and quoted
  phrases it contains (the rule-based mention finder of the kernel's offline extractor), its
  high-level keywords the remaining content words.

Plain term frequency, no IDF: a stored keyword must not change when other documents are added or
removed, or an insert followed by a delete would not give back the records held before.
"""

from __future__ import annotations

import re
from collections import Counter

from rhizome.core.embeddings import STOPWORDS as EMBED_STOPWORDS
from rhizome.core.extraction.offline import STOPWORDS as NAME_STOPWORDS
from rhizome.core.extraction.offline import OfflineExtractor
from rhizome.lightrag.schema import QueryKeywords

_WORD = re.compile(r"[^\W\d_][^\W_]*(?:['’\-][^\W_]+)*", re.UNICODE)
_QUOTED = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”")

QUESTION_WORDS = frozenset(
    ["which", "what", "who", "whom", "whose", "when", "where", "why", "how", "name", "named", "kind", "type", "many", "much", "did", "does", "was", "were", "is", "are"]
)

STOPWORDS = EMBED_STOPWORDS | NAME_STOPWORDS | QUESTION_WORDS


def content_words(text: str) -> list[str]:
    """Lower-cased content words of ``text`` in order (stopwords, one- and two-letter words
    and numbers left out)."""
    out = []
    for match in _WORD.finditer(text):
        word = match.group().lower().strip("'’-")
        if len(word) >= 3 and word not in STOPWORDS:
            out.append(word)
    return out


def content_keywords(text: str, limit: int = 5, *, exclude: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The ``limit`` most frequent content words of ``text`` (ties: first seen), without the
    words in ``exclude`` (lower case)."""
    words = [w for w in content_words(text) if w not in exclude]
    counts = Counter(words)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    return sorted(counts, key=lambda w: (-counts[w], first[w]))[:limit]


def offline_query_keywords(query: str, finder: OfflineExtractor | None = None) -> QueryKeywords:
    """Low-level keywords: names and quoted phrases of the query; high-level keywords: its other
    content words. With no name in the query both levels use the content words; with no content
    word at all both use the query itself."""
    finder = finder or OfflineExtractor()
    low: list[str] = []
    for match in _QUOTED.finditer(query):
        low.append((match.group(1) or match.group(2)).strip())
    for display, _type, kind in finder.find_mentions(query):
        if kind != "phrase" and display.lower() not in QUESTION_WORDS:
            low.append(display)
    low = list(dict.fromkeys(k for k in low if k))
    in_names = {w for name in low for w in content_words(name)}
    high = list(dict.fromkeys(w for w in content_words(query) if w not in in_names))
    if not low:
        low = list(high)
    if not high:
        high = list(low)
    if not low and not high:
        low = high = [query.strip()]
    return QueryKeywords(high_level_keywords=high, low_level_keywords=low)


__all__ = ["STOPWORDS", "content_keywords", "content_words", "offline_query_keywords"]
