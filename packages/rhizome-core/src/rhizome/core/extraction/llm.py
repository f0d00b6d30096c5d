"""Entity and relation extraction with a chat model, with optional gleaning passes."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError, EmptyExtractionError, ModelOutputError
from rhizome.core.extraction.prompts import EXTRACTION_SYSTEM, extraction_prompt, gleaning_prompt
from rhizome.core.extraction.schema import (
    Extraction,
    ExtractionOutput,
    check_chunks,
    clean_name,
    entity_key,
    new_entity,
    new_relation,
)
from rhizome.core.protocols import ChatModel
from rhizome.core.types import Chunk, Entity, Relation

DEFAULT_ENTITY_TYPES: tuple[str, ...] = ("PERSON", "ORGANIZATION", "LOCATION", "EVENT", "CONCEPT")
"""Person, organisation, place and event are GraphRAG's default types (it spells place "geo");
``CONCEPT`` is added so technical text has somewhere to put ideas and methods."""

Progress = Callable[[int, int], None]

_HAS_WORD = re.compile(r"\w")

T = TypeVar("T")


def has_real_text(text: str) -> bool:
    """Whether a chunk holds anything a model could extract from (a letter or digit)."""
    return bool(_HAS_WORD.search(text))


class LLMExtractor:
    """Extracts entities and relations from chunks with a chat model.

    Each chunk gets one extraction call, then up to ``gleaning`` follow-up calls that show the
    model the chunk again with a compact list of the names (and name pairs) found so far and ask
    only for what was missed. Gleaning stops early as soon as a round adds nothing new, so it
    costs one extra call on a chunk that was fully extracted the first time. A first pass that
    keeps returning invalid JSON fails the chunk with
    :class:`~rhizome.core.errors.ModelOutputError`; a gleaning pass that does only ends
    gleaning (the error is kept in ``metadata["gleaning_error"]``).

    Relations whose endpoint is not among the extracted entities keep the relation and add the
    missing endpoint as an entity with an empty type and no description: small models often
    name an endpoint without listing it, and dropping the relation would lose a fact the text
    states. When entities are merged across chunks, a real type seen elsewhere wins over the
    empty one. Relations from an entity to itself and relations with a blank endpoint are
    dropped.

    Names are cleaned for display (surrounding whitespace and quotes removed, inner whitespace
    collapsed) and keyed case-insensitively; the first spelling seen in a chunk is the display
    name. Types are upper-cased. Relation weight is the model's ``strength`` (1–10), which the
    merge step sums across chunks, as GraphRAG does.

    Parameters
    ----------
    model:
        Any :class:`~rhizome.core.protocols.ChatModel`; validation and retries of its JSON come
        from the model layer (``max_retries``), and so does its concurrency limit.
    entity_types:
        Types the model may assign. The default adds ``CONCEPT`` to GraphRAG's four.
    gleaning:
        Maximum follow-up passes per chunk (GraphRAG's and LightRAG's default is 1; 0 disables).
    max_concurrency:
        Chunks in flight at once from this extractor, on top of the model's own limit
        (``None``: only the model's limit applies).
    language:
        Language of the descriptions the model writes; names stay as written in the text.
    allow_empty:
        Accept chunks with text in which the model found no entity, instead of raising
        :class:`~rhizome.core.errors.EmptyExtractionError`.
    progress:
        Called as ``progress(done, total)`` after each chunk finishes.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        entity_types: Sequence[str] = DEFAULT_ENTITY_TYPES,
        gleaning: int = 1,
        max_concurrency: int | None = None,
        language: str = "English",
        allow_empty: bool = False,
        progress: Progress | None = None,
    ) -> None:
        if gleaning < 0:
            raise ConfigurationError(f"gleaning must be 0 or more follow-up passes, got {gleaning}")
        if max_concurrency is not None and max_concurrency < 1:
            raise ConfigurationError(
                f"max_concurrency must be at least 1 or None, got {max_concurrency}"
            )
        if isinstance(entity_types, str):
            raise ConfigurationError("entity_types must be a list of type names, not one string")
        self.model = model
        self.entity_types = tuple(t.strip().upper() for t in entity_types if t.strip())
        self.gleaning = gleaning
        self.max_concurrency = max_concurrency
        self.language = language
        self.allow_empty = allow_empty
        self.progress = progress

    # -- one chunk -------------------------------------------------------------------------------
    async def _ask(self, prompt: str) -> ExtractionOutput:
        return await self.model.acomplete_json(prompt, ExtractionOutput, system=EXTRACTION_SYSTEM)

    async def aextract_chunk(self, chunk: Chunk) -> Extraction:
        """Extract one chunk (first pass plus gleaning)."""
        metadata: dict[str, Any] = {
            "extractor": "llm",
            "model": getattr(self.model, "name", ""),
            "calls": 0,
        }
        if not has_real_text(chunk.text):
            return Extraction(chunk_id=chunk.id, metadata=metadata)
        collected = _Collected(chunk.id)
        answer = await self._ask(extraction_prompt(chunk.text, self.entity_types, self.language))
        metadata["calls"] = 1
        collected.add(answer)
        rounds = 0
        for _ in range(self.gleaning):
            prompt = gleaning_prompt(
                chunk.text,
                self.entity_types,
                collected.entity_names,
                collected.pair_names,
                self.language,
            )
            rounds += 1
            try:
                extra = await self._ask(prompt)
            except ModelOutputError as exc:
                # an optional pass that keeps failing must not cost the chunk what it has
                metadata["gleaning_error"] = str(exc)
                break
            finally:
                metadata["calls"] += 1
            answer = extra
            if not collected.add(extra):
                break
        metadata["gleaning_rounds"] = rounds
        entities, relations = collected.records()
        if not entities and not self.allow_empty:
            raise EmptyExtractionError(
                f"{getattr(self.model, 'name', 'the model')} found no entities in chunk "
                f"{chunk.id!r} ({len(chunk.text)} characters of text). Small models often return "
                "empty lists for long or unusual passages: try a bigger instruction-tuned model, "
                "smaller chunks or a larger context window (num_ctx), or pass allow_empty=True to "
                "keep empty chunks.",
                last_output=answer.model_dump_json(),
            )
        return Extraction(
            chunk_id=chunk.id, entities=entities, relations=relations, metadata=metadata
        )

    # -- many chunks -----------------------------------------------------------------------------
    async def aextract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """Extract every chunk concurrently; results are in input order. The first failure
        cancels the chunks still running and is raised."""
        chunks = check_chunks(chunks)
        total = len(chunks)
        done = 0
        limit = asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else None

        async def one(chunk: Chunk) -> Extraction:
            nonlocal done
            if limit is None:
                result = await self.aextract_chunk(chunk)
            else:
                async with limit:
                    result = await self.aextract_chunk(chunk)
            done += 1
            if self.progress is not None:
                self.progress(done, total)
            return result

        return await gather_or_cancel([one(c) for c in chunks])

    def extract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """Synchronous :meth:`aextract`."""
        return run_sync(self.aextract(chunks))

    def __repr__(self) -> str:
        return f"LLMExtractor(model={self.model!r}, gleaning={self.gleaning})"


