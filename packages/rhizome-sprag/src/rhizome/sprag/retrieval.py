"""spRAG's retrieval: segments chosen by Relevant Segment Extraction, over any Rhizome index.

:class:`SegmentRetriever` ranks chunks for the query, turns each into a value (its relevance,
decayed by its rank, less the irrelevant-chunk penalty; :func:`~rhizome.sprag.rse.chunk_values`)
and returns the best contiguous runs of chunks within the documents of the first ranked chunks
(:func:`~rhizome.sprag.rse.best_segments`), each joined back into its text. Where the ranking
comes from:

- an index (``SegmentRetriever(index)``; the spRAG index's preset modes): its ``candidates``
  (200) nearest chunks by vector, as dsRAG searches;
- any other retriever (``SegmentRetriever(lightrag.as_retriever(mode="hybrid"))``): its hits in
  the order returned, each putting every chunk its provenance cites at its rank — RSE as a
  post-processing step after naive RAG, LightRAG, HippoRAG, GraphRAG...

Relevance of a ranked chunk: a ``reranker``'s score when one is given (``reranker(query, texts)``
returning scores in [0, 1], sync or async; the chunks are re-ranked by it, as dsRAG reranks);
without one, ``relevance="calibrated"`` (default): the chunk's cosine to the query, placed
between the query's mean cosine to the index's chunks (0) and the best candidate's (1); or
``"similarity"`` (the raw cosine, dsRAG's ``NoReranker``) or ``"constant"`` (0.8 for every
chunk, dsRAG's ``NoReranker(ignore_absolute_relevance=True)``).

``k`` is the number of segments: the first ``k`` RSE chose, best first (a segment's score is its
value). When RSE finds fewer (its ``minimum_value`` or ``overall_max_length`` stops it), the
ranked chunks that no segment holds fill the rest in rank order, as chunk hits
(``metadata["via"] == "fill"``; every hit is then scored by its position, the segment's value
stays in ``metadata["value"]``). A segment is one hit whose provenance cites every chunk it
spans, with its document id, chunk range ``[chunk_start, chunk_end)`` and character span
``[start, end)`` in its metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from rhizome.core.errors import ConfigurationError
from rhizome.core.naive import VectorRetriever
from rhizome.core.retrieval.contract import (
    BaseRetriever,
    Retrieval,
    by_rank,
    check_query,
    check_score_threshold,
    chunk_hit,
    provenance,
    query_vector,
    round_robin,
    vector_search,
)
from rhizome.core.retrieval.passages import joined
from rhizome.core.retrieval.rerank import Reranker, ascores, check_reranker
from rhizome.core.text import chunk_id, chunk_position
from rhizome.core.types import Hit
from rhizome.sprag.config import CANDIDATES, PRESETS, RSEParams
from rhizome.sprag.rse import best_segments, chunk_values

CONSTANT_RELEVANCE = 0.8
"""Relevance of every chunk with ``relevance="constant"`` (dsRAG's "moderately relevant" 0.8)."""
CENTROID_SAMPLE = 4096
"""Chunk vectors averaged for the query's mean cosine to the index (all of them up to this many)."""
REFERENCE_SHARE = 0.875
"""A typical chunk's length as a share of ``chunk_size`` (dsRAG: 700 of 800 characters)."""



class ChunkRetriever(VectorRetriever):
    """The nearest chunks by their AutoContext vectors (spRAG without RSE)."""

    mode = "chunks"


class SegmentParams(RSEParams):
    """The settings of :class:`SegmentRetriever`: where its ranking comes from, and the RSE
    settings (:class:`~rhizome.sprag.config.RSEParams`), whose defaults are the preset's."""

    candidates: int = Field(CANDIDATES, ge=1)
    """Chunks (index) or hits (retriever) ranked per query (dsRAG's 200)."""

    relevance: Literal["calibrated", "similarity", "constant"] = "calibrated"
    """A ranked chunk's relevance when there is no reranker: ``calibrated`` (its cosine placed
    between the query's mean cosine to the index's chunks and the best candidate's),
    ``similarity`` (the raw cosine, dsRAG's ``NoReranker``) or ``constant`` (0.8)."""


class SegmentRetriever(BaseRetriever):
    """Segments by Relevant Segment Extraction (see the module docstring).

    Parameters
    ----------
    source:
        An index (its nearest chunks are ranked) or a retriever (its hits are).
    k:
        Segments returned (default 4).
    preset:
        ``balanced`` (default), ``precision`` or ``find_all`` (:data:`~rhizome.sprag.config.PRESETS`):
        the defaults of the RSE settings.
    reranker:
        A :class:`~rhizome.core.retrieval.rerank.Reranker` (``reranker(query, texts) -> scores``,
        sync or async; also ``index.as_retriever(reranker=...)``, as for every method): relevance
        (clipped to [0, 1]) and order of the candidates; ``texts`` are the chunks with their
        AutoContext headers.
    settings:
        :class:`SegmentParams`: ``candidates``, ``relevance`` and any
        :class:`~rhizome.sprag.config.RSEParams` field, over the preset's value.
    """

    params_class = SegmentParams
    params: SegmentParams
    reranks_itself = True  # the reranker scores the candidate chunks, before RSE

    def __init__(
        self, source: Any, k: int | None = None, *, preset: str = "balanced", reranker: Reranker | None = None, **settings: Any
    ) -> None:
        if preset not in PRESETS:
            raise ConfigurationError(f"unknown RSE preset {preset!r}; presets: {', '.join(PRESETS)}")
        self.source = source if isinstance(source, BaseRetriever) else None
        self.preset = self.mode = preset
        super().__init__(source.index if self.source is not None else source, k, **settings)
        self.reranker = check_reranker(reranker)

    def _default_settings(self) -> Mapping[str, Any]:
        return PRESETS[self.preset].model_dump()

    # -- the search ------------------------------------------------------------------------------
    async def _asearch(self, query: str, k: int) -> Retrieval:
        return await self._search([query], k)

    async def asearch_queries(self, queries: Sequence[str], k: int | None = None) -> Retrieval:
        """Segments for several search queries at once (dsRAG's ``search_queries``): the
        queries take turns choosing segments, and the chunk budget grows by
        ``overall_max_length_extension`` per query after the first; the queries' rankings, in
        turn, fill."""
        if isinstance(queries, str) or not queries:
            raise ConfigurationError("give a non-empty list of queries")
        queries = [check_query(q) for q in queries]
        return await self._finish(lambda _, n: self._search(queries, n), queries[0], k)

    async def _search(self, queries: list[str], k: int) -> Retrieval:
        store, p = self.index.store, self.params
        rankings = [await self._ranking(q) for q in queries]
        where = {cid: chunk_position(cid) for r in rankings for cid, _ in r}
        documents = list(dict.fromkeys(where[cid][0] for r in rankings for cid, _ in r[: p.top_k_for_document_selection]))
        spans: dict[str, tuple[int, int]] = {}  # each document's stretch: its first to last ranked chunk
        for doc, i in where.values():
            if doc in documents:
                lo, hi = spans.get(doc, (i, i + 1))
                spans[doc] = (min(lo, i), max(hi, i + 1))
        offsets = dict(zip(documents, np.cumsum([0] + [spans[d][1] - spans[d][0] for d in documents]).tolist()))
        splits = [offsets[d] + spans[d][1] - spans[d][0] for d in documents]
        tokens = {}
        if p.chunk_length_adjustment:  # only ranked chunks are scaled, as in dsRAG
            tokens = store.chunk_tokens([cid for cid, (d, _) in where.items() if d in spans])
        reference = REFERENCE_SHARE * self.index.config.chunk_size
        values = []
        for ranking in rankings:
            size = splits[-1] if splits else 0
            rank, relevance, scale = np.full(size, np.inf), np.zeros(size), np.ones(size)
            for position, (cid, rel) in enumerate(ranking):
                doc, i = where[cid]
                if doc in spans:
                    at = offsets[doc] + i - spans[doc][0]
                    rank[at], relevance[at] = position, rel
                    scale[at] = max(tokens.get(cid, 0), reference) / reference
            values.append(chunk_values(relevance, rank, decay_rate=p.decay_rate, penalty=p.irrelevant_chunk_penalty, scale=scale))
        budget = p.overall_max_length + (len(queries) - 1) * p.overall_max_length_extension
        chosen = best_segments(values, splits, max_length=p.max_length, overall_max_length=budget, minimum_value=p.minimum_value) if splits else []
        located = []
        for segment in chosen:
            doc = next(d for d in reversed(documents) if offsets[d] <= segment.start)
            shift = spans[doc][0] - offsets[doc]
            located.append((doc, segment.start + shift, segment.end + shift, segment.value))
        stats = {"candidates": len(where), "documents": len(documents), "segments": len(chosen),
                 "segment_chunks": sum(s.end - s.start for s in chosen)}
        hits = self._hits(located[:k])
        if len(hits) < k:  # RSE stopped early: the ranked chunks no segment holds, in rank order
            held = {cid for hit in hits for cid in hit.provenance.chunk_ids}
            ranked = [cid for cid in round_robin(*([cid for cid, _ in r] for r in rankings)) if cid not in held]
            found = store.chunks(ranked[: k - len(hits)])
            fill = [chunk_hit(found[cid], 0.0, via="fill") for cid in ranked[: k - len(hits)] if cid in found]
            if fill:
                stats["filled"] = len(fill)
                hits = by_rank(hits + fill)
        return Retrieval(query=queries[0], hits=hits, stats=stats)

    async def _ranking(self, query: str) -> list[tuple[str, float]]:
        """The query's ranked chunks, best first, each with its relevance."""
        index = self.index
        vector = await query_vector(index, query)
        if vector is None:
            return []
        if self.source is None:
            found = vector_search(index.store, index.CHUNK_COLLECTION, vector, self.params.candidates)
            ids, cosines = [cid for cid, _ in found], np.array([s for _, s in found])
        else:
            hits = await self.source.aretrieve(query, self.params.candidates)
            ids = list(dict.fromkeys(cid for hit in hits for cid in hit.provenance.chunk_ids))
            collection = index.store.collection(index.CHUNK_COLLECTION, vector.shape[1])
            ids, matrix = collection.present(ids)
            cosines = matrix @ vector[0] if ids else np.zeros(0)
        if not ids:
            return []
        if self.reranker is not None:
            return await self._rerank(query, ids)
        if self.params.relevance == "constant":
            relevance = np.full(len(ids), CONSTANT_RELEVANCE)
        elif self.params.relevance == "similarity":
            relevance = np.clip(cosines, 0.0, 1.0)
        else:
            relevance = self._calibrated(vector[0], cosines)
        return list(zip(ids, relevance.tolist()))

    def _calibrated(self, vector: np.ndarray, cosines: np.ndarray) -> np.ndarray:
        """Cosines placed between the query's mean cosine to the index's chunks (0) and the best
        candidate's (1); all 0 when no candidate is closer than the mean."""
        store, name = self.index.store, self.index.CHUNK_COLLECTION

        def centroid() -> np.ndarray:
            collection = store.collection(name, len(vector))
            ids = sorted(collection.ids())
            sample = ids[:: max(1, len(ids) // CENTROID_SAMPLE)][:CENTROID_SAMPLE]
            return collection.present(sample)[1].mean(axis=0)

        mean = float(self.index.derived("sprag:centroid", store.vector_generation(name), centroid) @ vector)
        top = float(cosines.max())
        if top <= mean:
            return np.zeros(len(cosines))
        return np.clip((cosines - mean) / (top - mean), 0.0, 1.0)

    async def _rerank(self, query: str, ids: list[str]) -> list[tuple[str, float]]:
        chunks = self.index.store.chunks(ids)
        ids = [cid for cid in ids if cid in chunks]
        listed = [chunks[cid] for cid in ids]
        headers = self.index.headers(listed) if hasattr(self.index, "headers") else {}
        texts = [f"{headers[c.id]}\n\n{c.text}" if headers.get(c.id) else c.text for c in listed]
        assert self.reranker is not None  # reranking runs only with a reranker
        scores = await ascores(self.reranker, query, texts)
        order = sorted(range(len(ids)), key=lambda i: -scores[i])  # stable: ties keep the search's order
        return [(ids[i], float(np.clip(scores[i], 0.0, 1.0))) for i in order]

    # -- hits ------------------------------------------------------------------------------------
    def _hits(self, located: list[tuple[str, int, int, float]]) -> list[Hit]:
        wanted = [chunk_id(doc, i) for doc, start, end, _ in located for i in range(start, end)]
        chunks = self.index.store.chunks(wanted)
        contexts = self.index.document_context([d for d, *_ in located]) if hasattr(self.index, "document_context") else {}
        hits = []
        for doc, start, end, value in located:
            run = [chunks[chunk_id(doc, i)] for i in range(start, end) if chunk_id(doc, i) in chunks]
            if len(run) != end - start:
                continue  # deleted while we searched
            metadata: dict[str, Any] = {
                "document_id": doc, "chunk_start": start, "chunk_end": end, "start": run[0].start, "end": run[-1].end,
                "value": value, "via": "rse",
            }
            context = contexts.get(doc)
            title = context.title if context is not None else run[0].metadata.get("title")
            if title:
                metadata["title"] = title
            if context is not None and context.summary:
                metadata["summary"] = context.summary
            if run[0].metadata.get("source"):
                metadata["source"] = run[0].metadata["source"]
            cited = provenance({c.id: c for c in run}, [c.id for c in run], limit=len(run))
            hits.append(Hit(id=f"{doc}:{start}-{end}", text=joined(run), score=value, kind="segment", provenance=cited, metadata=metadata))
        return hits


def segment_extractor(retriever: BaseRetriever, k: int | None = None, **options: Any) -> SegmentRetriever:
    """RSE after any Rhizome retriever: ``segment_extractor(index.as_retriever(mode="hybrid"))``
    returns segments built around the chunks that retriever finds (options: those of
    :class:`SegmentRetriever`, and ``score_threshold``, as for ``index.as_retriever``)."""
    if not isinstance(retriever, BaseRetriever):
        raise ConfigurationError(f"segment_extractor needs a Rhizome retriever (index.as_retriever()), got {type(retriever).__name__}")
    threshold = check_score_threshold(options.pop("score_threshold", None))
    segments = SegmentRetriever(retriever, k, **options)
    segments.score_threshold = threshold
    return segments


__all__ = ["CONSTANT_RELEVANCE", "ChunkRetriever", "SegmentParams", "SegmentRetriever", "joined", "segment_extractor"]
