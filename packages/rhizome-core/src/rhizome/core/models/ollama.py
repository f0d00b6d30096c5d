"""Chat models and embedders served by a local Ollama server, through the official ``ollama``
client.

Everything generic — JSON validation and retries, the call cache, concurrency limits, usage
counters, batching and normalisation of embeddings — comes from :mod:`rhizome.core.models.base`;
this module only speaks Ollama's HTTP API and turns its failures into the typed errors of
:mod:`rhizome.core.errors`, each of which says what to do next:

* server not reachable → :class:`~rhizome.core.errors.ModelUnavailableError`
* model not pulled → :class:`~rhizome.core.errors.ModelNotFoundError`
* no answer in time → :class:`~rhizome.core.errors.ModelTimeoutError`
* still failing after the retries (5xx, 429, dropped connections) →
  :class:`~rhizome.core.errors.ModelServerError`
* anything else the server refuses → :class:`~rhizome.core.errors.ModelError`

Dropped connections and 5xx answers are retried a few times with a short exponential backoff.

The ``ollama`` client holds an ``httpx.AsyncClient``, which must stay on the event loop it was
first used in, so every instance keeps one client per loop (:class:`rhizome.core.aio.PerLoop`).
The sync methods run each call on a fresh loop and close that loop's client when it is done.
"""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel

from rhizome.core.aio import PerLoop, run_sync
from rhizome.core.environment import positive_int
from rhizome.core.errors import (
    ConfigurationError,
    ModelError,
    ModelNotFoundError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    RhizomeError,
)
from rhizome.core.models.base import (
    BaseChatModel,
    BaseEmbedder,
    Message,
    sampling,
)
from rhizome.core.models.transport import (
    CONNECT_TIMEOUT,
    ClientSlot,
    Transient,
    check_transport_settings,
    retry_after_seconds,
    send_with_backoff,
)
from rhizome.core.protocols import Completion
from rhizome.core.store.cache import ModelCache

try:
    import ollama  # which builds a default client from OLLAMA_HOST as it is imported
except ValueError as exc:  # a malformed OLLAMA_HOST (a port that is not a number)
    raise ConfigurationError(
        f"OLLAMA_HOST={os.environ.get('OLLAMA_HOST')!r} is not an address ({exc}); set it to HOST:PORT or "
        "http://HOST:PORT (e.g. localhost:11434), or unset it"
    ) from exc

T = TypeVar("T")
S = TypeVar("S", bound="_OllamaTransport")
M = TypeVar("M", bound=BaseModel)

DEFAULT_OLLAMA_HOST = "http://localhost:11434"
"""Where Ollama listens unless ``OLLAMA_HOST`` or ``host=`` says otherwise."""

_DEFAULT_PORT = 11434


# -- host handling -----------------------------------------------------------------------------
def resolve_host(host: str | None = None) -> str:
    """The base URL of the Ollama server.

    ``host`` wins; if it is ``None`` or empty, ``OLLAMA_HOST`` is used, else
    ``http://localhost:11434``. A value without a scheme (``"gpu-box"``, ``"gpu-box:11500"``,
    ``":11500"``) is taken as plain HTTP on Ollama's port 11434 unless a port is given.
    """
    raw = (host or os.environ.get("OLLAMA_HOST") or "").strip()
    if not raw:
        return DEFAULT_OLLAMA_HOST
    default_port: int | None = None
    if "://" not in raw:
        raw = "http://" + raw
        default_port = _DEFAULT_PORT
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https"):
        raise ConfigurationError(
            f"Ollama host {host or os.environ.get('OLLAMA_HOST')!r} must use http:// or https://"
        )
    try:
        port = parts.port
    except ValueError:
        raise ConfigurationError(
            f"Ollama host {raw!r} has an invalid port; use e.g. 'localhost:11434'"
        ) from None
    hostname = parts.hostname or "localhost"
    netloc = f"[{hostname}]" if ":" in hostname else hostname
    port = port if port is not None else default_port
    if port is not None:
        netloc = f"{netloc}:{port}"
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"


