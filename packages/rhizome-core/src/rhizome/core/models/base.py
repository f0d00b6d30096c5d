"""Shared behaviour of every chat model and embedder: schema-validated JSON with bounded retries,
bounded concurrency, the call cache, and usage counters.

A concrete model implements one primitive — ``_achat`` for chat, ``_aembed_batch`` for
embeddings — and inherits the rest, so Ollama, LangChain and LlamaIndex models behave alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from rhizome.core.aio import PerLoop, run_sync, scoped
from rhizome.core.errors import ConfigurationError, ModelOutputError, PromptTooLongError
from rhizome.core.models.budget import MIN_REPLY_TOKENS, prompt_tokens
from rhizome.core.protocols import Completion
from rhizome.core.store.cache import ModelCache, cache_key

M = TypeVar("M", bound=BaseModel)
_Self = TypeVar("_Self")

Message = dict[str, str]


@dataclass
class Usage:
    """Counters of what a model has done. ``calls`` counts requests that reached the model;
    answers served from the cache count in ``cache_hits`` only."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    texts: int = 0
    """Texts embedded (embedders only)."""
    by_model: dict[str, int] = field(default_factory=dict)

    def add(self, **counts: int) -> None:
        for name, value in counts.items():
            setattr(self, name, getattr(self, name) + value)

    def snapshot(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "texts": self.texts,
        }


@dataclass
class ScopeUsage:
    """What the models did inside one :func:`usage_scope`: chat calls and embedding calls."""

    chat: Usage = field(default_factory=Usage)
    embed: Usage = field(default_factory=Usage)

    def stats(self) -> dict[str, int]:
        """The counters as the flat ``stats`` of reports and retrievals."""
        return {
            "model_calls": self.chat.calls,
            "prompt_tokens": self.chat.prompt_tokens,
            "completion_tokens": self.chat.completion_tokens,
            "cache_hits": self.chat.cache_hits + self.embed.cache_hits,
            "retries": self.chat.retries,
            "embed_calls": self.embed.calls,
            "embedded_texts": self.embed.texts,
        }


_SCOPES: contextvars.ContextVar[tuple[ScopeUsage, ...]] = contextvars.ContextVar("rhizome_usage_scopes", default=())


@contextlib.contextmanager
def usage_scope() -> Iterator[ScopeUsage]:
    """Count what every model does inside the block, in this context only: the calls of one
    insert or one query, even while other threads or tasks use the same model objects
    (asyncio tasks and :func:`~rhizome.core.aio.run_sync` threads inherit the scope)."""
    usage = ScopeUsage()
    with scoped(_SCOPES, (*_SCOPES.get(), usage)):
        yield usage


def _record(own: Usage, kind: str, **counts: int) -> None:
    """Add ``counts`` to a model's own usage and to every :func:`usage_scope` around the call
    (``kind``: ``"chat"`` or ``"embed"``)."""
    own.add(**counts)
    for scope in _SCOPES.get():
        getattr(scope, kind).add(**counts)


CHAT_COUNTERS = ("calls", "prompt_tokens", "completion_tokens", "cache_hits", "retries")


def record_usage(model: Any, counts: dict[str, int]) -> None:
    """Count chat work done elsewhere — by a copy of ``model`` in a Ray worker — as ``model``'s
    own, and in every :func:`usage_scope` around the caller (``counts``: a
    :meth:`Usage.snapshot`)."""
    _record(model.usage, "chat", **{k: int(counts.get(k, 0)) for k in CHAT_COUNTERS})


class AnswerTrial:
    """The cached model answers given inside one :func:`answers_on_trial` block."""

    def __init__(self) -> None:
        self._given: list[tuple[ModelCache, str]] = []

    def _note(self, cache: ModelCache, key: str) -> None:
        self._given.append((cache, key))

    def reject(self) -> None:
        """Take every answer given inside the block out of the cache it was stored in (or read
        from): the caller refused them, so a re-run asks the model again."""
        given, self._given = self._given, []
        for cache, key in given:
            cache.delete(key)


_TRIALS: contextvars.ContextVar[tuple[AnswerTrial, ...]] = contextvars.ContextVar("rhizome_answer_trials", default=())


@contextlib.contextmanager
def answers_on_trial() -> Iterator[AnswerTrial]:
    """Keep track of the cached answers the models give inside the block — stored fresh or
    served from the cache, in this context and the tasks it starts — so that a caller whose
    own check refuses them after the model layer's validation (an extraction that found
    nothing) can take them out of the cache with :meth:`AnswerTrial.reject`: otherwise every
    re-run would be answered with the refused answer and never reach the model again."""
    trial = AnswerTrial()
    with scoped(_TRIALS, (*_TRIALS.get(), trial)):
        yield trial


