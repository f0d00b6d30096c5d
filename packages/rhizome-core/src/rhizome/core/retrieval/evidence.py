"""Graph evidence for ranking passages: seeds from the query, one walk over entities and
passages, and chains of facts for questions of several hops.

A graph retriever earns its place when it finds the passage of a question's second hop, which
shares no words with the question but is connected to the first hop through an entity, and when
it puts the passages that answer the question first. Every method with entities and source
chunks ranks its passages with the pieces here:

- :class:`EvidenceGraph` holds entities and passages (chunks) in one sparse graph: entity–entity
  edges from relations (weight: the relation's weight) and entity–passage edges from the chunks
  each entity was extracted from (weight 1). It is built once per index state and cached by the
  method.
- Seeds say where the walk starts, each with a weight. Scores of one search (the query's nearest
  facts, its nearest passages, a method's own matches such as communities or keywords) become
  weights by :func:`relative_weights`: ``exp((score − best) / (temperature × spread))``, the
  spread being the scores' standard deviation. A candidate far above the rest carries the walk
  alone; candidates that score alike share it. This is the per-query confidence of the
  ranking: when dense retrieval's best passage stands out it keeps the first place, when the
  facts nearest the question agree on an entity the walk reaches past it. The weights do not
  depend on the embedder's scale, since the spread is measured per query.
  :func:`fact_seeds` turns the facts (relations) nearest the query into seeds on their
  endpoints; :func:`link_names` links each name the query mentions to one entity.
- :meth:`EvidenceGraph.rank` runs personalized PageRank (damping 0.5, HippoRAG's) from the
  entity seeds, each divided by the number of passages it occurs in (HippoRAG's node
  specificity), and from the passage seeds at ``passage_weight``; its passage ranking is the
  ranking (:func:`rank_passages`). There is no fusion with the dense ranking and no dense
  passage pinned to the top: dense retrieval takes part as passage seeds of the walk.
  On a graph of :data:`LOCAL_WALK_FROM` links or more the walk spreads from the seeds
  (:func:`~rhizome.core.graph.local_pagerank`) instead of iterating over the whole graph, so
  its cost stops growing with the graph.
- :class:`FactGraph` finds chains of facts that join through shared entities, each fact from a
  passage the chain has not used yet, by beam search (:meth:`FactGraph.chains`); a chain scores
  the cosine between the question and the sum of its facts' vectors, so a chain ranks high when
  its facts together cover the question. A method may add a chain's entities to the seeds
  (``chains=True`` in the entity methods' retrievers).

Scores are comparable within one ranking only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp
from pydantic import Field

from rhizome.core.errors import ConfigurationError
from rhizome.core.graph import (
    DEFAULT_LOCAL_EPSILON,
    DEFAULT_PPR_DAMPING,
    Neighbours,
    Transition,
    local_pagerank,
    personalized_pagerank,
)
from rhizome.core.retrieval.params import RetrieverParams
from rhizome.core.types import Entity, Relation

DEFAULT_TEMPERATURE = 0.5
"""Temperature of :func:`relative_weights`, in standard deviations of a search's scores: a
candidate one standard deviation below the best weighs ``exp(-2)`` ≈ 0.14 of it."""

DEFAULT_PASSAGE_WEIGHT = 0.5
"""Weight of the dense passage seeds against the entity seeds (HippoRAG 2 uses 0.05 with
min-max scaled passage scores; with relative weights the nearest passages count more)."""

DEFAULT_DENSE_K = 200
"""Nearest passages taken as passage seeds (HippoRAG 2's ``retrieval_top_k``)."""

DEFAULT_FACT_K = 10
"""Facts (relations) nearest the query whose endpoints become seeds."""

WALK_TOLERANCE = 1e-4
"""Where the walk stops: an iteration that moves the scores by less than this in all (L1). The
kernel's PageRank default is 1e-8. Against 1e-6 (the setting before): no first-ten list of any
evidence mode changed on musique-dev, none of HippoRAG v2's on hotpotqa-100 and one of v1's past
the fifth place, no R@2 or R@5 on any question, and a query took 6–17 % less CPU
(``benchmarks.graph_search --exact``)."""

LOCAL_WALK_FROM = 1_000_000
"""Links (nonzero entries of the graph's adjacency, each edge counted in both directions) from
which :meth:`EvidenceGraph.rank` spreads its walk from the seeds
(:func:`~rhizome.core.graph.local_pagerank`, at ``DEFAULT_LOCAL_EPSILON``) instead of
iterating over the whole graph: a walk's cost then stays bounded as the graph grows, where the
power iteration's grows with every link. Below it the walk is the power iteration, as it
always was: every index of the quality benchmarks (musique-dev, hotpotqa-100) is far below it."""

DEFAULT_CHAIN_WIDTH = 8
"""Chains kept after each step of :meth:`FactGraph.chains`."""

DEFAULT_CHAIN_DEPTH = 3
"""Most facts in a chain."""

DEFAULT_CHAIN_FAN = 30
"""Facts of one entity a chain may continue with (the nearest the query)."""


def relative_weights(scored: Sequence[tuple[str, float]], temperature: float | None = DEFAULT_TEMPERATURE) -> dict[str, float]:
    """Weights in (0, 1] for the scores of one search, the best at 1: ``exp((score − best) /
    (temperature × spread))`` with ``spread`` the standard deviation of the scores (all 1 when
    they do not spread). ``temperature=None``: HippoRAG 2's min-max scaling (the worst at 0).
    A key listed twice keeps its best weight."""
    if not scored:
        return {}
    values = np.array([s for _, s in scored], dtype=np.float64)
    best = float(values.max())
    if temperature is None:
        low = float(values.min())
        weights = (values - low) / (best - low) if best > low else np.ones(len(values))
    else:
        if not temperature > 0:
            raise ConfigurationError(f"temperature must be a positive number or None, got {temperature!r}")
        spread = float(values.std())
        weights = np.exp((values - best) / (temperature * spread)) if spread > 0 else np.ones(len(values))
    out: dict[str, float] = {}
    for (key, _), weight in zip(scored, weights.tolist()):
        out[key] = max(weight, out.get(key, 0.0))
    return out


def fact_seeds(
    found: Sequence[tuple[str, float]],
    ends: Mapping[str, tuple[str, str]],
    temperature: float | None = DEFAULT_TEMPERATURE,
) -> dict[str, float]:
    """Entity seeds from the facts nearest the query (``found``: fact id and score, ``ends``:
    each fact's two entities): every endpoint takes the best relative weight of its facts.
    Facts without known endpoints are skipped."""
    seeds: dict[str, float] = {}
    for fid, weight in relative_weights(found, temperature).items():
        for entity in ends.get(fid, ()):
            seeds[entity] = max(weight, seeds.get(entity, 0.0))
    return seeds


def merge_seeds(*seeds: Mapping[str, float]) -> dict[str, float]:
    """The seeds of several sources, each key at its best weight."""
    out: dict[str, float] = {}
    for one in seeds:
        for key, weight in one.items():
            out[key] = max(weight, out.get(key, float("-inf")))
    return out


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
            column = self._entity[eid]
            for cid in set(chunks):
                mention_rows.append(self._chunk[cid] - (n_e if passage_nodes else 0))
                mention_cols.append(column)
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

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The graph as arrays (its ids as JSON bytes, its two matrices as CSR parts), which
        :meth:`from_arrays` reads back: what an index directory keeps of it
        (:meth:`~rhizome.core.index.base.BaseIndex.derived`)."""
        ids = json.dumps([self.entity_ids, self.chunk_ids, self.passage_nodes]).encode("utf-8")
        out = {"ids": np.frombuffer(ids, dtype=np.uint8)}
        for name, matrix in (("incidence", self.incidence), ("matrix", self.matrix)):
            out |= {f"{name}_data": matrix.data, f"{name}_indices": matrix.indices, f"{name}_indptr": matrix.indptr,
                    f"{name}_shape": np.asarray(matrix.shape, dtype=np.int64)}
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> EvidenceGraph:
        """The graph :meth:`to_arrays` gave ``arrays`` for: the same matrices, so the same walks."""
        def csr(name: str) -> sp.csr_matrix:
            parts = (arrays[f"{name}_data"], arrays[f"{name}_indices"], arrays[f"{name}_indptr"])
            return sp.csr_matrix(parts, shape=tuple(int(n) for n in arrays[f"{name}_shape"]))

        graph = cls.__new__(cls)
        graph.entity_ids, graph.chunk_ids, graph.passage_nodes = json.loads(bytes(arrays["ids"]).decode("utf-8"))
        n_e = len(graph.entity_ids)
        graph._entity = {e: i for i, e in enumerate(graph.entity_ids)}
        graph._chunk = {c: (n_e if graph.passage_nodes else 0) + i for i, c in enumerate(graph.chunk_ids)}
        graph.incidence, graph.matrix = csr("incidence"), csr("matrix")
        if graph.incidence.shape != (len(graph.chunk_ids), n_e) or graph.matrix.shape[0] != n_e + (len(graph.chunk_ids) if graph.passage_nodes else 0):
            raise ValueError("the saved evidence graph's matrices do not fit its ids")
        graph.passages_of = dict(zip(graph.entity_ids, np.diff(graph.incidence.tocsc().indptr).tolist(), strict=True))
        return graph

    def __len__(self) -> int:
        """Nodes in the walk (entities, and passages when they are nodes)."""
        return self.matrix.shape[0]

    @cached_property
    def walk(self) -> Transition:
        """The power iteration's transition matrix, made on the first walk that needs it."""
        return Transition.of(self.matrix)

    @cached_property
    def neighbours(self) -> Neighbours:
        """The local walk's out-links, made on the first walk that needs them."""
        return Neighbours(self.matrix)

    def scores(self, restart: np.ndarray, damping: float = DEFAULT_PPR_DAMPING) -> np.ndarray:
        """Every node's score of the walk from ``restart`` (not normalised): the power
        iteration to :data:`WALK_TOLERANCE`, or from :data:`LOCAL_WALK_FROM` links the walk
        spread from the seeds."""
        if self.matrix.nnz >= LOCAL_WALK_FROM:
            return local_pagerank(self.neighbours, restart, damping=damping, epsilon=DEFAULT_LOCAL_EPSILON, tol=WALK_TOLERANCE)
        return personalized_pagerank(self.walk, restart, damping=damping, tol=WALK_TOLERANCE)

    def rank(
        self,
        entity_seeds: Mapping[str, float],
        passage_seeds: Mapping[str, float] | None = None,
        *,
        passage_weight: float = DEFAULT_PASSAGE_WEIGHT,
        damping: float = DEFAULT_PPR_DAMPING,
        limit: int | None = None,
    ) -> list[tuple[str, float]]:
        """Passages by personalized PageRank from the seeds, best first, at most ``limit``
        (passages nothing reaches are left out).

        ``entity_seeds``: weights of entities (divided here by the number of passages each
        occurs in, node specificity); ``passage_seeds``: weights of passages, times
        ``passage_weight`` (ignored when passages are not nodes). A seeded passage that is not
        in the graph (no entity was extracted from it) is ranked as an isolated node would be:
        its share of the restart, times ``1 − damping``. Unknown entities are ignored; with no
        seed at all the ranking is empty.
        """
        if not 0.0 <= damping < 1.0:
            raise ConfigurationError(f"damping must be in [0, 1), got {damping!r}")
        restart = np.zeros(len(self), dtype=np.float64)
        for eid, weight in entity_seeds.items():
            i = self._entity.get(eid)
            if i is not None and weight > 0:
                restart[i] += weight / max(1, self.passages_of.get(eid, 1))
        outside: dict[str, float] = {}
        if self.passage_nodes and passage_weight > 0:
            for cid, weight in (passage_seeds or {}).items():
                if weight > 0:
                    i = self._chunk.get(cid)
                    if i is None:
                        outside[cid] = passage_weight * weight
                    else:
                        restart[i] += passage_weight * weight
        total = float(restart.sum()) + sum(outside.values())
        if total <= 0:
            return []
        scores = np.zeros(0)
        if restart.any():
            share = float(restart.sum()) / total
            scores = self.scores(restart, damping) * share
        n_e = len(self.entity_ids)
        mass = (scores[n_e:] if self.passage_nodes else self.incidence @ scores) if scores.size else np.zeros(len(self.chunk_ids))
        # rounded so that scores equal but for the order of float additions tie, and ties go
        # to the passage id: the ranking does not depend on the order records were stored in
        reached = np.flatnonzero(mass > 0)
        passage = np.round(mass[reached], 12)
        reached, passage = reached[passage > 0], passage[passage > 0]
        wanted = None if limit is None else limit + len(outside)
        if wanted is not None and len(reached) > wanted:
            cut = passage[np.argpartition(-passage, wanted - 1)[wanted - 1]]
            reached, passage = reached[passage >= cut], passage[passage >= cut]  # every passage tied with the last one kept
        ranked = [(self.chunk_ids[i], value) for i, value in zip(reached.tolist(), passage.tolist(), strict=True)]
        ranked += [(cid, round((1.0 - damping) * weight / total, 12)) for cid, weight in outside.items()]
        ranked.sort(key=lambda item: (-item[1], item[0]))
        return ranked[:limit] if limit is not None else ranked


async def link_names(index: Any, collection: str, vectors: np.ndarray | None, weights: Sequence[float] | None = None) -> dict[str, float]:
    """Each row of ``vectors`` (the names a query mentions) linked to its nearest entity of
    ``collection``, at the row's weight (1 unless ``weights`` gives one per row): HippoRAG 1's
    linking, where a name stands for one entity however close its vector is."""
    if vectors is None or not len(vectors) or not index.store.has_collection(collection):
        return {}
    found = index.store.collection(collection, vectors.shape[1]).search(vectors, 1)
    linked: dict[str, float] = {}
    for i, row in enumerate(found):
        for key, _ in row:
            linked[key] = max(1.0 if weights is None else weights[i], linked.get(key, 0.0))
    return linked


def rank_passages(
    graph: EvidenceGraph,
    entity_seeds: Mapping[str, float],
    dense: Sequence[tuple[str, float]],
    *,
    temperature: float | None = DEFAULT_TEMPERATURE,
    passage_weight: float = DEFAULT_PASSAGE_WEIGHT,
    damping: float = DEFAULT_PPR_DAMPING,
    limit: int | None = None,
    more_dense: Sequence[Sequence[tuple[str, float]]] = (),
    more_weight: float = 1.0,
) -> list[tuple[str, float]]:
    """Passages ranked by the walk from ``entity_seeds`` and from the ``dense`` passages
    (``(chunk id, cosine)``, nearest first) as passage seeds at their :func:`relative_weights`.
    ``more_dense``: other texts' nearest passages (e.g. DRIFT's follow-up questions), seeds at
    ``more_weight`` times their own relative weights. At most ``limit`` passages; when the walk
    has nothing to start from (no seed in the graph and no dense passage) the ranking is empty.
    The walk alone ranks: a passage ranks high when it is near the question, or reached from the
    question's entities, or both."""
    seeds = relative_weights(dense, temperature)
    for other in more_dense:
        for cid, weight in relative_weights(other, temperature).items():
            seeds[cid] = max(more_weight * weight, seeds.get(cid, 0.0))
    return graph.rank(entity_seeds, seeds, passage_weight=passage_weight, damping=damping, limit=limit)


class EvidenceParams(RetrieverParams):
    """The settings of the evidence ranking, the same in every entity method's passage modes:
    their params models subclass this one (defaults: this module's ``DEFAULT_*``)."""

    dense_k: int = Field(DEFAULT_DENSE_K, ge=1)
    """Nearest passages taken as passage seeds (HippoRAG 2's ``retrieval_top_k`` 200)."""

    fact_k: int = Field(DEFAULT_FACT_K, ge=1)
    """Facts (relations) nearest the query whose endpoints become seeds (10)."""

    temperature: float | None = Field(DEFAULT_TEMPERATURE, gt=0)
    """Temperature of :func:`relative_weights`, in standard deviations of a search's scores
    (0.5); ``None``: HippoRAG 2's min-max scaling."""

    passage_weight: float = Field(DEFAULT_PASSAGE_WEIGHT, ge=0)
    """Weight of the passage seeds against the entity seeds (0.5; HippoRAG 2 uses 0.05 with
    min-max scaled scores); 0: no passage seeds."""

    damping: float = Field(DEFAULT_PPR_DAMPING, ge=0, lt=1)
    """Damping of the personalized PageRank walk (HippoRAG's 0.5)."""

    chains: bool = False
    """Add the entities of the best chains of facts (:meth:`FactGraph.chains`) to the seeds."""

    def evidence(self) -> dict[str, Any]:
        """These settings alone, as keywords (for a mode that hands them to another one)."""
        return {name: getattr(self, name) for name in EvidenceParams.model_fields}

    def rank(
        self,
        graph: EvidenceGraph,
        entity_seeds: Mapping[str, float],
        dense: Sequence[tuple[str, float]],
        *,
        limit: int | None = None,
        more_dense: Sequence[Sequence[tuple[str, float]]] = (),
        more_weight: float = 1.0,
    ) -> list[tuple[str, float]]:
        """:func:`rank_passages` with these settings."""
        return rank_passages(
            graph, entity_seeds, dense, temperature=self.temperature, passage_weight=self.passage_weight,
            damping=self.damping, limit=limit, more_dense=more_dense, more_weight=more_weight,
        )

    def fact_seeds(self, found: Sequence[tuple[str, float]], ends: Mapping[str, tuple[str, str]]) -> dict[str, float]:
        """:func:`fact_seeds` at this temperature."""
        return fact_seeds(found, ends, self.temperature)

    def chain_seeds(
        self,
        facts: FactGraph,
        query: np.ndarray,
        found: Sequence[tuple[str, float]],
        vectors: Callable[[Sequence[str]], tuple[list[str], np.ndarray]],
    ) -> tuple[dict[str, float], list[Chain]]:
        """With ``chains`` on: the seeds of the best chains of facts that start at ``found`` (the
        facts nearest the query), and those chains; else nothing."""
        if not self.chains or not found:
            return {}, []
        chains = facts.chains(query, found, vectors)
        return facts.seeds(chains, self.temperature), chains


@dataclass(frozen=True)
class Chain:
    """Facts joined through shared entities, in the order found, and the chain's score (the
    cosine between the question and the normalised sum of the facts' vectors)."""

    facts: tuple[str, ...]
    score: float


class FactGraph:
    """Facts (relations) and the entities they join, for :meth:`chains`.

    ``facts``: ``(fact id, source entity, target entity, chunk ids)`` — the passages that state
    each fact. Built once per index state and cached by the method, like :class:`EvidenceGraph`.
    """

    def __init__(self, facts: Iterable[tuple[str, str, str, Sequence[str]]]) -> None:
        self.ends: dict[str, tuple[str, str]] = {}
        self.chunks: dict[str, frozenset[str]] = {}
        by_entity: dict[str, list[str]] = {}
        for fid, source, target, chunk_ids in facts:
            self.ends[fid] = (source, target)
            self.chunks[fid] = frozenset(chunk_ids)
            for entity in dict.fromkeys((source, target)):
                by_entity.setdefault(entity, []).append(fid)
        self.facts_of = by_entity

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The facts as JSON bytes, which :meth:`from_arrays` reads back: what an index
        directory keeps of the graph (:meth:`~rhizome.core.index.base.BaseIndex.derived`)."""
        facts = [(fid, *ends, sorted(self.chunks[fid])) for fid, ends in self.ends.items()]
        return {"facts": np.frombuffer(json.dumps(facts).encode("utf-8"), dtype=np.uint8)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> FactGraph:
        return cls(json.loads(bytes(arrays["facts"]).decode("utf-8")))

    def __len__(self) -> int:
        return len(self.ends)

    def chains(
        self,
        query: np.ndarray,
        start: Sequence[tuple[str, float]],
        vectors: Callable[[Sequence[str]], tuple[list[str], np.ndarray]],
        *,
        width: int = DEFAULT_CHAIN_WIDTH,
        depth: int = DEFAULT_CHAIN_DEPTH,
        fan: int = DEFAULT_CHAIN_FAN,
    ) -> list[Chain]:
        """Chains of facts for the question ``query`` (a unit vector), best first, by beam search.

        ``start``: the facts nearest the question with their cosines (the chains of one fact);
        ``vectors``: the stored vectors of fact ids (``(ids found, matrix)``, as a collection's
        ``present``). Each step extends every kept chain with a fact that shares an entity with
        its last fact and is stated in a passage the chain has not used (a hop to new evidence;
        of each entity's facts only the ``fan`` nearest the question are tried), scores the
        extended chains and keeps the ``width`` best; at most ``depth`` facts. Every chain
        found at any step is returned once (as a set of facts), best first."""
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        ids, matrix = vectors([fid for fid, _ in start if fid in self.ends])
        found = {fid: (np.asarray(row, dtype=np.float64), float(row @ q)) for fid, row in zip(ids, matrix)}
        beams: list[tuple[tuple[str, ...], np.ndarray, float, frozenset[str]]]
        beams = [(tuple([fid]), found[fid][0], found[fid][1], self.chunks[fid]) for fid, _ in start if fid in found][:width]
        done = list(beams)
        for _ in range(max(0, depth - 1)):
            wanted = {f for path, _, _, used in beams for e in self.ends[path[-1]] for f in self.facts_of.get(e, ())
                      if f not in found and not used.issuperset(self.chunks[f])}
            if wanted:
                more, rows = vectors(sorted(wanted))
                found.update({fid: (np.asarray(row, dtype=np.float64), float(row @ q)) for fid, row in zip(more, rows)})
            grown = []
            for path, total, _, used in beams:
                nexts: set[str] = set()
                for entity in self.ends[path[-1]]:
                    options = [f for f in self.facts_of.get(entity, ()) if f in found and f not in path and not used.issuperset(self.chunks[f])]
                    options.sort(key=lambda f: (-found[f][1], f))
                    nexts.update(options[:fan])
                for fid in sorted(nexts):
                    vector = total + found[fid][0]
                    norm = float(np.linalg.norm(vector))
                    grown.append((path + (fid,), vector, float(vector @ q) / norm if norm > 0 else 0.0, used | self.chunks[fid]))
            if not grown:
                break
            grown.sort(key=lambda beam: (-beam[2], beam[0]))
            beams = grown[:width]
            done += beams
        done.sort(key=lambda beam: (-beam[2], beam[0]))
        out: dict[frozenset[str], Chain] = {}
        for path, _, score, _ in done:
            out.setdefault(frozenset(path), Chain(path, round(score, 12)))
        return list(out.values())

    def seeds(self, chains: Sequence[Chain], temperature: float | None = DEFAULT_TEMPERATURE, top: int = 3) -> dict[str, float]:
        """Entity seeds from the ``top`` chains of two or more facts: every entity of a chain at
        the chain's relative weight among them (its best over the chains)."""
        kept = [c for c in chains if len(c.facts) > 1][:top]
        weights = relative_weights([(str(i), c.score) for i, c in enumerate(kept)], temperature)
        seeds: dict[str, float] = {}
        for i, chain in enumerate(kept):
            for fid in chain.facts:
                for entity in self.ends[fid]:
                    seeds[entity] = max(weights[str(i)], seeds.get(entity, 0.0))
        return seeds


__all__ = [
    "DEFAULT_CHAIN_DEPTH",
    "DEFAULT_CHAIN_FAN",
    "DEFAULT_CHAIN_WIDTH",
    "DEFAULT_DENSE_K",
    "DEFAULT_FACT_K",
    "DEFAULT_PASSAGE_WEIGHT",
    "DEFAULT_TEMPERATURE",
    "LOCAL_WALK_FROM",
    "WALK_TOLERANCE",
    "Chain",
    "EvidenceGraph",
    "EvidenceParams",
    "FactGraph",
    "fact_seeds",
    "link_names",
    "merge_seeds",
    "rank_passages",
    "relative_weights",
]
