"""HippoRAG (issue 16): the graph it builds, the walk it runs, and both retrieval versions."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
import numpy as np
import pytest

from rhizome.core import Document, HashingEmbedder
from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError
from rhizome.core.extraction import query_names
from rhizome.core.graph import personalized_pagerank
from rhizome.core.models.base import BaseEmbedder
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.retrieval.contract import vector_search
from rhizome.core.retrieval.evidence import (
    WALK_TOLERANCE,
    EvidenceGraph,
    link_names,
    relative_weights,
)
from rhizome.hipporag import HippoRAGIndex

OPENIE = {
    "docs": [
        {"idx": "p1", "passage": "Marie Curie was born in Warsaw.", "extracted_entities": ["Marie Curie", "Warsaw"],
         "extracted_triples": [["Marie Curie", "born in", "Warsaw"]]},
        {"idx": "p2", "passage": "Warsaw is the capital of Poland.", "extracted_entities": ["Warsaw", "Poland"],
         "extracted_triples": [["Warsaw", "capital of", "Poland"]]},
        {"idx": "p3", "passage": "Pierre Curie married Marie Curie in Sceaux.", "extracted_entities": ["Pierre Curie", "Marie Curie", "Sceaux"],
         "extracted_triples": [["Pierre Curie", "married", "Marie Curie"], ["Pierre Curie", "married in", "Sceaux"]]},
        {"idx": "p4", "passage": "The Sorbonne is in Paris.", "extracted_entities": ["Sorbonne", "Paris"],
         "extracted_triples": [["Sorbonne", "located in", "Paris"]]},
    ]
}
DOCS = [Document(id=d["idx"], text=d["passage"]) for d in OPENIE["docs"]]


@pytest.fixture
def openie_file(tmp_path):
    path = tmp_path / "openie.json"
    path.write_text(json.dumps(OPENIE))
    return path


def imported(openie_file, **kw: Any) -> HippoRAGIndex:
    index = HippoRAGIndex(HashingEmbedder(), extraction=f"openie:{openie_file}", **kw)
    index.insert(DOCS[:3])
    return index


class TableEmbedder(BaseEmbedder):
    """Given vectors for given texts; any other text gets a vector orthogonal to all of them."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        super().__init__("table:embed", dimension=4)
        self.table = table

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        return [self.table.get(t, [0.0, 0.0, 0.0, 1.0]) for t in texts]


# -- the graph -----------------------------------------------------------------------------------
def test_phrases_facts_and_passages_come_from_the_triples(openie_file):
    index = imported(openie_file)
    assert {p.name for p in index.phrases.all()} == {"Marie Curie", "Warsaw", "Poland", "Pierre Curie", "Sceaux"}
    facts = {f.description: f for f in index.facts.all()}
    assert set(facts) == {"Marie Curie born in Warsaw", "Warsaw capital of Poland", "Pierre Curie married Marie Curie", "Pierre Curie married in Sceaux"}
    assert all(f.weight == 1.0 for f in facts.values())
    curie = index.phrases.one("marie curie")
    assert len(curie.source_chunk_ids) == 2  # in p1 and p3
    graph = index.graph()
    assert graph.passage_nodes and len(graph) == 5 + 3
    assert graph.incidence.shape == (3, 5) and graph.incidence.sum() == 7


def test_the_walk_is_networkx_personalized_pagerank_with_specificity(openie_file):
    index = imported(openie_file)
    graph = index.graph()
    nodes = graph.entity_ids + graph.chunk_ids
    g = nx.Graph()
    g.add_nodes_from(nodes)
    coo = graph.matrix.tocoo()
    for i, j, w in zip(coo.row, coo.col, coo.data):
        g.add_edge(nodes[i], nodes[j], weight=w)
    # seeds: Marie Curie (in 2 passages) and Poland (in 1): weights 1/2 and 1/1 (node specificity)
    seeds = {"marie curie": 1.0, "poland": 1.0}
    expected = nx.pagerank(g, alpha=0.5, personalization={"marie curie": 0.5, "poland": 1.0}, tol=1e-12, max_iter=500)
    restart = np.array([{"marie curie": 0.5, "poland": 1.0}.get(n, 0.0) for n in nodes])
    ours = personalized_pagerank(graph.walk, restart, damping=0.5, tol=1e-12, max_iter=500)
    assert np.allclose(ours, [expected[n] for n in nodes], atol=1e-9)
    ranked = dict(graph.rank(seeds))
    # the walk of a search stops at the kernel's WALK_TOLERANCE (1e-6 in all), not at 1e-12
    assert ranked == pytest.approx({c: round(expected[c], 12) for c in graph.chunk_ids if expected[c] > 0}, abs=WALK_TOLERANCE)


