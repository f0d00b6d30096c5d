"""The systems under test: every installed method (``rhizome.methods`` entry points) in every
retrieval mode it declares, built the same way, so a method that lands appears here without
harness code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rhizome.core.store.storage import method_registry


@dataclass(frozen=True)
class System:
    """One method in one mode; ``options`` (retriever keywords) and their ``label`` make a
    variant of it, as method benchmarks compare their choices."""

    method: str
    mode: str | None
    options: tuple[tuple[str, Any], ...] = ()
    label: str = ""

    @property
    def name(self) -> str:
        name = self.method if self.mode is None else f"{self.method}:{self.mode}"
        return f"{name} ({self.label})" if self.label else name


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
    """A fresh index of ``method``, in memory unless ``path`` (a new directory) is given. With
    ``openie`` (a HippoRAG OpenIE JSON file) a method that extracts uses those triples
    (``extraction="openie:PATH"``) instead of extracting.
    ``params`` the method's configuration does not know (or runtime options) are left out."""
    cls = index_class(method)
    known = set(cls.config_class.model_fields) | {"batch_size", "progress", "cache", "path"}
    kwargs = {k: v for k, v in params.items() if k in known}
    if openie is not None:
        if "extraction" not in cls.config_class.model_fields:
            raise SystemExit(f"{method} cannot use imported extractions; drop --openie or --methods {method}")
        kwargs["extraction"] = f"openie:{openie}"
    return cls(embedder, llm=llm, **kwargs)
