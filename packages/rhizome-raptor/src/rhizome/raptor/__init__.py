"""rhizome.raptor — RAPTOR (Sarthi et al., 2024): a tree of recursive cluster summaries over
100-token leaves (UMAP, Gaussian mixtures chosen by BIC, soft membership), searched as a
collapsed tree or by tree traversal.

```python
from rhizome.raptor import RaptorIndex

index = RaptorIndex("ollama:nomic-embed-text", llm="ollama:qwen2.5:7b-instruct", path="idx")
index.insert(documents)
hits = index.as_retriever(k=10, mode="collapsed").retrieve("What is the story about?")
```
"""

from rhizome.raptor.config import RaptorConfig
from rhizome.raptor.index import RaptorIndex
from rhizome.raptor.retrieval import (
    CollapsedRetriever,
    TraversalParams,
    TraversalRetriever,
    TreeParams,
)

__all__ = [
    "CollapsedRetriever",
    "RaptorConfig",
    "RaptorIndex",
    "TraversalParams",
    "TraversalRetriever",
    "TreeParams",
]
