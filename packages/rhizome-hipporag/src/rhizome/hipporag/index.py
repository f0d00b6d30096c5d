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

Phrases and facts are the kernel's entity-graph layer (:class:`~rhizome.core.graph.store.
EntityGraphStore`, with HippoRAG's :data:`FACTS` policy: triples told apart by predicate, weighted
by their passages, each fact's text the first passage's): an insert folds in new phrases and
facts and embeds only new texts, a synonymy edge joins each new phrase to its nearest phrases;
a delete removes a document's passages, then the phrases and facts no remaining passage
supports, with their synonymy edges and vectors, and what a removed passage shared is folded
again from the passages left.
At query time the records become one scipy sparse graph (:class:`~rhizome.core.retrieval.evidence.
EvidenceGraph`), rebuilt only when they changed, and personalized PageRank runs on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from rhizome.core.extraction import Extraction
from rhizome.core.graph.mentions import ChunkExtraction, EntityMention, RelationMention
from rhizome.core.graph.profiles import FoldPolicy, triple_key
from rhizome.core.graph.resolution import EntityResolver
from rhizome.core.graph.similarity import unit_rows
from rhizome.core.graph.store import EntityGraphStore, GraphChange
from rhizome.core.graph.summarize import DescriptionSummarizer
from rhizome.core.index.base import BaseIndex, ModeInfo, Stats, add_counts
from rhizome.core.index.entity_index import EntityGraphIndex
from rhizome.core.naive import NAIVE
from rhizome.core.retrieval.evidence import EvidenceGraph
from rhizome.core.store.storage import Connection
from rhizome.core.types import Chunk, Entity, GraphContents, Relation
from rhizome.hipporag.config import HippoRAGConfig


def fact_text(fact: Relation, source_name: str, target_name: str) -> str:
    """A fact as the text that is embedded and shown: its first passage's statement, else
    ``subject predicate object``."""
    if fact.description:
        return fact.description
    return " ".join(x for x in (source_name, fact.predicate, target_name) if x)


FACTS = FoldPolicy(relation_key=triple_key, weight="passages", descriptions="first", entity_text=None, relation_text=fact_text)
"""HippoRAG's graph: a fact per (subject, predicate, object), its edge weighted by the passages
stating it, its text the first passage's; phrases are embedded by name only."""


def said(extraction: Extraction) -> ChunkExtraction:
    """One passage's OpenIE as the layer's per-chunk record: phrases by name (untyped, with no
    description), facts with their predicate and their statement."""
    names = {e.id: e.name for e in extraction.entities}
    return ChunkExtraction(
        chunk_id=extraction.chunk_id,
        entities=[EntityMention(name=e.name) for e in extraction.entities],
        relations=[
            RelationMention(
                source=names.get(r.source, r.source), target=names.get(r.target, r.target), predicate=r.predicate,
                description=fact_text(r, names.get(r.source, r.source), names.get(r.target, r.target)),
            )
            for r in extraction.relations
        ],
        metadata={"extractor": str(extraction.metadata.get("extractor", "imported"))},
    )


def _letters(name: str) -> int:
    return sum(ch.isalnum() for ch in name)


class HippoRAGIndex(EntityGraphIndex):
    """HippoRAG: a knowledge graph of phrases and facts searched by personalized PageRank.

    Modes: ``v2`` (default; HippoRAG 2: query-to-fact matching, recognition memory, passage
    nodes), ``v1`` (HippoRAG 1: query named entities linked to phrases, PageRank over the
    phrase graph) and ``naive`` (dense retrieval over the same passages). Settings:
    :class:`~rhizome.hipporag.config.HippoRAGConfig`; the other parameters are
    :class:`~rhizome.core.index.base.BaseIndex`'s. ``llm`` runs OpenIE, the query NER of v1 and the
    fact filter of v2; without one every step runs offline.
    """

    method: ClassVar[str] = "hipporag"
    modes: ClassVar[Mapping[str, ModeInfo]] = {
        "v2": ModeInfo("personalized PageRank from the facts nearest the question over facts and passages (HippoRAG 2); for questions whose answer is reached through a bridge entity", ("multi-hop", "specific"), retriever="rhizome.hipporag.retrieval:HippoRAGRetriever", options={"mode": "v2"}),
        "v1": ModeInfo("personalized PageRank from the entities the question names over the phrase graph (HippoRAG 1); for multi-hop questions naming their entities", ("multi-hop",), retriever="rhizome.hipporag.retrieval:HippoRAGRetriever", options={"mode": "v1"}),
        "naive": NAIVE,
    }
    config_class = HippoRAGConfig
    config: HippoRAGConfig
    PHRASE_COLLECTION: ClassVar[str] = "hipporag_phrases"
    FACT_COLLECTION: ClassVar[str] = "hipporag_facts"

    def _setup(self) -> None:
        self.entity_graph = EntityGraphStore(
            self.store, "hipporag", embed=self.embed, summarizer=DescriptionSummarizer(), resolver=EntityResolver(),
            resolution=False, policy=FACTS, tables={"entities": "hipporag_phrases", "relations": "hipporag_facts"},
            collections={"entities": None, "relations": self.FACT_COLLECTION, "names": self.PHRASE_COLLECTION},
        )
        self.phrases = self.entity_graph.entities
        self.facts = self.entity_graph.relations
        self.synonyms = self.store.table("hipporag_synonyms", Relation, lookups=("source", "target"))
        self.entity_graph.adopt_once(said)

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
        def build() -> EvidenceGraph:
            synonyms = [(source, target, float(weight)) for _, source, target, weight in self.synonyms.fields("source", "target", "weight")]
            return self.entity_graph.evidence_graph(synonyms, passage_nodes=passage_nodes)

        key = (*self.entity_graph.generations(), self.synonyms.generation())
        return self.derived("graph" if passage_nodes else "phrase-graph", key, build, saved=EvidenceGraph)

    def prepare_queries(self) -> None:
        self.graph(passage_nodes=True)  # v2's walk
        self.graph(passage_nodes=False)  # v1's
        self.fact_graph()

    def graph_contents(self) -> GraphContents:
        """Phrases as entities; facts and synonymy edges (predicate ``synonym``) as relations."""
        return GraphContents(self.entity_graph.all_entities(), self.entity_graph.all_relations() + self.synonyms.all())

    # -- EntityGraphIndex hooks ------------------------------------------------------------------
    _after_change = BaseIndex._after_change
    """Nothing to do after a change: no summary waits (:meth:`_plan` defers none)."""

    async def _records(self, chunks: list[Chunk]) -> list[ChunkExtraction]:
        return [said(x) for x in await self.extract(chunks)]

    async def _plan(self, records: list[ChunkExtraction], removed: Sequence[str], stats: Stats, *, defer: bool = False) -> GraphChange:
        """The layer's change (its profiles are never summarised, so nothing is deferred), with
        the synonymy edges of the phrases it adds as its ``extra``."""
        change = await self.entity_graph.plan(records, removed)
        synonyms: list[Relation] = []
        if change.added_entities:
            ids, vectors = change.name_vectors
            row = {pid: i for i, pid in enumerate(ids)}
            new = [change.entities[pid] for pid in change.added_entities]
            synonyms = self._synonyms(new, np.asarray(vectors)[[row[p.id] for p in new]], set(change.removed_entities))
        add_counts(stats, {
            "chunks_added": len(records),
            "chunks_removed": len(change.removed_chunks),
            "phrases_added": len(change.added_entities),
            "phrases_deleted": len(change.removed_entities),
            "facts_added": len(change.added_relations),
            "facts_deleted": len(change.removed_relations),
            "synonymy_edges_added": len(synonyms),
        })
        change.extra = synonyms
        return change

    def _synonyms(self, new: list[Entity], vectors: np.ndarray, gone: set[str]) -> list[Relation]:
        """Synonymy edges from each new phrase to its nearest phrases (stored ones and the other
        new ones), at most ``synonymy_top_k`` per new phrase, cosine ≥ ``synonymy_threshold``;
        phrases with fewer than ``synonymy_min_chars`` letters and digits take no part."""
        c = self.config
        keep = [i for i, p in enumerate(new) if _letters(p.name) >= c.synonymy_min_chars]
        if not keep:
            return []
        ids = [new[i].id for i in keep]
        unit = unit_rows(np.asarray(vectors)[keep])
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

    def _apply(self, db: Connection, change: GraphChange) -> None:
        if change.removed_entities:
            gone = set(change.removed_entities)
            dropped = self.synonyms.find("source", gone) + self.synonyms.find("target", gone)
            self.synonyms.delete(db, list(dict.fromkeys(s.id for s in dropped)))
        super()._apply(db, change)
        self.synonyms.put(db, change.extra)

__all__ = ["HippoRAGIndex", "fact_text"]
