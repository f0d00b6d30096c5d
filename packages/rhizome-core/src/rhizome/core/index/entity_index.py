"""What an index built on the kernel's entity-graph layer shares.

:class:`EntityGraphIndex` is the base of an index whose records are an
:class:`~rhizome.core.graph.store.EntityGraphStore`: its insert, delete and settle hooks
and the evidence and fact graphs its searches walk (LightRAG, HippoRAG, GraphRAG, ArchRAG, the
entity-graph example); :func:`open_entity_graph` opens the layer with the index's embedder, chat
model and summary settings. :class:`StoredEntityGraph` is the mixin that builds the
:class:`~rhizome.core.graph.entity_graph.EntityGraph` searches read (the structure of the
profiles, and the communities) from the layer and a community hierarchy, and caches it until
those change (GraphRAG and ArchRAG).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rhizome.core.graph.entity_graph import EntityGraph
from rhizome.core.graph.mentions import ChunkExtraction, chunk_record
from rhizome.core.graph.profiles import FoldPolicy
from rhizome.core.graph.resolution import EntityResolver
from rhizome.core.graph.store import EntityGraphStore, GraphChange
from rhizome.core.graph.summarize import DescriptionSummarizer
from rhizome.core.index.base import BaseIndex, Batch, ChunkVectors, Stats, add_counts, batch_chunks
from rhizome.core.index.hierarchy import Hierarchy
from rhizome.core.retrieval.contract import vector_search
from rhizome.core.retrieval.evidence import (
    Chain,
    EvidenceGraph,
    EvidenceParams,
    FactGraph,
    merge_seeds,
)
from rhizome.core.store.records import RecordTable
from rhizome.core.store.storage import Connection
from rhizome.core.types import Chunk, Entity, GraphContents, Relation


class StoredEntityGraph:
    """Mixin for an :class:`EntityGraphIndex` whose communities are a
    :class:`~rhizome.core.index.hierarchy.Hierarchy` (``communities``): the graph of the profiles
    and the communities, cached until one of the tables it is built from is written.

    Each reads its tables inside its build, after the generations that key it (see
    ``BaseIndex.derived``): a graph read before its key may be older than the key, and a write
    committed in between would leave it cached as current."""

    entity_graph: EntityGraphStore
    communities: Hierarchy
    store: Any
    derived: Callable[..., Any]
    """:meth:`~rhizome.core.index.base.BaseIndex.derived` of the index this is mixed into."""

    def graph_generations(self) -> tuple[int, ...]:
        """The generations of the tables :meth:`graph` is built from."""
        return (*self.entity_graph.generations(), self.communities.groups.generation())

    def graph(self) -> EntityGraph:
        """The structure of the current entities, relations and communities, the records read
        as a search asks for them (:meth:`EntityGraphStore.view`; cached until the next change)."""
        return self.derived("graph", self.graph_generations(), lambda: self.entity_graph.view(self.communities.all()))

    def graph_contents(self) -> GraphContents:
        """The entities, relations and communities (with their reports), for export."""
        return GraphContents(self.entity_graph.all_entities(), self.entity_graph.all_relations(), list(self.communities.all().values()))


def open_entity_graph(
    index: Any,
    prefix: str,
    *,
    policy: FoldPolicy | None = None,
    resolver: EntityResolver | None = None,
    resolution: bool = False,
    min_fragments: int | None = None,
) -> EntityGraphStore:
    """The entity-graph layer of ``index`` under ``prefix``, embedding with the index's embedder
    and summarising with its chat model by its configuration's summary settings
    (:class:`~rhizome.core.index.config.ExtractionConfig`'s ``summary_max_tokens``,
    ``summary_max_input_tokens``, ``language``)."""
    c = index.config
    summarizer = DescriptionSummarizer(
        index.llm, max_tokens=c.summary_max_tokens, min_fragments=min_fragments,
        max_input_tokens=c.summary_max_input_tokens, language=c.language,
    )
    return EntityGraphStore(
        index.store, prefix, embed=index.embed, summarizer=summarizer, resolver=resolver or EntityResolver(),
        resolution=resolution, policy=policy,
    )


class EntityGraphIndex(BaseIndex[tuple[GraphChange, ChunkVectors], GraphChange]):
    """A :class:`~rhizome.core.index.base.BaseIndex` whose records are an entity-graph layer
    (``entity_graph``, set by the method's ``_setup``, e.g. with :func:`open_entity_graph`): an
    insert batch folds its chunks' records onto the profiles inside its transaction, a delete
    folds again what its chunks supported, and the summaries an insert call left waiting are
    written when the call ends. A method changes how its extractions become the layer's
    records by overriding :meth:`_records`, plans its own writes beside the layer's change in
    :meth:`_plan` (kept in :attr:`GraphChange.extra`) and makes them in :meth:`_apply`, and
    reacts to a change in :meth:`_after_change`. The evidence and fact graphs of the layer,
    which the searches walk, are cached until its tables change."""

    entity_graph: EntityGraphStore
    ENTITY_COLLECTION: ClassVar[str]
    NAME_COLLECTION: ClassVar[str]

    @property
    def entity_table(self) -> RecordTable[Entity]:
        """The layer's entity profiles."""
        return self.entity_graph.entities

    @property
    def relation_table(self) -> RecordTable[Relation]:
        """The layer's relation profiles."""
        return self.entity_graph.relations

    async def _records(self, chunks: list[Chunk]) -> list[ChunkExtraction]:
        """The layer's per-chunk records of ``chunks``: their extractions as they are."""
        return [chunk_record(x) for x in await self.extract(chunks)]

    async def _plan(self, records: list[ChunkExtraction], removed: Sequence[str], stats: Stats, *, defer: bool = False) -> GraphChange:
        """The change of adding ``records`` and removing the chunks ``removed`` (``defer``: an
        insert call's batch, whose summaries wait for the call's end), counted in ``stats``."""
        change = await self.entity_graph.plan(records, removed, defer=defer)
        add_counts(stats, change.counts())
        return change

    def _apply(self, db: Connection, change: GraphChange) -> None:
        """Write ``change`` inside the batch's transaction."""
        self.entity_graph.write(db, change)

    async def _prepare(self, batch: Batch, stats: Stats) -> tuple[GraphChange, ChunkVectors]:
        chunks = batch_chunks(batch)
        change = await self._plan(await self._records(chunks), self.replaced_chunk_ids(batch), stats, defer=True)
        return change, await self.embed_chunks(chunks)

    def _write(self, db: Connection, batch: Batch, prepared: tuple[GraphChange, ChunkVectors]) -> None:
        change, (chunk_ids, vectors) = prepared
        self._apply(db, change)
        self.put_chunk_vectors(db, chunk_ids, vectors)

    async def _prepare_delete(self, document_ids: list[str], stats: Stats) -> GraphChange:
        return await self._plan([], self.store.chunk_ids(document_ids), stats)

    def _write_delete(self, db: Connection, document_ids: list[str], prepared: GraphChange) -> None:
        self._apply(db, prepared)

    def _remove_document(self, db: Connection, document_id: str) -> int:
        self.entity_graph.forget_chunks(db, self.store.chunk_ids([document_id]))
        return super()._remove_document(db, document_id)

    async def _after_change(self, inserted: list[str], removed: list[str], stats: Stats) -> None:
        """Summarise, once, every profile an insert call left waiting, and embed it; a cut-short
        call leaves them waiting for the next insert, delete or refresh."""
        if self.entity_graph.pending.keys():
            add_counts(stats, await self.entity_graph.settle())

    # -- reading the graph -------------------------------------------------------------------------
    def entities(self) -> list[Entity]:
        """Every entity profile (sorted by id), with its citations and fragments."""
        return self.entity_graph.all_entities()

    def relations(self) -> list[Relation]:
        """Every relation profile (sorted by id), with its citations and fragments."""
        return self.entity_graph.all_relations()

    def entity(self, name: str) -> Entity | None:
        """The profile a name resolves to (exact surface form or entity id), or ``None``."""
        return self.entity_graph.entity(name)

    def graph_contents(self) -> GraphContents:
        """The entity and relation profiles (sorted by id), for export."""
        return GraphContents(self.entity_graph.all_entities(), self.entity_graph.all_relations())

    def name_collection(self) -> str:
        """The collection the names a query mentions are linked to: the entity names
        (``NAME_COLLECTION``), or the entity vectors of an index built before it had them."""
        return self.NAME_COLLECTION if self.store.has_collection(self.NAME_COLLECTION) else self.ENTITY_COLLECTION

    def prepare_queries(self) -> None:
        self.evidence()
        self.fact_graph()

    def fact_graph(self) -> FactGraph:
        """The relations and the chunks each was extracted from, for chains of facts (cached
        until the next change)."""
        return self.derived("fact-graph", self.entity_graph.generations(), self.entity_graph.fact_graph, saved=FactGraph)

    def evidence(self) -> EvidenceGraph:
        """The entity–passage graph of the current entities and relations (cached until the
        next change)."""
        return self.derived("evidence", self.entity_graph.generations(), self.entity_graph.evidence_graph, saved=EvidenceGraph)

    # -- seeds of the evidence walk from the facts nearest a query --------------------------------
    def chain_seeds(self, params: EvidenceParams, vector: Any, found: Sequence[tuple[str, float]]) -> tuple[dict[str, float], list[Chain]]:
        """:meth:`~rhizome.core.retrieval.evidence.EvidenceParams.chain_seeds` of the layer's
        facts from ``found`` (relation ids and their cosines to the query ``vector``, one row).
        With chains off, nothing: the fact graph is not even read."""
        if not params.chains or not found:
            return {}, []
        collection = self.store.collection(self.entity_graph.relation_collection, vector.shape[1])
        return params.chain_seeds(self.fact_graph(), vector[0], found, collection.present)

    def fact_seeds(self, params: EvidenceParams, vector: Any) -> dict[str, float]:
        """Entity seeds from what the query (``vector``, one row) states: the endpoints of the
        ``fact_k`` relations nearest it at their relative weights
        (:meth:`~rhizome.core.retrieval.evidence.EvidenceParams.fact_seeds`) and, with
        ``chains``, the entities of the best chains of facts from them."""
        found = vector_search(self.store, self.entity_graph.relation_collection, vector, params.fact_k)
        records = self.relation_table.get([r for r, _ in found])
        seeds = params.fact_seeds(found, {r.id: (r.source, r.target) for r in records.values()})
        return merge_seeds(seeds, self.chain_seeds(params, vector, found)[0]) if params.chains else seeds


__all__ = ["EntityGraphIndex", "StoredEntityGraph", "open_entity_graph"]
