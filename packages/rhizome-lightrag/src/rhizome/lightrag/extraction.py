"""LightRAG's extraction step R(·): chunks in, one :class:`ChunkExtraction` per chunk out.

Three sources produce the same records:

- :class:`LightRAGExtractor` — a chat model, the paper's step: entities with type and
  description, relations with description, strength and high-level keywords, and each chunk's
  content keywords, then one gleaning round (paper: gleaning = 1). Short chunks are packed into
  one call (see below).
- :class:`OfflineLightRAGExtractor` — no model: the kernel's rule-based names and sentence
  co-occurrence, with term-frequency keywords.
- :func:`from_kernel_extractions` — any kernel :class:`~rhizome.core.extraction.Extractor`
  (imported OpenIE triples, say), converted.

Packing. The paper extracts each 1,200-token chunk in its own call. A corpus of short passages
(HotpotQA's average about 130 tokens) then pays the fixed prompt — instructions, schema
description — once per passage, and the gleaning round pays it again. Here consecutive chunks
are packed into one call while their tokens add up to at most ``pack_tokens`` (default 1,200:
the model never reads more text per call than the paper's chunk), each passage numbered, and
the model names the passages each item comes from; items are then stored per chunk, so
provenance, deletion and rebuilding stay per chunk. A chunk of 1,200 tokens is alone in its pack,
exactly as in the paper.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rhizome.core.errors import ConfigurationError, EmptyExtractionError, ModelOutputError
from rhizome.core.extraction.llm import gather_or_cancel, has_real_text
from rhizome.core.extraction.offline import OfflineExtractor
from rhizome.core.extraction.schema import (
    Extraction,
    check_chunks,
    clean_name,
    entity_key,
    normalise_type,
)
from rhizome.core.types import Chunk
from rhizome.lightrag.keywords import content_keywords, content_words
from rhizome.lightrag.prompts import EXTRACTION_SYSTEM, extraction_prompt, gleaning_prompt
from rhizome.lightrag.schema import (
    ChunkExtraction,
    EntityMention,
    Gleaning,
    PackExtraction,
    PassageEntity,
    PassageRelation,
    RelationMention,
)

DEFAULT_ENTITY_TYPES: tuple[str, ...] = ("ORGANIZATION", "PERSON", "GEO", "EVENT")
"""The paper's prompt list (organization, person, geo, event)."""


def _title(chunk: Chunk) -> str | None:
    """The document title, shown to the model unless the text already starts with it."""
    title = chunk.metadata.get("title")
    if not title:
        return None
    title = str(title).strip()
    return None if chunk.text.lstrip().startswith(title) else title


