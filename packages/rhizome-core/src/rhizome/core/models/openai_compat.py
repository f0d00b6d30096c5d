"""Chat models and embedders served by an OpenAI-compatible server — vLLM, llama.cpp's
``llama-server``, LM Studio, OpenAI itself — through the official ``openai`` client
(``pip install 'rhizome-core[openai]'``).

It behaves as the Ollama backend does (:mod:`rhizome.core.models.ollama`): everything generic
comes from :mod:`rhizome.core.models.base`, retries and per-loop clients from
:mod:`rhizome.core.models.transport`; this module speaks ``/v1/chat/completions``,
``/v1/embeddings`` and ``/v1/models`` and turns failures into typed errors:

* server not reachable → :class:`~rhizome.core.errors.ModelUnavailableError`
* model not served → :class:`~rhizome.core.errors.ModelNotFoundError`
* no answer in time → :class:`~rhizome.core.errors.ModelTimeoutError`
* still failing after the retries (5xx, 429, dropped connections) →
  :class:`~rhizome.core.errors.ModelServerError`
* anything else the server refuses → :class:`~rhizome.core.errors.ModelError`

The server is named by ``base_url=``, else ``RHIZOME_BASE_URL``, else ``OPENAI_BASE_URL``,
else OpenAI's own API; the key by ``api_key=``, else ``RHIZOME_OPENAI_API_KEY``, else
``OPENAI_API_KEY`` (local servers take any key, and one is sent when none is set). The
client's own retries are off: transient failures are retried here, as for Ollama.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from rhizome.core.aio import PerLoop, run_sync
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
from rhizome.core.models.ollama import default_num_ctx, embedding_prefixes
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
    import openai
except ImportError as exc:  # an optional dependency
    raise ConfigurationError(
        "openai: models need the official openai client: pip install 'rhizome-core[openai]' (or `uv add openai`)"
    ) from exc
try:  # the transport of the openai client (httpx2 from openai 3 on, httpx before)
    import httpx2 as _http
except ImportError:  # pragma: no cover - older openai clients
    _http = httpx  # type: ignore[misc]

T = TypeVar("T")
S = TypeVar("S", bound="_OpenAITransport")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where requests go unless ``base_url=``, ``RHIZOME_BASE_URL`` or ``OPENAI_BASE_URL`` says otherwise."""

UNUSED_API_KEY = "unused"
"""The key sent when none is set: local servers (vLLM, llama.cpp, LM Studio) accept any."""

WINDOW_FIELDS = ("max_model_len", "context_length", "max_context_length", "context_window", "n_ctx")
"""Fields of a ``/v1/models`` entry that give the model's context window, as servers name it
(vLLM: ``max_model_len``; OpenRouter and LM Studio: ``context_length`` / ``max_context_length``;
Groq: ``context_window``); llama.cpp's server gives ``meta.n_ctx_train``."""


def resolve_base_url(base_url: str | None = None) -> str:
    """The base URL of the server's API: ``base_url``, else ``RHIZOME_BASE_URL``, else
    ``OPENAI_BASE_URL``, else :data:`DEFAULT_BASE_URL`. A URL without a path gets ``/v1``
    (``http://localhost:8000`` is vLLM's ``http://localhost:8000/v1``); one without a scheme
    is taken as plain HTTP."""
    raw = (base_url or os.environ.get("RHIZOME_BASE_URL") or os.environ.get("OPENAI_BASE_URL") or "").strip()
    if not raw:
        return DEFAULT_BASE_URL
    if "://" not in raw:
        raw = "http://" + raw
    parts = urlsplit(raw)
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise ConfigurationError(f"base URL {raw!r} has an invalid port; use e.g. http://localhost:8000/v1") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"base URL {raw!r} must be http(s)://HOST[:PORT][/PATH], e.g. http://localhost:8000/v1")
    path = parts.path.rstrip("/") or "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


