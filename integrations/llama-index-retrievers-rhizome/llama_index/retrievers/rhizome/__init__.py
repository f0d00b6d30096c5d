"""LlamaIndex integration for Rhizome: a retriever over any Rhizome index, and a transformation
that labels nodes with a Rhizome classifier (GORAG)."""

from llama_index.retrievers.rhizome.base import (
    PROVENANCE_KEYS,
    RhizomeRetriever,
    hit_to_node,
    rhizome_filter,
)
from llama_index.retrievers.rhizome.classifier import RhizomeClassifierTransform
from llama_index.retrievers.rhizome.rerank import PostprocessorReranker

__all__ = [
    "PROVENANCE_KEYS",
    "PostprocessorReranker",
    "RhizomeClassifierTransform",
    "RhizomeRetriever",
    "hit_to_node",
    "rhizome_filter",
]
