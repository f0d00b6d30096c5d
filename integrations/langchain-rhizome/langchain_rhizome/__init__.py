"""LangChain integration for Rhizome: retrievers, a vector store and agent tools over any Rhizome
index, and a Runnable over a Rhizome classifier (GORAG)."""

from langchain_rhizome.classifier import RhizomeClassifier
from langchain_rhizome.filters import RhizomeTranslator
from langchain_rhizome.rerank import CompressorReranker
from langchain_rhizome.retrievers import RhizomeRetriever, document_to_hit, hit_to_document
from langchain_rhizome.tools import (
    as_langchain_retriever,
    create_index_tool,
    create_rhizome_tool,
    describe_index,
)
from langchain_rhizome.vectorstores import RhizomeVectorStore

__all__ = [
    "CompressorReranker",
    "RhizomeClassifier",
    "RhizomeRetriever",
    "RhizomeTranslator",
    "RhizomeVectorStore",
    "as_langchain_retriever",
    "create_index_tool",
    "create_rhizome_tool",
    "describe_index",
    "document_to_hit",
    "hit_to_document",
]
