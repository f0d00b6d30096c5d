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
    """The :class:`~rhizome.core.cache.ModelCache` the flags ask for (``--cache FILE``, the
    default file), or ``None`` with ``--no-cache``."""
    if getattr(args, "no_cache", False):
        return None
    from rhizome.core.cache import ModelCache

    return ModelCache(Path(args.cache) if getattr(args, "cache", None) else default_cache_path())


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


def ollama_model(spec: str) -> str:
    """The model name of an ``ollama:MODEL`` spec."""
    return spec.split(":", 1)[1] if ":" in spec else ""


def choose_models(args: argparse.Namespace, *, want_llm: bool, fall_back: bool) -> Models:
    """Pick the embedder spec and chat model from flags and environment.

    With ``fall_back`` (the demo) an unreachable Ollama or a missing model becomes a notice and
    the offline steps are used; otherwise it is an error that says what to do.
    """
    from rhizome.core.errors import ModelNotFoundError, ModelUnavailableError
    from rhizome.core.models.registry import (
        DEFAULT_OLLAMA_EMBED,
        DEFAULT_OLLAMA_LLM,
        make_chat_model,
    )

    if args.offline:
        return Models(OFFLINE_EMBED)
    embed_spec = args.embed or os.environ.get("RHIZOME_EMBED") or f"ollama:{DEFAULT_OLLAMA_EMBED}"
    llm_spec = (args.llm or os.environ.get("RHIZOME_LLM") or f"ollama:{DEFAULT_OLLAMA_LLM}") if want_llm else None
    models = Models(embed_spec)
    if is_ollama(embed_spec) or is_ollama(llm_spec):
        from rhizome.core.models.ollama import check_ollama, require_model

        status = check_ollama()
        if not status.reachable:
            error = ModelUnavailableError(
                f"Ollama is not reachable at {status.host} — start it with `ollama serve`, or pass --offline"
            )
            if not fall_back:
                raise error
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
    if llm_spec:
        models.llm = make_chat_model(llm_spec, cache=model_cache(args))
    return models


def model_flags(parser: argparse.ArgumentParser) -> None:
    """The model flags every command shares (--llm, --embed, --offline, --cache, --no-cache);
    plugin commands use it too, together with :func:`choose_models`."""
    parser.add_argument("--llm", help="chat model spec, e.g. ollama:qwen2.5:7b-instruct (env RHIZOME_LLM)")
    parser.add_argument("--embed", help="embedder spec: ollama:MODEL, hashing[:DIM], sentence-transformers:NAME (env RHIZOME_EMBED)")
    parser.add_argument("--offline", action="store_true", help="use only offline steps (no model server)")
    parser.add_argument("--cache", help=f"model-call cache file (default {default_cache_path()})")
    parser.add_argument("--no-cache", action="store_true", help="do not cache model calls")


__all__ = [
    "OFFLINE_EMBED",
    "Models",
    "choose_models",
    "default_cache_path",
    "is_ollama",
    "model_cache",
    "model_flags",
    "ollama_model",
]
