"""Passages over small chunks: runs of a document's consecutive chunks, embedded whole, ranked by
their own vector and by their best chunk's.

Some methods cut text finer than a passage (RAPTOR's 100-token leaves, spRAG's 200-token
chunks), and dense retrieval over whole passages then sees context that their chunks lose: a
chunk cut from the middle of a paragraph no longer says what the paragraph is about. A method
that keeps passage vectors beside its chunks ranks passages by both granularities at once:

- a *passage* is a run of one document's consecutive chunks holding at most ``max_tokens``
  tokens (:data:`PASSAGE_TOKENS`, the kernel's default chunk: the unit dense retrieval sees),
  keyed ``"<document id>:<first chunk>-<end>"`` (:func:`passage_key`), its text the chunks
  joined back (:func:`joined`); :func:`passages` cuts them, the same way on every call;
- :class:`PassageRetriever` scores each passage by the cosine of its own vector plus the best
  cosine among its chunks. A passage whose one sentence matches the question closely rises
  above one that matches loosely all through, and a passage whose chunks each say little
  rises with the whole it makes. No weight is tuned: both cosines come from the same embedder.

The method stores the passage vectors in its own collection (named by its index's
``PASSAGE_COLLECTION``) and removes a document's with the document. An index built before it
kept them has none: the retriever then finds no passage, and the kernel's fill returns the
nearest chunks (``stats["filled"]``), as ``naive`` would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from rhizome.core.retrieval.contract import (
    BaseRetriever,
    Retrieval,
    provenance,
    query_vector,
    vector_search,
)
from rhizome.core.retrieval.params import RetrieverParams
from rhizome.core.text import chunk_id
from rhizome.core.types import Chunk, Hit

PASSAGE_TOKENS = 1200
"""Most tokens in a passage: the kernel's default chunk size, what dense retrieval sees."""

CANDIDATES = 200
"""Passages and chunks nearest the query whose passages are scored."""


def passage_key(document_id: str, start: int, end: int) -> str:
    """The key of the passage of chunks ``start`` … ``end − 1`` of ``document_id``."""
    return f"{document_id}:{start}-{end}"


def passage_span(key: str) -> tuple[str, int, int]:
    """``(document id, start, end)`` of a key made by :func:`passage_key` (the inverse)."""
    document_id, _, span = key.rpartition(":")
    start, _, end = span.partition("-")
    return document_id, int(start), int(end)


def passage_chunks(key: str) -> list[str]:
    """The chunk ids of the passage ``key``, in order."""
    document_id, start, end = passage_span(key)
    return [chunk_id(document_id, i) for i in range(start, end)]


def runs(sizes: Iterable[tuple[int, int]], max_tokens: int = PASSAGE_TOKENS) -> list[tuple[int, int]]:
    """``(start, end)`` of the passages of one document whose chunks are ``(index, n_tokens)``:
    consecutive chunks in order, packed while they hold at most ``max_tokens`` together (a
    chunk alone longer is a passage of its own). It reads no text, so that a document whose
    stored text is damaged can still have its passages found and removed."""
    out: list[tuple[int, int]] = []
    run: tuple[int, int] | None = None  # (start, end) of the passage being packed
    used = 0
    for index, n_tokens in sorted(sizes):
        if run is not None and (used + n_tokens > max_tokens or index != run[1]):
            out.append(run)
            run, used = None, 0
        run = (index if run is None else run[0], index + 1)
        used += n_tokens
    if run is not None:
        out.append(run)
    return out


def passages(chunks: Iterable[Chunk], max_tokens: int = PASSAGE_TOKENS) -> list[tuple[str, list[Chunk]]]:
    """The passages of ``chunks`` (:func:`runs` of each document's chunks) with their chunks.
    Deterministic: the same chunks give the same keys."""
    by_document: dict[str, dict[int, Chunk]] = {}
    for chunk in chunks:
        by_document.setdefault(chunk.document_id, {})[chunk.index] = chunk
    out: list[tuple[str, list[Chunk]]] = []
    for document_id in sorted(by_document):
        held = by_document[document_id]
        for start, end in runs(((i, c.n_tokens) for i, c in held.items()), max_tokens):
            out.append((passage_key(document_id, start, end), [held[i] for i in range(start, end)]))
    return out


def document_passages(store: Any, document_id: str, max_tokens: int = PASSAGE_TOKENS) -> list[str]:
    """The keys of the stored passages of ``document_id`` (for removing their vectors with it),
    from its chunks' positions and sizes only."""
    return [passage_key(document_id, start, end) for start, end in runs(store.chunk_sizes(document_id), max_tokens)]


def joined(run: Sequence[Chunk]) -> str:
    """The text of consecutive chunks of one document: overlapping text once; where the chunker
    dropped a blank stretch between two chunks, a line break."""
    text, end = run[0].text, run[0].end
    for chunk in run[1:]:
        if chunk.start >= end:
            text += ("\n" if chunk.start > end else "") + chunk.text
        else:
            text += chunk.text[end - chunk.start :]
        end = max(end, chunk.end)
    return text


