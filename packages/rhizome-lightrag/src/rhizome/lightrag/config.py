"""LightRAG's settings, with the paper's and the reference code's defaults."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rhizome.core.index.config import ExtractionConfig


class LightRAGConfig(ExtractionConfig):
    """Settings of a :class:`~rhizome.lightrag.index.LightRAGIndex` (chunking, extraction and
    summaries are :class:`~rhizome.core.index.config.ExtractionConfig`'s)."""

    pack_tokens: int = Field(1200, ge=0)
    """Short chunks share one extraction call up to this many tokens; 0: one call per chunk, as
    in the paper (see :class:`~rhizome.core.extraction.llm.LLMExtractor`)."""

    max_pack_passages: int = Field(12, ge=1)
    """Most chunks per extraction call."""

    force_summary_fragments: int | None = Field(8, ge=2)
    """Summarise once an entity or relation has this many distinct descriptions even when they
    fit (reference code ``force_llm_summary_on_merge`` 8); ``None`` disables."""

    resolution: bool = True
    """Resolve entity names beyond the exact name (:mod:`rhizome.core.graph.resolution`); ``False``
    keeps the paper's exact-name merge."""

    resolution_threshold: float = Field(0.9, gt=0.0, le=1.0)
    """Name-embedding similarity that makes two names a candidate pair."""

    resolution_acronyms: bool = True
    """Whether an acronym matching the initials of another name is a candidate."""

    resolution_confirm: bool = True
    """Whether the chat model (when there is one) confirms candidate pairs."""

    allow_empty: bool = False
    """Accept extraction calls that find no entity in real text instead of raising."""

    def llm_extractor_options(self) -> dict[str, Any]:
        return {
            **super().llm_extractor_options(),
            "pack_tokens": self.pack_tokens,
            "max_pack_passages": self.max_pack_passages,
            "keywords": True,  # the paper's extraction also asks for each chunk's content keywords
            "allow_empty": self.allow_empty,
        }


__all__ = ["LightRAGConfig"]
