"""LangGraph nodes over Rhizome: ``retrieve`` (any Rhizome index or retriever), ``classify`` (a
Rhizome classifier such as GORAG), ``answer`` (cited, streamed), and a router for
``add_conditional_edges``.

Every node works in a plain ``TypedDict`` state and in ``MessagesState`` (see
:mod:`langgraph_rhizome.state`): the text comes from ``state[key]`` or the last human message,
and results go to their keys as plain JSON — and, for a question from the messages, also into
the messages as a tool exchange, so checkpointers store the state as is. Each node is a
LangChain ``RunnableLambda`` with a sync and an async function: ``graph.invoke`` and
``graph.ainvoke`` both work, and the async path awaits Rhizome's ``a*`` methods directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langgraph_rhizome.models import chat_model, is_langchain_chat_model
from langgraph_rhizome.state import read_hits, read_text, this_turn, tool_exchange, write_hits
from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError
from rhizome.core.retrieval.answer import (
    ANSWER_INSTRUCTIONS,
    ANSWER_SYSTEM,
    aanswer,
    answer_prompt,
    cited,
)
from rhizome.core.retrieval.contract import check_k
from rhizome.core.types import Hit


class RetrieveState(TypedDict, total=False):
    """State keys the default ``retrieve`` node uses."""

    question: str
    documents: list[dict[str, Any]]


class ClassifyState(TypedDict, total=False):
    """State keys the default ``classify`` node uses."""

    text: str
    label: str
    classification: dict[str, Any]


class AnswerState(TypedDict, total=False):
    """State keys the default ``answer`` node uses."""

    question: str
    documents: list[dict[str, Any]]
    answer: str
    citations: list[str]


def as_retriever(source: Any, mode: str | None = None) -> Any:
    """A Rhizome retriever for ``source``: a retriever as is, or ``index.as_retriever(mode=)``."""
    if callable(getattr(source, "aretrieve", None)) and callable(getattr(source, "retrieve", None)):
        if mode is not None:
            raise ConfigurationError("mode= applies to an index; this is a retriever already (choose its mode when you make it)")
        return source
    if callable(getattr(source, "as_retriever", None)):
        return source.as_retriever(mode=mode) if mode is not None else source.as_retriever()
    raise ConfigurationError(
        f"expected a Rhizome retriever (retrieve/aretrieve) or index (as_retriever); got {type(source).__name__}"
    )


def graph_node(afunc: Callable[..., Any], name: str, *, blocking: bool = False) -> RunnableLambda:
    """A node from an async function ``(state, config) -> update``, with a sync path for
    ``graph.invoke`` that runs it on its own loop — passing ``blocking=True`` when asked, for
    work that must use a third-party object's sync API there (its async client is bound to the
    first loop it ran on)."""

    def func(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return run_sync(afunc(state, config, blocking=True) if blocking else afunc(state, config))

    return RunnableLambda(func, afunc=afunc, name=name)


def make_retrieve_node(
    source: Any,
    *,
    k: int = 4,
    mode: str | None = None,
    query_key: str = "question",
    documents_key: str = "documents",
    name: str = "retrieve",
) -> RunnableLambda:
    """A node that retrieves ``k`` hits for the question and writes them to
    ``state[documents_key]`` as JSON dicts (``Hit.model_dump(mode="json")``: text, score, kind,
    provenance); for a question from the messages, also a tool exchange named ``name`` whose
    artifact holds the hits as Documents. ``source`` is a Rhizome retriever or any Rhizome
    index (``mode`` chooses the index's retrieval mode)."""
    retriever = as_retriever(source, mode)
    k = check_k(k)

    async def aretrieve(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        question, from_messages = read_text(state, query_key, name)
        hits = await retriever.aretrieve(question, k=k)
        args = {"query": question, "k": k, **({"mode": mode} if mode else {})}
        return write_hits(hits, documents_key, from_messages, name, args)

    return graph_node(aretrieve, name)


def make_classify_node(
    classifier: Any,
    *,
    text_key: str = "text",
    label_key: str = "label",
    result_key: str | None = "classification",
    online: bool | None = None,
    options: Mapping[str, Any] | None = None,
    name: str = "classify",
) -> RunnableLambda:
    """A node that classifies the text (``state[text_key]``, or the last human message) and
    writes the label to ``state[label_key]`` (and, unless ``result_key`` is ``None``, the whole
    result — candidates, Steiner tree, evidence keywords — as a JSON dict to
    ``state[result_key]``); for a text from the messages, also a tool exchange named ``name``
    whose artifact is the result, where :func:`route_by_label` finds the label in a plain
    ``MessagesState``. Pair it with :func:`route_by_label` to branch on the label.
    ``options`` are further keyword arguments of each ``aclassify`` call (GORAG:
    ``index_threshold``)."""
    extra = dict(options or {})
    if not callable(getattr(classifier, "aclassify", None)):
        raise TypeError(f"expected a Rhizome classifier with aclassify; got {type(classifier).__name__}")

    async def aclassify(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        text, from_messages = read_text(state, text_key, name)
        result = await classifier.aclassify(text, online=online, **extra)
        found = result.model_dump(mode="json")
        update: dict[str, Any] = {label_key: result.label}
        if result_key is not None:
            update[result_key] = found
        if from_messages:
            update["messages"] = tool_exchange(name, {"text": text}, f"label: {result.label}", found)
        return update

    return graph_node(aclassify, name)


def make_answer_node(
    llm: Any = None,
    *,
    query_key: str = "question",
    documents_key: str = "documents",
    answer_key: str = "answer",
    citations_key: str = "citations",
    system: str = ANSWER_SYSTEM,
    instructions: str = ANSWER_INSTRUCTIONS,
    max_context_tokens: int = 3000,
    name: str = "answer",
) -> RunnableLambda:
    """A node that answers the question from the retrieved hits, citing them.

    The hits are ``state[documents_key]`` or, for a question from the messages, the artifacts
    of this turn's tool messages (what :func:`make_retrieve_node` and the agent's tools
    return). The answer goes to ``state[answer_key]`` (citing ``[n]``) with the cited hit ids
    in ``state[citations_key]``; for a question from the messages, also as an AI message ending
    in a list of its sources, the ids in ``response_metadata["citations"]``.

    ``llm``: a LangChain chat model or ``"ollama:MODEL"`` — its tokens stream as the graph
    runs (``stream_mode="messages"``, ``astream_events``); a Rhizome chat model — its pieces
    stream as ``stream_mode="custom"`` events ``{"node": name, "token": piece}``; ``None`` — an
    extractive answer (the context sentence that best covers the question), no model at all.
    """
    model = chat_model(llm)

    async def awrite(question: str, hits: list[Hit], config: RunnableConfig, blocking: bool) -> tuple[str, list[Hit], str | None]:
        if not hits or model is None:
            found = await aanswer(question, hits, None)
            numbers = "".join(f" [{hits.index(h) + 1}]" for h in found.citations if h in hits)
            return " ".join(found.text.split()) + numbers, hits, None
        prompt, used = answer_prompt(question, hits, model, system=system, instructions=instructions, max_context_tokens=max_context_tokens)
        pieces: list[str] = []
        message_id = None
        if is_langchain_chat_model(model):
            messages = [SystemMessage(system), HumanMessage(prompt)]
            chunks = model.stream(messages, config) if blocking else None  # sync graph runs: the model's sync API
            async for chunk in _each(chunks) if chunks is not None else model.astream(messages, config):
                pieces.append(chunk.text)
                message_id = message_id or chunk.id
        else:
            write = _stream_writer()
            async for piece in model.astream(prompt, system=system):
                pieces.append(piece)
                write({"node": name, "token": piece})
        return "".join(pieces).strip(), used, message_id

    async def aanswer_node(state: Mapping[str, Any], config: RunnableConfig, blocking: bool = False) -> dict[str, Any]:
        question, from_messages = read_text(state, query_key, name)
        hits = read_hits(state, documents_key, from_messages)
        text, used, message_id = await awrite(question, hits, config, blocking)
        citations = cited(text, used)
        update: dict[str, Any] = {answer_key: text, citations_key: [h.id for h in citations]}
        if from_messages:
            sources = "\n".join(f"[{used.index(h) + 1}] {h.id} ({', '.join(h.provenance.document_ids)})" for h in citations)
            content = f"{text}\n\nSources:\n{sources}" if sources else text
            message = AIMessage(content=content, response_metadata={"citations": [h.id for h in citations]})
            if message_id:
                message.id = message_id  # the streamed message, completed: not streamed twice
            update["messages"] = [message]
        return update

    return graph_node(aanswer_node, name, blocking=True)


async def _each(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def _stream_writer() -> Callable[[Any], None]:
    from langgraph.config import get_stream_writer

    try:
        return get_stream_writer()
    except RuntimeError:  # called outside a graph run
        return lambda _: None


def route_by_label(
    routes: Mapping[str, str] | None = None,
    *,
    label_key: str = "label",
    default: str | None = None,
) -> Callable[[Mapping[str, Any]], str]:
    """A routing function for ``add_conditional_edges``: returns ``routes[label]`` (or the label
    itself when ``routes`` is ``None``), and ``default`` for a label without a route. The label
    is ``state[label_key]``, or in a ``MessagesState`` the one the classify node recorded in
    this turn's messages.

    .. code-block:: python

        graph.add_conditional_edges("classify", route_by_label({"cardiology": "heart", "oncology": "cancer"}, default="general"))
    """

    def route(state: Mapping[str, Any]) -> str:
        label = state.get(label_key)
        if label is None:
            label = _label_in_messages(state)
        if routes is None:
            if isinstance(label, str):
                return label
        elif label in routes:
            return routes[label]
        if default is not None:
            return default
        raise ConfigurationError(
            f"no route for label {label!r} in state[{label_key!r}]; add it to routes or give default="
        )

    return route


def _label_in_messages(state: Mapping[str, Any]) -> Any:
    _, turn = this_turn(state.get("messages") or [])
    for message in reversed(turn):
        artifact = getattr(message, "artifact", None)
        if isinstance(message, ToolMessage) and isinstance(artifact, dict) and "label" in artifact:
            return artifact["label"]
    return None


__all__ = [
    "AnswerState",
    "ClassifyState",
    "RetrieveState",
    "as_retriever",
    "graph_node",
    "make_answer_node",
    "make_classify_node",
    "make_retrieve_node",
    "route_by_label",
]
