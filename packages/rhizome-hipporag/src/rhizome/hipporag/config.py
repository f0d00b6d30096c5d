"""HippoRAG's settings, with the papers' and the reference code's defaults."""

from __future__ import annotations

from pydantic import Field

from rhizome.core.index.config import ExtractionSpecConfig


class HippoRAGConfig(ExtractionSpecConfig):
    """Settings of a :class:`~rhizome.hipporag.index.HippoRAGIndex` (chunking and the
    extraction spec are :class:`~rhizome.core.index.config.ExtractionSpecConfig`'s; HippoRAG's
    OpenIE has no gleaning, description summaries or entity types)."""

    synonymy_threshold: float = Field(0.8, gt=0.0, le=1.0)
    """Phrase-embedding cosine from which two phrases are joined by a synonymy edge weighted by
    that cosine (v1 ``--sim_threshold 0.8``; v2 ``synonymy_edge_sim_threshold`` 0.8)."""

    synonymy_top_k: int = Field(100, ge=1)
    """Most synonymy neighbours looked up per new phrase (v2 keeps at most 100 per node)."""

    synonymy_min_chars: int = Field(3, ge=0)
    """Phrases with fewer letters and digits get no synonymy edges (v2: more than 2), so that
    "US" and "UK" or "1" and "2" are not joined by their similar vectors."""


__all__ = ["HippoRAGConfig"]
