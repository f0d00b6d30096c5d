"""The kernel a method is written with, in one place.

A new method imports from here: these are the names the kernel keeps for methods, each
documented where it is defined. The rest of the kernel serves the kernel itself, the tools
(``rhizome.tools``: CLI helpers, export, integrity checks, fault injection, the conformance kit) and
the integrations.
``examples/passage_graph.py`` and ``examples/entity_graph.py`` use nothing else.

- **The index and its hooks**: :class:`BaseIndex` (generic in what an insert and a delete plan
  outside their transactions), :class:`ModeInfo` (one retrieval mode), ``Batch``, ``Stats``,
  ``batch_chunks``, ``add_counts``, ``ChunkVectors``, :class:`VectorBatch`, the transaction's ``Connection``.
- **Settings**: :class:`IndexConfig`, :class:`ExtractionSpecConfig`, :class:`ExtractionConfig`
  (an index's); :class:`RetrieverParams` (a retrieval mode's).
- **Records**: ``Document``, ``Chunk``, ``Entity``, ``Relation``, ``Community``, ``Hit``.
- **Retrieval**: :class:`BaseRetriever`, :class:`Retrieval`, ``query_vector``, ``vector_search``,
  ``chunk_hits``, ``provenance``, :class:`MapReduceSearch`, ``MapPlan`` and ``point_hit`` (modes
  that read a hierarchy in batches), ``NAIVE`` (the dense mode beside a method's own).
- **Graph evidence**: :class:`EvidenceGraph`, :class:`EvidenceParams`, :class:`FactGraph`,
  ``link_names``, ``rank_passages``, ``relative_weights``, ``merge_seeds``; the algorithms
  ``knn_similarity_pairs`` and ``pagerank_scores``.
- **The entity-graph layer**: :class:`EntityGraphIndex` (the insert and delete hooks of an index
  on it), :func:`open_entity_graph`, :class:`EntityGraphStore`, :class:`GraphChange`,
  :class:`FoldPolicy` (``pair_key``, ``triple_key``), the per-chunk records ``ChunkExtraction``,
  ``EntityMention``, ``RelationMention`` and ``chunk_record``; extraction's ``Extraction`` and
  ``query_names``; :class:`EntityResolver` and :class:`DescriptionSummarizer`.
- **Groups and summaries**: ``cluster_hierarchy``, :class:`Hierarchy`, :class:`GroupSummarizer`,
  :class:`GroupWriter`; ``arun_stage`` (a resumable stage of model calls).
- **Errors**: ``ConfigurationError``, ``InvalidInputError``, ``ModelOutputError``.
"""

from __future__ import annotations

from rhizome.core.errors import ConfigurationError, InvalidInputError, ModelOutputError
from rhizome.core.extraction import Extraction, query_names
from rhizome.core.graph import knn_similarity_pairs, pagerank_scores
from rhizome.core.graph.mentions import (
    ChunkExtraction,
    EntityMention,
    RelationMention,
    chunk_record,
)
from rhizome.core.graph.profiles import FoldPolicy, pair_key, triple_key
from rhizome.core.graph.resolution import EntityResolver
from rhizome.core.graph.store import EntityGraphStore, GraphChange
from rhizome.core.graph.summarize import DescriptionSummarizer
from rhizome.core.index.base import (
    BaseIndex,
    Batch,
    ChunkVectors,
    ModeInfo,
    Stats,
    VectorBatch,
    add_counts,
    batch_chunks,
)
from rhizome.core.index.config import ExtractionConfig, ExtractionSpecConfig, IndexConfig
from rhizome.core.index.entity_index import EntityGraphIndex, open_entity_graph
from rhizome.core.index.hierarchy import GroupSummarizer, Hierarchy, cluster_hierarchy
from rhizome.core.index.stages import arun_stage
from rhizome.core.index.writers import GroupWriter
from rhizome.core.naive import NAIVE
from rhizome.core.retrieval.contract import (
    BaseRetriever,
    MapPlan,
    MapReduceSearch,
    Retrieval,
    chunk_hits,
    point_hit,
    provenance,
    query_vector,
    vector_search,
)
from rhizome.core.retrieval.evidence import (
    EvidenceGraph,
    EvidenceParams,
    FactGraph,
    link_names,
    merge_seeds,
    rank_passages,
    relative_weights,
)
from rhizome.core.retrieval.params import RetrieverParams
from rhizome.core.store.storage import Connection
from rhizome.core.types import Chunk, Community, Document, Entity, Hit, Relation

__all__ = [
    "open_entity_graph",
    "NAIVE",
    "BaseIndex",
    "BaseRetriever",
    "Batch",
    "Chunk",
    "ChunkExtraction",
    "ChunkVectors",
    "Community",
    "ConfigurationError",
    "Connection",
    "DescriptionSummarizer",
    "Document",
    "Entity",
    "EntityGraphIndex",
    "EntityGraphStore",
    "EntityMention",
    "EntityResolver",
    "EvidenceGraph",
    "EvidenceParams",
    "Extraction",
    "ExtractionConfig",
    "ExtractionSpecConfig",
    "FactGraph",
    "FoldPolicy",
    "GraphChange",
    "GroupSummarizer",
    "GroupWriter",
    "Hierarchy",
    "Hit",
    "IndexConfig",
    "InvalidInputError",
    "MapPlan",
    "MapReduceSearch",
    "ModeInfo",
    "ModelOutputError",
    "Relation",
    "RelationMention",
    "Retrieval",
    "RetrieverParams",
    "Stats",
    "VectorBatch",
    "add_counts",
    "arun_stage",
    "batch_chunks",
    "chunk_hits",
    "chunk_record",
    "cluster_hierarchy",
    "knn_similarity_pairs",
    "link_names",
    "merge_seeds",
    "pagerank_scores",
    "pair_key",
    "point_hit",
    "provenance",
    "query_names",
    "query_vector",
    "rank_passages",
    "relative_weights",
    "triple_key",
    "vector_search",
]
