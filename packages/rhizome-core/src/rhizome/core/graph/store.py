"""The entity graph as a kernel layer: per-chunk extractions folded into entity and relation profiles.

:class:`EntityGraphStore` owns, under one table prefix of an index's store:

* ``<prefix>_extractions`` — each chunk's :class:`~rhizome.core.graph.mentions.ChunkExtraction`,
  its mentions resolved to entity ids (so a delete rebuilds shared profiles without extracting);
* ``<prefix>_mentions`` — one row per chunk and surface name, with the keys entity resolution
  looks names up by (kept only with resolution on: without it a name is its own entity);
* ``<prefix>_entities`` and ``<prefix>_relations`` — the profiles (relations looked up by either
  endpoint: the graph's edge list), a long profile's citations and fragments as rows of
  ``<prefix>_citations`` and ``<prefix>_fragments`` (:mod:`rhizome.core.graph.lists`);
* ``<prefix>_pending_summaries`` — profiles whose summary waits for the end of an insert call;
* three vector collections: entity profiles, relation profiles, entity names.

A change is planned outside the write transaction and written inside it:
:meth:`EntityGraphStore.plan` resolves the new mentions, re-folds what the removed chunks
supported from the remaining chunks' stored mentions, folds the new mentions onto the stored
profiles, settles their descriptions (summaries run as a resumable stage) and embeds only the
profiles a search would now see differently; :meth:`EntityGraphStore.write` stores the
:class:`GraphChange`. Either way a profile ends as one insert call of the remaining documents
would make it, so an insert followed by the delete of what it added gives back exactly the
records held before. :meth:`EntityGraphStore.settle` summarises and embeds what an insert call
left waiting. The fold rules are :mod:`rhizome.core.graph.profiles`; a method's choices are its
:class:`~rhizome.core.graph.profiles.FoldPolicy`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from rhizome.core.extraction.schema import Extraction, clean_name, entity_key
from rhizome.core.graph.entity_graph import Edges, EntityGraph, StoredRecords
from rhizome.core.graph.lists import (
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
from rhizome.core.graph.mentions import ChunkExtraction, EntityMention, Mention, PendingSummary
from rhizome.core.graph.profiles import (
    FoldPolicy,
    Seen,
    copy_entity,
    copy_relation,
    covered,
    fold_entity,
    fold_relation,
    new_entity,
    new_relation,
    pieces,
    set_summary,
    skip_stored,
)
from rhizome.core.graph.resolution import (
    EntityResolver,
    Known,
    Lookup,
    NameItem,
    acronym_key,
    initials,
    normalise_name,
)
from rhizome.core.graph.summarize import DescriptionSummarizer
from rhizome.core.index.stages import arun_stage
from rhizome.core.progress import phase
from rhizome.core.retrieval.evidence import EvidenceGraph, FactGraph
from rhizome.core.store.storage import Connection, IndexStore
from rhizome.core.types import Community, Entity, Relation

Embed = Callable[..., Awaitable[Any]]
"""``await embed(texts, what=label)``: the index's embedder (:meth:`BaseIndex.embed`)."""
Vectors = tuple[list[str], Any]
"""Ids and their vectors, rows in order (``([], None)``: none)."""


@dataclass
class GraphChange:
    """Everything one insert batch or delete changes in the entity graph, computed before its
    transaction (:meth:`EntityGraphStore.plan`) and stored inside it (:meth:`EntityGraphStore.write`).

    The id lists say what changed, for a method to react to (re-cluster around
    :attr:`touched_entities`, re-embed what it derives from a profile, ...)."""

    removed_chunks: set[str] = field(default_factory=set)
    records: list[ChunkExtraction] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    """The profiles to write, as stored (a long profile: counts of its lists, not the lists)."""
    added_entities: list[str] = field(default_factory=list)
    added_relations: list[str] = field(default_factory=list)
    removed_entities: list[str] = field(default_factory=list)
    removed_relations: list[str] = field(default_factory=list)
    rows: list[tuple[str, int, list[str], int, list[str]]] = field(default_factory=list)
    """Citation and fragment rows to write (:meth:`ProfileLists.append`)."""
    dropped: list[Any] = field(default_factory=list)
    """Profiles (as stored) whose rows go: removed ones, and rebuilt ones written again whole."""
    entity_vectors: Vectors = field(default_factory=lambda: ([], None))
    relation_vectors: Vectors = field(default_factory=lambda: ([], None))
    name_vectors: Vectors = field(default_factory=lambda: ([], None))
    merges: int = 0
    """Names entity resolution joined to an entity of another name."""
    pending: list[str] = field(default_factory=list)
    """Profiles (``e:``/``r:`` keys) to summarise when the insert call finishes."""
    unembedded: list[str] = field(default_factory=list)
    """Profiles whose text changed and whose vectors wait for the insert call's end (a batch
    of an insert call embeds nothing a later batch may change again)."""
    settled: list[str] = field(default_factory=list)
    """Profiles no longer waiting for a summary (summarised now, or removed)."""
    summaries: int = 0
    """Summaries the model wrote for this change (not those a resumed stage had kept)."""
    stored_entities: dict[str, Entity] = field(default_factory=dict)
    stored_relations: dict[str, Relation] = field(default_factory=dict)
    """The profiles the change read, as they were stored before it (a method comparing what a
    profile showed before and after, as GraphRAG's reports do)."""
    extra: Any = None
    """What the method planned beside the layer's change, for its own writes in the same
    transaction (:meth:`~rhizome.core.index.entity_index.EntityGraphIndex._apply`): GraphRAG's
    community and edge-table updates, HippoRAG's synonymy edges."""

    @property
    def changed_entities(self) -> list[str]:
        """Entities that were stored and are written again (their profile changed)."""
        added = set(self.added_entities)
        return [e for e in self.entities if e not in added]

    @property
    def changed_relations(self) -> list[str]:
        added = set(self.added_relations)
        return [r for r in self.relations if r not in added]

    @property
    def touched_entities(self) -> set[str]:
        """Entities added, changed or removed, and the endpoints of every relation written or
        removed: where the graph's shape or content changed."""
        touched = {*self.entities, *self.removed_entities}
        for relation in self.relations.values():
            touched.update((relation.source, relation.target))
        return touched

    def counts(self) -> dict[str, int]:
        """What the change did, as index stats."""
        return {
            "chunks_added": len(self.records),
            "chunks_removed": len(self.removed_chunks),
            "entities_written": len(self.entities),
            "relations_written": len(self.relations),
            "entities_deleted": len(self.removed_entities),
            "relations_deleted": len(self.removed_relations),
            "summaries_written": self.summaries,
            "resolution_merges": self.merges,
            "entity_embeddings": len(self.entity_vectors[0]),
            "relation_embeddings": len(self.relation_vectors[0]),
        }


