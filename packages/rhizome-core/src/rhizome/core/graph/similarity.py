"""k-nearest-neighbour similarity pairs: the candidate edges of synonymy and entity resolution.

HippoRAG links entities whose embeddings are close ("synonymy edges": each entity's nearest
neighbours above a cosine threshold, the edge weighted by the score), and entity resolution needs
the same list of close pairs as merge candidates. :func:`knn_similarity_pairs` computes it with an
exact faiss inner-product search over L2-normalised vectors, in batches of queries, so memory
stays bounded by the vectors themselves plus one batch of neighbour lists (plus the pairs found).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.graph._common import NodeId, _check_positive_int, ordered_nodes

DEFAULT_SIMILARITY_TOP_K = 2047
"""Neighbours searched per item; HippoRAG v2's ``synonymy_edge_topk=2047``
(``utils/config_utils.py``, v2 defaults)."""

DEFAULT_SIMILARITY_THRESHOLD = 0.8
"""Smallest cosine similarity kept; HippoRAG's ``sim_threshold`` / ``synonymy_edge_sim_threshold``
of 0.8 in v1 and v2."""

_NORM_TOLERANCE = 1e-3
"""How far a vector's L2 norm may be from 1 (float16-rounded embeddings are about 1e-3 off)."""

_BATCH_ENTRIES = 2**21
"""Neighbour-list entries searched per batch (score float32 + id int64: about 25 MB)."""

_MAX_BATCH = 4096
"""Most queries per batch; faiss blocks its own BLAS calls by 4096 queries as well."""


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool):
        raise ConfigurationError(f"threshold must be a number, got {threshold!r}.")
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise ConfigurationError(f"threshold must be a number, got {threshold!r}.") from None
    if not math.isfinite(value) or not -1.0 <= value <= 1.0:
        raise ConfigurationError(
            f"threshold must be a cosine similarity between -1 and 1, got {threshold!r}. "
            f"HippoRAG's synonymy edges use {DEFAULT_SIMILARITY_THRESHOLD}."
        )
    return value


def _check_ids(ids: Any) -> list[NodeId]:
    if isinstance(ids, (str, bytes)) or not (
        isinstance(ids, Sequence) or (isinstance(ids, np.ndarray) and ids.ndim == 1)
    ):
        raise InvalidInputError(
            f"ids must be a sequence (list, tuple or 1-D array) with one id per vector, in the "
            f"order of the vectors; got {type(ids).__name__}."
        )
    items = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
    seen: set[NodeId] = set()
    for item in items:
        try:
            duplicate = item in seen
        except TypeError:
            raise InvalidInputError(
                f"ids must be hashable (strings, ints, tuples, ...), got {item!r}."
            ) from None
        if duplicate:
            raise InvalidInputError(
                f"ids lists {item!r} more than once; give each vector its own id (merge "
                f"duplicate items, or keep one vector per id) before searching for pairs."
            )
        seen.add(item)
    return items


def _check_vectors(vectors: Any, n: int) -> np.ndarray:
    """The vectors as a C-contiguous float32 ``n x d`` array, checked to be unit length."""
    array = np.asarray(vectors)
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)
    ):
        raise InvalidInputError(
            f"vectors must be a numeric array (float32, one row per id), got dtype {array.dtype}."
        )
    if n == 0 and array.size == 0:
        return np.empty((0, array.shape[-1] if array.ndim == 2 else 0), dtype=np.float32)
    if array.ndim != 2:
        raise InvalidInputError(
            f"vectors must be a 2-D array of shape (number of ids, dimension), got shape "
            f"{array.shape}. Stack the embeddings into one matrix, one row per id."
        )
    if array.shape[0] != n:
        raise InvalidInputError(
            f"vectors has {array.shape[0]} rows but there are {n} ids; pass exactly one vector "
            f"per id, in the same order."
        )
    if array.shape[1] == 0:
        raise InvalidInputError("vectors have dimension 0; embed the items first.")
    matrix = np.ascontiguousarray(array, dtype=np.float32)
    if not np.all(np.isfinite(matrix)):
        raise InvalidInputError(
            "vectors hold NaN or infinite values (or values too large for float32); re-embed "
            "those items or drop them."
        )
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    off = np.flatnonzero(np.abs(norms - 1.0) > _NORM_TOLERANCE)
    if off.size:
        first = int(off[0])
        raise InvalidInputError(
            f"{off.size} vector(s) are not L2-normalised, e.g. row {first} has norm "
            f"{norms[first]:.6g}; cosine similarity needs unit vectors. Normalise them first "
            f"(vectors / np.linalg.norm(vectors, axis=1, keepdims=True)) and drop zero vectors."
        )
    return matrix


