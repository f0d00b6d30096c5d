"""The retrieval contract and the toolkit every retrieval mode is written with.

**The contract**, enforced here for every method and mode: ``retrieve(query, k)`` returns at
most ``k`` hits — exactly ``k`` when the index has that many — in the mode's order of
relevance, each with provenance down to passages and a ``score`` that means the same in every
mode (:func:`relevance`: the query's cosine to the nearest passage the hit cites, in
``[0, 1]``; the mode's own score in ``metadata["raw_score"]``), so that one
``score_threshold`` (``index.as_retriever(score_threshold=...)``, applied after the ranking:
fewer than ``k`` hits may come back) works for all; the context a mode assembles beyond its
hits (entity profiles, community reports, the packed context of GraphRAG's local search) comes
from :meth:`BaseRetriever.asearch` as :attr:`Retrieval.context`; and a retriever holds no
per-call state, so one object serves many threads and event loops at once (what a call cost
comes back with it, in :attr:`Retrieval.stats`).

A mode is a subclass of :class:`BaseRetriever` that implements one coroutine,
``_asearch(query, k) -> Retrieval``; the base class checks the query and ``k``, counts the model
calls, cuts, de-duplicates and orders the hits by the mode's scores, then gives each hit
its relevance. When a mode's own evidence runs out before
``k`` hits (few entities matched, few points mapped) while the index holds more passages, the
nearest chunks by vector similarity fill the rest (``metadata["via"] == "fill"``; never a chunk
that a chunk or segment hit already holds), so ``k`` is always the number of hits when the index
has them. A mode's settings (the keywords of ``index.as_retriever(mode=...)`` beside ``k`` and
``filter``) are a pydantic model, its :attr:`~BaseRetriever.params_class`
(:mod:`rhizome.core.retrieval.params`), validated into ``retriever.params`` when the retriever is made.

**Metadata.** Every hit carries the metadata of the documents it cites (all of it for a hit
from one document; the fields its documents agree on for one that cites several), below the
mode's own keys. **Filters** (:mod:`rhizome.core.retrieval.filters`: ``$eq $ne $gt $gte $lt $lte $in $nin
$contains $exists`` and ``$and $or $not`` on document metadata, evaluated by the store's
database) are honoured here, once for every mode: a filtered search asks the mode for more hits
(as many more as the filter is selective, at most ten times ``k``), keeps a hit only when every
document it cites matches, and fills from the nearest chunks of matching documents (a mode
that does not fill is asked again for twice as many while too few of its hits match). A mode
whose hits do not cite documents cannot be filtered: asking raises. **Rerankers**
(:mod:`rhizome.core.retrieval.rerank`) likewise, for every mode: with one, a search asks for
``rerank_candidates`` hits (filtered and filled as above) and keeps the ``k`` it scores highest. When a search finds nothing,
or less than its own ``k``, :attr:`Retrieval.notes` says why.

**The toolkit**: :func:`query_vector` (the query embedded once per search) and
:func:`vector_search` (with the embedder check), :func:`relevance`,
:func:`provenance` (one way to cite chunks), :func:`chunk_hits`, :func:`pack` (the one
token-budget packer), :func:`dedupe`, :func:`round_robin` and :func:`by_rank`.

**Map-reduce modes** (GraphRAG's global search; any method that reads the groups of a hierarchy
in batches) subclass :class:`MapReduceSearch` and implement its three steps — ``aplan`` (which
groups, in which batches), ``amap`` (one batch to scored points) and ``reduce`` — so that a
caller can also run the batches itself, as parallel branches of a LangGraph graph.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
from pydantic import BaseModel, Field

from rhizome.core.aio import held, run_sync
from rhizome.core.documents import lone_surrogate
from rhizome.core.errors import ConfigurationError, IndexDamageWarning, InvalidInputError
from rhizome.core.models.base import checked_vectors, usage_scope
from rhizome.core.retrieval import rerank
from rhizome.core.retrieval.filters import MetadataFilter, as_filter
from rhizome.core.retrieval.params import RetrieverParams
from rhizome.core.store.storage import DamagedChunk, damaged_left_out, generations_held, shown
from rhizome.core.text import count_tokens, truncate_tokens
from rhizome.core.types import HIT_KEYS, Chunk, Hit, Provenance

T = TypeVar("T")

MAX_PROVENANCE_CHUNKS = 20
"""Most chunks one hit cites (an entity, relation or report supported by many chunks cites the
first 20, best-supported first where the method ranks them)."""


class Retrieval(BaseModel):
    """What one search returns: the ``k`` best hits, the context the mode assembled (in
    context order; empty when the hits are the context), and what the call cost."""

    query: str
    mode: str | None = None
    hits: list[Hit] = Field(default_factory=list)
    context: list[Hit] = Field(default_factory=list)
    stats: dict[str, Any] = Field(default_factory=dict)
    """Counters of this call: ``model_calls``, ``prompt_tokens``, ``completion_tokens``,
    ``cache_hits``, ``embed_calls`` and the mode's own (e.g. ``rating_calls``)."""
    notes: list[str] = Field(default_factory=list)
    """Why there are no hits, or fewer of the mode's own than ``k`` (an empty index, a filter
    no document matches, hits filled from the nearest chunks), in words for a person."""


