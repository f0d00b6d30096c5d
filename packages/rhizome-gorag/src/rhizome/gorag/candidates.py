"""Candidate labels of a query: its terminals, the Steiner tree that spans them, the labels of
the tree (plus, for a component with a single terminal, its nearest labels; docs/gorag.md, "0 / 1 terminal"),
and per candidate the shortest-path cost from the terminals that reach it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rhizome.gorag.graph import LABEL, label_node
from rhizome.gorag.steiner import SteinerSolver


def split_keywords(keywords: Sequence[str], terminal: Callable[[str], str | None]) -> tuple[list[str], list[str]]:
    """The nodes the keywords stand for (``V_exist``, de-duplicated, in order) and the keywords
    the graph lacks (``V_notexist``)."""
    terminals: list[str] = []
    new_keywords: list[str] = []
    for v in keywords:
        node = terminal(v)
        if node is None:
            new_keywords.append(v)
        elif node not in terminals:
            terminals.append(node)
    return terminals, new_keywords


def retrieve(
    keywords: list[str],
    *,
    labels: Sequence[str],
    terminal: Callable[[str], str | None],
    solver: Callable[[], SteinerSolver],
    extra_terminals: Sequence[str] = (),
) -> dict[str, Any]:
    """Terminals, Steiner tree, candidate labels and their graph costs.

    ``labels`` are the known labels in the order they were added; ``terminal`` maps a keyword
    to its node (or ``None``); ``extra_terminals`` are further nodes the keywords were linked
    to (by vocabulary or embedding); ``solver`` returns the solver of the current graph (built
    only when there is a terminal). Returns a dict with ``terminals``, ``new_keywords``,
    ``edges`` (``(u, v, weight)``), ``candidates`` (fewest unreachable terminals first, then
    least cost, then label order), ``costs``, ``unreachable`` and ``fallback``."""
    terminals, new_keywords = split_keywords(keywords, terminal)
    terminals += [t for t in extra_terminals if t not in terminals]
    order = list(labels)
    if not terminals:
        return {
            "terminals": [],
            "new_keywords": new_keywords,
            "edges": [],
            "candidates": order,
            "costs": {},
            "unreachable": {},
            "fallback": "no_terminals",
        }
    solver_ = solver()
    result = solver_.solve(terminals)
    edges = list(result.edges)
    # distances from every terminal to every label, through the core
    mapped = [solver_.map_terminal(t) for t in terminals]
    sources = list(dict.fromkeys(i for i, _ in mapped))
    row = {i: r for r, i in enumerate(sources)}
    dist, pred = solver_.distances(sources)
    label_idx = np.array([solver_.index[label_node(y)] for y in order], dtype=np.int64)
    offsets = np.array([0.0 if e is None else e[2] for _, e in mapped])
    term_to_label = dist[[row[i] for i, _ in mapped]][:, label_idx] + offsets[:, None]
    in_tree = {n[len(LABEL) :] for n in result.nodes if isinstance(n, str) and n.startswith(LABEL)}
    fallback = None
    for group in result.groups:
        if len(group) != 1:
            continue
        core = solver_.map_terminal(group[0])[0]
        node = str(solver_.nodes[core])
        if node.startswith(LABEL):
            in_tree.add(node[len(LABEL) :])
            continue
        d = dist[row[core]][label_idx]
        finite = np.isfinite(d)
        if not finite.any():
            continue
        best = d[finite].min()
        fallback = "nearest_label"
        for nearest in np.nonzero(finite & (d <= best + 1e-12))[0]:
            in_tree.add(order[nearest])
            x = int(label_idx[nearest])
            while pred[row[core]][x] >= 0:
                p = int(pred[row[core]][x])
                edges.append((solver_.nodes[p], solver_.nodes[x], float(solver_.matrix[p, x])))
                x = p
    edges = list(dict.fromkeys(edges))
    costs: dict[str, float] = {}
    unreachable: dict[str, int] = {}
    for k, y in enumerate(order):
        if y not in in_tree:
            continue
        column = term_to_label[:, k]
        finite = np.isfinite(column)
        costs[y] = float(column[finite].sum())
        unreachable[y] = int((~finite).sum())
    candidates = sorted(costs, key=lambda y: (unreachable[y], costs[y], order.index(y)))
    return {
        "terminals": terminals,
        "new_keywords": new_keywords,
        "edges": edges,
        "candidates": candidates,
        "costs": costs,
        "unreachable": unreachable,
        "fallback": fallback,
    }


__all__ = ["retrieve", "split_keywords"]
