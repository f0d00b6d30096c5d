"""Steiner trees: Mehlhorn within 2x of the brute-force optimum, the printed MST-pruning
variant, disconnected graphs, pendant terminals."""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.gorag import SteinerSolver, steiner_tree


def brute_force(graph: nx.Graph, terminals: list) -> float:
    others = [n for n in graph if n not in terminals]
    best = float("inf")
    for r in range(len(others) + 1):
        for extra in itertools.combinations(others, r):
            sub = graph.subgraph([*terminals, *extra])
            if nx.is_connected(sub):
                best = min(best, nx.minimum_spanning_tree(sub).size(weight="weight"))
    return best


def random_graph(rng: random.Random, n: int) -> nx.Graph:
    g = nx.gnp_random_graph(n, 0.45, seed=rng.randint(0, 10**9))
    for u, v in g.edges:
        g[u][v]["weight"] = rng.uniform(0.05, 1.0)
    return g.subgraph(max(nx.connected_components(g), key=len)).copy()


def check_tree(result, terminals):
    tree = nx.Graph()
    tree.add_nodes_from(terminals)
    tree.add_weighted_edges_from(result.edges)
    assert nx.is_tree(tree)
    assert set(terminals) <= set(tree)
    # no non-terminal leaf is left
    assert all(tree.degree(n) > 1 for n in tree if n not in terminals)
    assert result.cost == pytest.approx(tree.size(weight="weight"))


@pytest.mark.parametrize("method", ["mehlhorn", "mst_prune"])
def test_random_graphs_against_brute_force(method):
    rng = random.Random(7)
    worst = 0.0
    for _ in range(120):
        g = random_graph(rng, rng.randint(3, 8))
        if len(g) < 2:
            continue
        terminals = rng.sample(sorted(g), rng.randint(2, len(g)))
        result = steiner_tree(g, terminals, method=method)
        check_tree(result, terminals)
        optimum = brute_force(g, terminals)
        assert result.cost >= optimum - 1e-9
        worst = max(worst, result.cost / optimum)
        if method == "mehlhorn":
            leaves = len(terminals)
            assert result.cost <= 2 * (1 - 1 / leaves) * optimum + 1e-9
    assert worst >= 1.0


def test_mst_pruning_has_no_bound_but_mehlhorn_does():
    # a 10-cycle: nine edges of weight 1 and one of 1.01 joining the two terminals
    g = nx.cycle_graph(10)
    for u, v in g.edges:
        g[u][v]["weight"] = 1.0
    g[0][9]["weight"] = 1.01
    assert steiner_tree(g, [0, 9], method="mehlhorn").cost == pytest.approx(1.01)
    assert steiner_tree(g, [0, 9], method="mst_prune").cost == pytest.approx(9.0)


def test_mehlhorn_matches_networkx_on_connected_graphs():
    rng = random.Random(3)
    for _ in range(30):
        g = random_graph(rng, 12)
        terminals = rng.sample(sorted(g), min(4, len(g)))
        if len(terminals) < 2:
            continue
        ours = steiner_tree(g, terminals).cost
        theirs = nx.algorithms.approximation.steiner_tree(g, terminals, weight="weight", method="mehlhorn")
        # both are 2-approximations; on these graphs they agree up to ties
        assert ours == pytest.approx(theirs.size(weight="weight"), rel=0.25)


@pytest.mark.parametrize("method", ["mehlhorn", "mst_prune"])
def test_disconnected_graph_gives_a_forest(method):
    g = nx.Graph()
    g.add_weighted_edges_from([("a", "x", 1.0), ("x", "b", 1.0), ("a", "b", 5.0), ("c", "y", 0.5), ("y", "d", 0.5), ("e", "z", 1.0)])
    result = steiner_tree(g, ["a", "b", "c", "d", "e"], method=method)
    assert sorted(map(sorted, result.groups)) == [["a", "b"], ["c", "d"], ["e"]]
    assert result.cost == pytest.approx(3.0)
    assert {frozenset(e[:2]) for e in result.edges} == {
        frozenset(p) for p in [("a", "x"), ("x", "b"), ("c", "y"), ("y", "d")]
    }


def test_zero_and_one_terminal():
    g = nx.path_graph(4)
    nx.set_edge_attributes(g, 1.0, "weight")
    assert steiner_tree(g, []).edges == [] and steiner_tree(g, []).groups == []
    single = steiner_tree(g, [2])
    assert single.edges == [] and single.groups == [[2]] and single.cost == 0


def test_pendant_terminals_join_through_their_edge():
    # labels A, B joined by a keyword k; p and q hang off A and B (pendants)
    g = nx.Graph()
    g.add_weighted_edges_from([("A", "k", 0.9), ("k", "B", 0.9), ("A", "p", 0.3), ("B", "q", 0.4), ("A", "r", 0.2)])
    solver = SteinerSolver(g, keep=["A", "B"])
    assert "p" not in solver.index and "k" in solver.index
    result = solver.solve(["p", "q"])
    assert result.cost == pytest.approx(0.3 + 0.9 + 0.9 + 0.4)
    assert result.cost == pytest.approx(brute_force(g, ["p", "q"]))
    # a pendant added after the solver was built is handled too
    g.add_edge("B", "s", weight=0.1)
    assert solver.solve(["s", "q"]).cost == pytest.approx(0.5)


def test_bad_input():
    g = nx.Graph()
    g.add_edge("a", "b", weight=0.0)
    with pytest.raises(InvalidInputError):
        SteinerSolver(g)
    g["a"]["b"]["weight"] = 1.0
    with pytest.raises(ConfigurationError):
        SteinerSolver(g, method="kou")
    with pytest.raises(InvalidInputError):
        steiner_tree(g, ["zzz"])
