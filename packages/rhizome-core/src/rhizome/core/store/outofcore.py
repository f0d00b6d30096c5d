"""A vector collection kept out of core: compressed codes in memory, exact vectors on disk.

From :data:`OUT_OF_CORE_FROM` vectors (or when a collection would not fit the memory budget)
an index directory keeps its chunk collection as product-quantizer codes (faiss
``IndexPQFastScan``, :func:`~rhizome.core.store.codes.quantizer`: a 4-bit code for every 2
floats, 96 bytes for a 384-dimensional vector instead of 1,536) and nothing else of its vectors
in memory. A search scans the codes for :func:`~rhizome.core.store.vectors.candidates` of ``k``
candidates, reads those candidates' exact vectors from the
records (SQLite, by primary key) and ranks them by their exact cosine, so every score is exact
and only the candidate set is approximate: a true neighbour is missed only when its codes rank
it below the candidates kept. The recall this costs is measured in ``benchmarks/ann.py``
(docs/scaling.md). A search among given ids (a metadata filter) is exact: it reads those ids'
vectors from the records.

Why codes scanned whole rather than an inverted file (IVF), which would scan only the clusters
nearest a query: on the synthetic corpus's vectors the nearest neighbours spread over the
clusters (probing a quarter of 128 clusters found 81 % of the exact top ten, against 99 % for
the codes scanned whole and re-ranked), and a scan of the codes is already several times
cheaper than the exact scan it replaces.

The collection is built from the records a block at a time (trained on a sample of
:data:`~rhizome.core.store.codes.TRAIN_SAMPLE` vectors), so building it never holds the collection's float vectors; its
snapshot is the faiss index in the same file format as an exact collection's.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from rhizome.core.store import codes
from rhizome.core.store.vectors import (
    TIE_MARGIN,
    VectorStore,
    candidates,
    ranked,
    stable_int_id,
    threads_for,
    trained_codes,
)

OUT_OF_CORE_FROM = 1_000_000
"""Vectors from which a chunk collection in an index directory is kept out of core even with
memory to spare (at 384 dimensions a million float vectors take 1.5 GB in every reader)."""
BLOCK = 50_000
"""Vectors read from the records and added at a time while the collection is built."""

DIGEST_PREFIX = "pq:"
"""How an out-of-core collection's digest begins (an exact one's: ``crc32:``)."""

Rows = Callable[[Sequence[str]], tuple[list[str], np.ndarray]]
"""The exact vectors of the keys the records hold (in the order given), and those keys."""


class OutOfCoreStore(VectorStore):
    """A collection of product-quantizer codes whose exact vectors stay in the records (see the
    module docstring): the methods of :class:`VectorStore`, reading vectors through ``rows``."""

    def __init__(self, dimension: int, rows: Rows | None = None) -> None:
        super().__init__(dimension)
        self._rows = rows

    @classmethod
    def build(cls, dimension: int, rows: Rows, sample: np.ndarray, blocks: Iterable[tuple[list[str], np.ndarray]]) -> OutOfCoreStore:
        """A collection of the vectors of ``blocks`` (``(keys, vectors)`` a block at a time),
        its quantizer trained on ``sample``."""
        import faiss

        store = cls(dimension, rows)
        store._index = faiss.IndexIDMap2(trained_codes(dimension, sample))
        for keys, vectors in blocks:
            VectorStore.add(store, keys, vectors)
        return store

    @classmethod
    def wrap(cls, loaded: VectorStore, rows: Rows | None) -> OutOfCoreStore:
        """A snapshot read by :meth:`VectorStore.load` that holds codes, given its rows."""
        store = cls(loaded.dimension, rows)
        store._index, store._ids = loaded._index, loaded._ids
        return store

    def _overwrite(self, int_ids: np.ndarray, array: np.ndarray) -> None:
        codes.remove_ids(self._index, int_ids)
        self._index.add_with_ids(array, int_ids)

    def search(self, queries: np.ndarray, k: int, among: Iterable[str] | None = None) -> list[list[tuple[str, float]]]:
        """The ``k`` nearest of each query by exact cosine among the candidates the codes rank
        first (``among``: exactly, among those ids)."""
        array = self._check(queries)
        with self._lock.reading():
            if among is not None:
                keys = [key for key in dict.fromkeys(among) if stable_int_id(key) in self._ids]
            elif not self._ids or k < 1:
                return [[] for _ in range(array.shape[0])]
            else:
                want = min(len(self._ids), candidates(k))
                with threads_for(array.shape[0]):
                    _, found = self._index.search(array, want)
                names = [[self._ids[i] for i in row.tolist() if i != -1] for row in found]
        if among is not None:
            return self._search_among(array, k, keys)
        out = []
        for query, found_names in zip(array, names):
            held, vectors = self._exact(found_names)
            out.append(ranked(list(zip(held, (vectors @ query).tolist())), k))
        return out

    def _search_among(self, array: np.ndarray, k: int, keys: list[str]) -> list[list[tuple[str, float]]]:
        best: list[list[tuple[str, float]]] = [[] for _ in range(array.shape[0])]
        if not keys or k < 1:
            return best
        for start in range(0, len(keys), BLOCK):
            held, vectors = self._exact(keys[start : start + BLOCK])
            for row, line in enumerate(array @ vectors.T):
                top = np.argsort(-line, kind="stable")[: k + TIE_MARGIN]
                best[row] = ranked(best[row] + [(held[i], float(line[i])) for i in top.tolist()], k + TIE_MARGIN)
        return [row[:k] for row in best]

    def _exact(self, keys: Sequence[str]) -> tuple[list[str], np.ndarray]:
        if self._rows is None:
            raise RuntimeError("an out-of-core collection reads its vectors from the records, and this one was given none")
        if not keys:
            return [], np.zeros((0, self.dimension), dtype=np.float32)
        return self._rows(keys)

    def present(self, keys: Sequence[str]) -> tuple[list[str], np.ndarray]:
        with self._lock.reading():
            wanted = [key for key in keys if stable_int_id(key) in self._ids]
        return self._exact(wanted)

    def digest(self) -> str:
        """CRC-32 of the ids and of the serialised index (codes, quantizer and id map)."""
        import faiss

        with self._lock.reading():
            crc = _Crc()
            faiss.write_index(self._index, faiss.PyCallbackIOWriter(crc))  # type: ignore[attr-defined]
            ids = zlib.crc32("\n".join(self._ids.values()).encode("utf-8"))
            return f"{DIGEST_PREFIX}{self._index.ntotal}:{ids:08x}:{crc.value:08x}"


class _Crc:
    value = 0

    def __call__(self, block: bytes) -> int:
        self.value = zlib.crc32(block, self.value)
        return len(block)


def is_out_of_core(index: Any) -> bool:
    """Whether a faiss index read from a snapshot holds an out-of-core collection's codes."""
    import faiss

    inner = getattr(faiss.downcast_index(index), "index", None)
    return inner is not None and isinstance(faiss.downcast_index(inner), (faiss.IndexPQ, faiss.IndexPQFastScan))


def recorded_out_of_core(recorded: Any) -> bool:
    """Whether the records' entry for a collection's snapshot (its generation and digest) says
    the snapshot was written out of core: what ``rhizome repair`` keeps, though the bare store
    it opens is not told which collections an index keeps so."""
    return isinstance(recorded, dict) and str(recorded.get("digest", "")).startswith(DIGEST_PREFIX)


def blocks_of(rows: Iterator[tuple[str, bytes]], dimension: int) -> Iterator[tuple[list[str], np.ndarray]]:
    """``(keys, vectors)`` of :data:`BLOCK` rows at a time from ``(id, vector bytes)`` rows."""
    keys: list[str] = []
    data: list[bytes] = []
    for key, blob in rows:
        keys.append(key)
        data.append(blob)
        if len(keys) == BLOCK:
            yield keys, np.frombuffer(b"".join(data), dtype=np.float32).reshape(len(keys), dimension)
            keys, data = [], []
    if keys:
        yield keys, np.frombuffer(b"".join(data), dtype=np.float32).reshape(len(keys), dimension)


__all__ = ["DIGEST_PREFIX", "OUT_OF_CORE_FROM", "OutOfCoreStore", "blocks_of", "is_out_of_core", "recorded_out_of_core"]
