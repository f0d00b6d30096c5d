"""JSON schemas the model fills in, and the per-chunk extraction record the index keeps.

The model-facing schemas are flat (strings, string lists, one number) because 3-8B local models
follow flat schemas far more reliably. Lenient validators accept the usual near misses ("a, b"
for a list, "7" or 7.5 for a strength, "P2" for a passage number) instead of spending a retry.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from rhizome.core.models.lenient import TextList, clamped

_NUMBER = re.compile(r"\d+")


def _passage_numbers(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, bool):
                continue
            if isinstance(item, (int, float)):
                out.append(int(item))
            elif isinstance(item, str):
                out.extend(int(m) for m in _NUMBER.findall(item))
        return out
    return value


Strength = clamped(1, 10, default=1.0)
"""The paper's spec: a strength that is not a number falls back to 1; numbers are clamped to 1..10."""


Numbers = Annotated[list[int], BeforeValidator(_passage_numbers)]
"""Passage, pair or citation numbers: ``3``, ``"P2"``, ``"1, 4"`` or a list of those."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PassageEntity(_Lenient):
    name: str = Field(description="the name as written in the passage")
    type: str = Field(description="one of the allowed entity types")
    description: str = Field(description="what the passages say about it")
    passages: Numbers = Field(default_factory=list, description="numbers of the passages it comes from")


class PassageRelation(_Lenient):
    source: str = Field(description="name of one entity")
    target: str = Field(description="name of the other entity")
    description: str = Field(description="how the passages connect them")
    keywords: TextList = Field(default_factory=list, description="1-3 phrases naming the theme of the link")
    strength: Strength = Field(default=1.0, description="1 (loose) to 10 (tight)")
    passages: Numbers = Field(default_factory=list, description="numbers of the passages it comes from")


class PassageKeywords(_Lenient):
    passage: int = Field(description="the passage number")
    keywords: TextList = Field(description="its main topics")

    @field_validator("passage", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        numbers = _passage_numbers(value)
        return numbers[0] if isinstance(numbers, list) and numbers else value


class PackExtraction(_Lenient):
    """The answer to one extraction call over a pack of numbered passages."""

    entities: list[PassageEntity] = Field(description="entities found")
    relations: list[PassageRelation] = Field(description="relations between those entities")
    content_keywords: list[PassageKeywords] = Field(
        default_factory=list, description="main topics of each passage"
    )


class Gleaning(_Lenient):
    """The answer to a gleaning call: only what the first call missed."""

    entities: list[PassageEntity] = Field(description="entities that were missed")
    relations: list[PassageRelation] = Field(description="relations that were missed")


class QueryKeywords(_Lenient):
    """The paper's keyword JSON (Fig. 5)."""

    high_level_keywords: TextList = Field(description="broad themes and concepts")
    low_level_keywords: TextList = Field(description="specific entities and details")


class SamePairs(_Lenient):
    same: Numbers = Field(description="numbers of the pairs that name the same entity")


class AnswerOutput(_Lenient):
    answer: str = Field(description="the answer")
    citations: Numbers = Field(default_factory=list, description="numbers of the context items used")



# --------------------------------------------------------------------------------------------
# what the index keeps per chunk
# --------------------------------------------------------------------------------------------


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


class ChunkExtraction(BaseModel):
    """Everything extraction found in one chunk. Stored per chunk, so deleting a document can
    rebuild the profiles it shared with others without extracting anything again."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    entities: list[EntityMention] = Field(default_factory=list)
    relations: list[RelationMention] = Field(default_factory=list)
    content_keywords: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


__all__ = [
    "AnswerOutput",
    "ChunkExtraction",
    "EntityMention",
    "Gleaning",
    "PackExtraction",
    "PassageEntity",
    "PassageKeywords",
    "PassageRelation",
    "QueryKeywords",
    "RelationMention",
    "SamePairs",
]