def test_hipporag1_scores_passages_by_the_mass_of_their_phrases(openie_file):
    index = imported(openie_file)
    graph = index.graph(passage_nodes=False)
    assert len(graph) == 5  # phrases only
    g = nx.Graph()
    g.add_nodes_from(graph.entity_ids)
    coo = graph.matrix.tocoo()
    for i, j, w in zip(coo.row, coo.col, coo.data):
        g.add_edge(graph.entity_ids[i], graph.entity_ids[j], weight=w)
    mass = nx.pagerank(g, alpha=0.5, personalization={"poland": 1.0}, tol=1e-12, max_iter=500)
    expected = {c: sum(mass[e] for e in graph.entity_ids if graph.incidence[graph.chunk_ids.index(c), graph.entity_ids.index(e)]) for c in graph.chunk_ids}
    ranked = graph.rank({"poland": 1.0}, {"p1:0": 1.0})  # passage seeds do not apply without passage nodes
    assert dict(ranked) == pytest.approx(expected, abs=WALK_TOLERANCE)
    assert [c for c, _ in ranked][0] == "p2:0"


def test_synonymy_edges_start_at_the_threshold():
    table = {
        "Marie Curie": [1.0, 0.0, 0.0, 0.0],
        "Maria Sklodowska": [0.8, 0.6, 0.0, 0.0],  # cosine 0.8 with Marie Curie: joined
        "Madame Curie": [0.79, (1 - 0.79**2) ** 0.5, 0.0, 0.0],  # 0.79: not joined to Marie Curie
        "US": [0.0, 0.0, 1.0, 0.0],
        "UK": [0.0, 0.0, 1.0, 0.0],  # identical vectors, but two letters: no synonymy edge
    }
    index = HippoRAGIndex(TableEmbedder(table), extraction="offline")
    index.insert([Document(id="a", text="x")])  # a first batch: the rest is matched against stored phrases too
    records = {"docs": [{"idx": "p", "passage": "...", "extracted_entities": list(table), "extracted_triples": []}]}
    from rhizome.core.extraction.openie import OpenIEExtractor

    index._extractor = OpenIEExtractor(records)
    index.insert([Document(id="b", text="...")])
    pairs = {(s.source, s.target): s.weight for s in index.synonyms.all()}
    assert pairs[("maria sklodowska", "marie curie")] == pytest.approx(0.8, abs=1e-6)
    assert ("madame curie", "marie curie") not in pairs
    assert not any("us" in p or "uk" in p for p in pairs)
    assert all(w >= 0.8 - 1e-6 for w in pairs.values())


def test_insert_adds_to_the_graph_without_changing_what_is_there(openie_file):
    index = imported(openie_file)
    phrases = {p.id: p for p in index.phrases.all()}
    facts = {f.id: f for f in index.facts.all()}
    synonyms = {s.id for s in index.synonyms.all()}
    report = index.insert([Document(id="p4", text=OPENIE["docs"][3]["passage"])])
    assert report.stats["phrases_added"] == 2 and report.stats["facts_added"] == 1
    after_p = {p.id: p for p in index.phrases.all()}
    after_f = {f.id: f for f in index.facts.all()}
    assert all(after_p[pid] == p for pid, p in phrases.items())  # same ids, same records
    assert all(after_f[fid] == f for fid, f in facts.items())
    assert synonyms <= {s.id for s in index.synonyms.all()}
    assert set(after_p) - set(phrases) == {"sorbonne", "paris"}
    # a passage stating a known fact (the OpenIE file matches p5 by its text, p1's) raises the
    # fact's weight to its number of passages
    index.insert([Document(id="p5", text="Marie Curie was born in Warsaw.")])
    born = next(f for f in index.facts.all() if f.description == "Marie Curie born in Warsaw")
    assert born.weight == 2.0 and born.source_chunk_ids == ["p1:0", "p5:0"]
    assert after_p["sorbonne"] == index.phrases.one("sorbonne")