def _model_key(name: str) -> str:
    """``name`` with the implicit ``:latest`` tag made explicit (tags follow the last ``/``)."""
    name = name.strip()
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def _spec_name(name: str) -> str:
    """The model name as recorded in specs and manifests: an explicit ``:latest`` tag is
    dropped, so ``nomic-embed-text`` and ``nomic-embed-text:latest`` name one model."""
    name = name.strip()
    return name[: -len(":latest")] if name.endswith(":latest") else name


# -- error mapping ------------------------------------------------------------------------------
def _unreachable(host: str) -> ModelUnavailableError:
    # (what else to do depends on the caller: the command line adds it where it can work)
    return ModelUnavailableError(
        f"Ollama is not reachable at {host} — start it with `ollama serve` (OLLAMA_HOST says where it runs)"
    )


def _is_model_missing(exc: ollama.ResponseError) -> bool:
    text = str(exc.error).lower()
    if "try pulling" in text:
        return True
    return exc.status_code == 404 and "model" in text and "not found" in text


def _is_think_rejected(exc: ollama.ResponseError) -> bool:
    return exc.status_code == 400 and "think" in str(exc.error).lower()


def _map_error(exc: BaseException, *, host: str, model: str, timeout: float | None) -> RhizomeError:
    """Translate an exception from the ``ollama`` client into a Rhizome error.

    Raises :class:`Transient` (wrapping the error to report if retries run out) for failures
    that another attempt may cure."""
    if isinstance(exc, ollama.ResponseError):
        status, reason = exc.status_code, str(exc.error).strip() or "no reason given"  # an empty body (a proxy, a crash)
        if _is_model_missing(exc):
            return ModelNotFoundError(f"Ollama has no model '{model}' — run `ollama pull {model}`")
        if status == 404:
            return ModelError(
                f"{host} answered HTTP 404 ({reason}) for model '{model}' — check that the host "
                "points at an Ollama server"
            )
        error = ModelError(f"Ollama at {host} failed on model '{model}': {reason} (HTTP {status})")
        unretryable = "does not support" in str(reason).lower()
        if (status >= 500 or status == 429) and not unretryable:  # busy, overloaded, restarting
            raise Transient(
                ModelServerError(
                    f"{error}; still failing after the retries — raise --max-retries "
                    "(RHIZOME_MAX_RETRIES, transport_retries=) or lower --concurrency"
                )
            )
        return error
    if isinstance(exc, httpx.ConnectTimeout):
        return _unreachable(host)
    if isinstance(exc, httpx.TimeoutException):
        return ModelTimeoutError(
            f"Ollama did not answer within {f'{timeout:g} s' if timeout else 'the timeout'} (model '{model}' at {host}) — raise "
            "--timeout (RHIZOME_TIMEOUT, timeout=), or use a smaller model or a smaller --num-ctx"
        )
    if isinstance(
        exc,
        httpx.ReadError
        | httpx.WriteError
        | httpx.RemoteProtocolError
        | ConnectionResetError
        | ConnectionAbortedError
        | BrokenPipeError,
    ):
        raise Transient(
            ModelServerError(
                f"Ollama at {host} dropped the connection while serving model '{model}' ({exc!r})"
                " — see the `ollama serve` log; the model may have run out of memory, so a "
                "smaller num_ctx or model may help"
            )
        )
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ConfigurationError(f"invalid Ollama host {host!r}: {exc}")
    if isinstance(exc, httpx.ConnectError | ConnectionError):
        return _unreachable(host)
    if isinstance(exc, httpx.HTTPError):
        return ModelError(f"request to Ollama at {host} failed: {exc!r}")
    if isinstance(exc, ValueError):  # a body that is not JSON, or not shaped like Ollama's
        return ModelError(
            f"{host} did not answer like an Ollama server ({exc}) — check the host setting"
        )
    raise exc


DEFAULT_NUM_CTX = 32768
"""The context window sent when neither the caller nor the environment names one: what
LightRAG's server asks of Ollama, and room for GraphRAG's 12,000-token contexts and answers."""


