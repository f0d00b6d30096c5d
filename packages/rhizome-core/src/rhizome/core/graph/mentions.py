"""The rows an entity graph is made from: what each chunk's extraction said, and the names it used.

An :class:`~rhizome.core.graph.store.EntityGraphStore` keeps one :class:`ChunkExtraction` per
chunk (its entity and relation mentions, resolved to entity ids), so that a delete can rebuild
the profiles a removed chunk shared with others without extracting anything again, and one
:class:`Mention` per chunk and surface name, with the keys entity resolution looks names up by.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rhizome.core.extraction.schema import Extraction


class EntityMention(BaseModel):
    """One entity as one chunk's extraction states it. ``id`` is the entity it was resolved to
    (empty until resolution)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    type: str = ""
    description: str = ""
    id: str = ""


class RelationMention(BaseModel):
    """One relation as one chunk's extraction states it, between two display names (``predicate``:
    as written, for a triple); ``source_id`` / ``target_id`` are the resolved entity ids."""

    model_config = ConfigDict(extra="forbid")

    source: str
    target: str
    predicate: str = ""
    description: str = ""
    keywords: list[str] = Field(default_factory=list)
    strength: float = 1.0
    source_id: str = ""
    target_id: str = ""


class ChunkExtraction(BaseModel):
    """Everything extraction found in one chunk, as the graph keeps it."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    entities: list[EntityMention] = Field(default_factory=list)
    relations: list[RelationMention] = Field(default_factory=list)
    content_keywords: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Mention(BaseModel):
    """One surface name in one chunk, with the keys entity resolution looks names up by, and
    the entity it was resolved to."""

    id: str
    chunk_id: str
    key: str
    name: str
    norm: str
    initials: str
    acronym: str
    entity_id: str


class PendingSummary(BaseModel):
    """A profile (``e:<entity id>`` or ``r:<relation id>``) an insert call changed and left for
    its end: its description grew past the summary threshold (``summary``: it is summarised
    once when the call finishes), or only its vector waits (embedded once, however many of the
    call's batches change it)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    summary: bool = True


def chunk_record(extraction: Extraction) -> ChunkExtraction:
    """A kernel extraction (any extractor's, with keywords filled in) as the per-chunk record the
    graph keeps: mentions by display name; a relation's weight becomes its strength. Built
    without validation: the extraction's records were validated already, and a build folds
    hundreds of thousands of mentions."""
    names = {e.id: e.name for e in extraction.entities}
    return ChunkExtraction.model_construct(
        chunk_id=extraction.chunk_id,
        entities=[EntityMention.model_construct(name=e.name, type=e.type, description=e.description.strip(), id="") for e in extraction.entities],
        relations=[
            RelationMention.model_construct(
                source=names.get(r.source, r.source),
                target=names.get(r.target, r.target),
                predicate=r.predicate,
                description=r.description.strip(),
                keywords=list(r.keywords),
                strength=float(max(r.weight, 0.0)) or 1.0,
                source_id="",
                target_id="",
            )
            for r in extraction.relations
        ],
        content_keywords=list(extraction.keywords),
        metadata={"extractor": str(extraction.metadata.get("extractor", "imported"))},
    )


__all__ = ["ChunkExtraction", "EntityMention", "Mention", "PendingSummary", "RelationMention", "chunk_record"]
