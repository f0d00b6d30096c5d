"""LlamaIndex integration for Rhizome: a retriever over any Rhizome index, and a transformation
that labels nodes with a Rhizome classifier (GORAG)."""

from llama_index.retrievers.rhizome.base import (
    PROVENANCE_KEYS,
    RhizomeRetriever,
    hit_to_node,
    rhizome_filter,
)
from llama_index.retrievers.rhizome.classifier import RhizomeClassifierTransform

__all__ = [
    "PROVENANCE_KEYS",
    "RhizomeClassifierTransform",
    "RhizomeRetriever",
    "hit_to_node",
    "rhizome_filter",
]