def default_num_ctx() -> int:
    """``RHIZOME_NUM_CTX``, else ``OLLAMA_CONTEXT_LENGTH`` (the server's own setting, when this
    process sees it), else :data:`DEFAULT_NUM_CTX`."""
    for name in ("RHIZOME_NUM_CTX", "OLLAMA_CONTEXT_LENGTH"):
        value = positive_int(name, "tokens")
        if value is not None:
            return value
    return DEFAULT_NUM_CTX


_RETRY_AFTER: ContextVar[float | None] = ContextVar("rhizome_ollama_retry_after", default=None)
"""Seconds the last answer of this task asked to wait (``Retry-After``), else ``None``."""


async def _note_retry_after(response: httpx.Response) -> None:
    """httpx response hook: remember a 429/503's ``Retry-After`` (seconds) for :meth:`_send`
    (the ``ollama`` client's errors do not carry the headers)."""
    if response.status_code in (429, 503) and (seconds := retry_after_seconds(response.headers)) is not None:
        _RETRY_AFTER.set(seconds)


def _ollama_slot(factory: Callable[[], ollama.AsyncClient]) -> ClientSlot[ollama.AsyncClient]:
    return ClientSlot(factory, lambda client: client.close())


class _OllamaTransport:
    """Shared by chat model and embedder: host, per-loop clients, retries, error mapping."""

    model: str
    host: str
    timeout: float
    transport_retries: int
    retry_backoff: float

    def _init_transport(
        self,
        model: str,
        host: str | None,
        timeout: float,
        transport_retries: int,
        retry_backoff: float,
    ) -> None:
        if not model or not model.strip():
            raise ConfigurationError("an Ollama model name is required, e.g. 'qwen2.5:7b'")
        check_transport_settings(timeout, transport_retries, retry_backoff)
        self.model = model.strip()
        self.host = resolve_host(host)
        self.timeout = float(timeout)
        self.transport_retries = transport_retries
        self.retry_backoff = float(retry_backoff)
        self._slots: PerLoop[ClientSlot[ollama.AsyncClient]] = PerLoop(
            lambda: _ollama_slot(self._new_client), close=lambda slot: slot.aclose()
        )

    def _new_client(self) -> ollama.AsyncClient:
        return ollama.AsyncClient(
            host=self.host,
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT)),
            event_hooks={"response": [_note_retry_after]},
        )

    @property
    def _client(self) -> ollama.AsyncClient:
        return self._slots.get().client

    def on_host(self: S, host: str) -> S:
        """A copy of this model that sends its requests to ``host`` (every other setting, and
        the cache, kept): spreads a parallel run over several Ollama servers."""
        twin = copy.copy(self)
        twin.host = resolve_host(host)
        twin._slots = PerLoop(lambda: _ollama_slot(twin._new_client), close=lambda slot: slot.aclose())
        return twin

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (a new one is made on next use).

        Async code that is done with the model should call this (or use ``async with``) before
        its loop ends, so no pooled connection is left open."""
        await self._slots.get().aclose()

    async def _send(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` with bounded retries of transient failures and typed errors
        (:func:`send_with_retries`)."""
        return await send_with_retries(
            call, host=self.host, model=self.model, timeout=self.timeout,
            retries=self.transport_retries, backoff=self.retry_backoff,
        )


async def send_with_retries(
    call: Callable[[], Awaitable[T]], *, host: str, model: str, timeout: float | None, retries: int, backoff: float,
    client_errors_only: bool = False,
) -> T:
    """Run ``call`` (a request through the ``ollama`` client: Rhizome's, or a LangChain or
    LlamaIndex model's) with up to ``retries`` more attempts after a transient failure, and the
    failure as a typed error. With ``client_errors_only`` (a framework's call), an exception
    that is not the client's or its transport's is raised as it is.

    Before another attempt it waits what the server asked for (``Retry-After`` on a 429 or 503,
    at most :data:`~rhizome.core.models.transport.MAX_RETRY_AFTER` seconds, when the client is Rhizome's), else ``backoff``
    doubled on each attempt, times a random factor between 0.5 and 1.5 so that concurrent
    requests do not come back in step."""
    _RETRY_AFTER.set(None)

    def classify(exc: Exception) -> RhizomeError:
        if client_errors_only and not isinstance(exc, ollama.ResponseError | httpx.HTTPError | OSError):
            raise exc
        asked = _RETRY_AFTER.get()
        _RETRY_AFTER.set(None)  # the next attempt's answer says again
        try:
            return _map_error(exc, host=host, model=model, timeout=timeout)
        except Transient as transient:
            transient.retry_after = asked
            raise

    return await send_with_backoff(call, classify, retries=retries, backoff=backoff)