def test_delete_forgets_what_only_the_document_supported(openie_file):
    index = imported(openie_file)
    index.delete("p2")
    assert index.phrases.one("poland") is None
    assert index.phrases.one("warsaw").source_chunk_ids == index.store.chunk_ids(["p1"])
    assert "Warsaw capital of Poland" not in {f.description for f in index.facts.all()}
    assert all("poland" not in (s.source, s.target) for s in index.synonyms.all())
    hits = index.as_retriever(k=2, mode="v2").retrieve("Which country is Warsaw the capital of?")
    assert all(h.provenance.document_ids != ["p2"] for h in hits)


# -- retrieval -----------------------------------------------------------------------------------
def test_both_versions_reach_the_second_hop(openie_file):
    index = imported(openie_file)
    for mode in ("v1", "v2"):
        hits = index.as_retriever(k=3, mode=mode).retrieve("In which country was Marie Curie born?")
        assert {h.provenance.document_ids[0] for h in hits} == {"p1", "p2", "p3"}
        assert hits[0].metadata["via"] == "graph" and "Marie Curie" in hits[0].metadata["seed_phrases"]
    v2 = index.as_retriever(k=3, mode="v2").retrieve("In which country was Marie Curie born?")
    assert v2[0].metadata["facts"]  # the facts that seeded the walk


def test_the_walk_takes_the_weights_and_graph_each_setting_names(openie_file):
    index = imported(openie_file)
    question = "In which country was Marie Curie born?"
    vector = index.embedder.embed_query([question])
    found = vector_search(index.store, index.FACT_COLLECTION, vector, 10)
    records = index.facts.get([f for f, _ in found])
    weights = relative_weights(found)
    # v2's seeds: every endpoint of the nearest facts at its best fact's relative weight, and
    # the query entity's phrase at 1; the passages nearest the question take part as seeds
    retriever = index.as_retriever(k=3, mode="v2")
    seeds, kept, _ = run_sync(retriever._fact_seeds(question, vector))
    assert {x for f in kept for x in (records[f[0]].source, records[f[0]].target)} == set(seeds)
    assert max(seeds.values()) == 1.0 and all(seeds[e] == max(weights[f] for f, _ in found if e in (records[f].source, records[f].target)) for e in seeds)
    # the paper's scaling: each kept fact's score over the best one; link_k keeps the most specific phrases
    paper = index.as_retriever(k=3, mode="v2", temperature=None)
    seeds, kept, _ = run_sync(paper._fact_seeds(question, vector))
    best = max(score for _, _, score in kept)
    assert seeds == {e: max(sc / best for f, _, sc in kept if e in (records[f].source, records[f].target)) for e in seeds}
    one, _, _ = run_sync(index.as_retriever(k=3, mode="v2", temperature=None, link_k=1)._fact_seeds(question, vector))
    passages = index.graph().passages_of
    assert list(one) == [min(seeds, key=lambda e: (-seeds[e] / passages[e], e))]
    # v1 walks phrases and passages; with no passage seeds, HippoRAG 1's phrase graph alone
    walked = index.as_retriever(k=3, mode="v1").retrieve(question)
    alone = index.as_retriever(k=3, mode="v1", passage_weight=0.0).retrieve(question)
    phrase_graph = index.graph(passage_nodes=False)
    expected = phrase_graph.rank(run_sync(link_names(index, index.PHRASE_COLLECTION, index.embedder.embed_query(query_names(question)))))
    assert [h.id for h in alone] == [c for c, _ in expected][:3]
    assert walked and {h.provenance.document_ids[0] for h in walked} == {h.provenance.document_ids[0] for h in alone}


