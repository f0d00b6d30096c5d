"""The chat model of a node or an agent, from what the user gives: a LangChain chat model as it
is (any provider with tool calling works in an agent), ``"ollama:MODEL"`` (``ChatOllama``,
the default provider), or — for the answer node only — a Rhizome chat model."""

from __future__ import annotations

from typing import Any

from rhizome.core.errors import ConfigurationError
from rhizome.core.models.registry import DEFAULT_OLLAMA_LLM


def ollama_options() -> dict[str, Any]:
    """How an ``"ollama:MODEL"`` spec is opened: the options of Rhizome's own Ollama models —
    temperature 0, seed 42 and an explicit context window (``RHIZOME_NUM_CTX``, else
    ``OLLAMA_CONTEXT_LENGTH``, else 32,768), since Ollama's default window is small and cuts
    the front of longer prompts — tool results — silently."""
    from rhizome.core.models.ollama import default_num_ctx

    return {"temperature": 0, "seed": 42, "num_ctx": default_num_ctx()}


def is_langchain_chat_model(llm: Any) -> bool:
    from langchain_core.language_models import BaseChatModel

    return isinstance(llm, BaseChatModel)


def chat_model(llm: Any) -> Any:
    """``None``, a LangChain chat model, or a Rhizome chat model (``acomplete_json``) as they
    are; ``"ollama"`` or ``"ollama:MODEL"`` as ``ChatOllama`` (:func:`ollama_options`; the
    server is ``$OLLAMA_HOST``, else localhost)."""
    if llm is None or is_langchain_chat_model(llm) or callable(getattr(llm, "acomplete_json", None)):
        return llm
    if isinstance(llm, str):
        provider, _, name = llm.strip().partition(":")
        if provider.lower() == "ollama":
            from langchain_ollama import ChatOllama

            return ChatOllama(model=name or DEFAULT_OLLAMA_LLM, **ollama_options())
        raise ConfigurationError(
            f"unknown chat model spec {llm!r}; use 'ollama:MODEL' or pass a LangChain chat model "
            "(ChatOllama, ChatOpenAI, ...)"
        )
    raise ConfigurationError(
        f"expected a LangChain chat model, a Rhizome chat model or 'ollama:MODEL'; got {type(llm).__name__}"
    )


def tool_calling_model(llm: Any) -> Any:
    """:func:`chat_model` for an agent: it must be a LangChain chat model that calls tools."""
    model = chat_model(llm)
    if not is_langchain_chat_model(model):
        raise ConfigurationError(
            f"an agent needs a LangChain chat model with tool calling (e.g. ChatOllama, or "
            f"'ollama:{DEFAULT_OLLAMA_LLM}'); got {type(model).__name__} — Rhizome's own chat models "
            "do not call tools. Pass llm=None for the offline router."
        )
    return model


__all__ = ["chat_model", "is_langchain_chat_model", "ollama_options", "tool_calling_model"]
