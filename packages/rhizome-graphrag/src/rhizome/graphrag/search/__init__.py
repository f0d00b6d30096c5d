"""The searches of a GraphRAG index, each a Rhizome ``Retriever`` returning ``Hit`` records:

- :class:`LocalSearch` — entities, relationships, reports and chunks around the query's entities;
- :class:`GlobalSearch` — map over community reports (with dynamic community selection);
- :class:`DriftSearch` — a global primer, then local follow-ups;
- :class:`BasicSearch` — chunk vectors (naive RAG over the same chunks).
"""

from __future__ import annotations

from typing import Any

from rhizome.core.naive import VectorRetriever
from rhizome.graphrag.search._common import check_k
from rhizome.graphrag.search.drift import DriftSearch
from rhizome.graphrag.search.global_ import GlobalSearch
from rhizome.graphrag.search.local import LocalContext, LocalSearch


class BasicSearch(VectorRetriever):
    """GraphRAG's basic search: the top-``k`` chunks by vector similarity (GraphRAG ``k`` 10)."""

    def __init__(self, index: Any, k: int | None = None) -> None:
        super().__init__(index, k=check_k(k, 10))


__all__ = ["BasicSearch", "DriftSearch", "GlobalSearch", "LocalContext", "LocalSearch"]
