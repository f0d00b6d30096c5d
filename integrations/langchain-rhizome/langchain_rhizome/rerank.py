"""Any LangChain document compressor as a Rhizome reranker (see
:mod:`rhizome.core.retrieval.rerank`): ``CrossEncoderReranker``, ``CohereRerank``,
``FlashrankRerank``, ``LLMListwiseRerank`` and the rest of ``BaseDocumentCompressor``."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import BaseDocumentCompressor, Document

from rhizome.core.errors import ConfigurationError
from rhizome.core.retrieval.rerank import kept_scores

_POSITION = "rhizome_position"
"""The metadata key that tells which candidate a compressed document was."""


class CompressorReranker:
    """A ``BaseDocumentCompressor`` as a reranker: ``index.as_retriever(reranker=
    CompressorReranker(compressor))``. The candidates go to the compressor as ``Document``s;
    the ones it returns, in its order, score by the ``relevance_score`` it sets in their metadata
    (what Cohere, Flashrank and cross-encoder compressors set) or else by their rank, and the
    ones it drops score below them (see :func:`~rhizome.core.retrieval.rerank.kept_scores`). A
    hit keeps its own text and provenance: what the compressor did to a document's text is not
    used."""

    def __init__(self, compressor: BaseDocumentCompressor) -> None:
        if not isinstance(compressor, BaseDocumentCompressor):
            raise ConfigurationError(f"CompressorReranker wraps a LangChain BaseDocumentCompressor, not a {type(compressor).__name__}")
        self.compressor = compressor

    async def __call__(self, query: str, texts: list[str]) -> list[float]:
        documents = [Document(page_content=text, metadata={_POSITION: i}) for i, text in enumerate(texts)]
        kept = await self.compressor.acompress_documents(documents, query)
        positions = [(d.metadata.get(_POSITION), d.metadata.get("relevance_score")) for d in kept]
        return kept_scores(len(texts), [(i, score) for i, score in positions if isinstance(i, int)])

    def __repr__(self) -> str:
        return f"CompressorReranker({type(self.compressor).__name__})"


def as_reranker(reranker: Any) -> Any:
    """``reranker``, a LangChain document compressor wrapped as a :class:`CompressorReranker`."""
    return CompressorReranker(reranker) if isinstance(reranker, BaseDocumentCompressor) else reranker


__all__ = ["CompressorReranker", "as_reranker"]
