"""``GraphRAGIndex``: GraphRAG (Edge et al., 2024) on the Rhizome kernel.

Indexing: chunks (1,200 tokens, 100 overlap) → entities and relations per chunk (a chat model
with gleaning, the offline extractor, or imported OpenIE triples) → merged across chunks, their
descriptions summarised → hierarchical Leiden communities (max cluster size 10, seeded) →
community reports written bottom-up (or lazily, only when a query needs them) → embeddings of
chunks, entity descriptions and reports.

Storage (all in the kernel's index directory): the per-chunk extractions, merged entities,
relations and communities (with their reports) are JSON rows of the ``kv`` table under the
``graphrag.*`` namespaces; chunk, entity and community vectors are the collections ``chunks``,
``graphrag_entities`` and ``graphrag_communities``.

Updates: an insert extracts only the new chunks; a delete drops the extractions of the
document's chunks. Either way the graph is then rebuilt from the stored extractions, which is
cheap, while the expensive steps are reused wherever their input did not change: description
summaries (keyed by the descriptions they summarise), reports (keyed by the context they were
written from) and embeddings (keyed by the embedded text). So only the reports of communities
whose membership or content changed are written again, and nothing only a deleted document
supported survives.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.extraction import LLMExtractor, OfflineExtractor, import_openie, merge_extractions
from rhizome.core.extraction.schema import Extraction, check_chunks
from rhizome.core.graph import DEFAULT_LEIDEN_SEED, leiden_library_versions
from rhizome.core.index import BaseIndex, Batch, InsertReport
from rhizome.core.progress import ProgressArg
from rhizome.core.summarize import DescriptionSummarizer
from rhizome.core.types import Chunk, Community, Entity, Relation
from rhizome.graphrag.graph import GraphData, cluster
from rhizome.graphrag.reports import (
    ReportWriter,
    build_input,
    community_card,
    full_content,
    has_report,
)

GRAPHRAG_ENTITY_TYPES = ("ORGANIZATION", "PERSON", "GEO", "EVENT")
"""GraphRAG's default entity types (``graphrag/config/defaults.py``)."""

NS_EXTRACTION = "graphrag.extraction"
NS_ENTITY = "graphrag.entity"
NS_RELATION = "graphrag.relation"
NS_COMMUNITY = "graphrag.community"
NS_META = "graphrag.meta"

ReportMode = Literal["eager", "lazy"]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()[:24]


