"""rhizome.graphrag — a GraphRAG-style index: entity graph, hierarchical Leiden communities,
community reports; local, global (map with dynamic community selection), DRIFT and naive search.

    from rhizome.graphrag import GraphRAGIndex

    index = GraphRAGIndex(path="my-index")            # offline; pass llm="ollama:..." for a model
    index.insert(documents)
    hits = index.as_retriever(mode="global").retrieve("What are the main themes?")
    print(index.answer("What are the main themes?", mode="global").text)
"""

from rhizome.graphrag.config import GraphRAGConfig
from rhizome.graphrag.index import GraphRAGIndex
from rhizome.graphrag.reports import ReportWriter, build_input, full_content
from rhizome.graphrag.search import (
    DriftParams,
    DriftSearch,
    GlobalParams,
    GlobalSearch,
    LocalParams,
    LocalSearch,
)

__all__ = [
    "DriftParams",
    "DriftSearch",
    "GlobalParams",
    "GlobalSearch",
    "GraphRAGConfig",
    "GraphRAGIndex",
    "LocalParams",
    "LocalSearch",
    "ReportWriter",
    "build_input",
    "full_content",
]
