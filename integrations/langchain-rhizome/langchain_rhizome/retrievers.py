"""A LangChain retriever over any Rhizome index.

The class is generic: it adapts the :class:`rhizome.core.protocols.Retriever` protocol, so every
Rhizome method (GraphRAG, LightRAG, RAPTOR, HippoRAG, the naive vector index, ...) works with it
without method-specific code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from pydantic import Field, field_validator

from langchain_rhizome.filters import rhizome_filter
from langchain_rhizome.rerank import as_reranker
from rhizome.core.errors import InvalidInputError
from rhizome.core.models.adapters import using_callbacks, wrap_model
from rhizome.core.store.storage import split_load_options
from rhizome.core.types import Hit, Provenance

# Keyword arguments that ``BaseRetriever.invoke`` itself understands and forwards anyway.
_IGNORED_INVOKE_KWARGS = frozenset({"verbose"})


def hit_to_document(hit: Hit) -> Document:
    """A LangChain ``Document`` for one Rhizome hit: the hit's text as ``page_content``, its id as
    ``id``, and its score, kind and provenance (document ids, chunk ids, character spans,
    sources) as flat metadata."""
    return Document(page_content=hit.text, id=hit.id, metadata=hit.flat_metadata())


def document_to_hit(document: Document) -> Hit:
    """The Rhizome hit a ``Document`` of :func:`hit_to_document` came from (its provenance and
    metadata restored), so hits can travel as Documents (tool artifacts) and be cited again."""
    meta = dict(document.metadata)
    try:
        return Hit(
            id=str(meta.pop("id", None) or document.id or ""),
            text=document.page_content,
            score=float(meta.pop("score", 0.0)),
            kind=meta.pop("kind", "chunk"),
            provenance=Provenance(
                document_ids=meta.pop("document_ids", []),
                chunk_ids=meta.pop("chunk_ids", []),
                spans=meta.pop("spans", []),
                sources=meta.pop("sources", []),
            ),
            metadata=meta,
        )
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise InvalidInputError(
            f"this Document does not carry a Rhizome hit (make it with hit_to_document): {exc}"
        ) from exc


def open_index(persist_dir: str | Path, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The index stored in ``persist_dir`` (any method), opened with the loader's keyword
    arguments of ``kwargs`` (``embedder``, ``llm``, ``offline``, ``readonly``...; LangChain chat
    models and embeddings wrapped for Rhizome), and the rest of ``kwargs`` (a mode and its
    settings)."""
    from rhizome.core.store.storage import load_index

    models, options = split_load_options(kwargs)
    return load_index(persist_dir, **{key: wrap_model(value) for key, value in models.items()}), options