VARIED_TEMPERATURE = 0.7
"""The least sampling temperature of an answer asked for under :func:`varied_sampling`: at
temperature 0 a model gives the same answer whatever its seed."""

_VARIATION: contextvars.ContextVar[int] = contextvars.ContextVar("rhizome_sampling_variation", default=0)


def varied_sampling(seed: int) -> contextlib.AbstractContextManager[int]:
    """Inside the block, chat models that can vary their sampling answer with ``seed`` and at
    least :data:`VARIED_TEMPERATURE` instead of their own (repeatable) settings: a document
    whose answers stayed invalid is tried again this way, since at temperature 0 with a fixed
    seed the model would repeat the same invalid answer on every run. Cache keys do not
    change: a valid answer found so is stored under the question's usual key, and a re-run is
    answered from the cache. ``seed`` 0 means no variation."""
    return scoped(_VARIATION, seed)


def sampling_variation() -> int:
    """The seed of the innermost :func:`varied_sampling` block around, or 0 outside any."""
    return _VARIATION.get()


def sampling(temperature: float, seed: int) -> dict[str, Any]:
    """The ``temperature`` and ``seed`` a model that can vary its sampling sends: its own, or
    inside :func:`varied_sampling` the block's seed and at least :data:`VARIED_TEMPERATURE`."""
    variation = sampling_variation()
    return {"temperature": max(temperature, VARIED_TEMPERATURE) if variation else temperature, "seed": variation or seed}


def _given(cache: ModelCache, key: str) -> None:
    """Note a cached answer given (stored or read) in every :func:`answers_on_trial` around."""
    for trial in _TRIALS.get():
        trial._note(cache, key)


def _without_thoughts(text: str) -> str:
    """``text`` without its closed ``<think>...</think>`` blocks, in one linear pass (a lazy
    regular expression took quadratic time on answers full of unclosed ``<think>`` tags)."""
    kept: list[str] = []
    position = 0
    while (start := text.find("<think>", position)) != -1:
        end = text.find("</think>", start + len("<think>"))
        if end == -1:
            break
        kept.append(text[position:start])
        position = end + len("</think>")
    kept.append(text[position:])
    return "".join(kept)