# -- chat ---------------------------------------------------------------------------------------
class OllamaChatModel(_OllamaTransport, BaseChatModel):
    """A chat model served by Ollama (``/api/chat``, non-streaming).

    Structured calls send the schema as Ollama's ``format``, so the server constrains decoding to
    it; the answer is still validated, and retried on failure, by :class:`BaseChatModel`.

    Parameters
    ----------
    model:
        An Ollama model name, e.g. ``"qwen2.5:7b"``.
    host:
        Server URL; default ``OLLAMA_HOST``, else ``http://localhost:11434``. ``"host:port"``
        without a scheme is accepted.
    num_ctx:
        Context window in tokens; default :func:`default_num_ctx` (``RHIZOME_NUM_CTX``, else
        ``OLLAMA_CONTEXT_LENGTH``, else 32,768). Always sent: Ollama's own default is small and
        silently cuts the front of longer prompts. Prompt builders pack their context to fit it
        (:meth:`~rhizome.core.models.base.BaseChatModel.prompt_budget`).
    temperature, seed, num_predict:
        Sampling options; the defaults make answers repeatable. ``num_predict=None`` leaves the
        answer length to the server. A document whose answers stayed invalid is tried again
        with another seed and a higher temperature
        (:func:`~rhizome.core.models.base.varied_sampling`).
    timeout:
        Seconds to wait for one answer.
    keep_alive:
        How long the server keeps the model loaded afterwards, e.g. ``"10m"``; ``None`` uses the
        server's setting.
    think:
        Whether reasoning models may think before answering. Sent explicitly; when the server
        says the model does not know the ``think`` parameter, the request is repeated without it
        (and later requests omit it).
    transport_retries, retry_backoff:
        Extra attempts after a dropped connection, a 5xx or a 429 answer, waiting the server's
        ``Retry-After``, else ``retry_backoff`` seconds doubled on each further attempt, with
        jitter.
    max_concurrency, max_retries, cache:
        See :class:`BaseChatModel`.
    """

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        num_ctx: int | None = None,
        temperature: float = 0.0,
        seed: int = 42,
        num_predict: int | None = None,
        timeout: float = 180.0,
        keep_alive: str | None = None,
        think: bool = False,
        transport_retries: int = 2,
        retry_backoff: float = 0.5,
        max_concurrency: int = 4,
        max_retries: int = 2,
        cache: ModelCache | None = None,
    ) -> None:
        num_ctx = default_num_ctx() if num_ctx is None else num_ctx
        if num_ctx < 1:
            raise ConfigurationError("num_ctx must be a positive number of tokens")
        self._init_transport(model, host, timeout, transport_retries, retry_backoff)
        BaseChatModel.__init__(
            self,
            f"ollama:{_spec_name(self.model)}",
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            cache=cache,
            context_window=num_ctx,
        )
        self.num_ctx = num_ctx
        self.temperature = temperature
        self.seed = seed
        self.num_predict = num_predict
        self.keep_alive = keep_alive
        self.think = think
        self._send_think = True
        self._trained: int | None = None
        """The model's trained context (``/api/show``), once asked; 0 when the server does not say."""

    def options(self) -> dict[str, Any]:
        """The ``options`` object sent with every request (under
        :func:`~rhizome.core.models.base.varied_sampling`, with its seed and at least
        :data:`~rhizome.core.models.base.VARIED_TEMPERATURE`)."""
        options: dict[str, Any] = {"num_ctx": self.num_ctx, **sampling(self.temperature, self.seed)}
        if self.num_predict is not None:
            options["num_predict"] = self.num_predict
        return options

    def cache_identity(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "num_ctx": self.num_ctx,
            "temperature": self.temperature,
            "seed": self.seed,
            "num_predict": self.num_predict,
            "think": self.think,
        }

    async def _request(self, messages: list[Message], json_schema: dict[str, Any] | None, *, stream: bool) -> Any:
        """One ``/api/chat`` request, sent again without ``think`` when the server says the
        model does not know it (and without it from then on). A streamed request gives the
        stream and its first part: the server's refusal comes with that part."""

        async def once(think: bool | None) -> Any:
            response = await self._client.chat(  # type: ignore[call-overload]  # streamed or not, chosen at run time
                model=self.model,
                messages=messages,
                format=json_schema or None,
                options=self.options(),
                think=think,
                keep_alive=self.keep_alive,
                stream=stream,
            )
            return (response, await anext(response, None)) if stream else response

        if not self._send_think:
            return await once(None)
        try:
            return await once(self.think)
        except ollama.ResponseError as exc:
            if not _is_think_rejected(exc):
                raise
        self._send_think = False
        return await once(None)

    async def _fit(self, messages: list[Message]) -> None:
        """Check ``messages`` against the window the model really runs with. Ollama runs a model
        with the smaller of ``num_ctx`` and the context it was trained with, and cuts the front
        of a longer prompt without a word; so the first request asks the server for the latter
        (``/api/show``), and from then on it bounds :attr:`context_window` (what budgets read)."""
        if self._trained is None:
            self._trained = await self._trained_context()
            if self._trained and self._trained < self.num_ctx:
                self.context_window = self._trained
        self._check_fits(messages)

    async def _trained_context(self) -> int:
        try:
            shown = await self._client.show(self.model)
        except (ollama.ResponseError, httpx.HTTPError, OSError):
            return 0  # a server that cannot say now: the request itself will report what is wrong
        info = shown.modelinfo or {}
        value = info.get(f"{info.get('general.architecture')}.context_length")
        return value if isinstance(value, int) and value > 0 else 0

    def _window_advice(self) -> str:
        if self._trained and self._trained < self.num_ctx:  # the window is the model's, not num_ctx
            return (f"it is the context {self.model} was trained with (Ollama runs it with no more, whatever "
                    "num_ctx says, and would cut the prompt): use smaller chunks or context settings, or a model "
                    "with a longer context")
        return super()._window_advice()

    async def _achat(
        self, messages: list[Message], json_schema: dict[str, Any] | None
    ) -> Completion:
        await self._fit(messages)
        response = await self._send(lambda: self._request(messages, json_schema, stream=False))
        return Completion(
            text=response.message.content or "",
            prompt_tokens=response.prompt_eval_count or 0,
            completion_tokens=response.eval_count or 0,
        )

    async def _astream(self, messages: list[Message]) -> AsyncIterator[str | Completion]:
        """The answer as Ollama streams it. Failures before the first piece are retried like
        any request; a stream that breaks or ends before the server's last chunk raises
        :class:`ModelError` (what was shown cannot be taken back)."""

        await self._fit(messages)
        stream, part = await self._send(lambda: self._request(messages, None, stream=True))
        try:
            while part is not None:
                if part.message.content:
                    yield part.message.content
                if part.done:
                    yield Completion(text="", prompt_tokens=part.prompt_eval_count or 0, completion_tokens=part.eval_count or 0)
                    return
                part = await anext(stream, None)
        except Exception as exc:
            try:
                error = _map_error(exc, host=self.host, model=self.model, timeout=self.timeout)
            except Transient as transient:
                error = transient.final
            raise error from exc
        finally:
            # close the client's stream here, in this task: left open, the loop's shutdown closes
            # it and the generator inside it at once ("aclose(): asynchronous generator is
            # already running" on standard error)
            await stream.aclose()
        raise ModelServerError(
            f"Ollama at {self.host} ended the answer stream of model '{self.model}' before the answer "
            "was complete — see the `ollama serve` log; the model may have run out of memory"
        )

    def __repr__(self) -> str:
        return f"OllamaChatModel(model={self.model!r}, host={self.host!r}, num_ctx={self.num_ctx})"