def unit_rows(vectors: Any) -> np.ndarray:
    """``vectors`` as contiguous float32 rows of norm 1 (zero rows stay zero), for cosine
    similarity by inner product (ArchRAG's layers and its C-HNSW, HippoRAG's synonymy edges)."""
    array = np.ascontiguousarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise InvalidInputError(f"expected a 2-D array of vectors, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.ascontiguousarray(array / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def knn_similarity_pairs(
    ids: Sequence[NodeId],
    vectors: Any,
    *,
    k: int = DEFAULT_SIMILARITY_TOP_K,
    threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    batch_size: int | None = None,
) -> list[tuple[NodeId, NodeId, float]]:
    """Pairs of items that are among each other's ``k`` nearest neighbours and similar enough.

    For every item, its ``k`` nearest neighbours by cosine similarity (the item itself excluded)
    are searched exactly with ``faiss.IndexFlatIP``; a neighbour whose score is at least
    ``threshold`` forms a pair with the item. The relation is not symmetric (``b`` can be among
    ``a``'s neighbours and not the reverse), so a pair is kept when *either* item finds the other;
    each unordered pair appears once, with the higher of its two scores (the two can differ in the
    last float32 bit).

    This is HippoRAG's synonymy-edge search: v2 searches
    ``synonymy_edge_topk=2047`` neighbours of every entity and keeps those with score >=
    ``synonymy_edge_sim_threshold=0.8`` (v1: ``sim_threshold=0.8``) as edges weighted by the
    score; the defaults here are those numbers. Differences to know: HippoRAG's 2047 includes the
    entity itself, ours does not; HippoRAG v2 also stops after about 100 synonyms per node and
    skips entities with at most 2 alphanumeric characters, so pass ``k=100`` and filter the ids
    to reproduce that. ``k`` larger than the number of other items is capped to it.

    Memory: faiss holds a copy of the vectors (``n * d * 4`` bytes, 154 MB for 100k x 384) and
    the search runs ``batch_size`` queries at a time, each returning ``k + 1`` neighbours, so the
    search itself needs about ``batch_size * (k + 1) * 12`` bytes (25 MB by default) on top of
    the pairs found.

    Determinism: the same ids and vectors in the same order give the same pairs, scores and order
    on the same faiss/BLAS build. faiss breaks ties between equal scores by row index, so when
    neighbours tie at the ``k``-th place, which of them is kept can depend on input order.

    Args:
        ids: One distinct hashable id per vector, e.g. entity names.
        vectors: ``n x d`` array of L2-normalised vectors, row ``i`` belonging to ``ids[i]``
            (float32; other real dtypes are converted). Norms must be within 1e-3 of 1.
        k: Neighbours searched per item (>= 1). Default 2047, HippoRAG v2's
            ``synonymy_edge_topk``.
        threshold: Smallest cosine similarity kept, in [-1, 1]. Default 0.8, HippoRAG's. Scores
            are float32 inner products read as Python floats, so two identical unit vectors can
            score 0.99999994: a threshold of exactly 1.0 may miss exact duplicates.
        batch_size: Queries per faiss search (>= 1). Default: as many as keep one batch's
            neighbour lists near 2**21 entries, at most 4096. It bounds memory, not results
            (up to float32 rounding of the scores).

    Returns:
        ``[(id_a, id_b, score), ...]`` with ``id_a`` before ``id_b`` in node order (plain ``<``
        for ids that compare, such as all strings; see :func:`ordered_nodes` for mixed ids) and
        ``score`` a float. Pairs are listed in input order: by the position in ``ids`` of the
        pair's earlier item, then of its later item. Empty for fewer than two items.

    Raises:
        InvalidInputError: ``ids`` is not a sequence of distinct hashable ids, or ``vectors`` is
            not a numeric ``len(ids) x d`` array of finite unit vectors.
        ConfigurationError: ``k``, ``threshold`` or ``batch_size`` is out of range.
    """
    k = _check_positive_int("k", k)
    threshold = _check_threshold(threshold)
    if batch_size is not None:
        batch_size = _check_positive_int("batch_size", batch_size)
    items = _check_ids(ids)
    low, high, score = _knn_arrays(_check_vectors(vectors, len(items)), k, threshold, batch_size)
    n = len(items)
    if low.size == 0:
        return []

    # Orient each pair by node order of the ids (their input positions only order the list).
    position = {item: i for i, item in enumerate(items)}
    rank = np.empty(n, dtype=np.int64)
    rank[[position[item] for item in ordered_nodes(items)]] = np.arange(n, dtype=np.int64)
    swap = rank[low] > rank[high]
    first_id = np.where(swap, high, low).tolist()
    second_id = np.where(swap, low, high).tolist()
    return [
        (items[a], items[b], s) for a, b, s in zip(first_id, second_id, score.tolist(), strict=True)
    ]


