"""LangGraph nodes over Rhizome: ``retrieve`` (any Rhizome retriever or index) and ``classify``
(a Rhizome classifier such as GORAG), plus a router for ``add_conditional_edges``.

Nodes read and write plain JSON values in the graph state (strings, numbers, lists, dicts), so
checkpointers can store the state as is. Each node is a LangChain ``RunnableLambda`` with a sync
and an async function: ``graph.invoke`` and ``graph.ainvoke`` both work, and the async path
awaits Rhizome's ``a*`` methods directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from langchain_core.runnables import RunnableLambda

from rhizome.core.aio import run_sync


class RetrieveState(TypedDict, total=False):
    """State keys the default ``retrieve`` node uses."""

    question: str
    documents: list[dict[str, Any]]


class ClassifyState(TypedDict, total=False):
    """State keys the default ``classify`` node uses."""

    text: str
    label: str
    classification: dict[str, Any]


def _as_retriever(source: Any, k: int | None) -> Any:
    if callable(getattr(source, "aretrieve", None)) and callable(getattr(source, "retrieve", None)):
        return source
    if callable(getattr(source, "as_retriever", None)):
        return source.as_retriever(k=k) if k is not None else source.as_retriever()
    raise TypeError(
        f"expected a Rhizome retriever (retrieve/aretrieve) or index (as_retriever); got {type(source).__name__}"
    )


def _read(state: Mapping[str, Any], key: str, node: str) -> str:
    value = state.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"the {node} node needs a non-empty string in state[{key!r}]; got {value!r}")
    return value


def make_retrieve_node(
    source: Any,
    *,
    k: int = 4,
    query_key: str = "question",
    documents_key: str = "documents",
    name: str = "retrieve",
) -> RunnableLambda:
    """A node that retrieves ``k`` hits for ``state[query_key]`` and writes them to
    ``state[documents_key]`` as JSON dicts (``Hit.model_dump(mode="json")``: text, score, kind,
    provenance). ``source`` is a Rhizome retriever or any Rhizome index."""
    retriever = _as_retriever(source, None)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")

    async def aretrieve(state: Mapping[str, Any]) -> dict[str, Any]:
        hits = await retriever.aretrieve(_read(state, query_key, name), k=k)
        return {documents_key: [hit.model_dump(mode="json") for hit in hits]}

    def retrieve(state: Mapping[str, Any]) -> dict[str, Any]:
        return run_sync(aretrieve(state))

    return RunnableLambda(retrieve, afunc=aretrieve, name=name)


def make_classify_node(
    classifier: Any,
    *,
    text_key: str = "text",
    label_key: str = "label",
    result_key: str | None = "classification",
    online: bool | None = None,
    name: str = "classify",
) -> RunnableLambda:
    """A node that classifies ``state[text_key]`` and writes the label to ``state[label_key]``
    (and, unless ``result_key`` is ``None``, the whole result — candidates, Steiner tree,
    evidence keywords — as a JSON dict to ``state[result_key]``). Pair it with
    :func:`route_by_label` to branch on the label."""
    if not callable(getattr(classifier, "aclassify", None)):
        raise TypeError(f"expected a Rhizome classifier with aclassify; got {type(classifier).__name__}")

    async def aclassify(state: Mapping[str, Any]) -> dict[str, Any]:
        result = await classifier.aclassify(_read(state, text_key, name), online=online)
        update: dict[str, Any] = {label_key: result.label}
        if result_key is not None:
            update[result_key] = result.model_dump(mode="json")
        return update

    def classify(state: Mapping[str, Any]) -> dict[str, Any]:
        return run_sync(aclassify(state))

    return RunnableLambda(classify, afunc=aclassify, name=name)


def route_by_label(
    routes: Mapping[str, str] | None = None,
    *,
    label_key: str = "label",
    default: str | None = None,
) -> Callable[[Mapping[str, Any]], str]:
    """A routing function for ``add_conditional_edges``: returns ``routes[label]`` (or the label
    itself when ``routes`` is ``None``), and ``default`` for a label without a route.

    .. code-block:: python

        graph.add_conditional_edges("classify", route_by_label({"cardiology": "heart", "oncology": "cancer"}, default="general"))
    """

    def route(state: Mapping[str, Any]) -> str:
        label = state.get(label_key)
        if routes is None:
            if isinstance(label, str):
                return label
        elif label in routes:
            return routes[label]
        if default is not None:
            return default
        raise ValueError(
            f"no route for label {label!r} in state[{label_key!r}]; add it to routes or give default="
        )

    return route


__all__ = [
    "ClassifyState",
    "RetrieveState",
    "make_classify_node",
    "make_retrieve_node",
    "route_by_label",
]
