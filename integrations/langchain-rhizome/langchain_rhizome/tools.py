"""Rhizome indexes as LangChain tools, for agents (``create_agent``, LangGraph ``ToolNode``).

:func:`create_index_tool` makes the tool an agent can steer: its arguments are the query, the
index's retrieval mode (an enum of ``index.modes``) and ``k``, and its description is written
from the index itself (method, corpus size, what each mode is for), so the model can choose
between a local and a global search. :func:`create_rhizome_tool` is the plain retriever tool
(query only) for a fixed retriever.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, create_retriever_tool
from pydantic import BaseModel, Field, create_model

from langchain_rhizome.retrievers import RhizomeRetriever, document_to_hit
from rhizome.core.errors import ConfigurationError
from rhizome.core.index.base import ModeInfo
from rhizome.core.retrieval.answer import render_hit


def as_langchain_retriever(retriever_or_index: Any, k: int | None = None) -> BaseRetriever:
    """A LangChain retriever for ``retriever_or_index``: a LangChain retriever (returned as is,
    unless ``k`` asks for a copy with another ``k``), a Rhizome retriever, or a Rhizome index."""
    obj = retriever_or_index
    if isinstance(obj, BaseRetriever):
        if k is not None and isinstance(obj, RhizomeRetriever):
            return obj.model_copy(update={"k": k})
        return obj
    if callable(getattr(obj, "aretrieve", None)) and callable(getattr(obj, "retrieve", None)):
        return RhizomeRetriever(retriever=obj, k=k or 4)
    if callable(getattr(obj, "as_retriever", None)):
        return RhizomeRetriever.from_index(obj, k=k or 4)
    raise TypeError(
        "expected a Rhizome index, a Rhizome retriever or a LangChain retriever; "
        f"got {type(obj).__name__}"
    )


def create_rhizome_tool(
    retriever_or_index: Any,
    name: str,
    description: str,
    *,
    k: int | None = None,
    **kwargs: Any,
) -> StructuredTool:
    """A tool that searches a Rhizome index and returns the retrieved passages as text.

    ``retriever_or_index`` may be a Rhizome index, a Rhizome retriever or a
    :class:`RhizomeRetriever`; ``k`` overrides how many passages the tool returns. ``name`` and
    ``description`` are what the agent's model sees when deciding to call the tool. Other keyword
    arguments (``document_prompt``, ``document_separator``, ``response_format``) go to
    :func:`langchain_core.tools.create_retriever_tool`; with
    ``response_format="content_and_artifact"`` the documents, with their provenance metadata,
    travel along as the tool message's artifact.
    """
    retriever = as_langchain_retriever(retriever_or_index, k=k)
    return create_retriever_tool(retriever, name, description, **kwargs)


def describe_index(index: Any, name: str | None = None) -> str:
    """A tool description written from ``index``: its method and corpus size, and one line per
    retrieval mode saying what the mode is for (``index.describe_modes()``)."""
    method = getattr(index, "method", type(index).__name__)
    store = getattr(index, "store", None)
    size = ""
    if store is not None:
        documents, passages = store.count("documents"), store.count("chunks")
        size = (f" over {documents:,} document{'' if documents == 1 else 's'} "
                f"({passages:,} passage{'' if passages == 1 else 's'})")
    head = f"Search the {name or method} index, a {method} index{size}."
    modes = [(mode, info.purpose) for mode, info in mode_infos(index).items()]
    lines = [head]
    if len(modes) > 1 or modes[0][0] is not None:
        lines.append(f"Choose `mode` (default {modes[0][0]}):")
        lines += [f"- {mode}: {purpose}" for mode, purpose in modes]
    else:
        lines.append(f"It finds {modes[0][1]}.")
    lines.append("Returns passages, each starting with its [id]; cite those ids in the answer.")
    return "\n".join(lines)


def mode_infos(index: Any) -> dict[str | None, ModeInfo]:
    """What each retrieval mode of ``index`` is for (``index.describe_modes()``; for an index
    that does not describe them, a line per mode name), keyed ``None`` for a single mode."""
    describe = getattr(index, "describe_modes", None)
    if callable(describe):
        return dict(describe())
    modes = tuple(getattr(index, "modes", ()) or ()) or (None,)
    return {m: ModeInfo(f"the {m} search of this index" if m else "the passages nearest the query") for m in modes}


def tool_name(text: str) -> str:
    """``text`` as a tool name models accept: letters, digits, ``_`` and ``-``, at most 64."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")[:64]
    if not name:
        raise ConfigurationError(f"cannot make a tool name of {text!r}; give a name with letters or digits")
    return name


