"""Bring-your-own models: adapters that let Rhizome use a LangChain chat model or embeddings, or a
LlamaIndex LLM or embedding, wherever it expects a :class:`~rhizome.core.protocols.ChatModel` or
:class:`~rhizome.core.protocols.Embedder`.

Each adapter implements the single primitive of its base class (``_achat`` or ``_aembed_batch``)
by calling the wrapped object's async API, so JSON validation with retries, the call cache,
concurrency limits and usage counters behave exactly as they do for the built-in Ollama models.
Those calls run on Rhizome's home loop (:data:`rhizome.core.aio.home_loop`): the frameworks'
async HTTP clients bind to the first loop they use, and Rhizome's sync API runs each call on a
new one, so awaiting them on the caller's loop breaks every second sync call.

Neither LangChain nor LlamaIndex is imported when this module loads: the frameworks are
recognised by duck typing, and their message classes are imported only inside a call, when the
caller evidently has them installed.

Tracing. While a LangChain retriever from ``langchain_rhizome`` runs, it stores the child
callback manager of its run in :data:`current_callbacks`; :class:`LangChainChatModel` passes it
to the wrapped model as ``config={"callbacks": ...}``, so model calls made inside a retrieval
(keyword extraction, map steps, filtering) show up nested under the retriever in LangSmith or
any other callback handler.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar

from rhizome.core.aio import home_loop, scoped
from rhizome.core.errors import ConfigurationError, ModelServerError
from rhizome.core.models.base import BaseChatModel, BaseEmbedder, Message
from rhizome.core.protocols import ChatModel, Completion, Embedder
from rhizome.core.store.cache import ModelCache

current_callbacks: ContextVar[Any] = ContextVar("rhizome_current_callbacks", default=None)
"""LangChain callbacks (a callback manager or a list of handlers) for model calls made in the
current context, or ``None``. Set by ``langchain_rhizome.RhizomeRetriever`` around a retrieval;
read by :class:`LangChainChatModel`. Context variables follow asyncio tasks, so concurrent
retrievals each see their own value."""

NO_STREAM = "nostream"
"""The run tag LangGraph's ``stream_mode="messages"`` leaves out (``langgraph.constants.TAG_NOSTREAM``):
the JSON a method asks the model for inside a retrieval is not chat for the user's stream."""


def using_callbacks(callbacks: Any) -> AbstractContextManager[Any]:
    """Make ``callbacks`` the value of :data:`current_callbacks` inside the ``with`` block."""
    return scoped(current_callbacks, callbacks)


# -- helpers -----------------------------------------------------------------------------------
_SCHEMA_INSTRUCTION = (
    "\n\nAnswer with only a JSON value (no prose, no Markdown) that follows this JSON schema:\n"
)


def _with_schema_instruction(messages: list[Message], json_schema: dict[str, Any]) -> list[Message]:
    """Copy of ``messages`` whose last user message also states the schema, for models that
    cannot constrain their output natively."""
    out = [dict(m) for m in messages]
    note = _SCHEMA_INSTRUCTION + json.dumps(json_schema, ensure_ascii=False)
    for message in reversed(out):
        if message.get("role") == "user":
            message["content"] = f"{message.get('content', '')}{note}"
            break
    else:
        out.append({"role": "user", "content": note.strip()})
    return out


def _streams_from_ollama(obj: Any) -> bool:
    """Whether ``obj`` is a LangChain or LlamaIndex Ollama model, whose stream ends with a chunk
    that says so (``done``): one that ends without it was cut short."""
    module = type(obj).__module__
    return module.split(".")[0] == "langchain_ollama" or module.startswith("llama_index.llms.ollama")


def _cut_short(name: str) -> ModelServerError:
    return ModelServerError(
        f"{name} ended its answer stream before the answer was complete (no last chunk from the "
        "server) — see the `ollama serve` log; the model may have run out of memory"
    )


def _model_label(obj: Any, *attributes: str) -> str | None:
    """The first non-empty string among ``obj``'s ``attributes`` (e.g. ``model``, ``model_name``)."""
    for attribute in attributes:
        try:
            value = getattr(obj, attribute, None)
        except Exception:  # properties of third-party objects may raise
            continue
        if isinstance(value, str) and value and value != "unknown":
            return value
    return None