# -- embeddings ---------------------------------------------------------------------------------
_RETRIEVAL_INSTRUCTION = "Represent this sentence for searching relevant passages: "

EMBEDDING_PREFIXES: dict[str, tuple[str, str]] = {
    "nomic-embed-text": ("search_query: ", "search_document: "),
    "mxbai-embed-large": (_RETRIEVAL_INSTRUCTION, ""),
    "snowflake-arctic-embed": (_RETRIEVAL_INSTRUCTION, ""),
}
"""(query prefix, document prefix) of embedding model families that were trained with them, as
their model cards describe; keyed by the model name without tag or namespace."""


def embedding_prefixes(model: str) -> tuple[str, str]:
    """The (query, document) prefixes of an Ollama embedding model, ``("", "")`` when none."""
    family = model.strip().rsplit("/", 1)[-1].split(":", 1)[0]
    return EMBEDDING_PREFIXES.get(family, ("", ""))


class OllamaEmbedder(_OllamaTransport, BaseEmbedder):
    """Embeddings from Ollama's batched ``/api/embed`` endpoint, one request per batch.

    Parameters
    ----------
    model:
        An embedding model, e.g. ``"nomic-embed-text"``.
    host, timeout, keep_alive, transport_retries, retry_backoff:
        As for :class:`OllamaChatModel` (``timeout`` defaults to 60 s per batch).
    batch_size:
        Texts per request.
    truncate:
        Let the server cut texts longer than the model's context instead of failing.
    num_ctx:
        Context window sent as an option; ``None`` keeps the model's default.
    dimension:
        Expected vector size, if known (saves a probe request when it is asked for).
    query_prefix, document_prefix:
        Instructions the model was trained with; ``None`` takes the model family's own from
        :data:`EMBEDDING_PREFIXES` (nomic-embed-text: ``search_query:`` / ``search_document:``;
        mxbai-embed-large and snowflake-arctic-embed: a retrieval instruction on queries),
        and none for other models.
    max_concurrency, cache:
        See :class:`BaseEmbedder`.
    """

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 32,
        truncate: bool = True,
        num_ctx: int | None = None,
        keep_alive: str | None = None,
        dimension: int | None = None,
        transport_retries: int = 2,
        retry_backoff: float = 0.5,
        max_concurrency: int = 2,
        cache: ModelCache | None = None,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
    ) -> None:
        if num_ctx is not None and num_ctx < 1:
            raise ConfigurationError("num_ctx must be a positive number of tokens")
        self._init_transport(model, host, timeout, transport_retries, retry_backoff)
        family_query, family_document = embedding_prefixes(self.model)
        BaseEmbedder.__init__(
            self,
            f"ollama:{_spec_name(self.model)}",
            dimension=dimension,
            batch_size=batch_size,
            max_concurrency=max_concurrency,
            cache=cache,
            query_prefix=family_query if query_prefix is None else query_prefix,
            document_prefix=family_document if document_prefix is None else document_prefix,
        )
        self.truncate = truncate
        self.num_ctx = num_ctx
        self.keep_alive = keep_alive

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        options = {"num_ctx": self.num_ctx} if self.num_ctx is not None else None

        async def call() -> ollama.EmbedResponse:
            return await self._client.embed(
                model=self.model,
                input=list(texts),
                truncate=self.truncate,
                options=options,
                keep_alive=self.keep_alive,
            )

        response = await self._send(call)
        return [list(vector) for vector in response.embeddings]


    def __repr__(self) -> str:
        return f"OllamaEmbedder(model={self.model!r}, host={self.host!r})"


