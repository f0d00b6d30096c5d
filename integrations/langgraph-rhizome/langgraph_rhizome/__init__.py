"""langgraph_rhizome — LangGraph nodes over Rhizome: retrieve from any Rhizome index, classify
with a Rhizome classifier (GORAG) and route on the label."""

from langgraph_rhizome.nodes import (
    ClassifyState,
    RetrieveState,
    make_classify_node,
    make_retrieve_node,
    route_by_label,
)

__all__ = [
    "ClassifyState",
    "RetrieveState",
    "make_classify_node",
    "make_retrieve_node",
    "route_by_label",
]
