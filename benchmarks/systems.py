"""The systems under test: every installed method (``rhizome.methods`` entry points) in every
retrieval mode it declares, built the same way, so a method that lands appears here without
harness code."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from rhizome.core.storage import method_registry


@dataclass(frozen=True)
class System:
    method: str
    mode: str | None

    @property
    def name(self) -> str:
        return self.method if self.mode is None else f"{self.method}:{self.mode}"


def index_class(method: str) -> Any:
    registry = method_registry()
    if method not in registry:
        raise SystemExit(f"method {method!r} is not installed (installed: {', '.join(sorted(registry))})")
    return registry[method].load()


def available_methods() -> list[str]:
    names = sorted(method_registry())
    return ["naive", *[n for n in names if n != "naive"]]


def systems(methods: list[str] | None = None) -> list[System]:
    out = []
    for method in methods or available_methods():
        modes = getattr(index_class(method), "modes", ()) or (None,)
        out.extend(System(method, mode) for mode in modes)
    return out


def build_index(method: str, embedder: Any, *, llm: Any = None, openie: str | None = None, **params: Any) -> Any:
    """A fresh in-memory index of ``method``. With ``openie`` (a HippoRAG OpenIE JSON file) the
    method uses those triples instead of extracting: through an ``extractor`` object or an
    ``extraction="openie:PATH"`` setting, whichever its constructor takes."""
    cls = index_class(method)
    accepted = inspect.signature(cls).parameters
    kwargs = {k: v for k, v in params.items() if k in accepted}
    if openie is not None:
        if "extractor" in accepted:
            from rhizome.core.extraction.openie import OpenIEExtractor

            kwargs["extractor"] = OpenIEExtractor(openie)
        elif "extraction" in accepted:
            kwargs["extraction"] = f"openie:{openie}"
        else:
            raise SystemExit(f"{method} cannot use imported extractions; drop --openie or --methods {method}")
    return cls(embedder, llm=llm, **kwargs)
