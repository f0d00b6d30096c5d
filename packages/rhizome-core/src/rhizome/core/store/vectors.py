"""A faiss vector index with stable string ids, add, replace and remove.

Vectors are L2-normalised, so inner product is cosine similarity. Each string id maps to a
64-bit integer derived from its hash, so the same item keeps the same faiss id across runs and
removal is exact (``IndexIDMap2`` over an exact ``IndexFlatIP``).

From :data:`SIEVE_FROM` vectors a collection also keeps a sieve: product-quantizer codes of the
same vectors (:mod:`rhizome.core.store.codes`, 96 bytes a 384-dimensional vector beside its
1,536 of floats). A search scans the codes for :data:`SIEVE_WIDTH` times :func:`candidates`
and re-ranks them by their
exact cosine, computed by faiss from the stored floats as the exact scan computes it, so every
score is the exact one and a true neighbour is missed only when its codes rank it below all the
candidates kept. The sieve is trained when a collection first reaches that size (on its next
save or search), kept up to date by every add and remove, trained again when the collection has
grown fourfold, and saved with the snapshot.

A snapshot written while the opt-in search graphs existed (``RHIZOME_SEARCH_GRAPH_FROM``, faiss
HNSW links beside the vectors, removed once the sieve reached the same speed without their
recall cost) still opens: its graph is not read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rhizome.core.errors import ConfigurationError, IndexFormatError
from rhizome.core.store import codes


@functools.lru_cache(maxsize=1 << 15)
def stable_int_id(key: str) -> int:
    """A non-negative 63-bit integer id for a string id."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little") & (
        (1 << 63) - 1
    )


# Below this many queries a search runs on one OpenMP thread: waking faiss's thread pool costs
# more than it saves for a handful of queries (measured on 2 cores: one query over 10k vectors
# takes 0.3 ms on one thread against 1.3 ms p50 / 9 ms p95 on two). See docs/choices.md.
SINGLE_THREAD_BELOW = 16

TIE_MARGIN = 16
"""Extra neighbours fetched so that ties at the ``k``-th place are broken by id, not by faiss."""

SIEVE_FROM = 10_000
"""Vectors from which a collection in memory is searched through its sieve (see the module
docstring): below, one exact scan costs little more than the sieve's scan and re-ranking."""

SIEVE_WIDTH = 2
"""The sieve re-ranks this many times :func:`candidates` (an out-of-core search reads its
candidates from disk; the sieve's are in memory, so more cost little). On 300k chunks of the
synthetic corpus (hashing vectors, whose many near-equal cosines make codes rank coarsely) 1, 2
and 4 times found 98.4, 99.6 and 100 % of the exact first ten at 4.7, 4.5 and 5.4 ms of CPU,
against 35 ms for the scan; on musique-dev's 19k entity names (MiniLM) once already gave the
exact results. A search whose candidates would be more than a quarter of the collection scans
it whole, and so does a search of :data:`SINGLE_THREAD_BELOW` queries or more (a build's batch:
one blocked scan serves every query there, and re-ranking query by query would cost more)."""

CANDIDATES = 32
"""Candidates re-ranked per wanted neighbour up to the tenth (ten neighbours: ``32 × 10 + 16``
candidates, :func:`candidates`): on 100k chunks of the synthetic corpus, out of core, 8k + 16
found 95-96 % of the exact top ten and 32k + 16 99.3 %, at 3 and 6 ms of CPU a query against 17
ms for the exact scan."""
FURTHER = 8
"""Candidates re-ranked per wanted neighbour past the first ten: a search for the 200 nearest
(the evidence modes' passage seeds) re-ranks ``32 × 10 + 8 × 190 + 16`` = 1,856 candidates
instead of 6,416. On 300k chunks of the synthetic corpus, out of core, 8 per neighbour found
98.4 % of the exact 200 and 99.9 % of their first ten at 21 ms of CPU, against 99.97 % and 100 %
at 72 ms for 32, most of it reading the candidates' vectors from the records."""


