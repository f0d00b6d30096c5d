"""Tests of rhizome.core.graph.leiden: Leiden and hierarchical Leiden."""

from __future__ import annotations

import random
import re
import sys

import networkx as nx
import numpy as np
import pytest

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.graph import (
    DEFAULT_LEIDEN_SEED,
    DEFAULT_MAX_CLUSTER_SIZE,
    DEFAULT_PPR_DAMPING,
    CommunityHierarchy,
    communities_from_membership,
    hierarchical_leiden,
    leiden,
    leiden_library_versions,
    leiden_update,
    modularity,
    ordered_nodes,
)

# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def as_partition(membership: dict) -> set[frozenset]:
    """A membership dict as a set of node sets, independent of community numbering."""
    return {frozenset(c) for c in communities_from_membership(membership)}


def planted_blocks(graph: nx.Graph) -> set[frozenset]:
    return {frozenset(block) for block in graph.graph["partition"]}


def shuffled_copy(graph: nx.Graph, seed: int) -> nx.Graph:
    """The same graph with nodes and edges inserted in a different order."""
    rng = random.Random(seed)
    nodes = list(graph.nodes(data=True))
    edges = list(graph.edges(data=True))
    rng.shuffle(nodes)
    rng.shuffle(edges)
    copy = graph.__class__()
    copy.add_nodes_from(nodes)
    copy.add_edges_from(edges)
    return copy


@pytest.fixture
def planted() -> nx.Graph:
    # 4 blocks of 15 nodes, dense inside (0.7) and sparse between (0.02).
    return nx.planted_partition_graph(4, 15, 0.7, 0.02, seed=42)


@pytest.fixture
def big_community_graph() -> nx.Graph:
    # Blocks of 40, 25, 15 and 8 nodes: three of them exceed the default max size of 10.
    return nx.random_partition_graph([40, 25, 15, 8], 0.5, 0.01, seed=3)


# ------------------------------------------------------------------------------------------
# leiden
# ------------------------------------------------------------------------------------------


def test_defaults_come_from_the_specs():
    assert DEFAULT_LEIDEN_SEED == 0xDEADBEEF  # GraphRAG
    assert DEFAULT_MAX_CLUSTER_SIZE == 10  # GraphRAG
    assert DEFAULT_PPR_DAMPING == 0.5  # HippoRAG


def test_leiden_recovers_planted_partition(planted):
    membership = leiden(planted)
    assert set(membership) == set(planted.nodes)
    assert as_partition(membership) == planted_blocks(planted)


def test_leiden_recovers_weighted_planted_partition():
    graph = nx.random_partition_graph([20, 20, 20], 0.6, 0.1, seed=11)
    rng = random.Random(5)
    blocks = graph.graph["partition"]
    block_of = {n: i for i, block in enumerate(blocks) for n in block}
    for u, v in graph.edges:
        strong = block_of[u] == block_of[v]
        graph[u][v]["weight"] = rng.uniform(5.0, 10.0) if strong else rng.uniform(0.05, 0.2)
    assert as_partition(leiden(graph)) == planted_blocks(graph)


def test_leiden_uses_weights():
    # A 6-cycle is ambiguous; the weights decide which triples belong together.
    ring = nx.cycle_graph(6)
    heavy_a = {(0, 1), (1, 2), (3, 4), (4, 5)}
    heavy_b = {(1, 2), (2, 3), (4, 5), (0, 5)}
    for heavy, expected in (
        (heavy_a, {frozenset({0, 1, 2}), frozenset({3, 4, 5})}),
        (heavy_b, {frozenset({1, 2, 3}), frozenset({4, 5, 0})}),
    ):
        graph = ring.copy()
        for u, v in graph.edges:
            graph[u][v]["w"] = 10.0 if (min(u, v), max(u, v)) in heavy else 0.1
        assert as_partition(leiden(graph, weight="w")) == expected


def test_leiden_is_reproducible_and_insertion_order_independent(planted):
    first = leiden(planted, seed=123)
    assert leiden(planted, seed=123) == first
    for shuffle_seed in range(3):
        assert leiden(shuffled_copy(planted, shuffle_seed), seed=123) == first


def test_leiden_seed_is_honoured():
    # An unstructured graph has many near-optimal partitions; some seeds must pick different
    # ones, otherwise the seed never reaches leidenalg.
    graph = nx.gnp_random_graph(80, 0.08, seed=9)
    results = {tuple(sorted(leiden(graph, seed=s).items())) for s in range(15)}
    assert len(results) > 1
    for s in (0, 7):
        assert leiden(graph, seed=s) == leiden(graph, seed=s)


