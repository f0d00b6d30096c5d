"""Offline checks of benchmarks.oracle: one extraction per passage, answered to every system in its
own format. Rhizome's side goes through the real LLMExtractor (packed and unpacked); the peers'
own parsers run only where the peers are installed (.venv-bench)."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.oracle import (
    ENTITIES,
    RELATIONS,
    Oracle,
    graph_size,
    offline_facts,
    squash,
    summary,
)
from benchmarks.peers import peer_answer
from rhizome.core.extraction import LLMExtractor
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.text import count_tokens
from rhizome.core.types import Chunk, Document

DOCS = [
    Document(id="p1", text="Publix\nPublix is a grocery chain founded by George Jenkins in Winter Haven. George Jenkins ran Publix until 1974."),
    Document(id="p2", text='Hello Love\n"Hello Love" is a song by Hank Snow, recorded in Nashville with Chet Atkins.'),
    Document(id="p3", text="Aircraft carrier\nan aircraft carrier is a warship that serves as a seagoing airbase."),
    Document(id="p4", text="Harris, Forbes &amp; Co.\nHarris, Forbes &amp; Co. was a bank founded by Norman Harris in Chicago."),
]


def chunks() -> list[Chunk]:
    return [Chunk(id=d.id, document_id=d.id, text=d.text, index=0, start=0, end=len(d.text), n_tokens=count_tokens(d.text)) for d in DOCS]


def oracle(facts=None) -> Oracle:
    return Oracle(DOCS, facts or offline_facts(DOCS), fallback_rhizome=SchemaResponder(), fallback_peer=peer_answer)


def test_every_passage_gets_entities_within_the_caps():
    facts = offline_facts(DOCS)
    assert set(facts) == {"p1", "p2", "p3", "p4"}
    for f in facts.values():
        assert 1 <= len(f.entities) <= ENTITIES and len(f.relations) <= RELATIONS
        names = {n for n, _, _ in f.entities}
        assert all(s in names and t in names for s, t, _, _ in f.relations)
    assert {n for n, _, _ in facts["p1"].entities} >= {"Publix", "George Jenkins"}
    # no name found by the rules: the passage's title stands for it
    assert facts["p3"].entities[0][0] == "Aircraft carrier" and not facts["p3"].relations
    size = graph_size(facts)
    assert size["entity_mentions"] == sum(len(f.entities) for f in facts.values()) >= size["entities"]


@pytest.mark.parametrize("pack_tokens, keywords", [(0, False), (1200, True)])
def test_rhizome_extracts_exactly_the_oracle_facts(pack_tokens, keywords):
    facts = offline_facts(DOCS)
    model = oracle(facts)
    extractor = LLMExtractor(FakeChatModel(model.rhizome), pack_tokens=pack_tokens, keywords=keywords)
    records = extractor.extract(chunks())
    for record in records:
        f = facts[record.chunk_id]
        assert sorted(e.name for e in record.entities) == sorted(n for n, _, _ in f.entities)
        pairs = {tuple(sorted((r.source, r.target))) for r in record.relations}
        assert pairs == {tuple(sorted((s.casefold(), t.casefold()))) for s, t, _, _ in f.relations}
        assert all(e.description for e in record.entities)
    calls = len(DOCS) if pack_tokens == 0 else 1
    assert model.calls == {"extraction": calls, "gleaning": calls} and not model.unmatched


def test_rhizome_summaries_and_resolution_checks():
    model = oracle()
    messages = [{"role": "user", "content": "Subject: Publix\n\nNotes:\n- a chain.\n- a chain.\n- founded 1930.\n\nWrite one description ..."}]
    assert model.rhizome(messages, {"title": "_Summary"}) == {"summary": "a chain. founded 1930."}
    assert model.rhizome(messages, {"title": "SamePairs"}) == {"same": []}


def test_peers_get_the_same_facts_in_their_formats():
    facts = offline_facts(DOCS)
    model = oracle(facts)
    rows = model.lightrag_hku(f"---Input Text---\n```\n{DOCS[0].text}\n```\n").splitlines()
    assert rows[-1] == "<|COMPLETE|>"
    assert len([r for r in rows if r.startswith("entity<|#|>")]) == len(facts["p1"].entities)
    assert len([r for r in rows if r.startswith("relation<|#|>")]) == len(facts["p1"].relations)
    out = model.nano_graphrag(f"-Real Data-\nEntity_types: x\nText: {DOCS[1].text}\n######################\nOutput:")
    assert out.count('("entity"') == len(facts["p2"].entities) and out.count('("relationship"') == len(facts["p2"].relations)
    assert model.lightrag_hku("Based on the last extraction task, ...") == "<|COMPLETE|>"
    assert model.nano_graphrag("Answer YES | NO if ...") == "NO"
    long = ["word " * 300, "other"]
    assert count_tokens(summary(long)) <= 200
    assert model.calls == {"extraction": 2, "gleaning": 2} and not model.unmatched


def test_a_passage_is_found_with_its_html_entities_unescaped():
    facts = offline_facts(DOCS)
    rows = oracle(facts).lightrag_hku("---Input Text---\n```\nHarris, Forbes & Co.\nHarris, Forbes & Co. was a bank founded by Norman Harris in Chicago.\n```\n")
    assert len([r for r in rows.splitlines() if r.startswith("entity")]) == len(facts["p4"].entities) > 0


def test_an_unknown_passage_is_counted_not_invented():
    model = oracle()
    assert model.lightrag_hku("---Input Text---\n```\nsomething else\n```\n") == "<|COMPLETE|>"
    assert model.unmatched == ["something else"] and squash(" a \n b ") == "a b"


def test_lightrag_hku_parses_every_row():
    operate = pytest.importorskip("lightrag.operate")
    facts = offline_facts(DOCS)
    out = oracle(facts).lightrag_hku(f"---Input Text---\n```\n{DOCS[0].text}\n```\n")
    nodes, edges = asyncio.run(operate._process_extraction_result(out, "chunk-1", 0))
    assert len(nodes) == len(facts["p1"].entities) and len(edges) == len(facts["p1"].relations)


def test_nano_graphrag_parses_every_record():
    op = pytest.importorskip("nano_graphrag._op")
    from nano_graphrag._utils import split_string_by_multi_markers

    facts = offline_facts(DOCS)
    out = oracle(facts).nano_graphrag(f"-Real Data-\nText: {DOCS[0].text}\n######\nOutput:")
    entities = relations = 0
    for record in split_string_by_multi_markers(out, ["##", "<|COMPLETE|>"]):
        attributes = split_string_by_multi_markers(record.strip()[1:-1], ["<|>"])
        entities += asyncio.run(op._handle_single_entity_extraction(attributes, "c")) is not None
        relations += asyncio.run(op._handle_single_relationship_extraction(attributes, "c")) is not None
    assert (entities, relations) == (len(facts["p1"].entities), len(facts["p1"].relations))