def resolve_api_key(api_key: str | None = None) -> str:
    """``api_key``, else ``RHIZOME_OPENAI_API_KEY``, else ``OPENAI_API_KEY``, else :data:`UNUSED_API_KEY`."""
    for value in (api_key, os.environ.get("RHIZOME_OPENAI_API_KEY"), os.environ.get("OPENAI_API_KEY")):
        if value and value.strip():
            return value.strip()
    return UNUSED_API_KEY


# -- error mapping ------------------------------------------------------------------------------
def _unreachable(base_url: str) -> ModelUnavailableError:
    return ModelUnavailableError(
        f"no OpenAI-compatible server is reachable at {base_url} — start it (vLLM: `vllm serve MODEL`; llama.cpp: "
        "`llama-server -m FILE`; LM Studio: its local server), or point --base-url (RHIZOME_BASE_URL) at it"
    )


def _not_served(base_url: str, model: str, served: list[str] | None = None) -> ModelNotFoundError:
    listed = f" (it serves: {', '.join(served[:10])})" if served else ""
    return ModelNotFoundError(
        f"the server at {base_url} serves no model '{model}'{listed} — use a model id its /v1/models lists "
        f"(`rhizome status --base-url {base_url}` shows them), or load that model there"
    )


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = inner.get("message") if isinstance(inner, dict) else inner
        if text:
            return str(text)
    return str(exc.message)


