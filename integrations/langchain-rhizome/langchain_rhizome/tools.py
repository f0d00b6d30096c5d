"""Rhizome indexes as LangChain tools, for agents (``create_agent``, LangGraph ``ToolNode``)."""

from __future__ import annotations

from typing import Any

from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import StructuredTool, create_retriever_tool

from langchain_rhizome.retrievers import RhizomeRetriever


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


__all__ = ["as_langchain_retriever", "create_rhizome_tool"]
