"""Tests of rhizome.core.graph.similarity: kNN similarity pairs (HippoRAG synonymy edges)."""

from __future__ import annotations

import numpy as np
import pytest

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.graph import (
    DEFAULT_SIMILARITY_THRESHOLD,
    DEFAULT_SIMILARITY_TOP_K,
    knn_similarity_arrays,
    knn_similarity_pairs,
)

# Four unit vectors in the plane. Their cosines, worked out by hand:
#   a·b = 0.6   a·c = 0.8   a·d = 0.0   b·c = 0.48 + 0.48 = 0.96   b·d = 0.8   c·d = 0.6
# Nearest neighbours (best first): a: c .8, b .6, d 0 | b: c .96, d .8, a .6
#                                  c: b .96, a .8, d .6 | d: b .8, c .6, a 0
IDS = ["a", "b", "c", "d"]
VECTORS = np.array([[1.0, 0.0], [0.6, 0.8], [0.8, 0.6], [0.0, 1.0]], dtype=np.float32)


def as_exact(pairs):
    """Pairs with scores rounded to 6 places, for comparison with hand-computed cosines."""
    return [(a, b, round(s, 6)) for a, b, s in pairs]


def unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_force(ids, vectors, k, threshold):
    """The definition, spelled out in float64: each item's k best others, score >= threshold."""
    sims = vectors.astype(np.float64) @ vectors.astype(np.float64).T
    best: dict[tuple[int, int], float] = {}
    for i in range(len(ids)):
        others = [j for j in np.argsort(-sims[i], kind="stable") if j != i][:k]
        for j in others:
            if sims[i, j] >= threshold:
                key = (min(i, j), max(i, j))
                best[key] = max(best.get(key, -2.0), float(sims[i, j]))
    return {tuple(sorted((ids[i], ids[j]))): s for (i, j), s in best.items()}


def test_defaults_come_from_hipporag():
    assert DEFAULT_SIMILARITY_TOP_K == 2047  # HippoRAG v2 synonymy_edge_topk
    assert DEFAULT_SIMILARITY_THRESHOLD == 0.8  # HippoRAG synonymy_edge_sim_threshold


def test_worked_example_k1():
    # k=1: a->c, b->c, c->b, d->b. (a, b) and (c, d) clear the threshold but are nobody's
    # single nearest neighbour, so they are left out; (b, c) is found twice and kept once.
    pairs = knn_similarity_pairs(IDS, VECTORS, k=1, threshold=0.5)
    assert as_exact(pairs) == [("a", "c", 0.8), ("b", "c", 0.96), ("b", "d", 0.8)]
    assert all(isinstance(s, float) for _, _, s in pairs)


def test_worked_example_k2():
    # k=2 adds a->b (.6) and d->c (.6); a·d = 0 is below the threshold whatever k is.
    pairs = knn_similarity_pairs(IDS, VECTORS, k=2, threshold=0.5)
    assert as_exact(pairs) == [
        ("a", "b", 0.6),
        ("a", "c", 0.8),
        ("b", "c", 0.96),
        ("b", "d", 0.8),
        ("c", "d", 0.6),
    ]


def test_thresholds():
    assert as_exact(knn_similarity_pairs(IDS, VECTORS, k=3, threshold=0.7)) == [
        ("a", "c", 0.8),
        ("b", "c", 0.96),
        ("b", "d", 0.8),
    ]
    assert as_exact(knn_similarity_pairs(IDS, VECTORS, k=3, threshold=0.9)) == [("b", "c", 0.96)]
    assert knn_similarity_pairs(IDS, VECTORS, k=3, threshold=0.97) == []
    # -1 keeps every neighbour: all 6 pairs, including the orthogonal (a, d) at 0.
    everything = knn_similarity_pairs(IDS, VECTORS, k=3, threshold=-1.0)
    assert [(a, b) for a, b, _ in everything] == [
        ("a", "b"),
        ("a", "c"),
        ("a", "d"),
        ("b", "c"),
        ("b", "d"),
        ("c", "d"),
    ]
    assert everything[2][2] == pytest.approx(0.0, abs=1e-7)
    # the default threshold is 0.8: the two 0.8 pairs and the 0.96 pair
    assert [(a, b) for a, b, _ in knn_similarity_pairs(IDS, VECTORS)] == [
        ("a", "c"),
        ("b", "c"),
        ("b", "d"),
    ]


