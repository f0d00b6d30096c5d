"""spRAG (issue 17): RSE's segment selection against an exhaustive search, the segments a
retriever returns, dsRAG's presets, and AutoContext headers that only the embedder sees."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import numpy as np
import pytest

from rhizome.core import Document, HashingEmbedder, VectorIndex
from rhizome.core.errors import ConfigurationError
from rhizome.core.models.base import BaseEmbedder
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.retrieval.passages import joined, passages
from rhizome.core.text import count_tokens
from rhizome.sprag import PRESETS, SpRAGIndex, best_segments, chunk_values, segment_extractor
from rhizome.sprag.autocontext import sections_of
from rhizome.sprag.rse import exhaustive_segments


# -- segment selection -------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
def test_selection_equals_the_exhaustive_search_on_random_values(ties):
    # random floats, and eighths (exact in floating point, so equal sums tie exactly and the
    # tie-breaking — earliest start, then earliest end — is checked too)
    rng = np.random.default_rng(17 + ties)
    checked = 0
    for _ in range(150):
        n, queries = int(rng.integers(1, 80)), int(rng.integers(1, 4))
        values = [rng.integers(-3, 5, n) / 8 if ties else rng.normal(-0.05, 0.4, n) for _ in range(queries)]
        splits = sorted({*rng.integers(1, n + 1, int(rng.integers(0, 5))).tolist(), n})
        max_length, overall = int(rng.integers(1, 9)), int(rng.integers(1, 25))
        minimum = float(rng.choice([0.0, 0.25, 0.5]))
        found = best_segments(values, splits, max_length=max_length, overall_max_length=overall, minimum_value=minimum)
        expected = exhaustive_segments([list(v) for v in values], splits, max_length=max_length, overall_max_length=overall,
                                       minimum_value=minimum)
        assert [(s.start, s.end, s.query) for s in found] == [(s.start, s.end, s.query) for s in expected]
        assert np.allclose([s.value for s in found], [s.value for s in expected])
        checked += len(found) > 1
    assert checked > 50  # most draws choose several segments


def test_segments_stay_in_one_document_never_overlap_and_keep_the_budgets():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(20, 400))
        splits = sorted({*rng.integers(1, n, 6).tolist(), n})
        rank = np.full(n, np.inf)
        ranked = rng.choice(n, min(n, 60), replace=False)
        rank[ranked] = np.arange(len(ranked))
        values = chunk_values(rng.uniform(0, 1, n), rank, decay_rate=30, penalty=0.18)
        for preset in PRESETS.values():
            found = best_segments(values, splits, max_length=preset.max_length, overall_max_length=preset.overall_max_length,
                                  minimum_value=preset.minimum_value)
            covered = [i for s in found for i in range(s.start, s.end)]
            assert len(covered) == len(set(covered)) <= preset.overall_max_length
            for s in found:
                assert 1 <= s.end - s.start <= preset.max_length and s.value >= preset.minimum_value
                assert not any(s.start < cut < s.end for cut in splits)
            assert [s.value for s in found] == sorted((s.value for s in found), reverse=True)


def test_chunk_values_follow_dsrag_formula():
    relevance = np.array([0.9, 0.5, 0.0])
    rank = np.array([0, 10, np.inf])
    values = chunk_values(relevance, rank, decay_rate=30, penalty=0.18, scale=[1.0, 2.0, 1.0])
    assert values == pytest.approx([0.9 - 0.18, 2 * (math.exp(-10 / 30) * 0.5 - 0.18), -0.18])


def test_bad_selection_input_is_a_configuration_error():
    with pytest.raises(ConfigurationError):
        best_segments([np.zeros(3)], [2], max_length=2, overall_max_length=4, minimum_value=0.5)  # splits end early
    with pytest.raises(ConfigurationError):
        best_segments([np.zeros(3), np.zeros(2)], [3], max_length=2, overall_max_length=4, minimum_value=0.5)


def test_presets_have_dsrags_values():
    expected = {  # max_len, overall, min_value, penalty, ext, decay, top_k_doc (docs/sprag.md, dsRAG rse.py)
        "balanced": (15, 30, 0.5, 0.18, 5, 30, 10),
        "precision": (15, 30, 0.7, 0.2, 5, 30, 10),
        "find_all": (40, 200, 0.4, 0.18, 0, 200, 200),
    }
    fields = ("max_length", "overall_max_length", "minimum_value", "irrelevant_chunk_penalty",
              "overall_max_length_extension", "decay_rate", "top_k_for_document_selection")
    assert {name: tuple(getattr(p, f) for f in fields) for name, p in PRESETS.items()} == expected
    assert all(p.chunk_length_adjustment for p in PRESETS.values())
    assert tuple(SpRAGIndex.modes) == ("balanced", "precision", "find_all", "chunks", "passages")


# -- retrieval ---------------------------------------------------------------------------------
TOPICS = [
    ("harbour", "The Tarn harbour ferry crosses to Gull Island. Captain Mira Holt runs the harbour ferry every morning."),
    ("lighthouse", "The Gull Island lighthouse was built in 1709. Osric Vane keeps the lighthouse lamp burning at night."),
    ("guild", "The Salt Guild buys fish at the market. Petra Lind chairs the Salt Guild and sets the prices."),
    ("storm", "The Great Storm of 1911 sank three boats. The storm is remembered in the island chapel."),
]


def long_documents() -> list[Document]:
    """Three documents of several short chunks each, topics in stretches, so that segments form."""
    docs = []
    for d, order in enumerate([(0, 0, 1, 1, 2), (2, 3, 3, 3, 0), (1, 1, 1, 2, 2)]):
        paragraphs = [f"Entry {d}.{i}. {TOPICS[t][1]}" for i, t in enumerate(order)]
        docs.append(Document(id=f"doc{d}", text="\n\n".join(paragraphs), metadata={"title": f"Record {d}"}))
    return docs


def small_index(**settings: Any) -> SpRAGIndex:
    index = SpRAGIndex(HashingEmbedder(), chunk_size=32, **settings)
    index.insert(long_documents())
    return index


def check_segments(index: Any, hits: list[Any]) -> None:
    held: set[str] = set()
    for hit in hits:
        if hit.kind != "segment":
            continue
        doc, start, end = hit.metadata["document_id"], hit.metadata["chunk_start"], hit.metadata["chunk_end"]
        assert hit.provenance.document_ids == [doc]
        assert hit.provenance.chunk_ids == [f"{doc}:{i}" for i in range(start, end)]  # every chunk it spans
        chunks = index.store.chunks(hit.provenance.chunk_ids)
        assert hit.text == joined([chunks[c] for c in hit.provenance.chunk_ids])
        assert (hit.metadata["start"], hit.metadata["end"]) == (chunks[f"{doc}:{start}"].start, chunks[f"{doc}:{end - 1}"].end)
        spans = hit.provenance.spans  # the character span of the segment, chunk by chunk, in provenance
        assert [s.chunk_id for s in spans] == hit.provenance.chunk_ids and {s.document_id for s in spans} == {doc}
        assert (spans[0].start, spans[-1].end) == (hit.metadata["start"], hit.metadata["end"])
        assert not held & set(hit.provenance.chunk_ids)
        held |= set(hit.provenance.chunk_ids)


def test_segments_are_runs_of_one_document_joined_back_into_its_text():
    index = small_index()
    text = {d.id: d.text for d in long_documents()}
    for mode in ("balanced", "precision", "find_all"):
        for topic, _ in TOPICS:
            hits = index.as_retriever(k=6, mode=mode).retrieve(f"Tell me about the {topic}")
            check_segments(index, hits)
            for hit in hits:
                if hit.kind == "segment":
                    doc = hit.metadata["document_id"]
                    assert hit.text == text[doc][hit.metadata["start"] : hit.metadata["end"]]  # no overlap, no gaps
    result = index.as_retriever(k=3, mode="find_all").search("the lighthouse keeper Osric Vane")
    top = result.hits[0]
    assert top.kind == "segment" and top.metadata["document_id"] == "doc2" and top.metadata["chunk_end"] - top.metadata["chunk_start"] >= 2
    assert top.metadata["title"] == "Record 2" and result.stats["segments"] >= 1


def test_overlapping_chunks_are_joined_without_repeating_text():
    index = SpRAGIndex(HashingEmbedder(), chunk_size=32, chunk_overlap=12)
    docs = long_documents()
    index.insert(docs)
    chunks = index.store.chunks_of("doc1")
    assert any(b.start < a.end for a, b in zip(chunks, chunks[1:]))
    assert joined(chunks) == docs[1].text[chunks[0].start : chunks[-1].end]


def test_a_segment_extractor_runs_after_any_retriever():
    naive = VectorIndex(HashingEmbedder(), chunk_size=32, chunk_overlap=0)
    naive.insert(long_documents())
    extractor = segment_extractor(naive.as_retriever(), k=3, preset="find_all")
    result = extractor.search("the lighthouse keeper Osric Vane")
    check_segments(naive, result.hits)
    assert result.hits[0].kind == "segment" and result.hits[0].metadata["document_id"] == "doc2"
    threshold = sorted(h.score for h in result.hits)[1]
    kept = segment_extractor(naive.as_retriever(), k=3, preset="find_all", score_threshold=threshold).retrieve("the lighthouse keeper Osric Vane")
    assert [h.id for h in kept] == [h.id for h in result.hits if h.score >= threshold]
    with pytest.raises(ConfigurationError):
        segment_extractor(naive)
    with pytest.raises(ConfigurationError, match="score_threshold"):
        segment_extractor(naive.as_retriever(), score_threshold=3)


def test_a_segment_extractor_over_a_graph_retriever():
    from rhizome.lightrag import LightRAGIndex

    graph = LightRAGIndex(HashingEmbedder(), chunk_size=32, chunk_overlap=0)
    graph.insert(long_documents())
    hits = segment_extractor(graph.as_retriever(mode="hybrid"), k=4).retrieve("Who keeps the lighthouse?")
    check_segments(graph, hits)
    assert any(h.kind == "segment" for h in hits)


def test_the_reranker_decides_relevance_and_order():
    index = small_index()
    seen: list[list[str]] = []

    def storm_first(query: str, texts: list[str]) -> list[float]:
        seen.append(texts)
        return [0.95 if "Storm" in t else 0.05 for t in texts]

    hits = index.as_retriever(k=2, reranker=storm_first).retrieve("the harbour ferry")
    assert hits[0].kind == "segment" and "Storm" in hits[0].text
    assert all(t.startswith("Document: Record") for t in seen[0])  # the reranker reads the headers too

    async def broken(query: str, texts: list[str]) -> list[float]:
        return [0.5]

    with pytest.raises(ConfigurationError):
        index.as_retriever(reranker=broken).retrieve("the harbour ferry")


def test_relevance_without_a_reranker():
    index = small_index()
    retriever = index.as_retriever()
    cosines = np.array([0.9, 0.5, 0.1])
    calibrated = retriever._calibrated(np.ones(index.store.embedding_dimension) * 0, cosines)
    assert calibrated.tolist() == pytest.approx([1.0, 0.5 / 0.9, 0.1 / 0.9])  # query at the centroid's 0
    for relevance in ("similarity", "constant"):
        check_segments(index, index.as_retriever(k=3, relevance=relevance).retrieve("the Salt Guild prices"))


def test_several_search_queries_take_turns():
    index = small_index()
    retriever = index.as_retriever(k=6, mode="precision")
    both = asyncio.run(retriever.asearch_queries(["the lighthouse keeper", "the Great Storm of 1911"])).hits
    check_segments(index, both)
    texts = " ".join(h.text for h in both if h.kind == "segment")
    assert "lighthouse" in texts and "Storm" in texts
    with pytest.raises(ConfigurationError):
        asyncio.run(retriever.asearch_queries("one string"))


def test_bad_retriever_settings_are_configuration_errors():
    index = small_index()
    for options in ({"max_length": 0}, {"overall_max_lenght": 3}, {"relevance": "cosine"}, {"candidates": 0}, {"reranker": 3}):
        with pytest.raises(ConfigurationError):
            index.as_retriever(**options)
    with pytest.raises(ConfigurationError):
        index.as_retriever(mode="comprehensive")
    with pytest.raises(ConfigurationError, match="the balanced mode: relevance must be one of 'calibrated', 'similarity', 'constant', got 'cosine'"):
        index.as_retriever(relevance="cosine")
    with pytest.raises(ConfigurationError, match="max_length must be a positive integer, got '8'"):
        index.as_retriever(max_length="8")
    # the preset gives the RSE defaults; a setting given overrides it
    assert index.as_retriever(mode="find_all").params.max_length == 40
    assert index.as_retriever(mode="find_all", max_length=8).params.model_dump(include={"max_length", "decay_rate"}) == {"max_length": 8, "decay_rate": 200.0}


# -- AutoContext -------------------------------------------------------------------------------
class RecordingEmbedder(BaseEmbedder):
    """The hashing embedder, keeping every text it embeds."""

    def __init__(self) -> None:
        super().__init__("recording:hashing", dimension=256)
        self.inner = HashingEmbedder(256)
        self.texts: list[str] = []

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return (await self.inner.aembed(texts)).tolist()


def test_headers_are_embedded_but_never_stored_or_returned():
    embedder = RecordingEmbedder()
    llm = FakeChatModel(lambda messages, schema: {"title": "Harbour records", "summary": "A ledger of the Tarn harbour town."})
    index = SpRAGIndex(embedder, llm=llm, chunk_size=32, cache=False)
    docs = long_documents()
    docs[0] = Document(id="doc0", text=docs[0].text)  # no title: the model names it
    index.insert(docs)
    stored = index.store.chunks(index.store.chunk_ids())
    headers = index.headers(list(stored.values()))
    whole = [run[0].model_copy(update={"text": joined(run)}) for _, run in passages(stored.values())]  # the passages, headed as chunks
    whole_headers = index.headers(whole)
    assert set(embedder.texts) == {f"{headers[c.id]}\n\n{c.text}" for c in stored.values()} | {
        f"{whole_headers[c.id]}\n\n{c.text}" if whole_headers[c.id] else c.text for c in whole}
    for chunk in stored.values():
        assert "A ledger of the Tarn harbour town." in headers[chunk.id] and "Document:" not in chunk.text
    assert embedder.texts[0].startswith("Document: Harbour records — A ledger")
    assert index.document_context(["doc1"])["doc1"].title == "Record 1"  # a given title is kept
    for mode in index.modes:
        for hit in index.as_retriever(k=4, mode=mode).retrieve("the harbour ferry"):
            assert "Document:" not in hit.text
    assert index.as_retriever(k=1).retrieve("the harbour ferry")[0].metadata["summary"] == "A ledger of the Tarn harbour town."
    assert len(llm.requests) == 3  # one call per document


def test_offline_context_and_switching_it_off():
    index = small_index()
    context = index.document_context(["doc0"])["doc0"]
    assert context.title == "Record 0" and context.summary.startswith("Entry 0.0. The Tarn harbour ferry crosses to Gull Island.")
    assert count_tokens(context.summary) <= index.config.summary_max_tokens
    bare = small_index(auto_context=False)
    assert bare.headers(bare.store.chunks_of("doc0")) == dict.fromkeys(bare.store.chunk_ids(["doc0"]), "")
    untitled = SpRAGIndex(HashingEmbedder())
    untitled.insert([Document(id="n", text="Tarn Notes\nThe ferry runs daily."), Document(id="m", text="One line only.")])
    assert {k: c.title for k, c in untitled.document_context(["n", "m"]).items()} == {"n": "Tarn Notes", "m": "m"}


def test_an_offline_header_never_repeats_what_its_chunk_says():
    embedder = RecordingEmbedder()
    index = SpRAGIndex(embedder, chunk_size=32, cache=False)
    body = " ".join(f"Entry {i}. The ferry {i} crosses to Gull Island at dawn." for i in range(12))
    index.insert([Document(id="short", text="Tarn Harbour\nThe ferry crosses daily. Gulls follow it. Storms stop it."),
                  Document(id="long", text=f"Gull Island\n{body}")])
    short = index.store.chunks_of("short")
    assert index.document_context(["short"])["short"].summary == "The ferry crosses daily. Gulls follow it."  # the title line is no sentence
    assert len(short) == 1 and index.headers(short) == {short[0].id: ""}  # title and lead are its own words
    summary = index.document_context(["long"])["long"].summary
    first, *rest = index.store.chunks_of("long")
    headers = index.headers([first, *rest])
    assert summary.startswith("Entry 0.") and headers[first.id] == "" and rest
    assert all(headers[c.id] == f"Document: Gull Island — {summary}" for c in rest)  # the others learn what they are part of
    every = index.headers([*short, first, *rest])
    chunks = [f"{every[c.id]}\n\n{c.text}" if every[c.id] else c.text for c in [*short, first, *rest]]
    # then each passage, whole: it opens with its title and holds its lead, so it goes bare
    assert embedder.texts == chunks + [joined(run) for doc in (short, [first, *rest]) for _, run in passages(doc)]
    bare_embedder = RecordingEmbedder()
    SpRAGIndex(bare_embedder, chunk_size=32, cache=False, auto_context=False).insert(Document(id="long", text=f"Gull Island\n{body}"))
    assert bare_embedder.texts[: len(rest) + 1] == [c.text for c in [first, *rest]]  # without AutoContext: the chunks alone, no title line


def test_section_summaries_follow_markdown_headings():
    text = "# Harbour\n\n" + " ".join(["The ferry sails at dawn."] * 30) + "\n\n## Lighthouse\n\n" + " ".join(["Osric keeps the light."] * 30)
    model = FakeChatModel(SchemaResponder(), name="fake:sections")
    index = SpRAGIndex(HashingEmbedder(), llm=model, chunk_size=64, section_summaries=True, section_max_tokens=128, cache=False)
    index.insert(Document(id="d", text=text, metadata={"title": "Town"}))
    chunks = index.store.chunks_of("d")
    parts = sections_of(Document(id="d", text=text), chunks, 128)
    assert [h for _, _, h in parts][0] == "Harbour" and "Lighthouse" in [h for _, _, h in parts]
    assert all(sum(c.n_tokens for c in chunks[s:e]) <= 128 or e - s == 1 for s, e, _ in parts)
    context = index.document_context(["d"])["d"]
    assert [(s.start, s.end) for s in context.sections] == [(s, e) for s, e, _ in parts]
    headers = index.headers(chunks)
    assert all("\nSection: " in h for h in headers.values())
    assert headers[chunks[-1].id].split("\nSection: ")[1].startswith("Lighthouse")
    assert len(model.requests) == 1 + len(parts)  # the document, then each section


def test_a_context_answer_is_paid_once_across_an_interrupted_insert(tmp_path):
    from rhizome.tools.testing import FailingChatModel

    failing = FailingChatModel(fail_after=2)
    index = SpRAGIndex(HashingEmbedder(), llm=failing, path=tmp_path / "idx", chunk_size=32, batch_size=100, cache=False)
    with pytest.raises(Exception, match="went away"):
        index.insert(long_documents())
    index.close()
    healthy = FailingChatModel()
    again = SpRAGIndex.load(tmp_path / "idx", llm=healthy, cache=False)
    again.insert(long_documents())
    assert failing.usage.calls + healthy.usage.calls == 3  # two answers were committed before the failure
    again.close()


def test_cli_indexes_and_queries_with_sprag(tmp_path, capsys):
    from rhizome.rag.cli import main, sample_corpus

    out = tmp_path / "idx"
    assert main(["index", str(sample_corpus()), "--method", "sprag", "--out", str(out), "--offline", "-q"]) == 0
    capsys.readouterr()
    code = main(["query", str(out), "Who was the first keeper of the Oskel lighthouse?", "--mode", "precision", "--json", "-k", "2", "--answer", "--offline"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["hits"][0]["kind"] == "segment" and payload["answer"]["text"]
    assert {d for h in payload["hits"] for d in h["provenance"]["document_ids"]} <= {p.name for p in sample_corpus().iterdir()}


def test_segments_flow_through_langgraph_and_langchain():
    from langgraph.graph import END, START, StateGraph
    from langgraph_rhizome import make_retrieve_node
    from typing_extensions import TypedDict

    from langchain_rhizome import RhizomeRetriever

    class State(TypedDict, total=False):
        question: str
        documents: list[dict[str, Any]]

    index = small_index()
    graph = StateGraph(State)
    graph.add_node("retrieve", make_retrieve_node(segment_extractor(index.as_retriever(mode="chunks"), preset="find_all"), k=2))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", END)
    state = graph.compile().invoke({"question": "the lighthouse keeper Osric Vane"})
    top = state["documents"][0]
    assert top["kind"] == "segment" and top["metadata"]["chunk_end"] - top["metadata"]["chunk_start"] >= 2
    json.dumps(state)
    docs = RhizomeRetriever.from_index(index, k=2, mode="find_all").invoke("the lighthouse keeper Osric Vane")
    assert docs[0].metadata["kind"] == "segment" and docs[0].metadata["chunk_ids"] == top["provenance"]["chunk_ids"]


def test_autocontext_over_the_ollama_wire(monkeypatch):
    from ollama_stub import OllamaStub

    from rhizome.core.models.ollama import OllamaChatModel

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with OllamaStub(models=["qwen2.5:7b"]) as stub:
        stub.reply_fn = lambda body: {"title": "Harbour ledger", "summary": "Records of the Tarn harbour."}
        llm = OllamaChatModel("qwen2.5:7b", host=stub.url, num_ctx=4096, retry_backoff=0.0)
        index = SpRAGIndex(HashingEmbedder(), llm=llm, chunk_size=32, cache=False)
        index.insert(Document(id="d", text=long_documents()[0].text))
        (body,) = stub.calls("/api/chat")
        assert body["format"]["properties"].keys() >= {"title", "summary"}  # a schema-constrained call
        assert "Entry 0.0. The Tarn harbour ferry" in body["messages"][-1]["content"]
        assert body["options"]["num_ctx"] == 4096
    context = index.document_context(["d"])["d"]
    assert (context.title, context.summary) == ("Harbour ledger", "Records of the Tarn harbour.")


def test_a_chat_model_reranker_grades_the_candidate_chunks():
    from rhizome.core.retrieval.llm_rerank import LLMReranker

    def storm_high(messages, schema):  # grades 9 for a passage about the storm, 1 otherwise
        passages = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
        return {"grades": [{"passage": i, "grade": 9 if "Storm" in p else 1} for i, p in enumerate(passages, 1)]}

    llm = FakeChatModel(storm_high)
    hits = small_index().as_retriever(k=2, reranker=LLMReranker(llm, method="pointwise")).retrieve("the harbour ferry")
    assert hits[0].kind == "segment" and "Storm" in hits[0].text and llm.requests  # grades / 10 are the relevance