def test_v2_falls_back_to_dense_retrieval_when_the_filter_keeps_no_fact(openie_file):
    def respond(messages, schema):
        props = (schema or {}).get("properties", {})
        return {"facts": []} if "facts" in props else {"named_entities": []}

    index = imported(openie_file, llm=FakeChatModel(respond))
    retriever = index.as_retriever(k=3, mode="v2")
    result = retriever.search("In which country was Marie Curie born?")
    dense = index.as_retriever(k=3, mode="naive").retrieve("In which country was Marie Curie born?")
    assert [h.id for h in result.hits] == [h.id for h in dense]
    assert {h.metadata["via"] for h in result.hits} == {"dense-fallback"}
    assert result.stats["facts_kept"] == 0 and result.stats["model_calls"] >= 1
    assert result.notes == ["the v2 search had nothing to start its walk from (no fact of the graph was kept for this "
                            "query): the hits are the passages nearest to the query"]
    v1 = index.as_retriever(k=3, mode="v1").search("zebra quantum xylophone")
    assert {h.metadata["via"] for h in v1.hits} == {"dense-fallback"}
    assert v1.notes and "no entity the query names is in the graph" in v1.notes[0]


def test_the_filter_keeps_only_candidates_and_at_most_keep_facts(openie_file):
    def respond(messages, schema):
        props = (schema or {}).get("properties", {})
        if "facts" in props:
            return {"facts": [["marie curie", "born in", "warsaw"], ["Invented", "fact", "here"]]}
        return {"named_entities": ["Marie Curie"]}

    index = imported(openie_file, llm=FakeChatModel(respond))
    hits = index.as_retriever(k=3, mode="v2", entity_seeds=False).retrieve("In which country was Marie Curie born?")
    assert hits[0].metadata["facts"] == ["Marie Curie born in Warsaw"]
    assert set(hits[0].metadata["seed_phrases"]) == {"Marie Curie", "Warsaw"}


def test_the_filter_keeps_at_most_four_of_five_candidates(openie_file):
    every = [list(f) for d in OPENIE["docs"] for f in d["extracted_triples"]]  # five facts
    asked: list[str] = []

    def respond(messages, schema):
        props = (schema or {}).get("properties", {})
        if "facts" in props:
            asked.append(messages[-1]["content"])
            return {"facts": every[::-1]}  # the model keeps all five, last first
        return {"named_entities": []}

    index = imported(openie_file, llm=FakeChatModel(respond))
    index.insert([Document(id="p4", text=OPENIE["docs"][3]["passage"])])
    retriever = index.as_retriever(k=4, mode="v2", entity_seeds=False)
    result = retriever.search("Where did Pierre Curie marry Marie Curie?")
    assert result.stats["facts_kept"] == 4  # of the five fact_k candidates the model kept
    kept = [" ".join(f) for f in every[::-1][:4]]
    assert result.hits[0].metadata["facts"] == kept  # the model's order, cut at keep_facts
    assert index.as_retriever(k=4, mode="v2", entity_seeds=False, keep_facts=2).search("Where did Pierre Curie marry?").stats["facts_kept"] == 2
    assert "at most 4" in asked[0] and "at most 2" in asked[1]  # the prompt says how many to keep


def test_model_openie_asks_for_entities_then_triples():
    calls = []

    def respond(messages, schema):
        props = (schema or {}).get("properties", {})
        calls.append(sorted(props))
        if "triples" in props:
            assert '"Ada Lovelace"' in messages[-1]["content"]  # the entities are in the triple prompt
            return {"triples": [["Ada Lovelace", "worked with", "Charles Babbage"], ["bad"]]}
        return {"named_entities": ["Ada Lovelace", "Charles Babbage"]}

    index = HippoRAGIndex(HashingEmbedder(), llm=FakeChatModel(respond))
    index.insert([Document(id="d", text="Ada Lovelace worked with Charles Babbage.")])
    assert calls == [["named_entities"], ["triples"]]
    assert [f.description for f in index.facts.all()] == ["Ada Lovelace worked with Charles Babbage"]