def test_leiden_numbers_communities_canonically(big_community_graph):
    membership = leiden(big_community_graph)
    labels = sorted(set(membership.values()))
    assert labels == list(range(len(labels)))
    communities = communities_from_membership(membership)
    sizes = [len(c) for c in communities]
    assert sizes == sorted(sizes, reverse=True)
    # keys come back in node order
    assert list(membership) == ordered_nodes(big_community_graph.nodes)


def test_leiden_tie_break_by_first_node():
    # Two equal triangles: the one holding the smallest node is community 0.
    graph = nx.Graph([("x", "y"), ("y", "z"), ("x", "z"), ("a", "b"), ("b", "c"), ("a", "c")])
    membership = leiden(graph)
    assert membership["a"] == 0 and membership["x"] == 1


def test_leiden_empty_isolated_and_edgeless():
    assert leiden(nx.Graph()) == {}
    assert leiden(nx.empty_graph(4)) == {0: 0, 1: 1, 2: 2, 3: 3}
    graph = nx.complete_graph(5)
    graph.add_nodes_from(["lonely", "alone"])
    membership = leiden(graph)
    assert as_partition(membership) == {
        frozenset(range(5)),
        frozenset({"lonely"}),
        frozenset({"alone"}),
    }
    # zero-weight edges are ignored
    zero = nx.Graph()
    zero.add_edge(1, 2, weight=0.0)
    assert as_partition(leiden(zero)) == {frozenset({1}), frozenset({2})}


def test_leiden_directed_graph_sums_reciprocal_edges(planted):
    rng = random.Random(1)
    directed = nx.DiGraph()
    undirected = nx.Graph()
    for u, v in planted.edges:
        w1, w2 = rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0)
        directed.add_edge(u, v, weight=w1)
        directed.add_edge(v, u, weight=w2)
        undirected.add_edge(u, v, weight=w1 + w2)
    assert leiden(directed) == leiden(undirected)


def test_leiden_multigraph_sums_parallel_edges():
    multi = nx.MultiGraph()
    simple = nx.Graph()
    base = nx.planted_partition_graph(3, 8, 0.8, 0.05, seed=4)
    for u, v in base.edges:
        multi.add_edge(u, v, weight=1.0)
        multi.add_edge(u, v, weight=2.0)
        simple.add_edge(u, v, weight=3.0)
    assert leiden(multi) == leiden(simple)


def test_leiden_non_string_node_ids_and_self_loops():
    graph = nx.Graph()
    graph.add_edges_from([((0, 0), (0, 1)), ((0, 1), (1, 1)), ((0, 0), (1, 1))])
    graph.add_edges_from([(10, 11), (11, 12), (10, 12)])
    graph.add_edge("s", "s", weight=4.0)  # self-loop on an otherwise isolated node
    graph.add_edge(10, 10)
    membership = leiden(graph)
    assert set(membership) == set(graph.nodes)
    assert as_partition(membership) == {
        frozenset({(0, 0), (0, 1), (1, 1)}),
        frozenset({10, 11, 12}),
        frozenset({"s"}),
    }


def test_leiden_resolution():
    graph = nx.planted_partition_graph(3, 10, 0.9, 0.1, seed=2)
    assert nx.is_connected(graph)
    assert len(set(leiden(graph, resolution=0.0).values())) == 1
    assert len(set(leiden(graph, resolution=20.0).values())) > 3


def test_leiden_rejects_bad_input():
    with pytest.raises(InvalidInputError):
        leiden({"a": ["b"]})  # type: ignore[arg-type]
    bad = nx.Graph()
    bad.add_edge(1, 2, weight="heavy")
    with pytest.raises(InvalidInputError):
        leiden(bad)
    bad[1][2]["weight"] = -1.0
    with pytest.raises(InvalidInputError):
        leiden(bad)
    bad[1][2]["weight"] = float("nan")
    with pytest.raises(InvalidInputError):
        leiden(bad)
    assert leiden(bad, weight=None) == {1: 0, 2: 0}
    graph = nx.path_graph(3)
    for kwargs in (
        {"seed": -1},
        {"seed": 2**64},
        {"seed": 1.5},
        {"resolution": -0.1},
        {"resolution": float("inf")},
        {"n_iterations": 0},
    ):
        with pytest.raises(ConfigurationError):
            leiden(graph, **kwargs)


def test_leiden_library_versions():
    versions = leiden_library_versions()
    assert set(versions) == {"leidenalg", "igraph"}
    assert all(versions.values())


