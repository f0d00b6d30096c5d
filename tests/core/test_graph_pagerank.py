"""Tests of rhizome.core.graph.pagerank: graph_to_csr and personalized PageRank."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.graph import (
    Neighbours,
    graph_to_csr,
    local_pagerank,
    pagerank_scores,
    personalized_pagerank,
)

# ------------------------------------------------------------------------------------------
# graph_to_csr
# ------------------------------------------------------------------------------------------


def test_graph_to_csr_matches_networkx():
    graph = nx.gnp_random_graph(12, 0.3, seed=5, directed=True)
    for i, (u, v) in enumerate(graph.edges):
        graph[u][v]["weight"] = 0.5 + i
    matrix, nodes = graph_to_csr(graph)
    assert sp.issparse(matrix) and matrix.format == "csr"
    expected = nx.to_scipy_sparse_array(graph, nodelist=nodes, weight="weight")
    np.testing.assert_allclose(matrix.toarray(), expected.toarray())


def test_graph_to_csr_undirected_self_loops_multi_and_subsets():
    graph = nx.MultiGraph()
    graph.add_edge("a", "b", weight=1.0)
    graph.add_edge("a", "b", weight=2.0)
    graph.add_edge("b", "c")  # missing weight counts as 1
    graph.add_edge("c", "c", weight=5.0)
    matrix, nodes = graph_to_csr(graph)
    assert nodes == ["a", "b", "c"]
    np.testing.assert_allclose(matrix.toarray(), [[0, 3, 0], [3, 0, 1], [0, 1, 5]])
    sub, order = graph_to_csr(graph, nodes=["c", "a"])
    assert order == ["c", "a"]
    np.testing.assert_allclose(sub.toarray(), [[5, 0], [0, 0]])
    unweighted, _ = graph_to_csr(graph, weight=None)
    np.testing.assert_allclose(unweighted.toarray(), [[0, 2, 0], [2, 0, 1], [0, 1, 1]])
    with pytest.raises(InvalidInputError):
        graph_to_csr(graph, nodes=["a", "zzz"])
    with pytest.raises(InvalidInputError):
        graph_to_csr(graph, nodes=["a", "a"])


# ------------------------------------------------------------------------------------------
# personalized PageRank
# ------------------------------------------------------------------------------------------


def random_weighted_graph(directed: bool) -> nx.Graph:
    rng = np.random.default_rng(0)
    graph = nx.gnp_random_graph(30, 0.12, seed=1, directed=directed)
    for u, v in graph.edges:
        graph[u][v]["weight"] = float(rng.uniform(0.1, 3.0))
    graph.add_edge(30, 30, weight=2.0)  # self-loop, otherwise isolated
    graph.add_node(31)  # isolated: a dangling node
    if directed:
        graph.add_edge(0, 32, weight=1.5)  # a sink: another dangling node
    return graph


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_ppr_matches_networkx(directed, damping):
    graph = random_weighted_graph(directed)
    rng = np.random.default_rng(3)
    seeds = {n: float(rng.uniform(0.1, 1.0)) for n in graph if n % 4 == 0}
    ours = pagerank_scores(graph, seeds, damping=damping, tol=1e-12, max_iter=1000)
    reference = nx.pagerank(
        graph, alpha=damping, personalization=seeds, tol=1e-12, max_iter=1000, weight="weight"
    )
    assert set(ours) == set(reference)
    for node in graph:
        assert ours[node] == pytest.approx(reference[node], abs=1e-6)
    assert sum(ours.values()) == pytest.approx(1.0, abs=1e-12)


def test_ppr_on_matrix_sums_to_one_and_normalises_personalization():
    graph = random_weighted_graph(directed=True)
    matrix, nodes = graph_to_csr(graph)
    p = np.zeros(len(nodes))
    p[[0, 5, 9]] = [1.0, 2.0, 3.0]
    scores = personalized_pagerank(matrix, p)
    assert scores.shape == (len(nodes),)
    assert scores.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(scores >= 0)
    np.testing.assert_allclose(personalized_pagerank(matrix, 7.0 * p), scores, atol=1e-12)
    np.testing.assert_allclose(personalized_pagerank(matrix.toarray(), p), scores, atol=1e-12)
    np.testing.assert_allclose(personalized_pagerank(sp.coo_matrix(matrix), p), scores, atol=1e-12)


def test_ppr_mass_concentrates_near_the_seed():
    path = nx.path_graph(8)
    scores = pagerank_scores(path, {0: 1.0})
    values = [scores[n] for n in range(8)]
    assert values == sorted(values, reverse=True)
    assert values[0] > 0.5  # with damping 0.5 the seed keeps most of the mass

    graph = nx.planted_partition_graph(2, 15, 0.8, 0.02, seed=6)
    seed_block, other_block = graph.graph["partition"]
    seed = min(seed_block)
    scores = pagerank_scores(graph, {seed: 1.0})
    assert max(scores, key=scores.get) == seed
    assert sum(scores[n] for n in seed_block) > 0.9
    assert sum(scores[n] for n in other_block) < 0.1


def test_ppr_damping_zero_returns_personalization():
    matrix, _ = graph_to_csr(nx.cycle_graph(4))
    p = np.array([1.0, 0.0, 3.0, 0.0])
    np.testing.assert_allclose(personalized_pagerank(matrix, p, damping=0.0), p / 4.0)


def test_ppr_rejects_bad_input():
    matrix, nodes = graph_to_csr(nx.path_graph(4))
    with pytest.raises(InvalidInputError):
        personalized_pagerank(matrix, np.zeros(4))
    with pytest.raises(InvalidInputError):
        personalized_pagerank(matrix, np.array([1.0, -1.0, 0.0, 0.0]))
    with pytest.raises(InvalidInputError):
        personalized_pagerank(matrix, np.array([1.0, np.nan, 0.0, 0.0]))
    with pytest.raises(InvalidInputError):
        personalized_pagerank(matrix, np.ones(3))
    with pytest.raises(InvalidInputError):
        personalized_pagerank(sp.csr_matrix(np.ones((3, 4))), np.ones(3))
    with pytest.raises(InvalidInputError):
        personalized_pagerank(sp.csr_matrix(-np.eye(2)), np.ones(2))
    with pytest.raises(InvalidInputError):
        pagerank_scores(nx.path_graph(4), {})
    with pytest.raises(InvalidInputError):
        pagerank_scores(nx.path_graph(4), {0: 0.0, 1: 0.0})
    with pytest.raises(InvalidInputError):
        pagerank_scores(nx.path_graph(4), {"missing": 1.0})
    for kwargs in ({"damping": 1.0}, {"damping": -0.1}, {"tol": 0.0}, {"max_iter": 0}):
        with pytest.raises(ConfigurationError):
            personalized_pagerank(matrix, np.ones(4), **kwargs)


def test_ppr_warns_when_not_converged():
    matrix, _ = graph_to_csr(nx.cycle_graph(50))
    p = np.zeros(50)
    p[0] = 1.0
    with pytest.warns(RuntimeWarning, match="did not converge"):
        scores = personalized_pagerank(matrix, p, damping=0.99, max_iter=3)
    assert scores.sum() == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------
# the local walk
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("directed", [False, True])
def test_local_walk_with_no_threshold_is_the_power_iteration(directed):
    graph = random_weighted_graph(directed)
    matrix, nodes = graph_to_csr(graph)
    p = np.zeros(len(nodes))
    p[[0, 4, 9]] = [1.0, 0.5, 2.0]
    exact = personalized_pagerank(matrix, p, tol=1e-13, max_iter=1000)
    local = local_pagerank(Neighbours(matrix), p, epsilon=1e-300, tol=1e-13, max_hops=1000)
    np.testing.assert_allclose(local, exact, atol=1e-10)  # dangling nodes restart in both


def test_local_walk_stops_at_hubs_and_stays_below_the_walk():
    # a star: the hub links to 1,000 leaves; one leaf is seeded with a path beside it
    star = nx.star_graph(1000)
    nx.add_path(star, [1, 1001, 1002])
    matrix, nodes = graph_to_csr(star)
    p = np.zeros(len(nodes))
    p[nodes.index(1)] = 1.0
    exact = personalized_pagerank(matrix, p, tol=1e-12)
    local = local_pagerank(Neighbours(matrix), p, epsilon=1e-3)
    assert np.all(local <= exact + 1e-12)  # mass that stopped is only missing, never moved
    assert local.sum() < 1.0
    leaves = [nodes.index(n) for n in range(2, 1001)]
    assert not local[leaves].any()  # the hub's mass per link is below epsilon: it stays there
    reached = [nodes.index(n) for n in (1, 0, 1001, 1002)]
    assert np.all(local[reached] > 0)
    assert int(np.argmax(local)) == int(np.argmax(exact)) == nodes.index(1)
    # the same walk costs the same whatever else the graph holds: a second star far away
    bigger = nx.disjoint_union(star, nx.star_graph(5000))
    matrix2, _ = graph_to_csr(bigger)
    p2 = np.zeros(matrix2.shape[0])
    p2[nodes.index(1)] = 1.0
    np.testing.assert_allclose(local_pagerank(Neighbours(matrix2), p2, epsilon=1e-3)[: len(nodes)], local)


def test_local_walk_treats_a_node_with_only_zero_weight_links_as_dangling():
    # rows 0 <-> 1 linked; row 2 stores one link, to 0, of weight 0
    matrix = sp.csr_matrix((np.array([1.0, 1.0, 0.0]), np.array([1, 0, 0]), np.array([0, 1, 2, 3])), shape=(3, 3))
    assert matrix.nnz == 3
    p = np.array([0.0, 0.0, 1.0])
    local = local_pagerank(Neighbours(matrix), p, epsilon=1e-300, tol=1e-13, max_hops=1000)
    np.testing.assert_allclose(local, personalized_pagerank(sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0.0]])), p, tol=1e-13))


def test_local_walk_rejects_bad_settings():
    matrix, _ = graph_to_csr(nx.cycle_graph(4))
    with pytest.raises(ConfigurationError):
        local_pagerank(Neighbours(matrix), np.ones(4), epsilon=0)
    with pytest.raises(ConfigurationError):
        local_pagerank(Neighbours(matrix), np.ones(4), tol=-1)
    with pytest.raises(InvalidInputError):
        local_pagerank(Neighbours(matrix), np.zeros(4))
