"""``LightRAGIndex``: graph-based indexing φ of LightRAG (Guo et al.) with real incremental
insert and delete.

Index = Dedupe ∘ Prof(∪ Recog(chunk)): chunks (1,200 / 100 tokens) → extraction with one
gleaning round (the kernel's extractor, short chunks packed into one call) → per-chunk records
stored as they are → entity resolution → entity and relation profiles (entity key = its name,
relation keys = its theme keywords, values = merged descriptions, summarised past a budget) →
three vector collections (entities, relations, chunks) and the graph (the relation table). See
docs/lightrag.md for every choice the paper leaves open.

Records (kernel record tables): ``lightrag_entities`` and ``lightrag_relations`` (the profiles;
relations looked up by either endpoint: the graph's edge list), ``lightrag_citations`` and
``lightrag_fragments`` (a long profile's cited chunks and description fragments, one row each,
appended: see :mod:`rhizome.lightrag.lists`), ``lightrag_extractions`` (each chunk's raw
extraction, resolved to entity ids, so a delete rebuilds shared profiles without extracting
again) and ``lightrag_mentions`` (one row per chunk and surface name, with the keys entity
resolution looks names up by).

Insert: documents are identified by content hash (a repeat is skipped with no model call);
only new chunks are extracted; their records are folded onto the stored profiles they touch,
and only touched rows and vectors are written (a long profile's new citations and fragments
are appended, its record rewritten without them); a profile whose fragments grew past the summary
threshold is summarised once, when the insert call ends (see :mod:`rhizome.lightrag.profiles`).
Delete: a document's chunks go, entities and relations that only it supported go, and shared
profiles are rebuilt from the remaining chunks' stored records (no extraction), giving the
records one insert call of the remaining documents would give them (so an insert followed by
the delete of what it added gives back exactly the records held before).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from rhizome.core.evidence import EvidenceGraph, FactGraph
from rhizome.core.export import GraphContents
from rhizome.core.extraction import Extraction, add_keywords
from rhizome.core.extraction.merge import Seen
from rhizome.core.extraction.schema import clean_name, entity_key
from rhizome.core.index import BaseIndex, Batch, ModeInfo, Stats, batch_chunks
from rhizome.core.progress import phase
from rhizome.core.resolution import (
    EntityResolver,
    Known,
    Lookup,
    NameItem,
    acronym_key,
    initials,
    normalise_name,
)
from rhizome.core.stages import arun_stage
from rhizome.core.storage import IndexStore
from rhizome.core.summarize import DescriptionSummarizer
from rhizome.core.types import Chunk, Entity, Relation
from rhizome.lightrag.config import LightRAGConfig
from rhizome.lightrag.lists import (
    ENTITY_KEY,
    RELATION_KEY,
    ProfileLists,
    as_stored,
    counts,
    entity_profile,
    head,
    in_rows,
    is_long,
    profile_key,
    relation_profile,
)
from rhizome.lightrag.profiles import (
    chunk_record,
    copy_entity,
    copy_relation,
    covered,
    entity_text,
    fold_entity,
    fold_relation,
    new_entity,
    new_relation,
    pair_id,
    pieces,
    relation_id_for,
    relation_text,
    set_summary,
    skip_stored,
)
from rhizome.lightrag.schema import ChunkExtraction, EntityMention, Mention, PendingSummary

SUMMARY_STAGE = "lightrag.summary"
ROWS = "lightrag.list_rows"
"""Meta flag: every long profile keeps its citations and fragments as rows (rhizome.lightrag.lists)."""


@dataclass
class _Plan:
    """Everything one insert batch or delete changes, computed before its transaction."""

    removed: set[str] = field(default_factory=set)
    records: list[tuple[str, ChunkExtraction]] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    """The records to write, as stored: counts of their lists, not the lists."""
    rows: list[tuple[str, int, list[str], int, list[str]]] = field(default_factory=list)
    """Citation and fragment rows to write (:meth:`ProfileLists.append`)."""
    dropped: list[Any] = field(default_factory=list)
    """Profiles (as stored) whose rows go: deleted ones, and rebuilt ones written again whole."""
    deleted_entities: list[str] = field(default_factory=list)
    deleted_relations: list[str] = field(default_factory=list)
    entity_vectors: tuple[list[str], Any] = ((), None)  # type: ignore[assignment]
    relation_vectors: tuple[list[str], Any] = ((), None)  # type: ignore[assignment]
    name_vectors: tuple[list[str], Any] = ((), None)  # type: ignore[assignment]
    chunk_vectors: tuple[list[str], Any] = ((), None)  # type: ignore[assignment]
    merges: int = 0
    pending: list[str] = field(default_factory=list)
    """Profiles (``e:``/``r:`` keys) to summarise when the insert call finishes."""
    settled: list[str] = field(default_factory=list)
    """Profiles no longer waiting for a summary (summarised now, or deleted)."""


class LightRAGIndex(BaseIndex):
    """LightRAG: entity and relation profiles with dual-level (low/high keyword) retrieval.

    Settings: :class:`~rhizome.lightrag.config.LightRAGConfig` (as keyword arguments or
    ``config=``); the other parameters are :class:`~rhizome.core.index.BaseIndex`'s. ``llm``
    extracts, summarises, confirms resolution candidates and writes query keywords; without one
    every step runs offline (rule-based extraction, extractive summaries, rule-based keywords).
    """

    method: ClassVar[str] = "lightrag"
    modes: ClassVar[tuple[str, ...]] = ("hybrid", "local", "global", "mix", "naive")
    mode_info: ClassVar[Mapping[str | None, ModeInfo]] = {
        "hybrid": ModeInfo("entities matched by the question's specific keywords and relations matched by its broad ones; for questions that relate named things", ("multi-hop", "specific")),
        "local": ModeInfo("entities matched by the question's specific keywords, with their relations; for facts about named things", ("specific",)),
        "global": ModeInfo("relations matched by the question's broad keywords, with their endpoints; for themes and how things relate across the corpus", ("global",)),
        "mix": ModeInfo("hybrid graph search merged with the nearest passages; for questions that relate named things", ("multi-hop", "specific")),
        "naive": ModeInfo("the passages whose embeddings are nearest the query (no graph)", ("specific",)),
    }
    config_class = LightRAGConfig
    config: LightRAGConfig
    ENTITY_COLLECTION: ClassVar[str] = "lightrag_entities"
    RELATION_COLLECTION: ClassVar[str] = "lightrag_relations"
    NAME_COLLECTION: ClassVar[str] = "lightrag_names"

    def _setup(self) -> None:
        self.entity_table = self.store.table("lightrag_entities", Entity)
        self.relation_table = self.store.table("lightrag_relations", Relation, lookups=("source", "target"))
        self.extraction_table = self.store.table("lightrag_extractions", ChunkExtraction, key="chunk_id")
        self.mentions = self.store.table("lightrag_mentions", Mention, lookups=("chunk_id", "key", "norm", "initials", "acronym"))
        self.pending_summaries = self.store.table("lightrag_pending_summaries", PendingSummary)
        self.lists = ProfileLists(self.store)
        if not self.store.readonly and not self.store.get_meta(ROWS, False):
            # an index written before the lists were rows: move them (once, on a writable open)
            with self.store.transaction() as db:
                self.lists.migrate(db, (self.entity_table, self.relation_table))
                IndexStore.set_meta(db, ROWS, True)
        c = self.config
        self.summarizer = DescriptionSummarizer(
            self.llm, max_tokens=c.summary_max_tokens, min_fragments=c.force_summary_fragments,
            max_input_tokens=c.summary_max_input_tokens, language=c.language,
        )
        self.resolver = EntityResolver(
            threshold=c.resolution_threshold, acronyms=c.resolution_acronyms, llm=self.llm, confirm=c.resolution_confirm
        )

    def extractor_options(self) -> dict[str, Any]:
        # the offline rules judge one document at a time, so a document's records do not depend
        # on which other documents share its insert batch
        return {"llm_options": self.config.llm_extractor_options(), "offline_options": {"window": "sentence", "per_document": True}}

    # -- reading the graph -----------------------------------------------------------------------
    def entities(self) -> list[Entity]:
        """Every entity profile (sorted by id), with its citations and fragments."""
        return self.lists.whole(self.entity_table.all())

    def relations(self) -> list[Relation]:
        """Every relation profile (sorted by id), with its citations and fragments."""
        return self.lists.whole(self.relation_table.all())

    def graph_contents(self) -> GraphContents:
        """The entity and relation profiles (LightRAG has no communities), for export."""
        return GraphContents(self.entities(), self.relations())

    def entity(self, name: str) -> Entity | None:
        """The profile a name resolves to (exact surface form or entity id), or ``None``."""
        key = entity_key(name)
        found = self.mentions.first("key", [key]).get(key)
        entity = self.entity_table.one(found.entity_id if found else key)
        return None if entity is None else self.lists.whole([entity])[0]

    def evidence(self) -> EvidenceGraph:
        """The entity–passage graph the searches walk (cached until the next change)."""
        def build() -> EvidenceGraph:
            entities = self.entity_table.all()
            sources = self.lists.sources(entities)
            passages = {e.id: sources[profile_key(e)] for e in entities}
            edges = ((r.source, r.target, r.weight or 1.0) for r in self.relation_table.all())
            return EvidenceGraph({eid: chunk_ids for eid, chunk_ids in passages.items() if chunk_ids}, edges)

        return self.derived("evidence", (self.entity_table.generation(), self.relation_table.generation(), *self.lists.generation()), build)

    def fact_graph(self) -> FactGraph:
        """The relations and the passages each cites, for chains of facts (cached until they change)."""
        def build() -> FactGraph:
            relations = self.relation_table.all()
            sources = self.lists.sources(relations)
            return FactGraph((r.id, r.source, r.target, sources[profile_key(r)]) for r in relations)

        return self.derived("fact-graph", (self.relation_table.generation(), *self.lists.generation()), build)

    def degrees(self, entity_ids: Sequence[str]) -> dict[str, int]:
        """Relations per entity (the degree LightRAG ranks by)."""
        out = self.relation_table.count_by("source", entity_ids)
        for eid, n in self.relation_table.count_by("target", entity_ids).items():
            out[eid] = out.get(eid, 0) + n
        return out

    # -- BaseIndex hooks -------------------------------------------------------------------------
    async def _prepare(self, batch: Batch, stats: Stats) -> _Plan:
        chunks = batch_chunks(batch)
        replaced = self.replaced_chunk_ids(batch)
        records = await self._extract(chunks)
        documents = {c.id: c.document_id for c in chunks}
        plan = await self._plan(replaced, [(documents[r.chunk_id], r) for r in records], stats, defer=True)
        if chunks:
            plan.chunk_vectors = await self.embed_chunks(chunks)
        return plan

    def _write(self, db: Any, batch: Batch, prepared: _Plan) -> None:
        self._apply(db, prepared)

    async def _prepare_delete(self, document_ids: list[str], stats: Stats) -> _Plan:
        return await self._plan(self.store.chunk_ids(document_ids), [], stats)

    def _write_delete(self, db: Any, document_ids: list[str], prepared: _Plan) -> None:
        self._apply(db, prepared)

    def _remove_document(self, db: Any, document_id: str) -> int:
        chunk_ids = self.store.chunk_ids([document_id])
        self.extraction_table.delete(db, chunk_ids)
        self.mentions.delete_by(db, "chunk_id", chunk_ids)
        return super()._remove_document(db, document_id)

    async def _extract(self, chunks: list[Chunk]) -> list[ChunkExtraction]:
        if not chunks:
            return []
        found = {e.chunk_id: e for e in await self.extractor.aextract(chunks)}
        return [chunk_record(add_keywords(found.get(c.id) or Extraction(chunk_id=c.id), c)) for c in chunks]

    # -- resolution ------------------------------------------------------------------------------
    def _lookup(self) -> Lookup:
        with_descriptions = self.llm is not None and self.resolver.confirm

        def known(field: str, values: list[str]) -> dict[str, list[Known]]:
            mentions = self.mentions.find(field, [v for v in values if v])
            profiles = self.entity_table.get(m.entity_id for m in mentions)
            out: dict[str, list[Known]] = {}
            for m in mentions:
                entity = profiles.get(m.entity_id)
                if entity is None:
                    continue
                bucket = out.setdefault(getattr(m, field), [])
                if all(k.id != entity.id for k in bucket):
                    bucket.append(Known(entity.id, entity.name, entity.type, entity.description if with_descriptions else ""))
            return out

        def by_key(keys: list[str]) -> dict[str, str]:
            return {key: m.entity_id for key, m in self.mentions.first("key", keys).items()}

        def by_vector(vectors: np.ndarray, k: int) -> list[list[tuple[Known, float]]]:
            empty: list[list[tuple[Known, float]]] = [[] for _ in range(len(vectors))]
            if self.store.embedding_dimension is None or not len(vectors):
                return empty
            collection = self.store.collection(self.NAME_COLLECTION, vectors.shape[1])
            if not len(collection):
                return empty
            results = collection.search(vectors, k)
            profiles = self.entity_table.get(eid for row in results for eid, _ in row)
            return [
                [
                    (Known(eid, profiles[eid].name, profiles[eid].type, profiles[eid].description if with_descriptions else ""), score)
                    for eid, score in row
                    if eid in profiles
                ]
                for row in results
            ]

        return Lookup(
            by_key=by_key,
            by_norm=lambda norms: known("norm", norms),
            by_initials=lambda letters: known("initials", letters),
            by_acronym=lambda inits: known("acronym", inits),
            by_vector=by_vector,
        )

    async def _resolve(self, records: list[tuple[str, ChunkExtraction]], plan: _Plan) -> dict[str, np.ndarray]:
        """Give every mention its entity id; returns the name vectors computed on the way."""
        items: dict[str, NameItem] = {}
        for _, record in records:
            listed = {entity_key(m.name) for m in record.entities}
            for rel in record.relations:  # every relation endpoint is an entity of its chunk
                for name in (rel.source, rel.target):
                    if entity_key(name) not in listed:
                        listed.add(entity_key(name))
                        record.entities.append(EntityMention(name=clean_name(name)))
            record.entities = [m for m in record.entities if entity_key(m.name)]
            for m in record.entities:
                key = entity_key(m.name)
                item = items.get(key)
                if item is None:
                    items[key] = NameItem(key, clean_name(m.name), m.type, m.description)
                else:
                    item.type = item.type or m.type
                    item.description = item.description or m.description
        ordered = list(items.values())
        vectors: dict[str, np.ndarray] = {}
        if not self.config.resolution or not ordered:
            mapping = {it.key: it.key for it in ordered}
            if ordered:
                known = self._lookup().by_key([it.key for it in ordered])
                mapping.update(known)
        else:
            lookup = self._lookup()
            known = lookup.by_key([it.key for it in ordered])
            unknown = [it for it in ordered if it.key not in known]
            matrix = None
            if unknown:
                embedded = await self.embed([it.name for it in unknown], what="entity names")
                vectors = {it.key: embedded[i] for i, it in enumerate(unknown)}
                matrix = np.zeros((len(ordered), embedded.shape[1]), dtype=np.float32)
                for i, it in enumerate(ordered):
                    if it.key in vectors:
                        matrix[i] = vectors[it.key]
            outcome = await self.resolver.aresolve(ordered, lookup, matrix)
            mapping = outcome.mapping
            plan.merges += len(outcome.merges)
        for document_id, record in records:
            for m in record.entities:
                m.id = mapping[entity_key(m.name)]
            kept = []
            for rel in record.relations:
                rel.source_id = mapping[entity_key(rel.source)]
                rel.target_id = mapping[entity_key(rel.target)]
                if rel.source_id != rel.target_id:  # two names of one entity: not a relation
                    kept.append(rel)
            record.relations = kept
            seen: set[str] = set()
            for m in record.entities:
                key = entity_key(m.name)
                if key in seen:
                    continue
                seen.add(key)
                plan.mentions.append(
                    Mention(
                        id=f"{record.chunk_id}\x1f{key}", chunk_id=record.chunk_id, key=key, name=m.name,
                        norm=normalise_name(m.name), initials=initials(m.name), acronym=acronym_key(m.name), entity_id=m.id,
                    )
                )
            plan.records.append((document_id, record))
        return vectors

    # -- planning --------------------------------------------------------------------------------
    async def _plan(
        self, removed: Sequence[str], records: list[tuple[str, ChunkExtraction]], stats: Stats, *, defer: bool = False
    ) -> _Plan:
        """What one insert batch (``records``, replacing the chunks ``removed``) or one delete
        (``removed`` only) changes. A profile whose fragments grew past the summary threshold is
        summarised here on a delete; on an insert (``defer``) it waits for the end of the insert
        call (:meth:`_after_change`), so that a call summarises each profile at most once however
        many of its batches touch it."""
        plan = _Plan(removed=set(removed))
        name_vectors = await self._resolve(records, plan)
        old = self.extraction_table.get(removed)
        lost_e = list(dict.fromkeys(m.id for r in old.values() for m in r.entities))
        lost_r = list(dict.fromkeys(relation_id_for(x.source_id, x.target_id) for r in old.values() for x in r.relations))
        new_e = list(dict.fromkeys(m.id for _, r in records for m in r.entities))
        new_r = list(dict.fromkeys(relation_id_for(x.source_id, x.target_id) for _, r in records for x in r.relations))
        # the stored records: their lists stay in their rows (rhizome.lightrag.lists)
        before_e = self.entity_table.get(lost_e + new_e)
        before_r = self.relation_table.get(lost_r + new_r)
        stored_as = {profile_key(r): r for r in [*before_e.values(), *before_r.values()]}  # by profile key

        entities: dict[str, Entity] = {}
        relations: dict[str, Relation] = {}
        seen: Seen = {}  # the folded profiles' lists as sets, for the whole batch
        # rebuild what the removal touches from the remaining chunks' stored records: these
        # profiles hold their whole lists here, and their rows are written again whole
        rebuild_e = [e for e in lost_e if e in before_e]
        rebuild_r = [r for r in lost_r if r in before_r]
        rebuilt = [before_e[e] for e in rebuild_e] + [before_r[r] for r in rebuild_r]
        held_sources = self.lists.sources(rebuilt)
        held_fragments = self.lists.texts(rebuilt)
        remaining = {c for ids in held_sources.values() for c in ids if c not in plan.removed}
        stored = self.extraction_table.get(sorted(remaining))
        for eid in rebuild_e:
            entity = new_entity(eid, "")
            for chunk_id in held_sources[entity_profile(eid)]:
                if chunk_id in plan.removed or chunk_id not in stored:
                    continue
                for m in stored[chunk_id].entities:
                    if m.id == eid:
                        entity.name = entity.name or m.name
                        fold_entity(entity, m, chunk_id, seen)
            entities[eid] = entity
        for rid in rebuild_r:
            held = before_r[rid]
            relation = new_relation(pair_id(held.source, held.target))
            for chunk_id in held_sources[relation_profile(rid)]:
                if chunk_id in plan.removed or chunk_id not in stored:
                    continue
                for x in stored[chunk_id].relations:
                    if relation_id_for(x.source_id, x.target_id) == rid:
                        fold_relation(relation, x, chunk_id, seen)
            relations[rid] = relation
        # the other stored profiles the new records touch whose lists are rows are folded onto
        # them: their lists here collect only what this batch adds, after the ``start`` values
        # their rows hold, and the folds skip what the rows hold already (read by key, not
        # whole); a short profile holds its lists itself and is folded as it is
        start: dict[str, tuple[int, int]] = {}
        pairs: tuple[list[tuple[str, str]], list[tuple[str, str]]] = ([], [])
        for _, record in records:
            for m in record.entities:
                if m.id in before_e and m.id not in entities and in_rows(before_e[m.id]):
                    pairs[0].append((entity_profile(m.id), record.chunk_id))
                    pairs[1].append((entity_profile(m.id), m.description.strip()))
            for x in record.relations:
                rid = relation_id_for(x.source_id, x.target_id)
                if rid in before_r and rid not in relations and in_rows(before_r[rid]):
                    pairs[0].append((relation_profile(rid), record.chunk_id))
                    pairs[1].append((relation_profile(rid), x.description.strip()))
        cited, known = self.lists.held(*pairs)
        held_by: dict[str, tuple[set[str], set[str]]] = {}
        for key, chunk_id in cited:
            held_by.setdefault(key, (set(), set()))[0].add(chunk_id)
        for key, text in known:
            held_by.setdefault(key, (set(), set()))[1].add(text)

        def onto_stored(record: Any) -> Any:
            if in_rows(record):
                key = profile_key(record)
                start[key] = counts(record)
                skip_stored(seen, record, *held_by.get(key, (set(), set())))
            return record

        # fold the new records onto the stored profiles
        with phase("merging extractions", len(records), "chunk") as step:
            for _, record in records:
                for m in record.entities:
                    entity = entities.get(m.id)
                    if entity is None:
                        entity = onto_stored(copy_entity(before_e[m.id])) if m.id in before_e else new_entity(m.id, m.name)
                        entities[m.id] = entity
                    entity.name = entity.name or m.name
                    fold_entity(entity, m, record.chunk_id, seen)
                for x in record.relations:
                    rid = relation_id_for(x.source_id, x.target_id)
                    relation = relations.get(rid)
                    if relation is None:
                        relation = onto_stored(copy_relation(before_r[rid])) if rid in before_r else new_relation(pair_id(x.source_id, x.target_id))
                        relations[rid] = relation
                    fold_relation(relation, x, record.chunk_id, seen)
                step.advance()

        # settle: deletions, descriptions, what changed
        sizes: dict[str, tuple[int, int]] = {}  # citations and fragments of each profile now
        jobs: list[tuple[Any, str]] = []
        for rec in [*entities.values(), *relations.values()]:
            key = profile_key(rec)
            before = stored_as.get(key)
            first_source, first_fragment = start.get(key, (0, 0))
            sizes[key] = (first_source + len(rec.source_chunk_ids), first_fragment + len(rec.descriptions))
            if not sizes[key][0]:
                if before is not None:
                    (plan.deleted_entities if isinstance(rec, Entity) else plan.deleted_relations).append(rec.id)
                continue
            # no fragment added (folded onto the rows) or the same fragments (rebuilt, or held)
            if key in start:
                same = not rec.descriptions
            else:
                same = before is not None and held_fragments.get(key, before.descriptions) == rec.descriptions
            if isinstance(rec, Entity):
                same = same and before.name == rec.name
            if same:
                rec.description = before.description
            else:
                jobs.append((rec, rec.name if isinstance(rec, Entity) else ""))
        names = {eid: e.name for eid, e in entities.items() if sizes[entity_profile(eid)][0]}
        missing = {x for r in relations.values() for x in (r.source, r.target) if x not in names}
        names.update({eid: e.name for eid, e in self.entity_table.get(missing).items()})
        # a profile already waiting for its summary that only gained fragments still needs it
        # (both the fragment count and the length only grow): it keeps its stored value, and
        # is not read again batch after batch of a long insert call
        rebuilt_keys = {entity_profile(e) for e in rebuild_e} | {relation_profile(r) for r in rebuild_r}
        waiting_before = set(self.pending_summaries.get(profile_key(rec) for rec, _ in jobs)) - rebuilt_keys if defer else set()
        # the fragments since its last summary of every other profile: those its rows hold
        # (fewer than the summary rule allows, or it would be waiting) and those added here
        stored_since = []
        for rec, _ in jobs:
            if (key := profile_key(rec)) in start and key not in waiting_before:
                before = stored_as[key]
                stored_since.append((before, covered(before)))
        since = self.lists.tails(stored_since)
        summary_jobs = {}
        for number, (rec, subject) in enumerate(jobs):
            key = profile_key(rec)
            subject = subject or f"{names.get(rec.source, rec.source)} and {names.get(rec.target, rec.target)}"
            held = stored_as.get(key) if key in waiting_before else None
            if held is not None:
                rec.description = held.description
                plan.pending.append(key)
                continue
            fragments = since[key] + rec.descriptions if key in start else rec.descriptions[covered(rec):]
            parts = pieces(rec, fragments)
            if parts and not fragments:  # nothing arrived since its summary (a new name or source)
                rec.description = parts[0]
                plan.settled.append(key)
            elif (joined := self.summarizer.joined(parts)) is not None:
                rec.description = joined
                plan.settled.append(key)
            elif defer:  # joined until the insert call ends and summarises it once
                rec.description = "\n".join(dict.fromkeys(p.strip() for p in parts if p.strip()))
                plan.pending.append(key)
            else:
                summary_jobs[number] = (self.summarizer.digest(subject, parts), lambda s=subject, f=parts: self.summarizer.asummarize(s, f))
                plan.settled.append(key)
        summaries, written = await arun_stage(self.store, SUMMARY_STAGE, summary_jobs, label="summarising profiles")
        for number, text in summaries.items():
            rec = jobs[number][0]
            set_summary(rec, text, sizes[profile_key(rec)][1])

        deleted_e = set(plan.deleted_entities)
        deleted_r = set(plan.deleted_relations)
        plan.settled += [entity_profile(e) for e in deleted_e] + [relation_profile(r) for r in deleted_r]
        plan.dropped = [before_e[e] for e in plan.deleted_entities] + [before_r[r] for r in plan.deleted_relations]
        waiting = set(plan.pending)  # embedded once summarised
        # the records as stored (a long profile: counts instead of its lists) and the rows
        # they add or rewrite
        for rec in [*entities.values(), *relations.values()]:
            key = profile_key(rec)
            if not sizes[key][0]:
                continue
            before = stored_as.get(key)
            long = key in start or is_long(*sizes[key])  # folded onto its rows: it keeps them
            stored = head(rec, *sizes[key]) if long else rec
            if stored != before:
                (plan.entities if isinstance(rec, Entity) else plan.relations)[rec.id] = stored
            if key in start:  # folded onto its rows
                if rec.source_chunk_ids or rec.descriptions:
                    plan.rows.append((key, start[key][0], rec.source_chunk_ids, start[key][1], rec.descriptions))
                continue
            # new, rebuilt or held its lists: its rows (if any) are written whole, when changed
            had_rows = before is not None and in_rows(before)
            if had_rows and long and held_sources[key] == rec.source_chunk_ids and held_fragments[key] == rec.descriptions:
                continue
            if had_rows:
                plan.dropped.append(before)
            if long:
                plan.rows.append((key, 0, rec.source_chunk_ids, 0, rec.descriptions))

        # vectors of what a search would now see differently
        renamed = {eid for eid, e in plan.entities.items() if eid not in before_e or before_e[eid].name != e.name}
        embed_e = [
            e for eid, e in plan.entities.items()
            if entity_profile(eid) not in waiting and (eid not in before_e or entity_text(before_e[eid]) != entity_text(e))
        ]
        rel_ids = set(plan.relations)
        if renamed & set(before_e):
            touched = renamed & set(before_e)
            for rel in self.relation_table.find("source", touched) + self.relation_table.find("target", touched):
                if rel.id not in rel_ids and rel.id not in deleted_r:
                    plan.relations.setdefault(rel.id, rel)
        embed_r = []
        for rid, rel in plan.relations.items():
            if relation_profile(rid) in waiting:
                continue
            before = before_r.get(rid)
            text = relation_text(rel, names.get(rel.source, rel.source), names.get(rel.target, rel.target))
            old_text = (
                relation_text(before, before_e[before.source].name if before.source in before_e else names.get(before.source, ""),
                              before_e[before.target].name if before.target in before_e else names.get(before.target, ""))
                if before is not None
                else None
            )
            if text != old_text or rel.source in renamed or rel.target in renamed:
                embed_r.append((rid, text))
        if embed_e:
            plan.entity_vectors = ([e.id for e in embed_e], await self.embed([entity_text(e) for e in embed_e], what="entities"))
        if embed_r:
            plan.relation_vectors = ([r for r, _ in embed_r], await self.embed([t for _, t in embed_r], what="relations"))
        if renamed:
            ordered = sorted(renamed)
            todo = [plan.entities[e].name for e in ordered]
            known = {e: name_vectors[entity_key(plan.entities[e].name)] for e in ordered if entity_key(plan.entities[e].name) in name_vectors}
            rest = [e for e in ordered if e not in known]
            if rest:
                fresh = await self.embed([plan.entities[e].name for e in rest], what="entity names")
                known.update({e: fresh[i] for i, e in enumerate(rest)})
            plan.name_vectors = (ordered, np.vstack([known[e] for e in ordered]) if todo else None)
        for key, value in {
            "chunks_added": len(records),
            "chunks_removed": len(plan.removed),
            "entities_written": len(plan.entities),
            "relations_written": len(plan.relations),
            "entities_deleted": len(plan.deleted_entities),
            "relations_deleted": len(plan.deleted_relations),
            "summaries_written": written,
            "resolution_merges": plan.merges,
        }.items():
            stats[key] = stats.get(key, 0) + value
        return plan

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        """Summarise, once, every profile an insert call left waiting (:meth:`_plan`), and embed
        it; a cut-short call leaves them waiting for the next insert, delete or refresh."""
        keys = self.pending_summaries.keys()
        if not keys:
            return
        entities = self.entity_table.get(k[len(ENTITY_KEY) :] for k in keys if k.startswith(ENTITY_KEY))
        relations = self.relation_table.get(k[len(RELATION_KEY) :] for k in keys if k.startswith(RELATION_KEY))
        ends = {x for r in relations.values() for x in (r.source, r.target)} - set(entities)
        names = {eid: e.name for eid, e in {**self.entity_table.get(ends), **entities}.items()}
        records: dict[str, Entity | Relation] = {entity_profile(k): e for k, e in entities.items()}
        records.update({relation_profile(k): r for k, r in relations.items()})
        since = self.lists.tails([(rec, covered(rec)) for rec in records.values()])
        jobs = {}
        for key, rec in records.items():
            subject = rec.name if isinstance(rec, Entity) else f"{names.get(rec.source, rec.source)} and {names.get(rec.target, rec.target)}"
            parts = pieces(rec, since[key])
            joined = self.summarizer.joined(parts)
            if joined is None:
                jobs[key] = (self.summarizer.digest(subject, parts), lambda s=subject, f=parts: self.summarizer.asummarize(s, f))
            else:
                rec.description = joined
        summaries, written = await arun_stage(self.store, SUMMARY_STAGE, jobs, label="summarising profiles")
        for key, text in summaries.items():
            set_summary(records[key], text, counts(records[key])[1])
        e_ids, r_ids = list(entities), list(relations)
        e_vectors = await self.embed([entity_text(entities[e]) for e in e_ids]) if e_ids else None
        r_texts = [relation_text(r, names.get(r.source, r.source), names.get(r.target, r.target)) for r in relations.values()]
        r_vectors = await self.embed(r_texts) if r_ids else None
        with self.store.transaction() as db:
            self.entity_table.put(db, (as_stored(e) for e in entities.values()))
            self.relation_table.put(db, (as_stored(r) for r in relations.values()))
            if e_ids:
                self.store.put_vectors(db, self.ENTITY_COLLECTION, e_ids, e_vectors)
            if r_ids:
                self.store.put_vectors(db, self.RELATION_COLLECTION, r_ids, r_vectors)
            self.pending_summaries.delete(db, keys)
        stats["summaries_written"] = stats.get("summaries_written", 0) + written

    def _apply(self, db: Any, plan: _Plan) -> None:
        self.pending_summaries.delete(db, plan.settled)
        self.pending_summaries.put(db, [PendingSummary(id=k) for k in plan.pending])
        self.extraction_table.put(db, [record for _, record in plan.records])
        self.mentions.put(db, plan.mentions)
        self.relation_table.delete(db, plan.deleted_relations)
        self.entity_table.delete(db, plan.deleted_entities)
        self.lists.drop(db, plan.dropped)
        self.lists.append(db, plan.rows)
        self.entity_table.put(db, plan.entities.values())
        self.relation_table.put(db, plan.relations.values())
        if self.store.embedding_dimension is not None:
            if plan.deleted_entities:
                self.store.delete_vectors(db, self.ENTITY_COLLECTION, plan.deleted_entities)
                self.store.delete_vectors(db, self.NAME_COLLECTION, plan.deleted_entities)
            if plan.deleted_relations:
                self.store.delete_vectors(db, self.RELATION_COLLECTION, plan.deleted_relations)
        for collection, (ids, vectors) in (
            (self.ENTITY_COLLECTION, plan.entity_vectors),
            (self.RELATION_COLLECTION, plan.relation_vectors),
            (self.NAME_COLLECTION, plan.name_vectors),
            (self.CHUNK_COLLECTION, plan.chunk_vectors),
        ):
            if len(ids):
                self.store.put_vectors(db, collection, list(ids), vectors)

    # -- reading ---------------------------------------------------------------------------------
    def _retriever(self, mode: str | None, k: int | None, **options: Any) -> Any:
        from rhizome.lightrag.query import LightRAGRetriever

        return LightRAGRetriever(self, k, mode=mode or "hybrid", **options)

    def _answer_inputs(self, retrieval: Any) -> tuple[list[Any], dict[str, Any]]:
        """Answers read LightRAG's three-block context (entities, relations, sources) and cite
        the items used."""
        from rhizome.lightrag.prompts import ANSWER_INSTRUCTIONS, ANSWER_SYSTEM

        context = list(retrieval.context or retrieval.hits)
        return context, {"system": ANSWER_SYSTEM, "instructions": ANSWER_INSTRUCTIONS, "max_context_tokens": 8000}


__all__ = ["LightRAGIndex"]