def _partial(text: str, tag: str) -> int:
    """How many of ``text``'s last characters may be the start of ``tag`` (at most
    ``len(tag) - 1``): the text that must wait for the next piece to be told apart."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


class _ThoughtFilter:
    """Takes the closed ``<think>...</think>`` blocks out of a text that arrives in pieces, as
    :func:`_without_thoughts` does out of a whole one, and the whitespace before the first
    character shown. Text outside a block is given back at once, but for the few last
    characters of a piece that may begin a ``<think>`` tag; a block is held until it closes
    (then dropped) or the text ends (then given back: an unclosed block is kept)."""

    _OPEN, _CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._carry = ""  # characters that may begin the tag looked for next
        self._thought: list[str] | None = None  # the block being held, from its <think>
        self._started = False

    def feed(self, piece: str) -> str:
        text, self._carry = self._carry + piece, ""
        shown: list[str] = []
        while text:
            if self._thought is None:
                start = text.find(self._OPEN)
                if start == -1:
                    keep = _partial(text, self._OPEN)
                    shown.append(text[: len(text) - keep])
                    self._carry = text[len(text) - keep :]
                    break
                shown.append(text[:start])
                self._thought = [self._OPEN]
                text = text[start + len(self._OPEN) :]
            else:
                end = text.find(self._CLOSE)
                if end == -1:
                    keep = _partial(text, self._CLOSE)
                    self._thought.append(text[: len(text) - keep])
                    self._carry = text[len(text) - keep :]
                    break
                self._thought = None
                text = text[end + len(self._CLOSE) :]
        return self._lead("".join(shown))

    def end(self) -> str:
        """What is still held when the text is complete."""
        rest = "".join(self._thought or ()) + self._carry
        self._thought, self._carry = None, ""
        return self._lead(rest)

    def _lead(self, text: str) -> str:
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        return text


def _unfenced(text: str) -> str:
    """The body of a Markdown code fence (optionally tagged ``json``) that encloses all of
    ``text``, or ``text`` itself. Plain string operations: a backtracking regular expression
    took minutes on a long answer that opens a fence and never closes it."""
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return text
    body = text[3:-3]
    if body[:4] in ("json", "JSON"):
        body = body[4:]
    return body.strip()


def _cleaned(text: str) -> str:
    """A model answer without its ``<think>`` blocks and enclosing Markdown fence."""
    return _unfenced(_without_thoughts(text).strip())


def extract_json(text: str) -> Any:
    """Parse the JSON value in a model answer: strips ``<think>`` blocks and Markdown fences,
    and falls back to the outermost ``{...}`` or ``[...]`` span. Any text either gives a value
    or raises ``ValueError`` (nesting too deep for Python's parser included), in linear time."""
    cleaned = _cleaned(text)
    candidates = [cleaned]
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = cleaned.find(opener), cleaned.rfind(closer)
        if start != -1 and end > start:
            candidates.append(cleaned[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
            continue
    raise ValueError(f"no JSON value found in model output: {text[:200]!r}")


def validate_json(text: str, schema: type[M]) -> M:
    """The ``schema`` value of the JSON in a model answer, as ``schema.model_validate`` of
    :func:`extract_json` gives it (the same value, or the same error). An answer that is
    clean JSON once thoughts and fences are stripped — nearly every answer of a model asked
    for JSON — is parsed and validated in one step by pydantic, a third faster than parsing
    with the ``json`` module first; any other answer takes that way."""
    try:
        return schema.model_validate_json(_cleaned(text))
    except ValidationError:
        return schema.model_validate(extract_json(text))


@functools.lru_cache(maxsize=512)
def _schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a pydantic model, built once per class: pydantic regenerates it on
    every call (about 2.5 ms for the extraction schema), which at high concurrency was most of
    the CPU time an extraction call spends in our process. Callers must not mutate it."""
    return schema.model_json_schema()


class BaseChatModel(ABC):
    """Base class of chat models.

    Parameters
    ----------
    name:
        Identifier recorded in manifests and cache keys, e.g. ``"ollama:qwen2.5:7b"``.
    max_concurrency:
        Requests in flight at once from this instance (per event loop).
    context_window:
        Tokens the model sees at once, prompt and answer (``None``: unknown). Prompt builders
        pack their context to fit it (:func:`rhizome.core.models.budget.fit`), and a request
        that would not fit with :data:`~rhizome.core.models.budget.MIN_REPLY_TOKENS` to spare
        is refused with :class:`~rhizome.core.errors.PromptTooLongError` before it is sent.
    max_retries:
        Extra attempts when a structured answer is not valid JSON or fails the schema; each retry
        shows the model its previous answer (at most :data:`RETRY_ECHO_CHARS` of it: its start
        and end) and the validation error.
    cache:
        A :class:`ModelCache`; identical calls are then answered from it, across runs.
    """

    def __init__(
        self,
        name: str,
        *,
        max_concurrency: int = 4,
        max_retries: int = 2,
        cache: ModelCache | None = None,
        context_window: int | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        if context_window is not None and context_window < 1:
            raise ConfigurationError("context_window must be a positive number of tokens or None")
        self.context_window = context_window
        if max_retries < 0:
            raise ConfigurationError("max_retries cannot be negative")
        self.name = name
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.cache = cache
        self.usage = Usage()
        self._semaphore: PerLoop[asyncio.Semaphore] = PerLoop(
            lambda: asyncio.Semaphore(self.max_concurrency)
        )

    # -- the one primitive ---------------------------------------------------------------------
    @abstractmethod
    async def _achat(self, messages: list[Message], json_schema: dict[str, Any] | None) -> Completion:
        """Send ``messages``; when ``json_schema`` is given, constrain the answer to it."""

    def cache_identity(self) -> dict[str, Any]:
        """What besides the messages determines an answer (model options); part of cache keys."""
        return {"name": self.name}

    # -- plumbing ------------------------------------------------------------------------------
    async def _call(
        self, messages: list[Message], json_schema: dict[str, Any] | None
    ) -> tuple[Completion, str | None]:
        """One model call, or its cached answer. Returns the completion and, for a fresh answer,
        the cache key under which :meth:`_remember` may store it once it is known to be valid."""
        self._check_fits(messages)
        key = self._key(messages, json_schema)
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                _record(self.usage, "chat", cache_hits=1)
                _given(self.cache, key)
                return Completion(text=hit["text"], cached=True), None
        async with self._semaphore.get():
            completion = await self._achat(messages, json_schema)
        _record(
            self.usage,
            "chat",
            calls=1,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )
        return completion, key

    def _check_fits(self, messages: list[Message]) -> None:
        if self.context_window is None:
            return
        needed = prompt_tokens(messages)
        if needed + MIN_REPLY_TOKENS > self.context_window:
            raise PromptTooLongError(
                f"a prompt of about {needed} tokens leaves less than {MIN_REPLY_TOKENS} of the "
                f"{self.context_window}-token context window of {self.name} for the answer — {self._window_advice()}"
            )

    def _window_advice(self) -> str:
        """What to do when a prompt does not fit :attr:`context_window` (a model whose window is
        not its own setting says otherwise)."""
        return "raise --num-ctx (RHIZOME_NUM_CTX, num_ctx=), or use smaller chunks or context settings"

    def _key(self, messages: list[Message], json_schema: dict[str, Any] | None) -> str | None:
        if self.cache is None:
            return None
        return cache_key({"model": self.cache_identity(), "messages": messages, "schema": json_schema})

    def _remember(self, key: str | None, completion: Completion) -> None:
        if key is not None and self.cache is not None:
            self.cache.put(key, {"text": completion.text}, kind="chat")
            _given(self.cache, key)

    @staticmethod
    def _messages(prompt: str, system: str | None) -> list[Message]:
        messages: list[Message] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        return messages

    # -- public API ----------------------------------------------------------------------------
    async def acomplete(self, prompt: str, *, system: str | None = None) -> Completion:
        """The answer to ``prompt`` as plain text, without its ``<think>`` blocks and the
        whitespace before its first character, as :meth:`astream` gives it; the whole answer
        enters the cache."""
        completion, key = await self._call(self._messages(prompt, system), None)
        self._remember(key, completion)
        return completion.model_copy(update={"text": _without_thoughts(completion.text).lstrip()})

    async def acomplete_json(self, prompt: str, schema: type[M], *, system: str | None = None) -> M:
        """Ask for JSON matching ``schema``; validate it; on failure retry, showing the model its
        previous answer and the error. Only valid answers enter the cache."""
        json_schema = _schema_of(schema)
        first = self._messages(prompt, system)
        messages = first
        last_text, last_error = "", ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                _record(self.usage, "chat", retries=1)
            completion, key = await self._call(messages, json_schema)
            try:
                value = validate_json(completion.text, schema)
            except (ValueError, ValidationError) as exc:
                last_text, last_error = completion.text, _short_error(exc)
                messages = [
                    *first,
                    {"role": "assistant", "content": _excerpt(last_text)},
                    {
                        "role": "user",
                        "content": f"That answer could not be used ({last_error}). "
                        "Reply again with only a JSON value that follows the schema.",
                    },
                ]
                continue
            self._remember(key, completion)
            if attempt:  # a re-run asks the original question: let it find the valid answer
                self._remember(self._key(first, json_schema), completion)
            return value
        raise ModelOutputError(
            f"{self.name} returned invalid {schema.__name__} JSON {self.max_retries + 1} times "
            f"(last error: {last_error}). Try a larger or instruction-tuned model, or raise max_retries.",
            last_output=last_text,
        )

    async def astream(self, prompt: str, *, system: str | None = None) -> AsyncIterator[str]:
        """The answer to ``prompt`` in pieces as the model writes them (models without a
        streaming primitive, and answers from the cache, come as one piece), without its
        ``<think>`` blocks, as structured answers are read. The whole answer enters the cache
        once it is complete."""
        messages = self._messages(prompt, system)
        self._check_fits(messages)
        key = self._key(messages, None)
        thoughts = _ThoughtFilter()
        if key is not None and self.cache is not None and (hit := self.cache.get(key)) is not None:
            _record(self.usage, "chat", cache_hits=1)
            _given(self.cache, key)
            if text := thoughts.feed(hit["text"]) + thoughts.end():
                yield text
            return
        pieces: list[str] = []
        async with self._semaphore.get():
            async for piece in self._astream(messages):
                if isinstance(piece, Completion):  # the primitive's last word: the token counts
                    _record(self.usage, "chat", calls=1, prompt_tokens=piece.prompt_tokens, completion_tokens=piece.completion_tokens)
                    break
                pieces.append(piece)
                if shown := thoughts.feed(piece):
                    yield shown
        if rest := thoughts.end():
            yield rest
        self._remember(key, Completion(text="".join(pieces)))

    async def _astream(self, messages: list[Message]) -> AsyncIterator[str | Completion]:
        """Streaming primitive: text pieces, then a :class:`Completion` with the token counts.
        The default sends one request and yields its answer whole."""
        completion = await self._achat(messages, None)
        if completion.text:
            yield completion.text
        yield completion

    def complete(self, prompt: str, *, system: str | None = None) -> Completion:
        return run_sync(self.acomplete(prompt, system=system))

    def complete_json(self, prompt: str, schema: type[M], *, system: str | None = None) -> M:
        return run_sync(self.acomplete_json(prompt, schema, system=system))

    async def aclose(self) -> None:
        """Release what this model holds for the running event loop (HTTP clients, say). Sync
        calls release it themselves (see :func:`rhizome.core.aio.run_sync`); async code that owns
        its loop may call this, or use ``async with model:``. The base class holds nothing."""
        return None

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


RETRY_ECHO_CHARS = 2000
"""Most characters of an invalid answer shown back to the model when it is asked again (about
600 tokens): a runaway answer shown whole made the retry too long for the context window."""


def _excerpt(text: str, limit: int = RETRY_ECHO_CHARS) -> str:
    """``text``, or when it is longer than ``limit`` its start and its end (where an answer cut
    off by the length limit broke), with how much was left out between them."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    return f"{text[:head]}\n[... {len(text) - limit} characters left out ...]\n{text[-(limit - head):]}"


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5]]
        return "; ".join(parts)
    return str(exc)[:300]


EMBEDDING_FIX = "check the embedding model and its server (a broken or changed model), then re-run"


def checked_vectors(vectors: Any, expected: int, dimension: int | None, name: str) -> np.ndarray:
    """The one check every embedding passes before it is cached, stored or searched with (the
    vectors of a :class:`BaseEmbedder` and, in the index, of any embedder): ``vectors`` as a
    float32 matrix of ``expected`` rows, or a :class:`ModelOutputError` naming the embedder
    ``name``. Refused: not one row per text, rows of different or no length, a length other
    than ``dimension`` (when given), values that are not finite (a NaN vector is never found
    again). All-zero rows are allowed: the hashing embedder gives one for text without words,
    and it is stored and searchable (it scores 0 against any query)."""
    try:
        with np.errstate(over="ignore"):  # beyond float32's range becomes inf, refused below
            array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ModelOutputError(f"{name} returned vectors that are not rows of numbers of one length ({exc}); {EMBEDDING_FIX}") from exc
    if array.ndim != 2 or array.shape[0] != expected:
        got = f"{array.shape[0]} vectors" if array.ndim == 2 else f"output of shape {array.shape}"
        raise ModelOutputError(f"{name} returned {got} for {expected} texts; {EMBEDDING_FIX}")
    if array.shape[1] == 0 or array.shape[1] != (dimension or array.shape[1]):
        expected_length = f", expected {dimension}" if dimension else ""
        raise ModelOutputError(f"{name} returned {array.shape[1]}-dimensional vectors{expected_length}; {EMBEDDING_FIX}")
    bad = int((~np.isfinite(array).all(axis=1)).sum())
    if bad:
        raise ModelOutputError(f"{name} returned {bad} of {expected} vectors containing NaN or infinity; {EMBEDDING_FIX}")
    return array


class BaseEmbedder(ABC):
    """Base class of embedders: batching, bounded concurrency, a per-text cache, L2 normalisation.

    Parameters
    ----------
    name: identifier recorded in index manifests; opening an index with another name fails.
    batch_size: texts per request.
    max_concurrency: requests in flight at once (per event loop).
    cache: a :class:`ModelCache`; each text's vector is then computed once, across runs (not
        for an embedder whose vectors cost less than a lookup, ``cacheable = False``: it keeps none).
    query_prefix, document_prefix: prepended to queries (:meth:`aembed_query`) and to stored
        texts (:meth:`aembed`), for models trained with such instructions (nomic-embed-text's
        ``search_query:`` / ``search_document:``). Empty by default.
    """

    cacheable: bool = True
    """Whether a call cache may keep this embedder's vectors (``False``: computing one costs
    less than looking it up, and ``cache=`` is ignored)."""

    def __init__(
        self,
        name: str,
        *,
        dimension: int | None = None,
        batch_size: int = 64,
        max_concurrency: int = 2,
        cache: ModelCache | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        if batch_size < 1 or max_concurrency < 1:
            raise ConfigurationError("batch_size and max_concurrency must be at least 1")
        self.name = name
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self._dimension = dimension
        self.batch_size = batch_size
        self.max_concurrency = max_concurrency
        self.cache = cache if self.cacheable else None
        self.usage = Usage()
        self._semaphore: PerLoop[asyncio.Semaphore] = PerLoop(
            lambda: asyncio.Semaphore(self.max_concurrency)
        )

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    @abstractmethod
    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        """Embed one batch (at most ``batch_size`` texts)."""

    async def _aembed_query_batch(self, texts: list[str]) -> list[list[float]]:
        """Embed one batch of queries; the default adds ``query_prefix`` and embeds them like
        documents. Adapters of frameworks with a query method of their own override it."""
        return await self._aembed_batch([self.query_prefix + t for t in texts])

    async def _batch(self, texts: list[str], query: bool = False) -> np.ndarray:
        async with self._semaphore.get():
            if query:
                vectors = await self._aembed_query_batch(texts)
            else:
                vectors = await self._aembed_batch([self.document_prefix + t for t in texts])
        _record(self.usage, "embed", calls=1, texts=len(texts))
        return self._checked(vectors, len(texts))

    def _checked(self, vectors: Any, expected: int) -> np.ndarray:
        """Embedding output as a matrix (:func:`checked_vectors`, against :attr:`dimension` once
        declared or learned from the first answer)."""
        array = checked_vectors(vectors, expected, self._dimension, self.name)
        if self._dimension is None:
            self._dimension = int(array.shape[1])
        return array

    def _reusable(self, cached: Any) -> np.ndarray | None:
        """A vector from the cache, or ``None`` when it would fail :meth:`_checked` (a NaN
        vector cached by an older version, say): it is then embedded and cached again."""
        try:
            vector = np.asarray(cached, dtype=np.float32)
        except (TypeError, ValueError, OverflowError):
            return None
        if vector.ndim != 1 or vector.size == 0 or vector.size != (self._dimension or vector.size):
            return None
        return vector if bool(np.isfinite(vector).all()) else None

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of texts to store and search (chunks, entity descriptions, reports...)."""
        return await self._aembed(texts, query=False)

    async def aembed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of search queries; differs from :meth:`aembed` only for models that embed
        queries differently (a prefix, or a framework's own query method)."""
        return await self._aembed(texts, query=True)

    async def _aembed(self, texts: Sequence[str], query: bool) -> np.ndarray:
        requested = list(texts)
        if not requested:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        # a text repeated within one call is embedded once
        texts = list(dict.fromkeys(requested))
        result: list[np.ndarray | None] = [None] * len(texts)
        keys: list[str | None] = [None] * len(texts)
        todo: list[int] = []
        for i, text in enumerate(texts):
            if self.cache is not None:
                prefix = self.query_prefix if query else self.document_prefix
                keys[i] = cache_key({"embedder": self.name, "query": query, "prefix": prefix, "text": text})
                hit = self.cache.get(keys[i])  # type: ignore[arg-type]
                vector = None if hit is None else self._reusable(hit)
                if vector is not None:
                    _record(self.usage, "embed", cache_hits=1)
                    result[i] = vector
                    continue
            todo.append(i)
        batches = [todo[i : i + self.batch_size] for i in range(0, len(todo), self.batch_size)]
        arrays = await asyncio.gather(*(self._batch([texts[i] for i in b], query) for b in batches))
        for batch, array in zip(batches, arrays):
            for i, vector in zip(batch, array):
                result[i] = vector
                if self.cache is not None:
                    self.cache.put(keys[i], vector.tolist(), kind="embed")  # type: ignore[arg-type]
        position = {text: i for i, text in enumerate(texts)}
        # again over the whole call: cached rows read before the dimension was known are checked too
        matrix = self._checked([result[position[t]] for t in requested], len(requested))
        norms = np.linalg.norm(matrix.astype(np.float64), axis=1, keepdims=True)  # no overflow near float32's limit
        norms[norms == 0] = 1.0
        return (matrix / norms).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return run_sync(self.aembed(texts))

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return run_sync(self.aembed_query(texts))

    async def aclose(self) -> None:
        """Release what this embedder holds for the running event loop (see
        :meth:`BaseChatModel.aclose`)."""
        return None

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


__all__ = ["EMBEDDING_FIX", "AnswerTrial", "BaseChatModel", "BaseEmbedder", "Message", "ScopeUsage", "Usage", "answers_on_trial", "checked_vectors", "extract_json", "sampling", "sampling_variation", "usage_scope", "validate_json", "varied_sampling"]
