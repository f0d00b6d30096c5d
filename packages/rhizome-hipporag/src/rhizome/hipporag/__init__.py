"""rhizome.hipporag — HippoRAG 1 and 2 (Gutiérrez et al.): a knowledge graph of phrases, facts,
synonymy edges and passages, searched by personalized PageRank.

```python
from rhizome.hipporag import HippoRAGIndex

index = HippoRAGIndex(llm="ollama:qwen2.5:7b-instruct", embedder="ollama:nomic-embed-text", path="idx")
index.insert(documents)
hits = index.as_retriever(k=5, mode="v2").retrieve("Who founded the company that made the game?")
```
"""

from rhizome.hipporag.config import HippoRAGConfig
from rhizome.hipporag.index import HippoRAGIndex
from rhizome.hipporag.openie import ModelOpenIE
from rhizome.hipporag.retrieval import HippoRAGParams, HippoRAGRetriever

__all__ = ["HippoRAGConfig", "HippoRAGIndex", "HippoRAGParams", "HippoRAGRetriever", "ModelOpenIE"]
