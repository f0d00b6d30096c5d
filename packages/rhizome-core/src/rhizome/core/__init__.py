"""rhizome.core — the shared kernel of Rhizome's graph-based RAG methods.

Framework-neutral: nothing here imports LangChain or LlamaIndex. The integrations adapt the
protocols defined here (``ChatModel``, ``Embedder``, ``Retriever``, ``Index``).
"""

from rhizome.core.answer import Answer, aanswer, answer
from rhizome.core.cache import ModelCache
from rhizome.core.config import ExtractionConfig, IndexConfig
from rhizome.core.documents import coerce_documents, load_path
from rhizome.core.embeddings import HashingEmbedder, SentenceTransformerEmbedder
from rhizome.core.errors import (
    ConfigurationError,
    EmptyExtractionError,
    IndexFormatError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexStorageError,
    InvalidInputError,
    ModelError,
    ModelNotFoundError,
    ModelOutputError,
    ModelTimeoutError,
    ModelUnavailableError,
    RhizomeError,
)
from rhizome.core.index import BaseIndex, DeleteReport, InsertReport
from rhizome.core.models.base import BaseChatModel, BaseEmbedder, Usage
from rhizome.core.models.fake import FakeChatModel, FakeEmbedder
from rhizome.core.models.ollama import OllamaChatModel, OllamaEmbedder, check_ollama
from rhizome.core.models.registry import make_chat_model, make_embedder
from rhizome.core.naive import VectorIndex, VectorRetriever
from rhizome.core.protocols import ChatModel, Completion, Embedder, Index, Retriever
from rhizome.core.retrieval import BaseRetriever, Retrieval
from rhizome.core.storage import IndexStore, Manifest, load_index
from rhizome.core.text import Chunker, count_tokens
from rhizome.core.types import Chunk, Community, Document, Entity, Hit, Provenance, Relation, Span
from rhizome.core.vectors import VectorStore

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
