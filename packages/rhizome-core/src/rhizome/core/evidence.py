"""Graph evidence for ranking passages: link the query to entities, walk to their passages,
fuse with dense retrieval.

A graph retriever earns its place when it finds the passage of a question's second hop, which
shares no words with the question but is connected to the first hop through an entity. The
pieces here do that for every method that has entities with source chunks:

- :class:`EvidenceGraph` holds entities and passages (chunks) in one sparse graph: entity–entity
  edges from relations (weight: the relation's weight) and entity–passage edges from the chunks
  each entity was extracted from (weight 1). It is built once per index state and cached by the
  method.
- :func:`link_entities` links texts (the query, each name it mentions:
  :func:`~rhizome.core.extraction.query_names`) to entities by embedding: the nearest entity
  vectors of each, the best score per entity.
- :meth:`EvidenceGraph.rank` runs personalized PageRank (damping 0.5, HippoRAG's) from the
  linked entities, each weighted by its link score divided by the number of passages it occurs
  in (HippoRAG's node specificity: a rare entity says more than one in every passage), and from
  the dense hits as passage seeds at a small weight (``passage_seed``, 0.05 as in HippoRAG 2),
  so mass flows from the linked entities to their passages, to the entities those passages
  mention, and on to the passages of the second hop.
- :func:`fuse` merges rankings by weighted reciprocal rank fusion; :func:`rank_passages` puts it
  together — the graph ranking fused with the dense ranking, below dense retrieval's own first
  passages (``dense_lead``, 2): the graph adds the passages similarity alone misses, and never
  pushes down what dense retrieval ranks first.

Scores are comparable within one ranking only; retrievers re-score hits by position.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from rhizome.core.graph import DEFAULT_PPR_DAMPING, Transition, personalized_pagerank
from rhizome.core.types import Entity, Relation

DEFAULT_PASSAGE_SEED = 0.05
"""Weight of the dense passage seeds against the entity seeds (HippoRAG 2's passage node weight)."""

DEFAULT_LINK_K = 5
"""Entities linked per text (the query, each name or keyword it mentions)."""

DEFAULT_RRF_K = 60
"""The constant of reciprocal rank fusion (Cormack et al. 2009)."""

DEFAULT_DENSE_LEAD = 2
"""Dense retrieval's first passages that lead every fused ranking. Fusion alone moved one of
them down now and then (Recall@2 of every graph mode fell below dense on musique-dev: 0.37–0.42
against 0.45); with them kept first, the graph's passages fill the ranks below."""


class EvidenceGraph:
    """Entities and passages in one undirected weighted graph, for personalized PageRank.

    Parameters
    ----------
    entity_chunks:
        The chunks each entity occurs in (entity id → chunk ids).
    relations:
        ``(source entity, target entity, weight)`` edges; endpoints that are not entities, self
        loops and non-positive weights are left out; repeated pairs add up.
    passage_nodes:
        ``True`` (HippoRAG 2, the default): passages are nodes of the walk, joined to their
        entities. ``False`` (HippoRAG 1): the walk runs over the entities alone and a passage
        scores the walk's mass on its entities (``incidence @ scores``); passage seeds are
        then ignored.
    """

    def __init__(
        self,
        entity_chunks: Mapping[str, Sequence[str]],
        relations: Iterable[tuple[str, str, float]],
        *,
        passage_nodes: bool = True,
    ) -> None:
        self.entity_ids = sorted(entity_chunks)
        self.chunk_ids = sorted({c for chunks in entity_chunks.values() for c in chunks})
        self.passage_nodes = passage_nodes
        n_e, n_c = len(self.entity_ids), len(self.chunk_ids)
        self._entity = {e: i for i, e in enumerate(self.entity_ids)}
        self._chunk = {c: (n_e if passage_nodes else 0) + i for i, c in enumerate(self.chunk_ids)}
        mention_rows: list[int] = []  # passage positions (from 0)
        mention_cols: list[int] = []  # entity positions
        for eid, chunks in entity_chunks.items():
            i = self._entity[eid]
            for cid in set(chunks):
                mention_rows.append(self._chunk[cid] - (n_e if passage_nodes else 0))
                mention_cols.append(i)
        self.incidence = sp.csr_matrix(
            (np.ones(len(mention_rows)), (mention_rows, mention_cols)), shape=(n_c, n_e), dtype=np.float64
        )
        """Passages × entities: 1 where the entity occurs in the passage."""
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for source, target, weight in relations:
            i, j = self._entity.get(source), self._entity.get(target)
            if i is None or j is None or i == j or not weight > 0:
                continue
            rows += [i, j]
            cols += [j, i]
            vals += [float(weight), float(weight)]
        between = sp.csr_matrix((vals, (rows, cols)), shape=(n_e, n_e), dtype=np.float64)  # duplicates add up
        if passage_nodes:
            self.matrix = sp.bmat([[between, self.incidence.T], [self.incidence, None]], format="csr")
        else:
            self.matrix = between
        self.walk = Transition.of(self.matrix)
        self.passages_of = {e: len(set(chunks)) for e, chunks in entity_chunks.items()}

    @classmethod
    def from_records(cls, entities: Iterable[Entity], relations: Iterable[Relation], **options: Any) -> EvidenceGraph:
        """The graph of stored entity and relation records (their ``source_chunk_ids`` and
        ``weight``); ``options`` as for the constructor."""
        return cls(
            {e.id: e.source_chunk_ids for e in entities if e.source_chunk_ids},
            ((r.source, r.target, r.weight or 1.0) for r in relations),
            **options,
        )

    def __len__(self) -> int:
        """Nodes in the walk (entities, and passages when they are nodes)."""
        return self.matrix.shape[0]

    def rank(
        self,
        entity_seeds: Mapping[str, float],
        passage_seeds: Mapping[str, float] | None = None,
        *,
        passage_seed: float = DEFAULT_PASSAGE_SEED,
        damping: float = DEFAULT_PPR_DAMPING,
        limit: int | None = None,
    ) -> list[tuple[str, float]]:
        """Passages by personalized PageRank from the seeds, best first, at most ``limit``
        (passages the walk never reaches are left out).

        ``entity_seeds``: link scores of entities (weighted here by node specificity);
        ``passage_seeds``: dense scores of passages (min-max normalised here, times
        ``passage_seed``; ignored when passages are not nodes). Seeds that are not in the graph
        are ignored; with no seed in the graph the ranking is empty.
        """
        if not len(self):
            return []
        restart = np.zeros(len(self), dtype=np.float64)
        for eid, score in entity_seeds.items():
            i = self._entity.get(eid)
            if i is not None and score > 0:
                restart[i] += score / max(1, self.passages_of.get(eid, 1))
        dense = {c: s for c, s in (passage_seeds or {}).items() if c in self._chunk} if self.passage_nodes else {}
        if dense and passage_seed > 0:
            low, high = min(dense.values()), max(dense.values())
            spread = high - low
            for cid, score in dense.items():
                restart[self._chunk[cid]] += passage_seed * ((score - low) / spread if spread > 0 else 1.0)
        if not restart.any():
            return []
        scores = personalized_pagerank(self.walk, restart, damping=damping)
        n_e = len(self.entity_ids)
        mass = scores[n_e:] if self.passage_nodes else self.incidence @ scores
        # rounded so that scores equal but for the order of float additions tie, and ties go
        # to the passage id: the ranking does not depend on the order records were stored in
        passage = np.round(mass, 12)
        reached = np.flatnonzero(passage > 0)
        if limit is not None and len(reached) > limit:
            reached = reached[np.argpartition(-passage[reached], limit - 1)[:limit]]
        order = reached[np.lexsort((reached, -passage[reached]))]  # chunk ids are sorted: ties by id
        return [(self.chunk_ids[i], float(passage[i])) for i in order]


def fuse(rankings: Sequence[Sequence[str]], weights: Sequence[float] | None = None, k: int = DEFAULT_RRF_K) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion: each id scores ``sum(weight / (k + rank))`` over the
    rankings it appears in (rank from 1); best first, ties in first-seen order."""
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, key in enumerate(dict.fromkeys(ranking), start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


async def link_entities(
    index: Any,
    collection: str,
    vectors: np.ndarray | None,
    k: int,
    min_score: float | None = None,
    weights: Sequence[float] | None = None,
) -> dict[str, float]:
    """Entities of ``collection`` nearest to each row of ``vectors`` (``k`` per row, at least
    ``min_score``), with the best similarity each reached — times its row's weight when
    ``weights`` (one per row) are given. All rows go in one search."""
    if vectors is None or not index.store.has_collection(collection):
        return {}
    found = index.store.collection(collection, vectors.shape[1]).search(vectors, k)
    linked: dict[str, float] = {}
    for i, row in enumerate(found):
        weight = 1.0 if weights is None else weights[i]
        for key, score in row:
            if min_score is None or score >= min_score:
                linked[key] = max(weight * score, linked.get(key, float("-inf")))
    return linked


def rank_passages(
    graph: EvidenceGraph,
    entity_seeds: Mapping[str, float],
    dense: Sequence[tuple[str, float]],
    *,
    passage_seed: float = DEFAULT_PASSAGE_SEED,
    dense_weight: float = 1.0,
    damping: float = DEFAULT_PPR_DAMPING,
    limit: int | None = None,
    more_dense: Sequence[Sequence[tuple[str, float]]] = (),
    more_weight: float = 1.0,
    dense_lead: int = DEFAULT_DENSE_LEAD,
) -> list[tuple[str, float]]:
    """The graph ranking (personalized PageRank from ``entity_seeds`` with the ``dense`` hits
    as passage seeds) fused with the ``dense`` ranking itself (weight ``dense_weight``; 0: no fusion,
    the graph ranking alone, or the dense one when the walk reaches nothing) and with ``more_dense`` rankings (other texts' nearest passages,
    e.g. DRIFT's follow-up questions; weight ``more_weight`` × ``dense_weight`` each). Dense
    hits the graph does not hold (passages without entities) still take part through the
    fusion. ``limit``: the length of the walk's ranking taken into the fusion (default: the
    whole of it). ``dense_lead``: how many of the dense ranking's first passages stay first, in
    their order (0: the fusion decides every rank)."""
    walked = graph.rank(entity_seeds, dict(dense), passage_seed=passage_seed, damping=damping, limit=limit)
    if dense_weight <= 0:
        fused = walked or list(dense)
    else:
        rankings = [[c for c, _ in r] for r in (walked, dense, *more_dense)]
        fused = fuse(rankings, [1.0, dense_weight] + [more_weight * dense_weight] * len(more_dense))
    lead = [c for c, _ in dense[: max(dense_lead, 0)]]
    if not lead:
        return fused
    top = fused[0][1] if fused else 0.0
    step = 1.0 / (DEFAULT_RRF_K * DEFAULT_RRF_K)
    return [(c, top + (len(lead) - i) * step) for i, c in enumerate(lead)] + [(c, x) for c, x in fused if c not in lead]


__all__ = [
    "DEFAULT_DENSE_LEAD",
    "DEFAULT_LINK_K",
    "DEFAULT_PASSAGE_SEED",
    "DEFAULT_RRF_K",
    "EvidenceGraph",
    "fuse",
    "link_entities",
    "rank_passages",
]
