"""Package exports imported on first use (PEP 562), so importing one submodule of a package —
which ``rhizome --help`` does for every plugin command — does not import the whole package."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, namespace: dict[str, Any], exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package whose ``exports`` map each public name to
    the module that defines it; a name, once imported, is stored in the package's ``namespace``
    so later look-ups skip the hook.

    A name exported from a submodule of the same name (``answer`` from ``rhizome.core.retrieval.answer``)
    stays the export: importing the submodule, which Python records as an attribute of the
    package, does not replace it (the submodule is still ``sys.modules[...]``)."""
    shadowed = {name for name, module in exports.items() if module == f"{package}.{name}"}
    if shadowed and package in sys.modules:
        sys.modules[package].__class__ = _keeping(frozenset(shadowed))

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


def _keeping(names: frozenset[str]) -> type[types.ModuleType]:
    class Package(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in names and isinstance(value, types.ModuleType):
                return
            super().__setattr__(name, value)

    return Package


__all__ = ["lazy_exports"]
