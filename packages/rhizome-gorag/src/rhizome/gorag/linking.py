"""Linking a text to the keyword–label graph beyond exact keyword matches.

The paper links a query only through its extracted keywords that are already graph nodes; with
TF-IDF keywords on WOS few of them are (issue 20). Three more links; each linked node is a terminal
of the graph score (part and embedding links also of the Steiner tree) and counts fully in it, the strength below only deciding whether and where a link is made
(``graph_strength`` accepts per-terminal strengths for callers that want to weigh them):

- **vocabulary**: every content n-gram of the text that is a keyword node (the graph's own
  vocabulary, read off the whole text, not only its top keywords) — strength 1;
- **parts**: a query keyword the graph lacks is linked to the keyword nodes among its own
  sub-phrases ("nonlinear wave equation" → "wave equation") — strength = their share of its
  words;
- **embedding**: with an embedder, a keyword still unlinked is linked to the most similar
  keyword of the labelled texts and descriptions when the cosine reaches a threshold —
  strength = the cosine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import networkx as nx
import numpy as np

from rhizome.gorag.graph import keyword_node
from rhizome.gorag.text import content_ngrams


def vocabulary_terminals(graph: nx.Graph, tokens: Sequence[str], max_ngram: int) -> dict[str, float]:
    """Keyword nodes that occur in the text as content n-grams, strength 1."""
    found: dict[str, float] = {}
    for gram in content_ngrams(tokens, max_ngram):
        node = keyword_node(gram)
        if node in graph:
            found[node] = 1.0
    return found


def part_terminals(graph: nx.Graph, keyword: str) -> dict[str, float]:
    """Keyword nodes among the sub-phrases of ``keyword``, longest first, not overlapping a
    longer one already taken; strength = the sub-phrase's share of the keyword's words."""
    words = keyword.split(" ")
    n = len(words)
    taken = [False] * n
    found: dict[str, float] = {}
    for size in range(n - 1, 0, -1):
        for i in range(n - size + 1):
            if any(taken[i : i + size]):
                continue
            node = keyword_node(" ".join(words[i : i + size]))
            if node in graph:
                found[node] = size / n
                for k in range(i, i + size):
                    taken[k] = True
    return found


class KeywordLinker:
    """Embeddings of the graph's keywords from labelled texts and descriptions (the targets of
    embedding links), and a cache of query keyword embeddings."""

    def __init__(self, cache_size: int = 200_000) -> None:
        self.names: list[str] = []
        self.vectors: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        self._cache: dict[str, np.ndarray] = {}
        self.cache_size = cache_size

    def add(self, keywords: Sequence[str], vectors: np.ndarray) -> None:
        known = set(self.names)
        for v, vec in zip(keywords, vectors):
            if v not in known:
                self.names.append(v)
                self.vectors.append(np.asarray(vec, dtype=np.float32))
                known.add(v)
        self._matrix = None

    def missing(self, keywords: Sequence[str]) -> list[str]:
        """Which of ``keywords`` have no cached vector yet."""
        return [v for v in keywords if v not in self._cache]

    def remember(self, keywords: Sequence[str], vectors: np.ndarray) -> None:
        if len(self._cache) > self.cache_size:
            self._cache.clear()
        for v, vec in zip(keywords, vectors):
            self._cache[v] = np.asarray(vec, dtype=np.float32)

    def link(self, keywords: Sequence[str], threshold: float, exists: Callable[[str], bool]) -> dict[str, float]:
        """For each keyword with a cached vector: its most similar target keyword (a node that
        ``exists``) when the cosine is at least ``threshold``; node → strength."""
        if not self.names:
            return {}
        if self._matrix is None:
            self._matrix = np.vstack(self.vectors)
        found: dict[str, float] = {}
        for v in keywords:
            vec = self._cache.get(v)
            if vec is None:
                continue
            sims = self._matrix @ vec
            best = int(np.argmax(sims))
            if sims[best] >= threshold and exists(self.names[best]):
                node = keyword_node(self.names[best])
                found[node] = max(found.get(node, 0.0), float(sims[best]))
        return found

    def to_json(self) -> dict[str, list]:
        return {"names": self.names, "vectors": [v.tolist() for v in self.vectors]}

    def load_json(self, data: dict[str, list]) -> None:
        self.add(data.get("names", []), np.asarray(data.get("vectors", []), dtype=np.float32))


__all__ = ["KeywordLinker", "part_terminals", "vocabulary_terminals"]