# -- checks ------------------------------------------------------------------------------------
def check_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("the query must be a non-empty string")
    if (at := lone_surrogate(query)) is not None:  # bytes that were not UTF-8 (a terminal in another encoding)
        raise InvalidInputError(
            f"the query is not valid Unicode (a lone surrogate at position {at}: bytes that are not "
            "UTF-8, e.g. from a terminal set to Latin-1); give it as UTF-8 text"
        )
    return query


def check_k(k: Any, default: int | None = None) -> int:
    """``k`` (or ``default`` when ``k`` is ``None``) as a positive integer."""
    if k is None and default is not None:
        k = default
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidInputError(f"k must be a positive integer, got {k!r}")
    return k


def check_positive(name: str, value: Any) -> int:
    """``value`` as a positive integer, for an argument of a call (a retriever's settings are
    its :attr:`~BaseRetriever.params_class`)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")
    return value


def check_score_threshold(value: Any) -> float | None:
    """``value`` as a score threshold: ``None`` (no threshold) or a number in ``[0, 1]``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ConfigurationError(
            f"score_threshold must be a number between 0 and 1 (a hit's score is a relevance in [0, 1]), got {value!r}"
        )
    return float(value)


# -- vectors -----------------------------------------------------------------------------------
_HELD_QUERY_VECTORS: contextvars.ContextVar[dict[tuple[int, str], np.ndarray] | None] = contextvars.ContextVar(
    "rhizome_query_vectors", default=None
)
"""Inside :func:`query_vectors_held`: the query embeddings made so far, by embedder and text."""


@contextlib.contextmanager
def query_vectors_held() -> Iterator[None]:
    """Within the block (one search), :func:`query_vector` embeds a text once: the mode's steps
    and the relevance of its hits share the query's embedding. Nested blocks share the
    outermost one's."""
    with held(_HELD_QUERY_VECTORS):
        yield


async def query_vector(index: Any, text: str, extra: Sequence[str] = ()) -> np.ndarray | None:
    """The query embedding of ``text`` with the index's embedder (one row; with ``extra``
    texts, one row each after it, embedded in the same call), or ``None`` when the index holds
    no vectors yet; an embedder of another dimension is an :class:`IndexMismatchError`. Within
    one search (:func:`query_vectors_held`) a text embedded before is not embedded again."""
    known = index.store.embedding_dimension
    if known is None:
        return None
    texts = [text, *extra]
    held = _HELD_QUERY_VECTORS.get()
    keys = [(id(index.embedder), t) for t in texts]
    if held is not None and all(key in held for key in keys):
        return np.stack([held[key] for key in keys])
    vector = checked_vectors(await index.embedder.aembed_query(texts), len(texts), None, index.embedder.name)
    index.check_dimension(int(vector.shape[1]))
    if held is not None:
        held.update(zip(keys, vector, strict=True))
    return vector


def vector_search(
    store: Any, collection: str, vector: np.ndarray | None, k: int, min_score: float | None = None, among: Iterable[str] | None = None
) -> list[tuple[str, float]]:
    """The ``k`` nearest ids of ``collection`` in ``store`` as ``(id, cosine)``, best first;
    nothing for an empty collection or a missing vector; scores below ``min_score`` dropped;
    with ``among``, only those ids are searched."""
    if vector is None or k < 1 or not store.has_collection(collection):
        return []
    found = store.collection(collection, vector.shape[1]).search(vector, k, among=among)[0]
    return found if min_score is None else [(key, score) for key, score in found if score >= min_score]


# -- hits --------------------------------------------------------------------------------------
def provenance(chunks: dict[str, Chunk], chunk_ids: Iterable[str], limit: int = MAX_PROVENANCE_CHUNKS) -> Provenance:
    """Merged provenance of the first ``limit`` stored chunks among ``chunk_ids`` (``chunks``:
    the stored chunks by id, e.g. from ``store.chunks(...)``; missing ids are skipped)."""
    documents: list[str] = []
    cited: list[str] = []
    spans = []
    sources: list[str] = []
    for cid in dict.fromkeys(chunk_ids):
        chunk = chunks.get(cid)
        if chunk is None:
            continue
        documents.append(chunk.document_id)
        cited.append(cid)
        spans.append(chunk.span())
        if chunk.source:
            sources.append(chunk.source)
        if len(cited) >= limit:
            break
    return Provenance(
        document_ids=list(dict.fromkeys(documents)), chunk_ids=cited, spans=spans, sources=list(dict.fromkeys(sources))
    )


