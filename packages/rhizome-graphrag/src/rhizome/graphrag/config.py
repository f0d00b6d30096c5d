"""GraphRAG's settings, with the defaults of Microsoft GraphRAG (``graphrag/config/defaults.py``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rhizome.core.graph import DEFAULT_LEIDEN_SEED
from rhizome.core.index.config import ExtractionConfig


class GraphRAGConfig(ExtractionConfig):
    """Settings of a :class:`~rhizome.graphrag.index.GraphRAGIndex` (chunking, extraction and
    description summaries are :class:`~rhizome.core.index.config.ExtractionConfig`'s)."""

    max_cluster_size: int = Field(10, ge=1)
    """Largest community Leiden leaves unsplit (GraphRAG ``cluster_graph.max_cluster_size`` 10)."""

    leiden_seed: int = DEFAULT_LEIDEN_SEED
    """Leiden's random seed (GraphRAG ``cluster_graph.seed`` 0xDEADBEEF)."""

    max_levels: int = Field(10, ge=1)
    """Depth cap of the community hierarchy (not in the paper; a safety limit)."""

    report_max_tokens: int = Field(2000, ge=50)
    """Length of a community report (GraphRAG ``community_reports.max_length`` 2,000)."""

    report_max_input_tokens: int = Field(8000, ge=200)
    """Context budget of one report (GraphRAG ``community_reports.max_input_length`` 8,000)."""

    reports: Literal["eager", "lazy"] = "eager"
    """``eager`` writes every community's report at indexing time (the paper); ``lazy`` writes
    none and lets searches write the few they need (LazyGraphRAG's deferral)."""


__all__ = ["GraphRAGConfig"]