def _refuses(exc: BaseException, *words: str) -> bool:
    """Whether ``exc`` is the server refusing a request parameter named by one of ``words``."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422, 501):
        return False
    text = _message(exc).lower()
    return any(word in text for word in words)


def _map_error(exc: BaseException, *, base_url: str, model: str, timeout: float | None) -> RhizomeError:
    """The Rhizome error of a failed request; raises :class:`Transient` for a failure another
    attempt may cure."""
    if isinstance(exc, openai.APIStatusError):
        status, reason = exc.status_code, _message(exc)
        if status == 404:
            if "model" in reason.lower():
                return _not_served(base_url, model)
            return ModelError(f"{base_url} answered HTTP 404 ({reason}) — check that --base-url (RHIZOME_BASE_URL) is "
                              "the server's OpenAI-compatible API, usually ending in /v1")
        if status in (401, 403):
            return ModelError(f"{base_url} refused the API key (HTTP {status}: {reason}) — set OPENAI_API_KEY "
                              "(or RHIZOME_OPENAI_API_KEY) to a key this server accepts")
        error = ModelError(f"the server at {base_url} failed on model '{model}': {reason} (HTTP {status})")
        if status >= 500 or status == 429:  # busy, overloaded, restarting
            raise Transient(
                ModelServerError(f"{error}; still failing after the retries — raise --max-retries "
                                 "(RHIZOME_MAX_RETRIES, transport_retries=) or lower --concurrency"),
                retry_after_seconds(exc.response.headers) if status in (429, 503) else None,
            )
        return error
    cause = exc.__cause__ if isinstance(exc, openai.APIConnectionError) and exc.__cause__ is not None else exc
    if isinstance(cause, _http.ConnectTimeout | httpx.ConnectTimeout):
        return _unreachable(base_url)
    if isinstance(exc, openai.APITimeoutError) or isinstance(cause, _http.TimeoutException | httpx.TimeoutException):
        return ModelTimeoutError(
            f"the server at {base_url} did not answer within {f'{timeout:g} s' if timeout else 'the timeout'} "
            f"(model '{model}') — raise --timeout (RHIZOME_TIMEOUT, timeout=), or use a smaller model"
        )
    if isinstance(cause, _http.UnsupportedProtocol | _http.InvalidURL | httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ConfigurationError(f"invalid base URL {base_url!r}: {cause}")
    if isinstance(cause, _http.ConnectError | httpx.ConnectError | ConnectionRefusedError):
        return _unreachable(base_url)
    if isinstance(cause, _http.HTTPError | httpx.HTTPError | ConnectionError | BrokenPipeError) or isinstance(exc, openai.APIConnectionError):
        raise Transient(ModelServerError(
            f"the server at {base_url} dropped the connection while serving model '{model}' ({cause!r}) — see the "
            "server's log; the model may have run out of memory"
        ))
    if isinstance(exc, openai.APIError | ValueError):  # a body not shaped like the API's
        return ModelError(f"{base_url} did not answer like an OpenAI-compatible server ({exc}) — check --base-url")
    raise exc


class _OpenAITransport:
    """Shared by chat model and embedder: server, key, per-loop clients, retries, errors."""

    model: str
    base_url: str
    timeout: float
    transport_retries: int
    retry_backoff: float

    def _init_transport(self, model: str, base_url: str | None, api_key: str | None, timeout: float,
                        transport_retries: int, retry_backoff: float) -> None:
        if not model or not model.strip():
            raise ConfigurationError("a model name is required, as the server's /v1/models lists it, e.g. 'Qwen/Qwen2.5-7B-Instruct'")
        check_transport_settings(timeout, transport_retries, retry_backoff)
        self.model = model.strip()
        self.base_url = resolve_base_url(base_url)
        self._api_key = resolve_api_key(api_key)
        self.timeout = float(timeout)
        self.transport_retries = transport_retries
        self.retry_backoff = float(retry_backoff)
        self._slots = self._new_slots()

    def _new_slots(self) -> PerLoop[ClientSlot[openai.AsyncOpenAI]]:
        return PerLoop(lambda: ClientSlot(self._new_client, lambda client: client.close()), close=lambda slot: slot.aclose())

    def _new_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=openai.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT)),
            max_retries=0,  # retried by _send, as every Rhizome backend retries
        )

    @property
    def _client(self) -> openai.AsyncOpenAI:
        return self._slots.get().client

    def on_host(self: S, base_url: str) -> S:
        """A copy of this model that sends its requests to ``base_url`` (every other setting,
        and the cache, kept): spreads a parallel run over several servers."""
        twin = copy.copy(self)
        twin.base_url = resolve_base_url(base_url)
        twin._slots = twin._new_slots()
        return twin

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (a new one is made on next use)."""
        await self._slots.get().aclose()

    async def _send(self, call: Callable[[], Awaitable[T]]) -> T:
        def classify(exc: Exception) -> RhizomeError:
            return _map_error(exc, base_url=self.base_url, model=self.model, timeout=self.timeout)

        return await send_with_backoff(call, classify, retries=self.transport_retries, backoff=self.retry_backoff)

    def _raise_mapped(self, exc: Exception) -> None:
        try:
            error: RhizomeError = _map_error(exc, base_url=self.base_url, model=self.model, timeout=self.timeout)
        except Transient as transient:
            error = transient.final
        raise error from exc


# -- chat ---------------------------------------------------------------------------------------
JSON_MODES = ("json_schema", "json_object", None)
"""How a structured answer is asked for, best first: the schema as ``response_format``
(decoding constrained to it), any JSON object, or the prompt alone. A server that refuses one
is asked the next way from then on."""


def _schema_name(schema: dict[str, Any]) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "answer"))[:64]
    return name or "answer"


