"""The keyword–label graph and its weights (paper Eqs. 4–8, 14).

Nodes are ``kw:<keyword>`` (``kind="keyword"``) and ``label:<label>`` (``kind="label"``), each
with the round that added it and its ``name``. A keyword–label edge (``kind="keyword"``) weighs
the mean over the texts of the label that yielded the keyword of ``1 − CS`` (Eq. 5), kept as
``cost_sum`` / ``n`` so the mean updates incrementally; a label–label edge (``kind="label"``)
joins each of a round's new labels to every older one (Eqs. 7–8). The graph is a plain
``networkx.Graph``; these functions are the only writers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import networkx as nx

from rhizome.gorag.text import TermStats, correlation_score, normalize_keyword, phrase_count

KW, LABEL = "kw:", "label:"
LABEL_EDGE_MODES = ("printed", "mean")


def keyword_node(v: str) -> str:
    """The node id of keyword ``v``."""
    return KW + v


def label_node(y: str) -> str:
    """The node id of label ``y``."""
    return LABEL + y


def terminal(graph: nx.Graph, v: str, names: Mapping[str, str] | None) -> str | None:
    """The node a query keyword stands for: the label whose normalised name it is (``names``,
    when labels have names; docs/gorag.md, "node ids"), else its keyword node if the graph has it, else
    ``None`` (a keyword the graph lacks, ``V_notexist``)."""
    if names is not None and v in names:
        return label_node(names[v])
    node = keyword_node(v)
    return node if node in graph else None


def add_keyword_edge(graph: nx.Graph, v: str, y: str, cs: float, *, round: int) -> None:
    """Edge (v, y) with weight = mean over the texts of y that yielded v of 1 − CS (Eq. 5);
    the sum and count are kept so the mean updates incrementally."""
    node, label = keyword_node(v), label_node(y)
    if node not in graph:
        graph.add_node(node, kind="keyword", round=round, name=v)
    data = graph.get_edge_data(node, label)
    if data is None:
        graph.add_edge(node, label, kind="keyword", cost_sum=1.0 - cs, n=1, weight=1.0 - cs)
    else:
        data["cost_sum"] += 1.0 - cs
        data["n"] += 1
        data["weight"] = data["cost_sum"] / data["n"]


def add_text_keywords(
    graph: nx.Graph,
    stats: TermStats,
    *,
    position: int,
    length: int,
    keywords: Sequence[str],
    label: str,
    skip: Callable[[str], bool],
    epsilon: float,
    round: int,
) -> list[str]:
    """Link the ``keywords`` of the text at ``position`` of ``T`` (``length`` tokens) to
    ``label``, each weighed by Eq. 4 with the corpus as it is now, except those ``skip``
    rejects (asked one by one, as the edges go in). Returns the keywords linked."""
    padded = stats.texts[position]
    linked = []
    for v in keywords:
        if skip(v):
            continue
        count = max(1, phrase_count(v, padded))
        cs = correlation_score(count, length, stats.n_texts, stats.df(v), epsilon)
        add_keyword_edge(graph, v, label, cs, round=round)
        linked.append(v)
    return linked


def mean_keyword_weight(graph: nx.Graph, y: str) -> float:
    """m(y): the mean weight of label y's keyword edges, 1 when it has none."""
    weights = [d["weight"] for _, _, d in graph.edges(label_node(y), data=True) if d.get("kind") == "keyword"]
    return sum(weights) / len(weights) if weights else 1.0


def add_label_edges(graph: nx.Graph, new: list[str], old: list[str], *, mode: str, epsilon: float) -> int:
    """Connect every new label to every older label (Eqs. 7–8), weights fixed at merge time
    (docs/gorag.md, "label–label refresh"). Printed: (m(y_n) + m(y_o)) / 4; mean: / 2. Returns the edges added."""
    divisor = 4.0 if mode == "printed" else 2.0
    means = {y: mean_keyword_weight(graph, y) for y in [*new, *old]}
    added = 0
    for y_new in new:
        for y_old in old:
            weight = max((means[y_new] + means[y_old]) / divisor, epsilon)
            graph.add_edge(label_node(y_new), label_node(y_old), kind="label", weight=weight)
            added += 1
    return added


def label_links(graph: nx.Graph, node: str) -> dict[str, float]:
    """The labels a node is linked to and the edge weights: a keyword's labels, or for a label
    node itself (a query keyword naming it), that label at weight 0."""
    if node.startswith(LABEL):
        return {node[len(LABEL) :]: 0.0}
    return {
        other[len(LABEL) :]: data["weight"]
        for other, data in graph.adj[node].items()
        if isinstance(other, str) and other.startswith(LABEL)
    }


def evidence(graph: nx.Graph, terminals: list[str], label: str) -> list[str]:
    """The query's terminals linked to ``label`` by an edge, as keywords, strongest (least
    weight) first; the label's own node, when a terminal, comes first as its name."""
    node = label_node(label)
    found = []
    for t in terminals:
        if t == node:
            found.append((0.0, normalize_keyword(label)))
        elif graph.has_edge(t, node) and t.startswith(KW):
            found.append((graph[t][node]["weight"], t[len(KW) :]))
    return [v for _, v in sorted(found)]


__all__ = [
    "KW",
    "LABEL",
    "LABEL_EDGE_MODES",
    "add_keyword_edge",
    "add_label_edges",
    "add_text_keywords",
    "evidence",
    "keyword_node",
    "label_links",
    "label_node",
    "mean_keyword_weight",
    "terminal",
]
