"""A LlamaIndex retriever over any Rhizome index.

Generic over Rhizome's ``Retriever`` and ``Index`` protocols, so every Rhizome method works with
it without method-specific code.
"""

from __future__ import annotations

import json
from hashlib import sha256
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import (
    IndexNode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilters

from llama_index.retrievers.rhizome.rerank import as_reranker
from rhizome.core.errors import InvalidInputError
from rhizome.core.models.adapters import wrap_model
from rhizome.core.types import Hit

PROVENANCE_KEYS = ("document_ids", "chunk_ids", "spans", "sources")
"""Metadata keys that carry a hit's provenance as lists."""

_HIDDEN_FROM_MODELS = ("id", "score", "raw_score", "retrieval_score")
"""Scalar keys that mean nothing to an embedding model or an LLM prompt."""


class RhizomeNode(TextNode):
    """A ``TextNode`` whose ``hash`` is the hit's identity: its id and text. LlamaIndex's own
    hash also covers the metadata, where a hit keeps what this retrieval found (its score, the
    path that found it), so the same passage found by two retrievers or for two queries would
    hash apart and fusion (``QueryFusionRetriever``) could not merge it. It is stored and
    loaded as a plain ``TextNode``."""

    @classmethod
    def class_name(cls) -> str:
        return "TextNode"

    @property
    def hash(self) -> str:
        return sha256(f"{self.id_}\x1f{self.text}".encode("utf-8", "surrogatepass")).hexdigest()


def hit_to_node(hit: Hit) -> NodeWithScore:
    """A LlamaIndex ``NodeWithScore`` for one Rhizome hit.

    The node's id is the hit's id and its metadata is ``hit.flat_metadata()`` (score, kind and
    the provenance lists). The provenance lists, the id and the score stay in ``metadata`` for
    citations but are excluded from the text LlamaIndex shows to embedding models and LLMs.
    A hit from a single document also gets that document as its ``SOURCE`` relationship (so
    ``node.ref_doc_id`` works), and a passage hit (a chunk or segment) covering a single span
    gets its character offsets.
    """
    metadata = hit.flat_metadata()
    hidden = [
        key
        for key, value in metadata.items()
        if key in PROVENANCE_KEYS or key in _HIDDEN_FROM_MODELS or isinstance(value, (list, dict))
    ]
    relationships = {}
    document_ids = hit.provenance.document_ids
    if len(document_ids) == 1:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=document_ids[0])
    spans = hit.provenance.spans
    # offsets of the text itself: a passage's span, not the passage an entity's profile cites
    passage = hit.kind in ("chunk", "segment") and len(spans) == 1
    start, end = (spans[0].start, spans[0].end) if passage else (None, None)
    node = RhizomeNode(
        id_=hit.id,
        text=hit.text,
        metadata=metadata,
        excluded_embed_metadata_keys=list(hidden),
        excluded_llm_metadata_keys=list(hidden),
        relationships=relationships,
        start_char_idx=start,
        end_char_idx=end,
    )
    return NodeWithScore(node=node, score=hit.score)


_OPERATORS = {
    FilterOperator.EQ: "$eq", FilterOperator.NE: "$ne", FilterOperator.GT: "$gt", FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt", FilterOperator.LTE: "$lte", FilterOperator.IN: "$in", FilterOperator.NIN: "$nin",
    FilterOperator.CONTAINS: "$contains", FilterOperator.TEXT_MATCH: "$contains",
    FilterOperator.TEXT_MATCH_INSENSITIVE: "$icontains",
}
"""LlamaIndex filter operators that are one Rhizome operator (``any``, ``all`` and ``is_empty``
are written with several, see :func:`rhizome_filter`)."""