@dataclass
class _Folding:
    """The working state of one plan: the profiles folded so far and what they were stored as."""

    before_e: dict[str, Entity]
    before_r: dict[str, Relation]
    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    seen: Seen = field(default_factory=dict)
    """The folded profiles' lists as sets, for the whole plan."""
    start: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Stored profiles folded onto their rows: the citations and fragments the rows hold."""
    held_sources: dict[str, list[str]] = field(default_factory=dict)
    held_fragments: dict[str, list[str]] = field(default_factory=dict)
    """The whole lists of the rebuilt profiles, as stored."""
    rebuilt: set[str] = field(default_factory=set)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Citations and fragments of each folded profile once the change is written."""
    names: dict[str, str] = field(default_factory=dict)
    """Display names of the entities the folded profiles name, once the change is written."""

    @functools.cached_property
    def stored_as(self) -> dict[str, Entity | Relation]:
        """The stored profiles the plan read, by profile key."""
        held: list[Entity | Relation] = [*self.before_e.values(), *self.before_r.values()]
        return {profile_key(r): r for r in held}

    def records(self) -> list[Entity | Relation]:
        return [*self.entities.values(), *self.relations.values()]


class _EntityId(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = ""


class _MentionIds(BaseModel):
    """A per-chunk record read for its entity ids alone."""

    model_config = ConfigDict(extra="ignore")

    chunk_id: str
    entities: list[_EntityId] = []


SETTLE_PART = 50_000
"""Waiting profiles :meth:`EntityGraphStore.settle` summarises, embeds and stores at a time (their
vectors: 77 MB at 384 dimensions)."""


class EntityGraphStore:
    """An index's entity graph: its tables, collections and fold rules (see the module docstring).

    ``embed`` is the index's embedder (:meth:`~rhizome.core.index.base.BaseIndex.embed`);
    ``summarizer`` writes a profile's value once its fragments grow past its budget;
    ``resolver`` joins new names to known entities when ``resolution`` is on (else only the
    same surface form is one entity). Tables and collections are named ``<prefix>_<role>``;
    ``tables`` (roles ``entities``, ``relations``) and ``collections`` (``entities``,
    ``relations``, ``names``) rename them, for a method whose indexes had other names."""

    def __init__(
        self,
        store: Any,
        prefix: str,
        *,
        embed: Embed,
        summarizer: DescriptionSummarizer,
        resolver: EntityResolver,
        resolution: bool = True,
        policy: FoldPolicy | None = None,
        tables: Mapping[str, str] | None = None,
        collections: Mapping[str, str | None] | None = None,
    ) -> None:
        tables = {"entities": f"{prefix}_entities", "relations": f"{prefix}_relations", **(tables or {})}
        names = {"entities": f"{prefix}_entities", "relations": f"{prefix}_relations", "names": f"{prefix}_names", **(collections or {})}
        self.store = store
        self.entities = store.table(tables["entities"], Entity)
        self.relations = store.table(tables["relations"], Relation, lookups=("source", "target"))
        self.extractions = store.table(f"{prefix}_extractions", ChunkExtraction, key="chunk_id")
        self.mentions = store.table(f"{prefix}_mentions", Mention, lookups=("chunk_id", "key", "norm", "initials", "acronym"))
        self.pending = store.table(f"{prefix}_pending_summaries", PendingSummary)
        self.lists = ProfileLists(store, prefix)
        self.entity_collection = names["entities"]
        """The entity profile vectors (``None``: the method keeps none, its policy has no ``entity_text``)."""
        self.relation_collection: str = names["relations"] or f"{prefix}_relations"
        """The relation profile vectors (every method keeps them: they are the facts a query is matched to)."""
        store.out_of_core.add(self.relation_collection)  # the largest of a graph (a few facts a passage), searched for its nearest few
        self.name_collection = names["names"]
        self.summary_stage = f"{prefix}.summary"
        self.adopted_flag = f"{prefix}.graph_layer"
        """Meta flag: the per-chunk records are this layer's (an index its method wrote before it
        used the layer keeps kernel extractions, which :meth:`adopt_once` converts)."""
        self.rows_flag = f"{prefix}.list_rows"
        """Meta flag: every long profile keeps its citations and fragments as rows."""
        self.embed = embed
        self.summarizer = summarizer
        self.resolver = resolver
        self.resolution = resolution
        self.policy = policy or FoldPolicy()
        if not store.readonly and not store.get_meta(self.rows_flag, False):
            # an index written before the lists were rows: move them (once, on a writable open)
            with store.transaction() as db:
                self.lists.migrate(db, (self.entities, self.relations))
                IndexStore.set_meta(db, self.rows_flag, True)

    # -- reading -----------------------------------------------------------------------------------
    def generations(self) -> tuple[int, ...]:
        """The generations of the profile tables and their rows: what a view of the graph is keyed by."""
        return (self.entities.generation(), self.relations.generation(), *self.lists.generation())

    def all_entities(self) -> list[Entity]:
        """Every entity profile (sorted by id), with its citations and fragments."""
        return self.lists.whole(self.entities.all())

    def all_relations(self) -> list[Relation]:
        """Every relation profile (sorted by id), with its citations and fragments."""
        return self.lists.whole(self.relations.all())

    def entity(self, name: str) -> Entity | None:
        """The profile a name resolves to (exact surface form or entity id), or ``None``."""
        key = entity_key(name)
        found = self.mentions.first("key", [key]).get(key)
        entity = self.entities.one(found.entity_id if found else key)
        return None if entity is None else self.lists.whole([entity])[0]

    def whole_entities(self, ids: Iterable[str]) -> dict[str, Entity]:
        """The entity profiles ``ids`` (those stored), with their citations and fragments."""
        return {e.id: e for e in self.lists.whole(list(self.entities.get(ids).values()))}

    def whole_relations(self, ids: Iterable[str]) -> dict[str, Relation]:
        """The relation profiles ``ids`` (those stored), with their citations and fragments."""
        return {r.id: r for r in self.lists.whole(list(self.relations.get(ids).values()))}

    def edges(self) -> Edges:
        """Every relation's endpoints and weight, read by columns (by relation id)."""
        return Edges((rid, s, t, 1.0 if w is None else float(w)) for rid, s, t, w in self.relations.fields("source", "target", "weight"))

    def view(self, communities: Mapping[str, Community] | None = None) -> EntityGraph:
        """The graph a search reads, of the current profiles and ``communities``: each
        relation's endpoints and weight, each entity's name and cited chunks, read by columns
        (:meth:`RecordTable.fields`); a record is read whole only when a search asks for it."""
        entities = self.lists.every_source(self.entities, "name")
        return EntityGraph.of(
            StoredRecords((eid for eid, _, _ in entities), self.whole_entities),
            self.edges(),
            dict(communities or {}),
            sources={eid: cited for eid, cited, _ in entities},
            names={eid: name for eid, _, name in entities},
            read_relations=self.whole_relations,
        )

    def evidence_graph(self, more_edges: Iterable[tuple[str, str, float]] = (), *, passage_nodes: bool = True) -> EvidenceGraph:
        """The entity–passage graph of the current profiles: entities with the chunks they cite,
        relations weighted by the policy's weight (0 counts as 1), and ``more_edges`` a method
        keeps beside them (HippoRAG's synonymy edges); ``passage_nodes``: see
        :class:`~rhizome.core.retrieval.evidence.EvidenceGraph`."""
        passages = {eid: chunk_ids for eid, chunk_ids in self.lists.every_source(self.entities) if chunk_ids}
        edges = [(source, target, float(weight or 0) or 1.0) for _, source, target, weight in self.relations.fields("source", "target", "weight")]
        edges += more_edges
        return EvidenceGraph(passages, edges, passage_nodes=passage_nodes)

    def fact_graph(self) -> FactGraph:
        """The relations and the chunks each cites, for chains of facts."""
        return FactGraph((fid, source, target, chunk_ids) for fid, chunk_ids, source, target in self.lists.every_source(self.relations, "source", "target"))

    def first_seen(self, chunk_ids: Sequence[str]) -> list[str]:
        """The entity ids the chunks ``chunk_ids`` mention, in the order of their first mention
        there (chunk by chunk, mention by mention): the order a method that builds on the whole
        graph at once, as ArchRAG's layers, reads the entities in."""
        order: dict[str, None] = {}
        for record in self.extractions.view(_MentionIds).get(chunk_ids).values():
            order.update(dict.fromkeys(m.id for m in record.entities))
        return list(order)

    def degrees(self, entity_ids: Sequence[str]) -> dict[str, int]:
        """Relations per entity."""
        out = self.relations.count_by("source", entity_ids)
        for eid, n in self.relations.count_by("target", entity_ids).items():
            out[eid] = out.get(eid, 0) + n
        return out

    def names(self, entity_ids: Iterable[str]) -> dict[str, str]:
        """Display names of stored entities, by id."""
        return {eid: e.name for eid, e in self.entities.get(entity_ids).items()}

    # -- resolution ----------------------------------------------------------------------------------
    def _lookup(self) -> Lookup:
        with_descriptions = self.resolver.llm is not None and self.resolver.confirm

        def known(field_: str, values: list[str]) -> dict[str, list[Known]]:
            mentions = self.mentions.find(field_, [v for v in values if v])
            profiles = self.entities.get(m.entity_id for m in mentions)
            out: dict[str, list[Known]] = {}
            for m in mentions:
                entity = profiles.get(m.entity_id)
                if entity is None:
                    continue
                bucket = out.setdefault(getattr(m, field_), [])
                if all(k.id != entity.id for k in bucket):
                    bucket.append(Known(entity.id, entity.name, entity.type, entity.description if with_descriptions else ""))
            return out

        def by_key(keys: list[str]) -> dict[str, str]:
            return {key: m.entity_id for key, m in self.mentions.first("key", keys).items()}

        def by_vector(vectors: np.ndarray, k: int) -> list[list[tuple[Known, float]]]:
            empty: list[list[tuple[Known, float]]] = [[] for _ in range(len(vectors))]
            if self.store.embedding_dimension is None or not len(vectors):
                return empty
            collection = self.store.collection(self.name_collection, vectors.shape[1])
            if not len(collection):
                return empty
            results = collection.search(vectors, k)
            profiles = self.entities.get(eid for row in results for eid, _ in row)
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

    async def _resolve(self, records: list[ChunkExtraction], change: GraphChange) -> dict[str, np.ndarray]:
        """Give every mention its entity id; returns the name vectors computed on the way."""
        ordered = _names_of(records)
        vectors: dict[str, np.ndarray] = {}
        if not self.resolution or not ordered:
            mapping = {it.key: it.key for it in ordered}
            if ordered:
                mapping.update(self._lookup().by_key([it.key for it in ordered]))
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
            change.merges += len(outcome.merges)
        for record in records:
            change.mentions += _assign(record, mapping, rows=self.resolution)
            change.records.append(record)
        return vectors

    def adopt(self, db: Connection, records: list[ChunkExtraction]) -> None:
        """Store per-chunk records of chunks whose profiles are stored already, each name its
        own entity (no resolution), and let profiles stored with a value but no fragments (as
        methods kept them before this layer) hold that value as their first fragment: what a
        method's index written before it adopted the layer needs on its first writable open."""
        mapping = {it.key: it.key for it in _names_of(records)}
        mentions = [m for record in records for m in _assign(record, mapping, rows=self.resolution)]
        self.extractions.put(db, records)
        self.mentions.put(db, mentions)
        for table in (self.entities, self.relations):
            fixed: list[Any] = []
            rows: list[tuple[str, int, list[str], int, list[str]]] = []
            for r in table.all():
                if not r.description or r.descriptions or counts(r)[1]:
                    continue
                if in_rows(r):  # a long one, its lists moved to rows already
                    rows.append((profile_key(r), counts(r)[0], [], 0, [r.description]))
                    fixed.append(head(r, counts(r)[0], 1))
                else:
                    fixed.append(r.model_copy(update={"descriptions": [r.description]}))
            self.lists.append(db, rows)
            table.put(db, fixed)

    def adopt_once(self, convert: Callable[[Extraction], ChunkExtraction]) -> None:
        """On a writable open of an index its method wrote before it used this layer (meta
        :attr:`adopted_flag` unset): the kernel extractions it stored become the layer's
        per-chunk records (``convert``, then :meth:`adopt`), and the flag is set."""
        if self.store.readonly or self.store.get_meta(self.adopted_flag, False):
            return
        records = [convert(x) for x in self.extractions.view(Extraction).all()]
        with self.store.transaction() as db:
            self.adopt(db, records)
            IndexStore.set_meta(db, self.adopted_flag, True)

    # -- planning ------------------------------------------------------------------------------------
    async def plan(self, records: list[ChunkExtraction], removed: Sequence[str], *, defer: bool = False) -> GraphChange:
        """What adding ``records`` (one per new chunk) and removing the chunks ``removed`` changes.

        A profile whose fragments grew past the summary threshold is summarised here, unless
        ``defer`` (an insert call's batches): then it waits for :meth:`settle` at the end of the
        call, so that a call summarises each profile at most once however many of its batches
        touch it."""
        change = GraphChange(removed_chunks=set(removed))
        name_vectors = await self._resolve(records, change)
        key = self.policy.relation_id
        old = self.extractions.get(removed)
        lost_e = list(dict.fromkeys(m.id for r in old.values() for m in r.entities))
        lost_r = list(dict.fromkeys(key(x.source_id, x.target_id, x.predicate) for r in old.values() for x in r.relations))
        new_e = list(dict.fromkeys(m.id for r in records for m in r.entities))
        new_r = list(dict.fromkeys(key(x.source_id, x.target_id, x.predicate) for r in records for x in r.relations))
        # the stored records: their lists stay in their rows (rhizome.core.graph.lists)
        state = _Folding(self.entities.get(lost_e + new_e), self.relations.get(lost_r + new_r))
        self._rebuild(state, [e for e in lost_e if e in state.before_e], [r for r in lost_r if r in state.before_r], change.removed_chunks)
        self._fold(state, records)
        jobs = self._settle_values(state, change)
        state.names = self._names(state)
        await self._summarise(state, jobs, change, defer)
        self._layout(state, change)
        await self._embed(state, change, name_vectors, defer)
        change.stored_entities, change.stored_relations = state.before_e, state.before_r
        return change

    def _rebuild(self, state: _Folding, entity_ids: list[str], relation_ids: list[str], removed: set[str]) -> None:
        """Fold again, from the remaining chunks' stored mentions, the profiles a removal touches:
        these hold their whole lists here, and their rows are written again whole."""
        rebuilt = [state.before_e[e] for e in entity_ids] + [state.before_r[r] for r in relation_ids]
        state.held_sources = self.lists.sources(rebuilt)
        state.held_fragments = self.lists.texts(rebuilt)
        state.rebuilt = {profile_key(r) for r in rebuilt}
        remaining = {c for ids in state.held_sources.values() for c in ids if c not in removed}
        stored = self.extractions.get(sorted(remaining))

        def chunks(profile: str) -> Iterable[ChunkExtraction]:
            return (stored[c] for c in state.held_sources[profile] if c not in removed and c in stored)

        for eid in entity_ids:
            entity = new_entity(eid, "")
            for record in chunks(entity_profile(eid)):
                for m in record.entities:
                    if m.id == eid:
                        entity.name = entity.name or m.name
                        fold_entity(entity, m, record.chunk_id, state.seen, self.policy)
            state.entities[eid] = entity
        for rid in relation_ids:
            held = state.before_r[rid]
            relation = new_relation(self.policy.relation_key(held.source, held.target, held.predicate))
            for record in chunks(relation_profile(rid)):
                for x in record.relations:
                    if self.policy.relation_id(x.source_id, x.target_id, x.predicate) == rid:
                        fold_relation(relation, x, record.chunk_id, state.seen, self.policy)
            state.relations[rid] = relation

    def _fold(self, state: _Folding, records: list[ChunkExtraction]) -> None:
        """Fold the new mentions onto the stored profiles. A stored profile whose lists are rows
        is folded onto them: its lists here collect only what this change adds, after the
        values its rows hold (``state.start``), and the folds skip what the rows hold already
        (read by key, not whole); a short profile holds its lists itself and is folded as it is."""
        key = self.policy.relation_id
        pairs: tuple[list[tuple[str, str]], list[tuple[str, str]]] = ([], [])
        for record in records:
            for m in record.entities:
                if m.id in state.before_e and m.id not in state.entities and in_rows(state.before_e[m.id]):
                    pairs[0].append((entity_profile(m.id), record.chunk_id))
                    pairs[1].append((entity_profile(m.id), m.description.strip()))
            for x in record.relations:
                rid = key(x.source_id, x.target_id, x.predicate)
                if rid in state.before_r and rid not in state.relations and in_rows(state.before_r[rid]):
                    pairs[0].append((relation_profile(rid), record.chunk_id))
                    pairs[1].append((relation_profile(rid), x.description.strip()))
        cited, known = self.lists.held(*pairs)
        held_by: dict[str, tuple[set[str], set[str]]] = {}
        for profile, chunk_id in cited:
            held_by.setdefault(profile, (set(), set()))[0].add(chunk_id)
        for profile, text in known:
            held_by.setdefault(profile, (set(), set()))[1].add(text)

        def onto_stored(record: Any) -> Any:
            if in_rows(record):
                profile = profile_key(record)
                state.start[profile] = counts(record)
                skip_stored(state.seen, record, *held_by.get(profile, (set(), set())))
            return record

        with phase("merging extractions", len(records), "chunk") as step:
            for record in records:
                for m in record.entities:
                    entity = state.entities.get(m.id)
                    if entity is None:
                        held_e = state.before_e.get(m.id)
                        entity = onto_stored(copy_entity(held_e)) if held_e is not None else new_entity(m.id, m.name)
                        state.entities[m.id] = entity
                    entity.name = entity.name or m.name
                    fold_entity(entity, m, record.chunk_id, state.seen, self.policy)
                for x in record.relations:
                    rid = key(x.source_id, x.target_id, x.predicate)
                    relation = state.relations.get(rid)
                    if relation is None:
                        held_r = state.before_r.get(rid)
                        if held_r is None:
                            relation = new_relation(self.policy.relation_key(x.source_id, x.target_id, x.predicate))
                        else:
                            relation = onto_stored(copy_relation(held_r))
                        state.relations[rid] = relation
                    fold_relation(relation, x, record.chunk_id, state.seen, self.policy)
                step.advance()

    def _settle_values(self, state: _Folding, change: GraphChange) -> list[Entity | Relation]:
        """Sizes, removals, and the profiles whose value must be made again (returned)."""
        stored_as = state.stored_as
        jobs: list[Entity | Relation] = []
        for rec in state.records():
            profile = profile_key(rec)
            before = stored_as.get(profile)
            first_source, first_fragment = state.start.get(profile, (0, 0))
            state.sizes[profile] = (first_source + len(rec.source_chunk_ids), first_fragment + len(rec.descriptions))
            if not state.sizes[profile][0]:
                if before is not None:
                    (change.removed_entities if isinstance(rec, Entity) else change.removed_relations).append(rec.id)
                continue
            # no fragment added (folded onto the rows) or the same fragments (rebuilt, or held)
            if profile in state.start:
                same = not rec.descriptions
            else:
                same = before is not None and state.held_fragments.get(profile, before.descriptions) == rec.descriptions
            if isinstance(rec, Entity):
                same = same and isinstance(before, Entity) and before.name == rec.name
            if same and before is not None:
                rec.description = before.description
            else:
                jobs.append(rec)
        change.settled += [entity_profile(e) for e in change.removed_entities] + [relation_profile(r) for r in change.removed_relations]
        change.dropped = [state.before_e[e] for e in change.removed_entities] + [state.before_r[r] for r in change.removed_relations]
        return jobs

    def _names(self, state: _Folding) -> dict[str, str]:
        """Display names of every entity the folded profiles name, as they will be stored."""
        names = {eid: e.name for eid, e in state.entities.items() if state.sizes[entity_profile(eid)][0]}
        missing = {x for r in state.relations.values() for x in (r.source, r.target) if x not in names}
        names.update(self.names(missing))
        return names

    def _subject(self, rec: Entity | Relation, names: dict[str, str]) -> str:
        """What a profile's summary is about: the entity's name, or the relation's two names."""
        if isinstance(rec, Entity):
            return rec.name
        return f"{names.get(rec.source, rec.source)} and {names.get(rec.target, rec.target)}"

    async def _summarise(self, state: _Folding, jobs: list[Entity | Relation], change: GraphChange, defer: bool) -> None:
        """Make the value of each profile in ``jobs``: its fragments joined, or a summary."""
        stored_as = state.stored_as
        # a profile already waiting for its summary that only gained fragments still needs it
        # (both the fragment count and the length only grow): it keeps its stored value, and
        # is not read again batch after batch of a long insert call
        waiting = self.pending.get(profile_key(rec) for rec in jobs) if defer else {}
        waiting_before = {key for key, row in waiting.items() if row.summary} - state.rebuilt
        # the fragments since its last summary of every other profile: those its rows hold
        # (fewer than the summary rule allows, or it would be waiting) and those added here
        stored_since = []
        for rec in jobs:
            if (profile := profile_key(rec)) in state.start and profile not in waiting_before:
                before = stored_as[profile]
                stored_since.append((before, covered(before)))
        since = self.lists.tails(stored_since)
        stage_jobs = {}
        for number, rec in enumerate(jobs):
            profile = profile_key(rec)
            if profile in waiting_before:
                rec.description = stored_as[profile].description
                change.pending.append(profile)
                continue
            fragments = since[profile] + rec.descriptions if profile in state.start else rec.descriptions[covered(rec):]
            parts = pieces(rec, fragments)
            if self.policy.descriptions == "first":  # the first fragment stands, never summarised
                rec.description = fragments[0] if fragments else ""
                change.settled.append(profile)
            elif parts and not fragments:  # nothing arrived since its summary (a new name or source)
                rec.description = parts[0]
                change.settled.append(profile)
            elif (joined := self.summarizer.joined(parts)) is not None:
                rec.description = joined
                change.settled.append(profile)
            elif defer:  # joined until the insert call ends and summarises it once
                rec.description = "\n".join(dict.fromkeys(p.strip() for p in parts if p.strip()))
                change.pending.append(profile)
            else:
                subject = self._subject(rec, state.names)
                stage_jobs[number] = self.summarizer.job(subject, parts)
                change.settled.append(profile)
        summaries, change.summaries = await arun_stage(self.store, self.summary_stage, stage_jobs, label="summarising profiles")
        for number, text in summaries.items():
            rec = jobs[number]
            set_summary(rec, text, state.sizes[profile_key(rec)][1])

    def _layout(self, state: _Folding, change: GraphChange) -> None:
        """The profiles as stored (a long one: counts instead of its lists) and the rows they add
        or rewrite."""
        stored_as = state.stored_as
        for rec in state.records():
            profile = profile_key(rec)
            if not state.sizes[profile][0]:
                continue
            before = stored_as.get(profile)
            if before is None:
                (change.added_entities if isinstance(rec, Entity) else change.added_relations).append(rec.id)
            long = profile in state.start or is_long(*state.sizes[profile])  # folded onto its rows: it keeps them
            if isinstance(rec, Entity):
                entity = head(rec, *state.sizes[profile]) if long else rec
                if entity != before:
                    change.entities[rec.id] = entity
            else:
                relation = head(rec, *state.sizes[profile]) if long else rec
                if relation != before:
                    change.relations[rec.id] = relation
            if profile in state.start:  # folded onto its rows
                if rec.source_chunk_ids or rec.descriptions:
                    change.rows.append((profile, state.start[profile][0], rec.source_chunk_ids, state.start[profile][1], rec.descriptions))
                continue
            # new, rebuilt or held its lists: its rows (if any) are written whole, when changed
            had_rows = before is not None and in_rows(before)
            if had_rows and long and state.held_sources[profile] == rec.source_chunk_ids and state.held_fragments[profile] == rec.descriptions:
                continue
            if had_rows:
                change.dropped.append(before)
            if long:
                change.rows.append((profile, 0, rec.source_chunk_ids, 0, rec.descriptions))

    async def _embed(self, state: _Folding, change: GraphChange, name_vectors: dict[str, np.ndarray], defer: bool) -> None:
        """Vectors of what a search would now see differently (a profile waiting for its summary
        is embedded once summarised; with ``defer``, every changed profile is embedded once, by
        :meth:`settle`). Name vectors are made at once: entity resolution reads them."""
        before_e, before_r, names = state.before_e, state.before_r, state.names
        waiting = set(change.pending)
        entity_text, relation_text = self.policy.entity_text, self.policy.relation_text
        renamed = {eid for eid, e in change.entities.items() if eid not in before_e or before_e[eid].name != e.name}
        embed_e = [
            e for eid, e in change.entities.items()
            if entity_text is not None and entity_profile(eid) not in waiting
            and (eid not in before_e or entity_text(before_e[eid]) != entity_text(e))
        ]
        if renamed & set(before_e):  # a relation embeds its endpoints' names
            touched = renamed & set(before_e)
            gone = set(change.removed_relations)
            for rel in self.relations.find("source", touched) + self.relations.find("target", touched):
                if rel.id not in change.relations and rel.id not in gone:
                    change.relations.setdefault(rel.id, rel)
                    before_r.setdefault(rel.id, rel)  # written again as it was

        def name(eid: str, fallback: str = "") -> str:
            return before_e[eid].name if eid in before_e else names.get(eid, fallback)

        embed_r = []
        for rid, rel in change.relations.items():
            if relation_profile(rid) in waiting:
                continue
            before = before_r.get(rid)
            text = relation_text(rel, names.get(rel.source, rel.source), names.get(rel.target, rel.target))
            old_text = relation_text(before, name(before.source), name(before.target)) if before is not None else None
            if text != old_text or rel.source in renamed or rel.target in renamed:
                embed_r.append((rid, text))
        if defer:  # (a profile waiting for its summary from an earlier batch stays so)
            later = [entity_profile(e.id) for e in embed_e] + [relation_profile(r) for r, _ in embed_r]
            summarised_later = {key for key, row in self.pending.get(later).items() if row.summary}
            change.unembedded = [key for key in later if key not in summarised_later]
            embed_e, embed_r = [], []
        if embed_e and entity_text is not None:
            change.entity_vectors = ([e.id for e in embed_e], await self.embed([entity_text(e) for e in embed_e], what="entities"))
        if embed_r:
            change.relation_vectors = ([r for r, _ in embed_r], await self.embed([t for _, t in embed_r], what="relations"))
        if renamed:
            ordered = sorted(renamed)
            known = {e: name_vectors[k] for e in ordered if (k := entity_key(change.entities[e].name)) in name_vectors}
            rest = [e for e in ordered if e not in known]
            if rest:
                fresh = await self.embed([change.entities[e].name for e in rest], what="entity names")
                known.update({e: fresh[i] for i, e in enumerate(rest)})
            change.name_vectors = (ordered, np.vstack([known[e] for e in ordered]))

    # -- writing (inside a transaction) ----------------------------------------------------------------
    def write(self, db: Connection, change: GraphChange) -> None:
        """Store a planned change."""
        self.pending.delete(db, change.settled)
        self.pending.put(db, [PendingSummary(id=k) for k in change.pending])
        self.pending.put(db, [PendingSummary(id=k, summary=False) for k in change.unembedded])
        self.extractions.put(db, change.records)
        self.mentions.put(db, change.mentions)
        self.relations.delete(db, change.removed_relations)
        self.entities.delete(db, change.removed_entities)
        self.lists.drop(db, change.dropped)
        self.lists.append(db, change.rows)
        self.entities.put(db, change.entities.values())
        self.relations.put(db, change.relations.values())
        if self.store.embedding_dimension is not None:
            if change.removed_entities:
                for collection in (self.entity_collection, self.name_collection):
                    if collection is not None:
                        self.store.delete_vectors(db, collection, change.removed_entities)
            if change.removed_relations:
                self.store.delete_vectors(db, self.relation_collection, change.removed_relations)
        for collection, (ids, vectors) in (
            (self.entity_collection, change.entity_vectors),
            (self.relation_collection, change.relation_vectors),
            (self.name_collection, change.name_vectors),
        ):
            if len(ids):
                self.store.put_vectors(db, collection, list(ids), vectors)

    def forget_chunks(self, db: Connection, chunk_ids: list[str]) -> None:
        """Remove the per-chunk rows of deleted chunks (their profiles were planned already)."""
        self.extractions.delete(db, chunk_ids)
        self.mentions.delete_by(db, "chunk_id", chunk_ids)

    async def settle(self) -> dict[str, int]:
        """Summarise, once, every profile an insert call left waiting for its summary
        (:meth:`plan` with ``defer``), embed every profile left waiting and store them, at most
        :data:`SETTLE_PART` profiles at a time (each part stored in one transaction, so a large
        insert call never holds every waiting profile and vector at once); returns what it did
        as index stats (summaries the model wrote, profiles embedded). A call cut short leaves
        the parts not stored waiting for the next insert, delete or refresh."""
        keys = self.pending.keys()
        done: dict[str, int] = {}
        for start in range(0, len(keys), SETTLE_PART):
            for name, n in (await self._settle(keys[start : start + SETTLE_PART])).items():
                done[name] = done.get(name, 0) + n
        return done

    async def _settle(self, keys: list[str]) -> dict[str, int]:
        rows = list(self.pending.get(keys).values())
        if not rows:
            return {}
        keys = [row.id for row in rows]
        summarise = {row.id for row in rows if row.summary}
        entities = self.entities.get(k[len(ENTITY_KEY) :] for k in keys if k.startswith(ENTITY_KEY))
        relations = self.relations.get(k[len(RELATION_KEY) :] for k in keys if k.startswith(RELATION_KEY))
        ends = {x for r in relations.values() for x in (r.source, r.target)} - set(entities)
        names = {**self.names(ends), **{eid: e.name for eid, e in entities.items()}}
        records: dict[str, Entity | Relation] = {entity_profile(k): e for k, e in entities.items()}
        records.update({relation_profile(k): r for k, r in relations.items()})
        since = self.lists.tails([(rec, covered(rec)) for key, rec in records.items() if key in summarise])
        jobs = {}
        for profile, rec in records.items():
            if profile not in summarise:
                continue
            parts = pieces(rec, since[profile])
            joined = self.summarizer.joined(parts)
            if joined is None:
                jobs[profile] = self.summarizer.job(self._subject(rec, names), parts)
            else:
                rec.description = joined
        summaries, written = await arun_stage(self.store, self.summary_stage, jobs, label="summarising profiles")
        for profile, text in summaries.items():
            set_summary(records[profile], text, counts(records[profile])[1])
        entity_text = self.policy.entity_text
        e_ids, r_ids = (list(entities) if entity_text is not None else []), list(relations)
        e_vectors = await self.embed([entity_text(entities[e]) for e in e_ids], what="entities") if e_ids and entity_text is not None else None
        r_texts = [self.policy.relation_text(r, names.get(r.source, r.source), names.get(r.target, r.target)) for r in relations.values()]
        r_vectors = await self.embed(r_texts, what="relations") if r_ids else None
        with self.store.transaction() as db:
            # (only a summarised profile changed; the others wait for their vectors alone)
            self.entities.put(db, (as_stored(e) for e in entities.values() if entity_profile(e.id) in summarise))
            self.relations.put(db, (as_stored(r) for r in relations.values() if relation_profile(r.id) in summarise))
            if e_ids:
                self.store.put_vectors(db, self.entity_collection, e_ids, e_vectors)
            if r_ids:
                self.store.put_vectors(db, self.relation_collection, r_ids, r_vectors)
            self.pending.delete(db, keys)
        return {"summaries_written": written, "entity_embeddings": len(e_ids), "relation_embeddings": len(r_ids)}


def _names_of(records: list[ChunkExtraction]) -> list[NameItem]:
    """The distinct names the records mention, in order; every relation endpoint becomes an
    entity mention of its chunk, and mentions with no name go."""
    items: dict[str, NameItem] = {}
    for record in records:
        listed = {entity_key(m.name) for m in record.entities}
        for rel in record.relations:
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
    return list(items.values())


def _assign(record: ChunkExtraction, mapping: Mapping[str, str], *, rows: bool = True) -> list[Mention]:
    """Give the record's mentions the entity ids of ``mapping`` (by name key), drop relations
    whose two names are one entity, and return the record's mention rows (none without
    ``rows``: a store without resolution looks no name up)."""
    for m in record.entities:
        m.id = mapping[entity_key(m.name)]
    kept = []
    for rel in record.relations:
        rel.source_id = mapping[entity_key(rel.source)]
        rel.target_id = mapping[entity_key(rel.target)]
        if rel.source_id != rel.target_id:  # two names of one entity: not a relation
            kept.append(rel)
    record.relations = kept
    found: dict[str, Mention] = {}
    for m in record.entities if rows else ():
        key = entity_key(m.name)
        if key not in found:
            found[key] = Mention(
                id=f"{record.chunk_id}\x1f{key}", chunk_id=record.chunk_id, key=key, name=m.name,
                norm=normalise_name(m.name), initials=initials(m.name), acronym=acronym_key(m.name), entity_id=m.id,
            )
    return list(found.values())


__all__ = ["EntityGraphStore", "GraphChange"]
