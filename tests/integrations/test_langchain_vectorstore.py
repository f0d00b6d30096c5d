"""RhizomeVectorStore: LangChain's standard VectorStore suite over the naive index, and the
face's own promises (ids, filters, scores, MMR, search by vector) over every method."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _integration_toys import CORPUS
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from langchain_rhizome import RhizomeVectorStore
from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.naive import VectorIndex, VectorRetriever
from rhizome.tools.testing import (
    QUERIES,
    FailingChatModel,
    IndexConformance,
    index_class,
    registered_methods,
    shelved,
)


class TestRhizomeVectorStoreStandard(VectorStoreIntegrationTests):
    """The suite's own fake embeddings (6 dimensions), wrapped for Rhizome by its LangChain
    adapter, over an in-memory naive index."""

    @pytest.fixture
    def vectorstore(self) -> Iterator[RhizomeVectorStore]:  # type: ignore[override]
        index = VectorIndex(self.get_embeddings())
        try:
            yield RhizomeVectorStore(index)
        finally:
            index.close()


YEARS = {"doc-bees": 2020, "doc-ants": 2018, "doc-wasps": 2022, "doc-rivers": 1990, "doc-volcano": 2005}


def _texts() -> tuple[list[str], list[dict], list[str]]:
    docs = [d for d in CORPUS if d.id in YEARS]
    metas = [{**d.metadata, "year": YEARS[d.id], "tags": ["insect"] if d.id in ("doc-bees", "doc-ants", "doc-wasps") else ["earth"]}
             for d in docs]
    return [d.text for d in docs], metas, [d.id for d in docs]


@pytest.fixture
def store() -> Iterator[RhizomeVectorStore]:
    texts, metas, ids = _texts()
    made = RhizomeVectorStore.from_texts(texts, HashingEmbedder(dimension=256), metas, ids=ids)
    try:
        yield made
    finally:
        made.index.close()


def test_add_texts_generates_ids_and_get_by_ids_gives_the_text_back(store: RhizomeVectorStore) -> None:
    ids = store.add_texts(["Moss grows on the north side of trees.", "Lichen is a fungus and an alga."],
                          [{"year": 2001}, {"year": 2002}])
    assert len(ids) == 2 and len(set(ids)) == 2 and all(ids)
    got = store.get_by_ids([ids[1], "nope", ids[0]])
    assert [d.id for d in got] == [ids[1], ids[0]]
    assert got[0].page_content == "Lichen is a fungus and an alga." and got[0].metadata == {"year": 2002}
    with pytest.raises(InvalidInputError, match="2 texts but 1 metadatas"):
        store.add_texts(["a", "b"], [{}])


def test_a_long_text_comes_back_whole_from_its_chunks() -> None:
    text = " ".join(f"Sentence number {i} talks about the river delta and its birds." for i in range(60))
    store = RhizomeVectorStore(VectorIndex(HashingEmbedder(dimension=64), chunk_size=64, chunk_overlap=16))
    [doc_id] = store.add_texts([text])
    assert store.index.store.chunk_counts()[doc_id] > 3
    assert store.get_by_ids([doc_id])[0].page_content == text


def test_search_returns_documents_with_their_ids_and_metadata(store: RhizomeVectorStore) -> None:
    [(doc, score)] = store.similarity_search_with_score("queen bees in hives", k=1)
    assert doc.id == "doc-bees" and doc.metadata["year"] == 2020 and doc.metadata["title"] == "Bees"
    assert 0 < score <= 1


def test_delete_removes_from_search_and_get(store: RhizomeVectorStore) -> None:
    assert store.delete(["doc-bees", "unknown"]) is True
    assert "doc-bees" not in [d.id for d in store.similarity_search("queen bees in hives", k=5)]
    assert store.get_by_ids(["doc-bees"]) == []
    with pytest.raises(InvalidInputError, match="needs the ids"):
        store.delete()
    assert len(store.index.store.document_ids()) == 4  # nothing lost to the bad call


@pytest.mark.parametrize(("filter", "expected"), [
    ({"year": {"$gt": 2010}}, {"doc-bees", "doc-ants", "doc-wasps"}),
    ({"$or": [{"year": {"$lt": 2000}}, {"title": "Ants"}]}, {"doc-rivers", "doc-ants"}),
    ({"tags": "earth"}, {"doc-rivers", "doc-volcano"}),
    ({"$not": {"tags": {"$contains": "insect"}}, "year": {"$ne": 1990}}, {"doc-volcano"}),
    ({"source": {"$exists": False}}, {"doc-rivers"}),
])
def test_filters_pass_through_to_rhizomes_grammar(store: RhizomeVectorStore, filter: dict, expected: set[str]) -> None:
    found = {d.id for d in store.similarity_search("queen", k=5, filter=filter)}
    assert found == expected
    by_vector = store.similarity_search_by_vector(list(store.index.embedder.embed(["queen"])[0]), k=5, filter=filter)
    assert {d.id for d in by_vector} == expected


def test_search_by_vector_matches_search_by_query(store: RhizomeVectorStore) -> None:
    query = "lava and basalt"
    vector = [float(x) for x in store.index.embedder.embed([query])[0]]
    assert [d.id for d in store.similarity_search_by_vector(vector, k=3)] == [d.id for d in store.similarity_search(query, k=3)]
    with pytest.raises(InvalidInputError, match="all zeros"):
        store.similarity_search_by_vector([0.0] * 256)


def test_search_by_vector_checks_the_vector_and_changes_nothing() -> None:
    store = RhizomeVectorStore(VectorIndex(HashingEmbedder(dimension=32)))
    assert store.similarity_search_by_vector([1.0] * 5, k=2) == []  # empty: no dimension recorded from a query
    store.add_texts(["hello world"], ids=["h"])
    with pytest.raises(InvalidInputError, match="5 dimensions but the index holds 32"):
        store.similarity_search_by_vector([1.0] * 5)
    with pytest.raises(InvalidInputError, match="list of numbers"):
        store.similarity_search_by_vector(["a", "b"])  # type: ignore[list-item]
    assert [d.id for d in store.similarity_search("hello world", k=1)] == ["h"]


def test_relevance_scores_and_the_threshold_retriever(store: RhizomeVectorStore) -> None:
    scored = store.similarity_search_with_relevance_scores("queen bees in hives", k=5)
    raw = store.similarity_search_with_score("queen bees in hives", k=5)
    assert [s for _, s in scored] == [max(0.0, s) for _, s in raw]  # cosine, negatives as 0
    threshold = sorted(s for _, s in scored)[-2]
    retriever = store.as_retriever(search_type="similarity_score_threshold",
                                   search_kwargs={"k": 5, "score_threshold": threshold})
    assert [d.id for d in retriever.invoke("queen bees in hives")] == [d.id for d, s in scored if s >= threshold]
    rank = RhizomeVectorStore(store.index, relevance="rank")
    assert [s for _, s in rank.similarity_search_with_relevance_scores("queen bees in hives", k=3)] == [1.0, 0.5, 1 / 3]


def test_mmr_diversifies_over_the_stored_vectors(store: RhizomeVectorStore) -> None:
    store.add_texts(["Honey bees pollinate crops and live in hives ruled by a single queen bee."], ids=["bees-again"])
    plain = [d.id for d in store.similarity_search("honey bees hives queen", k=2)]
    assert set(plain) == {"doc-bees", "bees-again"}
    diverse = [d.id for d in store.max_marginal_relevance_search("honey bees hives queen", k=2, fetch_k=6, lambda_mult=0.3)]
    assert diverse[0] in plain and diverse[1] not in plain
    retriever = store.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 6, "lambda_mult": 0.3})
    assert [d.id for d in retriever.invoke("honey bees hives queen")] == diverse
    assert store.max_marginal_relevance_search("honey bees", k=2, filter={"year": {"$lt": 1000}}) == []


def test_retriever_search_kwargs_reach_the_store(store: RhizomeVectorStore) -> None:
    retriever = store.as_retriever(search_kwargs={"k": 2, "filter": {"tags": "earth"}})
    assert {d.id for d in retriever.invoke("queen")} == {"doc-rivers", "doc-volcano"}
    with pytest.raises(TypeError, match="unexpected keyword"):
        store.similarity_search("queen", k=2, filtre={"year": 1})


async def test_async_paths(store: RhizomeVectorStore) -> None:
    ids = await store.aadd_documents([Document(page_content="Glaciers carve fjords.", metadata={"year": 1999})])
    assert (await store.aget_by_ids(ids))[0].page_content == "Glaciers carve fjords."
    found = await store.asimilarity_search("glaciers carve fjords", k=1, filter={"year": 1999})
    assert [d.id for d in found] == ids
    mmr = await store.amax_marginal_relevance_search("glaciers", k=2, fetch_k=4)
    assert len(mmr) == 2
    await store.adelete(ids)
    assert await store.aget_by_ids(ids) == []
    made = await RhizomeVectorStore.afrom_texts(["one text"], HashingEmbedder(dimension=32), ids=["x"])
    assert [d.id for d in await made.asimilarity_search("one text", k=1)] == ["x"]


def test_bad_construction_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="needs a Rhizome index"):
        RhizomeVectorStore(object())
    with pytest.raises(ConfigurationError, match="unknown method"):
        RhizomeVectorStore.from_texts(["a"], HashingEmbedder(dimension=8), method="nonesuch")
    with pytest.raises(ConfigurationError, match="relevance"):
        RhizomeVectorStore(VectorIndex(HashingEmbedder(dimension=8)), relevance="dot")  # type: ignore[arg-type]


def test_the_store_s_embeddings_are_the_langchain_ones() -> None:
    fake = DeterministicFakeEmbedding(size=8)
    assert RhizomeVectorStore(VectorIndex(fake)).embeddings is fake
    assert RhizomeVectorStore(VectorIndex(HashingEmbedder(dimension=8))).embeddings is None


# -- every method through the face ------------------------------------------------------------
class _Kit(IndexConformance):
    """The conformance kit's way of building each method's index offline (fake model, hashing
    embedder, small chunks)."""


@pytest.fixture(params=registered_methods())
def method_store(request: pytest.FixtureRequest) -> Iterator[RhizomeVectorStore]:
    kit = _Kit()
    index = kit.build(request.param, documents=[])
    store = RhizomeVectorStore(index)
    docs = shelved()
    store.add_texts([d.text for d in docs], [d.metadata for d in docs], ids=[d.id for d in docs])
    try:
        yield store
    finally:
        index.close()


def test_every_method_and_mode_works_through_the_face(method_store: RhizomeVectorStore) -> None:
    store, index = method_store, method_store.index
    north = {d.id for d in shelved() if d.metadata["shelf"] == "north"}
    query = QUERIES[0]
    for mode in tuple(index.modes) or (None,):
        scored = store.similarity_search_with_relevance_scores(query, k=3, mode=mode)
        assert len(scored) == 3 and all(0.0 <= s <= 1.0 for _, s in scored), mode
        # the hits' own scores, the one relevance every mode's hits carry (no longer 1, 0.5, 0.33
        # by rank for a fused or graph mode)
        assert [s for _, s in scored] == [h.score for h in store.retriever(mode).retrieve(query, k=3)], mode
        threshold = sorted(s for _, s in scored)[1]
        kept = store.as_retriever(search_type="similarity_score_threshold",
                                  search_kwargs={"k": 3, "mode": mode, "score_threshold": threshold}).invoke(query)
        assert [d.page_content for d in kept] == [d.page_content for d, s in scored if s >= threshold], mode
        found = store.similarity_search(query, k=3, mode=mode, filter={"shelf": "north"})
        cited = {doc_id for d in found for doc_id in d.metadata.get("document_ids", [d.id])}
        assert found and cited <= north, (mode, cited)
        assert len(store.max_marginal_relevance_search(query, k=2, fetch_k=5, mode=mode)) == 2, mode
        assert len(store.as_retriever(search_kwargs={"k": 2, "mode": mode}).invoke(query)) == 2, mode
        vector = [float(x) for x in index.embedder.embed([query])[0]]
        if isinstance(store.retriever(mode), VectorRetriever):
            assert store.similarity_search_by_vector(vector, k=2, mode=mode)
        else:
            with pytest.raises(NotImplementedError, match="use similarity_search"):
                store.similarity_search_by_vector(vector, k=2, mode=mode)
    gone = sorted(north)[0]
    store.delete([gone])
    assert store.get_by_ids([gone]) == []
    assert gone not in {d.id for d in store.similarity_search(query, k=len(index.store.document_ids()) + 2)}


def test_langchains_indexing_api_keeps_the_store_in_step() -> None:
    from langchain_core.indexing import InMemoryRecordManager, index

    store = RhizomeVectorStore(VectorIndex(HashingEmbedder(dimension=32)))
    records = InMemoryRecordManager("notes")
    records.create_schema()
    first = [Document(page_content="Bees live in hives.", metadata={"source": "a"}),
             Document(page_content="Lava cools into basalt.", metadata={"source": "b"})]
    assert index(first, records, store, cleanup="incremental", source_id_key="source", key_encoder="sha256")["num_added"] == 2
    changed = index([Document(page_content="Bees live in big hives.", metadata={"source": "a"})], records, store,
                    cleanup="incremental", source_id_key="source", key_encoder="sha256")
    assert (changed["num_added"], changed["num_deleted"]) == (1, 1)
    texts = sorted(d.page_content for d in store.get_by_ids(store.index.store.document_ids()))
    assert texts == ["Bees live in big hives.", "Lava cools into basalt."]


def _with_naive_mode() -> list[str]:
    return [m for m in registered_methods() if m != "naive" and "naive" in index_class(m).modes]


class TestRhizomeVectorStoreStandardOverGraphMethods(VectorStoreIntegrationTests):
    """The same suite over each graph method's index, searched in its ``naive`` mode (the
    suite checks exact passages in cosine order; the graph modes rank by their own evidence and
    are checked by ``test_every_method_and_mode_works_through_the_face``)."""

    @pytest.fixture(params=_with_naive_mode())
    def vectorstore(self, request: pytest.FixtureRequest) -> Iterator[RhizomeVectorStore]:  # type: ignore[override]
        cls = index_class(request.param)
        index = cls(self.get_embeddings(), llm=FailingChatModel() if cls.uses_llm else None)
        try:
            yield RhizomeVectorStore(index, mode="naive")
        finally:
            index.close()


def test_a_langchain_compressor_reranks_and_a_store_filter_holds(store: RhizomeVectorStore) -> None:
    from langchain_core.documents import BaseDocumentCompressor

    class Shortest(BaseDocumentCompressor):
        """Keeps the shortest passages first (a reranker whose order differs from cosine)."""

        def compress_documents(self, documents, query, callbacks=None):  # type: ignore[no-untyped-def]
            return sorted(documents, key=lambda d: len(d.page_content))

    texts = {d.id: d.text for d in CORPUS if d.id in YEARS}
    reranked = RhizomeVectorStore(store.index, reranker=Shortest(), rerank_candidates=5)
    assert [d.id for d in reranked.similarity_search("queen", k=2)] == sorted(texts, key=lambda i: len(texts[i]))[:2]
    earth = RhizomeVectorStore(store.index, filter={"tags": "earth"})
    assert {d.id for d in earth.similarity_search("queen", k=5)} == {"doc-rivers", "doc-volcano"}
    assert {d.id for d in earth.similarity_search("queen", k=5, filter={"year": {"$gt": 2010}})} == {"doc-bees", "doc-ants", "doc-wasps"}


def test_a_persisted_store_opens_again(tmp_path) -> None:  # type: ignore[no-untyped-def]
    made = RhizomeVectorStore.from_texts(["Bees live in hives.", "Lava cools into basalt."], HashingEmbedder(dimension=32),
                                         [{"year": 2020}, {"year": 1990}], ids=["bees", "lava"], path=tmp_path / "idx")
    made.index.close()
    store = RhizomeVectorStore.from_persist_dir(tmp_path / "idx", filter={"year": {"$lt": 2000}})
    try:
        assert [d.id for d in store.similarity_search("bees", k=2)] == ["lava"]
        assert store.get_by_ids(["bees"])[0].page_content == "Bees live in hives."
    finally:
        store.index.close()


def test_from_documents_keeps_the_documents_ids() -> None:
    docs = [Document(page_content="Bees live in hives.", id="bees"), Document(page_content="Lava cools into basalt.")]
    store = RhizomeVectorStore.from_documents(docs, HashingEmbedder(dimension=32), chunk_size=64, chunk_overlap=8)
    ids = store.index.store.document_ids()
    assert "bees" in ids and len(ids) == 2
    assert store.index.config.chunk_size == 64  # index settings reach the index


def test_get_by_ids_skips_a_document_whose_stored_text_is_damaged_and_says_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Defect: one chunk changed outside Rhizome made get_by_ids raise for every id asked with it."""
    import sqlite3

    from rhizome.core.errors import IndexDamageWarning
    from rhizome.core.store.storage import RECORDS

    made = RhizomeVectorStore.from_texts(["Bees live in hives.", "Lava cools into basalt."], HashingEmbedder(dimension=32),
                                         ids=["bees", "lava"], path=tmp_path / "idx")
    made.index.close()
    with sqlite3.connect(tmp_path / "idx" / RECORDS) as db:
        db.execute("UPDATE chunks SET text = CAST(X'426C7565FF' AS TEXT) WHERE document_id = 'bees'")
    store = RhizomeVectorStore.from_persist_dir(tmp_path / "idx")
    try:
        with pytest.warns(IndexDamageWarning, match="skipped 'bees'.*insert the document again"):
            assert [d.id for d in store.get_by_ids(["bees", "lava"])] == ["lava"]
    finally:
        store.index.close()
