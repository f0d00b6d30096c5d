"""Graph algorithms shared by the graph-based methods, one module per job.

* :mod:`~rhizome.core.graph.leiden` — community detection: :func:`leiden` (one seeded level of
  the Leiden algorithm) and :func:`hierarchical_leiden` (GraphRAG-style recursive re-clustering
  of communities larger than ``max_cluster_size``).
* :mod:`~rhizome.core.graph.pagerank` — :func:`personalized_pagerank` by power iteration on a
  scipy sparse matrix, as HippoRAG spreads query-entity scores over its graph, and
  :func:`local_pagerank` spreading them hop by hop from the seeds (its cost bounded by its
  ``epsilon``, not by the graph), with :func:`graph_to_csr` and :func:`pagerank_scores` for
  networkx graphs.
* :mod:`~rhizome.core.graph.similarity` — :func:`knn_similarity_pairs`: pairs of items among
  each other's k nearest neighbours above a cosine threshold (HippoRAG's synonymy edges, entity
  resolution candidates), by a batched faiss search; :func:`knn_similarity_arrays` gives them
  as arrays of positions for layers with millions of pairs (ArchRAG).

Every function gives the same answer for the same input on the same library versions; the
graph functions treat *node order* (:func:`ordered_nodes`) as canonical. Import from this
package: ``from rhizome.core.graph import leiden, pagerank_scores, knn_similarity_pairs``.

The entity-graph layer lives beside the algorithms, imported from its own modules (this package
does not load it): :mod:`~rhizome.core.graph.store` (``EntityGraphStore``, ``GraphChange``),
:mod:`~rhizome.core.graph.profiles` (the fold rules and ``FoldPolicy``),
:mod:`~rhizome.core.graph.lists` (a long profile's citations and fragments as rows) and
:mod:`~rhizome.core.graph.mentions` (the per-chunk records).

The services the entity methods share are imported from their own modules too:
:mod:`~rhizome.core.graph.entity_graph` (``EntityGraph``, the in-memory view searches read),
:mod:`~rhizome.core.graph.resolution` (entity resolution beyond exact names) and
:mod:`~rhizome.core.graph.summarize` (merged descriptions summarised).
"""

from __future__ import annotations

from rhizome.core.graph._common import NodeId, ordered_nodes
from rhizome.core.graph.leiden import (
    DEFAULT_LEIDEN_SEED,
    DEFAULT_MAX_CLUSTER_SIZE,
    DEFAULT_MAX_LEVELS,
    DEFAULT_RESOLUTION,
    CommunityHierarchy,
    HierarchyCommunity,
    WeightedEdges,
    communities_from_membership,
    community_id,
    hierarchical_leiden,
    leiden,
    leiden_library_versions,
    leiden_update,
    modularity,
)
from rhizome.core.graph.pagerank import (
    DEFAULT_LOCAL_EPSILON,
    DEFAULT_PPR_DAMPING,
    Neighbours,
    Transition,
    graph_to_csr,
    local_pagerank,
    pagerank_scores,
    personalized_pagerank,
)
from rhizome.core.graph.similarity import (
    DEFAULT_SIMILARITY_THRESHOLD,
    DEFAULT_SIMILARITY_TOP_K,
    knn_similarity_arrays,
    knn_similarity_pairs,
)

__all__ = [
    "DEFAULT_LEIDEN_SEED",
    "DEFAULT_LOCAL_EPSILON",
    "DEFAULT_MAX_CLUSTER_SIZE",
    "DEFAULT_MAX_LEVELS",
    "DEFAULT_PPR_DAMPING",
    "DEFAULT_RESOLUTION",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "DEFAULT_SIMILARITY_TOP_K",
    "CommunityHierarchy",
    "HierarchyCommunity",
    "Neighbours",
    "NodeId",
    "Transition",
    "WeightedEdges",
    "communities_from_membership",
    "community_id",
    "graph_to_csr",
    "hierarchical_leiden",
    "knn_similarity_arrays",
    "knn_similarity_pairs",
    "leiden",
    "leiden_update",
    "leiden_library_versions",
    "local_pagerank",
    "modularity",
    "ordered_nodes",
    "pagerank_scores",
    "personalized_pagerank",
]
