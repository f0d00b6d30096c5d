"""Keywords without a model: the offline stand-ins for the keyword steps of extraction.

- :func:`content_keywords` — the most frequent content words of a text: a chunk's content
  keywords, a relation's theme keywords when its extractor gave none;
- :func:`add_keywords` — fills those in on an extraction (what LightRAG's relation vectors need,
  whatever extractor produced the relations: a model, the offline rules, imported triples);
- :func:`query_names` — the names and quoted phrases a query mentions, which retrievers link to
  entities (the offline extractor's mention finder, question words left out).

Plain term frequency, no IDF: a stored keyword must not change when other documents are added or
removed, or an insert followed by a delete would not give back the records held before.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

from rhizome.core.extraction.offline import STOPWORDS as NAME_STOPWORDS
from rhizome.core.extraction.offline import OfflineExtractor
from rhizome.core.extraction.schema import Extraction
from rhizome.core.models.embeddings import STOPWORDS as EMBED_STOPWORDS
from rhizome.core.types import Chunk

_QUOTED = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”")
_FINDER = OfflineExtractor(window="sentence")
_WORD = re.compile(r"[^\W\d_][^\W_]*(?:['’\-][^\W_]+)*", re.UNICODE)

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


def query_names(query: str) -> list[str]:
    """The quoted phrases and the names (capitalised spans, acronyms, numbers with units) that
    ``query`` mentions, in order, without repeats and without question words."""
    return list(_query_names(query))


@functools.lru_cache(maxsize=256)  # a search asks for its query's names from more than one step
def _query_names(query: str) -> tuple[str, ...]:
    names = [(m.group(1) or m.group(2)).strip() for m in _QUOTED.finditer(query)]
    names += [display for display, _type, kind in _FINDER.find_mentions(query) if kind != "phrase" and display.lower() not in QUESTION_WORDS]
    return tuple(dict.fromkeys(n for n in names if n))


def content_keywords(text: str, limit: int = 5, *, exclude: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The ``limit`` most frequent content words of ``text`` (ties: first seen), without the
    words in ``exclude`` (lower case)."""
    words = [w for w in content_words(text) if w not in exclude]
    counts = Counter(words)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    return sorted(counts, key=lambda w: (-counts[w], first[w]))[:limit]


def add_keywords(extraction: Extraction, chunk: Chunk | None, *, max_keywords: int = 3, max_content_keywords: int = 5) -> Extraction:
    """Give every relation theme keywords and the chunk content keywords, in place: a relation
    without keywords gets its predicate (an OpenIE triple's verb) and, failing that, the most
    frequent content words of its description minus its endpoint names; a chunk without content
    keywords gets the most frequent content words of its text."""
    names = {e.id: e.name for e in extraction.entities}
    for relation in extraction.relations:
        if relation.keywords:
            continue
        if relation.predicate:
            relation.keywords = [relation.predicate]
            continue
        exclude = set(content_words(f"{names.get(relation.source, relation.source)} {names.get(relation.target, relation.target)}"))
        relation.keywords = content_keywords(relation.description, max_keywords, exclude=exclude)
    if not extraction.keywords and chunk is not None:
        extraction.keywords = content_keywords(chunk.text, max_content_keywords)
    return extraction


__all__ = ["QUESTION_WORDS", "STOPWORDS", "add_keywords", "content_keywords", "content_words"]
