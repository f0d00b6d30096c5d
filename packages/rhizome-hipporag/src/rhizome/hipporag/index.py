"""``HippoRAGIndex``: HippoRAG's knowledge graph (Gutiérrez et al., v1 2024 and v2 2025) with
incremental insert and delete.

Index: each passage's OpenIE (named entities, then subject–predicate–object triples; from the
chat model, the offline extractor, or an imported HippoRAG OpenIE file) is stored as it is;
the graph is folded from those records:

- **phrase nodes**: every subject, object and named entity, keyed by its normalised name
  (``hipporag_phrases``; ``source_chunk_ids`` = the passages containing it);
- **fact edges** between a triple's subject and object, weighted by the number of passages
  stating the triple (``hipporag_facts``);
- **synonymy edges** between phrases whose name embeddings reach ``synonymy_threshold`` (0.8),
  weighted by that cosine (``hipporag_synonyms``);
- **passage nodes** joined to their phrases (weight 1), for HippoRAG 2.

Vectors: the passages (dense retrieval and HippoRAG 2's passage seeds), the phrase names
(linking query entities, and finding synonyms) and the fact texts (HippoRAG 2's query-to-fact
matching) — three collections, as the reference code keeps.

Insert only adds: new phrases, facts and synonymy edges are folded in, existing phrase and fact
ids never change, and only new texts are embedded. Delete removes a document's passages, then
the phrases and facts no remaining passage supports, with their synonymy edges and vectors.
At query time the records become one scipy sparse graph (:class:`~rhizome.core.evidence.
EvidenceGraph`), rebuilt only when they changed, and personalized PageRank runs on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from rhizome.core.evidence import EvidenceGraph, FactGraph
from rhizome.core.export import GraphContents
from rhizome.core.extraction import Extraction
from rhizome.core.index import BaseIndex, Batch, ModeInfo, Stats, batch_chunks
from rhizome.core.types import Entity, Relation
from rhizome.hipporag.config import HippoRAGConfig


@dataclass
class _Plan:
    """Everything one insert batch or delete changes, computed before its transaction."""

    records: list[Extraction] = field(default_factory=list)
    phrases: list[Entity] = field(default_factory=list)
    facts: list[Relation] = field(default_factory=list)
    synonyms: list[Relation] = field(default_factory=list)
    deleted_phrases: list[str] = field(default_factory=list)
    deleted_facts: list[str] = field(default_factory=list)
    deleted_synonyms: list[str] = field(default_factory=list)
    vectors: dict[str, tuple[list[str], Any]] = field(default_factory=dict)


def fact_text(fact: Relation, names: dict[str, str]) -> str:
    """A fact as the text that is embedded and shown: ``subject predicate object``."""
    if fact.description:
        return fact.description
    return " ".join(x for x in (names.get(fact.source, fact.source), fact.predicate, names.get(fact.target, fact.target)) if x)


def _letters(name: str) -> int:
    return sum(ch.isalnum() for ch in name)


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


class HippoRAGIndex(BaseIndex):
    """HippoRAG: a knowledge graph of phrases and facts searched by personalized PageRank.

    Modes: ``v2`` (default; HippoRAG 2: query-to-fact matching, recognition memory, passage
    nodes), ``v1`` (HippoRAG 1: query named entities linked to phrases, PageRank over the
    phrase graph) and ``naive`` (dense retrieval over the same passages). Settings:
    :class:`~rhizome.hipporag.config.HippoRAGConfig`; the other parameters are
    :class:`~rhizome.core.index.BaseIndex`'s. ``llm`` runs OpenIE, the query NER of v1 and the
    fact filter of v2; without one every step runs offline.
    """

    method: ClassVar[str] = "hipporag"
    modes: ClassVar[tuple[str, ...]] = ("v2", "v1", "naive")
    mode_info: ClassVar[Mapping[str | None, ModeInfo]] = {
        "v2": ModeInfo("personalized PageRank from the facts nearest the question over facts and passages (HippoRAG 2); for questions whose answer is reached through a bridge entity", ("multi-hop", "specific")),
        "v1": ModeInfo("personalized PageRank from the entities the question names over the phrase graph (HippoRAG 1); for multi-hop questions naming their entities", ("multi-hop",)),
        "naive": ModeInfo("the passages whose embeddings are nearest the query (no graph)", ("specific",)),
    }
    config_class = HippoRAGConfig
    config: HippoRAGConfig
    PHRASE_COLLECTION: ClassVar[str] = "hipporag_phrases"
    FACT_COLLECTION: ClassVar[str] = "hipporag_facts"

    def _setup(self) -> None:
        self.extractions = self.store.table("hipporag_extractions", Extraction, key="chunk_id")
        self.phrases = self.store.table("hipporag_phrases", Entity)
        self.facts = self.store.table("hipporag_facts", Relation, lookups=("source", "target"))
        self.synonyms = self.store.table("hipporag_synonyms", Relation, lookups=("source", "target"))

    @property
    def extractor(self) -> Any:
        """HippoRAG's two-call OpenIE with the chat model (``extraction="llm"``), else the
        kernel's extractor of the spec (offline, imported OpenIE)."""
        if self._extractor is None and self.config.extraction == "llm" and self.llm is not None:
            from rhizome.hipporag.openie import ModelOpenIE

            self._extractor = ModelOpenIE(self.llm)
        return super().extractor

    def extractor_options(self) -> dict[str, Any]:
        # sentence co-occurrence is the offline stand-in for a triple; one document at a time,
        # so a document's records do not depend on its insert batch
        return {"offline_options": {"window": "sentence", "per_document": True}}

    # -- the graph -------------------------------------------------------------------------------
    def graph(self, *, passage_nodes: bool = True) -> EvidenceGraph:
        """The phrase graph (fact and synonymy edges) with passage nodes (HippoRAG 2) or with
        passages scored through the phrase → passage incidence (HippoRAG 1); cached until the
        records change."""
        key = (self.phrases.generation(), self.facts.generation(), self.synonyms.generation())

        def build() -> EvidenceGraph:
            edges = [(f.source, f.target, f.weight) for f in self.facts.all()]
            edges += [(s.source, s.target, s.weight) for s in self.synonyms.all()]
            return EvidenceGraph({p.id: p.source_chunk_ids for p in self.phrases.all()}, edges, passage_nodes=passage_nodes)

        return self.derived("graph" if passage_nodes else "phrase-graph", key, build)

    def fact_graph(self) -> FactGraph:
        """The facts and the phrases they join, for chains of facts (cached until the facts change)."""
        return self.derived("fact-graph", (self.facts.generation(),), lambda: FactGraph((f.id, f.source, f.target, f.source_chunk_ids) for f in self.facts.all()))

    def graph_contents(self) -> GraphContents:
        """Phrases as entities; facts and synonymy edges (predicate ``synonym``) as relations."""
        return GraphContents(self.phrases.all(), self.facts.all() + self.synonyms.all())

    def names(self, phrase_ids: Sequence[str]) -> dict[str, str]:
        """Display names of phrases by id."""
        return {pid: p.name for pid, p in self.phrases.get(phrase_ids).items()}

    # -- BaseIndex hooks -------------------------------------------------------------------------
    async def _prepare(self, batch: Batch, stats: Stats) -> _Plan:
        chunks = batch_chunks(batch)
        replaced = self.replaced_chunk_ids(batch)
        found = {e.chunk_id: e for e in await self.extractor.aextract(chunks)} if chunks else {}
        records = [found.get(c.id) or Extraction(chunk_id=c.id) for c in chunks]
        plan = await self._plan(set(replaced), records, stats)
        if chunks:
            plan.vectors[self.CHUNK_COLLECTION] = await self.embed_chunks(chunks)
        return plan

    def _write(self, db: Any, batch: Batch, prepared: _Plan) -> None:
        self._apply(db, prepared)

    async def _prepare_delete(self, document_ids: list[str], stats: Stats) -> _Plan:
        return await self._plan(set(self.store.chunk_ids(document_ids)), [], stats)

    def _write_delete(self, db: Any, document_ids: list[str], prepared: _Plan) -> None:
        self._apply(db, prepared)

    def _remove_document(self, db: Any, document_id: str) -> int:
        self.extractions.delete(db, self.store.chunk_ids([document_id]))
        return super()._remove_document(db, document_id)

    # -- planning --------------------------------------------------------------------------------
    async def _plan(self, removed: set[str], records: list[Extraction], stats: Stats) -> _Plan:
        plan = _Plan(records=records)
        old = self.extractions.get(sorted(removed)).values()
        names: dict[str, str] = {}
        gained_p: dict[str, list[str]] = {}
        gained_f: dict[str, tuple[Relation, list[str]]] = {}
        for record in records:
            for entity in record.entities:
                names.setdefault(entity.id, entity.name)
                gained_p.setdefault(entity.id, []).append(record.chunk_id)
            for fact in record.relations:
                for end in (fact.source, fact.target):  # every endpoint is a phrase of its passage
                    names.setdefault(end, end)
                    if record.chunk_id not in gained_p.setdefault(end, []):
                        gained_p[end].append(record.chunk_id)
                gained_f.setdefault(fact.id, (fact, []))[1].append(record.chunk_id)
        touched_p = list(dict.fromkeys([*gained_p, *(e.id for r in old for e in r.entities)]))
        touched_p += [end for r in old for f in r.relations for end in (f.source, f.target)]
        touched_f = list(dict.fromkeys([*gained_f, *(f.id for r in old for f in r.relations)]))
        before_p = self.phrases.get(dict.fromkeys(touched_p))
        before_f = self.facts.get(touched_f)

        def chunks_of(before: list[str], gained: list[str]) -> list[str]:
            return list(dict.fromkeys([*(c for c in before if c not in removed), *gained]))

        for pid in dict.fromkeys(touched_p):
            before = before_p.get(pid)
            chunk_ids = chunks_of(before.source_chunk_ids if before else [], gained_p.get(pid, []))
            if not chunk_ids:
                if before is not None:
                    plan.deleted_phrases.append(pid)
            elif before is None or chunk_ids != before.source_chunk_ids:
                name = before.name if before is not None else names[pid]
                plan.phrases.append(Entity(id=pid, name=name, source_chunk_ids=chunk_ids))
        for fid in touched_f:
            before = before_f.get(fid)
            template = before if before is not None else gained_f[fid][0]
            chunk_ids = chunks_of(before.source_chunk_ids if before else [], gained_f.get(fid, (None, []))[1])
            if not chunk_ids:
                if before is not None:
                    plan.deleted_facts.append(fid)
            elif before is None or chunk_ids != before.source_chunk_ids:
                plan.facts.append(
                    Relation(
                        id=fid, source=template.source, target=template.target, predicate=template.predicate,
                        description=fact_text(template, names), weight=float(len(chunk_ids)), source_chunk_ids=chunk_ids,
                    )
                )
        gone = set(plan.deleted_phrases)
        if gone:
            dropped = self.synonyms.find("source", gone) + self.synonyms.find("target", gone)
            plan.deleted_synonyms = list(dict.fromkeys(s.id for s in dropped))

        new_phrases = [p for p in plan.phrases if p.id not in before_p]
        if new_phrases:
            vectors = await self.embed([p.name for p in new_phrases], what="phrases")
            plan.vectors[self.PHRASE_COLLECTION] = ([p.id for p in new_phrases], vectors)
            plan.synonyms = self._synonyms(new_phrases, vectors, gone)
        new_facts = [f for f in plan.facts if f.id not in before_f]
        if new_facts:
            plan.vectors[self.FACT_COLLECTION] = ([f.id for f in new_facts], await self.embed([f.description for f in new_facts], what="facts"))
        for key, value in {
            "chunks_added": len(records),
            "chunks_removed": len(removed),
            "phrases_added": len(new_phrases),
            "phrases_deleted": len(plan.deleted_phrases),
            "facts_added": len(new_facts),
            "facts_deleted": len(plan.deleted_facts),
            "synonymy_edges_added": len(plan.synonyms),
        }.items():
            stats[key] = stats.get(key, 0) + value
        return plan

    def _synonyms(self, new: list[Entity], vectors: np.ndarray, gone: set[str]) -> list[Relation]:
        """Synonymy edges from each new phrase to its nearest phrases (stored ones and the other
        new ones), at most ``synonymy_top_k`` per new phrase, cosine ≥ ``synonymy_threshold``;
        phrases with fewer than ``synonymy_min_chars`` letters and digits take no part."""
        c = self.config
        keep = [i for i, p in enumerate(new) if _letters(p.name) >= c.synonymy_min_chars]
        if not keep:
            return []
        ids = [new[i].id for i in keep]
        unit = _unit(np.asarray(vectors, dtype=np.float32)[keep])
        candidates: list[dict[str, float]] = [{} for _ in keep]
        if self.store.has_collection(self.PHRASE_COLLECTION):
            found = self.store.collection(self.PHRASE_COLLECTION, unit.shape[1]).search(unit, c.synonymy_top_k)
            stored = self.phrases.get({key for row in found for key, s in row if s >= c.synonymy_threshold})
            for row, out in zip(found, candidates):
                for key, score in row:
                    if key in stored and key not in gone and _letters(stored[key].name) >= c.synonymy_min_chars and score >= c.synonymy_threshold:
                        out[key] = score
        similar = unit @ unit.T
        for i, out in enumerate(candidates):
            for j in np.flatnonzero(similar[i] >= c.synonymy_threshold):
                if j != i:
                    out[ids[j]] = float(similar[i, j])
        edges: dict[str, Relation] = {}
        for pid, out in zip(ids, candidates):
            best = sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))[: c.synonymy_top_k]
            for other, score in best:
                a, b = sorted((pid, other))
                if a == b:
                    continue
                sid = f"syn:{a}\x1f{b}"
                if sid not in edges:
                    edges[sid] = Relation(id=sid, source=a, target=b, predicate="synonym", weight=round(float(score), 6), metadata={"kind": "synonymy"})
        return list(edges.values())

    def _apply(self, db: Any, plan: _Plan) -> None:
        self.extractions.put(db, plan.records)
        self.synonyms.delete(db, plan.deleted_synonyms)
        self.facts.delete(db, plan.deleted_facts)
        self.phrases.delete(db, plan.deleted_phrases)
        self.phrases.put(db, plan.phrases)
        self.facts.put(db, plan.facts)
        self.synonyms.put(db, plan.synonyms)
        if self.store.embedding_dimension is not None:
            if plan.deleted_phrases:
                self.store.delete_vectors(db, self.PHRASE_COLLECTION, plan.deleted_phrases)
            if plan.deleted_facts:
                self.store.delete_vectors(db, self.FACT_COLLECTION, plan.deleted_facts)
        for collection, (ids, vectors) in plan.vectors.items():
            if len(ids):
                self.store.put_vectors(db, collection, list(ids), vectors)

    # -- reading ---------------------------------------------------------------------------------
    def _retriever(self, mode: str | None, k: int | None, **options: Any) -> Any:
        from rhizome.hipporag.retrieval import HippoRAGRetriever

        return HippoRAGRetriever(self, k, mode=mode or "v2", **options)


__all__ = ["HippoRAGIndex", "fact_text"]