@pytest.mark.parametrize("wrong", [{}, {"entities": ["Ada Lovelace"]}, {"facts": [["Ada Lovelace", "met", "Charles Babbage"]]}])
def test_an_openie_answer_without_its_field_is_asked_again_and_never_stored_as_nothing(wrong):
    from rhizome.hipporag.prompts import KeptFacts, NamedEntities, Triples

    for schema in (NamedEntities, Triples, KeptFacts):
        assert schema.model_json_schema()["required"]  # Ollama's format forbids {} too
    right = {"named_entities": ["Ada Lovelace", "Charles Babbage"], "triples": [["Ada Lovelace", "worked with", "Charles Babbage"]]}
    model = FakeChatModel([wrong, right, wrong, right])  # each call: the wrong answer first
    index = HippoRAGIndex(HashingEmbedder(), llm=model, cache=False)
    report = index.insert([Document(id="d", text="Ada Lovelace worked with Charles Babbage.")])
    assert report.inserted == ["d"] and model.usage.retries == 2
    assert [f.description for f in index.facts.all()] == ["Ada Lovelace worked with Charles Babbage"]
    stubborn = HippoRAGIndex(HashingEmbedder(), llm=FakeChatModel([wrong], max_retries=1), cache=False)
    report = stubborn.insert([Document(id="d", text="Ada Lovelace worked with Charles Babbage.")])
    assert list(report.failed) == ["d"] and "ModelOutputError" in report.failed["d"] and not report.inserted
    assert KeptFacts.model_validate({"facts": []}).facts == [] and NamedEntities.model_validate({"named_entities": None}).named_entities == []


def test_bad_retriever_settings_are_refused(openie_file):
    index = imported(openie_file)
    with pytest.raises(ConfigurationError):
        index.as_retriever(mode="v3")
    with pytest.raises(ConfigurationError):
        index.as_retriever(damping=1.0)
    with pytest.raises(ConfigurationError):
        index.as_retriever(fact_k=0)
    for option in ("fact_filter", "entity_seeds"):  # "no" was taken as true
        with pytest.raises(ConfigurationError, match=f"{option} must be True or False"):
            index.as_retriever(**{option: "no"})
    with pytest.raises(ConfigurationError, match="the v1 mode: link_k must be a positive integer or None, got 0"):
        index.as_retriever(mode="v1", link_k=0)
    with pytest.raises(ConfigurationError, match="temperature must be a positive number or None, got 0"):
        index.as_retriever(temperature=0)
    assert index.as_retriever(temperature=None, link_k=5).params.link_k == 5  # HippoRAG 2 as published


def test_tied_passages_rank_by_id_not_by_insertion_order():
    graph_a = EvidenceGraph({"x": ["c2", "c1"], "y": ["c1", "c2"]}, [("x", "y", 1.0)])
    graph_b = EvidenceGraph({"y": ["c2", "c1"], "x": ["c1", "c2"]}, [("y", "x", 1.0)])
    assert graph_a.rank({"x": 1.0, "y": 1.0}) == graph_b.rank({"y": 1.0, "x": 1.0})
    assert [c for c, _ in graph_a.rank({"x": 1.0, "y": 1.0})] == ["c1", "c2"]


