"""rhizome.lightrag — LightRAG (Guo et al.): entity and relation profiles, dual-level
(low/high keyword) retrieval, real incremental insert and delete.

```python
from rhizome.lightrag import LightRAGIndex

index = LightRAGIndex(llm="ollama:qwen2.5:7b-instruct", embedder="ollama:nomic-embed-text", path="idx")
index.insert(documents)
hits = index.as_retriever(k=5, mode="hybrid").retrieve("How did the treaty change trade?")
```
"""

from rhizome.core.graph.mentions import ChunkExtraction
from rhizome.lightrag.config import LightRAGConfig
from rhizome.lightrag.index import LightRAGIndex
from rhizome.lightrag.query import (
    LightRAGParams,
    LightRAGRetriever,
    QueryContext,
    offline_query_keywords,
)
from rhizome.lightrag.schema import QueryKeywords

__all__ = [
    "ChunkExtraction",
    "LightRAGConfig",
    "LightRAGIndex",
    "LightRAGParams",
    "LightRAGRetriever",
    "QueryContext",
    "QueryKeywords",
    "offline_query_keywords",
]
