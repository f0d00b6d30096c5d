"""RhizomeRetriever and the tool helper beyond the standard suite: both paths, metadata, per-call
k, callbacks reaching nested LangChain model calls, tools, and the real VectorIndex."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from _integration_toys import CORPUS, QUERY, ModelUsingRetriever, ToyIndex, ToyRetriever
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import ToolMessage

from langchain_rhizome import RhizomeRetriever, as_langchain_retriever, create_rhizome_tool
from rhizome.core.models.adapters import LangChainChatModel, current_callbacks
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.naive import VectorIndex


class Recorder(BaseCallbackHandler):
    """Records retriever and model runs with their parents."""

    run_inline = True

    def __init__(self) -> None:
        self.retrievers: list[tuple[UUID, UUID | None]] = []
        self.models: list[tuple[UUID, UUID | None]] = []
        self.prompts: list[str] = []

    def on_retriever_start(
        self,
        serialized: Any,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.retrievers.append((run_id, parent_run_id))

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.models.append((run_id, parent_run_id))
        self.prompts.append(str(messages[0][-1].content))


@pytest.fixture
def toy() -> ToyRetriever:
    return ToyRetriever(CORPUS)


@pytest.fixture
def vector_index() -> VectorIndex:
    index = VectorIndex(HashingEmbedder(dimension=256), chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    return index


def _model_retriever(
    responses: list[str] | None = None,
) -> tuple[RhizomeRetriever, FakeListChatModel]:
    chat = FakeListChatModel(responses=responses or ["queen colony insects"])
    inner = ModelUsingRetriever(LangChainChatModel(chat), ToyRetriever(CORPUS))
    return RhizomeRetriever(retriever=inner, k=2), chat


# -- basic behaviour ---------------------------------------------------------------------------
def test_sync_path_calls_sync_retrieve(toy: ToyRetriever) -> None:
    docs = RhizomeRetriever(retriever=toy, k=3).invoke(QUERY)
    assert [d.id for d in docs] == [d.metadata["id"] for d in docs]
    assert len(docs) == 3
    assert toy.calls == [(QUERY, 3)]


async def test_async_path_calls_aretrieve(toy: ToyRetriever) -> None:
    class AsyncOnly(ToyRetriever):
        def retrieve(self, query: str, k: int | None = None) -> Any:
            raise AssertionError("the async path must not use the sync method")

    retriever = RhizomeRetriever(retriever=AsyncOnly(CORPUS), k=2)
    docs = await retriever.ainvoke(QUERY)
    assert len(docs) == 2
    assert docs == RhizomeRetriever(retriever=toy, k=2).invoke(QUERY)


def test_documents_carry_flat_metadata(toy: ToyRetriever) -> None:
    doc = RhizomeRetriever(retriever=toy, k=1).invoke("paper nests of wasps")[0]
    assert isinstance(doc, Document)
    assert doc.id == "doc-wasps-c0"
    assert doc.page_content == CORPUS[2].text
    meta = doc.metadata
    assert meta["kind"] == "chunk"
    assert isinstance(meta["score"], float) and meta["score"] > 0
    assert meta["document_ids"] == ["doc-wasps"]
    assert meta["chunk_ids"] == ["doc-wasps-c0"]
    assert meta["spans"] == [
        {
            "document_id": "doc-wasps",
            "chunk_id": "doc-wasps-c0",
            "start": 0,
            "end": len(CORPUS[2].text),
        }
    ]
    assert meta["sources"] == ["notes/wasps.md"]
    assert meta["title"] == "Wasps"


async def test_per_call_k_overrides_default(toy: ToyRetriever) -> None:
    retriever = RhizomeRetriever(retriever=toy)
    assert len(retriever.invoke(QUERY)) == 4
    assert len(retriever.invoke(QUERY, k=1)) == 1
    assert len(await retriever.ainvoke(QUERY, k=5)) == 5
    assert toy.calls[-1] == (QUERY, 5)


def test_bad_arguments_are_rejected(toy: ToyRetriever) -> None:
    with pytest.raises(ValueError, match="Retriever protocol"):
        RhizomeRetriever(retriever=object())
    with pytest.raises(ValueError, match="from_index"):
        RhizomeRetriever(retriever=ToyIndex(CORPUS))
    with pytest.raises(ValueError):
        RhizomeRetriever(retriever=toy, k=0)
    retriever = RhizomeRetriever(retriever=toy)
    with pytest.raises(TypeError, match="top_k"):
        retriever.invoke(QUERY, top_k=2)
    with pytest.raises(ValueError, match="positive"):
        retriever.invoke(QUERY, k=0)


def test_batch_and_from_index() -> None:
    retriever = RhizomeRetriever.from_index(ToyIndex(CORPUS), k=2, tags=["rhizome"])
    assert retriever.tags == ["rhizome"]
    results = retriever.batch([QUERY, "lava and basalt"])
    assert [len(r) for r in results] == [2, 2]
    assert results[1][0].metadata["document_ids"] == ["doc-volcano"]


def test_ls_params_name_the_retriever_and_embedder(vector_index: VectorIndex) -> None:
    params = RhizomeRetriever.from_index(vector_index)._get_ls_params()
    assert params["ls_retriever_name"] == "rhizome"
    assert params["ls_embedding_provider"] == "hashing"
    assert params["ls_embedding_model"] == "256"


# -- callbacks ---------------------------------------------------------------------------------
def test_callbacks_reach_nested_model_sync() -> None:
    retriever, _ = _model_retriever()
    recorder = Recorder()
    docs = retriever.invoke(QUERY, config={"callbacks": [recorder]})
    assert len(docs) == 2
    assert len(recorder.retrievers) == 1 and len(recorder.models) == 1
    retriever_run = recorder.retrievers[0][0]
    assert recorder.models[0][1] == retriever_run
    assert QUERY in recorder.prompts[0]
    assert current_callbacks.get() is None


async def test_callbacks_reach_nested_model_async() -> None:
    retriever, _ = _model_retriever()
    recorder = Recorder()
    await retriever.ainvoke(QUERY, config={"callbacks": [recorder]})
    assert len(recorder.models) == 1
    assert recorder.models[0][1] == recorder.retrievers[0][0]
    assert current_callbacks.get() is None


async def test_callbacks_survive_sync_invoke_inside_event_loop() -> None:
    # sync invoke from async code: the sync method has to leave this thread's loop
    retriever, _ = _model_retriever()
    recorder = Recorder()
    retriever.invoke(QUERY, config={"callbacks": [recorder]})
    assert len(recorder.models) == 1
    assert recorder.models[0][1] == recorder.retrievers[0][0]


async def test_concurrent_runs_keep_their_own_parents() -> None:
    retriever, _ = _model_retriever(["queen"] * 4)
    recorder = Recorder()
    await asyncio.gather(
        *(retriever.ainvoke(f"{QUERY} {i}", config={"callbacks": [recorder]}) for i in range(4))
    )
    retriever_runs = {run for run, _ in recorder.retrievers}
    assert len(retriever_runs) == 4
    assert sorted(parent for _, parent in recorder.models) == sorted(retriever_runs)  # type: ignore[type-var]


def test_model_outside_retriever_gets_no_callbacks() -> None:
    recorder = Recorder()
    chat = FakeListChatModel(responses=["hi"], callbacks=[recorder])
    LangChainChatModel(chat).complete("hello")
    assert recorder.models and recorder.models[0][1] is None


# -- tools -------------------------------------------------------------------------------------
def test_tool_from_index_returns_passages() -> None:
    tool = create_rhizome_tool(ToyIndex(CORPUS), "search_notes", "Search the nature notes.", k=2)
    assert tool.name == "search_notes"
    assert tool.description == "Search the nature notes."
    text = tool.invoke({"query": "paper nests of wasps"})
    assert CORPUS[2].text in text
    assert len(text.split("\n\n")) == 2


async def test_tool_with_artifact_keeps_provenance(toy: ToyRetriever) -> None:
    tool = create_rhizome_tool(
        RhizomeRetriever(retriever=toy, k=1),
        "search",
        "Search.",
        response_format="content_and_artifact",
    )
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "call-1", "name": "search", "args": {"query": "lava"}}
    )
    assert isinstance(message, ToolMessage)
    assert message.artifact[0].metadata["document_ids"] == ["doc-volcano"]


def test_as_langchain_retriever_accepts_all_kinds(toy: ToyRetriever) -> None:
    own = RhizomeRetriever(retriever=toy, k=2)
    assert as_langchain_retriever(own) is own
    assert as_langchain_retriever(own, k=1).k == 1 and own.k == 2
    assert as_langchain_retriever(toy, k=3).k == 3
    assert isinstance(as_langchain_retriever(ToyIndex(CORPUS)), RhizomeRetriever)
    with pytest.raises(TypeError):
        as_langchain_retriever("not a retriever")


# -- the real naive index ----------------------------------------------------------------------
def test_vector_index_sync_and_async_agree(vector_index: VectorIndex) -> None:
    retriever = RhizomeRetriever.from_index(vector_index, k=3)
    docs = retriever.invoke(QUERY)
    assert len(docs) == 3
    assert docs == asyncio.run(retriever.ainvoke(QUERY))
    first = docs[0]
    assert first.metadata["kind"] == "chunk"
    assert first.metadata["document_ids"][0] in {d.id for d in CORPUS}
    assert first.metadata["spans"][0]["end"] > first.metadata["spans"][0]["start"]
    assert [d.metadata["score"] for d in docs] == sorted(
        (d.metadata["score"] for d in docs), reverse=True
    )


def test_vector_index_from_persist_dir(vector_index: VectorIndex, tmp_path: Path) -> None:
    before = RhizomeRetriever.from_index(vector_index, k=3).invoke(QUERY)
    vector_index.persist(tmp_path / "idx")
    vector_index.close()  # release the writer lock, as a finished build would
    reopened = RhizomeRetriever.from_persist_dir(tmp_path / "idx", k=3)
    after = reopened.invoke(QUERY)
    assert [(d.id, d.page_content) for d in after] == [(d.id, d.page_content) for d in before]
    assert [d.metadata["score"] for d in after] == pytest.approx(
        [d.metadata["score"] for d in before]
    )
    reopened.retriever.index.close()


def test_from_persist_dir_with_langchain_embeddings(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    embeddings = DeterministicFakeEmbedding(size=32)
    index = VectorIndex(embeddings, chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    before = RhizomeRetriever.from_index(index, k=2).invoke(CORPUS[3].text)
    index.persist(tmp_path / "idx")
    index.close()
    reopened = RhizomeRetriever.from_persist_dir(tmp_path / "idx", k=2, embedder=embeddings)
    after = reopened.invoke(CORPUS[3].text)
    assert [d.id for d in after] == [d.id for d in before]
    assert after[0].metadata["document_ids"] == ["doc-rivers"]
    reopened.retriever.index.close()


def test_metadata_and_filters_reach_langchain_documents() -> None:
    """Defect: as_retriever(filter=...) was accepted and ignored, and custom metadata (page,
    author) was dropped from the hits."""
    index = VectorIndex(HashingEmbedder())
    index.insert([d.model_copy(update={"metadata": {**d.metadata, "kingdom": "animal" if "queen" in d.text else "earth", "page": i}})
                  for i, d in enumerate(CORPUS)])
    retriever = RhizomeRetriever.from_index(index, k=3, filter={"kingdom": "earth"})
    docs = retriever.invoke(QUERY)
    assert {d.metadata["title"] for d in docs} == {"Rivers", "Volcanoes"}  # only two documents match
    assert all(d.metadata["kingdom"] == "earth" and isinstance(d.metadata["page"], int) for d in docs)
    per_call = RhizomeRetriever.from_index(index, k=2).invoke(QUERY, filter={"page": {"$in": [0, "1"]}})
    assert {d.metadata["title"] for d in per_call} == {"Bees", "Ants"}
    assert asyncio.run(retriever.ainvoke(QUERY, filter={"title": "Wasps"}))[0].metadata["source"] == "notes/wasps.md"
    later = RhizomeRetriever.from_index(index, k=5).invoke(QUERY, filter={"page": {"$gt": 1}, "kingdom": {"$ne": "earth"}})
    assert {d.metadata["page"] for d in later} == {i for i, d in enumerate(CORPUS) if i > 1 and "queen" in d.text}
    with pytest.raises(ValueError, match=r"unknown operator '\$like'.*\$icontains"):
        retriever.invoke(QUERY, filter={"page": {"$like": "1%"}})


def test_structured_query_filters_translate_to_rhizome_filters() -> None:
    """A self-query retriever's filter (a ``Comparison`` or ``Operation``) picks the same
    documents as the dict it translates to; every comparator and operator translates."""
    from langchain_core.structured_query import (
        Comparator,
        Comparison,
        Operation,
        Operator,
        StructuredQuery,
    )

    from langchain_rhizome import RhizomeTranslator

    index = VectorIndex(HashingEmbedder())
    index.insert([d.model_copy(update={"metadata": {**d.metadata, "page": i, "tags": ["queen"] if "queen" in d.text else []}})
                  for i, d in enumerate(CORPUS)])
    translator = RhizomeTranslator()
    assert set(translator.allowed_comparators) == set(Comparator) and set(translator.allowed_operators) == set(Operator)
    late = Comparison(comparator=Comparator.GTE, attribute="page", value=2)
    queen = Comparison(comparator=Comparator.CONTAIN, attribute="tags", value="queen")
    either = Operation(operator=Operator.OR, arguments=[Operation(operator=Operator.NOT, arguments=[late]), queen])
    assert either.accept(translator) == {"$or": [{"$not": {"page": {"$gte": 2}}}, {"tags": {"$contains": "queen"}}]}
    expected = {d.metadata["title"] for i, d in enumerate(CORPUS) if i < 2 or "queen" in d.text}
    docs = RhizomeRetriever.from_index(index, k=5, filter=either).invoke(QUERY)
    assert {d.metadata["title"] for d in docs} == expected
    assert {d.metadata["title"] for d in RhizomeRetriever.from_index(index, k=5).invoke(QUERY, filter=either)} == expected
    like = Comparison(comparator=Comparator.LIKE, attribute="title", value="BEE")
    assert [d.metadata["title"] for d in RhizomeRetriever.from_index(index, k=5).invoke(QUERY, filter=like)] == ["Bees"]
    query, options = translator.visit_structured_query(StructuredQuery(query="queens", filter=late, limit=None))
    assert query == "queens" and options == {"filter": {"page": {"$gte": 2}}}
    assert translator.visit_structured_query(StructuredQuery(query="q", filter=None, limit=None)) == ("q", {})
    for comparator in Comparator:
        assert Comparison(comparator=comparator, attribute="page", value=[1] if comparator.value in ("in", "nin") else 1).accept(translator)
    with pytest.raises(ValueError, match="LangChain Comparison or Operation"):
        RhizomeRetriever.from_index(index).invoke(QUERY, filter="page > 1")


def test_a_langchain_document_compressor_reranks_every_method_s_hits() -> None:
    """A BaseDocumentCompressor given as ``reranker`` picks and orders the candidates; the
    Documents keep the hits' ids, provenance and relevance; raw scores are the compressor's relevance_score,
    or its ranks when it sets none."""
    from langchain_core.documents import BaseDocumentCompressor

    from langchain_rhizome import CompressorReranker

    class Overlap(BaseDocumentCompressor):  # a fake: keeps the two documents sharing most words with the query
        scored: bool = True

        def compress_documents(self, documents, query, callbacks=None):
            words = set(query.lower().split())
            ranked = sorted(documents, key=lambda d: -len(words & set(d.page_content.lower().split())))[:2]
            if self.scored:
                return [d.model_copy(update={"metadata": {**d.metadata, "relevance_score": 0.9 - i / 10}})
                        for i, d in enumerate(ranked)]
            return [d.model_copy(update={"page_content": "compressed"}) for d in ranked]

    index = VectorIndex(HashingEmbedder())
    index.insert(CORPUS)
    query = "queen ant eggs colony"
    candidates = RhizomeRetriever.from_index(index, k=5).invoke(query)
    words = set(query.split())
    expected = sorted(candidates, key=lambda d: -len(words & set(d.page_content.lower().split())))[:2]
    for compressor, scores in ((Overlap(), [0.9, 0.8]), (Overlap(scored=False), [1.0, 0.5])):
        docs = RhizomeRetriever.from_index(index, k=2, reranker=compressor, rerank_candidates=5).invoke(query)
        assert [d.id for d in docs] == [d.id for d in expected] and [d.metadata["raw_score"] for d in docs] == scores
        assert [d.metadata["score"] for d in docs] == [d.metadata["score"] for d in expected]  # the relevance stays
        assert [d.page_content for d in docs] == [d.page_content for d in expected]  # the hit's own text
        assert [d.metadata["document_ids"] for d in docs] == [d.metadata["document_ids"] for d in expected]
        assert [d.metadata["retrieval_score"] for d in docs] == [d.metadata["raw_score"] for d in expected]
    wrapped = index.as_retriever(k=1, reranker=CompressorReranker(Overlap()), rerank_candidates=5)
    assert asyncio.run(wrapped.aretrieve(query))[0].id == expected[0].id
    with pytest.raises(ValueError, match="CompressorReranker"):
        index.as_retriever(reranker=Overlap())
