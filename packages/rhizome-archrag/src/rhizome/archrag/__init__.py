"""rhizome.archrag — ArchRAG (Wang et al., 2025): attributed communities in a multi-layer tree
(KNN-augmented, cosine-weighted Leiden or spectral clustering, a report per community), a C-HNSW
index with one proximity graph per layer, and hierarchical search whose nodes a chat model
filters into scored key points.

```python
from rhizome.archrag import ArchRAGIndex

index = ArchRAGIndex("ollama:nomic-embed-text", llm="ollama:qwen2.5:7b-instruct", path="idx")
index.insert(documents)
hits = index.as_retriever(k=10).retrieve("What connects the two companies?")
```
"""

from rhizome.archrag.chnsw import CHNSW, brute_force
from rhizome.archrag.config import ArchRAGConfig
from rhizome.archrag.index import ArchRAGIndex
from rhizome.archrag.retrieval import (
    FilteredParams,
    FilteredSearch,
    HierarchicalParams,
    HierarchicalSearch,
    PassageParams,
)

__all__ = [
    "CHNSW",
    "ArchRAGConfig",
    "ArchRAGIndex",
    "FilteredParams",
    "FilteredSearch",
    "HierarchicalParams",
    "HierarchicalSearch",
    "PassageParams",
    "brute_force",
]
