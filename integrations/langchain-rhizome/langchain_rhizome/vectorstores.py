"""A LangChain ``VectorStore`` over any Rhizome index.

:class:`RhizomeVectorStore` is the face chains written for a vector store expect
(``add_documents``, ``delete``, ``similarity_search``, ``as_retriever(search_type=...)``), over
the index of any method — the naive vector index, GraphRAG, LightRAG, HippoRAG, RAPTOR, spRAG,
ArchRAG. One entry of the store is one Rhizome document: its id is the document id, and a search
returns the passages the method finds, each as a ``Document`` carrying the id and the metadata
of the document it comes from. A hit built from several documents (an entity, a community
report, a RAPTOR summary) carries the hit's own id and Rhizome's provenance metadata, as
:func:`~langchain_rhizome.retrievers.hit_to_document` writes it.

Scores. Every hit of every mode carries the same score: its relevance to the query in
``[0, 1]``, the cosine similarity of the query to the nearest passage the hit cites, negatives
as 0 (:func:`rhizome.core.retrieval.contract.relevance`); the mode's own ranking score (rank
fusion, PageRank, a model's rating) is in ``metadata["raw_score"]`` of a ``Document`` made by
:func:`~langchain_rhizome.retrievers.hit_to_document`. ``similarity_search_with_score`` and
the relevance scores (``similarity_search_with_relevance_scores``,
``as_retriever(search_type="similarity_score_threshold")``) are that score, so one threshold
means the same in every mode; the order stays the mode's, so a threshold may return fewer than
``k`` documents, or none. ``relevance="rank"`` gives ``1 / rank`` (1, 0.5, 0.33, ...) instead.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from langchain_rhizome.filters import rhizome_filter
from langchain_rhizome.rerank import as_reranker
from langchain_rhizome.retrievers import hit_to_document, open_index
from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError, IndexDamageWarning, InvalidInputError
from rhizome.core.naive import VectorRetriever
from rhizome.core.retrieval.contract import chunk_hits, vector_search
from rhizome.core.retrieval.filters import as_filter
from rhizome.core.store.storage import damaged_left_out
from rhizome.core.types import Document as RhizomeDocument
from rhizome.core.types import Hit

Relevance = Literal["auto", "cosine", "rank"]

_PASSAGE_KINDS = ("chunk", "segment")
"""Hit kinds that are a passage of one document: returned with that document's id and metadata."""


def cosine_relevance(score: float) -> float:
    """A cosine similarity as a relevance score in ``[0, 1]`` (negative similarities are 0)."""
    return min(1.0, max(0.0, float(score)))