class _Collected:
    """Entities and relations gathered over the passes of one chunk, with the keys already seen
    so a gleaning pass can tell whether it found anything new."""

    def __init__(self, chunk_id: str) -> None:
        self.chunk_id = chunk_id
        self.entities: dict[str, Entity] = {}
        self.relations: list[Relation] = []
        self.pairs: dict[tuple[str, str], Relation] = {}
        self.pair_display: list[tuple[str, str]] = []
        self.endpoints: dict[str, str] = {}
        """Display names of relation endpoints that were not listed as entities."""

    @property
    def entity_names(self) -> list[str]:
        names = [e.name for e in self.entities.values()]
        names += [n for k, n in self.endpoints.items() if k not in self.entities]
        return names

    @property
    def pair_names(self) -> list[tuple[str, str]]:
        return list(self.pair_display)

    def add(self, answer: ExtractionOutput) -> bool:
        """Add one answer; returns whether it contributed an entity or relation not seen before.
        A repeated name or pair is folded into the record already held (its description is
        added, a missing type filled in, the larger strength kept) and does not count as new."""
        new = False
        for item in answer.entities:
            name = clean_name(item.name)
            key = entity_key(name)
            if not key:
                continue
            found = self.entities.get(key)
            if found is None:
                self.entities[key] = new_entity(
                    name, self.chunk_id, type=item.type, description=item.description
                )
                new = True
                continue
            extra = new_entity(name, self.chunk_id, type=item.type, description=item.description)
            if not found.type:
                found.type = extra.type
            _fold(found.descriptions, extra.descriptions)
        for item in answer.relations:
            source, target = clean_name(item.source), clean_name(item.target)
            skey, tkey = entity_key(source), entity_key(target)
            if not skey or not tkey or skey == tkey:
                continue
            relation = new_relation(
                skey,
                tkey,
                self.chunk_id,
                description=item.description,
                keywords=item.keywords,
                weight=float(item.strength),
                directed=False,
            )
            pair = (relation.source, relation.target)
            held = self.pairs.get(pair)
            if held is not None:
                _fold(held.descriptions, relation.descriptions)
                _fold(held.keywords, relation.keywords)
                held.weight = max(held.weight, relation.weight)
                continue
            self.pairs[pair] = relation
            self.pair_display.append((source, target))
            for key, name in ((skey, source), (tkey, target)):
                self.endpoints.setdefault(key, name)
            self.relations.append(relation)
            new = True
        return new

    def records(self) -> tuple[list[Entity], list[Relation]]:
        entities = list(self.entities.values())
        for key, name in self.endpoints.items():
            if key not in self.entities:
                entities.append(new_entity(name, self.chunk_id))
        return entities, list(self.relations)


def _fold(into: list[str], values: list[str]) -> None:
    for value in values:
        if value not in into:
            into.append(value)


async def gather_or_cancel(coros: Sequence[Awaitable[T]]) -> list[T]:
    """Like ``asyncio.gather`` (results in order), but when one fails the others are cancelled
    before the error is raised, so no orphaned model calls keep running."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


__all__ = ["DEFAULT_ENTITY_TYPES", "LLMExtractor", "Progress", "gather_or_cancel", "has_real_text"]
