"""What extraction produces: the small JSON schema a chat model fills in, the per-chunk
:class:`Extraction` record every extractor returns, and the name keys used to merge.

The model-facing schema is deliberately flat and short (strings, string lists, one number):
3–8B local models follow it far more reliably than nested or optional-heavy schemas, and Ollama
turns it into a decoding grammar through ``format``. Lenient validators accept the usual near
misses ("a, b" for a list, "7" or 7.5 for a strength, "P2" for a passage number) instead of
spending a retry.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from rhizome.core.errors import InvalidInputError
from rhizome.core.models.lenient import LenientModel, TextList, clamped
from rhizome.core.types import Chunk, Entity, Relation

# --------------------------------------------------------------------------------------------
# name keys
# --------------------------------------------------------------------------------------------

_SPACES = re.compile(r"\s+")
_QUOTES = "\"'`“”‘’«»"


@functools.lru_cache(maxsize=1 << 16, typed=True)
def clean_name(name: str) -> str:
    """The display form of a name: Unicode NFC, surrounding quotes and whitespace removed, inner
    whitespace runs collapsed to one space. Capitalisation is kept. Kept for recent names:
    extraction and merging clean each name of an answer several times."""
    text = unicodedata.normalize("NFC", str(name))
    text = _SPACES.sub(" ", text).strip().strip(_QUOTES).strip()
    return text


def entity_key(name: str) -> str:
    """The merge key of a name (also used as the entity id): :func:`clean_name`, then
    case-folded, so ``" New  York "`` and ``"new york"`` are the same entity."""
    return clean_name(name).casefold()


def relation_key(
    source: str, target: str, predicate: str = "", *, directed: bool = True
) -> tuple[str, str, str]:
    """The merge key of a relation between two entity ids. The predicate is compared
    case-insensitively; an undirected relation uses its endpoints in sorted order."""
    pred = entity_key(predicate) if predicate else ""
    if not directed and target < source:
        source, target = target, source
    return source, target, pred


@functools.lru_cache(maxsize=1 << 18)
def relation_id(key: tuple[str, str, str]) -> str:
    """A stable id for a relation key (a short hash: names may contain any separator). Kept for
    recent keys: extraction and folding ask for the id of every relation mention, and a graph's
    working set (70k relations at 10k documents) must fit, or a pass over it misses every time."""
    digest = hashlib.sha256(json.dumps(list(key), ensure_ascii=False).encode("utf-8")).hexdigest()
    return f"rel-{digest[:24]}"


def is_directed(relation: Relation) -> bool:
    """Whether a relation's direction matters for merging: ``metadata["directed"]`` when set,
    otherwise directed exactly when it has a predicate (a triple such as OpenIE's)."""
    flag = relation.metadata.get("directed")
    if isinstance(flag, bool):
        return flag
    return bool(relation.predicate)


def key_of(relation: Relation) -> tuple[str, str, str]:
    """The merge key of a :class:`~rhizome.core.types.Relation` record."""
    return relation_key(
        relation.source, relation.target, relation.predicate, directed=is_directed(relation)
    )


def normalise_type(value: str) -> str:
    """Entity types are compared in upper case with single underscores for spaces
    (``"geo location"`` → ``"GEO_LOCATION"``); an empty type stays empty."""
    return _SPACES.sub("_", str(value).strip()).upper()


# --------------------------------------------------------------------------------------------
# the schema sent to chat models
# --------------------------------------------------------------------------------------------


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


Numbers = Annotated[list[int], BeforeValidator(_passage_numbers)]
"""Passage, pair or citation numbers: ``3``, ``"P2"``, ``"1, 4"`` or a list of those."""

Strength = clamped(1, 10, default=1.0)
"""A strength that is not a number falls back to 1; numbers are clamped to 1..10."""


class ExtractedEntity(LenientModel):
    """One entity as the model reports it."""

    name: str = Field(description="the name as written in the passage")
    type: str = Field(description="one of the allowed entity types")
    description: str = Field(description="what the passages say about it")
    passages: Numbers = Field(default_factory=list, description="numbers of the passages it comes from")


class ExtractedRelation(LenientModel):
    """One relation between two entity names as the model reports it."""

    source: str = Field(description="name of one entity")
    target: str = Field(description="name of the other entity")
    description: str = Field(description="how the passages connect them")
    keywords: TextList = Field(default_factory=list, description="1-3 phrases naming the theme of the link")
    strength: Strength = Field(default=1.0, description="1 (loose) to 10 (tight)")  # type: ignore[valid-type]
    passages: Numbers = Field(default_factory=list, description="numbers of the passages it comes from")


class ExtractionOutput(LenientModel):
    """What one extraction (or gleaning) call returns."""

    entities: list[ExtractedEntity] = Field(description="entities found")
    relations: list[ExtractedRelation] = Field(description="relations between those entities")


class PassageKeywords(LenientModel):
    passage: int = Field(description="the passage number")
    keywords: TextList = Field(description="its main topics")

    @field_validator("passage", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        numbers = _passage_numbers(value)
        return numbers[0] if isinstance(numbers, list) and numbers else value


class KeywordExtractionOutput(ExtractionOutput):
    """An extraction call that also asks for each passage's content keywords."""

    content_keywords: list[PassageKeywords] = Field(default_factory=list, description="main topics of each passage")


# --------------------------------------------------------------------------------------------
# the per-chunk result shared by every extractor
# --------------------------------------------------------------------------------------------


class Extraction(BaseModel):
    """The entities and relations found in one chunk, before merging across chunks.

    Entities are :class:`~rhizome.core.types.Entity` records whose ``id`` is the name key
    (:func:`entity_key`) and whose ``source_chunk_ids`` is ``[chunk_id]``; relations are
    :class:`~rhizome.core.types.Relation` records between those ids. The same name may appear
    more than once (records are raw); the entity-graph layer folds them into profiles
    (:func:`~rhizome.core.graph.mentions.chunk_record`, :mod:`rhizome.core.graph.store`). ``metadata`` says which extractor produced it and how.
    """

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    """Content keywords of the chunk (the main topics), when the extractor gives them."""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not self.entities and not self.relations


@runtime_checkable
class Extractor(Protocol):
    """Anything that turns chunks into one :class:`Extraction` per chunk, in input order.

    ``spec`` names how to rebuild it (``"llm"``, ``"offline"``, ``"openie:PATH"``): an index
    records it and reopens with the same extraction (see :mod:`rhizome.core.extraction.spec`)."""

    spec: str

    async def aextract(self, chunks: Sequence[Chunk]) -> list[Extraction]: ...

    def extract(self, chunks: Sequence[Chunk]) -> list[Extraction]: ...


def check_chunks(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks as a list, or :class:`~rhizome.core.errors.InvalidInputError` naming the
    first item that is not a :class:`~rhizome.core.types.Chunk`."""
    if isinstance(chunks, Chunk):
        raise InvalidInputError("pass a list of chunks, not a single Chunk")
    items = list(chunks)
    for i, chunk in enumerate(items):
        if not isinstance(chunk, Chunk):
            raise InvalidInputError(
                f"item {i} is a {type(chunk).__name__}, not a rhizome Chunk; split documents with "
                "rhizome.core.text.Chunker first"
            )
    return items


def new_entity(
    name: str, chunk_id: str, *, type: str = "", description: str = "", **metadata: Any
) -> Entity:
    """A raw entity record for one mention in one chunk (id = name key)."""
    display = clean_name(name)
    description = description.strip()
    return Entity(
        id=entity_key(display),
        name=display,
        type=normalise_type(type),
        description=description,
        descriptions=[description] if description else [],
        source_chunk_ids=[chunk_id],
        metadata=dict(metadata),
    )


def new_relation(
    source: str,
    target: str,
    chunk_id: str,
    *,
    predicate: str = "",
    description: str = "",
    keywords: Sequence[str] = (),
    weight: float = 1.0,
    directed: bool | None = None,
    **metadata: Any,
) -> Relation:
    """A raw relation record between two entity ids, found in one chunk. ``directed`` defaults
    to whether a predicate is given (see :func:`is_directed`)."""
    predicate = clean_name(predicate) if predicate else ""
    directed = bool(predicate) if directed is None else directed
    key = relation_key(source, target, predicate, directed=directed)
    description = description.strip()
    words = list(dict.fromkeys(k for k in (clean_name(w) for w in keywords) if k))
    return Relation(
        id=relation_id(key),
        source=key[0],
        target=key[1],
        predicate=predicate,
        description=description,
        descriptions=[description] if description else [],
        keywords=words,
        weight=float(weight),
        source_chunk_ids=[chunk_id],
        metadata={"directed": directed, **metadata},
    )


__all__ = [
    "ExtractedEntity",
    "ExtractedRelation",
    "Extraction",
    "ExtractionOutput",
    "Extractor",
    "KeywordExtractionOutput",
    "Numbers",
    "PassageKeywords",
    "check_chunks",
    "clean_name",
    "entity_key",
    "is_directed",
    "key_of",
    "new_entity",
    "new_relation",
    "normalise_type",
    "relation_id",
    "relation_key",
]
