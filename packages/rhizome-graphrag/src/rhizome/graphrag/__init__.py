"""rhizome.graphrag — a GraphRAG-style index: entity graph, hierarchical Leiden communities,
community reports; local, global (map with dynamic community selection), DRIFT and basic search.

    from rhizome.graphrag import GraphRAGIndex

    index = GraphRAGIndex(path="my-index")            # offline; pass llm="ollama:..." for a model
    index.insert(documents)
    hits = index.as_retriever(mode="global").retrieve("What are the main themes?")
    print(index.answer("What are the main themes?", mode="global").text)
"""

from rhizome.graphrag.answer import GraphRAGAnswer, aanswer, answer
from rhizome.graphrag.graph import GraphData, build_graph, cluster
from rhizome.graphrag.index import (
    GRAPHRAG_ENTITY_TYPES,
    GraphRAGIndex,
    OpenIEExtractor,
    UpdateReport,
)
from rhizome.graphrag.reports import ReportWriter, build_input, full_content
from rhizome.graphrag.search import (
    BasicSearch,
    DriftSearch,
    GlobalSearch,
    LocalContext,
    LocalSearch,
)

__all__ = [
    "GRAPHRAG_ENTITY_TYPES",
    "BasicSearch",
    "DriftSearch",
    "GlobalSearch",
    "GraphData",
    "GraphRAGAnswer",
    "GraphRAGIndex",
    "LocalContext",
    "LocalSearch",
    "OpenIEExtractor",
    "ReportWriter",
    "UpdateReport",
    "aanswer",
    "answer",
    "build_graph",
    "build_input",
    "cluster",
    "full_content",
]
