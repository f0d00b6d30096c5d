"""What every ``rhizome`` subcommand shares: the model flags and the choice of models.

The umbrella command line (``rhizome.rag.cli``) and the commands that method packages add
through the ``rhizome.commands`` entry points (e.g. ``rhizome classify`` from rhizome-gorag)
both build on this module, so a method package never imports the umbrella.

Only argparse and the standard library at module level: ``rhizome --help`` must not load the
models, numpy or the method packages. Everything heavy is imported inside the functions that
use it.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OFFLINE_EMBED = "hashing:384"
"""The embedder spec of ``--offline`` (and of the fall-back when Ollama is not there)."""


def default_cache_path() -> Path:
    """The CLI's model-call cache: ``$RHIZOME_CACHE_DIR``, else ``$XDG_CACHE_HOME/rhizome``, else
    ``~/.cache/rhizome``; the file ``model-calls.sqlite`` in it."""
    base = os.environ.get("RHIZOME_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rhizome"
    )
    return Path(base) / "model-calls.sqlite"


def model_cache(args: argparse.Namespace) -> Any:
    """The :class:`~rhizome.core.store.cache.ModelCache` the flags ask for (``--cache FILE``, the
    default file), or ``None`` with ``--no-cache`` or when the index keeps the cache itself
    (``args.cache_in_index``: a database index shares it with every writer and Ray worker)."""
    if getattr(args, "no_cache", False) or getattr(args, "cache_in_index", False):
        return None
    from rhizome.core.store.cache import ModelCache

    return ModelCache(Path(args.cache) if getattr(args, "cache", None) else default_cache_path())


def as_json(value: Any, **options: Any) -> str:
    """``value`` as JSON text for a command's output. JSON has no NaN or infinity: an index
    written before metadata was checked on input may hold them, and they are printed as
    ``null`` (Python's ``NaN`` would break a strict reader)."""
    import json
    import math

    def finite(item: Any) -> Any:
        if isinstance(item, float) and not math.isfinite(item):
            return None
        if isinstance(item, dict):
            return {key: finite(v) for key, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [finite(v) for v in item]
        return item

    return json.dumps(finite(value), ensure_ascii=False, allow_nan=False, **options)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1 (``many``: an irregular plural)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


@dataclass(frozen=True)
class ModelOption:
    """One model setting the command line takes as a flag or a ``RHIZOME_*`` variable."""

    flag: str
    env: str
    parse: Any
    help: str


MODEL_OPTIONS = {
    "num_ctx": ModelOption("--num-ctx", "RHIZOME_NUM_CTX", int, "context window in tokens sent to Ollama with every chat request (default 32768, or OLLAMA_CONTEXT_LENGTH); "
                           "for openai: models, the window to pack prompts for (the server's own, from /v1/models, bounds it)"),
    "base_url": ModelOption("--base-url", "RHIZOME_BASE_URL", str, "URL of the OpenAI-compatible server of openai: models, e.g. http://localhost:8000/v1 "
                            "(default OPENAI_BASE_URL, else OpenAI's API; the key comes from OPENAI_API_KEY or RHIZOME_OPENAI_API_KEY)"),
    "timeout": ModelOption("--timeout", "RHIZOME_TIMEOUT", float, "seconds to wait for one model answer (default 180 chat, 60 embeddings)"),
    "keep_alive": ModelOption("--keep-alive", "RHIZOME_KEEP_ALIVE", str, "how long Ollama keeps the model loaded after a request, e.g. 10m (default: the server's)"),
    "max_retries": ModelOption("--max-retries", "RHIZOME_MAX_RETRIES", int, "attempts after an invalid answer or a busy/failed request (default 2)"),
    "concurrency": ModelOption("--concurrency", "RHIZOME_CONCURRENCY", int, "model requests in flight at once (default 4 chat, 2 embeddings)"),
}
"""The model settings of every command: attribute name → flag, variable, type and help."""


def model_options(args: argparse.Namespace) -> dict[str, Any]:
    """The model settings asked for, by :data:`MODEL_OPTIONS` name: a flag wins over its
    ``RHIZOME_*`` variable; settings given by neither are left out (the model's default)."""
    from rhizome.core.errors import ConfigurationError

    found: dict[str, Any] = {}
    for name, option in MODEL_OPTIONS.items():
        value = getattr(args, name, None)
        if value is None and os.environ.get(option.env, "").strip():
            raw = os.environ[option.env].strip()
            try:
                value = option.parse(raw)
            except ValueError:
                raise ConfigurationError(
                    f"{option.env}={raw!r} is not a valid {option.parse.__name__}; fix or unset it, or pass {option.flag}"
                ) from None
        if value is not None:
            if option.parse is not str and value < (0 if name == "max_retries" else 1):
                raise ConfigurationError(f"{option.flag} must be {'>= 0' if name == 'max_retries' else 'positive'}, got {value}")
            found[name] = value
    return found


def ollama_kwargs(args: argparse.Namespace, *, chat: bool) -> dict[str, Any]:
    """Keyword arguments of :class:`~rhizome.core.models.ollama.OllamaChatModel` (``chat``) or
    ``OllamaEmbedder`` for the settings asked for (``--max-retries`` sets both the retries of
    invalid answers and of failed requests)."""
    options = model_options(args)
    kwargs = _served_kwargs(options, chat=chat)
    if "num_ctx" in options and chat:
        kwargs["num_ctx"] = options["num_ctx"]
    if "keep_alive" in options:
        kwargs["keep_alive"] = options["keep_alive"]
    return kwargs


def openai_kwargs(args: argparse.Namespace, *, chat: bool) -> dict[str, Any]:
    """Keyword arguments of :class:`~rhizome.core.models.openai_compat.OpenAIChatModel` (``chat``)
    or ``OpenAIEmbedder`` for the settings asked for (``--num-ctx`` is the chat model's
    ``context_window``)."""
    options = model_options(args)
    kwargs = _served_kwargs(options, chat=chat)
    if "num_ctx" in options and chat:
        kwargs["context_window"] = options["num_ctx"]
    if "base_url" in options:
        kwargs["base_url"] = options["base_url"]
    return kwargs


def _served_kwargs(options: dict[str, Any], *, chat: bool) -> dict[str, Any]:
    """The settings every served model takes: timeout, retries and concurrency."""
    kwargs: dict[str, Any] = {}
    if "timeout" in options:
        kwargs["timeout"] = options["timeout"]
    if "max_retries" in options:
        kwargs["transport_retries"] = options["max_retries"]
        if chat:
            kwargs["max_retries"] = options["max_retries"]
    if "concurrency" in options:
        kwargs["max_concurrency"] = options["concurrency"]
    return kwargs


def make_cli_embedder(spec: str, args: argparse.Namespace) -> Any:
    """The embedder of ``spec`` with the command's cache and model settings."""
    from rhizome.core.models.registry import make_embedder

    return make_embedder(spec, cache=model_cache(args), **_spec_kwargs(spec, args, chat=False))


def make_cli_chat_model(spec: str, args: argparse.Namespace) -> Any:
    """The chat model of ``spec`` with the command's cache and model settings."""
    from rhizome.core.models.registry import make_chat_model

    return make_chat_model(spec, cache=model_cache(args), **_spec_kwargs(spec, args, chat=True))


def _spec_kwargs(spec: str, args: argparse.Namespace, *, chat: bool) -> dict[str, Any]:
    if is_ollama(spec):
        return ollama_kwargs(args, chat=chat)
    return openai_kwargs(args, chat=chat) if is_openai(spec) else {}


@dataclass
class Models:
    """The models a command runs with: an embedder spec, a chat model (or ``None``) and
    notices to show the user (why a fall-back was taken)."""

    embed_spec: str
    llm: Any = None
    notices: list[str] = field(default_factory=list)


def is_ollama(spec: str | None) -> bool:
    """Whether a model spec names an Ollama model (``ollama:MODEL``)."""
    return bool(spec) and spec.split(":", 1)[0].lower() == "ollama"  # type: ignore[union-attr]


def is_openai(spec: str | None) -> bool:
    """Whether a model spec names a model on an OpenAI-compatible server (``openai:MODEL``)."""
    return bool(spec) and spec.split(":", 1)[0].lower() == "openai"  # type: ignore[union-attr]


def check_openai_models(specs: tuple[str | None, ...], args: argparse.Namespace) -> None:
    """Raise :class:`~rhizome.core.errors.ModelUnavailableError` unless the OpenAI-compatible
    server of ``--base-url`` is reachable, or :class:`~rhizome.core.errors.ModelNotFoundError`
    unless it serves every ``openai:MODEL`` of ``specs`` (nothing to check without one)."""
    wanted = [ollama_model(spec) for spec in specs if spec and is_openai(spec)]
    if not wanted:
        return
    from rhizome.core.models.openai_compat import check_openai_server

    options = model_options(args)
    status = check_openai_server(options.get("base_url"), timeout=options.get("timeout", 15.0))
    for model in wanted:
        status.require(model)


def ollama_model(spec: str) -> str:
    """The model name of an ``ollama:MODEL`` (or ``openai:MODEL``) spec."""
    return spec.split(":", 1)[1] if ":" in spec else ""


def choose_models(args: argparse.Namespace, *, want_llm: bool, fall_back: bool, embedder_of_index: bool = False) -> Models:
    """Pick the embedder spec and chat model from flags and environment.

    With ``fall_back`` (the demo) an unreachable Ollama or a missing model becomes a notice and
    the offline steps are used; otherwise it is an error that says what to do.
    ``embedder_of_index``: ``--embed`` is the embedder an existing index was built with (so
    ``--offline``, another embedder, is no way out when it cannot be reached).
    """
    from rhizome.core.errors import ModelNotFoundError, ModelUnavailableError
    from rhizome.core.models.registry import DEFAULT_OLLAMA_EMBED, DEFAULT_OLLAMA_LLM

    if args.offline:
        return Models(OFFLINE_EMBED)
    embed_spec = args.embed or os.environ.get("RHIZOME_EMBED") or f"ollama:{DEFAULT_OLLAMA_EMBED}"
    llm_spec = (args.llm or os.environ.get("RHIZOME_LLM") or f"ollama:{DEFAULT_OLLAMA_LLM}") if want_llm else None
    models = Models(embed_spec)
    if is_ollama(embed_spec) or is_ollama(llm_spec):
        from rhizome.core.models.ollama import check_ollama, require_model

        status = check_ollama(timeout=model_options(args).get("timeout", 15.0))
        if not status.reachable:
            error = status.unavailable()
            if not fall_back:
                if embedder_of_index and is_ollama(embed_spec):  # --offline cannot help
                    raise ModelUnavailableError(f"{error}; this index was built with {embed_spec}, and an index is "
                                                "searched and updated with the embedder that built it")
                raise ModelUnavailableError(f"{error}, or pass --offline to use the offline steps instead")
            models.notices.append(f"{error}. Running offline.")
            return Models(OFFLINE_EMBED, notices=models.notices)
        for spec in (embed_spec, llm_spec):
            if not is_ollama(spec):
                continue
            try:
                require_model(status, ollama_model(spec))  # type: ignore[arg-type]
            except ModelNotFoundError as exc:
                if not fall_back:
                    raise
                if spec == embed_spec:
                    models.embed_spec = OFFLINE_EMBED
                    models.notices.append(f"{exc}; using the offline embedder meanwhile.")
                else:
                    llm_spec = None
                    models.notices.append(f"{exc}; answers are extractive meanwhile.")
    try:
        check_openai_models((models.embed_spec, llm_spec), args)
    except (ModelUnavailableError, ModelNotFoundError) as exc:
        if not fall_back:
            raise
        models.notices.append(f"{exc}. Running offline.")
        return Models(OFFLINE_EMBED, notices=models.notices)
    if llm_spec:
        models.llm = make_cli_chat_model(llm_spec, args)
    return models


def check_model_flags(args: argparse.Namespace) -> None:
    """Refuse model flags that contradict each other, and a bad ``RHIZOME_*`` setting, before a
    command runs, rather than drop one silently: ``--offline`` with a chat model or an Ollama
    embedder asked for, or a value no model could take (also when ``--offline`` means it
    would not be used)."""
    from rhizome.core.errors import ConfigurationError

    if not hasattr(args, "offline"):
        return
    model_options(args)  # a bad flag or RHIZOME_* value is an error either way
    if args.offline and args.llm:
        raise ConfigurationError(f"--offline runs without a model server, so it cannot go with --llm {args.llm}; drop one of them")
    if args.offline and args.embed and (is_ollama(args.embed) or is_openai(args.embed)):
        raise ConfigurationError(f"--offline runs without a model server, so it cannot go with --embed {args.embed}; drop one of them")


def index_embedder(out: Any, manifest: Any, asked: str | None, flag: str) -> str:
    """The embedder spec to open the index at ``out`` with: the one it was built with. One a
    flag ``asked`` for must be the same (``hashing`` is ``hashing:384``), unless the index holds
    no vector yet (a first run that stopped early): then it takes the new one."""
    import contextlib

    from rhizome.core.errors import IndexMismatchError, RhizomeError
    from rhizome.core.models.registry import make_embedder
    from rhizome.core.store.storage import shown

    built = manifest.models.get("embedder") or OFFLINE_EMBED
    if not asked or asked == built:
        return built
    with contextlib.suppress(RhizomeError, ImportError):  # a spec that cannot be built: compared as written
        if make_embedder(asked).name == built:
            return built
    if manifest.embedding_dimension is None:
        return asked
    source = flag.split()[0]  # --embed, --offline or RHIZOME_EMBED
    drop = f"unset {source}" if source.startswith("RHIZOME_") else f"drop {source}"
    raise IndexMismatchError(
        f"{shown(out)} was built with the embedder {built!r}, but {flag} {asked!r}; vectors of different "
        f"models cannot be compared. To use {built!r}, {drop}; or index into a new --out"
    )


def open_index(location: Any, args: argparse.Namespace, *, answer: bool = False, readonly: bool = True) -> Any:
    """Open the index at ``location`` to query it, as ``rhizome query`` does (``rhizome serve``
    opens its workspaces so too, writable): the embedder it was built with (``--embed`` must
    name the same one), the chat model of ``--llm``, else the index's own, else — to write
    answers (``answer``) — ``RHIZOME_LLM`` or the default model; none with ``--offline``. Ollama
    is checked first, so a server that is down or lacks a model is an error that says so."""
    from rhizome.core.errors import ModelUnavailableError
    from rhizome.core.models.registry import DEFAULT_OLLAMA_LLM
    from rhizome.core.store.storage import load_index, read_manifest

    manifest = read_manifest(location)
    asked = args.embed or os.environ.get("RHIZOME_EMBED")  # checked as `index` checks it, never ignored
    embed_spec = index_embedder(location, manifest, asked, "--embed asks for" if args.embed else "RHIZOME_EMBED asks for")
    llm_spec, llm_is_default = None, False
    if not args.offline:
        llm_spec = args.llm or manifest.models.get("llm")
        if llm_spec is None and answer:
            llm_spec, llm_is_default = os.environ.get("RHIZOME_LLM") or f"ollama:{DEFAULT_OLLAMA_LLM}", True
    if is_ollama(embed_spec) or is_ollama(llm_spec):
        from rhizome.core.models.ollama import check_ollama, require_model

        status = check_ollama(timeout=model_options(args).get("timeout", 15.0))
        if not status.reachable:
            if is_ollama(embed_spec):  # no flag helps: the query must be embedded as the passages were
                why = f"this index was built with {embed_spec}, and an index is queried with the embedder that built it"
            elif llm_is_default:
                why = f"--answer writes with {llm_spec}, the default chat model (--llm picks another); pass --offline for an extractive answer"
            else:
                why = f"this index answers with {llm_spec}, the chat model it was built with; pass --offline to use its offline steps"
            raise ModelUnavailableError(f"{status.unavailable()}; {why}")
        for spec in (embed_spec, llm_spec):
            if is_ollama(spec):
                require_model(status, ollama_model(spec))  # type: ignore[arg-type]
    check_openai_models((embed_spec, llm_spec), args)
    models: dict[str, Any] = {"embedder": make_cli_embedder(embed_spec, args), "readonly": readonly}
    if args.offline:
        models["offline"] = True
    elif llm_spec:
        models["llm"] = make_cli_chat_model(llm_spec, args)
    return load_index(location, **models)


def model_flags(parser: argparse.ArgumentParser) -> None:
    """The model flags every command shares (--llm, --embed, --offline, --cache, --no-cache and
    the :data:`MODEL_OPTIONS`); plugin commands use it too, with :func:`choose_models`."""
    parser.add_argument("--llm", help="chat model spec, e.g. ollama:qwen2.5:7b-instruct, or openai:MODEL on the --base-url server (env RHIZOME_LLM)")
    parser.add_argument("--embed", help="embedder spec: ollama:MODEL, openai:MODEL, hashing[:DIM], sentence-transformers:NAME (env RHIZOME_EMBED)")
    parser.add_argument("--offline", action="store_true", help="use only offline steps (no model server)")
    parser.add_argument("--cache", help=f"model-call cache file (default {default_cache_path()})")
    parser.add_argument("--no-cache", action="store_true", help="do not cache model calls")
    for name, option in MODEL_OPTIONS.items():
        parser.add_argument(option.flag, dest=name, type=option.parse, help=f"{option.help} (env {option.env})")


__all__ = [
    "MODEL_OPTIONS",
    "check_model_flags",
    "OFFLINE_EMBED",
    "ModelOption",
    "Models",
    "choose_models",
    "default_cache_path",
    "index_embedder",
    "is_ollama",
    "is_openai",
    "check_openai_models",
    "make_cli_chat_model",
    "make_cli_embedder",
    "model_cache",
    "model_flags",
    "model_options",
    "ollama_kwargs",
    "ollama_model",
    "openai_kwargs",
    "open_index",
    "plural",
]