def rhizome_filter(filters: Any) -> dict[str, Any] | None:
    """A LlamaIndex ``MetadataFilters`` as a Rhizome metadata filter (a dict such as
    ``{"year": {"$gt": 1900}}``, which is also accepted as is; see
    :mod:`rhizome.core.retrieval.filters`). Every operator maps: ``==``, ``!=``, ``>``, ``>=``,
    ``<``, ``<=``, ``in`` and ``nin`` to their namesakes, ``contains`` and ``text_match`` to
    ``$contains`` (list membership, or a substring of text), ``text_match_insensitive`` to
    ``$icontains``, ``any`` / ``all`` to ``$contains`` of one / each of the values, and
    ``is_empty`` to ``$exists: false``; the conditions ``and``, ``or`` and ``not`` (none of
    the filters holds) to ``$and``, ``$or`` and ``$not``, nested filters included."""
    if filters is None or isinstance(filters, dict):
        return filters
    if not isinstance(filters, MetadataFilters):
        raise InvalidInputError(f"filters must be LlamaIndex MetadataFilters or a dict, not {type(filters).__name__}")
    parts = [rhizome_filter(item) or {} if isinstance(item, MetadataFilters) else _condition(item) for item in filters.filters]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return {"$and": parts}
    if not parts:  # no filter: "or" holds for none of the documents, "not" for all of them
        if condition == FilterCondition.OR:
            raise InvalidInputError("these MetadataFilters join no filter with 'or', which no document matches; give a filter")
        return {"$and": []}
    either = {"$or": parts}
    return either if condition == FilterCondition.OR else {"$not": either}


def _condition(item: Any) -> dict[str, Any]:
    """One LlamaIndex ``MetadataFilter`` as a Rhizome filter."""
    key, value, operator = item.key, item.value, item.operator
    if operator in (FilterOperator.IN, FilterOperator.NIN):
        values = value if isinstance(value, list) else [value]  # one value: a list of one
        return {key: {_OPERATORS[operator]: list(values)}}
    if operator in (FilterOperator.ANY, FilterOperator.ALL):
        values = value if isinstance(value, list) else [value]
        if not values:
            raise InvalidInputError(f"the {operator.value!r} filter on {key!r} needs at least one value")
        each = [{key: {"$contains": v}} for v in values]
        return {"$or" if operator == FilterOperator.ANY else "$and": each}
    if operator == FilterOperator.IS_EMPTY:
        return {key: {"$exists": False}}
    if operator in _OPERATORS:
        return {key: {_OPERATORS[operator]: value}}
    raise InvalidInputError(f"the filter on {key!r} uses {operator.value!r}, which Rhizome does not know yet; "
                            f"use one of {', '.join(op.value for op in _OPERATORS)}, any, all or is_empty")


