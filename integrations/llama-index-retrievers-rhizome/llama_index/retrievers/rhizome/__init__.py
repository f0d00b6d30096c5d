"""LlamaIndex integration for Rhizome: a retriever over any Rhizome index."""

from llama_index.retrievers.rhizome.base import PROVENANCE_KEYS, RhizomeRetriever, hit_to_node

__all__ = ["PROVENANCE_KEYS", "RhizomeRetriever", "hit_to_node"]
