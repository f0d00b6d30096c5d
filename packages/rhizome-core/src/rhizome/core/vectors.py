"""A faiss vector index with stable string ids, add, replace and remove.

Vectors are L2-normalised, so inner product is cosine similarity. Each string id maps to a
64-bit integer derived from its hash, so the same item keeps the same faiss id across runs and
removal is exact (``IndexIDMap2`` over an exact ``IndexFlatIP``).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rhizome.core.errors import ConfigurationError, IndexFormatError


def stable_int_id(key: str) -> int:
    """A non-negative 63-bit integer id for a string id."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little") & (
        (1 << 63) - 1
    )


# Below this many queries a search runs on one OpenMP thread: waking faiss's thread pool costs
# more than it saves for a handful of queries (measured on 2 cores: one query over 10k vectors
# takes 0.3 ms on one thread against 1.3 ms p50 / 9 ms p95 on two). See docs/benchmarks.md.
SINGLE_THREAD_BELOW = 16

TIE_MARGIN = 16
"""Extra neighbours fetched so that ties at the ``k``-th place are broken by id, not by faiss."""


@contextmanager
def threads_for(queries: int) -> Iterator[None]:
    """faiss on one OpenMP thread while fewer than :data:`SINGLE_THREAD_BELOW` queries are
    searched (or items added one by one) inside the block; on all of them otherwise."""
    import faiss

    if queries >= SINGLE_THREAD_BELOW:
        yield
        return
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)


def _search(index: Any, queries: np.ndarray, k: int, params: Any = None) -> tuple[np.ndarray, np.ndarray]:
    with threads_for(queries.shape[0]):
        return index.search(queries, k, params=params)


def ranked(pairs: list[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    """The best ``k`` of ``(id, score)`` pairs (fetched with :data:`TIE_MARGIN` to spare), best
    first; equal scores (to 6 decimals) ordered by id."""
    pairs.sort(key=lambda p: (-round(p[1], 6), p[0]))
    return pairs[:k]


class VectorStore:
    """Exact cosine search over named vectors."""

    def __init__(self, dimension: int) -> None:
        import faiss

        if dimension < 1:
            raise ConfigurationError("vector dimension must be positive")
        self.dimension = dimension
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        self._ids: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: str) -> bool:
        return stable_int_id(key) in self._ids

    def ids(self) -> list[str]:
        return list(self._ids.values())

    def _check(self, vectors: np.ndarray) -> np.ndarray:
        array = np.ascontiguousarray(vectors, dtype=np.float32)
        if array.ndim == 1:
            array = array.reshape(1, -1)
        if array.shape[1] != self.dimension:
            raise ConfigurationError(
                f"vectors have dimension {array.shape[1]}, this store holds {self.dimension}"
            )
        return array

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Add vectors under ``keys``; an existing key is replaced."""
        array = self._check(vectors)
        if len(keys) != array.shape[0]:
            raise ConfigurationError(f"{len(keys)} ids for {array.shape[0]} vectors")
        if len(set(keys)) != len(keys):
            raise ConfigurationError("duplicate ids in one add")
        int_ids = np.array([stable_int_id(k) for k in keys], dtype=np.int64)
        existing = [i for i in int_ids.tolist() if i in self._ids]
        if existing:
            self._index.remove_ids(np.array(existing, dtype=np.int64))
        self._index.add_with_ids(array, int_ids)
        for key, int_id in zip(keys, int_ids.tolist()):
            self._ids[int_id] = key

    def remove(self, keys: Sequence[str]) -> int:
        """Remove ``keys`` (unknown keys are ignored); returns how many were removed."""
        int_ids = [stable_int_id(k) for k in keys]
        present = [i for i in int_ids if i in self._ids]
        if present:
            self._index.remove_ids(np.array(present, dtype=np.int64))
            for i in present:
                del self._ids[i]
        return len(present)

    def search(self, queries: np.ndarray, k: int, among: Iterable[str] | None = None) -> list[list[tuple[str, float]]]:
        """The ``k`` nearest stored vectors of each query, best first, as ``(id, cosine)``;
        with ``among``, only those ids are searched (unknown ones are ignored). Equal scores (to
        6 decimals) are ordered by id, so results do not depend on the order vectors were added
        in (faiss breaks ties by its internal position)."""
        array = self._check(queries)
        params = None
        size = len(self._ids)
        if among is not None:
            import faiss

            wanted = np.array(sorted({i for i in map(stable_int_id, among) if i in self._ids}), dtype=np.int64)
            size = len(wanted)
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(wanted)) if size else None
        if not size or k < 1:
            return [[] for _ in range(array.shape[0])]
        scores, int_ids = _search(self._index, array, min(k + TIE_MARGIN, size), params)
        return [
            ranked([(self._ids[int(i)], float(s)) for s, i in zip(row_s, row_i) if int(i) != -1], k)
            for row_s, row_i in zip(scores, int_ids)
        ]

    def vectors(self, keys: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``keys`` (KeyError for an unknown key)."""
        out = np.zeros((len(keys), self.dimension), dtype=np.float32)
        for row, key in enumerate(keys):
            int_id = stable_int_id(key)
            if int_id not in self._ids:
                raise KeyError(key)
            out[row] = self._index.reconstruct(int_id)
        return out

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | Path, meta: dict | None = None) -> None:
        """Write the index, its ids and ``meta`` to one ``.npz`` file, atomically (temp + rename),
        so a concurrent reader sees either the old file or the new one, never a mix."""
        import faiss

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = json.dumps({"dimension": self.dimension, "ids": list(self._ids.values()), "meta": meta or {}})
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as handle:
            np.savez(handle, index=faiss.serialize_index(self._index), header=np.frombuffer(header.encode(), dtype=np.uint8))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> tuple[VectorStore, dict]:
        """Read a file written by :meth:`save`; returns the store and its ``meta``."""
        import faiss

        path = Path(path)
        try:
            with np.load(path) as data:
                header = json.loads(data["header"].tobytes().decode())
                index = faiss.deserialize_index(data["index"])
        except (OSError, ValueError, KeyError, RuntimeError, EOFError, zipfile.BadZipFile) as exc:
            raise IndexFormatError(f"cannot read vector file {path}: {exc}") from exc
        store = cls(int(header["dimension"]))
        store._index = index
        store._ids = {stable_int_id(k): k for k in header["ids"]}
        if index.ntotal != len(store._ids):
            raise IndexFormatError(
                f"vector file {path} holds {index.ntotal} vectors but lists {len(store._ids)} ids"
            )
        return store, dict(header.get("meta", {}))


__all__ = ["TIE_MARGIN", "VectorStore", "ranked", "stable_int_id"]
