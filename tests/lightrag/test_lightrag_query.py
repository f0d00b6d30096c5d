"""Dual-level retrieval, keyword JSON handling, answers, adapters and the CLI."""

from __future__ import annotations

from typing import Any

import numpy as np
from _lightrag_fakes import CORPUS, fake_model

from rhizome.core import FakeChatModel, VectorIndex
from rhizome.lightrag import LightRAGIndex, offline_query_keywords


def test_keyword_json_in_a_fence_is_parsed():
    model = FakeChatModel(['```json\n{"high_level_keywords": ["science"], "low_level_keywords": ["Marie Curie"]}\n```'])
    index = LightRAGIndex()
    index.llm = model
    keywords, source = _run(index)
    assert source == "llm" and keywords.low_level_keywords == ["Marie Curie"]


def _run(index):
    import asyncio

    return asyncio.run(index.as_retriever().akeywords("Who was Marie Curie?"))


def test_keyword_json_retry_then_success():
    model = FakeChatModel(["not json at all", {"high_level_keywords": "physics, prizes", "low_level_keywords": ["Pierre Curie"]}])
    index = LightRAGIndex()
    index.llm = model
    keywords, source = _run(index)
    assert source == "llm" and keywords.high_level_keywords == ["physics", "prizes"]
    assert model.usage.retries == 1 and model.usage.calls == 2
    assert "could not be used" in model.requests[1][-1]["content"]  # the retry shows the error


def test_keyword_json_failure_falls_back_to_offline_keywords():
    model = FakeChatModel(["{broken", "still broken", "nope"])
    index = LightRAGIndex()
    index.llm = model
    keywords, source = _run(index)
    assert source == "offline-fallback" and "Marie Curie" in keywords.low_level_keywords


def test_empty_keyword_lists_fall_back_too():
    index = LightRAGIndex()
    index.llm = FakeChatModel([{"high_level_keywords": [], "low_level_keywords": []}])
    keywords, source = _run(index)
    assert source == "offline-fallback" and keywords.low_level_keywords


def test_offline_keywords_split_names_from_themes():
    kw = offline_query_keywords('Which prize did Marie Curie share with "Pierre Curie"?')
    assert kw.low_level_keywords[:2] == ["Pierre Curie", "Marie Curie"]
    assert "prize" in kw.high_level_keywords and "marie" not in kw.high_level_keywords


async def test_dual_level_routes_low_to_entities_and_high_to_relations():
    model, _ = fake_model(keywords={"low_level_keywords": ["Marie Curie", "Paris"], "high_level_keywords": ["awards", "link"]})
    index = LightRAGIndex(llm=model, chunk_size=64, chunk_overlap=8)
    await index.ainsert(CORPUS)
    retriever = index.as_retriever(k=8, mode="hybrid")
    searched: list[tuple[str, Any]] = []
    original = retriever._search

    def spy(collection, vector, k):
        searched.append((collection, vector))
        return original(collection, vector, k)

    retriever._search = spy
    context = await retriever.ablocks("Where did Marie Curie win awards?")
    routes = {collection: vector for collection, vector in searched}
    expected = {
        index.ENTITY_COLLECTION: "Marie Curie, Paris",
        index.RELATION_COLLECTION: "awards, link",
        index.CHUNK_COLLECTION: "Where did Marie Curie win awards?",  # the nearest chunks that seed the walk
    }
    assert set(routes) == set(expected)
    for collection, text in expected.items():
        assert np.allclose(routes[collection], await index.embedder.aembed_query([text]), atol=1e-6), collection
    assert context.keyword_source == "llm"
    assert context.entities and all(h.kind == "entity" for h in context.entities)
    assert context.relations and all(h.kind == "relation" for h in context.relations)
    assert context.chunks[0].provenance.document_ids and context.chunks[0].provenance.chunk_ids


async def test_modes_search_the_right_stores():
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    await index.ainsert(CORPUS)
    expected = {
        "local": {index.ENTITY_COLLECTION, index.CHUNK_COLLECTION},
        "global": {index.RELATION_COLLECTION, index.CHUNK_COLLECTION},
        "hybrid": {index.ENTITY_COLLECTION, index.RELATION_COLLECTION, index.CHUNK_COLLECTION},
        "mix": {index.ENTITY_COLLECTION, index.RELATION_COLLECTION, index.CHUNK_COLLECTION},
    }
    for mode, stores in expected.items():
        retriever = index.as_retriever(k=5, mode=mode)
        seen = set()
        original = retriever._search
        retriever._search = lambda c, v, k, _o=original, _s=seen: (_s.add(c), _o(c, v, k))[1]
        hits = await retriever.aretrieve("Marie Curie Nobel Prize Paris")
        assert seen == stores, mode
        assert len(hits) == 5, mode  # k hits when the index has them (3 chunks, then profiles)
        assert hits[0].kind == "chunk" and hits[0].provenance.spans
    # naive is the kernel's dense retrieval: chunks only, scored by cosine, as the naive index scores them
    naive = await index.as_retriever(k=5, mode="naive").aretrieve("Marie Curie Nobel Prize Paris")
    baseline = VectorIndex(index.embedder, chunk_size=64, chunk_overlap=8)
    await baseline.ainsert(CORPUS)
    dense = await baseline.as_retriever(k=5).aretrieve("Marie Curie Nobel Prize Paris")
    assert [(h.text, round(h.score, 6)) for h in naive] == [(h.text, round(h.score, 6)) for h in dense]


