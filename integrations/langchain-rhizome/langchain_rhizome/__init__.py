"""LangChain integration for Rhizome: retrievers and agent tools over any Rhizome index."""

from langchain_rhizome.retrievers import RhizomeRetriever, hit_to_document
from langchain_rhizome.tools import as_langchain_retriever, create_rhizome_tool

__all__ = ["RhizomeRetriever", "as_langchain_retriever", "create_rhizome_tool", "hit_to_document"]