class LightRAGExtractor:
    """Extraction with a chat model (see the module docstring).

    Parameters
    ----------
    model:
        Any chat model with ``acomplete_json`` (validation and retries come from the model layer).
    entity_types:
        Types the model may use; default the paper's organization, person, geo, event.
    gleaning:
        Extra rounds asking for what was missed (paper: 1). A round that finds nothing new ends
        gleaning; a round whose JSON keeps failing ends it too, keeping what was found.
    pack_tokens:
        Most chunk tokens per call; 0 extracts each chunk alone, as the paper does.
    max_pack_passages:
        Most chunks per call, so passage numbers stay easy for a small model to follow.
    max_concurrency:
        Packs in flight at once from this extractor (on top of the model's own limit).
    language:
        Language of the descriptions.
    allow_empty:
        Accept a pack of real text in which the model found no entity at all instead of raising
        :class:`~rhizome.core.errors.EmptyExtractionError`.
    """

    def __init__(
        self,
        model: Any,
        *,
        entity_types: Sequence[str] = DEFAULT_ENTITY_TYPES,
        gleaning: int = 1,
        pack_tokens: int = 1200,
        max_pack_passages: int = 12,
        max_concurrency: int | None = None,
        language: str = "English",
        allow_empty: bool = False,
    ) -> None:
        if gleaning < 0:
            raise ConfigurationError(f"gleaning must be 0 or more rounds, got {gleaning}")
        if pack_tokens < 0 or max_pack_passages < 1:
            raise ConfigurationError("pack_tokens must be >= 0 and max_pack_passages >= 1")
        if max_concurrency is not None and max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1 or None")
        if isinstance(entity_types, str):
            raise ConfigurationError("entity_types must be a list of type names, not one string")
        self.model = model
        self.entity_types = tuple(normalise_type(t) for t in entity_types if str(t).strip())
        self.gleaning = gleaning
        self.pack_tokens = pack_tokens
        self.max_pack_passages = max_pack_passages
        self.max_concurrency = max_concurrency
        self.language = language
        self.allow_empty = allow_empty

    # -- packing --------------------------------------------------------------------------------
    def packs(self, chunks: Sequence[Chunk]) -> list[list[Chunk]]:
        """Consecutive chunks grouped so that each group has at most ``pack_tokens`` tokens and
        ``max_pack_passages`` chunks (a larger chunk is alone)."""
        packs: list[list[Chunk]] = []
        current: list[Chunk] = []
        used = 0
        for chunk in chunks:
            if current and (
                self.pack_tokens == 0
                or used + chunk.n_tokens > self.pack_tokens
                or len(current) >= self.max_pack_passages
            ):
                packs.append(current)
                current, used = [], 0
            current.append(chunk)
            used += chunk.n_tokens
        if current:
            packs.append(current)
        return packs

    # -- extraction -----------------------------------------------------------------------------
    async def aextract(self, chunks: Sequence[Chunk]) -> list[ChunkExtraction]:
        """One record per chunk, in input order. The first failing pack cancels the others."""
        chunks = check_chunks(chunks)
        limit = asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else None

        async def one(pack: list[Chunk]) -> list[ChunkExtraction]:
            if limit is None:
                return await self.aextract_pack(pack)
            async with limit:
                return await self.aextract_pack(pack)

        results = await gather_or_cancel([one(p) for p in self.packs(chunks)])
        return [record for pack in results for record in pack]

    async def aextract_pack(self, pack: Sequence[Chunk]) -> list[ChunkExtraction]:
        """Extract one pack: the first call, then up to ``gleaning`` rounds."""
        pack = list(pack)
        metadata: dict[str, Any] = {"extractor": "llm", "model": getattr(self.model, "name", ""), "pack": len(pack)}
        live = [c for c in pack if has_real_text(c.text)]
        if not live:
            return [ChunkExtraction(chunk_id=c.id, metadata={**metadata, "calls": 0}) for c in pack]
        passages = [(_title(c), c.text) for c in live]
        collected = _Collected(live)
        first = await self.model.acomplete_json(
            extraction_prompt(passages, self.entity_types, self.language), PackExtraction, system=EXTRACTION_SYSTEM
        )
        calls, rounds = 1, 0
        collected.add(first.entities, first.relations)
        for item in first.content_keywords:
            index = item.passage - 1 if 1 <= item.passage <= len(live) else (0 if len(live) == 1 else -1)
            if index >= 0:
                collected.keywords[index].extend(item.keywords)
        for _ in range(self.gleaning):
            rounds += 1
            calls += 1
            prompt = gleaning_prompt(
                passages, self.entity_types, collected.entity_names(), collected.pair_names(), self.language
            )
            try:
                extra = await self.model.acomplete_json(prompt, Gleaning, system=EXTRACTION_SYSTEM)
            except ModelOutputError as exc:
                metadata["gleaning_error"] = str(exc)
                break
            if not collected.add(extra.entities, extra.relations):
                break
        metadata.update(calls=calls, gleaning_rounds=rounds)
        records = collected.records(metadata)
        if not self.allow_empty and not any(r.entities for r in records):
            raise EmptyExtractionError(
                f"{getattr(self.model, 'name', 'the model')} found no entities in chunk(s) "
                f"{', '.join(c.id for c in live)}. Small models often return empty lists: try a "
                "bigger instruction-tuned model, a larger context window (num_ctx), smaller "
                "pack_tokens, or allow_empty=True to keep such chunks without entities.",
                last_output=first.model_dump_json(),
            )
        by_id = {r.chunk_id: r for r in records}
        return [by_id.get(c.id) or ChunkExtraction(chunk_id=c.id, metadata={**metadata}) for c in pack]

    def __repr__(self) -> str:
        return f"LightRAGExtractor(model={self.model!r}, gleaning={self.gleaning}, pack_tokens={self.pack_tokens})"


