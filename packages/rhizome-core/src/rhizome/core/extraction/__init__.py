"""The extraction step: chunks in, entities and relations out.

Three interchangeable sources produce the same per-chunk :class:`Extraction` records:

- :class:`LLMExtractor` — a chat model fills a small JSON schema, with gleaning passes;
- :class:`OfflineExtractor` — rule-based names and co-occurrence, no model at all;
- :func:`import_openie` — precomputed OpenIE triples in HippoRAG's JSON layout.

:func:`merge_extractions` then combines the records across chunks (and into an existing graph).
"""

from rhizome.core.extraction.llm import DEFAULT_ENTITY_TYPES, LLMExtractor, Progress
from rhizome.core.extraction.merge import (
    COOCCURRENCE,
    DESCRIPTION_SEPARATOR,
    cooccurrence_pmi,
    merge_extractions,
)
from rhizome.core.extraction.offline import NOUN_PHRASE, OfflineExtractor, split_sentences
from rhizome.core.extraction.openie import TRIPLE, OpenIEExtractor, import_openie
from rhizome.core.extraction.schema import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    ExtractionOutput,
    Extractor,
    clean_name,
    entity_key,
    relation_id,
    relation_key,
)

__all__ = [
    "COOCCURRENCE",
    "DEFAULT_ENTITY_TYPES",
    "DESCRIPTION_SEPARATOR",
    "NOUN_PHRASE",
    "TRIPLE",
    "ExtractedEntity",
    "ExtractedRelation",
    "Extraction",
    "ExtractionOutput",
    "Extractor",
    "LLMExtractor",
    "OfflineExtractor",
    "OpenIEExtractor",
    "Progress",
    "clean_name",
    "cooccurrence_pmi",
    "entity_key",
    "import_openie",
    "merge_extractions",
    "relation_id",
    "relation_key",
    "split_sentences",
]