def chunk_hit(chunk: Chunk, score: float, text: str | None = None, **metadata: Any) -> Hit:
    """A ``chunk`` hit for a stored chunk (``text``: a cut version, whose span is then cut too)."""
    meta: dict[str, Any] = {"document_id": chunk.document_id, "chunk_index": chunk.index}
    for key in ("title", "source"):
        if key in chunk.metadata:
            meta[key] = chunk.metadata[key]
    meta.update(metadata)
    cited = chunk.provenance()
    if text is not None and text != chunk.text:
        cited.spans[0] = cited.spans[0].model_copy(update={"end": chunk.start + len(text)})
    return Hit(id=chunk.id, text=chunk.text if text is None else text, score=float(score), kind="chunk", provenance=cited, metadata=meta)


def chunk_hits(index: Any, ranked: Sequence[tuple[str, float]], **metadata: Any) -> list[Hit]:
    """Chunk hits for ranked ``(chunk id, score)`` pairs (chunks deleted since are skipped)."""
    chunks = index.store.chunks([cid for cid, _ in ranked])
    return [chunk_hit(chunks[cid], score, **metadata) for cid, score in ranked if cid in chunks]


def point_hit(text: str, importance: Any, key: str, provenance: Provenance | None = None, **metadata: Any) -> Hit:
    """A ``point`` hit, what a map step draws from what it read: ``text``, scored
    ``importance / 100`` (its importance, 0–100, also in its metadata), its id made from ``key``
    (what tells the point apart: its text and what it rests on)."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return Hit(
        id=f"point-{digest}", text=text, score=importance / 100.0, kind="point", provenance=provenance or Provenance(),
        metadata={"importance": importance, **metadata},
    )


def pack(items: Iterable[T], budget: int, text: Callable[[T], str], *, overhead: int = 0, cut_first: bool = True) -> list[tuple[T, str]]:
    """The items, in order, whose texts (plus ``overhead`` tokens each, for separators) fit in
    ``budget`` tokens together, with their texts: the first item that does not fit ends the
    packing. With ``cut_first``, a first item that is alone too long is cut to the budget
    instead of returning nothing."""
    out: list[tuple[T, str]] = []
    for item in items:
        body = text(item)
        tokens = count_tokens(body) + overhead
        if tokens > budget:
            if cut_first and not out and budget > 20:
                out.append((item, truncate_tokens(body, budget)))
            break
        out.append((item, body))
        budget -= tokens
    return out


def batch_texts(items: Iterable[T], budget: int, text: Callable[[T], str], *, overhead: int = 0) -> list[list[T]]:
    """``items``, in order, cut into batches whose texts (plus ``overhead`` tokens each) hold at
    most ``budget`` tokens together; an item alone over the budget is a batch of its own. What
    a map step packs into its calls (GraphRAG's report batches, ArchRAG's filter batches)."""
    out: list[list[T]] = [[]]
    used = 0
    for item in items:
        tokens = count_tokens(text(item)) + overhead
        if out[-1] and used + tokens > budget:
            out.append([])
            used = 0
        out[-1].append(item)
        used += tokens
    return [b for b in out if b]


def dedupe(hits: Iterable[Hit]) -> list[Hit]:
    """The hits without repeats of the same kind and id (the first is kept)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for hit in hits:
        if (hit.kind, hit.id) not in seen:
            seen.add((hit.kind, hit.id))
            out.append(hit)
    return out


def round_robin(*lists: Sequence[T], key: Callable[[T], Any] = lambda x: x) -> list[T]:
    """The lists interleaved (first of each, then second of each...), repeats (by ``key``) dropped."""
    out, seen = [], set()
    for i in range(max((len(x) for x in lists), default=0)):
        for items in lists:
            if i < len(items):
                tag = key(items[i])
                if tag not in seen:
                    seen.add(tag)
                    out.append(items[i])
    return out