def _name(prefix: str, obj: Any, label: str | None) -> str:
    base = f"{prefix}:{type(obj).__name__}"
    return f"{base}:{label}" if label else base


def _as_int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _lookup(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key)
    return getattr(container, key, None)


def _message_text(message: Any) -> str:
    """Plain text of a LangChain message (or of a bare string from a completion-style LLM)."""
    if isinstance(message, str):
        return message
    text = getattr(message, "text", None)
    if isinstance(text, str):  # langchain-core >= 1.0: a property (a str that is also callable)
        return str(text)
    if callable(text):  # langchain-core < 1.0: a method
        text = text()
        if isinstance(text, str):
            return text
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def _langchain_usage(message: Any) -> dict[str, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return {
        "prompt_tokens": _as_int(_lookup(usage, "input_tokens")),
        "completion_tokens": _as_int(_lookup(usage, "output_tokens")),
    }


def _langchain_messages(messages: list[Message]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    out = []
    for message in messages:
        kind = kinds.get(message["role"])
        if kind is None:
            raise ConfigurationError(f"unsupported message role {message['role']!r}")
        out.append(kind(content=message["content"]))
    return out


def _dimension_hint(obj: Any, *attributes: str) -> int | None:
    """The first positive integer among ``obj``'s ``attributes`` (a vector size, a window)."""
    for attribute in attributes:
        value = getattr(obj, attribute, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


# -- LangChain ---------------------------------------------------------------------------------
_TRANSPORT = frozenset({
    "base_url", "host", "headers", "timeout", "request_timeout", "max_retries", "keep_alive", "verbose", "callbacks",
    "callback_manager", "tags", "metadata", "cache", "rate_limiter", "disable_streaming", "validate_model_on_init",
    "num_gpu", "num_thread", "class_name", "client_kwargs", "async_client_kwargs", "sync_client_kwargs",
})
"""Fields of a framework model that say where and how its requests travel, not what it answers."""


def answer_settings(model: Any) -> dict[str, Any]:
    """A LangChain or LlamaIndex model's settings that can change an answer, for cache keys
    (read when the model is wrapped): its fields that hold JSON values (temperature, num_ctx,
    top_p, ...), leaving out where and how requests travel (:data:`_TRANSPORT`) and credentials
    (``*key*``, ``*secret*``). A model that is not a pydantic model gives none."""
    try:
        fields = model.model_dump()
    except Exception:  # not a pydantic model, or one that cannot dump itself
        return {}
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if name in _TRANSPORT or "key" in name or "secret" in name:
            continue
        try:
            out[name] = json.loads(json.dumps(value))
        except (TypeError, ValueError):  # a client, a callable: not a setting
            continue
    return out


T = TypeVar("T")


async def _with_retries(request: Callable[[], Coroutine[Any, Any, T]], framework_model: Any, label: str | None) -> T:
    """A LangChain or LlamaIndex model's request (``request()`` makes its coroutine, awaited on
    the home loop once per attempt) with the retries and typed errors of
    Rhizome's own Ollama models (:func:`~rhizome.core.models.ollama.send_with_retries`): busy
    or failing answers and dropped connections are sent again, a missing model, an unreachable
    server or a timeout is a Rhizome error. Errors that are not the Ollama client's or its
    transport's (another provider's, the framework's own) pass as they are."""
    from rhizome.core.models.ollama import send_with_retries

    timeout = getattr(framework_model, "request_timeout", None) or getattr(framework_model, "timeout", None)
    return await send_with_retries(
        lambda: home_loop.run(request()), host=str(getattr(framework_model, "base_url", None) or "its server"), model=label or "the model",
        timeout=timeout if isinstance(timeout, int | float) else None, retries=TRANSPORT_RETRIES, backoff=0.5,
        client_errors_only=True,
    )


TRANSPORT_RETRIES = 2
"""More attempts after a transient failure of a framework model's request (as ``OllamaChatModel``)."""


class LangChainChatModel(BaseChatModel):
    """A LangChain chat model (``ChatOllama``, ``ChatOpenAI``, ...) used as a Rhizome chat model.

    Plain calls go through ``model.ainvoke(messages)``. Calls that want JSON first try
    ``model.with_structured_output(schema, method="json_schema", include_raw=True)``, which lets
    the provider constrain decoding; when the model does not offer it, the schema is added to the
    prompt and the answer is parsed and validated (with retries) by :class:`BaseChatModel`.

    Parameters
    ----------
    model:
        Any LangChain chat model (or completion LLM): an object with ``ainvoke``.
    name:
        Identifier for manifests and cache keys; defaults to
        ``"langchain:<class name>:<model name>"``.
    structured_output:
        Set to ``False`` to never use ``with_structured_output`` (for servers that advertise
        JSON-schema output but reject it at call time).
    max_concurrency, max_retries, cache:
        As for :class:`BaseChatModel`.
    """

    def __init__(
        self,
        model: Any,
        *,
        name: str | None = None,
        structured_output: bool = True,
        max_concurrency: int = 4,
        max_retries: int = 2,
        cache: ModelCache | None = None,
    ) -> None:
        if not hasattr(model, "ainvoke"):
            raise ConfigurationError(
                f"LangChainChatModel needs a LangChain chat model with ainvoke(); got {type(model).__name__}"
            )
        label = _model_label(model, "model_name", "model", "model_id", "deployment_name")
        super().__init__(
            name or _name("langchain", model, label),
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            cache=cache,
            context_window=_dimension_hint(model, "num_ctx"),  # ChatOllama's, when set
        )
        self.model = model
        self._label = label
        self._settings = answer_settings(model)  # as wrapped: a model's own counters are no setting
        self.structured_output = structured_output
        self._structured: dict[str, Any] = {}

    def cache_identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {"name": self.name, "settings": self._settings}
        try:
            params = getattr(self.model, "_identifying_params", None)
            if isinstance(params, dict):
                identity["params"] = json.loads(json.dumps(params, default=str, sort_keys=True))
        except Exception:  # identifying params are best effort
            pass
        return identity

    def _structured_runnable(self, json_schema: dict[str, Any]) -> Any:
        """The model bound to ``json_schema`` via ``with_structured_output``, or ``None`` when the
        model does not support it. Looked up once per schema."""
        if not self.structured_output or not hasattr(self.model, "with_structured_output"):
            return None
        key = json.dumps(json_schema, sort_keys=True)
        if key not in self._structured:
            try:
                runnable = self.model.with_structured_output(
                    json_schema, method="json_schema", include_raw=True
                )
            except (NotImplementedError, TypeError, ValueError, AttributeError):
                runnable = None
            self._structured[key] = runnable
        return self._structured[key]

    async def _achat(
        self, messages: list[Message], json_schema: dict[str, Any] | None
    ) -> Completion:
        callbacks = current_callbacks.get()
        config: dict[str, Any] = {"callbacks": callbacks} if callbacks is not None else {}
        if json_schema is not None:  # a method's own step (keywords, ratings, map points), not chat
            config["tags"] = [NO_STREAM]
        kwargs: dict[str, Any] = {"config": config} if config else {}
        if json_schema is not None:
            runnable = self._structured_runnable(json_schema)
            if runnable is not None:
                result = await _with_retries(
                    lambda: runnable.ainvoke(_langchain_messages(messages), **kwargs), self.model, self._label
                )
                return _structured_completion(result)
            messages = _with_schema_instruction(messages, json_schema)
        answer = await _with_retries(
            lambda: self.model.ainvoke(_langchain_messages(messages), **kwargs), self.model, self._label
        )
        return Completion(text=_message_text(answer), **_langchain_usage(answer))

    async def _astream(self, messages: list[Message]) -> AsyncIterator[str | Completion]:
        callbacks = current_callbacks.get()
        kwargs: dict[str, Any] = {"config": {"callbacks": callbacks}} if callbacks is not None else {}
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        done = False
        async for chunk in home_loop.stream(self.model.astream(_langchain_messages(messages), **kwargs)):
            for key, value in _langchain_usage(chunk).items():  # usage arrives on one chunk
                usage[key] = max(usage[key], value)
            done = done or (getattr(chunk, "response_metadata", None) or {}).get("done") is True
            if text := _message_text(chunk):
                yield text
        if not done and _streams_from_ollama(self.model):
            raise _cut_short(self.name)
        yield Completion(text="", **usage)


def _structured_completion(result: Any) -> Completion:
    """Turn the output of ``with_structured_output(..., include_raw=True)`` into a completion.
    A parsed value is re-serialised; on a parsing error the raw text is returned so the base
    class can report it and retry."""
    raw, parsed = None, result
    if isinstance(result, dict) and "raw" in result and "parsed" in result:
        raw, parsed = result["raw"], result["parsed"]
    usage = _langchain_usage(raw) if raw is not None else {}
    if parsed is None:
        return Completion(text=_message_text(raw) if raw is not None else "", **usage)
    if hasattr(parsed, "model_dump"):
        parsed = parsed.model_dump()
    text = parsed if isinstance(parsed, str) else json.dumps(parsed, ensure_ascii=False)
    return Completion(text=text, **usage)


class _FrameworkEmbedder(BaseEmbedder):
    """A framework's embedding model used as a Rhizome embedder: ``documents`` and ``query``
    name its async methods for a batch of texts and for one query (frameworks embed queries
    their own way: instructions, prefixes), ``kind`` says what it must be, and the model and
    dimension are read from the first of ``label_attributes`` / ``dimension_attributes`` it has.
    """

    framework: ClassVar[str]
    kind: ClassVar[str]
    documents: ClassVar[str]
    query: ClassVar[str]
    label_attributes: ClassVar[tuple[str, ...]]
    dimension_attributes: ClassVar[tuple[str, ...]]

    def __init__(
        self,
        model: Any,
        *,
        name: str | None = None,
        dimension: int | None = None,
        batch_size: int = 64,
        max_concurrency: int = 2,
        cache: ModelCache | None = None,
    ) -> None:
        if not hasattr(model, self.documents):
            raise ConfigurationError(f"{type(self).__name__} needs {self.kind} with {self.documents}(); got {type(model).__name__}")
        label = _model_label(model, *self.label_attributes)
        super().__init__(
            name or _name(self.framework, model, label),
            dimension=dimension or _dimension_hint(model, *self.dimension_attributes),
            batch_size=batch_size,
            max_concurrency=max_concurrency,
            cache=cache,
        )
        self.model = model
        self._label = label

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        embed = getattr(self.model, self.documents)
        return list(await _with_retries(lambda: embed(texts), self.model, self._label))

    async def _aembed_query_batch(self, texts: list[str]) -> list[list[float]]:
        embed = getattr(self.model, self.query)
        return [list(await _with_retries(functools.partial(embed, self.query_prefix + t), self.model, self._label)) for t in texts]


class LangChainEmbedder(_FrameworkEmbedder):
    """LangChain ``Embeddings`` (``OllamaEmbeddings``, ``OpenAIEmbeddings``, ...) used as a
    Rhizome embedder, through ``aembed_documents`` (queries through ``aembed_query``).

    ``name`` defaults to ``"langchain:<class name>:<model name>"``; it is recorded in index
    manifests, so reopening an index needs an embedder with the same name. ``dimension`` is read
    from the object (``dimensions`` / ``size``) when it says, else measured on first use.
    """

    framework = "langchain"
    kind = "LangChain Embeddings"
    documents = "aembed_documents"
    query = "aembed_query"
    label_attributes = ("model", "model_name", "model_id", "deployment")
    dimension_attributes = ("dimensions", "size")

    def __init__(self, embeddings: Any, **options: Any) -> None:
        """``options``: ``name``, ``dimension``, ``batch_size``, ``max_concurrency``, ``cache``."""
        super().__init__(embeddings, **options)

    @property
    def embeddings(self) -> Any:
        """The LangChain ``Embeddings`` object."""
        return self.model


# -- LlamaIndex --------------------------------------------------------------------------------
def _llama_index_usage(response: Any) -> dict[str, int]:
    """Token counts from a LlamaIndex ``ChatResponse``: ``additional_kwargs`` (OpenAI-style
    integrations), else the provider's raw answer (an OpenAI ``usage`` block or Ollama's
    ``prompt_eval_count`` / ``eval_count``); zero when nothing reports them."""
    extra = getattr(response, "additional_kwargs", None) or {}
    prompt = _lookup(extra, "prompt_tokens")
    completion = _lookup(extra, "completion_tokens")
    raw = getattr(response, "raw", None)
    if raw is not None and prompt is None and completion is None:
        usage = _lookup(raw, "usage")
        if usage is not None:
            prompt = _lookup(usage, "prompt_tokens") or _lookup(usage, "input_tokens")
            completion = _lookup(usage, "completion_tokens") or _lookup(usage, "output_tokens")
        else:
            prompt = _lookup(raw, "prompt_eval_count")
            completion = _lookup(raw, "eval_count")
    return {"prompt_tokens": _as_int(prompt), "completion_tokens": _as_int(completion)}


class LlamaIndexLLM(BaseChatModel):
    """A LlamaIndex LLM (``llama_index.llms.ollama.Ollama``, ``OpenAI``, ...) used as a Rhizome
    chat model, through ``achat``.

    LlamaIndex has no schema-constrained chat call that takes a JSON schema, so JSON calls add
    the schema to the prompt and rely on :class:`BaseChatModel` to parse, validate and retry.
    For constrained decoding with Ollama, configure the LLM with ``json_mode=True``.
    ``name`` defaults to ``"llama_index:<class name>:<model name>"``.
    """

    def __init__(
        self,
        llm: Any,
        *,
        name: str | None = None,
        max_concurrency: int = 4,
        max_retries: int = 2,
        cache: ModelCache | None = None,
    ) -> None:
        if not hasattr(llm, "achat"):
            raise ConfigurationError(
                f"LlamaIndexLLM needs a LlamaIndex LLM with achat(); got {type(llm).__name__}"
            )
        label = None
        try:
            label = _model_label(llm.metadata, "model_name")
        except Exception:  # metadata is a property that some LLMs compute lazily
            label = None
        label = label or _model_label(llm, "model", "model_name")
        try:
            window = _dimension_hint(llm.metadata, "context_window")  # what LlamaIndex's Ollama sends as num_ctx
        except Exception:  # metadata is a property that some LLMs compute lazily
            window = None
        super().__init__(
            name or _name("llama_index", llm, label),
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            cache=cache,
            context_window=window,
        )
        self.llm = llm
        self._label = label
        self._settings = answer_settings(llm)

    def cache_identity(self) -> dict[str, Any]:
        return {"name": self.name, "settings": self._settings}

    async def _achat(
        self, messages: list[Message], json_schema: dict[str, Any] | None
    ) -> Completion:
        from llama_index.core.llms import ChatMessage

        if json_schema is not None:
            messages = _with_schema_instruction(messages, json_schema)
        chat = [ChatMessage(role=m["role"], content=m["content"]) for m in messages]
        response = await _with_retries(lambda: self.llm.achat(chat), self.llm, self._label)
        text = getattr(getattr(response, "message", None), "content", None)
        return Completion(text=text or "", **_llama_index_usage(response))

    async def _astream(self, messages: list[Message]) -> AsyncIterator[str | Completion]:
        from llama_index.core.llms import ChatMessage

        chat = [ChatMessage(role=m["role"], content=m["content"]) for m in messages]

        async def responses() -> AsyncIterator[Any]:
            async for response in await self.llm.astream_chat(chat):
                yield response

        last = None
        done = False
        async for response in home_loop.stream(responses()):
            last = response
            raw = getattr(response, "raw", None)
            done = done or (isinstance(raw, dict) and raw.get("done") is True)
            if delta := getattr(response, "delta", None):
                yield delta
        if not done and _streams_from_ollama(self.llm):
            raise _cut_short(self.name)
        yield Completion(text="", **(_llama_index_usage(last) if last is not None else {}))


class LlamaIndexEmbedder(_FrameworkEmbedder):
    """A LlamaIndex ``BaseEmbedding`` (``OllamaEmbedding``, ``HuggingFaceEmbedding``, ...) used as
    a Rhizome embedder, through ``aget_text_embedding_batch`` (queries through
    ``aget_query_embedding``).

    ``name`` defaults to ``"llama_index:<class name>:<model name>"``; ``dimension`` is read from
    ``embed_dim`` when the object has it, else measured on first use.
    """

    framework = "llama_index"
    kind = "a LlamaIndex embedding"
    documents = "aget_text_embedding_batch"
    query = "aget_query_embedding"
    label_attributes = ("model_name", "model")
    dimension_attributes = ("embed_dim", "dimensions")

    def __init__(self, embed_model: Any, **options: Any) -> None:
        """``options``: ``name``, ``dimension``, ``batch_size``, ``max_concurrency``, ``cache``."""
        super().__init__(embed_model, **options)

    @property
    def embed_model(self) -> Any:
        """The LlamaIndex embedding object."""
        return self.model


# -- recognising foreign models ----------------------------------------------------------------
def is_langchain_chat_model(obj: Any) -> bool:
    """True for LangChain language models (anything with ``ainvoke`` and
    ``with_structured_output``); retrievers and chains, which lack the latter, do not count."""
    return hasattr(obj, "ainvoke") and hasattr(obj, "with_structured_output")


def is_langchain_embeddings(obj: Any) -> bool:
    return hasattr(obj, "aembed_documents") and hasattr(obj, "embed_query")


def is_llama_index_llm(obj: Any) -> bool:
    # the class's attribute: LlamaIndex's Ollama computes ``metadata`` by asking the server
    return hasattr(obj, "achat") and hasattr(type(obj), "metadata")


def is_llama_index_embedding(obj: Any) -> bool:
    return hasattr(obj, "aget_text_embedding_batch")


def wrap_chat_model(obj: Any) -> Any:
    """Return ``obj`` as a Rhizome chat model.

    Rhizome chat models come back unchanged; LangChain chat models are wrapped in
    :class:`LangChainChatModel`, LlamaIndex LLMs in :class:`LlamaIndexLLM`; a string is read as a
    model spec (``"ollama:qwen2.5:7b-instruct"``). Anything else raises
    :class:`~rhizome.core.errors.ConfigurationError`.
    """
    if isinstance(obj, BaseChatModel):
        return obj
    if isinstance(obj, str):
        from rhizome.core.models.registry import make_chat_model

        return make_chat_model(obj)
    if is_llama_index_llm(obj):
        return LlamaIndexLLM(obj)
    if is_langchain_chat_model(obj):
        return LangChainChatModel(obj)
    if isinstance(obj, ChatModel):
        return obj
    raise ConfigurationError(
        f"cannot use {type(obj).__name__} as a chat model: pass a Rhizome chat model, a LangChain "
        "chat model (e.g. langchain_ollama.ChatOllama), a LlamaIndex LLM (e.g. "
        "llama_index.llms.ollama.Ollama) or a spec string such as 'ollama:qwen2.5:7b-instruct'"
    )


def wrap_embedder(obj: Any) -> Any:
    """Return ``obj`` as a Rhizome embedder.

    Rhizome embedders come back unchanged; LangChain ``Embeddings`` are wrapped in
    :class:`LangChainEmbedder`, LlamaIndex embeddings in :class:`LlamaIndexEmbedder`; a string is
    read as an embedder spec (``"ollama:nomic-embed-text"``, ``"hashing:384"``). Anything else
    raises :class:`~rhizome.core.errors.ConfigurationError`.
    """
    if isinstance(obj, BaseEmbedder):
        return obj
    if isinstance(obj, str):
        from rhizome.core.models.registry import make_embedder

        return make_embedder(obj)
    if is_llama_index_embedding(obj):
        return LlamaIndexEmbedder(obj)
    if is_langchain_embeddings(obj):
        return LangChainEmbedder(obj)
    if isinstance(obj, Embedder):
        return obj
    raise ConfigurationError(
        f"cannot use {type(obj).__name__} as an embedder: pass a Rhizome embedder, LangChain "
        "Embeddings (e.g. langchain_ollama.OllamaEmbeddings), a LlamaIndex embedding (e.g. "
        "llama_index.embeddings.ollama.OllamaEmbedding) or a spec string such as "
        "'ollama:nomic-embed-text'"
    )


def wrap_model(obj: Any) -> Any:
    """Wrap ``obj`` if it is a LangChain or LlamaIndex chat model or embedding; return anything
    else (Rhizome models, ``None``, plain values) unchanged. Useful for passing user-supplied
    keyword arguments on to index loaders without knowing which of them are models."""
    if isinstance(obj, (BaseChatModel, BaseEmbedder)) or obj is None or isinstance(obj, str):
        return obj
    if is_llama_index_embedding(obj) or is_langchain_embeddings(obj):
        return wrap_embedder(obj)
    if is_llama_index_llm(obj) or is_langchain_chat_model(obj):
        return wrap_chat_model(obj)
    return obj


__all__ = [
    "LangChainChatModel",
    "LangChainEmbedder",
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "current_callbacks",
    "is_langchain_chat_model",
    "is_langchain_embeddings",
    "is_llama_index_embedding",
    "is_llama_index_llm",
    "using_callbacks",
    "wrap_chat_model",
    "wrap_embedder",
    "wrap_model",
]