def candidates(k: int) -> int:
    """Candidates a search for the ``k`` nearest through codes re-ranks: :data:`CANDIDATES` for
    each of the first ten, :data:`FURTHER` for each one past them, and the tie margin."""
    return CANDIDATES * min(k, 10) + FURTHER * max(0, k - 10) + TIE_MARGIN


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


def trained_codes(dimension: int, sample: np.ndarray) -> Any:
    """:func:`rhizome.core.store.codes.trained`, on every OpenMP thread for a sample of 20k
    vectors or more and on one below (the thread pool costs more than it saves there)."""
    with threads_for(len(sample) if len(sample) >= 20_000 else 0):
        return codes.trained(dimension, sample)


def _search(index: Any, queries: np.ndarray, k: int, params: Any = None) -> tuple[np.ndarray, np.ndarray]:
    with threads_for(queries.shape[0]):
        return index.search(queries, k, params=params)


def ranked(pairs: list[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    """The best ``k`` of ``(id, score)`` pairs (fetched with :data:`TIE_MARGIN` to spare), best
    first; equal scores (to 6 decimals) ordered by id."""
    pairs.sort(key=lambda p: (-round(p[1], 6), p[0]))
    return pairs[:k]


def ranked_found(scores: np.ndarray, ids: np.ndarray, k: int, name: Callable[[int], str]) -> list[tuple[str, float]]:
    """:func:`ranked` of one row of a search (``scores`` and integer ``ids``, ``-1`` for none;
    ``name``: an integer id's string id), without building and sorting every pair: faiss
    returns a row best first, so only runs of scores equal to 6 decimals need ordering by id,
    and only the ids up to the ``k``-th (and the rest of its run) are looked up. The same
    pairs in the same order as :func:`ranked`; a row that is not best first goes through it."""
    found = ids != -1
    if not found.all():
        scores, ids = scores[found], ids[found]
    n = len(scores)
    if n > 1 and not bool(np.all(scores[:-1] >= scores[1:])):  # not best first (NaN included)
        return ranked([(name(i), s) for s, i in zip(scores.tolist(), ids.tolist())], k)
    values = scores.tolist()
    # equal to 6 decimals: only neighbours closer than 2e-6 can be (Python's round, as ranked())
    same = [False] * max(0, n - 1)
    for i in np.flatnonzero(scores[:-1] - scores[1:] <= 2e-6).tolist():
        same[i] = round(values[i], 6) == round(values[i + 1], 6)
    end = min(k, n)
    while 0 < end < n and same[end - 1]:  # the run the k-th pair is in, whole
        end += 1
    pairs = [(name(i), s) for i, s in zip(ids[:end].tolist(), values[:end])]
    start = 0
    for i in range(1, end + 1):
        if i == end or not same[i - 1]:
            if i - start > 1:
                pairs[start:i] = sorted(pairs[start:i], key=lambda p: p[0])
            start = i
    return pairs[:k]


def every_vector(keys: Sequence[str], present: tuple[list[str], np.ndarray]) -> np.ndarray:
    """The vectors of ``present`` (a collection's ``present(keys)``) when it holds every key of
    ``keys``; ``KeyError`` for the first one it lacks (what ``vectors(keys)`` promises)."""
    held, out = present
    if len(held) < len(keys):
        raise KeyError(next(key for key in keys if key not in held))
    return out


class _SharedLock:
    """Many readers at once, or one writer alone; a waiting writer goes before readers that
    arrive after it (a steady stream of searches cannot hold an insert off for ever)."""

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting_writers = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._state:
            while self._writing or self._waiting_writers:
                self._state.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._state:
                self._readers -= 1
                if not self._readers:
                    self._state.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._state:
            self._waiting_writers += 1
            try:
                while self._writing or self._readers:
                    self._state.wait()
            finally:
                self._waiting_writers -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._state:
                self._writing = False
                self._state.notify_all()


class VectorStore:
    """Exact cosine search over named vectors. Safe to search from many threads while another
    adds or removes: faiss releases the GIL while it searches, and an add that grows its
    storage (or a removal that compacts it) under a running search crashed the process, so
    searches share a lock that changes take alone."""

    def __init__(self, dimension: int) -> None:
        import faiss

        if dimension < 1:
            raise ConfigurationError("vector dimension must be positive")
        self.dimension = dimension
        self._index: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))  # or what load() read
        self._ids: dict[int, str] = {}
        self._lock = _SharedLock()
        self._sieve: Any = None  # faiss IndexIDMap over codes of the same vectors, or None
        self._sieve_trained = 0  # vectors the sieve's codes were trained on
        self._exact_only = False  # no sieve, ever (search_exactly)
        self._where: tuple[np.ndarray, np.ndarray] | None = None  # integer ids sorted, and their positions

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: str) -> bool:
        return stable_int_id(key) in self._ids

    def ids(self) -> list[str]:
        with self._lock.reading():
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
        with self._lock.writing():
            self._where = None
            known = np.array([i in self._ids for i in int_ids.tolist()], dtype=bool)
            if known.any():
                self._overwrite(int_ids[known], array[known])
            if not known.all():
                self._index.add_with_ids(array[~known], int_ids[~known])
            if self._sieve is not None:  # an overwritten vector's codes are replaced
                if known.any():
                    codes.remove_ids(self._sieve, int_ids[known])
                with threads_for(len(array)):
                    self._sieve.add_with_ids(array, int_ids)
            for key, int_id in zip(keys, int_ids.tolist()):
                self._ids[int_id] = key

    def _overwrite(self, int_ids: np.ndarray, array: np.ndarray) -> None:
        """Replace stored vectors where they lie. faiss's ``remove_ids`` would compact every
        vector after the first removed one, once per add that replaces anything: an index that
        keeps updating some of its vectors (profiles re-embedded batch after batch) would pay
        for its whole size each time."""
        import faiss

        stored = faiss.vector_to_array(self._index.id_map)
        rows = np.flatnonzero(np.isin(stored, int_ids))
        position = dict(zip(stored[rows].tolist(), rows.tolist()))
        self._floats()[[position[i] for i in int_ids.tolist()]] = array

    def remove(self, keys: Sequence[str]) -> int:
        """Remove ``keys`` (unknown keys are ignored); returns how many were removed."""
        int_ids = [stable_int_id(k) for k in keys]
        with self._lock.writing():
            present = [i for i in int_ids if i in self._ids]
            if present:
                self._where = None
                codes.remove_ids(self._index, np.array(present, dtype=np.int64))
                if self._sieve is not None:
                    codes.remove_ids(self._sieve, np.array(present, dtype=np.int64))
                for i in present:
                    del self._ids[i]
        return len(present)

    def search(self, queries: np.ndarray, k: int, among: Iterable[str] | None = None) -> list[list[tuple[str, float]]]:
        """The ``k`` nearest stored vectors of each query, best first, as ``(id, cosine)``;
        with ``among``, only those ids are searched (unknown ones are ignored). Equal scores (to
        6 decimals) are ordered by id, so results do not depend on the order vectors were added
        in (faiss breaks ties by its internal position)."""
        array = self._check(queries)
        sifted = among is None and len(array) < SINGLE_THREAD_BELOW  # a retriever's few queries, not a build's batch
        if sifted and self._sieve is None and self._wants_sieve():
            with self._lock.writing():
                if self._sieve is None and self._wants_sieve():
                    self._build_sieve()
        with self._lock.reading():
            params = None
            size = len(self._ids)
            if among is not None:
                import faiss

                wanted = np.array(sorted({i for i in map(stable_int_id, among) if i in self._ids}), dtype=np.int64)
                size = len(wanted)
                params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(wanted)) if size else None  # type: ignore[call-arg]  # faiss stubs lack the keyword
            if not size or k < 1:
                return [[] for _ in range(array.shape[0])]
            fetch = min(k + TIE_MARGIN, size)
            if sifted and self._sieve is not None and (want := SIEVE_WIDTH * candidates(k)) <= size // 4:
                scores, int_ids = self._sift(array, fetch, want)
            else:
                scores, int_ids = _search(self._index, array, fetch, params)
            return [ranked_found(row_s, row_i, k, self._ids.__getitem__) for row_s, row_i in zip(scores, int_ids)]

    def _sift(self, array: np.ndarray, fetch: int, want: int) -> tuple[np.ndarray, np.ndarray]:
        """The best ``fetch`` of ``want`` candidates the sieve finds for each query, by their
        exact cosine (faiss's own inner product of the stored floats, as the exact scan's), best
        first: scores and integer ids, as a faiss search returns them. Called with the lock held."""
        import faiss

        _, found = _search(self._sieve, array, want)
        ids_sorted, positions = self._positions()
        flat = self._flat()
        scores = np.full((len(array), fetch), -np.inf, dtype=np.float32)
        int_ids = np.full((len(array), fetch), -1, dtype=np.int64)
        for row, (query, got) in enumerate(zip(array, found)):
            got = got[got != -1]
            if len(got) < want:  # the codes ranked too few (a query of zeros scores every code alike): scanned whole
                row_scores, row_ids = _search(self._index, query.reshape(1, -1), fetch)
                scores[row], int_ids[row] = row_scores[0], row_ids[0]
                continue
            places = np.ascontiguousarray(positions[np.searchsorted(ids_sorted, got)], dtype=np.int64)
            exact = np.empty(len(places), dtype=np.float32)
            query = np.ascontiguousarray(query.reshape(1, -1))
            flat.compute_distance_subset(1, faiss.swig_ptr(query), len(places), faiss.swig_ptr(exact), faiss.swig_ptr(places))
            best = np.argsort(-exact, kind="stable")[:fetch]
            scores[row, : len(best)], int_ids[row, : len(best)] = exact[best], got[best]
        return scores, int_ids

    def _positions(self) -> tuple[np.ndarray, np.ndarray]:
        """The stored integer ids sorted, and each one's row in the exact index (kept until the
        next change). Called with the lock held."""
        import faiss

        if self._where is None:
            stored = faiss.vector_to_array(self._index.id_map)
            order = np.argsort(stored, kind="stable")
            self._where = (stored[order], order)
        return self._where

    def _wants_sieve(self) -> bool:
        """Whether a sieve should be (re)built: the collection holds exact floats and
        :data:`SIEVE_FROM` vectors or more, and has none yet or has grown fourfold since its
        codes were trained (on fewer than the full training sample)."""
        import faiss

        if self._exact_only or len(self._ids) < SIEVE_FROM or not isinstance(self._flat(), faiss.IndexFlat):
            return False
        return self._sieve is None or (self._sieve_trained < codes.TRAIN_SAMPLE and len(self._ids) >= 4 * self._sieve_trained)

    def _build_sieve(self) -> None:
        """Train the sieve's codes on a sample of the stored vectors and encode them all. Called
        with the store's lock held."""
        import faiss

        held = self._floats()
        sample = codes.sample_of(held)
        sieve = faiss.IndexIDMap(trained_codes(self.dimension, sample))
        with threads_for(len(held)):
            sieve.add_with_ids(held, faiss.vector_to_array(self._index.id_map))
        self._sieve, self._sieve_trained = sieve, len(sample)

    @property
    def sieve(self) -> bool:
        """Whether searches scan the sieve's codes and re-rank their candidates (see the module
        docstring)."""
        return self._sieve is not None

    def search_exactly(self) -> None:
        """Scan every vector from now on: no sieve, none built again (for comparing the
        searches)."""
        with self._lock.writing():
            self._sieve, self._exact_only = None, True

    def _flat(self) -> Any:
        import faiss

        return faiss.downcast_index(self._index.index)

    def _floats(self) -> np.ndarray:
        """The stored vectors, one row each in stored order: a view of the exact index's own
        floats, not a copy (writing to it changes them)."""
        import faiss

        n = self._index.ntotal
        return faiss.rev_swig_ptr(self._flat().get_xb(), n * self.dimension).reshape(n, self.dimension)

    def vectors(self, keys: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``keys`` (KeyError for an unknown key)."""
        return every_vector(keys, self.present(keys))

    def present(self, keys: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The keys of ``keys`` held here and their vectors, read under one lock (see
        :meth:`rhizome.core.store.storage.Collection.present`)."""
        import faiss

        with self._lock.reading():
            pairs = [(key, i) for key in keys if (i := stable_int_id(key)) in self._ids]
            held = [key for key, _ in pairs]
            int_ids = np.array([i for _, i in pairs], dtype=np.int64)
            if held and isinstance(self._flat(), faiss.IndexFlat):  # rows copied from the stored floats at once
                ids_sorted, positions = self._positions()
                return held, self._floats()[positions[np.searchsorted(ids_sorted, int_ids)]]
            out = np.zeros((len(held), self.dimension), dtype=np.float32)
            for row, i in enumerate(int_ids.tolist()):
                out[row] = self._index.reconstruct(i)
        return held, out

    def digest(self) -> str:
        """A digest of the (id, vector) pairs as stored, in their stored order: equal for a
        store and its snapshot read back, different when a vector is filed under another id (a
        rotated snapshot) or changed. CRC-32 of the ids and of the vectors, as chunk texts are
        checked (damage, not an adversary, is what it is for: a change slips through with
        probability 2^-32); one pass over the vectors without a copy, about 0.6 ms per MB."""
        import faiss

        with self._lock.reading():
            ids = zlib.crc32(faiss.vector_to_array(self._index.id_map).tobytes())
            vectors = 0
            if self._index.ntotal:
                vectors = zlib.crc32(self._floats().data)
            return f"crc32:{self._index.ntotal}:{ids:08x}:{vectors:08x}"

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | Path, meta: dict | None = None) -> None:
        """Write the index, its ids and ``meta`` to one ``.npz`` file (a ``header`` and an
        ``index`` member, bytes as ``uint8`` arrays, so ``np.load`` reads it too), atomically
        (temp + rename): a concurrent reader sees either the old file or the new one, never a
        mix. faiss writes the index into the file a block at a time, so saving a collection
        never holds a second copy of its vectors."""
        import faiss

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with self._lock.reading():  # the ids and the index of one state
            if self._wants_sieve():
                self._build_sieve()
            header = json.dumps({"dimension": self.dimension, "ids": list(self._ids.values()), "meta": meta or {},
                                 "sieve_trained": self._sieve_trained if self._sieve is not None else 0}).encode()
            int_ids = np.fromiter(self._ids, dtype="<i8", count=len(self._ids)).tobytes()  # so a reader need not hash each id again
            size = _Counter()
            faiss.write_index(self._index, faiss.PyCallbackIOWriter(size))  # type: ignore[attr-defined]  # a first pass only counts the bytes (faiss stubs lack the IO callbacks)
            sieve, sieve_size = self._sieve, _Counter()
            if sieve is not None:
                faiss.write_index(sieve, faiss.PyCallbackIOWriter(sieve_size))  # type: ignore[attr-defined]
            with open(tmp, "wb") as handle:
                with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                    with _member(archive, "header", len(header)) as out:
                        out.write(header)
                    with _member(archive, "int_ids", len(int_ids)) as out:
                        out.write(int_ids)
                    with _member(archive, "index", size.total) as out:
                        faiss.write_index(self._index, faiss.PyCallbackIOWriter(out.write))  # type: ignore[attr-defined]
                    if sieve is not None:
                        with _member(archive, "sieve", sieve_size.total) as out:
                            faiss.write_index(sieve, faiss.PyCallbackIOWriter(out.write))  # type: ignore[attr-defined]
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> tuple[VectorStore, dict]:
        """Read a file written by :meth:`save`; returns the store and its ``meta``. The index is
        read from the file a block at a time, without a copy of it in memory first."""
        import faiss

        path = Path(path)
        try:
            with zipfile.ZipFile(path) as archive:
                with _opened(archive, "header") as stream:
                    header = json.loads(stream.read().decode())
                int_ids = None
                if "int_ids.npy" in archive.namelist():  # written since: each string id's integer id, in the same order
                    with _opened(archive, "int_ids") as stream:
                        int_ids = np.frombuffer(stream.read(), dtype="<i8")
                with _opened(archive, "index") as stream:
                    index = faiss.read_index(faiss.PyCallbackIOReader(stream.read))  # type: ignore[attr-defined]
                sieve = None  # a "graph" member (links of the removed search graphs) is not read
                if "sieve.npy" in archive.namelist():
                    with _opened(archive, "sieve") as stream:
                        sieve = faiss.read_index(faiss.PyCallbackIOReader(stream.read))  # type: ignore[attr-defined]
        except (OSError, ValueError, KeyError, RuntimeError, EOFError, zipfile.BadZipFile) as exc:
            raise IndexFormatError(f"cannot read vector file {path}: {exc}") from exc
        store = cls(int(header["dimension"]))
        store._index = index
        if int_ids is not None and len(int_ids) == len(header["ids"]):
            store._ids = dict(zip(int_ids.tolist(), header["ids"], strict=True))
        else:  # a file written before them: each id hashed again
            store._ids = {stable_int_id(k): k for k in header["ids"]}
        if index.ntotal != len(store._ids):
            raise IndexFormatError(
                f"vector file {path} holds {index.ntotal} vectors but lists {len(store._ids)} ids"
            )
        if sieve is not None:
            if sieve.ntotal != index.ntotal or sieve.d != store.dimension:
                raise IndexFormatError(
                    f"vector file {path} holds a sieve of {sieve.ntotal} codes of dimension {sieve.d} "
                    f"for {index.ntotal} vectors of dimension {store.dimension}"
                )
            store._sieve, store._sieve_trained = sieve, int(header.get("sieve_trained", 0))
        return store, dict(header.get("meta", {}))


