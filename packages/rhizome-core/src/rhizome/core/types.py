"""The records every method shares: documents, chunks, entities, relations, communities, hits.

They are pydantic models so that they validate on construction and serialise to JSON for storage,
LangGraph state and checkpointers without custom code.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

HitKind = Literal["chunk", "entity", "relation", "community", "summary", "segment", "point"]


def content_id(text: str, prefix: str = "doc") -> str:
    """A stable id derived from the text alone, so re-inserting the same text is recognisable
    (any ``str``: text that cannot be stored is refused later, with a message that says why)."""
    return f"{prefix}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Document(_Record):
    """A source text. ``id`` defaults to a hash of the text; ``metadata`` is free-form
    (``title`` and ``source`` — a file path or URL — are used for citations when present)."""

    text: str
    id: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _default_id(self) -> Document:
        if not self.id:
            self.id = content_id(self.text)
        return self

    @property
    def title(self) -> str | None:
        value = self.metadata.get("title")
        return str(value) if value is not None else None


class Span(_Record):
    """A character range ``[start, end)`` of one chunk inside its document."""

    document_id: str
    chunk_id: str
    start: int
    end: int


class Provenance(_Record):
    """Where a retrieved item comes from, so every answer can cite its sources."""

    document_ids: list[str] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)
    spans: list[Span] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    """File paths or URLs of the documents, when the documents carried a ``source``."""

    def merge(self, other: Provenance) -> Provenance:
        """Union of two provenances, keeping first-seen order."""
        return Provenance(
            document_ids=_union(self.document_ids, other.document_ids),
            chunk_ids=_union(self.chunk_ids, other.chunk_ids),
            spans=[
                s
                for i, s in enumerate(self.spans + other.spans)
                if s not in (self.spans + other.spans)[:i]
            ],
            sources=_union(self.sources, other.sources),
        )


def _union(a: list[str], b: list[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


class Chunk(_Record):
    """A piece of one document, with its character span and token count."""

    id: str
    document_id: str
    text: str
    index: int
    """Position of the chunk in its document (0-based)."""
    start: int
    end: int
    n_tokens: int
    metadata: dict[str, Any] = Field(default_factory=dict)

    def span(self) -> Span:
        return Span(document_id=self.document_id, chunk_id=self.id, start=self.start, end=self.end)

    @property
    def source(self) -> str | None:
        """The file path or URL of its document, when the document carried one."""
        source = self.metadata.get("source")
        return str(source) if source else None

    def provenance(self) -> Provenance:
        source = self.source
        return Provenance(document_ids=[self.document_id], chunk_ids=[self.id], spans=[self.span()], sources=[source] if source else [])


class Entity(_Record):
    """A named thing found in the text. ``name`` is the display name; ``id`` the merge key."""

    id: str
    name: str
    type: str = ""
    description: str = ""
    descriptions: list[str] = Field(default_factory=list)
    """Every description seen for this entity, one per mention, before summarisation."""
    source_chunk_ids: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Relation(_Record):
    """A directed statement ``source —[predicate]→ target`` between two entity ids."""

    id: str
    source: str
    target: str
    predicate: str = ""
    description: str = ""
    descriptions: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    weight: float = 1.0
    source_chunk_ids: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Community(_Record):
    """A group of entities at one level of a hierarchy, optionally with its report."""

    id: str
    level: int
    entity_ids: list[str]
    parent: str | None = None
    children: list[str] = Field(default_factory=list)
    title: str = ""
    summary: str = ""
    rating: float | None = None
    findings: list[dict[str, str]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


HIT_KEYS = ("id", "score", "raw_score", "kind", "document_ids", "chunk_ids", "spans", "sources")
"""The keys :meth:`Hit.flat_metadata` sets from the hit itself (over any metadata key of the
name), and ``raw_score``, which a search sets: a document field of one of these names comes as
``document.<field>``."""


class Hit(_Record):
    """One retrieved item: what the integrations turn into a LangChain ``Document`` or a
    LlamaIndex ``NodeWithScore``."""

    id: str
    text: str
    score: float
    """What a search returns: the hit's relevance to the query in ``[0, 1]``, by one rule in
    every mode (:func:`~rhizome.core.retrieval.contract.relevance`: the cosine similarity of
    the query to the nearest passage the hit cites, negatives as 0), so one threshold means the
    same everywhere; the mode's own ranking score is kept in ``metadata["raw_score"]``. Inside a
    mode's own steps, before a search ends, it is the mode's score."""
    kind: HitKind = "chunk"
    provenance: Provenance = Field(default_factory=Provenance)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def raw_score(self) -> float:
        """The score the mode ranked this hit by (``metadata["raw_score"]``, see
        :func:`~rhizome.core.retrieval.contract.relevance`), or :attr:`score` for a hit not
        scored by that rule yet (inside a mode's own steps)."""
        raw = self.metadata.get("raw_score")
        return float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else self.score

    def flat_metadata(self) -> dict[str, Any]:
        """The hit's metadata with its id, score, kind and provenance as top-level keys, every
        value JSON (what LangChain documents, LlamaIndex nodes and tracers carry). Not flat:
        the provenance keys are lists (``spans`` a list of dicts), so a vector store that takes
        only scalar metadata (Chroma; LlamaIndex's flat-metadata check) needs them joined first."""
        out: dict[str, Any] = dict(self.metadata)
        out.update(
            id=self.id,
            score=self.score,
            kind=self.kind,
            document_ids=list(self.provenance.document_ids),
            chunk_ids=list(self.provenance.chunk_ids),
            spans=[s.model_dump() for s in self.provenance.spans],
            sources=list(self.provenance.sources),
        )
        return out


@dataclass
class GraphContents:
    """What a method's structure holds beyond documents and chunks (empty for one without a graph)."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    communities: list[Community] = field(default_factory=list)

    def levels(self) -> list[int]:
        return sorted({c.level for c in self.communities})

    def degrees(self) -> dict[str, int]:
        degree: dict[str, int] = defaultdict(int)
        for r in self.relations:
            degree[r.source] += 1
            degree[r.target] += 1
        return dict(degree)

    def summary(self) -> dict[str, int]:
        """Counts: entities, relations, communities and their levels."""
        return {"entities": len(self.entities), "relations": len(self.relations),
                "communities": len(self.communities), "levels": len(self.levels())}


__all__ = [
    "HIT_KEYS",
    "Chunk",
    "Community",
    "Document",
    "Entity",
    "GraphContents",
    "Hit",
    "HitKind",
    "Provenance",
    "Relation",
    "Span",
    "content_id",
]
