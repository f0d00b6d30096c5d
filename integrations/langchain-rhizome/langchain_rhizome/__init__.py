"""LangChain integration for Rhizome: retrievers and agent tools over any Rhizome index, and a
Runnable over a Rhizome classifier (GORAG)."""

from langchain_rhizome.classifier import RhizomeClassifier
from langchain_rhizome.retrievers import RhizomeRetriever, hit_to_document
from langchain_rhizome.tools import as_langchain_retriever, create_rhizome_tool

__all__ = [
    "RhizomeClassifier",
    "RhizomeRetriever",
    "as_langchain_retriever",
    "create_rhizome_tool",
    "hit_to_document",
]
