"""A Rhizome index as a LlamaIndex retriever: nodes with scores, a query engine, persistence.

    uv run python examples/llamaindex_query_engine.py "Which building houses the museum?"

The query engine here runs with LlamaIndex's MockLLM so the example needs no model server; put
any LlamaIndex LLM in its place (for instance `llama_index.llms.ollama.Ollama`).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index.retrievers.rhizome import RhizomeRetriever
from rhizome.core import VectorIndex
from rhizome.rag.cli import sample_corpus
from rhizome.tools import load_path


def main() -> None:
    question = sys.argv[1] if len(sys.argv) > 1 else "Which building houses the Vell Islands Museum?"
    index = VectorIndex(chunk_size=200, chunk_overlap=20)  # offline hashing embedder
    index.insert(load_path(sample_corpus()))
    retriever = RhizomeRetriever.from_index(index, similarity_top_k=2)

    for node in retriever.retrieve(question):
        print(f"{node.score:.3f}  {node.node.metadata.get('title')}  {node.node.get_content()[:80]!r}")

    with tempfile.TemporaryDirectory() as tmp:
        retriever.persist(Path(tmp) / "index")
        index.close()
        reopened = RhizomeRetriever.from_persist_dir(Path(tmp) / "index", similarity_top_k=2)
        engine = RetrieverQueryEngine.from_args(reopened, llm=MockLLM())
        response = engine.query(question)
        print(f"query engine used {len(response.source_nodes)} source nodes:",
              [n.node.metadata.get("title") for n in response.source_nodes])
        reopened.index.close()


if __name__ == "__main__":
    main()
