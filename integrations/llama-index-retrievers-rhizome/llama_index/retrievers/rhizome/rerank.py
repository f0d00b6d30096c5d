"""Any LlamaIndex node postprocessor as a Rhizome reranker (see
:mod:`rhizome.core.retrieval.rerank`): ``SentenceTransformerRerank``, ``LLMRerank``,
``CohereRerank`` and the rest of ``BaseNodePostprocessor``."""

from __future__ import annotations

from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rhizome.core.errors import ConfigurationError
from rhizome.core.retrieval.rerank import kept_scores


class PostprocessorReranker:
    """A ``BaseNodePostprocessor`` as a reranker: ``index.as_retriever(reranker=
    PostprocessorReranker(postprocessor))``. The candidates go to it as nodes (without scores);
    the ones it returns, in its order, score by the score it gives them or else by their rank,
    and the ones it drops score below them (see
    :func:`~rhizome.core.retrieval.rerank.kept_scores`). A hit keeps its own text and provenance."""

    def __init__(self, postprocessor: BaseNodePostprocessor) -> None:
        if not isinstance(postprocessor, BaseNodePostprocessor):
            raise ConfigurationError(f"PostprocessorReranker wraps a LlamaIndex BaseNodePostprocessor, not a {type(postprocessor).__name__}")
        self.postprocessor = postprocessor

    async def __call__(self, query: str, texts: list[str]) -> list[float]:
        nodes = [NodeWithScore(node=TextNode(id_=str(i), text=text), score=None) for i, text in enumerate(texts)]
        kept = await self.postprocessor.apostprocess_nodes(nodes, query_bundle=QueryBundle(query_str=query))
        positions = [(n.node.node_id, n.score) for n in kept]
        return kept_scores(len(texts), [(int(i), score) for i, score in positions if i.isdigit() and int(i) < len(texts)])

    def __repr__(self) -> str:
        return f"PostprocessorReranker({type(self.postprocessor).__name__})"


def as_reranker(reranker: Any) -> Any:
    """``reranker``, a LlamaIndex node postprocessor wrapped as a :class:`PostprocessorReranker`."""
    return PostprocessorReranker(reranker) if isinstance(reranker, BaseNodePostprocessor) else reranker


__all__ = ["PostprocessorReranker", "as_reranker"]