class OpenAIChatModel(_OpenAITransport, BaseChatModel):
    """A chat model served by an OpenAI-compatible server (``/v1/chat/completions``).

    Structured calls send the schema as ``response_format`` (``json_schema``), so servers that
    can constrain decoding to it do; a server that refuses it is asked for a JSON object, then
    for plain text (the prompt describes the JSON). The answer is validated, and retried on
    failure, by :class:`BaseChatModel`.

    Parameters
    ----------
    model:
        The model id the server lists at ``/v1/models``, e.g. ``"Qwen/Qwen2.5-7B-Instruct"``.
    base_url, api_key:
        The server and its key; see :func:`resolve_base_url` and :func:`resolve_api_key`.
    context_window:
        Tokens the model sees at once. The first request asks ``/v1/models``; where the server
        says (vLLM's ``max_model_len``, llama.cpp's ``n_ctx_train``, ``context_length``...),
        that bounds it. Default: what the server says, else :func:`~rhizome.core.models.ollama.default_num_ctx`
        (``RHIZOME_NUM_CTX``, else 32,768).
    temperature, seed, max_tokens:
        Sampling settings; the defaults make answers repeatable where the server honours
        ``seed``. A document whose answers stayed invalid is tried again with another seed and
        a higher temperature (:func:`~rhizome.core.models.base.varied_sampling`).
    timeout, transport_retries, retry_backoff:
        Seconds to wait for one answer; extra attempts after a dropped connection, a 5xx or a
        429, waiting the server's ``Retry-After``, else ``retry_backoff`` doubled each time.
    max_concurrency, max_retries, cache:
        See :class:`BaseChatModel`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        context_window: int | None = None,
        temperature: float = 0.0,
        seed: int = 42,
        max_tokens: int | None = None,
        timeout: float = 180.0,
        transport_retries: int = 2,
        retry_backoff: float = 0.5,
        max_concurrency: int = 4,
        max_retries: int = 2,
        cache: ModelCache | None = None,
    ) -> None:
        if context_window is not None and context_window < 1:
            raise ConfigurationError("context_window must be a positive number of tokens")
        if max_tokens is not None and max_tokens < 1:
            raise ConfigurationError("max_tokens must be a positive number of tokens")
        self._init_transport(model, base_url, api_key, timeout, transport_retries, retry_backoff)
        BaseChatModel.__init__(
            self, f"openai:{self.model}", max_concurrency=max_concurrency, max_retries=max_retries, cache=cache,
            context_window=context_window or default_num_ctx(),
        )
        self.window_setting = context_window
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.served_window: int | None = None
        """The context window ``/v1/models`` gives, once asked; 0 when the server does not say."""
        self._json_mode = 0
        self._stream_usage = True

    def sampling(self) -> dict[str, Any]:
        """The sampling settings sent with every request (under
        :func:`~rhizome.core.models.base.varied_sampling`, its seed and at least
        :data:`~rhizome.core.models.base.VARIED_TEMPERATURE`)."""
        settings = sampling(self.temperature, self.seed)
        if self.max_tokens is not None:
            settings["max_tokens"] = self.max_tokens
        return settings

    def cache_identity(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model, "temperature": self.temperature, "seed": self.seed,
                "max_tokens": self.max_tokens}

    def response_format(self, json_schema: dict[str, Any] | None, level: int | None = None) -> dict[str, Any] | None:
        """The ``response_format`` of a request for ``json_schema`` (``None``: none sent), asked
        the way :data:`JSON_MODES` ``[level]`` says (default: the best the server has taken)."""
        mode = JSON_MODES[self._json_mode if level is None else level] if json_schema is not None else None
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": _schema_name(json_schema or {}), "schema": json_schema}}
        return {"type": mode} if mode else None

    async def _request(self, messages: list[Message], json_schema: dict[str, Any] | None, *, stream: bool) -> Any:
        """One request; sent again the next way when the server refuses the structured-output
        mode (or, streamed, the usage report) it was sent with, and that way from then on."""
        while True:
            level = self._json_mode  # concurrent requests refused alike step down once, not once each
            request: dict[str, Any] = {"model": self.model, "messages": messages, **self.sampling()}
            if (response_format := self.response_format(json_schema, level)) is not None:
                request["response_format"] = response_format
            if stream:
                request["stream"] = True
                if self._stream_usage:
                    request["stream_options"] = {"include_usage": True}
            try:
                return await self._client.chat.completions.create(**request)
            except openai.APIStatusError as exc:
                if response_format is not None and level < len(JSON_MODES) - 1 and _refuses(
                    exc, "response_format", "json_schema", "json_object", "json mode", "structured"
                ):
                    self._json_mode = max(self._json_mode, level + 1)
                elif stream and self._stream_usage and _refuses(exc, "stream_options", "include_usage"):
                    self._stream_usage = False
                else:
                    raise

    async def _fit(self, messages: list[Message]) -> None:
        """Check ``messages`` against the window the server runs the model with: the first
        request asks ``/v1/models``, and what it says bounds :attr:`context_window`."""
        if self.served_window is None:
            self.served_window = await self._served_window()
            if self.served_window:
                self.context_window = min(self.served_window, self.window_setting or self.served_window)
        self._check_fits(messages)

    async def _served_window(self) -> int:
        try:
            page = await self._client.models.list()
        except (openai.APIError, httpx.HTTPError, _http.HTTPError, OSError, ValueError):
            return 0  # a server that cannot say now: the request itself will report what is wrong
        for entry in page.data:
            if entry.id == self.model:
                return model_window(entry.to_dict())
        return 0

    def _window_advice(self) -> str:
        if self.served_window and self.context_window == self.served_window:
            return (f"it is the context window {self.base_url} serves {self.model} with (its /v1/models says so): use "
                    "smaller chunks or context settings, or serve the model with a longer context (vLLM "
                    "--max-model-len, llama.cpp -c)")
        return "raise --num-ctx (RHIZOME_NUM_CTX, context_window=), or use smaller chunks or context settings"

    async def _achat(self, messages: list[Message], json_schema: dict[str, Any] | None) -> Completion:
        await self._fit(messages)
        response = await self._send(lambda: self._request(messages, json_schema, stream=False))
        if not getattr(response, "choices", None):
            raise ModelError(f"{self.base_url} answered without a choice for model '{self.model}' — check --base-url")
        usage = response.usage
        return Completion(
            text=response.choices[0].message.content or "",
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
        )

    async def _astream(self, messages: list[Message]) -> AsyncIterator[str | Completion]:
        """The answer as the server streams it (server-sent events). Failures before the first
        piece are retried like any request; a stream that breaks, or ends before a choice
        finished, raises a typed error (what was shown cannot be taken back)."""
        await self._fit(messages)
        stream = await self._send(lambda: self._request(messages, None, stream=True))
        finished, usage = False, None
        try:
            async for chunk in stream:
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    if choice.delta is not None and choice.delta.content:
                        yield choice.delta.content
                    finished = finished or choice.finish_reason is not None
        except Exception as exc:
            self._raise_mapped(exc)
        finally:
            await stream.close()
        if not finished:
            raise ModelServerError(
                f"the server at {self.base_url} ended the answer stream of model '{self.model}' before the answer "
                "was complete — see the server's log; the model may have run out of memory"
            )
        yield Completion(text="", prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
                         completion_tokens=(usage.completion_tokens or 0) if usage else 0)

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r}, context_window={self.context_window})"


def model_window(entry: dict[str, Any]) -> int:
    """The context window a ``/v1/models`` entry gives (:data:`WINDOW_FIELDS`, or llama.cpp's
    ``meta.n_ctx_train``), 0 when it gives none."""
    meta = entry.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    for value in [*(entry.get(name) for name in WINDOW_FIELDS), meta.get("n_ctx_train")]:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


# -- embeddings ---------------------------------------------------------------------------------
class OpenAIEmbedder(_OpenAITransport, BaseEmbedder):
    """Embeddings from ``/v1/embeddings``, one request per batch.

    ``model``, ``base_url``, ``api_key``, ``timeout`` (60 s per batch), ``transport_retries``
    and ``retry_backoff`` are as for :class:`OpenAIChatModel`; ``query_prefix`` and
    ``document_prefix`` default to the model family's own, as for
    :class:`~rhizome.core.models.ollama.OllamaEmbedder`; the rest is :class:`BaseEmbedder`'s.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 32,
        dimension: int | None = None,
        transport_retries: int = 2,
        retry_backoff: float = 0.5,
        max_concurrency: int = 2,
        cache: ModelCache | None = None,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
    ) -> None:
        self._init_transport(model, base_url, api_key, timeout, transport_retries, retry_backoff)
        family_query, family_document = embedding_prefixes(self.model)
        BaseEmbedder.__init__(
            self, f"openai:{self.model}", dimension=dimension, batch_size=batch_size, max_concurrency=max_concurrency,
            cache=cache, query_prefix=family_query if query_prefix is None else query_prefix,
            document_prefix=family_document if document_prefix is None else document_prefix,
        )

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        response = await self._send(
            lambda: self._client.embeddings.create(model=self.model, input=list(texts), encoding_format="float")
        )
        return [list(item.embedding) for item in sorted(response.data, key=lambda item: item.index)]

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"


