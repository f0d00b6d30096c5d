"""``LightRAGIndex``: graph-based indexing φ of LightRAG (Guo et al.) with real incremental
insert and delete.

Index = Dedupe ∘ Prof(∪ Recog(chunk)): chunks (1,200 / 100 tokens) → extraction with one
gleaning round (the kernel's extractor, short chunks packed into one call) → per-chunk records
stored as they are → entity resolution → entity and relation profiles (entity key = its name,
relation keys = its theme keywords, values = merged descriptions, summarised past a budget) →
three vector collections (entities, relations, chunks) and the graph (the relation table). See
docs/lightrag.md for every choice the paper leaves open.

Records: the kernel's entity-graph layer (:class:`~rhizome.core.graph.store.EntityGraphStore`,
tables and collections prefixed ``lightrag_``) keeps each chunk's extraction, the entity and
relation profiles (relations keyed by their pair of entities), a long profile's citations and
fragments as rows, and the name, entity and relation vectors.

Insert: documents are identified by content hash (a repeat is skipped with no model call);
only new chunks are extracted; their records are folded onto the stored profiles they touch,
and only touched rows and vectors are written; a profile whose fragments grew past the summary
threshold is summarised once, when the insert call ends. Delete: a document's chunks go,
entities and relations that only it supported go, and shared profiles are rebuilt from the
remaining chunks' stored records (no extraction), giving the records one insert call of the
remaining documents would give them (so an insert followed by the delete of what it added gives
back exactly the records held before).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rhizome.core.extraction import add_keywords
from rhizome.core.graph.mentions import ChunkExtraction, chunk_record
from rhizome.core.graph.resolution import EntityResolver
from rhizome.core.index.base import ModeInfo
from rhizome.core.index.entity_index import EntityGraphIndex, open_entity_graph
from rhizome.core.naive import NAIVE
from rhizome.core.types import Chunk
from rhizome.lightrag.config import LightRAGConfig


class LightRAGIndex(EntityGraphIndex):
    """LightRAG: entity and relation profiles with dual-level (low/high keyword) retrieval.

    Settings: :class:`~rhizome.lightrag.config.LightRAGConfig` (as keyword arguments or
    ``config=``); the other parameters are :class:`~rhizome.core.index.base.BaseIndex`'s. ``llm``
    extracts, summarises, confirms resolution candidates and writes query keywords; without one
    every step runs offline (rule-based extraction, extractive summaries, rule-based keywords).
    """

    method: ClassVar[str] = "lightrag"
    modes: ClassVar[Mapping[str, ModeInfo]] = {
        "hybrid": ModeInfo("entities matched by the question's specific keywords and relations matched by its broad ones; for questions that relate named things", ("multi-hop", "specific"), retriever="rhizome.lightrag.query:LightRAGRetriever", options={"mode": "hybrid"}),
        "local": ModeInfo("entities matched by the question's specific keywords, with their relations; for facts about named things", ("specific",), retriever="rhizome.lightrag.query:LightRAGRetriever", options={"mode": "local"}),
        "global": ModeInfo("relations matched by the question's broad keywords, with their endpoints; for themes and how things relate across the corpus", ("global",), retriever="rhizome.lightrag.query:LightRAGRetriever", options={"mode": "global"}),
        "mix": ModeInfo("hybrid graph search merged with the nearest passages; for questions that relate named things", ("multi-hop", "specific"), retriever="rhizome.lightrag.query:LightRAGRetriever", options={"mode": "mix"}),
        "naive": NAIVE,
    }
    config_class = LightRAGConfig
    config: LightRAGConfig
    ENTITY_COLLECTION: ClassVar[str] = "lightrag_entities"
    RELATION_COLLECTION: ClassVar[str] = "lightrag_relations"
    NAME_COLLECTION: ClassVar[str] = "lightrag_names"

    def _setup(self) -> None:
        c = self.config
        resolver = EntityResolver(threshold=c.resolution_threshold, acronyms=c.resolution_acronyms, llm=self.llm, confirm=c.resolution_confirm)
        self.entity_graph = open_entity_graph(self, "lightrag", resolver=resolver, resolution=c.resolution, min_fragments=c.force_summary_fragments)

    def extractor_options(self) -> dict[str, Any]:
        # the offline rules judge one document at a time, so a document's records do not depend
        # on which other documents share its insert batch
        return {"llm_options": self.config.llm_extractor_options(), "offline_options": {"window": "sentence", "per_document": True}}

    # -- BaseIndex hooks -------------------------------------------------------------------------
    async def _records(self, chunks: list[Chunk]) -> list[ChunkExtraction]:
        return [chunk_record(add_keywords(x, c)) for x, c in zip(await self.extract(chunks), chunks, strict=True)]

    # -- reading ---------------------------------------------------------------------------------
    def _answer_inputs(self, retrieval: Any) -> tuple[list[Any], dict[str, Any]]:
        """Answers read LightRAG's three-block context (entities, relations, sources) and cite
        the items used."""
        from rhizome.lightrag.prompts import ANSWER_INSTRUCTIONS, ANSWER_SYSTEM

        context = list(retrieval.context or retrieval.hits)
        return context, {"system": ANSWER_SYSTEM, "instructions": ANSWER_INSTRUCTIONS, "max_context_tokens": 8000}


__all__ = ["LightRAGIndex"]