def test_ordered_nodes_handles_mixed_types():
    assert ordered_nodes([3, 1, 2]) == [1, 2, 3]
    mixed = ordered_nodes(["b", 2, ("t",), "a", 1])
    assert mixed == ordered_nodes([1, "a", ("t",), 2, "b"])  # same result for any input order
    assert mixed == [1, 2, "a", "b", ("t",)]


# ------------------------------------------------------------------------------------------
# hierarchical_leiden
# ------------------------------------------------------------------------------------------


def assert_consistent(hierarchy: CommunityHierarchy, graph: nx.Graph) -> None:
    """Structural invariants every hierarchy must satisfy."""
    all_nodes = set(graph.nodes)
    by_id = {c.id: c for c in hierarchy}
    assert len(by_id) == len(hierarchy)
    for community in hierarchy:
        assert re.fullmatch(r"L\d+-C\d+", community.id)
        assert community.id == f"L{community.level}-C{community.index}"
        assert list(community.nodes) == ordered_nodes(community.nodes)
        assert community.size == len(community.nodes) > 0
        if community.parent is None:
            assert community.level == 0
        else:
            parent = by_id[community.parent]
            assert parent.level == community.level - 1
            assert community.id in parent.children
        if community.children:
            kids = [by_id[child] for child in community.children]
            assert all(kid.parent == community.id for kid in kids)
            assert len(kids) >= 2
            union = [n for kid in kids for n in kid.nodes]
            assert sorted(map(repr, union)) == sorted(map(repr, community.nodes))
    for level, communities in enumerate(hierarchy.levels):
        assert [c.index for c in communities] == list(range(len(communities)))
        assert all(c.level == level for c in communities)
    level0 = [n for c in hierarchy.at_level(0) for n in c.nodes]
    assert len(level0) == len(all_nodes) and set(level0) == all_nodes
    leaves = [n for c in hierarchy.leaves() for n in c.nodes]
    assert len(leaves) == len(all_nodes) and set(leaves) == all_nodes


def test_hierarchy_respects_max_cluster_size(big_community_graph):
    hierarchy = hierarchical_leiden(big_community_graph, max_cluster_size=10)
    assert_consistent(hierarchy, big_community_graph)
    assert hierarchy.num_levels >= 2
    assert all(leaf.size <= 10 for leaf in hierarchy.leaves())
    assert hierarchy.oversized_leaves() == []
    # level 0 is exactly one leiden() run
    assert as_partition({n: c.index for c in hierarchy.at_level(0) for n in c.nodes}) == (
        as_partition(leiden(big_community_graph))
    )
    # the 8-node block fits at once and stays a level-0 leaf
    small = [c for c in hierarchy.at_level(0) if c.size <= 10]
    assert small and all(c.is_leaf for c in small)


def test_hierarchy_helpers(big_community_graph):
    hierarchy = hierarchical_leiden(big_community_graph, max_cluster_size=10)
    leaf_of = hierarchy.leaf_membership()
    assert set(leaf_of) == set(big_community_graph.nodes)
    for node, leaf_id in leaf_of.items():
        path = hierarchy.path(node)
        assert path[-1] == leaf_id
        assert [hierarchy[cid].level for cid in path] == list(range(len(path)))
        for cid in path:
            assert node in hierarchy[cid].nodes
    memberships = hierarchy.memberships()
    assert len(memberships) == hierarchy.num_levels
    assert set(memberships[0]) == set(big_community_graph.nodes)
    deepest = hierarchy.num_levels - 1
    partial = hierarchy.membership(deepest)
    full = hierarchy.membership(deepest, carry_leaves=True)
    assert set(partial) < set(full) == set(big_community_graph.nodes)
    assert full == leaf_of  # at the deepest level, carrying leaves gives the leaves
    for node, cid in partial.items():
        assert hierarchy[cid].level == deepest and node in hierarchy[cid].nodes
    records = hierarchy.to_records()
    assert [r["id"] for r in records] == [c.id for c in hierarchy]
    assert isinstance(records[0]["nodes"], list)
    assert "L0-C0" in hierarchy and "L99-C0" not in hierarchy
    with pytest.raises(KeyError):
        hierarchy["L99-C0"]
    with pytest.raises(KeyError):
        hierarchy.path("not a node")


def test_hierarchy_is_reproducible(big_community_graph):
    first = hierarchical_leiden(big_community_graph)
    assert hierarchical_leiden(big_community_graph) == first
    assert hierarchical_leiden(shuffled_copy(big_community_graph, 8)) == first


