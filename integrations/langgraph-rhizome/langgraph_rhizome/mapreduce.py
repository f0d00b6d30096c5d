"""Global search as a LangGraph graph: one branch per batch of communities, joined by score.

A map-reduce retrieval mode (:class:`rhizome.core.retrieval.contract.MapReduceSearch`: GraphRAG's global
search, and any method that reads the groups of a hierarchy in batches) has three steps. This
graph runs them as nodes::

    plan ──Send──► map (batch 1) ─┐
         ├─Send──► map (batch 2) ─┼─► reduce
         └─Send──► map (batch n) ─┘

``plan`` chooses the groups and batches them (the plan is JSON, kept in the state); each
``Send`` starts one ``map`` branch, and LangGraph runs the branches of a step concurrently;
``reduce`` orders every branch's points with the method's own reduce and ends as the retriever's
own search does (:meth:`~rhizome.core.retrieval.contract.BaseRetriever.afinish`: its filter, the best
``k``, the nearest passages when the points are fewer), then keeps as many as fit in ``max_tokens``. Each branch is a node run of its own, so
``stream_mode="updates"`` and ``astream_events`` show the batches as they finish.

Add the compiled graph as a node of your graph (its keys are shared with the parent state), or
invoke it on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypedDict, cast

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send

from langgraph_rhizome.nodes import as_retriever, graph_node
from langgraph_rhizome.state import read_text, write_hits
from rhizome.core.errors import ConfigurationError
from rhizome.core.retrieval.contract import MapPlan, Retrieval, check_k, check_positive, pack
from rhizome.core.types import Hit


def _gather(old: list[dict[str, Any]] | None, new: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The map branches' results; ``None`` (written by ``plan``) starts a new search."""
    return [] if new is None else [*(old or []), *new]


class MapTask(TypedDict):
    """What one ``map`` branch receives through its ``Send``."""

    query: str
    batch: list[str]
    order: int
    k: int
    """Points the batch may give (the search's ``k``, more under a filter)."""


class GlobalSearchState(TypedDict, total=False):
    """The keys of the global search graph (the question and documents keys are the defaults
    of :func:`create_global_search_graph`)."""

    question: str
    messages: Annotated[list[AnyMessage], add_messages]
    documents: list[dict[str, Any]]
    plan: dict[str, Any]
    asked: int
    """Points each batch may give: the search's ``k``, more when the retriever's filter will drop some."""
    points: Annotated[list[dict[str, Any]], _gather]


STEPS = ("aplan", "amap", "reduce", "asked", "afinish")
"""What the graph calls of a map-reduce search (:class:`rhizome.core.retrieval.contract.MapReduceSearch`)."""


def _is_map_reduce(retriever: Any) -> bool:
    return all(callable(getattr(retriever, step, None)) for step in STEPS)


def map_reduce_retriever(source: Any, mode: str | None = None) -> Any:
    """The map-reduce retriever of ``source``: a map-reduce retriever as is; for an index, its
    mode ``mode`` — by default the first of its modes that is a map-reduce search."""
    if _is_map_reduce(source):
        return source
    if mode is not None or not callable(getattr(source, "as_retriever", None)):
        retriever = as_retriever(source, mode)
        if _is_map_reduce(retriever):
            return retriever
        raise ConfigurationError(
            f"{type(retriever).__name__} is not a map-reduce search ({', '.join(STEPS)}); choose a mode "
            "such as GraphRAG's 'global'"
        )
    for candidate in getattr(source, "modes", ()) or ():
        retriever = source.as_retriever(mode=candidate)
        if _is_map_reduce(retriever):
            return retriever
    raise ConfigurationError(
        f"no retrieval mode of this {getattr(source, 'method', type(source).__name__)} index is a map-reduce "
        f"search (modes: {', '.join(getattr(source, 'modes', ()) or ()) or 'one'}); global search needs a "
        "method with a hierarchy, such as GraphRAG"
    )


def create_global_search_graph(
    source: Any,
    *,
    mode: str | None = None,
    k: int = 20,
    max_tokens: int = 4000,
    query_key: str = "question",
    documents_key: str = "documents",
    name: str = "global_search",
) -> Any:
    """A compiled graph that runs the map-reduce search of ``source`` (an index — its
    map-reduce mode, or ``mode`` — or a map-reduce retriever) with one ``map`` branch per batch
    (see the module docstring). It reads the question from ``state[query_key]`` or the last
    human message and writes the kept points to ``state[documents_key]`` as JSON hits (and,
    for a question from the messages, a tool exchange named ``name`` with them as Documents):
    the ``k`` best by score, then as many as fit in ``max_tokens`` tokens of point text."""
    retriever = map_reduce_retriever(source, mode)
    k = check_k(k)
    max_tokens = check_positive("max_tokens", max_tokens)
    state: Any = GlobalSearchState
    if (query_key, documents_key) != ("question", "documents"):
        fields = dict(GlobalSearchState.__annotations__)
        fields[query_key] = fields.pop("question")
        fields[documents_key] = fields.pop("documents")
        state = cast(Any, TypedDict)(f"{name}_state", fields, total=False)  # a state whose keys are chosen at run time

    async def aplan(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        question, _ = read_text(state, query_key, name)
        plan = await retriever.aplan(question)
        return {"plan": plan.model_dump(mode="json"), "asked": retriever.asked(k), "points": None}

    def branches(state: Mapping[str, Any]) -> Any:
        question, _ = read_text(state, query_key, name)
        batches = MapPlan.model_validate(state["plan"]).batches
        if not batches:
            return "reduce"
        return [Send("map", MapTask(query=question, batch=batch, order=i, k=state["asked"])) for i, batch in enumerate(batches)]

    async def amap(task: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        points = await retriever.amap(task["query"], task["batch"], task["k"])
        return {"points": [{"order": task["order"], "hits": [p.model_dump(mode="json") for p in points]}]}

    async def areduce(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        question, from_messages = read_text(state, query_key, name)
        mapped = sorted(state.get("points") or [], key=lambda branch: branch["order"])
        points = [Hit.model_validate(p) for branch in mapped for p in branch["hits"]]
        reduced = Retrieval(query=question, hits=retriever.reduce(question, points, state["asked"]))
        # as the retriever's own search ends: its filter, the best k, topped up with the nearest
        # chunks, the cited documents' metadata
        best = (await retriever.afinish(reduced, k)).hits
        packed = pack(best, max_tokens, lambda hit: hit.text, overhead=1)  # a first point too long alone is cut
        kept = [hit if text == hit.text else hit.model_copy(update={"text": text}) for hit, text in packed]
        return write_hits(kept, documents_key, from_messages, name, {"query": question, "k": k})

    graph = StateGraph(state)
    graph.add_node("plan", graph_node(aplan, "plan"))
    graph.add_node("map", graph_node(amap, "map"))
    graph.add_node("reduce", graph_node(areduce, "reduce"))
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", branches, ["map", "reduce"])
    graph.add_edge("map", "reduce")
    graph.add_edge("reduce", END)
    return graph.compile(name=name)


__all__ = ["GlobalSearchState", "MapTask", "create_global_search_graph", "map_reduce_retriever"]