# -- server status ------------------------------------------------------------------------------
@dataclass
class OllamaStatus:
    """What :func:`check_ollama` found at ``host``."""

    reachable: bool
    host: str
    models: list[str] = field(default_factory=list)
    """Names of the installed models, as the server lists them (e.g. ``"qwen2.5:7b"``)."""
    error: str | None = None
    """Why the server could not be used, when ``reachable`` is false."""
    slow: bool = False
    """The server accepted the connection but did not answer in time: it runs, but is busy."""

    def has_model(self, model: str) -> bool:
        """Whether ``model`` is installed; ``"x"`` and ``"x:latest"`` are the same model."""
        wanted = _model_key(model)
        return any(_model_key(name) == wanted for name in self.models)

    def unavailable(self) -> ModelUnavailableError:
        """The error that says why the server cannot be used and what to do."""
        if self.slow and self.error:
            return ModelUnavailableError(self.error)
        return _unreachable(self.host)

    def require(self, model: str) -> None:
        """Raise unless the server is reachable and has ``model``."""
        require_model(self, model)


def require_model(status: OllamaStatus, model: str) -> None:
    """Raise :class:`ModelUnavailableError` if the server was unreachable, or
    :class:`ModelNotFoundError` if it lacks ``model`` (with or without the ``:latest`` tag)."""
    if not status.reachable:
        raise status.unavailable()
    if not status.has_model(model):
        raise ModelNotFoundError(f"Ollama has no model '{model}' — run `ollama pull {model}`")