class OpenIEExtractor:
    """Extractions imported from HippoRAG-style OpenIE JSON instead of extracted: each chunk
    gets the triples of the passage with the same text (chunks without one get nothing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise ConfigurationError(f"OpenIE file {self.path} does not exist; give the path of the JSON file")

    async def aextract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        chunks = check_chunks(chunks)
        found = {e.chunk_id: e for e in import_openie(self.path, chunks) if e.metadata.get("matched_chunk")}
        return [found.get(c.id, Extraction(chunk_id=c.id, metadata={"extractor": "openie"})) for c in chunks]

    def extract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        return run_sync(self.aextract(chunks))


class UpdateReport(dict):
    """Counters of the last graph rebuild (entities, relations, communities, summaries and
    reports written, embeddings computed)."""


class GraphRAGIndex(BaseIndex):
    """A GraphRAG index: entity graph, hierarchical communities with reports, and local, global,
    DRIFT and basic search.

    Parameters
    ----------
    embedder:
        Embedder (ours, LangChain's, LlamaIndex's, or a spec string); default the offline
        ``HashingEmbedder``.
    llm:
        Chat model for extraction, summaries, reports and the model steps of search; ``None``
        runs every step offline.
    path:
        Index directory; ``None`` keeps it in memory until :meth:`persist`.
    extraction:
        ``"auto"`` (the model when one is given, else offline), ``"llm"``, ``"offline"`` or
        ``"openie:<path>"`` (import HippoRAG-style OpenIE JSON). Resolved when the index is
        created and stored, so later inserts extract the same way.
    entity_types:
        Entity types the model may assign (GraphRAG default: organization, person, geo, event).
    max_gleanings:
        Follow-up extraction passes per chunk (GraphRAG ``max_gleanings`` 1).
    summary_max_tokens:
        Length of a merged entity/relation description summary (GraphRAG ``max_length`` 500).
    summary_max_input_tokens:
        Description tokens per summarisation call (GraphRAG ``max_input_tokens`` 4,000).
    max_cluster_size:
        Largest community Leiden leaves unsplit (GraphRAG 10).
    leiden_seed:
        Leiden seed (GraphRAG ``0xDEADBEEF``).
    max_levels:
        Depth cap of the hierarchy (not in the paper; a safety limit).
    report_max_tokens:
        Length of a community report (GraphRAG ``max_length`` 2,000).
    report_max_input_tokens:
        Context budget of a report (GraphRAG ``max_input_length`` 8,000).
    reports:
        ``"eager"`` writes every community's report at indexing time (the paper); ``"lazy"``
        writes none and lets searches write the few they need (LazyGraphRAG's deferral).
    language:
        Language of generated descriptions and reports.
    extractor:
        An object with ``aextract(chunks)`` to use instead of ``extraction`` (not stored in the
        manifest: pass it again when you re-open the index to insert more).
    chunk_size, chunk_overlap:
        Tokens per chunk and overlap (GraphRAG 1,200 / 100).
    batch_size, progress:
        Chunks per committed batch; progress bar or callback.
    """

    method: ClassVar[str] = "graphrag"
    modes: ClassVar[tuple[str, ...]] = ("local", "global", "drift", "basic")
    uses_llm: ClassVar[bool] = True
    ENTITY_COLLECTION: ClassVar[str] = "graphrag_entities"
    COMMUNITY_COLLECTION: ClassVar[str] = "graphrag_communities"

    def __init__(
        self,
        embedder: Any = None,
        *,
        llm: Any = None,
        path: str | Path | None = None,
        extraction: str = "auto",
        entity_types: Sequence[str] = GRAPHRAG_ENTITY_TYPES,
        max_gleanings: int = 1,
        summary_max_tokens: int = 500,
        summary_max_input_tokens: int = 4000,
        max_cluster_size: int = 10,
        leiden_seed: int = DEFAULT_LEIDEN_SEED,
        max_levels: int = 10,
        report_max_tokens: int = 2000,
        report_max_input_tokens: int = 8000,
        reports: ReportMode = "eager",
        language: str = "English",
        extractor: Any = None,
        chunk_size: int = 1200,
        chunk_overlap: int = 100,
        batch_size: int = 256,
        progress: ProgressArg = False,
        _store: Any = None,
    ) -> None:
        if reports not in ("eager", "lazy"):
            raise ConfigurationError(f"reports must be 'eager' or 'lazy', got {reports!r}")
        if max_cluster_size < 1 or max_levels < 1:
            raise ConfigurationError("max_cluster_size and max_levels must be at least 1")
        if max_gleanings < 0:
            raise ConfigurationError("max_gleanings cannot be negative")
        if report_max_input_tokens < 200 or report_max_tokens < 50:
            raise ConfigurationError("report_max_input_tokens must be >= 200 and report_max_tokens >= 50")
        if isinstance(entity_types, str):
            raise ConfigurationError("entity_types must be a list of type names, not one string")
        if not (extraction in ("auto", "llm", "offline") or extraction.startswith("openie:")):
            raise ConfigurationError(
                f"extraction must be 'auto', 'llm', 'offline' or 'openie:<path>', got {extraction!r}"
            )
        if extraction == "auto":
            extraction = "offline" if llm is None else "llm"
        parameters = {
            "extraction": extraction,
            "entity_types": list(entity_types),
            "max_gleanings": max_gleanings,
            "summary_max_tokens": summary_max_tokens,
            "summary_max_input_tokens": summary_max_input_tokens,
            "max_cluster_size": max_cluster_size,
            "leiden_seed": leiden_seed,
            "max_levels": max_levels,
            "report_max_tokens": report_max_tokens,
            "report_max_input_tokens": report_max_input_tokens,
            "reports": reports,
            "language": language,
        }
        super().__init__(
            embedder,
            llm=llm,
            path=path,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            batch_size=batch_size,
            progress=progress,
            parameters=parameters,
            _store=_store,
        )
        self.parameters = parameters
        self.extraction = extraction
        self.entity_types = tuple(entity_types)
        self.max_gleanings = max_gleanings
        self.max_cluster_size = max_cluster_size
        self.leiden_seed = leiden_seed
        self.max_levels = max_levels
        self.report_mode: ReportMode = reports
        self.language = language
        self._extractor = extractor
        self.summarizer = DescriptionSummarizer(
            self.llm, max_tokens=summary_max_tokens, max_input_tokens=summary_max_input_tokens, language=language
        )
        self.report_writer = ReportWriter(
            self.llm, max_tokens=report_max_tokens, max_input_tokens=report_max_input_tokens, language=language
        )
        self.last_update: UpdateReport = UpdateReport()
        self._graph_cache: tuple[int, GraphData] | None = None

    # -- extraction --------------------------------------------------------------------------
    @property
    def extractor(self) -> Any:
        if self._extractor is None:
            if self.extraction == "llm":
                if self.llm is None:
                    raise ConfigurationError(
                        "this index extracts with a chat model but none was given; pass llm=..., "
                        "or build a new index with extraction='offline'"
                    )
                self._extractor = LLMExtractor(self.llm, entity_types=self.entity_types, gleaning=self.max_gleanings, language=self.language)
            elif self.extraction == "offline":
                self._extractor = OfflineExtractor()
            else:
                self._extractor = OpenIEExtractor(self.extraction.split(":", 1)[1])
        return self._extractor

    # -- BaseIndex hooks ---------------------------------------------------------------------
    async def _prepare(self, batch: Batch) -> Any:
        chunks = [c for _, cs in batch for c in cs]
        extractions = await self.extractor.aextract(chunks)
        vectors = await self.embed([c.text for c in chunks])
        return [c.id for c in chunks], vectors, extractions

    def _write(self, db: Any, batch: Batch, prepared: Any) -> None:
        ids, vectors, extractions = prepared
        if ids:
            self.store.put_vectors(db, self.CHUNK_COLLECTION, ids, vectors)
        db.executemany(
            "INSERT OR REPLACE INTO kv (namespace, key, value) VALUES (?, ?, ?)",
            [(NS_EXTRACTION, e.chunk_id, e.model_dump_json()) for e in extractions],
        )
        self._mark_dirty(db)

    def _remove_document(self, db: Any, document_id: str) -> int:
        chunk_ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))]
        db.executemany("DELETE FROM kv WHERE namespace = ? AND key = ?", [(NS_EXTRACTION, c) for c in chunk_ids])
        self._mark_dirty(db)
        return super()._remove_document(db, document_id)

    async def _after_change(self, inserted: list[str], removed: list[str]) -> None:
        await self._rebuild()

    async def ainsert(self, documents: Sequence[Any] | Any) -> InsertReport:
        """Add documents (see :meth:`BaseIndex.ainsert`); then merge them into the graph,
        re-cluster and write the reports whose input changed. A rebuild interrupted earlier
        (e.g. a model error while writing reports) is finished here even when nothing is new."""
        report = await super().ainsert(documents)
        if self.is_dirty():
            await self._rebuild()
            self.store.save_snapshots()
        return report

    async def arefresh(self) -> UpdateReport:
        """Finish an interrupted rebuild (nothing to do when the graph is up to date)."""
        if self.is_dirty():
            await self._rebuild()
            self.store.save_snapshots()
        return self.last_update

    def refresh(self) -> UpdateReport:
        return run_sync(self.arefresh())

    # -- state ---------------------------------------------------------------------------------
    def _meta(self) -> dict[str, Any]:
        rows = self.store.query("SELECT value FROM kv WHERE namespace = ? AND key = 'state'", (NS_META,))
        return json.loads(rows[0][0]) if rows else {"dirty": False, "generation": 0}

    def _mark_dirty(self, db: Any) -> None:
        rows = db.execute("SELECT value FROM kv WHERE namespace = ? AND key = 'state'", (NS_META,)).fetchall()
        meta = json.loads(rows[0][0]) if rows else {"generation": 0}
        meta["dirty"] = True
        db.execute(
            "INSERT OR REPLACE INTO kv (namespace, key, value) VALUES (?, 'state', ?)", (NS_META, json.dumps(meta))
        )

    def is_dirty(self) -> bool:
        """True when documents changed since the graph was last rebuilt."""
        return bool(self._meta().get("dirty"))

    def _load(self, namespace: str, model: Any) -> dict[str, Any]:
        rows = self.store.query("SELECT key, value FROM kv WHERE namespace = ? ORDER BY key", (namespace,))
        return {key: model.model_validate_json(value) for key, value in rows}

    def _load_extractions(self) -> list[Extraction]:
        rows = self.store.query(
            "SELECT kv.value FROM kv JOIN chunks ON chunks.id = kv.key WHERE kv.namespace = ?"
            " ORDER BY chunks.rowid",
            (NS_EXTRACTION,),
        )
        return [Extraction.model_validate_json(r[0]) for r in rows]

    def graph(self) -> GraphData:
        """The current entities, relations and communities (cached until the next change)."""
        generation = int(self._meta().get("generation", 0))
        if self._graph_cache is None or self._graph_cache[0] != generation:
            data = GraphData.build(
                self._load(NS_ENTITY, Entity), self._load(NS_RELATION, Relation), self._load(NS_COMMUNITY, Community)
            )
            self._graph_cache = (generation, data)
        return self._graph_cache[1]

    # -- the rebuild ---------------------------------------------------------------------------
    async def _rebuild(self) -> None:
        old_entities = self._load(NS_ENTITY, Entity)
        old_relations = self._load(NS_RELATION, Relation)
        old_communities = self._load(NS_COMMUNITY, Community)
        entities, relations = merge_extractions(self._load_extractions())

        summaries = 0

        async def summarise(record: Any, old: Any, subject: str) -> None:
            nonlocal summaries
            key = _digest([record.descriptions, self.summarizer.max_tokens, getattr(self.llm, "name", None)])
            if old is not None and old.metadata.get("descriptions_digest") == key:
                record.description = old.description
            else:
                if self.summarizer.needs_summary(record.descriptions):
                    summaries += 1
                record.description = await self.summarizer.asummarize(subject, record.descriptions)
            record.metadata["descriptions_digest"] = key

        await asyncio.gather(
            *(summarise(e, old_entities.get(eid), e.name) for eid, e in entities.items()),
            *(
                summarise(
                    r,
                    old_relations.get(rid),
                    f"{entities[r.source].name if r.source in entities else r.source} — "
                    f"{entities[r.target].name if r.target in entities else r.target}",
                )
                for rid, r in relations.items()
            ),
        )

        structure = cluster(
            entities, relations, max_cluster_size=self.max_cluster_size, seed=self.leiden_seed, max_levels=self.max_levels
        )
        graph = GraphData.build(entities, relations, {c.id: c for c in structure})
        reports, written = await self.report_writer.aschedule(
            structure, graph, old_communities, only=set() if self.report_mode == "lazy" else None
        )
        graph.communities = reports

        # embeddings of entity descriptions and community reports (or cards), reusing unchanged ones
        entity_texts = {eid: f"{e.name}: {e.description}".strip() for eid, e in entities.items()}
        community_texts = {cid: self._community_text(c, graph) for cid, c in reports.items()}
        new_entity_vectors = self._changed(entity_texts, old_entities)
        new_community_vectors = self._changed(community_texts, old_communities)
        for eid, text in entity_texts.items():
            entities[eid].metadata["embed_digest"] = _digest(text)
        for cid, text in community_texts.items():
            reports[cid].metadata["embed_digest"] = _digest(text)
        entity_ids = list(new_entity_vectors)
        community_ids = list(new_community_vectors)
        entity_matrix = await self.embed([entity_texts[i] for i in entity_ids]) if entity_ids else None
        community_matrix = await self.embed([community_texts[i] for i in community_ids]) if community_ids else None

        with self.store.transaction() as db:
            changed = 0
            for namespace, new, old in (
                (NS_ENTITY, entities, old_entities),
                (NS_RELATION, relations, old_relations),
                (NS_COMMUNITY, reports, old_communities),
            ):
                gone = [k for k in old if k not in new]
                db.executemany("DELETE FROM kv WHERE namespace = ? AND key = ?", [(namespace, k) for k in gone])
                rows = []
                for key, record in new.items():
                    previous = old.get(key)
                    if previous is None or previous != record:
                        rows.append((namespace, key, record.model_dump_json()))
                db.executemany("INSERT OR REPLACE INTO kv (namespace, key, value) VALUES (?, ?, ?)", rows)
                changed += len(gone) + len(rows)
            gone_entities = [k for k in old_entities if k not in entities]
            gone_communities = [k for k in old_communities if k not in reports]
            if gone_entities:
                self.store.delete_vectors(db, self.ENTITY_COLLECTION, gone_entities)
            if gone_communities:
                self.store.delete_vectors(db, self.COMMUNITY_COLLECTION, gone_communities)
            if entity_matrix is not None:
                self.store.put_vectors(db, self.ENTITY_COLLECTION, entity_ids, entity_matrix)
            if community_matrix is not None:
                self.store.put_vectors(db, self.COMMUNITY_COLLECTION, community_ids, community_matrix)
            meta = self._meta()
            meta.update(
                dirty=False,
                generation=int(meta.get("generation", 0)) + (1 if changed or gone_entities or gone_communities else 0),
                leiden=leiden_library_versions(),
            )
            db.execute(
                "INSERT OR REPLACE INTO kv (namespace, key, value) VALUES (?, 'state', ?)", (NS_META, json.dumps(meta))
            )
        self._graph_cache = None
        self.last_update = UpdateReport(
            entities=len(entities),
            relations=len(relations),
            communities=len(reports),
            levels=graph.levels(),
            summaries_written=summaries,
            reports_written=written,
            reports_reused=sum(1 for c in reports.values() if has_report(c)) - written,
            entity_embeddings=len(entity_ids),
            community_embeddings=len(community_ids),
        )

    def _community_text(self, community: Community, graph: GraphData) -> str:
        if has_report(community):
            return full_content(community)
        return community_card(community, graph)

    @staticmethod
    def _changed(texts: dict[str, str], old: dict[str, Any]) -> dict[str, str]:
        out = {}
        for key, text in texts.items():
            previous = old.get(key)
            if previous is None or previous.metadata.get("embed_digest") != _digest(text):
                out[key] = text
        return out

    # -- lazy reports ----------------------------------------------------------------------------
    async def areports(self, community_ids: Sequence[str]) -> dict[str, Community]:
        """The communities ``community_ids`` with their reports, writing the missing ones now
        (lazy mode; in eager mode every report already exists). Reports written here are stored
        when the index is writable, and kept in memory for this index object otherwise."""
        graph = self.graph()
        wanted = [graph.communities[c] for c in dict.fromkeys(community_ids) if c in graph.communities]
        missing = [c for c in wanted if not has_report(c)]
        if missing:
            by_level: dict[int, list[Community]] = {}
            for c in missing:
                by_level.setdefault(c.level, []).append(c)
            written: list[Community] = []
            for level in sorted(by_level, reverse=True):
                inputs = [build_input(c, graph, graph.communities, self.report_writer.max_input_tokens) for c in by_level[level]]
                done = await asyncio.gather(*(self.report_writer.awrite(d, graph) for d in inputs))
                for community in done:
                    graph.communities[community.id] = community
                written.extend(done)
            self.last_query_reports = len(written)
            if not self.store.readonly and written:
                with self.store.transaction() as db:
                    db.executemany(
                        "INSERT OR REPLACE INTO kv (namespace, key, value) VALUES (?, ?, ?)",
                        [(NS_COMMUNITY, c.id, c.model_dump_json()) for c in written],
                    )
        return {c.id: graph.communities[c.id] for c in wanted}

    # -- retrieval ---------------------------------------------------------------------------------
    def as_retriever(self, k: int | None = None, mode: str | None = None, **kwargs: Any) -> Any:
        """A retriever for ``mode`` (default ``"local"``). ``k`` means: local — entities matched
        to the query (GraphRAG ``top_k_mapped_entities`` 10); global — points returned (default
        all that pass the filter, up to 50); drift — hits returned (default 20); basic — chunks
        (GraphRAG basic search ``k`` 10). Other keyword arguments are the mode's search
        parameters (see :mod:`rhizome.graphrag.search`)."""
        from rhizome.graphrag.search import BasicSearch, DriftSearch, GlobalSearch, LocalSearch

        mode = self.check_mode(mode)
        classes = {"local": LocalSearch, "global": GlobalSearch, "drift": DriftSearch, "basic": BasicSearch}
        cls = classes[mode or "local"]
        return cls(self, k=k, **kwargs)

    async def aanswer(self, question: str, *, mode: str | None = None, k: int | None = None, **kwargs: Any) -> Any:
        """Retrieve with ``mode`` and write the answer (global: the reduce step; local, drift and
        basic: an answer over the packed context), citing report and chunk ids."""
        from rhizome.graphrag.answer import aanswer

        retriever = self.as_retriever(k=k, mode=mode, **kwargs)
        hits = await retriever.aretrieve(question)
        return await aanswer(question, hits, self.llm, mode=mode or "local", language=self.language)

    def answer(self, question: str, *, mode: str | None = None, k: int | None = None, **kwargs: Any) -> Any:
        return run_sync(self.aanswer(question, mode=mode, k=k, **kwargs))

    def check_query(self, query: Any) -> str:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("the query must be a non-empty string")
        return query


__all__ = ["GRAPHRAG_ENTITY_TYPES", "GraphRAGIndex", "OpenIEExtractor", "UpdateReport"]