class RhizomeRetriever(BaseRetriever):
    """Retrieve from a Rhizome index inside LangChain chains and agents.

    Wraps anything that implements Rhizome's ``Retriever`` protocol (``retrieve(query, k)`` and
    ``aretrieve(query, k)``) — typically ``index.as_retriever()`` — and returns one LangChain
    ``Document`` per hit. Both the sync and the async path call the Rhizome retriever directly
    (no executor hop for ``ainvoke``).

    Model calls that the Rhizome retriever makes while it runs (for methods whose retrieval uses
    an LLM) are reported to the caller's callbacks as children of this retriever's run, when the
    index uses a LangChain chat model through :class:`rhizome.core.models.adapters.LangChainChatModel`.

    Example:
        .. code-block:: python

            retriever = RhizomeRetriever.from_index(index, k=5)
            docs = retriever.invoke("Who founded the company?")
            docs = retriever.invoke("Who founded the company?", k=2)  # per-call k
            docs = retriever.invoke("Who founded it?", filter={"year": {"$in": [2023, 2024]}})

    Each ``Document``'s metadata holds the metadata of the documents the hit cites (``source``,
    ``title``, ``page`` and the user's own fields) beside the hit's score, kind and provenance.
    ``filter`` (in ``from_index(..., filter=...)``, or per call) keeps only hits whose
    documents match: a LangChain filter dict on document metadata (``$eq $ne $gt $gte $lt
    $lte $in $nin $contains $exists``, ``$and $or $not``) or a structured-query ``Comparison``
    / ``Operation`` (:class:`~langchain_rhizome.filters.RhizomeTranslator`), honoured by every
    method and mode (see :mod:`rhizome.core.retrieval.filters`).
    """

    retriever: Any
    """The Rhizome retriever: any object with ``retrieve`` and ``aretrieve``."""

    k: int = Field(default=4, ge=1)
    """How many documents to return unless a call passes its own ``k``."""

    @field_validator("retriever")
    @classmethod
    def _check_retriever(cls, value: Any) -> Any:
        if callable(getattr(value, "aretrieve", None)) and callable(
            getattr(value, "retrieve", None)
        ):
            return value
        if callable(getattr(value, "as_retriever", None)):
            raise ValueError(
                f"{type(value).__name__} looks like a Rhizome index, not a retriever; use "
                "RhizomeRetriever.from_index(index, k=...) or pass index.as_retriever()"
            )
        raise ValueError(
            f"retriever must implement Rhizome's Retriever protocol (retrieve and aretrieve); "
            f"got {type(value).__name__}"
        )

    # -- constructors --------------------------------------------------------------------------
    @classmethod
    def from_index(cls, index: Any, k: int = 4, **kwargs: Any) -> RhizomeRetriever:
        """A retriever over ``index`` (any Rhizome ``Index``) returning ``k`` documents.

        Keyword arguments that are fields of this class (``tags``, ``metadata``) are set on it;
        the others go to ``index.as_retriever`` (``mode``, ``filter``, ``reranker`` — a Rhizome
        reranker or any LangChain document compressor — ``rerank_candidates`` and the mode's
        options).
        """
        own = {name: kwargs.pop(name) for name in ("tags", "metadata", "name") if name in kwargs}
        if "filter" in kwargs:
            kwargs["filter"] = rhizome_filter(kwargs["filter"])
        if "reranker" in kwargs:
            kwargs["reranker"] = as_reranker(kwargs["reranker"])
        return cls(retriever=index.as_retriever(**kwargs), k=k, **own)

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | Path, k: int = 4, **kwargs: Any
    ) -> RhizomeRetriever:
        """Open the index stored in ``persist_dir`` (any method) and retrieve from it.

        Keyword arguments the loader takes (``embedder``, ``llm``, ``offline``, ``readonly``...)
        open the index, LangChain chat models and embeddings wrapped for Rhizome automatically;
        the others (``mode`` and the mode's settings) go to ``index.as_retriever``.
        """
        index, options = open_index(persist_dir, kwargs)
        return cls.from_index(index, k=k, **options)

    # -- LangChain hooks -----------------------------------------------------------------------
    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_retriever_name"] = "rhizome"
        embedder = getattr(self.retriever, "embedder", None) or getattr(
            getattr(self.retriever, "index", None), "embedder", None
        )
        name = getattr(embedder, "name", None)
        if isinstance(name, str) and name:
            provider, _, model = name.partition(":")
            params["ls_embedding_provider"] = provider
            if model:
                params["ls_embedding_model"] = model
        return params

    def _k(self, k: int | None, extra: dict[str, Any]) -> int:
        unknown = set(extra) - _IGNORED_INVOKE_KWARGS
        if unknown:
            raise TypeError(
                f"RhizomeRetriever got unexpected keyword argument(s) {sorted(unknown)}; "
                "only k and filter are accepted per call"
            )
        value = self.k if k is None else k
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"k must be a positive integer, got {value!r}")
        return value

    @staticmethod
    def _options(filter: Any) -> dict[str, Any]:
        """This call's filter for the Rhizome retriever (none: the retriever's own applies): a
        dict, or a structured-query ``Comparison`` / ``Operation``."""
        return {} if filter is None else {"filter": rhizome_filter(filter)}

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        n = self._k(k, kwargs)
        with using_callbacks(run_manager.get_child()):
            hits = self.retriever.retrieve(query, k=n, **self._options(filter))
        return [hit_to_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        n = self._k(k, kwargs)
        with using_callbacks(run_manager.get_child()):
            hits = await self.retriever.aretrieve(query, k=n, **self._options(filter))
        return [hit_to_document(hit) for hit in hits]


__all__ = ["RhizomeRetriever", "document_to_hit", "hit_to_document", "open_index"]
