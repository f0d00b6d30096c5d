"""rhizome.sprag — spRAG / dsRAG (D-Star-AI): AutoContext chunk headers and Relevant Segment
Extraction.

```python
from rhizome.sprag import SpRAGIndex, segment_extractor

index = SpRAGIndex("ollama:nomic-embed-text", llm="ollama:qwen2.5:7b-instruct", path="idx")
index.insert(documents)
segments = index.as_retriever(k=3, mode="balanced").retrieve("What did the 2023 report say about margins?")

# RSE after any other Rhizome retriever
segments = segment_extractor(lightrag_index.as_retriever(mode="hybrid"), k=3).retrieve(question)
```
"""

from rhizome.sprag.autocontext import DocumentContext, SectionContext
from rhizome.sprag.config import PRESETS, RSEParams, SpRAGConfig
from rhizome.sprag.index import SpRAGIndex
from rhizome.sprag.retrieval import (
    ChunkRetriever,
    SegmentParams,
    SegmentRetriever,
    segment_extractor,
)
from rhizome.sprag.rse import Segment, best_segments, chunk_values

__all__ = [
    "PRESETS",
    "ChunkRetriever",
    "DocumentContext",
    "RSEParams",
    "SectionContext",
    "Segment",
    "SegmentParams",
    "SegmentRetriever",
    "SpRAGConfig",
    "SpRAGIndex",
    "best_segments",
    "chunk_values",
    "segment_extractor",
]
