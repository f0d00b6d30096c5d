"""rhizome.lightrag — LightRAG (Guo et al.): entity and relation profiles, dual-level
(low/high keyword) retrieval, real incremental insert and delete.

```python
from rhizome.lightrag import LightRAGIndex

index = LightRAGIndex(llm="ollama:qwen2.5:7b-instruct", embedder="ollama:nomic-embed-text", path="idx")
index.insert(documents)
hits = index.as_retriever(k=5, mode="hybrid").retrieve("How did the treaty change trade?")
```
"""

from rhizome.lightrag.answer import aanswer, answer, format_context
from rhizome.lightrag.extraction import (
    DEFAULT_ENTITY_TYPES,
    LightRAGExtractor,
    OfflineLightRAGExtractor,
)
from rhizome.lightrag.index import LightRAGIndex
from rhizome.lightrag.keywords import offline_query_keywords
from rhizome.lightrag.query import LightRAGRetriever, QueryContext
from rhizome.lightrag.resolution import EntityResolver, normalise_name, resolve_names
from rhizome.lightrag.schema import ChunkExtraction, QueryKeywords

__all__ = [
    "DEFAULT_ENTITY_TYPES",
    "ChunkExtraction",
    "EntityResolver",
    "LightRAGExtractor",
    "LightRAGIndex",
    "LightRAGRetriever",
    "OfflineLightRAGExtractor",
    "QueryContext",
    "QueryKeywords",
    "aanswer",
    "answer",
    "format_context",
    "normalise_name",
    "offline_query_keywords",
    "resolve_names",
]
