"""The records LightRAG keeps per chunk and per name, and the query keywords a model fills in."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rhizome.core.index import text_digest
from rhizome.core.models.lenient import LenientModel, TextList


class QueryKeywords(LenientModel):
    """The paper's keyword JSON (Fig. 5)."""

    high_level_keywords: TextList = Field(description="broad themes and concepts")
    low_level_keywords: TextList = Field(description="specific entities and details")


class EntityMention(BaseModel):
    """One entity as one chunk's extraction states it. ``id`` is the entity it was resolved to
    (empty until resolution)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    type: str = ""
    description: str = ""
    id: str = ""


class RelationMention(BaseModel):
    """One relation as one chunk's extraction states it, between two display names;
    ``source_id`` / ``target_id`` are the resolved entity ids."""

    model_config = ConfigDict(extra="forbid")

    source: str
    target: str
    description: str = ""
    keywords: list[str] = Field(default_factory=list)
    strength: float = 1.0
    source_id: str = ""
    target_id: str = ""


class PendingSummary(BaseModel):
    """A profile (``e:<entity id>`` or ``r:<relation id>``) whose description grew past the
    summary threshold during an insert call: it is summarised once when the call finishes."""

    model_config = ConfigDict(extra="forbid")

    id: str


class ChunkExtraction(BaseModel):
    """Everything extraction found in one chunk. Stored per chunk, so deleting a document can
    rebuild the profiles it shared with others without extracting anything again."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    entities: list[EntityMention] = Field(default_factory=list)
    relations: list[RelationMention] = Field(default_factory=list)
    content_keywords: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class _ProfileRow(BaseModel):
    """What a citation and a fragment row share: their profile (``e:<entity id>`` or
    ``r:<relation id>``) and their place, the ``seq``-th in order of arrival. Appended as rows
    of their own (see :mod:`rhizome.lightrag.lists`)."""

    model_config = ConfigDict(extra="forbid")

    profile: str
    seq: int

    @property
    def slot(self) -> str:
        return slot(self.profile, self.seq)


class Citation(_ProfileRow):
    """One chunk a profile's mentions come from."""

    chunk_id: str

    @property
    def id(self) -> str:
        return citation_id(self.profile, self.chunk_id)


class Fragment(_ProfileRow):
    """One distinct description fragment of a profile."""

    text: str

    @property
    def id(self) -> str:
        return fragment_id(self.profile, self.text)


def slot(profile: str, seq: int) -> str:
    """The lookup value of a profile's ``seq``-th citation or fragment."""
    return f"{profile}\x1f{seq}"


def citation_id(profile: str, chunk_id: str) -> str:
    """The key of a citation: one row per profile and chunk."""
    return f"{profile}\x1f{chunk_id}"


def fragment_id(profile: str, text: str) -> str:
    """The key of a fragment: one row per profile and distinct text."""
    return f"{profile}\x1f{text_digest(text)}"


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


__all__ = [
    "ChunkExtraction",
    "Citation",
    "EntityMention",
    "Fragment",
    "Mention",
    "PendingSummary",
    "QueryKeywords",
    "RelationMention",
    "citation_id",
    "fragment_id",
    "slot",
]
