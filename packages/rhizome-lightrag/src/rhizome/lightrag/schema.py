"""The query keywords a model fills in (LightRAG's per-chunk records are the kernel's: rhizome.core.graph.mentions)."""

from __future__ import annotations

from pydantic import Field

from rhizome.core.models.lenient import LenientModel, TextList


class QueryKeywords(LenientModel):
    """The paper's keyword JSON (Fig. 5)."""

    high_level_keywords: TextList = Field(description="broad themes and concepts")
    low_level_keywords: TextList = Field(description="specific entities and details")


__all__ = ["QueryKeywords"]
