"""``SpRAGIndex``: spRAG / dsRAG (D-Star-AI) on the kernel — contextualised chunks searched by
Relevant Segment Extraction.

Index: documents are cut into 200-token chunks without overlap; AutoContext gives each
document a title and a one-sentence summary (and, optionally, each section one) and every chunk
is embedded with that header before its text (:mod:`rhizome.sprag.autocontext`); the chunk text
stored, and returned, stays clean. One record per document (``sprag_documents``) keeps its
context. Insert and delete are the kernel's, per document: nothing is shared across documents,
so nothing is rebuilt.

Retrieval: a mode per dsRAG preset (``balanced``, ``precision``, ``find_all``) returns segments
— runs of consecutive chunks joined back into text — chosen by RSE over the 200 nearest chunks
(:class:`~rhizome.sprag.retrieval.SegmentRetriever`); ``chunks`` returns the nearest chunks
alone (AutoContext without RSE).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rhizome.core.index.base import BaseIndex, Batch, ModeInfo, Stats
from rhizome.core.retrieval.passages import document_passages, joined, passages
from rhizome.core.store.storage import Connection
from rhizome.core.types import Chunk, Hit
from rhizome.sprag.autocontext import DocumentContext, document_contexts, embedding_text
from rhizome.sprag.config import SpRAGConfig

Prepared = tuple[list[DocumentContext], list[str], Any, list[str], Any]
"""A batch's contexts, its chunk ids and vectors, its passage keys and vectors."""


class SpRAGIndex(BaseIndex[Prepared, None]):
    """spRAG: AutoContext chunk headers and Relevant Segment Extraction.

    Modes: ``balanced`` (default), ``precision`` and ``find_all`` (dsRAG's RSE presets; each hit
    a segment), ``chunks`` (the nearest chunks) and ``passages`` (runs of a document's chunks up
    to ``passage_tokens``, each embedded whole with its header, ranked by their own vector and
    their best chunk's: :mod:`rhizome.core.retrieval.passages`). Settings:
    :class:`~rhizome.sprag.config.SpRAGConfig`; ``as_retriever`` takes
    :class:`~rhizome.sprag.retrieval.SegmentRetriever`'s options (any
    :class:`~rhizome.sprag.config.RSEParams` field, ``reranker``, ``relevance``, ``candidates``).
    ``llm`` writes the titles and summaries; without one they are taken from the text.
    """

    method: ClassVar[str] = "sprag"
    modes: ClassVar[Mapping[str, ModeInfo]] = {
        "balanced": ModeInfo("runs of neighbouring chunks joined into segments by their relevance (Relevant Segment Extraction, dsRAG's default preset); for questions answered by a stretch of one document", ("specific",), retriever="rhizome.sprag.retrieval:SegmentRetriever", options={"preset": "balanced"}),
        "precision": ModeInfo("fewer, shorter segments with a higher bar of relevance (dsRAG's precision preset); for pointed factual questions", ("specific",), retriever="rhizome.sprag.retrieval:SegmentRetriever", options={"preset": "precision"}),
        "find_all": ModeInfo("long segments over many documents (dsRAG's find_all preset); for questions whose answer is spread out", ("global", "multi-hop"), retriever="rhizome.sprag.retrieval:SegmentRetriever", options={"preset": "find_all"}),
        "chunks": ModeInfo("the chunks nearest the query, embedded with their AutoContext headers (no segments)", ("specific",), retriever="rhizome.sprag.retrieval:ChunkRetriever"),
        "passages": ModeInfo("the passages (runs of a document's chunks up to 1,200 tokens, embedded whole with their AutoContext header) ranked by their own embedding and their best chunk's together; for questions a passage answers", ("specific",), retriever="rhizome.core.retrieval.passages:PassageRetriever"),
    }
    PASSAGE_COLLECTION: ClassVar[str] = "sprag_passages"
    """Vectors of the passages of the ``passages`` mode."""
    config_class = SpRAGConfig
    config: SpRAGConfig

    def _setup(self) -> None:
        self.contexts = self.store.table("sprag_documents", DocumentContext)

    # -- BaseIndex hooks -------------------------------------------------------------------------
    async def _prepare(self, batch: Batch, stats: Stats) -> Prepared:
        contexts = await document_contexts(self, batch, stats)
        on = self.config.auto_context  # off: the chunks alone (the context still holds their titles)
        texts = {c.id: embedding_text(ctx.header(c) if on else "", c) for ctx, (_, chunks) in zip(contexts, batch) for c in chunks}
        whole: dict[str, str] = {}  # each passage as one chunk of its text, headed as a chunk would be
        for ctx, (_, chunks) in zip(contexts, batch):
            for key, run in passages(chunks, self.config.passage_tokens):
                one = run[0].model_copy(update={"text": joined(run)})
                whole[key] = embedding_text(ctx.header(one) if on else "", one)
        stats["chunks_embedded"] = stats.get("chunks_embedded", 0) + len(texts)
        vectors = await self.embed(list(texts.values()), what="chunks with their headers")
        return contexts, list(texts), vectors, list(whole), await self.embed(list(whole.values()), what="passages with their headers")

    def _write(self, db: Connection, batch: Batch, prepared: Prepared) -> None:
        contexts, ids, vectors, keys, passage_vectors = prepared
        self.contexts.put(db, contexts)
        self.put_chunk_vectors(db, ids, vectors)
        if keys:
            self.store.put_vectors(db, self.PASSAGE_COLLECTION, keys, passage_vectors)

    def _remove_document(self, db: Connection, document_id: str) -> int:
        self.contexts.delete(db, [document_id])
        if self.store.has_collection(self.PASSAGE_COLLECTION):
            self.store.delete_vectors(db, self.PASSAGE_COLLECTION, document_passages(self.store, document_id, self.config.passage_tokens))
        return super()._remove_document(db, document_id)

    # -- reading ---------------------------------------------------------------------------------
    def headers(self, chunks: list[Chunk]) -> dict[str, str]:
        """The AutoContext header of each chunk, by chunk id (what was embedded before its text)."""
        found = self.contexts.get({c.document_id for c in chunks}) if self.config.auto_context else {}
        return {c.id: found[c.document_id].header(c) if c.document_id in found else "" for c in chunks}

    def document_context(self, document_ids: list[str]) -> dict[str, DocumentContext]:
        """The stored context (title, summary, sections) of each document, by id."""
        return self.contexts.get(document_ids)

    def _answer_inputs(self, retrieval: Any) -> tuple[list[Hit], dict[str, Any]]:
        return list(retrieval.context or retrieval.hits), {"render": render_with_context}


def render_with_context(hit: Hit) -> str:
    """A hit in an answer's context: its document's title and summary, then its text (dsRAG puts
    the document context before every segment it returns)."""
    title = hit.metadata.get("title") or (hit.provenance.document_ids[0] if hit.provenance.document_ids else hit.id)
    summary = hit.metadata.get("summary")
    return f"({title}{' — ' + summary if summary else ''}) {' '.join(hit.text.split())}"


__all__ = ["SpRAGIndex", "render_with_context"]