def knn_similarity_arrays(
    vectors: Any,
    *,
    k: int = DEFAULT_SIMILARITY_TOP_K,
    threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    batch_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of :func:`knn_similarity_pairs` as three arrays of row positions and scores.

    ``(low, high, score)``: ``low[i] < high[i]`` are rows of ``vectors`` (int64), ``score[i]``
    their float32 similarity; one entry per unordered pair, with the higher of its two scores,
    ordered by ``low`` then ``high``. Same search, checks and arguments as
    :func:`knn_similarity_pairs`, without the ids; use it when there are millions of pairs,
    which as Python tuples would take about 100 bytes each instead of 20.
    """
    k = _check_positive_int("k", k)
    threshold = _check_threshold(threshold)
    if batch_size is not None:
        batch_size = _check_positive_int("batch_size", batch_size)
    array = np.asarray(vectors)
    return _knn_arrays(_check_vectors(array, array.shape[0] if array.ndim else 0), k, threshold, batch_size)


def _knn_arrays(
    matrix: np.ndarray, k: int, threshold: float, batch_size: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = matrix.shape[0]
    if n < 2:
        return (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32))

    import faiss

    neighbours = min(k, n - 1)
    search_k = neighbours + 1  # one more than wanted: the item itself is among the results
    if batch_size is None:
        batch_size = max(1, min(_MAX_BATCH, _BATCH_ENTRIES // search_k))
    index = faiss.IndexFlatIP(matrix.shape[1])
    index.add(matrix)

    lows: list[np.ndarray] = []
    highs: list[np.ndarray] = []
    found: list[np.ndarray] = []
    for start in range(0, n, batch_size):
        stop = min(start + batch_size, n)
        scores, labels = index.search(matrix[start:stop], search_k)
        at = np.arange(start, stop, dtype=np.int64)[:, None]
        keep = labels != at
        # Normally the item finds itself and drops out; when tied duplicates push it past the
        # (k+1)-th place it is absent, and the last neighbour goes instead, so k remain.
        keep[keep.all(axis=1), -1] = False
        keep &= labels >= 0
        keep &= scores.astype(np.float64) >= threshold
        row_of = np.broadcast_to(at, labels.shape)[keep]
        other = labels[keep].astype(np.int64)
        lows.append(np.minimum(row_of, other))
        highs.append(np.maximum(row_of, other))
        found.append(scores[keep])
    del index
    low = np.concatenate(lows)
    high = np.concatenate(highs)
    score = np.concatenate(found)
    del lows, highs, found

    # One entry per unordered pair, the higher score first, pairs in input order.
    order = np.lexsort((-score, high, low))
    low, high, score = low[order], high[order], score[order]
    first = np.ones(low.size, dtype=bool)
    first[1:] = (low[1:] != low[:-1]) | (high[1:] != high[:-1])
    return low[first], high[first], score[first]


__all__ = [
    "DEFAULT_SIMILARITY_THRESHOLD",
    "DEFAULT_SIMILARITY_TOP_K",
    "knn_similarity_arrays",
    "knn_similarity_pairs",
]
