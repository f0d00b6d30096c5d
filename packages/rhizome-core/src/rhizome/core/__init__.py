"""rhizome.core — the shared kernel of Rhizome's graph-based RAG methods.

Framework-neutral: nothing here imports LangChain or LlamaIndex. The integrations adapt the
protocols defined here (``ChatModel``, ``Embedder``, ``Retriever``, ``Index``).

The names below are imported on first use (PEP 562): importing a submodule such as
``rhizome.core.errors`` or ``rhizome.core.cli`` — which ``rhizome --help`` does — does not load
numpy, faiss, the Ollama client and the rest of the kernel. ``from rhizome.core import
VectorIndex`` works as always.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Answer": "rhizome.core.answer",
    "aanswer": "rhizome.core.answer",
    "answer": "rhizome.core.answer",
    "ModelCache": "rhizome.core.cache",
    "ExtractionConfig": "rhizome.core.config",
    "IndexConfig": "rhizome.core.config",
    "coerce_documents": "rhizome.core.documents",
    "load_path": "rhizome.core.documents",
    "HashingEmbedder": "rhizome.core.embeddings",
    "SentenceTransformerEmbedder": "rhizome.core.embeddings",
    "ConfigurationError": "rhizome.core.errors",
    "EmptyExtractionError": "rhizome.core.errors",
    "IndexFormatError": "rhizome.core.errors",
    "IndexLockedError": "rhizome.core.errors",
    "IndexMismatchError": "rhizome.core.errors",
    "IndexNotFoundError": "rhizome.core.errors",
    "IndexStorageError": "rhizome.core.errors",
    "InvalidInputError": "rhizome.core.errors",
    "ModelError": "rhizome.core.errors",
    "ModelNotFoundError": "rhizome.core.errors",
    "ModelOutputError": "rhizome.core.errors",
    "ModelTimeoutError": "rhizome.core.errors",
    "ModelUnavailableError": "rhizome.core.errors",
    "RhizomeError": "rhizome.core.errors",
    "BaseIndex": "rhizome.core.index",
    "DeleteReport": "rhizome.core.index",
    "InsertReport": "rhizome.core.index",
    "BaseChatModel": "rhizome.core.models.base",
    "BaseEmbedder": "rhizome.core.models.base",
    "Usage": "rhizome.core.models.base",
    "FakeChatModel": "rhizome.core.models.fake",
    "FakeEmbedder": "rhizome.core.models.fake",
    "OllamaChatModel": "rhizome.core.models.ollama",
    "OllamaEmbedder": "rhizome.core.models.ollama",
    "check_ollama": "rhizome.core.models.ollama",
    "make_chat_model": "rhizome.core.models.registry",
    "make_embedder": "rhizome.core.models.registry",
    "VectorIndex": "rhizome.core.naive",
    "VectorRetriever": "rhizome.core.naive",
    "ChatModel": "rhizome.core.protocols",
    "Completion": "rhizome.core.protocols",
    "Embedder": "rhizome.core.protocols",
    "Index": "rhizome.core.protocols",
    "Retriever": "rhizome.core.protocols",
    "BaseRetriever": "rhizome.core.retrieval",
    "Retrieval": "rhizome.core.retrieval",
    "IndexStore": "rhizome.core.storage",
    "Manifest": "rhizome.core.storage",
    "load_index": "rhizome.core.storage",
    "Chunker": "rhizome.core.text",
    "count_tokens": "rhizome.core.text",
    "Chunk": "rhizome.core.types",
    "Community": "rhizome.core.types",
    "Document": "rhizome.core.types",
    "Entity": "rhizome.core.types",
    "Hit": "rhizome.core.types",
    "Provenance": "rhizome.core.types",
    "Relation": "rhizome.core.types",
    "Span": "rhizome.core.types",
    "VectorStore": "rhizome.core.vectors",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "Answer",
    "BaseChatModel",
    "BaseIndex",
    "BaseRetriever",
    "BaseEmbedder",
    "ChatModel",
    "Chunk",
    "Chunker",
    "Community",
    "Completion",
    "ConfigurationError",
    "DeleteReport",
    "Document",
    "Embedder",
    "EmptyExtractionError",
    "ExtractionConfig",
    "Entity",
    "FakeChatModel",
    "FakeEmbedder",
    "HashingEmbedder",
    "Hit",
    "Index",
    "IndexConfig",
    "IndexFormatError",
    "IndexLockedError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "IndexStorageError",
    "IndexStore",
    "InsertReport",
    "InvalidInputError",
    "Manifest",
    "ModelCache",
    "ModelError",
    "ModelNotFoundError",
    "ModelOutputError",
    "ModelTimeoutError",
    "ModelUnavailableError",
    "OllamaChatModel",
    "OllamaEmbedder",
    "Provenance",
    "Relation",
    "Retrieval",
    "Retriever",
    "RhizomeError",
    "SentenceTransformerEmbedder",
    "Span",
    "Usage",
    "VectorIndex",
    "VectorRetriever",
    "VectorStore",
    "aanswer",
    "answer",
    "check_ollama",
    "coerce_documents",
    "count_tokens",
    "load_index",
    "load_path",
    "make_chat_model",
    "make_embedder",
]