def format_hits(hits: list[Any]) -> str:
    """Hits as a tool's text content: one block per hit, ``[id] (title) text``."""
    if not hits:
        return "No passages found."
    return "\n\n".join(f"[{hit.id}] {render_hit(hit)}" for hit in hits)


def create_index_tool(
    index: Any,
    name: str | None = None,
    description: str | None = None,
    *,
    k: int = 5,
    max_k: int = 20,
    **retriever_options: Any,
) -> StructuredTool:
    """A tool over a Rhizome index that the agent's model steers with three arguments:
    ``query``, ``mode`` (one of ``index.modes``; absent for a method with one mode) and ``k``
    (1 to ``max_k``, default ``k``). It returns the passages as text — each led by its hit id,
    for the model to cite — and, as the tool message's artifact, one ``Document`` per hit with
    its provenance (:func:`~langchain_rhizome.retrievers.hit_to_document`).

    ``name`` defaults to ``search_<method>``; ``description`` to :func:`describe_index`.
    ``retriever_options`` go to ``index.as_retriever`` for every mode (method settings).
    """
    if not callable(getattr(index, "as_retriever", None)):
        raise ConfigurationError(
            f"create_index_tool needs a Rhizome index (with as_retriever and modes); got "
            f"{type(index).__name__} — for a fixed retriever use create_rhizome_tool"
        )
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= max_k:
        raise ConfigurationError(f"k must be an integer between 1 and max_k={max_k}, got {k!r}")
    modes = list(mode_infos(index))
    retrievers = {
        mode: RhizomeRetriever(retriever=index.as_retriever(**({"mode": mode} if mode else {}), **retriever_options), k=k)
        for mode in modes
    }
    label = name
    name = tool_name(name or f"search_{getattr(index, 'method', 'index')}")

    async def asearch(query: str, mode: str | None = None, k: int = k, config: RunnableConfig | None = None) -> tuple[str, list[Document]]:
        documents = await retrievers[mode if mode is not None else modes[0]].ainvoke(query, config, k=k)
        return format_hits([document_to_hit(d) for d in documents]), documents

    def search(query: str, mode: str | None = None, k: int = k, config: RunnableConfig | None = None) -> tuple[str, list[Document]]:
        documents = retrievers[mode if mode is not None else modes[0]].invoke(query, config, k=k)
        return format_hits([document_to_hit(d) for d in documents]), documents

    return StructuredTool.from_function(
        func=search,
        coroutine=asearch,
        name=name,
        description=description or describe_index(index, label),
        args_schema=_arguments(name, modes, k, max_k),
        response_format="content_and_artifact",
    )


def _arguments(name: str, modes: list[str | None], k: int, max_k: int) -> type[BaseModel]:
    fields: dict[str, Any] = {
        "query": (str, Field(description="What to search for: a question or the words the passages would use.")),
    }
    if modes != [None]:
        fields["mode"] = (
            Literal[tuple(modes)],
            Field(default=modes[0], description="The retrieval mode (see the tool description)."),
        )
    fields["k"] = (int, Field(default=k, ge=1, le=max_k, description="How many passages to return."))
    return create_model(f"{name}_arguments", **fields)


__all__ = [
    "as_langchain_retriever",
    "create_index_tool",
    "create_rhizome_tool",
    "describe_index",
    "format_hits",
    "mode_infos",
    "tool_name",
]
