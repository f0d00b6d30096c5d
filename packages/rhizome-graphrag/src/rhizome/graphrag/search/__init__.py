"""The searches of a GraphRAG index, each a :class:`~rhizome.core.retrieval.contract.BaseRetriever`:

- :class:`LocalSearch` — entities, relationships, reports and chunks around the query's entities;
- :class:`GlobalSearch` — map over community reports (with dynamic community selection);
- :class:`DriftSearch` — a global primer, then local follow-ups;
- the ``naive`` mode — GraphRAG's basic search, the kernel's chunk-vector retriever.
"""

from rhizome.graphrag.search.drift import DriftParams, DriftSearch
from rhizome.graphrag.search.global_ import GlobalParams, GlobalSearch
from rhizome.graphrag.search.local import LocalParams, LocalSearch

__all__ = ["DriftParams", "DriftSearch", "GlobalParams", "GlobalSearch", "LocalParams", "LocalSearch"]
