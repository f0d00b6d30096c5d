"""Model specs: short strings that name a model, used by the CLI, environment variables and
index manifests (an index records the spec of its embedder, so it can reopen itself).

| spec | model |
|---|---|
| ``ollama:MODEL`` | :class:`~rhizome.core.models.ollama.OllamaChatModel` / ``OllamaEmbedder`` |
| ``openai:MODEL`` | :class:`~rhizome.core.models.openai_compat.OpenAIChatModel` / ``OpenAIEmbedder`` (any OpenAI-compatible server: vLLM, llama.cpp, LM Studio) |
| ``hashing`` or ``hashing:DIM`` | :class:`~rhizome.core.models.embeddings.HashingEmbedder` (offline) |
| ``sentence-transformers:NAME`` (or ``st:NAME``) | :class:`~rhizome.core.models.embeddings.SentenceTransformerEmbedder` |
"""

from __future__ import annotations

from typing import Any

from rhizome.core.errors import ConfigurationError

DEFAULT_OLLAMA_LLM = "qwen2.5:7b-instruct"
DEFAULT_OLLAMA_EMBED = "nomic-embed-text"


def _split(spec: str) -> tuple[str, str]:
    spec = spec.strip()
    provider, _, name = spec.partition(":")
    return provider.lower(), name


def make_embedder(spec: str, **kwargs: Any) -> Any:
    """Build an embedder from a spec such as ``"ollama:nomic-embed-text"`` or ``"hashing:384"``."""
    provider, name = _split(spec)
    if provider == "hashing":
        from rhizome.core.models.embeddings import HashingEmbedder

        try:
            dimension = int(name) if name else 384
        except ValueError as exc:
            raise ConfigurationError(f"hashing embedder dimension must be a number, got {name!r}") from exc
        return HashingEmbedder(dimension, **kwargs)
    if provider in ("sentence-transformers", "st"):
        from rhizome.core.models.embeddings import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(name or "all-MiniLM-L6-v2", **kwargs)
    if provider == "ollama":
        from rhizome.core.models.ollama import OllamaEmbedder

        return OllamaEmbedder(name or DEFAULT_OLLAMA_EMBED, **kwargs)
    if provider == "openai":
        from rhizome.core.models.openai_compat import OpenAIEmbedder

        return OpenAIEmbedder(_served_name(spec, name), **kwargs)
    raise ConfigurationError(
        f"unknown embedder spec {spec!r}; use ollama:MODEL, openai:MODEL, hashing[:DIM] or sentence-transformers:NAME"
    )


def make_chat_model(spec: str, **kwargs: Any) -> Any:
    """Build a chat model from a spec such as ``"ollama:qwen2.5:7b-instruct"``."""
    provider, name = _split(spec)
    if provider == "ollama":
        from rhizome.core.models.ollama import OllamaChatModel

        return OllamaChatModel(name or DEFAULT_OLLAMA_LLM, **kwargs)
    if provider == "openai":
        from rhizome.core.models.openai_compat import OpenAIChatModel

        return OpenAIChatModel(_served_name(spec, name), **kwargs)
    raise ConfigurationError(f"unknown chat model spec {spec!r}; use ollama:MODEL or openai:MODEL")


def _served_name(spec: str, name: str) -> str:
    """The model of an ``openai:MODEL`` spec: there is no default, servers name their models."""
    if not name.strip():
        raise ConfigurationError(f"{spec!r} names no model; use openai:MODEL with a model id the server's /v1/models lists")
    return name.strip()


__all__ = ["DEFAULT_OLLAMA_EMBED", "DEFAULT_OLLAMA_LLM", "make_chat_model", "make_embedder"]