# -- the model path over the Ollama wire (loopback stub) ----------------------------------------
def test_openie_ner_and_filter_go_over_the_ollama_wire(monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ollama_stub import OllamaStub

    from rhizome.core.models.ollama import OllamaChatModel, OllamaEmbedder

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    def reply(body: dict) -> dict:
        props = set((body.get("format") or {}).get("properties", {}))
        prompt = body["messages"][-1]["content"]
        if "triples" in props:
            return {"triples": [["Ada Lovelace", "worked with", "Charles Babbage"], ["Charles Babbage", "designed", "Analytical Engine"]]}
        if "facts" in props:  # keep the one fact about Babbage's engine
            return {"facts": [["Charles Babbage", "designed", "Analytical Engine"]]}
        if "Question:" in prompt:
            return {"named_entities": ["Ada Lovelace"]}
        return {"named_entities": ["Ada Lovelace", "Charles Babbage", "Analytical Engine"]}

    with OllamaStub(models=["qwen2.5:7b", "nomic-embed-text"]) as stub:
        stub.reply_fn = reply
        llm = OllamaChatModel("qwen2.5:7b", host=stub.url, retry_backoff=0.0)
        index = HippoRAGIndex(OllamaEmbedder("nomic-embed-text", host=stub.url), llm=llm, cache=False)
        index.insert([Document(id="d", text="Ada Lovelace worked with Charles Babbage on his Analytical Engine.")])
        chats = stub.calls("/api/chat")
        schemas = [sorted(c["format"]["properties"]) for c in chats]
        assert schemas == [["named_entities"], ["triples"]]  # NER first, then triples
        assert '"Charles Babbage"' in chats[1]["messages"][-1]["content"]  # the entities anchor the triples
        assert len(index.facts.all()) == 2
        hits = index.as_retriever(k=1, mode="v2", entity_seeds=False).retrieve("What did Babbage design?")
        assert hits[0].metadata["facts"] == ["Charles Babbage designed Analytical Engine"]
        filter_call = stub.calls("/api/chat")[-1]
        assert sorted(filter_call["format"]["properties"]) == ["facts"] and "What did Babbage design?" in filter_call["messages"][-1]["content"]
        hits = index.as_retriever(k=1, mode="v1").retrieve("Who did Ada Lovelace work with?")
        assert hits[0].metadata["seed_phrases"] == ["Ada Lovelace"]  # the model's query NER, linked
        index.close()


def test_an_index_written_before_the_graph_layer_answers_alike_and_goes_on_as_a_new_one(tmp_path, openie_file):
    """An index whose per-chunk records are kernel extractions and whose facts keep their text
    only as their value (as HippoRAG wrote them before the entity-graph layer): read-only it
    answers as before; its first writable open converts it, and from then on it is row for row
    the index the layer builds."""
    from rhizome.core.extraction import Extraction

    def build(path: Any) -> HippoRAGIndex:
        index = HippoRAGIndex(HashingEmbedder(), extraction=f"openie:{openie_file}", path=path)
        index.insert(DOCS[:3])
        return index

    def answers(index: HippoRAGIndex) -> list[Any]:
        return [[(h.id, round(h.score, 9)) for h in index.as_retriever(k=4, mode=mode).retrieve(q)]
                for mode in ("v1", "v2") for q in ("Where was Marie Curie born?", "Who married in Sceaux?")]

    def rows(index: HippoRAGIndex) -> dict[str, list[str]]:
        g = index.entity_graph
        tables = (g.entities, g.relations, g.lists.citations, g.lists.fragments, g.extractions, g.mentions, index.synonyms)
        return {"vectors": sorted(map(str, index.store.query("SELECT collection, id, vector FROM vectors"))),
                **{t.name: sorted(r.model_dump_json() for r in t.all()) for t in tables}}

    old = build(tmp_path / "old")
    expected = answers(old)
    chunks = [c for d in DOCS[:3] for c in old.store.chunks(old.store.chunk_ids([d.id])).values()]
    extractions = run_sync(old.extractor.aextract(chunks))
    with old.store.transaction() as db:  # the records as the code before the layer wrote them
        old.entity_graph.extractions.view(Extraction).put(db, extractions)
        old.entity_graph.mentions.delete(db, old.entity_graph.mentions.keys())
        old.facts.put(db, [f.model_copy(update={"descriptions": [], "metadata": {}}) for f in old.facts.all()])
        db.execute("DELETE FROM meta WHERE key = ?", (old.entity_graph.adopted_flag,))
    old.close()

    reader = HippoRAGIndex.load(tmp_path / "old", readonly=True)
    assert answers(reader) == expected
    assert not reader.store.get_meta(reader.entity_graph.adopted_flag, False), "a read-only open changes nothing"
    reader.close()
    writer = HippoRAGIndex(HashingEmbedder(), extraction=f"openie:{openie_file}", path=tmp_path / "old")
    fresh = build(tmp_path / "fresh")
    assert answers(writer) == expected
    for index in (writer, fresh):  # an insert and a delete go alike
        index.insert(DOCS[3:])
        index.delete("p1")
    assert answers(writer) == answers(fresh)
    old_rows, new_rows = rows(writer), rows(fresh)
    facts = writer.facts.name
    assert {k: v for k, v in old_rows.items() if k != facts} == {k: v for k, v in new_rows.items() if k != facts}
    # facts the old code wrote keep its (empty) metadata; everything a search reads is equal
    assert [f.model_dump(exclude={"metadata"}) for f in writer.facts.all()] == [f.model_dump(exclude={"metadata"}) for f in fresh.facts.all()]


def test_the_fact_graph_is_read_only_when_chains_are_on(openie_file, monkeypatch):
    index = imported(openie_file)
    read = []
    fact_graph = type(index).fact_graph
    monkeypatch.setattr(type(index), "fact_graph", lambda self: read.append(1) or fact_graph(self))
    plain = index.as_retriever(k=3).retrieve("In which country was Marie Curie born?")
    assert plain and not read  # chains off (the default): a query never reads the fact graph
    index.as_retriever(k=3, chains=True).retrieve("In which country was Marie Curie born?")
    assert read