class _Counter:
    """A write callback that only counts the bytes it is given."""

    total = 0

    def __call__(self, block: bytes) -> int:
        self.total += len(block)
        return len(block)


class _Sized:
    """A writable member that refuses to end with other than the size its header announced."""

    def __init__(self, stream: Any, size: int) -> None:
        self.stream, self.size, self.written = stream, size, 0

    def write(self, block: bytes) -> int:
        self.written += len(block)
        if self.written > self.size:
            raise IndexFormatError(f"vector file member grew past the {self.size} bytes announced")
        return self.stream.write(block)


@contextmanager
def _member(archive: zipfile.ZipFile, name: str, size: int) -> Iterator[_Sized]:
    """Write ``size`` bytes as the member ``name.npy``: a 1-D ``uint8`` array, as ``np.savez``
    would store them."""
    with archive.open(f"{name}.npy", "w", force_zip64=True) as stream:
        np.lib.format.write_array_header_1_0(stream, {"descr": "|u1", "fortran_order": False, "shape": (size,)})
        out = _Sized(stream, size)
        yield out
        if out.written != size:
            raise IndexFormatError(f"vector file member {name} has {out.written} bytes, {size} announced")


@contextmanager
def _opened(archive: zipfile.ZipFile, name: str) -> Iterator[Any]:
    """The bytes of member ``name.npy`` (a 1-D ``uint8`` array) as a stream, past its header."""
    with archive.open(f"{name}.npy") as stream:
        major, _ = np.lib.format.read_magic(stream)
        read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(stream)
        if dtype != np.uint8 or len(shape) != 1:
            raise ValueError(f"member {name} is not a byte array")
        yield stream


__all__ = ["CANDIDATES", "FURTHER", "SIEVE_FROM", "SIEVE_WIDTH", "TIE_MARGIN", "VectorStore", "candidates", "every_vector",
           "ranked", "stable_int_id", "trained_codes"]
