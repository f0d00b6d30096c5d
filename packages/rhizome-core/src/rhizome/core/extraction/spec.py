"""One way to choose how an index extracts: the extraction spec.

Every method that extracts takes ``extraction=`` with one of

| value | extractor |
|---|---|
| ``"auto"`` | ``"llm"`` when the index has a chat model, else ``"offline"`` (resolved when the index is created) |
| ``"llm"`` | :class:`~rhizome.core.extraction.llm.LLMExtractor` with the index's chat model |
| ``"offline"`` | :class:`~rhizome.core.extraction.offline.OfflineExtractor` (no model) |
| ``"openie:PATH"`` | :class:`~rhizome.core.extraction.openie.OpenIEExtractor`: imported HippoRAG OpenIE triples |
| an extractor object | used as is; its ``spec`` attribute says how to rebuild it |

The resolved spec is stored in the index's configuration, so reopening the index rebuilds the same
extractor. An object whose spec names no way to rebuild it (a custom extractor, OpenIE data given
as a dict) is recorded as ``"custom:<class>"``: the index reopens for queries, and an insert asks
for the object again instead of silently extracting another way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rhizome.core.errors import ConfigurationError

SPECS = ("auto", "llm", "offline")


def check_spec(extraction: str) -> str:
    """``extraction`` if it is a valid spec string, else :class:`ConfigurationError`."""
    if not isinstance(extraction, str) or not (
        extraction in SPECS or extraction.startswith(("openie:", "custom:"))
    ):
        raise ConfigurationError(
            f"extraction must be 'auto', 'llm', 'offline', 'openie:<path to HippoRAG OpenIE JSON>' "
            f"or an extractor object, got {extraction!r}"
        )
    return extraction


def spec_of(extraction: Any, llm: Any) -> str:
    """The spec to record for ``extraction`` (a spec string or an extractor object)."""
    if isinstance(extraction, str):
        spec = check_spec(extraction)
        return ("llm" if llm is not None else "offline") if spec == "auto" else spec
    if not callable(getattr(extraction, "aextract", None)):
        raise ConfigurationError(
            f"extraction must be a spec string or an extractor with an async aextract(chunks) method, "
            f"got {type(extraction).__name__}"
        )
    declared = getattr(extraction, "spec", None)
    if isinstance(declared, str) and (declared in ("llm", "offline") or declared.startswith("openie:")):
        return declared
    return f"custom:{type(extraction).__module__}.{type(extraction).__qualname__}"


def make_extractor(
    spec: str,
    llm: Any,
    *,
    llm_options: Mapping[str, Any] | None = None,
    offline_options: Mapping[str, Any] | None = None,
) -> Any:
    """The extractor a recorded spec stands for; ``*_options`` are the method's settings of the
    LLM and offline extractors (entity types, gleaning, packing...)."""
    if spec == "llm":
        if llm is None:
            raise ConfigurationError(
                "this index extracts with a chat model (extraction='llm') but none was given; pass "
                "llm=... (or --llm), or build a new index with extraction='offline'"
            )
        from rhizome.core.extraction.llm import LLMExtractor

        return LLMExtractor(llm, **dict(llm_options or {}))
    if spec == "offline":
        from rhizome.core.extraction.offline import OfflineExtractor

        return OfflineExtractor(**dict(offline_options or {}))
    if spec.startswith("openie:"):
        from rhizome.core.extraction.openie import OpenIEExtractor

        return OpenIEExtractor(spec.split(":", 1)[1])
    raise ConfigurationError(
        f"this index was built with the extractor {spec.split(':', 1)[-1]}, which cannot be rebuilt "
        "from its name; pass the same extractor object again as extraction=..."
    )


__all__ = ["SPECS", "check_spec", "make_extractor", "spec_of"]