def test_k_larger_than_n_is_capped():
    expected = knn_similarity_pairs(IDS, VECTORS, k=3, threshold=0.5)
    assert knn_similarity_pairs(IDS, VECTORS, k=100, threshold=0.5) == expected
    assert knn_similarity_pairs(IDS, VECTORS, k=DEFAULT_SIMILARITY_TOP_K, threshold=0.5) == expected
    assert len(expected) == 5


def test_pairs_are_oriented_by_id_and_listed_in_input_order():
    # Reversed input: the same pairs, each still (smaller id, larger id), listed by the input
    # position of the pair's earlier item (d=0, c=1, b=2, a=3), then of its later item.
    pairs = knn_similarity_pairs(IDS[::-1], VECTORS[::-1], k=2, threshold=0.5)
    assert as_exact(pairs) == [
        ("c", "d", 0.6),
        ("b", "d", 0.8),
        ("b", "c", 0.96),
        ("a", "c", 0.8),
        ("a", "b", 0.6),
    ]
    # integer ids compare as numbers, not as strings
    ints = knn_similarity_pairs([30, 4, 200, 1], VECTORS, k=1, threshold=0.5)
    assert [(a, b) for a, b, _ in ints] == [(30, 200), (4, 200), (1, 4)]
    # mixed id types fall back to node order (by type name, then repr), as the graph functions do
    mixed = knn_similarity_pairs(["s", 7, ("t", 1)], np.eye(3, dtype=np.float32), threshold=-1.0)
    assert [(a, b) for a, b, _ in mixed] == [(7, "s"), ("s", ("t", 1)), (7, ("t", 1))]


def test_duplicate_vectors_pair_with_each_other_and_never_with_themselves():
    dup = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    ids = ["x", "y", "z", "w"]
    pairs = knn_similarity_pairs(ids, dup, k=2, threshold=0.5)
    assert [(a, b) for a, b, _ in pairs] == [("x", "y"), ("x", "z"), ("y", "z")]
    assert all(s == pytest.approx(1.0, abs=1e-6) for _, _, s in pairs)
    # k=1 with three tied duplicates: each one keeps exactly one of the others, never itself,
    # and the tie is resolved the same way on every run
    single = knn_similarity_pairs(ids, dup, k=1, threshold=0.5)
    assert single == knn_similarity_pairs(ids, dup, k=1, threshold=0.5)
    assert all(a != b for a, b, _ in single)
    assert {"x", "y", "z"} == {a for a, _, _ in single} | {b for _, b, _ in single}
    assert all(pair[:2] in {("x", "y"), ("x", "z"), ("y", "z")} for pair in single)


def test_duplicate_ids_are_rejected():
    with pytest.raises(InvalidInputError, match="more than once"):
        knn_similarity_pairs(["a", "b", "a", "d"], VECTORS)


def test_empty_and_single_item():
    assert knn_similarity_pairs([], np.empty((0, 384), dtype=np.float32)) == []
    assert knn_similarity_pairs([], np.empty(0, dtype=np.float32)) == []
    assert knn_similarity_pairs([], []) == []
    assert knn_similarity_pairs(["only"], np.array([[0.0, 1.0]], dtype=np.float32)) == []


def test_bad_shapes_and_values_are_rejected():
    cases = [
        VECTORS[0],  # 1-D
        VECTORS[None],  # 3-D
        VECTORS[:3],  # fewer rows than ids
        np.empty((4, 0), dtype=np.float32),  # dimension 0
        np.array([["x", "y"]] * 4),  # not numeric
        np.array([[1.0, 0.0]] * 3 + [[np.nan, 0.0]], dtype=np.float32),  # NaN
        VECTORS * 2.0,  # not normalised
        np.array([[1.0, 0.0]] * 3 + [[0.0, 0.0]], dtype=np.float32),  # zero vector
    ]
    for vectors in cases:
        with pytest.raises(InvalidInputError):
            knn_similarity_pairs(IDS, vectors)
    with pytest.raises(InvalidInputError, match="not L2-normalised"):
        knn_similarity_pairs(IDS, VECTORS * 2.0)
    with pytest.raises(InvalidInputError):
        knn_similarity_pairs([], VECTORS)  # vectors without ids
    with pytest.raises(InvalidInputError):
        knn_similarity_pairs("abcd", VECTORS)  # a string is not a list of ids
    with pytest.raises(InvalidInputError):
        knn_similarity_pairs({"a", "b", "c", "d"}, VECTORS)  # a set has no order
    with pytest.raises(InvalidInputError):
        knn_similarity_pairs([["a"], ["b"], ["c"], ["d"]], VECTORS)  # unhashable ids


