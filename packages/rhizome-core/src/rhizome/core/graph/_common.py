"""Helpers shared by the graph algorithms of this package: node order, edge weights, checks.

*Node order* is the order every function in :mod:`rhizome.core.graph` treats as canonical; see
:func:`ordered_nodes`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import networkx as nx

from rhizome.core.errors import ConfigurationError, InvalidInputError

NodeId = Hashable
"""Any hashable networkx node id (strings, ints, tuples, ...)."""


def _fallback_sort_key(node: Hashable) -> tuple[str, str, str]:
    kind = type(node)
    return (kind.__module__, kind.__qualname__, repr(node))


def ordered_nodes(nodes: Iterable[NodeId]) -> list[NodeId]:
    """The nodes in *node order*, the order every function in this package treats as canonical.

    Node ids that can be compared with each other (all strings, all numbers, all tuples of
    those, ...) are sorted naturally. Mixed or incomparable ids are sorted by type name and then
    ``repr``, which is deterministic for the usual id types (but not for objects whose ``repr``
    shows a memory address).
    """
    items = list(nodes)
    try:
        return sorted(items)  # type: ignore[type-var]
    except TypeError:
        return sorted(items, key=_fallback_sort_key)


def _check_graph(graph: Any) -> None:
    from rhizome.core.graph.leiden import WeightedEdges

    if not isinstance(graph, (nx.Graph, WeightedEdges)):
        raise InvalidInputError(
            f"expected a networkx graph (nx.Graph, DiGraph, MultiGraph or MultiDiGraph), got "
            f"{type(graph).__name__}. Build one with networkx first."
        )


def _edge_weight(data: Mapping[str, Any], weight: str | None, u: NodeId, v: NodeId) -> float:
    """The weight of one edge: 1.0 when ``weight`` is None or the attribute is missing."""
    if weight is None:
        return 1.0
    raw = data.get(weight, 1.0)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"edge ({u!r}, {v!r}) has a non-numeric {weight!r} attribute {raw!r}. Store numbers "
            f"as edge weights, or pass weight=None to treat the graph as unweighted."
        ) from None
    if not math.isfinite(value) or value < 0:
        raise InvalidInputError(
            f"edge ({u!r}, {v!r}) has {weight!r} = {raw!r}; weights must be finite and "
            f"non-negative. Fix or drop that edge, or pass weight=None to ignore weights."
        )
    return value


def _check_positive_int(name: str, value: int) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise ConfigurationError(f"{name} must be an integer, got {value!r}.") from None
    if isinstance(value, bool) or number < 1:
        raise ConfigurationError(f"{name} must be an integer >= 1, got {value!r}.")
    return number


__all__ = ["NodeId", "ordered_nodes"]
