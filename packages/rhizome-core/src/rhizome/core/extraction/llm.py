"""Entity and relation extraction with a chat model: packs of passages, gleaning rounds."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from rhizome.core.aio import gather_or_cancel, run_sync
from rhizome.core.errors import (
    ConfigurationError,
    EmptyExtractionError,
    ModelOutputError,
    PromptTooLongError,
)
from rhizome.core.extraction.prompts import EXTRACTION_SYSTEM, extraction_prompt, gleaning_prompt
from rhizome.core.extraction.schema import (
    Extraction,
    ExtractionOutput,
    KeywordExtractionOutput,
    check_chunks,
    clean_name,
    entity_key,
    new_entity,
    new_relation,
    normalise_type,
)
from rhizome.core.models.base import answers_on_trial
from rhizome.core.models.budget import TOKEN_MARGIN, context_window, prompt_tokens
from rhizome.core.progress import Phase, phase
from rhizome.core.protocols import ChatModel
from rhizome.core.store.cache import built_from
from rhizome.core.text import count_tokens
from rhizome.core.types import Chunk, Entity, Relation

DEFAULT_ENTITY_TYPES: tuple[str, ...] = ("ORGANIZATION", "PERSON", "GEO", "EVENT")
"""The entity types of the GraphRAG and LightRAG papers (GraphRAG ``extract_graph.entity_types``,
LightRAG's extraction prompt): organisation, person, geo (a place), event."""

Progress = Callable[[int, int], None]

REPLY_TOKENS_PER_PASSAGE = 750
"""Answer tokens a pack reserves per passage: a packed LightRAG extraction answer ran to about
8,900 tokens for 12 passages of 10 entities and 8 relations each (issue 12's measurement)."""

_HAS_WORD = re.compile(r"\w")


def has_real_text(text: str) -> bool:
    """Whether a chunk holds anything a model could extract from (a letter or digit)."""
    return bool(_HAS_WORD.search(text))


def _title(chunk: Chunk) -> str | None:
    """The document title, shown to the model unless the text already starts with it."""
    title = chunk.metadata.get("title")
    if not title:
        return None
    title = str(title).strip()
    return None if chunk.text.lstrip().startswith(title) else title


class LLMExtractor:
    """Extracts entities and relations from chunks with a chat model.

    Each pack of chunks gets one extraction call, then up to ``gleaning`` follow-up calls that
    show the model the passages again with the names (and name pairs) found so far and ask only
    for what was missed. Gleaning stops as soon as a round adds nothing new. A first call that
    keeps returning invalid JSON fails its chunks with
    :class:`~rhizome.core.errors.ModelOutputError`; a gleaning call that does only ends gleaning
    (the error is kept in ``metadata["gleaning_error"]``).

    Packing. GraphRAG and LightRAG extract each 1,200-token chunk in its own call. A corpus of
    short passages (HotpotQA's average about 130 tokens) then pays the fixed prompt once per
    passage, and the gleaning round pays it again. With ``pack_tokens`` > 0, consecutive chunks
    share one call while their tokens add up to at most ``pack_tokens`` (so the model never reads
    more text per call than one full chunk), each passage numbered; the model names the passages
    each item comes from (items it does not place go to the passages whose text contains their
    names), and records stay per chunk. ``pack_tokens=0`` extracts each chunk alone.

    Records. Names are cleaned for display and keyed case-insensitively; the first spelling
    seen is the display name. Types are upper-cased. A relation is undirected, keyed by its pair
    of names within a chunk (a repeated pair adds its description and keywords and keeps the
    larger strength, which becomes the relation's weight). A relation whose endpoint was not
    listed keeps the relation and adds the endpoint as an entity with no type: small models
    often name an endpoint without listing it. Relations from a name to itself are dropped.

    Parameters
    ----------
    model:
        Any :class:`~rhizome.core.protocols.ChatModel`; validation and retries of its JSON come
        from the model layer (``max_retries``), and so does its concurrency limit.
    entity_types:
        Types the model may assign (default: the papers' organization, person, geo, event).
    gleaning:
        Follow-up calls per pack (GraphRAG's and LightRAG's default is 1; 0 disables).
    pack_tokens, max_pack_passages:
        Most chunk tokens and chunks per call (see above); 0 tokens: one call per chunk.
    keywords:
        Also ask for each passage's content keywords (LightRAG's extraction prompt does).
    max_concurrency:
        Packs in flight at once from this extractor, on top of the model's own limit.
    language:
        Language of the descriptions the model writes; names stay as written in the text.
    allow_empty:
        Accept a pack of real text in which the model found no entity at all, instead of raising
        :class:`~rhizome.core.errors.EmptyExtractionError`.
    progress:
        Called as ``progress(done, total)`` after each pack finishes.
    """

    spec = "llm"

    def __init__(
        self,
        model: ChatModel,
        *,
        entity_types: Sequence[str] = DEFAULT_ENTITY_TYPES,
        gleaning: int = 1,
        pack_tokens: int = 0,
        max_pack_passages: int = 12,
        keywords: bool = False,
        max_concurrency: int | None = None,
        language: str = "English",
        allow_empty: bool = False,
        progress: Progress | None = None,
    ) -> None:
        if gleaning < 0:
            raise ConfigurationError(f"gleaning must be 0 or more follow-up calls, got {gleaning}")
        if pack_tokens < 0 or max_pack_passages < 1:
            raise ConfigurationError("pack_tokens must be >= 0 and max_pack_passages >= 1")
        if max_concurrency is not None and max_concurrency < 1:
            raise ConfigurationError(f"max_concurrency must be at least 1 or None, got {max_concurrency}")
        if isinstance(entity_types, str):
            raise ConfigurationError("entity_types must be a list of type names, not one string")
        self.model = model
        self.entity_types = tuple(normalise_type(t) for t in entity_types if str(t).strip())
        self.gleaning = gleaning
        self.pack_tokens = pack_tokens
        self.max_pack_passages = max_pack_passages
        self.keywords = keywords
        self.max_concurrency = max_concurrency
        self.language = language
        self.allow_empty = allow_empty
        self.progress = progress
        self._prompt_tokens: int | None = None

    def _fits(self, tokens: int, passages: int) -> bool:
        """Whether a pack of ``passages`` chunks holding ``tokens`` tokens, with the prompt
        around them and :data:`REPLY_TOKENS_PER_PASSAGE` of answer each, fits the model's
        context window (always, when the window is unknown)."""
        window = context_window(self.model)
        if window is None:
            return True
        if self._prompt_tokens is None:
            empty = extraction_prompt([], self.entity_types, self.language, keywords=self.keywords)
            self._prompt_tokens = count_tokens(EXTRACTION_SYSTEM) + count_tokens(empty)
        asked = prompt_tokens([{"content": ""}] * 2) + math.ceil((tokens + self._prompt_tokens + 10 * passages) * TOKEN_MARGIN)
        return asked + passages * REPLY_TOKENS_PER_PASSAGE <= window

    def packs(self, chunks: Sequence[Chunk]) -> list[list[Chunk]]:
        """Consecutive chunks grouped so that each group has at most ``pack_tokens`` tokens and
        ``max_pack_passages`` chunks, and fits the model's context window with room for the
        answer the passages will need (a larger chunk is alone)."""
        packs: list[list[Chunk]] = []
        current: list[Chunk] = []
        used = 0
        for chunk in chunks:
            if current and (
                self.pack_tokens == 0
                or used + chunk.n_tokens > self.pack_tokens
                or len(current) >= self.max_pack_passages
                or not self._fits(used + chunk.n_tokens, len(current) + 1)
            ):
                packs.append(current)
                current, used = [], 0
            current.append(chunk)
            used += chunk.n_tokens
        if current:
            packs.append(current)
        return packs

    async def aextract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """One record per chunk, in input order. The first failing pack cancels the others."""
        chunks = check_chunks(chunks)
        packs = self.packs(chunks)
        limit = asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else None
        done = 0

        async def one(pack: list[Chunk], step: Phase) -> list[Extraction]:
            nonlocal done
            if limit is None:
                result = await self.aextract_pack(pack)
            else:
                async with limit:
                    result = await self.aextract_pack(pack)
            done += 1
            step.advance(len(pack))
            if self.progress is not None:
                self.progress(done, len(packs))
            return result

        with phase("extracting entities", len(chunks), "chunk") as step:
            results = await gather_or_cancel([one(p, step) for p in packs])
        return [record for pack in results for record in pack]

    def extract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """Synchronous :meth:`aextract`."""
        return run_sync(self.aextract(chunks))

    async def aextract_pack(self, pack: Sequence[Chunk]) -> list[Extraction]:
        """Extract one pack: the first call, then up to ``gleaning`` rounds."""
        pack = list(pack)
        metadata: dict[str, Any] = {"extractor": "llm", "model": getattr(self.model, "name", ""), "pack": len(pack)}
        live = [c for c in pack if has_real_text(c.text)]
        if not live:
            return [Extraction(chunk_id=c.id, metadata={**metadata, "calls": 0}) for c in pack]
        passages = [(_title(c), c.text) for c in live]
        collected = _Collected(live)
        schema = KeywordExtractionOutput if self.keywords else ExtractionOutput
        # the pack's documents are what its answers are about (rhizome docs delete forgets them)
        with answers_on_trial() as trial, built_from(c.document_id for c in pack):  # an empty pack's answers are refused below
            first = await self.model.acomplete_json(
                extraction_prompt(passages, self.entity_types, self.language, keywords=self.keywords), schema, system=EXTRACTION_SYSTEM
            )
            calls, rounds = 1, 0
            collected.add(first)
            for item in getattr(first, "content_keywords", []):
                index = item.passage - 1 if 1 <= item.passage <= len(live) else (0 if len(live) == 1 else -1)
                if index >= 0:
                    collected.keywords[index].extend(item.keywords)
            for _ in range(self.gleaning):
                rounds += 1
                calls += 1
                prompt = gleaning_prompt(passages, self.entity_types, collected.entity_names(), collected.pair_names(), self.language)
                try:
                    extra = await self.model.acomplete_json(prompt, ExtractionOutput, system=EXTRACTION_SYSTEM)
                except (ModelOutputError, PromptTooLongError) as exc:  # an optional call must not cost the pack what it has
                    metadata["gleaning_error"] = str(exc)
                    break
                if not collected.add(extra):
                    break
            metadata.update(calls=calls, gleaning_rounds=rounds)
            records = collected.records(metadata)
            if not self.allow_empty and not any(r.entities for r in records):
                trial.reject()  # out of the cache: inserting the document again asks the model again
                raise EmptyExtractionError(
                    f"{getattr(self.model, 'name', 'the model')} found no entities in chunk(s) "
                    f"{', '.join(c.id for c in live)}. Small models often return empty lists: try a "
                    "bigger instruction-tuned model, a larger context window (num_ctx), smaller chunks "
                    "or pack_tokens, or allow_empty=True to keep such chunks without entities.",
                    last_output=first.model_dump_json(),
                )
        by_id = {r.chunk_id: r for r in records}
        return [by_id.get(c.id) or Extraction(chunk_id=c.id, metadata=dict(metadata)) for c in pack]

    def __repr__(self) -> str:
        return f"LLMExtractor(model={self.model!r}, gleaning={self.gleaning}, pack_tokens={self.pack_tokens})"


class _Collected:
    """Entities and relations gathered over the calls of one pack, per passage, with the names
    already seen so a gleaning call can tell whether it found anything new."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self.texts = [c.text.casefold() for c in chunks]
        self.entities: list[dict[str, Entity]] = [{} for _ in chunks]
        self.relations: list[dict[tuple[str, str], Relation]] = [{} for _ in chunks]
        self.keywords: list[list[str]] = [[] for _ in chunks]
        self.seen_entities: dict[str, str] = {}
        self.seen_pairs: dict[tuple[str, str], tuple[str, str]] = {}

    def entity_names(self) -> list[str]:
        return list(self.seen_entities.values())

    def pair_names(self) -> list[tuple[str, str]]:
        return list(self.seen_pairs.values())

    def _where(self, numbers: list[int], names: list[str]) -> list[int]:
        """The passages an item belongs to: the ones it names, else those containing all (then
        any) of its names, else all of them."""
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

    def add(self, answer: ExtractionOutput) -> bool:
        """Add one answer; returns whether it brought an entity or relation not seen before. A
        name or pair seen before in the same passage is folded into the record held there."""
        new = False
        for item in answer.entities:
            name = clean_name(item.name)
            key = entity_key(name)
            if not key:
                continue
            if key not in self.seen_entities:
                self.seen_entities[key] = name
                new = True
            for i in self._where(item.passages, [name]):
                found = self.entities[i].get(key)
                if found is None:
                    self.entities[i][key] = new_entity(name, self.chunks[i].id, type=item.type, description=item.description)
                else:  # what new_entity would make of the item, folded in
                    if not found.type:
                        found.type = normalise_type(item.type)
                    _fold(found.descriptions, [item.description.strip()])
        for link in answer.relations:
            source, target = clean_name(link.source), clean_name(link.target)
            skey, tkey = entity_key(source), entity_key(target)
            if not skey or not tkey or skey == tkey:
                continue
            pair = (skey, tkey) if skey < tkey else (tkey, skey)
            if pair not in self.seen_pairs:
                self.seen_pairs[pair] = (source, target)
                new = True
            for i in self._where(link.passages, [source, target]):
                held = self.relations[i].get(pair)
                if held is None:
                    self.relations[i][pair] = new_relation(
                        skey, tkey, self.chunks[i].id, description=link.description, keywords=link.keywords,
                        weight=float(link.strength), directed=False,
                    )
                    for key, display in ((skey, source), (tkey, target)):
                        if key not in self.entities[i]:
                            self.entities[i][key] = new_entity(display, self.chunks[i].id)
                else:  # what new_relation would make of the item, folded in
                    _fold(held.descriptions, [link.description.strip()])
                    _fold(held.keywords, [clean_name(w) for w in link.keywords])
                    held.weight = max(held.weight, float(link.strength))
        return new

    def records(self, metadata: dict[str, Any]) -> list[Extraction]:
        out = []
        for i, chunk in enumerate(self.chunks):
            relations = list(self.relations[i].values())
            entities = list(self.entities[i].values())
            records: list[Entity | Relation] = [*relations, *entities]
            for record in records:  # the first description (set only when it changed)
                if record.description != (first := record.descriptions[0] if record.descriptions else ""):
                    record.description = first
            keywords = list(dict.fromkeys(k for k in (clean_name(w) for w in self.keywords[i]) if k))
            out.append(Extraction(chunk_id=chunk.id, entities=entities, relations=relations, keywords=keywords, metadata=dict(metadata)))
        return out


def _fold(into: list[str], values: list[str]) -> None:
    """Append the non-empty ``values`` not yet in ``into``."""
    for value in values:
        if value and value not in into:
            into.append(value)


__all__ = ["DEFAULT_ENTITY_TYPES", "LLMExtractor", "Progress", "has_real_text"]
