"""RAPTOR's settings, with the paper's and the reference code's defaults (Sarthi et al. 2024,
``parthsarthi03/raptor``); where both are silent the choice is ours and docs/raptor.md says why."""

from __future__ import annotations

from pydantic import Field, model_validator

from rhizome.core.index.config import IndexConfig
from rhizome.core.retrieval.passages import PASSAGE_TOKENS


class RaptorConfig(IndexConfig):
    """Settings of a :class:`~rhizome.raptor.index.RaptorIndex`."""

    chunk_size: int = Field(100, ge=16)
    """Tokens per leaf: 100, whole sentences moved to the next leaf rather than cut (the paper's
    chunking; reference ``split_text(max_tokens=100)``)."""

    chunk_overlap: int = Field(0, ge=0)
    """Tokens shared by neighbouring leaves: none (reference ``overlap=0``)."""

    max_layers: int = Field(5, ge=1)
    """Most summary layers above the leaves (reference ``num_layers`` 5)."""

    reduction_dimension: int = Field(10, ge=2)
    """Dimensions UMAP reduces the embeddings to before the mixtures are fitted (reference
    ``reduction_dimension`` 10). A layer of at most this many plus one nodes is the top of the
    tree, and a global cluster that small is not split further (the reference's rules); vectors
    that already have at most this many dimensions are clustered as they are."""

    umap_min_nodes: int = Field(50, ge=0)
    """Sets of fewer nodes (a small layer, a small global cluster) are reduced by PCA of the
    unit vectors instead of UMAP. Our choice: on a few dozen points UMAP's neighbourhood graph
    (√(n − 1) neighbours) carries little, and UMAP costs about 25 s of import and compilation in
    every new process, which a small index would pay on every insert. 0: UMAP always."""

    local_neighbors: int = Field(10, ge=2)
    """UMAP neighbours of the local step inside each global cluster (reference 10); the global
    step uses the square root of the node count minus one, as the reference does."""

    max_clusters: int = Field(50, ge=2)
    """Largest number of mixture components the BIC search tries (reference ``max_clusters``
    50: components 1 to min(50, nodes) - 1)."""

    bic_sample: int = Field(2000, ge=500)
    """Nodes the BIC search fits its candidate mixtures on when a set is larger (drawn with
    ``seed``); the chosen mixture is then fitted on every node. Our choice for scale: the
    reference fits every candidate on every node, which is what did not finish on corpora of
    10k passages. At least 500, so that each of up to 49 candidate components has about ten
    nodes: with fewer, components collapsed on a few nodes win the BIC. See docs/raptor.md."""

    bic_patience: int = Field(10, ge=0)
    """The BIC search tries 1, 2, 3, ... components and stops once this many candidates in a
    row have not lowered the BIC (0: every candidate up to ``max_clusters`` - 1, as the
    reference does). Our choice for speed: on large sets the BIC is lowest at 6-8 components
    and then rises, so the later candidates, the costliest to fit, never win there; see
    docs/raptor.md for how often and how much the choice changes the tree."""

    partition_nodes: int = Field(2000, ge=100)
    """A layer of more nodes is first cut into parts of at most this many, by 2-means of the
    unit embeddings, halving again while a part is larger; each part is clustered on its own.
    Our choice for scale: UMAP's global step uses √(n − 1) neighbours and the mixtures at most
    49 components, so one clustering of a whole large layer costs more than linear time and
    needs ever deeper re-clustering for length; bounded parts make a build grow linearly with
    the corpus. A corpus of up to this many leaves is clustered whole. See docs/raptor.md."""

    membership_threshold: float = Field(0.1, gt=0.0, lt=1.0)
    """A node joins every cluster whose mixture probability for it exceeds this (reference
    ``threshold`` 0.1: soft clustering), and always its most probable one."""

    max_cluster_tokens: int = Field(3500, ge=100)
    """A cluster whose nodes hold more tokens is clustered again on its own (reference
    ``max_length_in_cluster`` 3,500), while that splits it; lowered to what the summary prompt
    can hold when the chat model's context window is smaller."""

    summary_max_tokens: int = Field(100, ge=16)
    """Length of a cluster summary: the model is asked for at most this many tokens and a
    longer answer is cut at its last sentence that fits (reference ``summarization_length``
    100; the paper's summaries average 131 tokens)."""

    context_tokens: int = Field(2000, ge=1)
    """Token budget of a search's hits, collapsed tree and tree traversal alike: nodes are taken
    best first until the next one would not fit (the paper's best collapsed-tree setting, 2,000
    tokens; the reference code's default is 3,500)."""

    passage_tokens: int = Field(PASSAGE_TOKENS, ge=16)
    """Most tokens in a passage of the ``passages`` mode: runs of a document's consecutive leaves,
    each embedded whole beside its leaves (:mod:`rhizome.core.retrieval.passages`; 1,200, the
    kernel's default chunk, what dense retrieval sees)."""

    seed: int = 224
    """Random state of UMAP and of the Gaussian mixtures (reference 224), so one input always
    gives one tree and a rebuild finds its summaries in the stage results."""

    @model_validator(mode="after")
    def _room(self) -> RaptorConfig:
        if self.max_cluster_tokens < self.chunk_size:
            raise ValueError("max_cluster_tokens must be at least chunk_size")
        return self


__all__ = ["RaptorConfig"]