def test_hierarchy_terminates_on_unsplittable_clique():
    # No split of a clique improves modularity, so K_30 stays one oversized leaf.
    graph = nx.complete_graph(30)
    hierarchy = hierarchical_leiden(graph, max_cluster_size=10)
    assert_consistent(hierarchy, graph)
    assert len(hierarchy) == 1
    (leaf,) = hierarchy.leaves()
    assert leaf.id == "L0-C0" and leaf.size == 30
    assert hierarchy.oversized_leaves() == [leaf]


def test_hierarchy_clique_inside_larger_graph():
    # Three K_15 cliques in a chain, plus a 4-node tail: each clique is found at level 0,
    # cannot be split further and stays an oversized leaf.
    graph = nx.Graph()
    for k in range(3):
        graph.add_edges_from(nx.complete_graph(range(15 * k, 15 * k + 15)).edges)
    graph.add_edges_from([(14, 15), (29, 30), (44, 45), (45, 46), (46, 47), (47, 48)])
    hierarchy = hierarchical_leiden(graph, max_cluster_size=10)
    assert_consistent(hierarchy, graph)
    assert hierarchy.num_levels == 1
    assert {leaf.size for leaf in hierarchy.oversized_leaves()} == {15}
    assert all(leaf.size <= 10 for leaf in hierarchy.leaves() if leaf.size != 15)


def test_hierarchy_max_levels_caps_depth(big_community_graph):
    one = hierarchical_leiden(big_community_graph, max_levels=1)
    assert one.num_levels == 1
    assert as_partition({n: c.index for c in one for n in c.nodes}) == as_partition(
        leiden(big_community_graph)
    )
    assert one.oversized_leaves()  # the 40-node block had no chance to split
    two = hierarchical_leiden(big_community_graph, max_levels=2)
    assert two.num_levels <= 2
    assert_consistent(two, big_community_graph)


def test_hierarchy_empty_and_isolated():
    empty = hierarchical_leiden(nx.Graph())
    assert len(empty) == 0 and empty.num_levels == 0
    assert empty.leaves() == [] and empty.levels == [] and empty.memberships() == []
    graph = nx.empty_graph(["a", "b", "c"])
    hierarchy = hierarchical_leiden(graph)
    assert_consistent(hierarchy, graph)
    assert [c.nodes for c in hierarchy] == [("a",), ("b",), ("c",)]
    assert all(c.is_leaf and c.level == 0 for c in hierarchy)


def test_hierarchy_directed_graph(big_community_graph):
    directed = big_community_graph.to_directed()  # both directions, weight 1 each
    hierarchy = hierarchical_leiden(directed)
    assert_consistent(hierarchy, directed)
    assert all(leaf.size <= 10 for leaf in hierarchy.leaves())


def test_hierarchy_rejects_bad_parameters():
    graph = nx.path_graph(4)
    for kwargs in ({"max_cluster_size": 0}, {"max_levels": 0}, {"max_cluster_size": 2.5}):
        with pytest.raises(ConfigurationError):
            hierarchical_leiden(graph, **kwargs)


def _random_weighted(seed: int, n: int = 80, m: int = 500) -> nx.Graph:
    rng = random.Random(seed)
    graph = nx.Graph()
    for _ in range(m):
        u, v = rng.randrange(n), rng.randrange(n)
        if u != v:
            w = graph[f"n{u:02d}"][f"n{v:02d}"]["weight"] if graph.has_edge(f"n{u:02d}", f"n{v:02d}") else 0.0
            graph.add_edge(f"n{u:02d}", f"n{v:02d}", weight=w + rng.random() + 0.1)
    return graph