class _Collected:
    """Items gathered over the calls of one pack, per passage."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self.texts = [c.text.casefold() for c in chunks]
        self.entities: list[list[EntityMention]] = [[] for _ in chunks]
        self.relations: list[list[RelationMention]] = [[] for _ in chunks]
        self.keywords: list[list[str]] = [[] for _ in chunks]
        self.seen_entities: dict[str, str] = {}
        self.seen_pairs: dict[tuple[str, str], tuple[str, str]] = {}

    def entity_names(self) -> list[str]:
        return list(self.seen_entities.values())

    def pair_names(self) -> list[tuple[str, str]]:
        return list(self.seen_pairs.values())

    def _where(self, numbers: list[int], names: list[str]) -> list[int]:
        n = len(self.chunks)
        valid = [k - 1 for k in dict.fromkeys(numbers) if 1 <= k <= n]
        if valid:
            return valid
        if n == 1:
            return [0]
        lowered = [name.casefold() for name in names]
        for test in (all, any):
            found = [i for i, text in enumerate(self.texts) if test(name in text for name in lowered)]
            if found:
                return found
        return list(range(n))

    def add(self, entities: list[PassageEntity], relations: list[PassageRelation]) -> bool:
        """Add one answer; returns whether it brought an entity or relation not seen before."""
        new = False
        for item in entities:
            name = clean_name(item.name)
            key = entity_key(name)
            if not key:
                continue
            if key not in self.seen_entities:
                self.seen_entities[key] = name
                new = True
            mention = EntityMention(name=name, type=normalise_type(item.type), description=item.description.strip())
            for i in self._where(item.passages, [name]):
                if mention not in self.entities[i]:
                    self.entities[i].append(mention.model_copy())
        for rel in relations:
            source, target = clean_name(rel.source), clean_name(rel.target)
            skey, tkey = entity_key(source), entity_key(target)
            if not skey or not tkey or skey == tkey:
                continue
            pair = (skey, tkey) if skey < tkey else (tkey, skey)
            if pair not in self.seen_pairs:
                self.seen_pairs[pair] = (source, target)
                new = True
            words = list(dict.fromkeys(k for k in (clean_name(w) for w in rel.keywords) if k))
            mention = RelationMention(
                source=source, target=target, description=rel.description.strip(), keywords=words, strength=rel.strength
            )
            for i in self._where(rel.passages, [source, target]):
                if mention not in self.relations[i]:
                    self.relations[i].append(mention.model_copy())
        return new

    def records(self, metadata: dict[str, Any]) -> list[ChunkExtraction]:
        out = []
        for i, chunk in enumerate(self.chunks):
            entities = list(self.entities[i])
            listed = {entity_key(e.name) for e in entities}
            for rel in self.relations[i]:  # an endpoint the model did not list still is an entity
                for name in (rel.source, rel.target):
                    if entity_key(name) not in listed:
                        listed.add(entity_key(name))
                        entities.append(EntityMention(name=name))
            keywords = list(dict.fromkeys(k for k in (clean_name(w) for w in self.keywords[i]) if k))
            out.append(
                ChunkExtraction(
                    chunk_id=chunk.id,
                    entities=entities,
                    relations=list(self.relations[i]),
                    content_keywords=keywords,
                    metadata=dict(metadata),
                )
            )
        return out


# --------------------------------------------------------------------------------------------
# offline and imported extractions
# --------------------------------------------------------------------------------------------


def convert_extraction(
    extraction: Extraction, chunk: Chunk | None, *, max_keywords: int = 3, max_content_keywords: int = 5
) -> ChunkExtraction:
    """A kernel :class:`~rhizome.core.extraction.Extraction` as a LightRAG chunk record.
    Relations without keywords get the most frequent content words of their description (minus
    the endpoint names) as theme keywords; an OpenIE predicate counts as one. The weight of a
    co-occurrence relation (shared sentences) becomes its strength."""
    names = {e.id: e.name for e in extraction.entities}
    entities = [
        EntityMention(name=e.name, type=e.type, description=e.description.strip()) for e in extraction.entities
    ]
    relations = []
    for rel in extraction.relations:
        source, target = names.get(rel.source, rel.source), names.get(rel.target, rel.target)
        keywords = list(rel.keywords)
        if rel.predicate and rel.predicate not in keywords:
            keywords.insert(0, rel.predicate)
        if not keywords:
            exclude = set(content_words(f"{source} {target}"))
            keywords = content_keywords(rel.description, max_keywords, exclude=exclude)
        relations.append(
            RelationMention(
                source=source,
                target=target,
                description=rel.description.strip(),
                keywords=keywords[:max_keywords] if not rel.keywords else keywords,
                strength=float(max(rel.weight, 0.0)) or 1.0,
            )
        )
    topics = content_keywords(chunk.text, max_content_keywords) if chunk is not None else []
    return ChunkExtraction(
        chunk_id=extraction.chunk_id,
        entities=entities,
        relations=relations,
        content_keywords=topics,
        metadata={"extractor": str(extraction.metadata.get("extractor", "imported"))},
    )


class OfflineLightRAGExtractor:
    """Extraction without a model: the kernel's :class:`OfflineExtractor` (capitalised names,
    acronyms; relations between names that share a sentence, described by those sentences),
    with term-frequency theme keywords for relations and content keywords for chunks.

    The kernel extractor judges sentence-initial capitals with evidence from all texts of one
    call; it is run on one document at a time here, so a document's records do not depend on
    which other documents share its insert batch.
    """

    def __init__(self, *, window: str = "sentence", max_keywords: int = 3, max_content_keywords: int = 5) -> None:
        self.inner = OfflineExtractor(window=window)  # type: ignore[arg-type]
        self.max_keywords = max_keywords
        self.max_content_keywords = max_content_keywords

    async def aextract(self, chunks: Sequence[Chunk]) -> list[ChunkExtraction]:
        chunks = check_chunks(chunks)
        by_document: dict[str, list[Chunk]] = defaultdict(list)
        for chunk in chunks:
            by_document[chunk.document_id].append(chunk)
        out: dict[str, ChunkExtraction] = {}
        for group in by_document.values():
            for chunk, extraction in zip(group, await self.inner.aextract(group)):
                record = convert_extraction(
                    extraction, chunk, max_keywords=self.max_keywords, max_content_keywords=self.max_content_keywords
                )
                record.metadata = {"extractor": "offline"}
                out[chunk.id] = record
        return [out[c.id] for c in chunks]


async def from_kernel_extractions(extractor: Any, chunks: Sequence[Chunk]) -> list[ChunkExtraction]:
    """Run any kernel extractor and convert its records (missing chunks get empty records)."""
    results = await extractor.aextract(list(chunks))
    by_id = {r.chunk_id: r for r in results}
    out = []
    for chunk in chunks:
        found = by_id.get(chunk.id)
        out.append(convert_extraction(found, chunk) if found is not None else ChunkExtraction(chunk_id=chunk.id))
    return out


__all__ = [
    "DEFAULT_ENTITY_TYPES",
    "LightRAGExtractor",
    "OfflineLightRAGExtractor",
    "convert_extraction",
    "from_kernel_extractions",
]
