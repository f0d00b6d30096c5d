"""ArchRAG's settings, with the paper's defaults (Wang et al., arXiv 2502.09891v3) and, where it
is silent, the authors' code (``sam234990/ArchRAG``) or our choice; docs/archrag.md says which."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rhizome.core.graph import DEFAULT_LEIDEN_SEED
from rhizome.core.index.config import ExtractionConfig


class ArchRAGConfig(ExtractionConfig):
    """Settings of a :class:`~rhizome.archrag.index.ArchRAGIndex` (extraction and description
    summaries are :class:`~rhizome.core.index.config.ExtractionConfig`'s)."""

    chunk_size: int = Field(600, ge=16)
    """Tokens per chunk (the paper: unstated; the authors' code 600)."""

    chunk_overlap: int = Field(100, ge=0)
    """Tokens shared by neighbouring chunks (the authors' code 100)."""

    clustering: Literal["leiden", "spectral"] = "leiden"
    """Graph clustering of each round: weighted Leiden (the paper's default) or weighted
    spectral clustering (the paper's ablation)."""

    knn_percentile: float = Field(0.8, ge=0.0, le=1.0)
    """A similarity edge is added only above this percentile of the existing edges' cosine
    weights (the authors' ``index.sh`` 0.8)."""

    knn_k: int | None = Field(None, ge=1)
    """Similarity edges per node; ``None``: the layer's average degree (the paper)."""

    max_cluster_size: int = Field(15, ge=2)
    """Largest community Leiden leaves unsplit; spectral clustering makes ⌈n / this⌉ groups
    (the authors' code 15)."""

    leiden_seed: int = DEFAULT_LEIDEN_SEED
    """Seed of Leiden and of spectral k-means (the authors' code 0xDEADBEEF)."""

    max_layers: int = Field(5, ge=1)
    """Most community layers above the entities (the paper: L ≤ 5 typically)."""

    min_communities: int = Field(10, ge=1)
    """A round that makes fewer communities is the last (the authors' ``min_clusters`` 10)."""

    min_shrink: float = Field(0.9, gt=0.0, le=1.0)
    """A round whose communities number at least this share of its nodes is dropped and ends
    the clustering (our stop on no progress; spec §7.7)."""

    report_max_tokens: int = Field(1500, ge=50)
    """Length the model is asked to keep a community report within (our choice; the authors'
    code lets the model write up to 4,000 tokens)."""

    report_max_input_tokens: int = Field(4000, ge=200)
    """Context of one report: member entities and relations, or child reports first at higher
    layers (the authors' code 4,000)."""

    m: int = Field(32, ge=2)
    """C-HNSW links per node above layer 0 (the paper's M = 32)."""

    m0: int = Field(64, ge=2)
    """C-HNSW links per node at layer 0 (the authors' code 64)."""

    ef_construction: int = Field(100, ge=1)
    """C-HNSW beam while building (the paper's synthetic run 100)."""

    ef_search: int = Field(100, ge=1)
    """C-HNSW beam of a query, at least ``k_per_layer`` (the paper's synthetic run 100)."""

    k_per_layer: int = Field(5, ge=1)
    """Nodes retrieved from each layer (the paper's k = 5)."""

    rank_provenance: bool = True
    """Order the chunks each retrieved node cites by their cosine to the query (the paper does
    not say which of a node's passages back it; off: source order for entities and relations,
    most cited first for communities)."""

    max_relations: int = Field(10, ge=0)
    """Relations of the retrieved entities added to layer 0's context, nearest the query first
    (the authors' ``topk_e`` 10)."""

    filter_max_tokens: int = Field(4000, ge=200)
    """Tokens of retrieved content per filter call; a layer's content is batched under it (the
    authors' code 4,000)."""

    context_max_tokens: int = Field(4000, ge=100)
    """Budget of the sorted key points handed to the merge prompt (spec §7.13: ~4,000)."""

    @model_validator(mode="after")
    def _degrees(self) -> ArchRAGConfig:
        if self.m0 < self.m:
            raise ValueError("m0 must be at least m")
        return self


__all__ = ["ArchRAGConfig"]