async def relevance(index: Any, query: str, hits: Sequence[Hit]) -> list[Hit]:
    """The hits, in their order, scored by the one rule every mode's hits end with: ``score``
    is the cosine similarity of the query's embedding to the nearest passage the hit cites,
    negatives as 0 — a relevance in ``[0, 1]`` that means the same in every mode and method, so
    one threshold keeps the same kind of hit everywhere. A chunk hit is scored by its own
    vector, a segment by its nearest chunk, an entity, relation, report, summary or point by the
    nearest of the chunks it rests on (all stored vectors: no embedding but the query's); a hit
    that cites no stored chunk, by the embedding of its own text. The score the mode ranked by
    is kept in ``metadata["raw_score"]`` (:attr:`Hit.raw_score`)."""
    if not hits:
        return []
    vector = await query_vector(index, query)
    if vector is None:
        cosines = [0.0] * len(hits)
    else:
        q = np.asarray(vector[0], dtype=np.float64)
        q = q / max(float(np.sqrt(q @ q)), 1e-12)
        cited = list(dict.fromkeys(cid for hit in hits for cid in hit.provenance.chunk_ids))
        near: dict[str, float] = {}
        if cited and index.store.has_collection(index.CHUNK_COLLECTION):
            present, matrix = index.store.collection(index.CHUNK_COLLECTION, len(q)).present(cited)
            near = dict(zip(present, _cosines(matrix, q), strict=True))
        bare = [i for i, hit in enumerate(hits) if not any(cid in near for cid in hit.provenance.chunk_ids)]
        own: dict[int, float] = {}
        if bare:
            texts = [hits[i].text for i in bare]
            embedded = checked_vectors(await index.embedder.aembed(texts), len(texts), None, index.embedder.name)
            own = dict(zip(bare, _cosines(embedded, q), strict=True))
        cosines = [own[i] if i in own else max(near[cid] for cid in hit.provenance.chunk_ids if cid in near)
                   for i, hit in enumerate(hits)]
    return [
        hit.model_copy(update={"score": min(1.0, max(0.0, c)) if math.isfinite(c) else 0.0,
                               "metadata": {**hit.metadata, "raw_score": hit.raw_score}})
        for hit, c in zip(hits, cosines, strict=True)
    ]


def _cosines(matrix: Any, unit: np.ndarray) -> list[float]:
    """The cosine similarity of each row of ``matrix`` to the unit vector ``unit``, row by row
    in float64, so a passage's score does not depend on which others were scored with it."""
    rows = np.asarray(matrix, dtype=np.float64).reshape(-1, len(unit))
    dots = np.einsum("ij,j->i", rows, unit.astype(np.float64))
    norms = np.maximum(np.sqrt(np.einsum("ij,ij->i", rows, rows)), 1e-12)
    return [float(c) for c in dots / norms]


def by_rank(hits: Sequence[Hit]) -> list[Hit]:
    """The hits re-scored by position (``1 / (1 + rank)``): for lists whose order is the ranking
    but whose scores come from different scales (fused lists, mixed kinds)."""
    return [h.model_copy(update={"score": 1.0 / (1 + i)}) for i, h in enumerate(hits)]