class RhizomeVectorStore(VectorStore):
    """A LangChain ``VectorStore`` over a Rhizome index of any method.

    Example:
        .. code-block:: python

            store = RhizomeVectorStore(index)                 # any Rhizome index
            ids = store.add_texts(["Bees live in hives."], metadatas=[{"year": 2020}])
            docs = store.similarity_search("Where do bees live?", k=2, filter={"year": {"$gt": 2000}})
            retriever = store.as_retriever(search_type="mmr", search_kwargs={"k": 3})

    ``mode`` is the retrieval mode searches use (default: the method's first); a search may pass
    its own ``mode=``. ``relevance`` says how relevance scores are made (see the module
    docstring): ``"auto"`` or ``"cosine"`` (the same: the hits' scores, a cosine relevance in
    every mode) or ``"rank"``. ``retriever_options`` go to ``index.as_retriever`` for every mode: a
    ``filter`` every search keeps to (a search's own ``filter`` replaces it), a ``reranker`` (a
    Rhizome reranker or any LangChain document compressor) with ``rerank_candidates``, a
    ``score_threshold`` every search keeps to, a mode's settings.
    """

    def __init__(
        self,
        index: Any,
        *,
        mode: str | None = None,
        relevance: Relevance = "auto",
        **retriever_options: Any,
    ) -> None:
        if not callable(getattr(index, "as_retriever", None)) or not callable(getattr(index, "ainsert", None)):
            raise ConfigurationError(
                f"RhizomeVectorStore needs a Rhizome index (with insert, delete and as_retriever); got "
                f"{type(index).__name__} — for a retriever alone use RhizomeRetriever"
            )
        if relevance not in ("auto", "cosine", "rank"):
            raise ConfigurationError(f"relevance must be 'auto', 'cosine' or 'rank', got {relevance!r}")
        self.index = index
        self.mode = index.check_mode(mode)
        self.relevance = relevance
        if "filter" in retriever_options:
            retriever_options["filter"] = rhizome_filter(retriever_options["filter"])
        if "reranker" in retriever_options:
            retriever_options["reranker"] = as_reranker(retriever_options["reranker"])
        self.retriever_options = retriever_options
        self._retrievers: dict[str | None, Any] = {}
        self.retriever(self.mode)  # a bad option fails now

    # -- the index's retrievers ----------------------------------------------------------------
    def retriever(self, mode: str | None = None) -> Any:
        """The Rhizome retriever of ``mode`` (default: the store's), made once."""
        mode = self.mode if mode is None else self.index.check_mode(mode)
        if mode not in self._retrievers:
            self._retrievers[mode] = self.index.as_retriever(mode=mode, **self.retriever_options)
        return self._retrievers[mode]

    def _chunk_mode(self, mode: str | None) -> bool:
        """Whether ``mode`` ranks passages by the cosine similarity of their vectors."""
        return isinstance(self.retriever(mode), VectorRetriever)

    @property
    def embeddings(self) -> Embeddings | None:
        """The LangChain ``Embeddings`` the index embeds with, when it was given one (``None``
        for a Rhizome embedder such as ``HashingEmbedder``)."""
        model = getattr(self.index.embedder, "embeddings", None)
        return model if isinstance(model, Embeddings) else None

    # -- writing -------------------------------------------------------------------------------
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Insert ``texts`` as documents (``ids``: theirs; a missing id is a new UUID) and
        return their ids. A known id whose text or metadata changed is replaced; an unchanged
        one is skipped (adding twice is adding once). ``fallback`` goes to the index's insert;
        ``batch_size`` (which LangChain's indexing API passes) is not needed: the index commits
        in batches of its own ``batch_size`` chunks."""
        return run_sync(self.aadd_texts(texts, metadatas, ids=ids, **kwargs))

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        kwargs.pop("batch_size", None)
        documents = _documents(list(texts), metadatas, ids)
        report = await self.index.ainsert(documents, **kwargs)
        if report.failed:
            failed = "; ".join(f"{doc_id}: {why}" for doc_id, why in report.failed.items())
            raise InvalidInputError(
                f"{len(report.failed)} of {len(documents)} texts were not indexed ({failed}); the others are "
                "stored: add the failed ones again to retry them"
            )
        return [d.id for d in documents]

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete the documents ``ids`` (unknown ids are ignored) and what only they supported."""
        return run_sync(self.adelete(ids, **kwargs))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        if ids is None:
            raise InvalidInputError(
                "delete needs the ids to delete; to empty the store pass every id: "
                "store.delete(store.index.store.document_ids())"
            )
        await self.index.adelete(list(ids), **kwargs)
        return True

    # -- reading by id -------------------------------------------------------------------------
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents of ``ids``, in that order; unknown ids are skipped. The text is
        put back together from the document's stored chunks (exact for a text within one chunk;
        a longer one loses only whitespace around it). A document with a chunk whose stored text
        is damaged is skipped too, with an :class:`IndexDamageWarning` that names it (inserting
        it again stores it again), rather than returned with a gap in its text."""
        store = self.index.store
        with damaged_left_out() as damaged:
            chunks = {i: store.chunks_of(i) for i in dict.fromkeys(ids) if isinstance(i, str) and store.document_state(i) is not None}
        if broken := sorted({d.document_id for d in damaged}):
            warnings.warn(f"skipped {', '.join(map(repr, broken))}: stored text damaged (changed outside Rhizome, or not "
                          "UTF-8); insert the document again to store it again", IndexDamageWarning, stacklevel=2)
        wanted = [i for i, held in chunks.items() if held and i not in broken]  # a failed or pending version holds no chunks
        metadata = store.documents_metadata(wanted)
        return [Document(id=i, page_content=_text(chunks[i]), metadata=metadata.get(i, {})) for i in wanted]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return self.get_by_ids(ids)

    # -- searching -----------------------------------------------------------------------------
    async def _ahits(self, query: str, k: int, filter: Any, mode: str | None) -> list[Hit]:
        options = {} if filter is None else {"filter": rhizome_filter(filter)}
        return await self.retriever(mode).aretrieve(query, k=k, **options)

    def _documents(self, hits: list[Hit]) -> list[Document]:
        """One LangChain ``Document`` per hit: a passage of one document with that document's id
        and metadata, any other hit as :func:`hit_to_document` writes it."""
        one = [h.provenance.document_ids[0] for h in hits if h.kind in _PASSAGE_KINDS and len(h.provenance.document_ids) == 1]
        metadata = self.index.store.documents_metadata(one)
        out = []
        for hit in hits:
            cited = hit.provenance.document_ids
            if hit.kind in _PASSAGE_KINDS and len(cited) == 1 and cited[0] in metadata:
                out.append(Document(id=cited[0], page_content=hit.text, metadata=metadata[cited[0]]))
            else:
                out.append(hit_to_document(hit))
        return out

    def similarity_search(
        self, query: str, k: int = 4, filter: Any = None, *, mode: str | None = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` passages the mode finds for ``query`` (``filter``: a LangChain filter dict on
        document metadata, see :mod:`rhizome.core.retrieval.filters`)."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter, mode=mode, **kwargs)]

    async def asimilarity_search(
        self, query: str, k: int = 4, filter: Any = None, *, mode: str | None = None, **kwargs: Any
    ) -> list[Document]:
        return [doc for doc, _ in await self.asimilarity_search_with_score(query, k, filter, mode=mode, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, *, mode: str | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` passages with their scores: each hit's relevance in ``[0, 1]`` (see the
        module docstring), in the mode's order."""
        return run_sync(self.asimilarity_search_with_score(query, k, filter, mode=mode, **kwargs))

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, *, mode: str | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        _no_extra(kwargs)
        hits = await self._ahits(query, k, filter, mode)
        return list(zip(self._documents(hits), [h.score for h in hits], strict=True))

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """How a hit's score becomes a relevance score in ``[0, 1]``: it is one already (the
        cosine relevance every mode's hits carry), kept within the bounds."""
        return cosine_relevance

    def _relevance(self, scored: list[tuple[Document, float]]) -> list[tuple[Document, float]]:
        if self.relevance == "rank":
            return [(doc, 1.0 / rank) for rank, (doc, _) in enumerate(scored, start=1)]
        score = self._select_relevance_score_fn()
        return [(doc, score(s)) for doc, s in scored]

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return self._relevance(self.similarity_search_with_score(query, k, **kwargs))

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return self._relevance(await self.asimilarity_search_with_score(query, k, **kwargs))

    # -- by vector ------------------------------------------------------------------------------
    def _check_by_vector(self, mode: str | None) -> None:
        if not self._chunk_mode(mode):
            shown = mode if mode is not None else self.mode
            raise NotImplementedError(
                f"the {shown} mode of a {self.index.method} index searches from the query's text, not from a vector; "
                "use similarity_search(query), or a store over the index's naive mode (mode='naive') to search by vector"
            )

    async def _avector_hits(self, embedding: Sequence[float], k: int, filter: Any) -> list[Hit]:
        try:
            vector = np.asarray(embedding, dtype=np.float32).reshape(1, -1)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"a query vector is a list of numbers: {exc}") from exc
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(norm) or norm == 0.0:
            raise InvalidInputError("the query vector is all zeros or not finite; give the embedding of a query")
        known = self.index.store.embedding_dimension  # read, never recorded: a search changes nothing
        if known is None:
            return []
        if vector.shape[1] != known:
            raise InvalidInputError(
                f"the query vector has {vector.shape[1]} dimensions but the index holds {known}-dimensional "
                f"vectors; embed the query with the index's embedder ({self.index.embedder.name})"
            )
        among = None
        wanted = as_filter(rhizome_filter(filter))
        if wanted is not None:
            allowed = self.index.store.matching_documents(wanted)
            among = set(self.index.store.chunk_ids(sorted(allowed)))
            if not among:
                return []
        ranked = vector_search(self.index.store, self.index.CHUNK_COLLECTION, vector / norm, k, among=among)
        return chunk_hits(self.index, ranked)

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, *, mode: str | None = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` passages nearest ``embedding`` (a chunk mode only: the others search from
        the query's text and raise ``NotImplementedError``)."""
        return run_sync(self.asimilarity_search_by_vector(embedding, k, filter, mode=mode, **kwargs))

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, *, mode: str | None = None, **kwargs: Any
    ) -> list[Document]:
        _no_extra(kwargs)
        self._check_by_vector(mode)
        return self._documents(await self._avector_hits(embedding, k, filter))

    # -- maximal marginal relevance ------------------------------------------------------------
    async def _avectors(self, hits: list[Hit]) -> np.ndarray:
        """A vector per hit: the stored vector of a chunk hit, the embedding of the text of any
        other (an entity, a summary, a segment)."""
        store = self.index.store
        ids = [h.id for h in hits if h.kind == "chunk"]
        stored: dict[str, np.ndarray] = {}
        if ids and store.has_collection(self.index.CHUNK_COLLECTION):
            present, vectors = store.collection(self.index.CHUNK_COLLECTION).present(ids)
            stored = dict(zip(present, vectors, strict=True))
        missing = [h.text for h in hits if h.id not in stored]
        embedded = iter(await self.index.embedder.aembed(missing) if missing else [])
        return np.array([stored[h.id] if h.id in stored else next(embedded) for h in hits], dtype=np.float32)

    async def _ammr(self, query_vector: Any, hits: list[Hit], k: int, lambda_mult: float) -> list[Document]:
        if not hits:
            return []
        chosen = maximal_marginal_relevance(np.asarray(query_vector, dtype=np.float32), list(await self._avectors(hits)), lambda_mult, k)
        return self._documents([hits[i] for i in chosen])

    def max_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, filter: Any = None,
        *, mode: str | None = None, **kwargs: Any,
    ) -> list[Document]:
        """``k`` of the mode's ``fetch_k`` best passages, chosen for relevance to ``query`` and
        diversity among themselves (``lambda_mult``: 1 relevance only, 0 diversity only), over
        the passages' stored vectors."""
        return run_sync(self.amax_marginal_relevance_search(query, k, fetch_k, lambda_mult, filter, mode=mode, **kwargs))

    async def amax_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, filter: Any = None,
        *, mode: str | None = None, **kwargs: Any,
    ) -> list[Document]:
        _no_extra(kwargs)
        hits = await self._ahits(query, max(fetch_k, k), filter, mode)
        if not hits:
            return []
        vector = (await self.index.embedder.aembed_query([query]))[0]
        return await self._ammr(vector, hits, k, lambda_mult)

    def max_marginal_relevance_search_by_vector(
        self, embedding: list[float], k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, filter: Any = None,
        *, mode: str | None = None, **kwargs: Any,
    ) -> list[Document]:
        return run_sync(self.amax_marginal_relevance_search_by_vector(embedding, k, fetch_k, lambda_mult, filter, mode=mode, **kwargs))

    async def amax_marginal_relevance_search_by_vector(
        self, embedding: list[float], k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, filter: Any = None,
        *, mode: str | None = None, **kwargs: Any,
    ) -> list[Document]:
        _no_extra(kwargs)
        self._check_by_vector(mode)
        return await self._ammr(embedding, await self._avector_hits(embedding, max(fetch_k, k), filter), k, lambda_mult)

    # -- constructors --------------------------------------------------------------------------
    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict] | None = None,
        *,
        ids: list[str] | None = None,
        method: str | type = "naive",
        mode: str | None = None,
        relevance: Relevance = "auto",
        retriever_options: dict[str, Any] | None = None,
        **index_options: Any,
    ) -> RhizomeVectorStore:
        """A new index of ``method`` (a registered method name — ``naive``, ``graphrag``,
        ``lightrag``, ``hipporag``, ``raptor``, ``sprag``, ``archrag`` — or an index class)
        embedding with ``embedding`` (LangChain ``Embeddings`` or a Rhizome embedder), holding
        ``texts``. ``index_options`` go to the index (``path``, ``llm``, ``chunk_size``, the
        method's settings); without ``path`` it lives in memory."""
        store = cls._empty(embedding, method=method, mode=mode, relevance=relevance,
                           retriever_options=retriever_options, **index_options)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> RhizomeVectorStore:
        """As :meth:`from_texts` (the same keyword arguments), inserting without blocking."""
        store = cls._empty(embedding, **kwargs)
        await store.aadd_texts(texts, metadatas, ids=ids)
        return store

    @classmethod
    def from_persist_dir(cls, persist_dir: str | Path, **kwargs: Any) -> RhizomeVectorStore:
        """A store over the index saved in ``persist_dir`` (any method, or a ``postgresql://``
        location). Keyword arguments the loader takes (``embedder``, ``llm``, ``offline``,
        ``readonly``...) open the index; the others (``mode``, ``relevance``, ``filter``,
        ``reranker``, a mode's settings) make the store."""
        index, options = open_index(persist_dir, kwargs)
        return cls(index, **options)

    @classmethod
    def _empty(
        cls,
        embedding: Any,
        *,
        method: str | type = "naive",
        mode: str | None = None,
        relevance: Relevance = "auto",
        retriever_options: dict[str, Any] | None = None,
        **index_options: Any,
    ) -> RhizomeVectorStore:
        return cls(_new_index(method, embedding, index_options), mode=mode, relevance=relevance, **(retriever_options or {}))


def _new_index(method: str | type, embedding: Any, options: dict[str, Any]) -> Any:
    from rhizome.core.store.storage import method_registry

    cls: Any = method
    if isinstance(method, str):
        registry = method_registry()
        if method not in registry:
            raise ConfigurationError(f"unknown method {method!r}; installed: {', '.join(sorted(registry))}")
        cls = registry[method].load()
    return cls(embedding, **options)  # the index wraps LangChain models itself


def _documents(texts: list[str], metadatas: list[dict] | None, ids: list[str] | None) -> list[RhizomeDocument]:
    """Rhizome documents for ``add_texts``' arguments, checked against each other."""
    for name, given in (("metadatas", metadatas), ("ids", ids)):
        if given is not None and len(given) != len(texts):
            raise InvalidInputError(f"{len(texts)} texts but {len(given)} {name}; give one per text (or none)")
    out = []
    for i, text in enumerate(texts):
        doc_id = ids[i] if ids is not None and ids[i] else str(uuid.uuid4())
        if not isinstance(doc_id, str):
            raise InvalidInputError(f"an id is a string, got {type(doc_id).__name__} {doc_id!r} for text {i}")
        meta = dict(metadatas[i]) if metadatas is not None and metadatas[i] is not None else {}
        out.append(RhizomeDocument(id=doc_id, text=text, metadata=meta))
    return out


def _text(chunks: list[Any]) -> str:
    """A document's text from its chunks, in order: each chunk's characters past those the
    ones before it covered (chunks overlap by their character spans)."""
    text, end = "", None
    for chunk in chunks:
        if end is None:
            text, end = chunk.text, chunk.end
        elif chunk.end > end:
            skip = max(0, end - chunk.start)
            text += (" " * (chunk.start - end) if chunk.start > end else "") + chunk.text[skip:]
            end = chunk.end
    return text


def _no_extra(kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise TypeError(
            f"RhizomeVectorStore got unexpected keyword argument(s) {sorted(kwargs)}; a search takes k, filter and mode"
        )


__all__ = ["RhizomeVectorStore", "cosine_relevance"]
