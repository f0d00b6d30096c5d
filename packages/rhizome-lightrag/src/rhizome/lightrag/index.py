"""``LightRAGIndex``: graph-based indexing φ of LightRAG (Guo et al.) with real incremental
insert and delete.

Index = Dedupe ∘ Prof(∪ Recog(chunk)): chunks (1,200 / 100 tokens) → extraction with one
gleaning round → per-chunk records stored as they are → entity resolution → entity and relation
profiles (entity key = its name, relation keys = its theme keywords, values = merged
descriptions, summarised past a budget) → three vector collections (entities, relations,
chunks) and the graph (the relation table). See docs/lightrag.md for every choice the paper
leaves open.

Insert: documents are identified by content hash (a repeat is skipped with no model call);
only new chunks are extracted; their records are folded onto the stored profiles they touch,
and only touched rows and vectors are written. Delete: a document's chunks go, entities and
relations that only it supported go, and shared profiles are rebuilt from the remaining chunks'
stored records (no extraction), giving exactly the records the index held without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rhizome.core.aio import PerLoop
from rhizome.core.errors import ConfigurationError, RhizomeError
from rhizome.core.extraction.schema import clean_name, entity_key
from rhizome.core.index import BaseIndex, Batch, DeleteReport, InsertReport
from rhizome.core.progress import ProgressArg
from rhizome.core.summarize import DescriptionSummarizer
from rhizome.core.types import Entity, Relation
from rhizome.lightrag.extraction import (
    DEFAULT_ENTITY_TYPES,
    LightRAGExtractor,
    OfflineLightRAGExtractor,
    from_kernel_extractions,
)
from rhizome.lightrag.profiles import (
    copy_entity,
    copy_relation,
    entity_text,
    fold_entity,
    fold_relation,
    new_entity,
    new_relation,
    pair_id,
    relation_id_for,
    relation_text,
)
from rhizome.lightrag.resolution import (
    EntityResolver,
    Known,
    Lookup,
    NameItem,
    acronym_key,
    initials,
    normalise_name,
)
from rhizome.lightrag.schema import ChunkExtraction, EntityMention
from rhizome.lightrag.store import GraphRecords


@dataclass
class _Plan:
    """Everything one insert batch or delete changes, computed before its transaction."""

    removed: set[str] = field(default_factory=set)
    records: list[tuple[str, ChunkExtraction]] = field(default_factory=list)
    mentions: list[tuple[str, str, str, str, str, str, str]] = field(default_factory=list)
    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    deleted_entities: list[str] = field(default_factory=list)
    deleted_relations: list[str] = field(default_factory=list)
    degree_refresh: set[str] = field(default_factory=set)
    entity_vectors: tuple[list[str], Any] = ((), None)  # type: ignore[assignment]
    relation_vectors: tuple[list[str], Any] = ((), None)  # type: ignore[assignment]
    name_vectors: tuple[list[str], Any] = ((), None)  # type: ignore[assignment]
    chunk_vectors: tuple[list[str], Any] = ((), None)  # type: ignore[assignment]
    merges: int = 0


class LightRAGIndex(BaseIndex):
    """LightRAG: entity and relation profiles with dual-level (low/high keyword) retrieval.

    Parameters
    ----------
    embedder:
        Any embedder or spec (default: the offline :class:`~rhizome.core.embeddings.HashingEmbedder`).
    llm:
        Chat model for extraction, summaries, resolution checks and query keywords; ``None``
        runs every step offline (rule-based extraction, extractive summaries, rule-based query
        keywords).
    path:
        Index directory; ``None`` keeps it in memory until :meth:`persist`.
    entity_types:
        Types the model may assign (paper: organization, person, geo, event).
    gleaning:
        Extra extraction rounds asking for what was missed (paper: 1).
    pack_tokens, max_pack_passages:
        Short chunks share one extraction call up to this many tokens / chunks (0 tokens: one
        call per chunk, as in the paper). See :mod:`rhizome.lightrag.extraction`.
    summary_max_tokens:
        Merged descriptions longer than this are summarised (the reference code's 500-token
        trigger), and summaries aim at this length.
    force_summary_fragments:
        Summarise once an entity or relation has this many distinct descriptions even when they
        fit (reference code ``force_llm_summary_on_merge``: 8); ``None`` disables.
    summary_input_tokens:
        Most description tokens per summary call (map-reduce beyond), sized for an 8k context
        (the reference code's 12,000 assumes 32k models).
    language:
        Language of descriptions and summaries.
    resolution:
        Resolve entity names beyond the exact name (see :mod:`rhizome.lightrag.resolution`);
        ``False`` keeps the paper's exact-name merge.
    resolution_threshold, resolution_acronyms, resolution_confirm:
        Name-embedding similarity that makes two names a candidate; whether acronyms match
        initials; whether the chat model confirms candidates (when there is one).
    allow_empty:
        Accept extraction calls that find no entity in real text instead of raising.
    extractor:
        A kernel extractor (e.g. imported OpenIE triples) used instead of the model / offline
        step. Not stored in the manifest: pass it again after :meth:`load` to keep using it.
    chunk_size, chunk_overlap:
        1,200 / 100 tokens (paper and reference code).
    batch_size:
        Chunks per committed batch; an interruption loses at most one batch.
    progress:
        ``True`` for a progress bar, or a callable ``(stage, done, total)``.
    """

    method: ClassVar[str] = "lightrag"
    modes: ClassVar[tuple[str, ...]] = ("hybrid", "local", "global", "mix", "naive")
    uses_llm: ClassVar[bool] = True
    ENTITY_COLLECTION: ClassVar[str] = "lightrag_entities"
    RELATION_COLLECTION: ClassVar[str] = "lightrag_relations"
    NAME_COLLECTION: ClassVar[str] = "lightrag_names"

    def __init__(
        self,
        embedder: Any = None,
        *,
        llm: Any = None,
        path: str | Path | None = None,
        entity_types: Sequence[str] = DEFAULT_ENTITY_TYPES,
        gleaning: int = 1,
        pack_tokens: int = 1200,
        max_pack_passages: int = 12,
        summary_max_tokens: int = 500,
        force_summary_fragments: int | None = 8,
        summary_input_tokens: int = 4000,
        language: str = "English",
        resolution: bool = True,
        resolution_threshold: float = 0.9,
        resolution_acronyms: bool = True,
        resolution_confirm: bool = True,
        allow_empty: bool = False,
        extractor: Any = None,
        chunk_size: int = 1200,
        chunk_overlap: int = 100,
        batch_size: int = 256,
        progress: ProgressArg = False,
        _store: Any = None,
    ) -> None:
        if isinstance(entity_types, str):
            raise ConfigurationError("entity_types must be a list of type names, not one string")
        if not 0.0 < resolution_threshold <= 1.0:
            raise ConfigurationError(f"resolution_threshold must be in (0, 1], got {resolution_threshold}")
        if extractor is not None and not callable(getattr(extractor, "aextract", None)):
            raise ConfigurationError("extractor must have an async aextract(chunks) method (a kernel Extractor)")
        super().__init__(
            embedder,
            llm=llm,
            path=path,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            batch_size=batch_size,
            progress=progress,
            parameters={
                "entity_types": list(entity_types),
                "gleaning": gleaning,
                "pack_tokens": pack_tokens,
                "max_pack_passages": max_pack_passages,
                "summary_max_tokens": summary_max_tokens,
                "force_summary_fragments": force_summary_fragments,
                "summary_input_tokens": summary_input_tokens,
                "language": language,
                "resolution": resolution,
                "resolution_threshold": resolution_threshold,
                "resolution_acronyms": resolution_acronyms,
                "resolution_confirm": resolution_confirm,
                "allow_empty": allow_empty,
            },
            _store=_store,
        )
        self.entity_types = tuple(entity_types)
        self.language = language
        self.resolution = resolution
        self.extractor = extractor
        self.llm_extractor = (
            LightRAGExtractor(
                self.llm,
                entity_types=self.entity_types,
                gleaning=gleaning,
                pack_tokens=pack_tokens,
                max_pack_passages=max_pack_passages,
                language=language,
                allow_empty=allow_empty,
            )
            if self.llm is not None
            else None
        )
        self.offline_extractor = OfflineLightRAGExtractor()
        self.summarizer = DescriptionSummarizer(
            self.llm,
            max_tokens=summary_max_tokens,
            min_fragments=force_summary_fragments,
            max_input_tokens=summary_input_tokens,
            language=language,
        )
        self.resolver = EntityResolver(
            threshold=resolution_threshold,
            acronyms=resolution_acronyms,
            llm=self.llm,
            confirm=resolution_confirm,
        )
        self.graph = GraphRecords(self.store)
        self.graph.ensure_schema()
        self._write_lock: PerLoop[asyncio.Lock] = PerLoop(asyncio.Lock)
        self._planned: set[str] = set()
        self.last_plan_stats: dict[str, int] = {}

    # -- counts ----------------------------------------------------------------------------------
    @property
    def n_entities(self) -> int:
        return self.graph.count("lightrag_entities")

    @property
    def n_relations(self) -> int:
        return self.graph.count("lightrag_relations")

    def entities(self) -> list[Entity]:
        """Every entity profile (sorted by id)."""
        return self.graph.all_entities()

    def relations(self) -> list[Relation]:
        """Every relation profile (sorted by id)."""
        return self.graph.all_relations()

    def entity(self, name: str) -> Entity | None:
        """The profile a name resolves to (exact surface form or entity id), or ``None``."""
        key = entity_key(name)
        found = dict(self.graph.mention_entities("key", [key]))
        found_id = found.get(key, key)
        return self.graph.entities([found_id]).get(found_id)

    # -- writing ---------------------------------------------------------------------------------
    async def ainsert(self, documents: Sequence[Any] | Any) -> InsertReport:
        async with self._write_lock.get():
            return await super().ainsert(documents)

    async def adelete(self, document_ids: Sequence[str] | str) -> DeleteReport:
        """Remove documents: their chunks, the entities and relations only they supported, and
        their share of every other profile, rebuilt from the remaining chunks' stored records.
        Unknown ids are reported in ``missing``."""
        ids = [document_ids] if isinstance(document_ids, str) else list(document_ids)
        report = DeleteReport()
        async with self._write_lock.get():
            present = []
            for doc_id in dict.fromkeys(ids):
                if self.store.document_state(doc_id) is None:
                    report.missing.append(doc_id)
                else:
                    present.append(doc_id)
            if present:
                removed = [c for d in present for c in self.graph.chunk_ids_of(d)]
                plan = await self._plan(removed, [])
                self._planned.update(removed)
                try:
                    with self.store.transaction() as db:
                        for doc_id in present:
                            report.chunks += self._remove_document(db, doc_id)
                            report.deleted.append(doc_id)
                        self._apply(db, plan)
                finally:
                    self._planned.difference_update(removed)
                await self._after_change([], report.deleted)
            self.store.save_snapshots()
        return report

    async def _prepare(self, batch: Batch) -> _Plan:
        chunks = [c for _, cs in batch for c in cs]
        removed: list[str] = []
        for doc, _ in batch:
            if self.store.document_state(doc.id) is not None:  # a changed document is replaced
                removed.extend(self.graph.chunk_ids_of(doc.id))
        records = await self._extract(chunks)
        documents = {c.id: c.document_id for c in chunks}
        plan = await self._plan(removed, [(documents[r.chunk_id], r) for r in records])
        if chunks:
            plan.chunk_vectors = ([c.id for c in chunks], await self.embed([c.text for c in chunks]))
        self._planned.update(removed)
        return plan

    def _write(self, db: Any, batch: Batch, prepared: _Plan) -> None:
        try:
            self._apply(db, prepared)
        finally:
            self._planned.difference_update(prepared.removed)

    def _remove_document(self, db: Any, document_id: str) -> int:
        chunk_ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))]
        if not set(chunk_ids) <= self._planned:
            raise RhizomeError(
                f"internal: the removal of {document_id!r} was not planned; remove documents with "
                "delete()/adelete() or replace them with insert()"
            )
        GraphRecords.delete_rows(db, "lightrag_extractions", "chunk_id", chunk_ids)
        GraphRecords.delete_rows(db, "lightrag_mentions", "chunk_id", chunk_ids)
        return super()._remove_document(db, document_id)

    # -- extraction ------------------------------------------------------------------------------
    async def _extract(self, chunks: list[Any]) -> list[ChunkExtraction]:
        if not chunks:
            return []
        if self.extractor is not None:
            return await from_kernel_extractions(self.extractor, chunks)
        if self.llm_extractor is not None:
            return await self.llm_extractor.aextract(chunks)
        return await self.offline_extractor.aextract(chunks)

    # -- resolution ------------------------------------------------------------------------------
    def _lookup(self) -> Lookup:
        graph = self.graph
        with_descriptions = self.llm is not None and self.resolver.confirm

        def known(pairs: list[tuple[str, str]]) -> dict[str, list[Known]]:
            rows = graph.entity_rows([e for _, e in pairs])
            profiles = graph.entities([e for _, e in pairs]) if with_descriptions else {}
            out: dict[str, list[Known]] = {}
            for value, eid in pairs:
                if eid not in rows:
                    continue
                bucket = out.setdefault(value, [])
                if all(k.id != eid for k in bucket):
                    description = profiles[eid].description if eid in profiles else ""
                    bucket.append(Known(eid, rows[eid][0], rows[eid][1], description))
            return out

        def by_key(keys: list[str]) -> dict[str, str]:
            out: dict[str, str] = {}
            for key, eid in graph.mention_entities("key", keys):
                out.setdefault(key, eid)
            return out

        def by_vector(vectors: np.ndarray, k: int) -> list[list[tuple[Known, float]]]:
            empty: list[list[tuple[Known, float]]] = [[] for _ in range(len(vectors))]
            if self.store.manifest.embedding_dimension is None or not len(vectors):
                return empty
            collection = self.store.collection(self.NAME_COLLECTION, vectors.shape[1])
            if not len(collection):
                return empty
            results = collection.search(vectors, k)
            ids = [eid for row in results for eid, _ in row]
            rows = graph.entity_rows(ids)
            profiles = graph.entities(ids) if with_descriptions else {}
            out = []
            for row in results:
                out.append(
                    [
                        (Known(eid, rows[eid][0], rows[eid][1], profiles[eid].description if eid in profiles else ""), score)
                        for eid, score in row
                        if eid in rows
                    ]
                )
            return out

        return Lookup(
            by_key=by_key,
            by_norm=lambda norms: known(graph.mention_entities("norm", norms)),
            by_initials=lambda letters: known(graph.mention_entities("initials", letters)),
            by_acronym=lambda inits: known(graph.mention_entities("acronym", inits)),
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
        if not self.resolution or not ordered:
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
                embedded = await self.embed([it.name for it in unknown])
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
                    (record.chunk_id, key, m.name, normalise_name(m.name), initials(m.name), acronym_key(m.name), m.id)
                )
            plan.records.append((document_id, record))
        return vectors

    # -- planning --------------------------------------------------------------------------------
    async def _plan(self, removed: Sequence[str], records: list[tuple[str, ChunkExtraction]]) -> _Plan:
        plan = _Plan(removed=set(removed))
        name_vectors = await self._resolve(records, plan)
        old = self.graph.extractions(list(removed))
        lost_e = list(dict.fromkeys(m.id for r in old.values() for m in r.entities))
        lost_r = list(dict.fromkeys(relation_id_for(x.source_id, x.target_id) for r in old.values() for x in r.relations))
        new_e = list(dict.fromkeys(m.id for _, r in records for m in r.entities))
        new_r = list(dict.fromkeys(relation_id_for(x.source_id, x.target_id) for _, r in records for x in r.relations))
        before_e = self.graph.entities(lost_e + new_e)
        before_r = self.graph.relations(lost_r + new_r)

        entities: dict[str, Entity] = {}
        relations: dict[str, Relation] = {}
        # rebuild what the removal touches from the remaining chunks' stored records
        rebuild_e = [e for e in lost_e if e in before_e]
        rebuild_r = [r for r in lost_r if r in before_r]
        remaining = {
            c
            for rec in [*(before_e[e] for e in rebuild_e), *(before_r[r] for r in rebuild_r)]
            for c in rec.source_chunk_ids
            if c not in plan.removed
        }
        stored = self.graph.extractions(sorted(remaining))
        for eid in rebuild_e:
            entity = new_entity(eid, "")
            for chunk_id in before_e[eid].source_chunk_ids:
                if chunk_id in plan.removed or chunk_id not in stored:
                    continue
                for m in stored[chunk_id].entities:
                    if m.id == eid:
                        entity.name = entity.name or m.name
                        fold_entity(entity, m, chunk_id)
            entities[eid] = entity
        for rid in rebuild_r:
            held = before_r[rid]
            relation = new_relation(pair_id(held.source, held.target))
            for chunk_id in held.source_chunk_ids:
                if chunk_id in plan.removed or chunk_id not in stored:
                    continue
                for x in stored[chunk_id].relations:
                    if relation_id_for(x.source_id, x.target_id) == rid:
                        fold_relation(relation, x, chunk_id)
            relations[rid] = relation
        # fold the new records onto the stored profiles
        for _, record in records:
            for m in record.entities:
                entity = entities.get(m.id)
                if entity is None:
                    entity = copy_entity(before_e[m.id]) if m.id in before_e else new_entity(m.id, m.name)
                    entities[m.id] = entity
                entity.name = entity.name or m.name
                fold_entity(entity, m, record.chunk_id)
            for x in record.relations:
                rid = relation_id_for(x.source_id, x.target_id)
                relation = relations.get(rid)
                if relation is None:
                    relation = copy_relation(before_r[rid]) if rid in before_r else new_relation(pair_id(x.source_id, x.target_id))
                    relations[rid] = relation
                fold_relation(relation, x, record.chunk_id)

        # settle: deletions, descriptions, what changed
        jobs: list[tuple[Any, str, list[str]]] = []
        for eid, entity in entities.items():
            before = before_e.get(eid)
            if not entity.source_chunk_ids:
                if before is not None:
                    plan.deleted_entities.append(eid)
                continue
            if before is not None and before.descriptions == entity.descriptions and before.name == entity.name:
                entity.description = before.description
            else:
                jobs.append((entity, entity.name, entity.descriptions))
        for rid, relation in relations.items():
            before = before_r.get(rid)
            if not relation.source_chunk_ids:
                if before is not None:
                    plan.deleted_relations.append(rid)
                    plan.degree_refresh.update((relation.source, relation.target))
                continue
            if before is None:
                plan.degree_refresh.update((relation.source, relation.target))
            if before is not None and before.descriptions == relation.descriptions:
                relation.description = before.description
            else:
                jobs.append((relation, "", relation.descriptions))
        names = {eid: e.name for eid, e in entities.items() if e.source_chunk_ids}
        missing = {x for r in relations.values() for x in (r.source, r.target) if x not in names}
        names.update({eid: row[0] for eid, row in self.graph.entity_rows(missing).items()})
        subjects = [s or f"{names.get(rec.source, rec.source)} and {names.get(rec.target, rec.target)}" for rec, s, _ in jobs]
        summaries = await asyncio.gather(*(self.summarizer.asummarize(subject, list(fragments)) for subject, (_, _, fragments) in zip(subjects, jobs)))
        for (rec, _, _), text in zip(jobs, summaries):
            rec.description = text

        deleted_e = set(plan.deleted_entities)
        deleted_r = set(plan.deleted_relations)
        plan.entities = {eid: e for eid, e in entities.items() if eid not in deleted_e and e.source_chunk_ids and e != before_e.get(eid)}
        plan.relations = {rid: r for rid, r in relations.items() if rid not in deleted_r and r.source_chunk_ids and r != before_r.get(rid)}

        # vectors of what a search would now see differently
        renamed = {eid for eid, e in plan.entities.items() if eid not in before_e or before_e[eid].name != e.name}
        embed_e = [e for eid, e in plan.entities.items() if eid not in before_e or entity_text(before_e[eid]) != entity_text(e)]
        rel_ids = set(plan.relations)
        if renamed & set(before_e):
            extra = [row[0] for row in self.graph.incident(renamed & set(before_e)) if row[0] not in rel_ids and row[0] not in deleted_r]
            for rid, rel in self.graph.relations(extra).items():
                plan.relations.setdefault(rid, rel)
        embed_r = []
        for rid, rel in plan.relations.items():
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
            plan.entity_vectors = ([e.id for e in embed_e], await self.embed([entity_text(e) for e in embed_e]))
        if embed_r:
            plan.relation_vectors = ([r for r, _ in embed_r], await self.embed([t for _, t in embed_r]))
        if renamed:
            ordered = sorted(renamed)
            todo = [plan.entities[e].name for e in ordered]
            known = {e: name_vectors[entity_key(plan.entities[e].name)] for e in ordered if entity_key(plan.entities[e].name) in name_vectors}
            rest = [e for e in ordered if e not in known]
            if rest:
                fresh = await self.embed([plan.entities[e].name for e in rest])
                known.update({e: fresh[i] for i, e in enumerate(rest)})
            plan.name_vectors = (ordered, np.vstack([known[e] for e in ordered]) if todo else None)
        plan.degree_refresh.update(e for e in plan.entities if e not in before_e)
        self.last_plan_stats = {
            "chunks_added": len(records),
            "chunks_removed": len(plan.removed),
            "entities_written": len(plan.entities),
            "relations_written": len(plan.relations),
            "entities_deleted": len(plan.deleted_entities),
            "relations_deleted": len(plan.deleted_relations),
            "summaries": len(jobs),
            "resolution_merges": plan.merges,
        }
        return plan

    def _apply(self, db: Any, plan: _Plan) -> None:
        for document_id, record in plan.records:
            GraphRecords.put_extraction(db, document_id, record)
        GraphRecords.put_mentions(db, plan.mentions)
        GraphRecords.delete_rows(db, "lightrag_relations", "id", plan.deleted_relations)
        GraphRecords.delete_rows(db, "lightrag_entities", "id", plan.deleted_entities)
        for entity in plan.entities.values():
            GraphRecords.put_entity(db, entity)
        for relation in plan.relations.values():
            GraphRecords.put_relation(db, relation)
        GraphRecords.refresh_degrees(db, [e for e in plan.degree_refresh if e not in set(plan.deleted_entities)])
        if self.store.manifest.embedding_dimension is not None:
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
    def as_retriever(self, k: int = 4, mode: str | None = None, **kwargs: Any) -> Any:
        """A :class:`~rhizome.lightrag.query.LightRAGRetriever`; ``kwargs`` are its options
        (``top_k``, ``cosine_threshold``, token budgets, ``kinds``...)."""
        from rhizome.lightrag.query import LightRAGRetriever

        return LightRAGRetriever(self, k=k, mode=self.check_mode(mode) or "hybrid", **kwargs)

    async def aanswer(self, question: str, *, mode: str | None = None, k: int = 4) -> Any:
        """Retrieve with ``mode`` and answer over LightRAG's three-block context (entities,
        relations, chunks), citing the items used; extractive without a chat model."""
        from rhizome.lightrag.answer import aanswer

        return await aanswer(self.as_retriever(k=k, mode=mode), question, self.llm)

    def persist(self, path: str | Path | None = None) -> Path:
        if path is not None and self.store.manifest.embedding_dimension is not None:
            for name in (self.ENTITY_COLLECTION, self.RELATION_COLLECTION, self.NAME_COLLECTION):
                self.store.collection(name)
        return super().persist(path)


__all__ = ["LightRAGIndex"]