class RhizomeRetriever(BaseRetriever):
    """Retrieve from a Rhizome index in LlamaIndex query engines, chat engines and agents.

    Args:
        retriever: any object with Rhizome's ``Retriever`` protocol (``retrieve(query, k)`` and
            ``aretrieve(query, k)``), typically ``index.as_retriever()``.
        similarity_top_k: how many nodes to return.
        filters: LlamaIndex ``MetadataFilters`` (every operator and condition, see
            :func:`rhizome_filter`) or a Rhizome
            filter dict: only hits whose documents' metadata matches are returned, whatever
            the method and mode (see :mod:`rhizome.core.retrieval.filters`).
        index: the Rhizome index behind ``retriever``; needed by :meth:`persist` (taken from
            ``retriever.index`` when not given).

    Each node's metadata holds the metadata of the documents the hit cites (``source``,
    ``title``, ``page`` and the user's fields) beside the hit's score, kind and provenance. A
    node's score is the hit's: its relevance to the query in ``[0, 1]``, by one rule in every
    mode (the query's cosine to the nearest passage it cites); the mode's own ranking score is
    ``metadata["raw_score"]``.
        callback_manager, object_map, objects, verbose: as for LlamaIndex's ``BaseRetriever``.

    Use :meth:`from_index` to build it from an index and :meth:`from_persist_dir` to reopen a
    stored one. ``aretrieve`` awaits the Rhizome retriever directly; ``retrieve`` calls its sync
    method.
    """

    def __init__(
        self,
        retriever: Any,
        similarity_top_k: int = 4,
        *,
        filters: Any = None,
        index: Any = None,
        callback_manager: CallbackManager | None = None,
        object_map: dict | None = None,
        objects: list[IndexNode] | None = None,
        verbose: bool = False,
    ) -> None:
        if not (
            callable(getattr(retriever, "aretrieve", None))
            and callable(getattr(retriever, "retrieve", None))
        ):
            hint = (
                "; it looks like an index: use RhizomeRetriever.from_index(index)"
                if callable(getattr(retriever, "as_retriever", None))
                else ""
            )
            raise TypeError(
                "retriever must implement Rhizome's Retriever protocol (retrieve and aretrieve); "
                f"got {type(retriever).__name__}{hint}"
            )
        if not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(
                f"similarity_top_k must be a positive integer, got {similarity_top_k!r}"
            )
        self._retriever = retriever
        self._filter = rhizome_filter(filters)
        self._index = index if index is not None else getattr(retriever, "index", None)
        self.similarity_top_k = similarity_top_k
        super().__init__(
            callback_manager=callback_manager,
            object_map=object_map,
            objects=objects,
            verbose=verbose,
        )

    # -- constructors --------------------------------------------------------------------------
    @classmethod
    def from_index(
        cls,
        index: Any,
        similarity_top_k: int = 4,
        *,
        filters: Any = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **retriever_kwargs: Any,
    ) -> RhizomeRetriever:
        """A retriever over ``index`` (any Rhizome ``Index``); ``filters`` as for the
        constructor; extra keyword arguments go to ``index.as_retriever`` (``mode``,
        ``reranker`` — a Rhizome reranker or any LlamaIndex node postprocessor —
        ``rerank_candidates``, ``score_threshold`` — the least score a node keeps, so fewer
        than ``similarity_top_k`` may come back — and the mode's options)."""
        wanted = rhizome_filter(filters)
        if wanted is not None:
            retriever_kwargs["filter"] = wanted
        if "reranker" in retriever_kwargs:
            retriever_kwargs["reranker"] = as_reranker(retriever_kwargs["reranker"])
        return cls(
            index.as_retriever(**retriever_kwargs),
            similarity_top_k=similarity_top_k,
            index=index,
            callback_manager=callback_manager,
            verbose=verbose,
        )

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | Path,
        similarity_top_k: int | None = None,
        *,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> RhizomeRetriever:
        """Reopen the index stored in ``persist_dir`` — whichever Rhizome method built it — and
        retrieve from it.

        Keyword arguments the loader takes (``embedder=``, ``llm=``, ``offline=``,
        ``readonly=``...; LlamaIndex's usual ``embed_model=`` is accepted as ``embedder=``) open
        the index, LlamaIndex and LangChain models wrapped for Rhizome automatically; models left
        out are rebuilt from the specs recorded in the manifest, which works for Rhizome's own
        models (Ollama, hashing) but not for framework models: pass those again. The other
        keyword arguments (``mode`` and the mode's settings) go to ``index.as_retriever``. Within
        one process this works right after :meth:`persist`: both share the index's store.
        What :meth:`persist` recorded of the retriever (its mode, ``similarity_top_k``, filter
        and settings) is used where the arguments do not say otherwise.
        """
        from rhizome.core.store.storage import load_index, split_load_options

        if "embed_model" in kwargs:
            if "embedder" in kwargs:
                raise TypeError("pass either embedder= or embed_model=, not both")
            kwargs["embedder"] = kwargs.pop("embed_model")
        models, options = split_load_options(kwargs)
        saved = _read_retriever_settings(persist_dir)
        options = {**saved.get("settings", {}), **({"mode": saved["mode"]} if saved.get("mode") else {}), **options}
        if "filters" not in options and saved.get("filter") is not None:
            options["filters"] = saved["filter"]
        index = load_index(persist_dir, **{key: wrap_model(value) for key, value in models.items()})
        return cls.from_index(
            index,
            similarity_top_k=similarity_top_k or saved.get("similarity_top_k", 4),
            callback_manager=callback_manager,
            verbose=verbose,
            **options,
        )

    # -- persistence ---------------------------------------------------------------------------
    @property
    def index(self) -> Any:
        """The Rhizome index behind this retriever, when known."""
        return self._index

    @property
    def rhizome_retriever(self) -> Any:
        """The wrapped Rhizome retriever."""
        return self._retriever

    def persist(self, persist_dir: str | Path) -> Path:
        """Write the underlying Rhizome index to ``persist_dir``, with this retriever's mode,
        ``similarity_top_k``, filter and settings beside it (``llama_index_retriever.json``);
        reopen both with :meth:`from_persist_dir`. Returns the directory written."""
        if self._index is None:
            raise ValueError(
                "this retriever does not know its index; build it with "
                "RhizomeRetriever.from_index(index) or pass index= to persist it"
            )
        written = Path(self._index.persist(persist_dir))
        if written.is_dir():
            (written / RETRIEVER_SETTINGS).write_text(json.dumps(self._settings(), default=str), encoding="utf-8")
        return written

    def _settings(self) -> dict[str, Any]:
        """What :meth:`from_persist_dir` needs to make this retriever again: the mode, ``k``,
        the filter, the score threshold and the settings that differ from the mode's defaults
        on this index."""
        retriever, mode = self._retriever, getattr(self._retriever, "mode", None)
        if mode not in (getattr(self._index, "modes", None) or {}):
            mode = None  # a method of one mode names none
        settings: dict[str, Any] = {}
        params = getattr(retriever, "params", None)
        if params is not None and self._index is not None:
            defaults = self._index.as_retriever(mode=mode).params.model_dump(mode="json")
            settings = {name: value for name, value in params.model_dump(mode="json").items() if value != defaults.get(name)}
        if getattr(retriever, "score_threshold", None) is not None:
            settings["score_threshold"] = retriever.score_threshold
        wanted = self._filter if self._filter is not None else _plain_filter(getattr(retriever, "filter", None))
        return {"mode": mode, "similarity_top_k": self.similarity_top_k, "filter": wanted, "settings": settings}

    # -- retrieval -----------------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        return {} if self._filter is None else {"filter": self._filter}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        k = self.similarity_top_k
        hits = self._retriever.retrieve(query_bundle.query_str, k=k, **self._options())
        return [hit_to_node(hit) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self._retriever.aretrieve(query_bundle.query_str, k=self.similarity_top_k, **self._options())
        return [hit_to_node(hit) for hit in hits]


RETRIEVER_SETTINGS = "llama_index_retriever.json"
"""The file :meth:`RhizomeRetriever.persist` writes beside the index: the retriever's settings."""


def _read_retriever_settings(persist_dir: str | Path) -> dict[str, Any]:
    path = Path(str(persist_dir)) / RETRIEVER_SETTINGS
    if "://" in str(persist_dir) or not path.is_file():
        return {}
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InvalidInputError(f"{path} is not the JSON persist() writes ({exc}); delete it to reopen with the defaults") from exc
    return saved if isinstance(saved, dict) else {}


def _plain_filter(wanted: Any) -> Any:
    """A Rhizome filter object as the dict it was given as (``None`` stays ``None``)."""
    if wanted is None:
        return None
    dump = getattr(wanted, "to_dict", None)
    return dump() if callable(dump) else None


__all__ = ["PROVENANCE_KEYS", "RhizomeNode", "RhizomeRetriever", "hit_to_node", "rhizome_filter"]