# -- server status ------------------------------------------------------------------------------
@dataclass
class OpenAIServerStatus:
    """What :func:`check_openai_server` found at ``base_url``."""

    reachable: bool
    base_url: str
    models: list[str] = field(default_factory=list)
    """The model ids ``/v1/models`` lists."""
    windows: dict[str, int] = field(default_factory=dict)
    """The context window of each model that has one there."""
    error: str | None = None

    def require(self, model: str) -> None:
        """Raise unless the server is reachable and serves ``model``."""
        if not self.reachable and self.error and "answered HTTP" in self.error:  # it runs, but refuses
            raise ModelUnavailableError(f"the server at {self.base_url} cannot be used: {self.error}")
        if not self.reachable:
            raise ModelUnavailableError(f"{_unreachable(self.base_url)} ({self.error})")
        if model not in self.models:
            raise _not_served(self.base_url, model, self.models)


async def acheck_openai_server(base_url: str | None = None, timeout: float = 15.0, connect_timeout: float = 2.0) -> OpenAIServerStatus:
    """Ask the server for its models (``GET /v1/models``). A server that is down, too slow or
    not OpenAI-compatible does not raise: the status says what went wrong. Only a malformed
    ``base_url`` raises :class:`ConfigurationError`."""
    base = resolve_base_url(base_url)
    headers = {"authorization": f"Bearer {resolve_api_key()}"}
    limits = httpx.Timeout(timeout, connect=min(connect_timeout, timeout))
    try:
        async with httpx.AsyncClient(timeout=limits, headers=headers) as client:
            response = await client.get(f"{base}/models")
    except httpx.ConnectTimeout:
        return OpenAIServerStatus(False, base, error=f"no connection within {connect_timeout:g} s")
    except httpx.TimeoutException:
        return OpenAIServerStatus(False, base, error=f"it did not list its models within {timeout:g} s (busy?); try again, or raise --timeout")
    except (httpx.HTTPError, OSError) as exc:
        return OpenAIServerStatus(False, base, error=str(exc) or type(exc).__name__)
    if response.status_code != 200:
        return OpenAIServerStatus(False, base, error=f"GET {base}/models answered HTTP {response.status_code}; is this "
                                  "an OpenAI-compatible API (a key it accepts, a path ending in /v1)?")
    try:
        entries = [e for e in response.json()["data"] if isinstance(e, dict)]
        models = [str(e["id"]) for e in entries]
    except (ValueError, KeyError, TypeError):
        return OpenAIServerStatus(False, base, error=f"GET {base}/models did not return a model list")
    windows = {str(e["id"]): w for e in entries if (w := model_window(e))}
    return OpenAIServerStatus(True, base, models=models, windows=windows)


def check_openai_server(base_url: str | None = None, timeout: float = 15.0, connect_timeout: float = 2.0) -> OpenAIServerStatus:
    """Synchronous :func:`acheck_openai_server`."""
    return run_sync(acheck_openai_server(base_url, timeout, connect_timeout))


__all__ = [
    "DEFAULT_BASE_URL",
    "JSON_MODES",
    "OpenAIChatModel",
    "OpenAIEmbedder",
    "OpenAIServerStatus",
    "acheck_openai_server",
    "check_openai_server",
    "model_window",
    "resolve_api_key",
    "resolve_base_url",
]