async def acheck_ollama(host: str | None = None, timeout: float = 15.0, connect_timeout: float = 2.0) -> OllamaStatus:
    """Ask the server for its models (``GET /api/tags``).

    Connecting gets ``connect_timeout`` seconds (nothing listening answers at once); a server
    that accepted the connection gets ``timeout`` seconds to answer, since a busy Ollama (loading
    a model, serving long requests) can take a while. A server that is down, too slow or not
    Ollama does not raise: the returned status says what went wrong (``slow`` when it is running
    but did not answer in time). Only a malformed ``host`` raises :class:`ConfigurationError`."""
    base = resolve_host(host)
    headers = {}
    if api_key := os.environ.get("OLLAMA_API_KEY"):  # as the ollama client does
        headers["authorization"] = f"Bearer {api_key}"
    limits = httpx.Timeout(timeout, connect=min(connect_timeout, timeout))
    try:
        async with httpx.AsyncClient(base_url=base, timeout=limits, headers=headers) as client:
            response = await client.get("/api/tags")
    except httpx.ConnectTimeout:
        return OllamaStatus(False, base, error=f"no connection within {connect_timeout:g} s")
    except httpx.TimeoutException:
        return OllamaStatus(
            False,
            base,
            error=f"Ollama is running at {base} but did not list its models within {timeout:g} s "
            "(busy, or loading a model); try again, or raise --timeout",
            slow=True,
        )
    except (httpx.HTTPError, OSError) as exc:
        return OllamaStatus(False, base, error=str(exc) or type(exc).__name__)
    if response.status_code != 200:
        return OllamaStatus(
            False,
            base,
            error=f"GET /api/tags answered HTTP {response.status_code}; is this an Ollama server?",
        )
    try:
        entries = response.json()["models"] or []
        names = [str(e.get("name") or e.get("model")) for e in entries]
    except (ValueError, KeyError, TypeError, AttributeError):
        return OllamaStatus(False, base, error="GET /api/tags did not return a model list")
    return OllamaStatus(True, base, models=names)


def check_ollama(host: str | None = None, timeout: float = 15.0, connect_timeout: float = 2.0) -> OllamaStatus:
    """Synchronous :func:`acheck_ollama`."""
    return run_sync(acheck_ollama(host, timeout, connect_timeout))


__all__ = [
    "DEFAULT_NUM_CTX",
    "DEFAULT_OLLAMA_HOST",
    "OllamaChatModel",
    "OllamaEmbedder",
    "OllamaStatus",
    "acheck_ollama",
    "check_ollama",
    "default_num_ctx",
    "send_with_retries",
    "require_model",
    "resolve_host",
]