def test_bad_parameters_are_rejected():
    for kwargs in (
        {"k": 0},
        {"k": -1},
        {"k": 2.5},
        {"k": True},
        {"threshold": 1.5},
        {"threshold": -1.01},
        {"threshold": float("nan")},
        {"threshold": "high"},
        {"threshold": True},
        {"batch_size": 0},
    ):
        with pytest.raises(ConfigurationError):
            knn_similarity_pairs(IDS, VECTORS, **kwargs)


def test_other_dtypes_and_array_ids_are_accepted():
    expected = knn_similarity_pairs(IDS, VECTORS, k=2, threshold=0.5)
    as_float64 = knn_similarity_pairs(IDS, VECTORS.astype(np.float64), k=2, threshold=0.5)
    assert as_float64 == expected
    assert knn_similarity_pairs(np.array(IDS), VECTORS, k=2, threshold=0.5) == expected
    assert knn_similarity_pairs(tuple(IDS), VECTORS.tolist(), k=2, threshold=0.5) == expected


@pytest.mark.parametrize("batch_size", [None, 1, 7, 1000])
def test_matches_brute_force_whatever_the_batch_size(batch_size):
    rng = np.random.default_rng(11)
    # 60 loose clusters of 5 in 16 dimensions: many pairs above 0.6, and k cuts some of them
    centers = unit_rows(rng, 60, 16)
    points = np.repeat(centers, 5, axis=0) + 0.35 * unit_rows(rng, 300, 16)
    vectors = (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)
    ids = [f"e{i:03d}" for i in rng.permutation(300)]
    threshold, k = 0.6, 3
    expected = brute_force(ids, vectors, k, threshold)
    pairs = knn_similarity_pairs(ids, vectors, k=k, threshold=threshold, batch_size=batch_size)
    got = {(a, b): s for a, b, s in pairs}
    assert len(got) == len(pairs)  # each unordered pair once
    assert all(a < b for a, b in got)
    assert len(got) > 100
    # float32 scores may land on the other side of the threshold (or swap tied neighbours)
    # only when they are within rounding of it; nothing else may differ
    close = {p for p, s in {**expected, **got}.items() if abs(s - threshold) < 1e-5}
    assert set(got) - close == set(expected) - close
    for pair in set(got) & set(expected):
        assert got[pair] == pytest.approx(expected[pair], abs=1e-5)
    position = {item: i for i, item in enumerate(ids)}
    keys = [tuple(sorted((position[a], position[b]))) for a, b, _ in pairs]
    assert keys == sorted(keys)  # input order


def test_is_deterministic():
    rng = np.random.default_rng(5)
    vectors = unit_rows(rng, 200, 8)
    ids = [f"n{i}" for i in range(200)]
    first = knn_similarity_pairs(ids, vectors, k=4, threshold=0.5)
    assert first == knn_similarity_pairs(ids, vectors, k=4, threshold=0.5)
    assert first == knn_similarity_pairs(list(ids), vectors.copy(), k=4, threshold=0.5)


def test_arrays_hold_the_same_pairs_as_positions():
    rng = np.random.default_rng(3)
    vectors = unit_rows(rng, 150, 8)
    ids = [f"n{i:03d}" for i in rng.permutation(150)]
    pairs = knn_similarity_pairs(ids, vectors, k=5, threshold=0.3)
    low, high, score = knn_similarity_arrays(vectors, k=5, threshold=0.3)
    assert low.dtype == high.dtype == np.int64 and score.dtype == np.float32
    assert bool(np.all(low < high)) and len(pairs) > 50
    keys = list(zip(low.tolist(), high.tolist(), strict=True))
    assert keys == sorted(set(keys))  # one entry per pair, by the earlier row then the later
    as_ids = [(*sorted((ids[a], ids[b])), s) for a, b, s in zip(low.tolist(), high.tolist(), score.tolist(), strict=True)]
    assert as_ids == [(a, b, s) for a, b, s in pairs]  # both list pairs in input order
    worked = knn_similarity_arrays(VECTORS, k=1, threshold=0.0)
    assert [w.tolist() for w in worked[:2]] == [[0, 1, 1], [2, 2, 3]]  # a–c, b–c, b–d
    empty = knn_similarity_arrays(VECTORS[:1])
    assert [w.size for w in empty] == [0, 0, 0]
    with pytest.raises(InvalidInputError):
        knn_similarity_arrays(VECTORS * 2)
    with pytest.raises(ConfigurationError):
        knn_similarity_arrays(VECTORS, k=0)
