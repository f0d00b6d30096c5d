"""The extraction step: chunks in, entities and relations out.

Three interchangeable sources produce the same per-chunk :class:`Extraction` records:

- :class:`LLMExtractor` — a chat model fills a small JSON schema, with gleaning rounds and
  optional packing of short chunks into one call;
- :class:`OfflineExtractor` — rule-based names and co-occurrence, no model at all;
- :class:`OpenIEExtractor` / :func:`import_openie` — precomputed OpenIE triples in HippoRAG's
  JSON layout.

An index chooses one with an extraction spec (:mod:`rhizome.core.extraction.spec`); the
entity-graph layer (:mod:`rhizome.core.graph.store`) then folds the records into entity and
relation profiles.

:mod:`~rhizome.core.extraction.parallel` fans an extractor's model calls out over Ray
workers (``workers=``, ``rhizome index --workers N``); this package does not load it.
"""

from rhizome.core.extraction.keywords import (
    add_keywords,
    content_keywords,
    content_words,
    query_names,
)
from rhizome.core.extraction.llm import DEFAULT_ENTITY_TYPES, LLMExtractor, Progress
from rhizome.core.extraction.offline import (
    COOCCURRENCE,
    NOUN_PHRASE,
    OfflineExtractor,
    pmi_values,
    split_sentences,
)
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
from rhizome.core.extraction.spec import make_extractor, spec_of

__all__ = [
    "COOCCURRENCE",
    "DEFAULT_ENTITY_TYPES",
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
    "add_keywords",
    "clean_name",
    "content_keywords",
    "query_names",
    "content_words",
    "entity_key",
    "import_openie",
    "make_extractor",
    "pmi_values",
    "relation_id",
    "relation_key",
    "spec_of",
    "split_sentences",
]
