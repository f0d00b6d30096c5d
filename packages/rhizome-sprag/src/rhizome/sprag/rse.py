"""Relevant Segment Extraction: chunk values, and the best contiguous segments, exactly and fast.

The documents worth searching are laid end to end as one "meta-document" of chunks. Each chunk
gets a value per query: ``exp(-rank / decay_rate) * relevance - irrelevant_chunk_penalty``
(an unranked chunk: ``-irrelevant_chunk_penalty``), optionally scaled by the chunk's length.
A segment's value is the sum of its chunks' values. Segments are then chosen greedily, as dsRAG
chooses them: the queries take turns; each turn takes the query's most valuable segment that
stays inside one document, overlaps no chosen segment, has at most ``max_length`` chunks and
keeps the chosen chunks within ``overall_max_length``; a query whose best segment is worth less
than ``minimum_value`` is done.

dsRAG finds each turn's best segment by trying every start and end (and, for each, every chosen
segment and document boundary): cubic work per turn. Here each free stretch of the
meta-document (a document, less its chosen segments) knows its own best segment — the
maximum-sum run of at most ``limit`` values, read off its prefix sums for the pairs of
non-negative values at most ``limit`` apart (only ranked chunks can be positive, so a
10,000-chunk document has a few hundred) — kept in a heap per query. A turn pops the best; only the stretch it was cut from is searched
again (its two remainders), and an entry found under a longer ``limit`` than the budget now
allows is searched again only when it is too long. The choice is the same as the exhaustive
search, ties included (the earliest start, then the earliest end, wins).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from rhizome.core.errors import ConfigurationError

SMALL = 64
"""Runs searched with plain loops below this many (start, length) pairs."""


class Segment(NamedTuple):
    """Chunks ``[start, end)`` of the meta-document, their summed value, and the query (position
    in the list of value vectors) that chose them."""

    start: int
    end: int
    value: float
    query: int = 0


def chunk_values(relevance: np.ndarray, rank: np.ndarray, *, decay_rate: float, penalty: float, scale: np.ndarray | None = None) -> np.ndarray:
    """Value of each chunk: ``exp(-rank / decay_rate) * relevance - penalty``, times ``scale``
    (its length factor) where given. An unranked chunk has ``rank = inf`` (value ``-penalty``)."""
    values = np.exp(-np.asarray(rank, dtype=float) / decay_rate) * np.asarray(relevance, dtype=float) - penalty
    return values if scale is None else values * np.asarray(scale, dtype=float)


def best_run(values: np.ndarray, lo: int, hi: int, limit: int) -> Segment | None:
    """The maximum-sum run ``values[s:e]`` with ``lo <= s < e <= hi`` and ``e - s <= limit``
    whose first and last values are not negative (the candidates dsRAG tries; a best run with a
    positive sum never needs a negative end), ties going to the smallest ``s``, then the smallest
    ``e``; ``None`` when no value is >= 0."""
    m = hi - lo
    if m <= 0 or limit <= 0:
        return None
    stretch = values[lo:hi]
    if m * min(limit, m) <= SMALL:  # a few candidates: plain loops beat numpy's per-call cost
        run, plain = None, stretch.tolist()
        for s in range(m):
            total = 0.0
            for e in range(s, min(s + limit, m)):
                total += plain[e]
                if plain[s] >= 0 and plain[e] >= 0 and (run is None or total > run[0]):
                    run = (total, s, e + 1)
        return None if run is None else Segment(lo + run[1], lo + run[2], run[0])
    ends = np.flatnonzero(stretch >= 0)  # where a run may start or end
    if not ends.size:
        return None
    prefix = np.concatenate(([0.0], np.cumsum(stretch)))
    reach = np.searchsorted(ends, ends + limit) - 1  # the last candidate end each start may use
    later = np.arange(ends.size)[:, None] + np.arange(min(limit, ends.size))[None, :]
    sums = np.where(later <= reach[:, None], prefix[ends[np.minimum(later, ends.size - 1)] + 1] - prefix[ends][:, None], -np.inf)
    start, step = divmod(int(np.argmax(sums)), sums.shape[1])  # the first maximum: smallest start, then end
    s, e = int(ends[start]), int(ends[start + step]) + 1
    return Segment(lo + s, lo + e, float(np.sum(stretch[s:e])))


def _turns(queries: int, done: set[int], room: Callable[[], bool]) -> Iterator[int]:
    """The queries taking turns (dsRAG's round-robin), skipping those ``done``, while ``room()``
    and some query is not done."""
    turn = 0
    while room() and len(done) < queries:
        q, turn = turn % queries, turn + 1
        if q not in done:
            yield q


def _used(chosen: list[Segment]) -> int:
    return sum(s.end - s.start for s in chosen)


def best_segments(
    values: Sequence[np.ndarray] | np.ndarray,
    splits: Sequence[int],
    *,
    max_length: int,
    overall_max_length: int,
    minimum_value: float,
) -> list[Segment]:
    """The segments RSE chooses, in the order chosen (see the module docstring).

    ``values``: one vector of chunk values per query (a single vector for one query), all as
    long as the meta-document; ``splits``: where each document ends (exclusive, increasing; the
    last is the meta-document's length), as dsRAG's ``document_splits``."""
    vectors = [np.asarray(v, dtype=float) for v in (values if len(values) and np.ndim(values[0]) else [values])]
    n = len(vectors[0]) if vectors else 0
    ends = [int(s) for s in splits]
    if any(len(v) != n for v in vectors):
        raise ConfigurationError("every query needs one value per chunk of the meta-document")
    if ends and (ends != sorted(ends) or ends[0] < 0 or ends[-1] != n):
        raise ConfigurationError("splits must increase and end at the meta-document's length")
    if max_length < 1 or overall_max_length < 1 or minimum_value < 0:
        raise ConfigurationError("max_length and overall_max_length must be at least 1, minimum_value at least 0")
    free = {(lo, hi) for lo, hi in zip([0, *ends[:-1]], ends) if hi > lo}
    heaps: list[list[tuple[float, int, int, int, int]]] = [[] for _ in vectors]

    def push(q: int, lo: int, hi: int, limit: int) -> None:
        run = best_run(vectors[q], lo, hi, limit)
        if run is not None:
            heapq.heappush(heaps[q], (-run.value, run.start, run.end, lo, hi))

    limit = min(max_length, overall_max_length)
    for q in range(len(vectors)):
        for lo, hi in free:
            push(q, lo, hi, limit)
    chosen: list[Segment] = []
    done: set[int] = set()
    for q in _turns(len(vectors), done, lambda: _used(chosen) < overall_max_length):
        total = _used(chosen)
        limit = min(max_length, overall_max_length - total)
        heap, found = heaps[q], None
        while heap:
            _, s, e, lo, hi = heap[0]
            if (lo, hi) not in free:  # cut by a segment another turn chose
                heapq.heappop(heap)
            elif e - s > limit:  # found under a longer limit than the budget now allows
                heapq.heappop(heap)
                push(q, lo, hi, limit)
            else:
                found = heapq.heappop(heap)
                break
        if found is None or -found[0] < minimum_value:
            done.add(q)
            continue
        _, s, e, lo, hi = found
        chosen.append(Segment(s, e, float(np.sum(vectors[q][s:e])), q))
        total += e - s
        free.remove((lo, hi))
        for piece in ((lo, s), (e, hi)):
            if piece[1] > piece[0]:
                free.add(piece)
                for other in range(len(vectors)):
                    if other not in done:
                        push(other, *piece, min(max_length, overall_max_length - total))
    return chosen


def exhaustive_segments(
    values: Sequence[Sequence[float]], splits: Sequence[int], *, max_length: int, overall_max_length: int, minimum_value: float
) -> list[Segment]:
    """The reference :func:`best_segments` is checked and timed against: dsRAG's search written
    out plainly — each turn tries every start and end (a segment starts and ends on a chunk of
    value >= 0, crosses no document end, overlaps no chosen segment, fits the budget) and keeps
    the first of the most valuable. Cubic in the meta-document's length; for tests and benchmarks."""
    chosen: list[Segment] = []
    done: set[int] = set()
    for q in _turns(len(values), done, lambda: _used(chosen) < overall_max_length):
        v, best, total = values[q], None, _used(chosen)
        for s in range(len(v)):
            for e in range(s + 1, min(s + max_length, len(v)) + 1):
                if v[s] < 0 or v[e - 1] < 0 or total + e - s > overall_max_length:
                    continue
                if any(s < seg.end and e > seg.start for seg in chosen) or any(s < cut < e for cut in splits):
                    continue
                value = float(sum(v[s:e]))
                if best is None or value > best.value:
                    best = Segment(s, e, value, q)
        if best is None or best.value < minimum_value:
            done.add(q)
            continue
        chosen.append(best)
    return chosen


__all__ = ["Segment", "best_run", "best_segments", "chunk_values", "exhaustive_segments"]