def test_weighted_edges_equal_the_networkx_graph_they_come_from():
    from rhizome.core.graph import WeightedEdges, hierarchical_leiden

    graph = _random_weighted(3)
    triples = [(u, v, d["weight"]) for u, v, d in graph.edges(data=True)]
    # each edge split in two parallel halves, one of them reversed: summed back into one
    halves = [(u, v, w / 2) for u, v, w in triples] + [(v, u, w / 2) for u, v, w in triples]
    edges = WeightedEdges.from_edges(halves)
    same = WeightedEdges.from_networkx(graph)
    assert edges.nodes == same.nodes and (edges.edges.src == same.edges.src).all() and (edges.edges.dst == same.edges.dst).all()
    assert abs(edges.edges.weight - same.edges.weight).max() < 1e-9
    assert edges.degree() == dict(graph.degree())
    assert [c.nodes for c in hierarchical_leiden(edges, max_cluster_size=8)] == [c.nodes for c in hierarchical_leiden(graph, max_cluster_size=8)]
    members = sorted(graph)[::3]
    sub = edges.subgraph(members)
    assert sub.nodes == tuple(sorted(members)) and sub.number_of_edges() == graph.subgraph(members).number_of_edges()
    with pytest.raises(InvalidInputError):
        WeightedEdges.from_edges([("a", "b", -1.0)])
    # the same edges as positions into a list of the nodes in another order
    shuffled = sorted(graph, key=lambda n: n[::-1])
    at = {n: i for i, n in enumerate(shuffled)}
    positions = WeightedEdges.from_positions(
        shuffled, np.array([at[u] for u, _, _ in halves]), np.array([at[v] for _, v, _ in halves]), np.array([w for *_, w in halves])
    )
    assert positions.nodes == edges.nodes and (positions.edges.src == edges.edges.src).all() and (positions.edges.dst == edges.edges.dst).all()
    assert (positions.edges.weight == edges.edges.weight).all()
    with pytest.raises(InvalidInputError):
        WeightedEdges.from_positions(["a", "b"], np.array([0]), np.array([1]), np.array([np.nan]))


def test_a_collapsed_update_moves_what_the_whole_graph_update_moves():
    from rhizome.core.graph import WeightedEdges, leiden_update
    from rhizome.core.index.hierarchy import update_collapsed

    for seed in range(4):
        graph = _random_weighted(seed)
        initial = {n: f"g{c}" for n, c in leiden(graph, seed=seed).items()}
        rng = random.Random(seed)
        movable = set(rng.sample(sorted(graph), 12))
        for n in sorted(movable)[:4]:  # a few start elsewhere, as after an insert
            initial[n] = f"g{rng.randrange(3)}"
        edges = WeightedEdges.from_networkx(graph)
        whole, q_whole = leiden_update(edges, initial, movable=movable, seed=seed)
        collapsed, q_collapsed = update_collapsed(edges, initial, movable, seed=seed)
        fixed = [n for n in graph if n not in movable]
        # the fixed nodes keep their groups in both, and the modularity reported is the graph's
        def groups(membership: dict, fixed: list = fixed) -> set[frozenset]:
            found: dict = {}
            for n in fixed:
                found.setdefault(membership[n], set()).add(n)
            return {frozenset(g) for g in found.values()}

        for membership in (whole, collapsed):
            assert groups(membership) == groups(initial)
        start, _ = leiden_update(edges, collapsed, movable=set(), seed=seed)
        assert abs(q_collapsed - nx.community.modularity(graph, communities_from_membership(collapsed))) < 1e-9
        assert as_partition(start) == as_partition(collapsed)
        assert q_collapsed >= q_whole - 0.02  # as good as the update on the whole graph


def test_modularity_of_a_partition(planted):
    graph = planted
    for u, v in graph.edges:
        graph[u][v]["weight"] = 1.0 + (hash((u, v)) % 3)
    part = leiden(graph)
    expected = nx.community.modularity(graph, communities_from_membership(part), weight="weight")
    assert modularity(graph, part) == pytest.approx(expected)
    assert modularity(graph, part) == pytest.approx(leiden_update(graph, part, movable=set())[1])
    lone = next(iter(graph))  # a node without a label is a community of its own
    alone = {n: c for n, c in part.items() if n != lone}
    singled = [[lone], *[[n for n in c if n != lone] for c in communities_from_membership(part)]]
    assert modularity(graph, alone) == pytest.approx(nx.community.modularity(graph, [c for c in singled if c], weight="weight"))
    assert modularity(nx.empty_graph(3), {}) == 0.0


def test_seeded_leiden_runs_in_threads_give_the_sequential_answers():
    """igraph's random generator is process-wide: concurrent seeded runs must not share it."""
    from concurrent.futures import ThreadPoolExecutor

    graph = nx.gnp_random_graph(300, 0.02, seed=5)  # no clear communities: each seed differs
    seeds = list(range(1, 9))
    alone = [leiden(graph, seed=s) for s in seeds]
    assert len({tuple(sorted(p.items())) for p in alone}) == len(seeds)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads swap often, between any two lines of a run
    try:
        with ThreadPoolExecutor(4) as pool:
            together = list(pool.map(lambda s: leiden(graph, seed=s), seeds * 8))
    finally:
        sys.setswitchinterval(switch)
    assert together == alone * 8
