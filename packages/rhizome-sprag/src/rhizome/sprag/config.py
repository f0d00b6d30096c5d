"""spRAG's settings: how documents are indexed (:class:`SpRAGConfig`) and how segments are chosen
(:class:`RSEParams`, with dsRAG's three presets in :data:`PRESETS`).

Defaults come from dsRAG (D-Star-AI/dsRAG v0.5, the successor of spRAG): ``knowledge_base.py``,
``auto_context.py``, ``rse.py`` and ``dsparse``. Where dsRAG counts characters we count tokens
(the kernel chunks by ``cl100k_base`` tokens); docs/sprag.md lists every such conversion.
"""

from __future__ import annotations

from pydantic import Field

from rhizome.core.index.config import IndexConfig
from rhizome.core.retrieval.params import RetrieverParams
from rhizome.core.retrieval.passages import PASSAGE_TOKENS


class SpRAGConfig(IndexConfig):
    """Settings of a :class:`~rhizome.sprag.index.SpRAGIndex`: chunking and AutoContext."""

    chunk_size: int = Field(200, ge=16)
    """Tokens per chunk: dsRAG cuts 800-character chunks (``dsparse`` ``chunk_size=800``),
    about 200 ``cl100k_base`` tokens of English prose."""

    chunk_overlap: int = Field(0, ge=0)
    """Tokens shared by neighbouring chunks: none, as in dsRAG, whose segments are runs of
    consecutive chunks joined back into the text."""

    auto_context: bool = True
    """Prepend a header (the document's title and summary, and optionally its section's) to every
    chunk before it is embedded (dsRAG's AutoContext, on by default). The stored chunk text never
    carries the header. ``False`` embeds the bare chunks (RSE alone)."""

    generated_title: bool = True
    """A document without a ``title`` in its metadata gets one from the chat model (dsRAG
    ``use_generated_title`` True); offline, or with ``False``, its first line when that reads as
    a title, else its id (dsRAG falls back to the document id)."""

    document_summary: bool = True
    """Put a one-sentence summary of the document in the header (dsRAG ``get_document_summary``
    True): the chat model's, offline the document's lead sentences."""

    context_input_tokens: int = Field(8000, ge=64)
    """Tokens of the document's beginning the model reads for its title and summary (dsRAG: the
    first 4,000 tokens for the title, 8,000 for the summary; one call here reads 8,000), fewer
    when the model's context window holds fewer."""

    summary_max_tokens: int = Field(60, ge=8)
    """Longest summary in a header (a model is asked for one sentence, dsRAG's length; offline
    lead sentences are cut to this)."""

    lead_sentences: int = Field(2, ge=1)
    """Sentences of the document (or section) that make its offline summary: a summary of "1–2
    sentences", as spRAG describes its document summary."""

    section_summaries: bool = False
    """Add a section line (title and one-sentence summary) to each chunk's header (dsRAG
    ``get_section_summaries``, off by default)."""

    section_max_tokens: int = Field(1200, ge=16)
    """A section is the text under a Markdown heading, cut into parts of at most this many tokens
    of whole chunks; text without headings is cut the same way. dsRAG finds sections with the
    model (semantic sectioning); this size is our choice (docs/sprag.md)."""

    passage_tokens: int = Field(PASSAGE_TOKENS, ge=16)
    """Most tokens in a passage of the ``passages`` mode: runs of a document's consecutive chunks,
    each embedded whole with its header beside its chunks (:mod:`rhizome.core.retrieval.passages`;
    1,200, the kernel's default chunk, what dense retrieval sees)."""

    language: str = "English"
    """Language the model writes titles and summaries in (dsRAG ``language``)."""


class RSEParams(RetrieverParams):
    """Relevant Segment Extraction settings (dsRAG ``rse_params``); see :data:`PRESETS`."""

    max_length: int = Field(15, ge=1)
    """Most chunks in one segment (dsRAG ``max_length``)."""

    overall_max_length: int = Field(30, ge=1)
    """Most chunks in all segments of one query together (dsRAG ``overall_max_length``)."""

    minimum_value: float = Field(0.5, ge=0.0)
    """Smallest value a segment must reach to be returned (dsRAG ``minimum_value``)."""

    irrelevant_chunk_penalty: float = Field(0.18, ge=0.0)
    """Subtracted from every chunk's value, so that a chunk must be relevant enough to lengthen a
    segment: larger gives shorter segments (dsRAG ``irrelevant_chunk_penalty``)."""

    overall_max_length_extension: int = Field(5, ge=0)
    """Chunks added to ``overall_max_length`` for each query beyond the first
    (dsRAG ``overall_max_length_extension``)."""

    decay_rate: float = Field(30.0, gt=0.0)
    """Rank decay: a chunk's relevance counts ``exp(-rank / decay_rate)`` (dsRAG ``decay_rate``)."""

    top_k_for_document_selection: int = Field(10, ge=1)
    """Documents searched for segments: those of the first this-many ranked chunks
    (dsRAG ``top_k_for_document_selection``)."""

    chunk_length_adjustment: bool = True
    """Scale a ranked chunk's value by its length over a typical chunk's, when longer
    (dsRAG ``chunk_length_adjustment``; its reference is 700 characters for 800-character chunks,
    ours 7/8 of the index's ``chunk_size`` tokens)."""


PRESETS: dict[str, RSEParams] = {
    "balanced": RSEParams(),
    "precision": RSEParams(minimum_value=0.7, irrelevant_chunk_penalty=0.2),
    "find_all": RSEParams(
        max_length=40, overall_max_length=200, minimum_value=0.4, irrelevant_chunk_penalty=0.18,
        overall_max_length_extension=0, decay_rate=200.0, top_k_for_document_selection=200,
    ),
}
"""dsRAG's presets (``rse.py`` ``RSE_PARAMS_PRESETS``), values verbatim: ``balanced`` (dsRAG's
default), ``precision`` (a higher bar and penalty: fewer, shorter segments) and ``find_all``
(long segments over many documents, for questions whose answer is spread out)."""

CANDIDATES = 200
"""Chunks retrieved per query before segments are chosen (dsRAG searches 200, then reranks)."""


__all__ = ["CANDIDATES", "PRESETS", "RSEParams", "SpRAGConfig"]