# -- retrievers --------------------------------------------------------------------------------
class BaseRetriever:
    """Base class of every retrieval mode (see the module docstring).

    Parameters
    ----------
    index:
        The index to search.
    k:
        Hits returned when a call does not pass its own ``k`` (default: the class's
        ``default_k``).
    settings:
        The mode's own settings: the fields of its :attr:`params_class`, validated once into
        :attr:`params` (a bad or unknown one is a ``ConfigurationError`` here, not in a search).

    ``filter`` (set by ``index.as_retriever(filter=...)``, or given per call) restricts every
    search to the documents whose metadata matches (:mod:`rhizome.core.retrieval.filters`).
    """

    default_k: ClassVar[int] = 4
    fill: ClassVar[bool] = True
    """Top up with the nearest chunks when the mode's own hits run out before ``k``."""
    filterable: ClassVar[bool] = True
    """Whether the mode's hits cite the documents they come from, so that a metadata filter can
    be applied to them; a mode that sets it false refuses filters."""
    mode: str | None = None
    """The mode name (reported in :attr:`Retrieval.mode`)."""
    modes: ClassVar[tuple[str, ...]] = ()
    """The modes of a class that runs several (LightRAG's graph modes, HippoRAG's v2 and v1),
    chosen by its ``mode`` keyword, the first by default; empty: the one :attr:`mode`."""
    reranks_itself: ClassVar[bool] = False
    """Whether the mode applies :attr:`reranker` inside its own search (spRAG's RSE reranks the
    candidate chunks before choosing segments) rather than to its hits at the end."""
    reranker: Any = None
    """A :class:`~rhizome.core.retrieval.rerank.Reranker` the hits are reranked with (set by
    ``index.as_retriever(reranker=...)``): the search asks for :attr:`rerank_candidates` hits
    and keeps the ``k`` it scores highest."""
    rerank_candidates: int | None = None
    """How many hits a reranked search asks for (default
    :data:`~rhizome.core.retrieval.rerank.RERANK_CANDIDATES`; never fewer than ``k``)."""
    score_threshold: float | None = None
    """The least score a returned hit has (set by ``index.as_retriever(score_threshold=...)``):
    applied after the ranking, so a search may return fewer than ``k`` hits, or none; the notes
    say how many it left out."""
    OVERFETCH: ClassVar[int] = 10
    """At most how many times ``k`` hits a filtered search asks the mode for."""
    params_class: ClassVar[type[RetrieverParams]] = RetrieverParams
    """The model of the mode's settings, each field with its default and what it means (none
    here); ``params_class.model_json_schema()`` lists them. A mode sets it and annotates
    :attr:`params` with it."""
    params: RetrieverParams
    """The settings this retriever was made with, validated."""

    def __init__(self, index: Any, k: int | None = None, **settings: Any) -> None:
        if self.modes:
            self.mode = settings.pop("mode", self.modes[0])
            if self.mode not in self.modes:
                raise ConfigurationError(f"unknown mode {self.mode!r} for {type(self).__name__}; modes: {', '.join(self.modes)}")
        self.index = index
        self.k = check_k(k, self.default_k)
        self.filter: MetadataFilter | None = None
        defaults = self._default_settings()
        given = {key: value for key, value in settings.items() if value is not None or key not in defaults}
        subject = f"the {self.mode} mode" if self.mode else type(self).__name__
        self.params = self.params_class.of({**defaults, **given}, subject=subject)

    def _default_settings(self) -> Mapping[str, Any]:
        """Settings whose default comes from the index or the mode rather than from
        :attr:`params_class` (e.g. the index configuration's search settings): used where the
        caller gives none, or gives ``None``. Default: none."""
        return {}

    @property
    def embedder(self) -> Any:
        return self.index.embedder

    async def _asearch(self, query: str, k: int) -> Retrieval:
        raise NotImplementedError

    async def _ahits(self, query: str, k: int) -> Retrieval:
        """The search :meth:`aretrieve` runs: only its hits are used, so a mode whose context
        costs more than its hits may override this to skip the context (default:
        :meth:`_asearch`)."""
        return await self._asearch(query, k)

    async def asearch(self, query: str, k: int | None = None, *, filter: Any = None, context: bool = True) -> Retrieval:
        """Hits, context, stats and notes of one search (``filter``: this call's, instead of
        the retriever's; ``context=False``: the hits only, as :meth:`aretrieve` gets them)."""
        return await self._finish(self._asearch if context else self._ahits, query, k, filter)

    async def _finish(self, search: Any, query: str, k: int | None, filter: Any = None) -> Retrieval:
        query = check_query(query)
        kept = k = check_k(k, self.k)
        if self._reranking:
            k = rerank.candidates(k, self.rerank_candidates)  # over-fetch: the reranker picks `kept` of them
        wanted = as_filter(filter) if filter is not None else self.filter
        # the store's generations read once per search, and the query embedded once
        with usage_scope() as usage, generations_held(), query_vectors_held(), damaged_left_out() as damaged:
            allowed = self._allowed(wanted)
            if allowed is not None and not allowed:
                result = Retrieval(query=query)
            else:
                asked = k if allowed is None else self._overfetch(k, len(allowed))
                result = await search(query, asked)
                # a mode that does not fill asks again for more while too few hits match and it
                # had more to give
                while (allowed is not None and not self.fill and len(self._within(result.hits, allowed)) < k
                       and len(result.hits) >= asked and asked < k * self.OVERFETCH):
                    asked = min(asked * 2, k * self.OVERFETCH)
                    result = await search(query, asked)
            result = await self._complete(result, query, k, wanted, allowed)
            await self._rerank_hits(result, kept)
            await self._score(result)
        self._report_damaged(result, damaged)
        result.stats = {**usage.stats(), **result.stats}
        return result

    async def _score(self, result: Retrieval) -> None:
        """``result``'s hits scored by :func:`relevance` (their order kept), and those below
        :attr:`score_threshold` left out."""
        result.hits = await relevance(self.index, result.query, result.hits)
        if self.score_threshold is not None and result.hits:
            kept = [hit for hit in result.hits if hit.score >= self.score_threshold]
            if len(kept) < len(result.hits):
                left = len(result.hits) - len(kept)
                result.notes.append(f"{_count(left, 'hit')} scored below the score_threshold {self.score_threshold:g} "
                                    f"and {'were' if left > 1 else 'was'} left out")
                result.stats["below_threshold"] = left
            result.hits = kept

    def _report_damaged(self, result: Retrieval, damaged: list[DamagedChunk]) -> None:
        """Say which passages the search left out because their stored text is damaged (a
        note, and an :class:`IndexDamageWarning` for callers that see no notes), and how to
        store them again: from the file each came from, when the index knows it."""
        if not damaged:
            return
        chunks = {d.chunk_id: d for d in damaged}
        sources = self.index.store.documents_metadata(d.document_id for d in chunks.values())
        named = "; ".join(
            f"chunk {d.chunk_id} of document {d.document_id!r} ({d.why}"
            + (f"; from {source}" if isinstance(source := sources.get(d.document_id, {}).get("source"), str) else "") + ")"
            for d in list(chunks.values())[:5]
        )
        more = f" and {len(chunks) - 5} more" if len(chunks) > 5 else ""
        one = len({d.document_id for d in chunks.values()}) == 1
        note = (f"left out {_count(len(chunks), 'passage')} whose stored text is damaged: {named}{more}. Inserting "
                f"{'that document' if one else 'those documents'} again stores {'it' if one else 'them'} again, "
                "unchanged or not (`rhizome index` of the files or folder the index was built from); "
                f"`rhizome check {shown(self.index.store.location)}` lists every damaged passage")
        result.notes.append(note)
        result.stats["damaged_left_out"] = len(chunks)
        warnings.warn(note, IndexDamageWarning, stacklevel=2)

    @property
    def _reranking(self) -> bool:
        return self.reranker is not None and not self.reranks_itself

    async def _rerank_hits(self, result: Retrieval, k: int) -> None:
        """``result``'s hits reranked to the best ``k`` (when the retriever has a reranker)."""
        if self._reranking and result.hits:
            result.stats["reranked"] = len(result.hits)
            result.hits = await rerank.arerank(self.reranker, result.query, result.hits, k)

    def asked(self, k: int | None = None, *, filter: Any = None) -> int:
        """How many hits a search asks the mode's own steps for to return ``k`` (more under a
        filter, which drops the hits citing other documents): for steps run outside
        :meth:`asearch`, such as a LangGraph graph's map and reduce, which then end with
        :meth:`afinish`."""
        k = check_k(k, self.k)
        if self._reranking:
            k = rerank.candidates(k, self.rerank_candidates)
        allowed = self._allowed(as_filter(filter) if filter is not None else self.filter)
        return k if not allowed else self._overfetch(k, len(allowed))

    async def afinish(self, result: Retrieval, k: int | None = None, *, filter: Any = None) -> Retrieval:
        """What every search of this retriever ends with, for a ``result`` its mode's steps
        made elsewhere (see :meth:`asked`): the filter applied, the best ``k`` kept, topped up
        with the nearest chunks, notes on why hits are few, and each hit given the metadata of
        the documents it cites."""
        kept = k = check_k(k, self.k)
        if self._reranking:
            k = rerank.candidates(k, self.rerank_candidates)
        wanted = as_filter(filter) if filter is not None else self.filter
        with damaged_left_out() as damaged:
            result = await self._complete(result, check_query(result.query), k, wanted, self._allowed(wanted))
            await self._rerank_hits(result, kept)
            await self._score(result)
        self._report_damaged(result, damaged)
        return result

    async def _complete(
        self, result: Retrieval, query: str, k: int, wanted: MetadataFilter | None, allowed: set[str] | None
    ) -> Retrieval:
        """The end of a search (:meth:`afinish`): ``result`` holds the mode's own hits."""
        if allowed is not None and not allowed:
            result.notes.append(f"no stored document matches the filter {wanted}")
            hits: list[Hit] = []
        else:
            if allowed is not None:
                before = len(result.hits)
                result.hits = self._within(result.hits, allowed)
                result.context = self._within(result.context, allowed)
                result.stats["filtered_out"] = before - len(result.hits)
            hits = sorted(dedupe(result.hits), key=lambda h: -h.score)[:k]  # stable: ties keep the mode's order
            own = len(hits)
            if len(hits) < k and self.fill:
                held = {cid for h in hits if h.kind in ("chunk", "segment") for cid in h.provenance.chunk_ids}
                fill = await self._nearest_chunks(query, k, held, allowed)
                if fill:
                    result.stats["filled"] = len(fill[: k - len(hits)])
                    hits = by_rank(hits + fill[: k - len(hits)])
            result.notes += self._explain(own, len(hits), k, allowed, wanted)
        if hits and not any(ch.isalnum() for ch in query):  # nothing to match on: say so
            result.notes.append(f"the query {query!r} has no letter or digit, so nothing in it was matched: "
                                "these hits are not chosen by what it asks")
        result.hits = with_document_metadata(self.index.store, hits)
        result.context = with_document_metadata(self.index.store, result.context)
        result.mode = self.mode
        return result

    def _allowed(self, wanted: MetadataFilter | None) -> set[str] | None:
        """The documents a filtered search may cite (``None``: no filter)."""
        if wanted is None:
            return None
        if not self.filterable:
            raise InvalidInputError(
                f"the {self.mode or getattr(self.index, 'method', '')} mode does not cite the documents of its hits, "
                "so it cannot apply a metadata filter; use another mode, or search without the filter"
            )
        return self.index.store.matching_documents(wanted)  # evaluated in SQL, not row by row here

    def _overfetch(self, k: int, allowed: int) -> int:
        """How many hits to ask the mode for when ``allowed`` documents may be cited."""
        total = max(self.index.store.count("documents"), 1)
        return max(k, min(k * self.OVERFETCH, -(-k * total // allowed)))

    def _within(self, hits: list[Hit], allowed: set[str]) -> list[Hit]:
        """The hits whose cited documents all are ``allowed``."""
        for hit in hits:
            if not hit.provenance.document_ids:
                raise InvalidInputError(
                    f"the {self.mode} mode returned a {hit.kind} hit that cites no document, so the metadata filter "
                    "cannot be applied to it; search without the filter"
                )
        return [h for h in hits if set(h.provenance.document_ids) <= allowed]

    def _explain(self, own: int, total: int, k: int, allowed: set[str] | None, wanted: MetadataFilter | None) -> list[str]:
        """Why the mode's own hits were fewer than ``k``, in words."""
        if own >= k:
            return []
        name = f"the {self.mode} search" if self.mode else "the search"
        if not self.index.store.count("chunks"):
            return ["the index holds no documents yet; insert some first (rhizome index)"]
        scope = f" among the {_count(len(allowed), 'document')} matching {wanted}" if allowed is not None else ""
        if total == 0:
            return [f"{name} found nothing{scope} for this query"]
        if total > own:
            return [f"{name} found {_count(own, 'hit')} of its own{scope}; the other {total - own} "
                    f"{'are the passages' if total - own > 1 else 'is the passage'} nearest to the query"]
        return [f"{name} found {_count(own, 'hit')}{scope}" + (": that is all the index holds" if self.fill else "")]

    async def _nearest_chunks(self, query: str, k: int, exclude: set[str], allowed: set[str] | None = None) -> list[Hit]:
        vector = await query_vector(self.index, query)
        among = None if allowed is None else set(self.index.store.chunk_ids(sorted(allowed))) - exclude
        ranked = vector_search(self.index.store, self.index.CHUNK_COLLECTION, vector, k + len(exclude), among=among)
        return chunk_hits(self.index, [(cid, score) for cid, score in ranked if cid not in exclude], via="fill")

    async def aretrieve(self, query: str, k: int | None = None, *, filter: Any = None) -> list[Hit]:
        """The ``k`` best hits for ``query`` (``filter``: this call's, instead of the retriever's)."""
        return (await self._finish(self._ahits, query, k, filter)).hits

    async def acontext(self, query: str, k: int | None = None, *, filter: Any = None) -> list[Hit]:
        """The context this mode assembles for answering ``query`` (its hits when it assembles
        nothing more)."""
        result = await self.asearch(query, k, filter=filter)
        return result.context or result.hits

    def search(self, query: str, k: int | None = None, *, filter: Any = None, context: bool = True) -> Retrieval:
        return run_sync(self.asearch(query, k, filter=filter, context=context))

    def retrieve(self, query: str, k: int | None = None, *, filter: Any = None) -> list[Hit]:
        return run_sync(self.aretrieve(query, k, filter=filter))

    def context(self, query: str, k: int | None = None, *, filter: Any = None) -> list[Hit]:
        return run_sync(self.acontext(query, k, filter=filter))

    def __repr__(self) -> str:
        shown = f", filter={str(self.filter)!r}" if self.filter is not None else ""
        return f"{type(self).__name__}(method={getattr(self.index, 'method', '?')!r}, mode={self.mode!r}, k={self.k}{shown})"


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _same(a: Any, b: Any) -> bool:
    """Equal values, a NaN counting as equal to a NaN (an index written before metadata was
    checked on input may hold them)."""
    return a == b or (a != a and b != b)


def with_document_metadata(store: Any, hits: list[Hit]) -> list[Hit]:
    """The hits with the metadata of the documents they cite under their own keys: all of it
    for a hit from one document, the fields its documents agree on for one that cites several.
    A field the hit's own keys would hide (:data:`HIT_KEYS` — a CSV column ``score`` or ``id``
    — or a key of the hit's metadata holding another value) is kept as ``document.<field>``."""
    if not hits:
        return hits
    stored = store.documents_metadata(d for h in hits for d in h.provenance.document_ids)
    out = []
    for hit in hits:
        cited = [stored[d] for d in hit.provenance.document_ids if d in stored]
        if not cited:
            out.append(hit)
            continue
        shared = {key: value for key, value in cited[0].items() if all(key in m and _same(m[key], value) for m in cited[1:])}
        shared = {
            f"document.{key}" if key in HIT_KEYS or (key in hit.metadata and not _same(hit.metadata[key], value)) else key: value
            for key, value in shared.items()
        }
        out.append(hit.model_copy(update={"metadata": {**shared, **hit.metadata}}) if shared else hit)
    return out


def same_text(text: str) -> str:
    """``text`` with case and spacing aside: two points that say the same say it alike."""
    return " ".join(text.lower().split())


def best_distinct(items: Iterable[T], k: int, key: Callable[[T], Any], text: Callable[[T], str]) -> list[T]:
    """The first ``k`` of ``items`` ordered by ``key`` (ties keep their order) whose ``text``
    (:func:`same_text`) was not seen before: what a map-reduce search keeps of its points, and
    what a map step may apply to its candidates before it makes hits of them."""
    seen: set[str] = set()
    out: list[T] = []
    for item in sorted(items, key=key):
        if len(out) == k:
            break
        said = same_text(text(item))
        if said not in seen:
            seen.add(said)
            out.append(item)
    return out


class MapPlan(BaseModel):
    """What a map-reduce search reads: the ids of the groups each map call takes, in map order
    (plain JSON, so a plan can travel in a graph's state), and what planning cost."""

    batches: list[list[str]] = Field(default_factory=list)
    stats: dict[str, Any] = Field(default_factory=dict)


class MapReduceSearch(BaseRetriever):
    """A mode that maps batches of groups (communities, hierarchy layers) to scored points and
    keeps the best: ``aplan`` chooses the groups and batches them, ``amap`` turns one batch into
    point hits (each with its score and provenance; batches are independent, so they may run
    concurrently anywhere), ``reduce`` orders the points of every batch, given in plan order.
    ``_asearch`` runs the three (citing after the reduce, when the mode splits ``amap`` into
    ``apoints`` and ``acite``); ``langgraph_rhizome`` runs the same three as graph branches.
    A plan's batches are ids (JSON), so a plan can travel in a graph's state."""

    async def aplan(self, query: str) -> MapPlan:
        """The groups to map for ``query``, in batches (one map call each), and what choosing
        them cost."""
        raise NotImplementedError

    async def amap(self, query: str, batch: Sequence[str], k: int) -> list[Hit]:
        """The points of one batch of the plan: at most ``k`` (the reduce keeps ``k`` in all,
        so no batch contributes more), each a hit with its score and provenance."""
        raise NotImplementedError

    async def apoints(self, query: str, batch: Sequence[str], k: int) -> list[Hit]:
        """:meth:`amap`'s points before they cite anything, for a mode whose reduce does not
        read provenance: it implements this and :meth:`acite` (and ``amap`` as the two in
        turn), and its own search then cites only the points the reduce keeps. Default:
        :meth:`amap`."""
        return await self.amap(query, batch, k)

    async def acite(self, query: str, points: list[Hit]) -> list[Hit]:
        """``points`` of :meth:`apoints`, each with its provenance (default: as they are)."""
        return points

    def point_key(self, point: Hit) -> Any:
        """Sort key of the points in :meth:`reduce` (default: higher score first)."""
        return -point.score

    def reduce(self, query: str, points: Sequence[Hit], k: int) -> list[Hit]:
        """The ``k`` best points by :meth:`point_key` (ties keep plan order), the same text
        (case and spacing aside) once."""
        return best_distinct(points, k, self.point_key, lambda point: point.text)

    def explain(self, plan: MapPlan, hits: list[Hit]) -> list[str]:
        """Why the search found no point (or too few), in words, for :attr:`Retrieval.notes`
        (default: nothing to say)."""
        return []

    async def _asearch(self, query: str, k: int) -> Retrieval:
        plan = await self.aplan(query)
        mapped = await asyncio.gather(*(self.apoints(query, batch, k) for batch in plan.batches))
        hits = await self.acite(query, self.reduce(query, [p for points in mapped for p in points], k))
        stats = {"points": len(hits), "batches": len(plan.batches), **plan.stats}
        return Retrieval(query=query, hits=hits, stats=stats, notes=self.explain(plan, hits))


__all__ = [
    "MAX_PROVENANCE_CHUNKS",
    "BaseRetriever",
    "MapPlan",
    "MapReduceSearch",
    "Retrieval",
    "batch_texts",
    "best_distinct",
    "by_rank",
    "check_k",
    "check_positive",
    "check_query",
    "check_score_threshold",
    "chunk_hit",
    "chunk_hits",
    "dedupe",
    "pack",
    "point_hit",
    "provenance",
    "query_vector",
    "query_vectors_held",
    "relevance",
    "round_robin",
    "same_text",
    "vector_search",
    "with_document_metadata",
]