async def test_the_cosine_threshold_does_not_cut_the_passage_ranking():
    # The threshold is for the keyword searches of entities and relations. The nearest chunks
    # seed the walk whatever their cosines (it used to drop every chunk under the threshold, so
    # with low cosines the walk from the keywords alone ranked the passages).
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    await index.ainsert(CORPUS)
    query = "Where is the Nobel Prize awarded?"
    chunks = set(index.store.chunk_ids())
    for mode in ("local", "global", "hybrid", "mix"):
        retriever = index.as_retriever(k=3, mode=mode, cosine_threshold=0.999)
        context = await retriever.ablocks(query)
        assert {c for c, _, via in context.ranked if "vector" in via} == chunks, mode
        assert len(await retriever.aretrieve(query)) == 3, mode
        assert not context.entities and not context.relations, mode  # the keyword searches are still cut


async def test_each_mode_seeds_the_walk_from_its_own_keywords():
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    await index.ainsert(CORPUS)
    query = "Where did Marie Curie and Pierre Curie work?"
    seeds = {}
    for mode in ("local", "global", "hybrid", "mix"):
        retriever = index.as_retriever(mode=mode)
        context, vectors = await retriever._aranked(query, None)
        seeds[mode] = await retriever._seeds(vectors)
    # local: each low-level keyword (the names the query mentions) linked to one entity, weight 1
    assert set(seeds["local"]) == {"marie curie", "pierre curie"} and set(seeds["local"].values()) == {1.0}
    # global: the endpoints of the relations nearest the query, the best at 1, the others below
    assert max(seeds["global"].values()) == 1.0 and min(seeds["global"].values()) > 0
    assert seeds["hybrid"] == {e: max(seeds["local"].get(e, 0.0), seeds["global"].get(e, 0.0)) for e in seeds["hybrid"]}
    assert set(seeds["hybrid"]) == set(seeds["local"]) | set(seeds["global"])
    # mix: hybrid's, and the entity names nearest the whole query at half their relative weights
    extra = {e: w for e, w in seeds["mix"].items() if e not in seeds["hybrid"]}
    assert set(seeds["hybrid"]) <= set(seeds["mix"]) and all(w <= 0.5 for w in extra.values())


async def test_hits_carry_provenance_and_budgets_hold():
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    await index.ainsert(CORPUS)
    retriever = index.as_retriever(k=20, mode="hybrid", max_entity_tokens=30, max_relation_tokens=30)
    context = await retriever.ablocks("Marie Curie Paris")
    from rhizome.core import count_tokens

    assert sum(count_tokens(h.text) for h in context.entities) <= 30
    assert sum(count_tokens(h.text) for h in context.relations) <= 30
    chunk = next(h for h in context.chunks if h.id == "curie:0")
    assert chunk.provenance.sources == ["curie.txt"] and chunk.metadata["title"] == "Curie"
    entity = next(h for h in await index.as_retriever(k=20, mode="local", kinds=("entity",)).aretrieve("Marie Curie") if h.id == "marie curie")
    assert entity.provenance.document_ids == ["curie"]


async def test_answer_offline_and_with_model():
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    await index.ainsert(CORPUS)
    offline = await index.aanswer("Where is the Nobel Prize awarded?")
    assert offline.extractive and "Stockholm" in offline.text
    model, responder = fake_model(keywords={"low_level_keywords": ["Nobel Prize"], "high_level_keywords": ["awards"]})
    index.llm = model
    written = await index.aanswer("Where is the Nobel Prize awarded?", mode="local")
    assert written.text == "unknown" and written.citations and responder.kinds == ["keywords", "other"]
    assert "-----Entities-----" in model.requests[-1][-1]["content"]


def test_langchain_and_llama_index_adapters():
    from langchain_rhizome import RhizomeRetriever as LCRetriever
    from llama_index.retrievers.rhizome import RhizomeRetriever as LIRetriever

    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    index.insert(CORPUS)
    docs = LCRetriever.from_index(index, k=3, mode="local").invoke("Marie Curie")
    assert len(docs) <= 3 and docs[0].metadata["kind"] == "chunk" and docs[0].metadata["document_ids"]
    nodes = LIRetriever.from_index(index, similarity_top_k=3).retrieve("Marie Curie")
    assert 1 <= len(nodes) <= 3 and nodes[0].node.metadata["kind"] == "chunk"


def test_cli_index_and_query(tmp_path, capsys):
    from rhizome.rag.cli import main

    corpus = tmp_path / "docs"
    corpus.mkdir()
    for doc in CORPUS:
        (corpus / f"{doc.id}.txt").write_text(doc.text, encoding="utf-8")
    out = tmp_path / "idx"
    assert main(["index", str(corpus), "--method", "lightrag", "--out", str(out), "--offline", "-q"]) == 0
    assert main(["query", str(out), "Where did Marie Curie work?", "--mode", "hybrid", "--offline"]) == 0
    printed = capsys.readouterr().out
    assert "chunk" in printed and "Marie Curie" in printed
