"""Product-quantizer codes of a vector collection: which faiss codes, and how they are trained.

Two kinds of collection scan codes instead of floats and re-rank the best candidates by their
exact cosine: a large in-memory collection (:class:`~rhizome.core.store.vectors.VectorStore`'s
sieve, beside its floats) and an out-of-core one
(:class:`~rhizome.core.store.outofcore.OutOfCoreStore`, its floats on disk). Both take their
codes from here; how many candidates they re-rank is
:func:`~rhizome.core.store.vectors.candidates`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

TRAIN_SAMPLE = 65_536
"""Vectors the product quantizer is trained on (at most)."""
TRAIN_ITERATIONS = 10
"""k-means iterations of each sub-quantizer (faiss: 25); the exact re-ranking makes up for
coarser codes."""
POINTS_PER_CENTROID = 64
"""At most this many training points per centroid (faiss: 256): each sub-quantizer of 16
centroids is trained on 1,024 points at most, of 256 centroids on 16k."""


def plan(dimension: int, sample: int) -> tuple[int, int]:
    """``(m, nbits)``: ``m`` the largest divisor of the dimension up to dimension/8
    (sub-vectors of 8 floats or more), and 8 bits a code (256 centroids) when the training
    sample has the 39 points per centroid faiss asks for, fewer when it is small."""
    m = max(d for d in range(1, dimension // 8 + 1) if dimension % d == 0) if dimension >= 8 else 1
    nbits = max(1, min(8, int(math.log2(max(2, sample // 39)))))
    return m, nbits


def quantizer(dimension: int, sample: int) -> Any:
    """The untrained faiss index of a collection's codes: a 4-bit code for every 2 floats,
    scanned with SIMD lookups (``IndexPQFastScan``: 96 bytes a 384-dimensional vector), when the
    dimension splits so and the sample has the 39 points per centroid faiss asks for; else
    ``IndexPQ`` as :func:`plan` says. On 100k chunks of the synthetic corpus the fast-scan codes
    found as much of the exact top ten as ``IndexPQ``'s 8-bit codes of every 8 floats (48 bytes)
    with the same candidates re-ranked, at a fraction of the scan's CPU (``benchmarks/ann.py``);
    a code for every 4 floats (48 bytes) found less."""
    import faiss

    if dimension % 4 == 0 and sample >= 39 * 16:
        return faiss.IndexPQFastScan(dimension, dimension // 2, 4, faiss.METRIC_INNER_PRODUCT)
    m, nbits = plan(dimension, sample)
    return faiss.IndexPQ(dimension, m, nbits, faiss.METRIC_INNER_PRODUCT)


def trained(dimension: int, sample: np.ndarray) -> Any:
    """:func:`quantizer` trained on ``sample`` (the same sample gives the same codes: faiss's
    k-means starts from a fixed seed), holding no vector yet. On as many OpenMP threads as the
    caller allows (:func:`~rhizome.core.store.vectors.trained_codes` chooses them)."""
    codes = quantizer(dimension, len(sample))
    codes.pq.cp.niter = TRAIN_ITERATIONS
    codes.pq.cp.max_points_per_centroid = POINTS_PER_CENTROID
    codes.train(np.ascontiguousarray(sample, dtype=np.float32))
    return codes


def sample_of(vectors: np.ndarray) -> np.ndarray:
    """Every n-th of ``vectors``, at most :data:`TRAIN_SAMPLE` of them (the same vectors in the
    same order give the same sample)."""
    step = max(1, len(vectors) // TRAIN_SAMPLE)
    return vectors[::step][:TRAIN_SAMPLE]


def remove_ids(index: Any, int_ids: np.ndarray) -> int:
    """``index.remove_ids(int_ids)`` for a faiss ``IndexIDMap`` (or ``IndexIDMap2``) over exact
    vectors or codes; returns how many were removed. Works around a faiss defect (1.15): a
    fast-scan index packs codes in blocks of 32 vectors, and its ``remove_ids`` leaves the freed
    places of the last block holding old codes, which the next ``add`` merges its own codes into,
    so a vector added after a removal could not be found. When a removal leaves the last block
    part full, its vectors are taken out (their codes decoded) and put back: the block is then
    written afresh, with the same codes."""
    import faiss

    removed = int(index.remove_ids(np.ascontiguousarray(int_ids, dtype=np.int64)))
    inner = faiss.downcast_index(index.index)
    if removed and isinstance(inner, faiss.IndexFastScan) and inner.ntotal % inner.bbs:
        start = inner.ntotal - inner.ntotal % inner.bbs
        tail = faiss.vector_to_array(index.id_map)[start:].copy()
        decoded = inner.reconstruct_n(start, len(tail))  # each sub-vector its centroid: encoded again, the same code
        index.remove_ids(tail)
        index.add_with_ids(decoded, tail)
    return removed


__all__ = ["POINTS_PER_CENTROID", "TRAIN_ITERATIONS", "TRAIN_SAMPLE", "plan", "quantizer", "remove_ids", "sample_of", "trained"]