def passage_hit(key: str, run: Sequence[Chunk], score: float, **metadata: Any) -> Hit:
    """A ``segment`` hit for the passage ``key`` of chunks ``run``, citing every chunk."""
    document_id, start, end = passage_span(key)
    meta: dict[str, Any] = {"document_id": document_id, "chunk_start": start, "chunk_end": end, "start": run[0].start, "end": run[-1].end}
    for name in ("title", "source"):
        if name in run[0].metadata:
            meta[name] = run[0].metadata[name]
    meta.update(metadata)
    cited = provenance({c.id: c for c in run}, [c.id for c in run], limit=len(run))
    return Hit(id=key, text=joined(run), score=float(score), kind="segment", provenance=cited, metadata=meta)


class PassageParams(RetrieverParams):
    """The settings of :class:`PassageRetriever`."""

    candidates: int = Field(CANDIDATES, ge=1)
    """Passages and chunks nearest the query whose passages are scored (200)."""


class PassageRetriever(BaseRetriever):
    """Passages by the cosine of their own vector plus their best chunk's (see the module
    docstring). The index names its passage collection ``PASSAGE_COLLECTION``; every hit is a
    passage (``kind="segment"``) with both cosines in its metadata (``own``, ``best_chunk``)."""

    mode = "passages"
    params_class = PassageParams
    params: PassageParams

    def _stored(self) -> tuple[dict[str, str], dict[str, list[str]]]:
        """Each chunk's passage and each passage's chunks, from the keys of the passage
        collection (kept until it changes)."""
        store, name = self.index.store, self.index.PASSAGE_COLLECTION

        def build() -> tuple[dict[str, str], dict[str, list[str]]]:
            members = {key: passage_chunks(key) for key in store.vector_ids(name)}
            return {cid: key for key, ids in members.items() for cid in ids}, members

        return self.index.derived(f"passages:{name}", store.vector_generation(name), build)

    def ranked(self, vector: np.ndarray) -> list[tuple[str, float, float]]:
        """``(passage key, own cosine, best chunk cosine)``, best sum first, of the passages
        among the nearest passages and the passages of the nearest chunks."""
        store, n = self.index.store, self.params.candidates
        own = vector_search(store, self.index.PASSAGE_COLLECTION, vector, n)
        near = vector_search(store, self.index.CHUNK_COLLECTION, vector, n)
        owner, chunks_of = self._stored()
        keys = list(dict.fromkeys([key for key, _ in own] + [owner[cid] for cid, _ in near if cid in owner]))
        if not keys:
            return []
        present, matrix = store.collection(self.index.PASSAGE_COLLECTION, vector.shape[1]).present(keys)
        cosine = dict(zip(present, (matrix @ vector[0]).tolist()))
        members = {key: chunks_of.get(key) or passage_chunks(key) for key in present}
        held, rows = store.collection(self.index.CHUNK_COLLECTION, vector.shape[1]).present([c for ids in members.values() for c in ids])
        chunk_cos = dict(zip(held, (rows @ vector[0]).tolist()))
        out = []
        for key, ids in members.items():
            best = max((chunk_cos[c] for c in ids if c in chunk_cos), default=None)
            if best is not None:
                out.append((key, cosine[key], best))
        out.sort(key=lambda p: (-round(p[1] + p[2], 9), p[0]))
        return out

    async def _asearch(self, query: str, k: int) -> Retrieval:
        vector = await query_vector(self.index, query)
        if vector is None:
            return Retrieval(query=query)
        hits: list[Hit] = []
        ranked = self.ranked(vector)
        store, name = self.index.store, self.index.PASSAGE_COLLECTION
        if not ranked and not store.vector_ids(name) and store.has_collection(self.index.CHUNK_COLLECTION):
            return Retrieval(query=query, stats={"candidates": 0}, notes=[  # the contract fills k with the nearest passages
                f"this index holds no passage vectors ({name}): it was built before the passages mode existed; "
                "build it again from its files (a new index directory) for this mode"])
        for start in range(0, len(ranked), k):  # a passage whose chunks went since is skipped
            batch = ranked[start : start + k]
            chunks = self.index.store.chunks([c for key, _, _ in batch for c in passage_chunks(key)])
            for key, own, best in batch:
                run = [chunks[c] for c in passage_chunks(key) if c in chunks]
                if len(run) == len(passage_chunks(key)):
                    hits.append(passage_hit(key, run, own + best, own=round(own, 6), best_chunk=round(best, 6), via=self.mode))
            if len(hits) >= k:
                break
        return Retrieval(query=query, hits=hits[:k], stats={"candidates": len(ranked)})


__all__ = [
    "CANDIDATES",
    "PASSAGE_TOKENS",
    "PassageParams",
    "PassageRetriever",
    "document_passages",
    "joined",
    "passage_chunks",
    "passage_hit",
    "passage_key",
    "passage_span",
    "passages",
]
