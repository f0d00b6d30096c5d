"""llama_index.retrievers.rhizome.RhizomeRetriever: both paths, node shape, metadata hidden from
models, persistence round trip, and use in query engines and tools with an offline MockLLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _integration_toys import CORPUS, QUERY, ToyIndex, ToyRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import RetrieverTool

from llama_index.retrievers.rhizome import PROVENANCE_KEYS, RhizomeRetriever
from llama_index.retrievers.rhizome.base import hit_to_node
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.naive import VectorIndex
from rhizome.core.types import Hit


@pytest.fixture
def vector_index() -> VectorIndex:
    index = VectorIndex(HashingEmbedder(dimension=256), chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    return index


def _summary(nodes: list[NodeWithScore]) -> list[tuple[str, str, float]]:
    return [(n.node.node_id, n.node.get_content(), round(n.score or 0.0, 5)) for n in nodes]


def test_retrieve_returns_nodes_with_scores() -> None:
    toy = ToyRetriever(CORPUS)
    retriever = RhizomeRetriever(toy, similarity_top_k=3)
    nodes = retriever.retrieve(QUERY)
    assert len(nodes) == 3
    assert toy.calls == [(QUERY, 3)]
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


async def test_aretrieve_uses_async_method() -> None:
    class AsyncOnly(ToyRetriever):
        def retrieve(self, query: str, k: int | None = None) -> Any:
            raise AssertionError("the async path must not use the sync method")

    nodes = await RhizomeRetriever(AsyncOnly(CORPUS), similarity_top_k=2).aretrieve(
        QueryBundle(QUERY)
    )
    assert len(nodes) == 2
    assert _summary(nodes) == _summary(RhizomeRetriever(ToyRetriever(CORPUS), 2).retrieve(QUERY))


def test_node_shape_and_metadata_visibility() -> None:
    node_with_score = RhizomeRetriever(ToyRetriever(CORPUS), 1).retrieve("paper nests of wasps")[0]
    node = node_with_score.node
    assert node.node_id == "doc-wasps-c0"
    assert node.text == CORPUS[2].text
    assert node_with_score.score == node.metadata["score"]
    assert node.metadata["document_ids"] == ["doc-wasps"]
    assert node.metadata["spans"][0]["end"] == len(CORPUS[2].text)
    assert node.metadata["sources"] == ["notes/wasps.md"]
    assert node.ref_doc_id == "doc-wasps"
    assert (node.start_char_idx, node.end_char_idx) == (0, len(CORPUS[2].text))
    # an entity's profile cites one passage's span, but its text is not that passage: no offsets
    entity = hit_to_node(Hit(id="wasp", text="Wasp: an insect that builds paper nests.", score=1.0, kind="entity",
                             provenance=ToyRetriever(CORPUS).retrieve("paper nests of wasps", 1)[0].provenance)).node
    assert entity.metadata["spans"] == node.metadata["spans"]
    assert entity.start_char_idx is None and entity.end_char_idx is None
    for keys in (node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys):
        assert set(PROVENANCE_KEYS) | {"id", "score"} <= set(keys)
        assert "title" not in keys and "kind" not in keys
    llm_text = node.get_content(metadata_mode=MetadataMode.LLM)
    assert "title: Wasps" in llm_text and "kind: chunk" in llm_text
    assert "document_ids" not in llm_text and "spans" not in llm_text
    assert "document_ids" not in node.get_content(metadata_mode=MetadataMode.EMBED)


def test_constructor_validation() -> None:
    with pytest.raises(TypeError, match="from_index"):
        RhizomeRetriever(ToyIndex(CORPUS))
    with pytest.raises(TypeError):
        RhizomeRetriever(object())
    with pytest.raises(ValueError):
        RhizomeRetriever(ToyRetriever(CORPUS), similarity_top_k=0)
    with pytest.raises(ValueError, match="from_index"):
        RhizomeRetriever(ToyRetriever(CORPUS)).persist("/nonexistent")


def test_from_index_and_persist_with_protocol_index(tmp_path: Path) -> None:
    retriever = RhizomeRetriever.from_index(ToyIndex(CORPUS), similarity_top_k=2)
    assert retriever.similarity_top_k == 2
    written = retriever.persist(tmp_path / "toy")
    assert (written / "toy.json").exists()
    reopened = RhizomeRetriever.from_index(ToyIndex.load(written), similarity_top_k=2)
    assert _summary(reopened.retrieve(QUERY)) == _summary(retriever.retrieve(QUERY))


async def test_vector_index_persist_round_trip(vector_index: VectorIndex, tmp_path: Path) -> None:
    retriever = RhizomeRetriever.from_index(vector_index, similarity_top_k=3)
    assert retriever.index is vector_index
    before = await retriever.aretrieve(QUERY)
    assert len(before) == 3
    retriever.persist(tmp_path / "naive")
    vector_index.close()  # release the writer lock, as a finished build would
    reopened = RhizomeRetriever.from_persist_dir(tmp_path / "naive", similarity_top_k=3)
    assert _summary(await reopened.aretrieve(QUERY)) == _summary(before)
    assert _summary(reopened.retrieve(QUERY)) == _summary(before)
    reopened.index.close()


def test_vector_index_retriever_knows_its_index(vector_index: VectorIndex) -> None:
    retriever = RhizomeRetriever(vector_index.as_retriever(), similarity_top_k=2)
    assert retriever.index is vector_index
    node = retriever.retrieve(QUERY)[0].node
    assert node.metadata["kind"] == "chunk"
    assert node.ref_doc_id in {d.id for d in CORPUS}


def test_query_engine_with_mock_llm(vector_index: VectorIndex) -> None:
    retriever = RhizomeRetriever.from_index(vector_index, similarity_top_k=2)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(QUERY)
    assert len(response.source_nodes) == 2
    assert response.source_nodes[0].node.metadata["document_ids"]
    assert isinstance(str(response), str)


async def test_async_query_engine_with_mock_llm() -> None:
    retriever = RhizomeRetriever(ToyRetriever(CORPUS), similarity_top_k=2)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = await engine.aquery(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == [
        n.node.node_id for n in retriever.retrieve(QUERY)
    ]


async def test_retriever_tool() -> None:
    retriever = RhizomeRetriever(ToyRetriever(CORPUS), similarity_top_k=1)
    tool = RetrieverTool.from_defaults(
        retriever, name="search_notes", description="Search the nature notes."
    )
    assert tool.metadata.name == "search_notes"
    output = tool.call("lava and basalt")
    assert CORPUS[4].text in output.content
    assert "document_ids" not in output.content
    output = await tool.acall("paper nests of wasps")
    assert CORPUS[2].text in output.content


def test_persist_round_trip_with_llama_index_embedding(tmp_path: Path) -> None:
    from llama_index.core.embeddings import MockEmbedding

    embed_model = MockEmbedding(embed_dim=8)
    index = VectorIndex(embed_model, chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    retriever = RhizomeRetriever.from_index(index, similarity_top_k=2)
    before = retriever.retrieve(QUERY)
    retriever.persist(tmp_path / "idx")
    index.close()
    reopened = RhizomeRetriever.from_persist_dir(tmp_path / "idx", 2, embed_model=embed_model)
    assert reopened.index.embedder.name == "llama_index:MockEmbedding"
    assert _summary(reopened.retrieve(QUERY)) == _summary(before)
    reopened.index.close()
    with pytest.raises(TypeError, match="not both"):
        RhizomeRetriever.from_persist_dir(tmp_path / "idx", embed_model=embed_model, embedder="x")


def test_metadata_filters_and_node_metadata() -> None:
    from llama_index.core.vector_stores.types import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )

    index = VectorIndex(HashingEmbedder())
    index.insert([d.model_copy(update={"metadata": {**d.metadata, "page": i}}) for i, d in enumerate(CORPUS)])
    wanted = MetadataFilters(filters=[MetadataFilter(key="page", value=[0, 2, 4], operator=FilterOperator.IN),
                                      MetadataFilter(key="title", value="Wasps")])
    nodes = RhizomeRetriever.from_index(index, similarity_top_k=3, filters=wanted).retrieve(QUERY)
    assert [n.node.metadata["title"] for n in nodes] == ["Wasps"]
    assert nodes[0].node.metadata["page"] == 2 and nodes[0].node.metadata["source"] == "notes/wasps.md"
    plain = RhizomeRetriever(index.as_retriever(), similarity_top_k=2, filters={"page": {"$in": [3, 4]}})
    assert {n.node.metadata["title"] for n in plain.retrieve(QUERY)} == {"Rivers", "Volcanoes"}
    one = MetadataFilters(filters=[MetadataFilter(key="title", value="Wasps")], condition=FilterCondition.OR)
    assert [n.node.metadata["title"] for n in RhizomeRetriever.from_index(index, filters=one).retrieve(QUERY)] == ["Wasps"]
    later = MetadataFilters(filters=[MetadataFilter(key="page", value=2, operator=FilterOperator.GT)])
    assert {n.node.metadata["page"] for n in RhizomeRetriever.from_index(index, similarity_top_k=5, filters=later).retrieve(QUERY)} == {
        i for i in range(len(CORPUS)) if i > 2}


def test_every_llama_index_operator_and_condition_selects_what_llama_index_does() -> None:
    """Each FilterOperator and FilterCondition, translated, picks in the database the documents
    LlamaIndex's own in-memory filter picks (on fields where its semantics and Rhizome's agree:
    scalar fields for comparisons, lists for membership, text for text matches)."""
    from llama_index.core.vector_stores.types import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )
    from llama_index.core.vector_stores.utils import build_metadata_filter_fn

    from llama_index.retrievers.rhizome.base import rhizome_filter
    from rhizome.core.retrieval.filters import as_filter

    tags = [["queen", "hive"], ["queen"], ["paper", "queen"], [], ["lava"]]
    index = VectorIndex(HashingEmbedder())
    index.insert([d.model_copy(update={"metadata": {**d.metadata, "page": i, "tags": tags[i % len(tags)]}})
                  for i, d in enumerate(CORPUS)])
    metadata = index.store.documents_metadata(index.store.document_ids())
    op = FilterOperator
    singles = [("page", 2, op.EQ), ("page", 2, op.NE), ("page", 2, op.GT), ("page", 2, op.GTE), ("page", 2, op.LT),
               ("page", 2, op.LTE), ("page", [0, 3], op.IN), ("page", [0, 3], op.NIN), ("tags", "queen", op.CONTAINS),
               ("tags", ["paper", "lava"], op.ANY), ("tags", ["queen", "hive"], op.ALL), ("title", "as", op.TEXT_MATCH),
               ("title", "AS", op.TEXT_MATCH_INSENSITIVE), ("tags", None, op.IS_EMPTY), ("title", "Bees", op.EQ)]
    assert {o for _, _, o in singles} == set(FilterOperator)
    cases = [MetadataFilters(filters=[MetadataFilter(key=k, value=v, operator=o)]) for k, v, o in singles]
    pair = [MetadataFilter(key="page", value=1, operator=op.LTE), MetadataFilter(key="tags", value="queen", operator=op.CONTAINS)]
    cases += [MetadataFilters(filters=pair, condition=c) for c in FilterCondition]
    for wanted in cases:
        expected = {d for d in metadata if build_metadata_filter_fn(metadata.__getitem__, wanted)(d)}
        got = index.store.matching_documents(as_filter(rhizome_filter(wanted)))
        assert got == expected, (wanted, rhizome_filter(wanted))
    nested = MetadataFilters(filters=[MetadataFilters(filters=pair, condition=FilterCondition.OR),
                                      MetadataFilter(key="page", value=0, operator=op.NE)])
    assert index.store.matching_documents(as_filter(rhizome_filter(nested))) == {
        d for d, m in metadata.items() if (m["page"] <= 1 or "queen" in m["tags"]) and m["page"] != 0}
    with pytest.raises(ValueError, match="no document matches"):
        rhizome_filter(MetadataFilters(filters=[], condition=FilterCondition.OR))


def test_fusion_merges_the_same_passage_found_by_two_retrievers() -> None:
    """LlamaIndex's fusion keys on ``node.hash``: the same passage, found with another score or
    by another path, is one node whose fused score adds up, and the fused list stays full."""
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.storage.docstore.utils import doc_to_json, json_to_doc

    index = VectorIndex(HashingEmbedder())
    index.insert(CORPUS)
    plain = RhizomeRetriever.from_index(index, similarity_top_k=3)

    class Rescored(ToyRetriever):  # the same hits, other scores and another path in the metadata
        async def aretrieve(self, query: str, k: int | None = None) -> list[Any]:
            hits = await index.as_retriever().aretrieve(query, k)
            return [h.model_copy(update={"score": h.score / 2, "metadata": {**h.metadata, "via": "other"}}) for h in hits]

    other = RhizomeRetriever(Rescored(CORPUS), similarity_top_k=3)
    a, b = plain.retrieve(QUERY)[0].node, other.retrieve(QUERY)[0].node
    assert a.node_id == b.node_id and a.metadata != b.metadata and a.hash == b.hash
    fused = QueryFusionRetriever([plain, other], llm=MockLLM(), num_queries=1, use_async=False,
                                 mode="reciprocal_rerank", similarity_top_k=3).retrieve(QUERY)
    assert [n.node.node_id for n in fused] == [n.node.node_id for n in plain.retrieve(QUERY)]
    assert fused[0].score == pytest.approx(2 / 60)  # 1 / (rank + 60), rank from 0, from each retriever
    stored = json_to_doc(doc_to_json(a))  # kept in a docstore, it reads back as a plain TextNode
    assert type(stored) is TextNode and stored.metadata == a.metadata


def test_persist_keeps_the_retrievers_mode_k_filter_and_settings(tmp_path: Path) -> None:
    """Defect: persist() wrote the index alone, so from_persist_dir came back in the default
    mode with top_k 4 and no filter."""
    from rhizome.lightrag import LightRAGIndex

    index = LightRAGIndex(HashingEmbedder(), path=tmp_path / "build")
    index.insert([d.model_copy(update={"metadata": {**d.metadata, "shelf": i % 2}}) for i, d in enumerate(CORPUS)])
    retriever = RhizomeRetriever.from_index(index, similarity_top_k=2, mode="local", filters={"shelf": 1}, chains=False,
                                            score_threshold=0.05)
    before = retriever.retrieve(QUERY)
    retriever.persist(tmp_path / "idx")
    index.close()
    reopened = RhizomeRetriever.from_persist_dir(tmp_path / "idx")
    inner = reopened.rhizome_retriever
    assert (inner.mode, reopened.similarity_top_k, inner.params.chains, inner.score_threshold) == ("local", 2, False, 0.05)
    assert _summary(reopened.retrieve(QUERY)) == _summary(before)
    assert all(n.node.metadata["shelf"] == 1 for n in reopened.retrieve(QUERY))
    reopened.index.close()
    again = RhizomeRetriever.from_persist_dir(tmp_path / "idx", 3, mode="hybrid")  # the arguments win
    assert (again.rhizome_retriever.mode, again.similarity_top_k) == ("hybrid", 3)
    again.index.close()


def test_a_llama_index_node_postprocessor_reranks_the_hits() -> None:
    """A BaseNodePostprocessor given as ``reranker`` picks and orders the candidates; the nodes
    keep the hits' ids and provenance."""
    from llama_index.core.postprocessor.types import BaseNodePostprocessor

    from llama_index.retrievers.rhizome import PostprocessorReranker

    class Shortest(BaseNodePostprocessor):  # a fake: keeps the two shortest texts, shortest first
        def _postprocess_nodes(self, nodes, query_bundle=None):
            ranked = sorted(nodes, key=lambda n: len(n.node.get_content()))[:2]
            return [NodeWithScore(node=n.node, score=1.0 / len(n.node.get_content())) for n in ranked]

    index = VectorIndex(HashingEmbedder())
    index.insert(CORPUS)
    candidates = RhizomeRetriever.from_index(index, similarity_top_k=5).retrieve(QUERY)
    expected = sorted(candidates, key=lambda n: len(n.node.get_content()))[:2]
    nodes = RhizomeRetriever.from_index(index, similarity_top_k=2, reranker=Shortest(), rerank_candidates=5).retrieve(QUERY)
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in expected]
    assert [n.node.metadata["raw_score"] for n in nodes] == [1.0 / len(n.node.get_content()) for n in expected]
    assert [n.score for n in nodes] == [n.score for n in expected]  # the relevance, whoever ranked
    assert [n.node.metadata["document_ids"] for n in nodes] == [n.node.metadata["document_ids"] for n in expected]
    assert index.as_retriever(k=1, reranker=PostprocessorReranker(Shortest()), rerank_candidates=5).retrieve(QUERY)[0].id == expected[0].node.node_id
    with pytest.raises(ValueError, match="PostprocessorReranker"):
        index.as_retriever(reranker=Shortest())


def test_node_scores_are_the_relevance_and_score_threshold_cuts_after_the_ranking() -> None:
    """Every mode's node score is the hit's relevance in [0, 1] (the mode's own score in
    ``metadata["raw_score"]``); ``score_threshold`` keeps the nodes at or above it, in order."""
    from rhizome.lightrag import LightRAGIndex

    index = LightRAGIndex(HashingEmbedder())
    index.insert(CORPUS)
    for mode in index.modes:
        nodes = RhizomeRetriever.from_index(index, similarity_top_k=4, mode=mode).retrieve(QUERY)
        assert nodes and all(0.0 <= n.score <= 1.0 and "raw_score" in n.node.metadata for n in nodes), mode
        threshold = sorted(n.score for n in nodes)[2]
        kept = RhizomeRetriever.from_index(index, similarity_top_k=4, mode=mode, score_threshold=threshold).retrieve(QUERY)
        assert [n.node.node_id for n in kept] == [n.node.node_id for n in nodes if n.score >= threshold], mode
    index.close()
