"""Offline checks of benchmarks.peer_recall: the stand-in model's answers, the context parsers and
the scoring. The peer packages are not needed; the two round trips through a peer's own parser
run only where that peer is installed (.venv-bench)."""

from __future__ import annotations

import asyncio
import json

import pytest

from benchmarks import data
from benchmarks.peer_recall import (
    Facts,
    PassageMap,
    TripleModel,
    lightrag_context_units,
    nano_context_units,
    score,
)
from rhizome.core.types import Document

DOCS = [
    Document(id="p1", text="Publix\nPublix is a grocery chain founded in 1930 by George Jenkins."),
    Document(id="p2", text='Hello Love\n"Hello Love" is a song by Hank Snow.'),
]
FACTS = {
    "p1": Facts(
        ("Publix", "1930", "George Jenkins"),
        (
            ("Publix", "founded in", "1930", "Publix founded in 1930"),
            ("Publix", "founded by", "George Jenkins", "Publix founded by George Jenkins"),
        ),
    ),
    "p2": Facts(
        ("Hello Love", "Hank Snow"),
        (("Hello Love", "performed by", "Hank Snow", "Hello Love performed by Hank Snow"),),
    ),
}


def answer(coro):
    return asyncio.run(coro)


def test_lightrag_answers_rows_of_the_passage_and_nothing_on_gleaning():
    model = TripleModel(DOCS, FACTS)
    prompt = f"---Task---\n---Input Text---\n```\n{DOCS[0].text}\n```\n\n---Output---\n"
    rows = answer(model.lightrag(prompt, system_prompt="sys")).splitlines()
    assert rows[0] == "entity<|#|>Publix<|#|>Other<|#|>Publix"
    assert "relation<|#|>Publix<|#|>1930<|#|>founded in<|#|>Publix founded in 1930" in rows
    assert rows[-1] == "<|COMPLETE|>" and len(rows) == 3 + 2 + 1
    assert (
        answer(model.lightrag("Based on the last extraction task, identify ...")) == "<|COMPLETE|>"
    )
    summary = 'Description List:\n\n```\n{"Description": "a"}\n{"Description": "b"}\n{"Description": "a"}\n```\n'
    assert answer(model.lightrag(summary)) == "a b"
    assert model.calls == {"extraction": 1, "gleaning": 1, "summary": 1} and not model.unmatched


def test_nano_answers_records_of_the_passage():
    model = TripleModel(DOCS, FACTS)
    prompt = f"...\n-Real Data-\n######################\nEntity_types: a,b\nText: {DOCS[1].text}\n######################\nOutput:\n"
    out = answer(model.nano(prompt))
    assert out.endswith("<|COMPLETE|>")
    records = out.removesuffix("<|COMPLETE|>").split("##")
    assert records[0] == '("entity"<|>"Hello Love"<|>"other"<|>"Hello Love")'
    assert (
        records[-1]
        == '("relationship"<|>"Hello Love"<|>"Hank Snow"<|>"Hello Love performed by Hank Snow"<|>1)'
    )
    assert answer(model.nano("MANY entities were missed in the last extraction.")) == "<|COMPLETE|>"
    assert answer(model.nano("Answer YES | NO if there are still entities")) == "NO"


def test_an_unknown_passage_is_counted_not_invented():
    model = TripleModel(DOCS, FACTS)
    assert answer(model.lightrag("---Input Text---\n```\nsomething else\n```\n")) == "<|COMPLETE|>"
    assert len(model.unmatched) == 1


def test_nano_sources_rows_in_order():
    rows = [
        '"id",\t"content"',
        f'0,\t"{DOCS[1].text.strip(chr(34))}"',
        f'1,\t"{DOCS[0].text}"',
        '2,\t"not a passage"',
    ]
    context = (
        '\n-----Reports-----\n```csv\n"id",\t"content"\n0,\t"report"\n```\n-----Sources-----\n```csv\n'
        + "\n".join(rows)
        + "\n```\n"
    )
    units = nano_context_units(context)
    assert len(units) == 3 and units[1] == DOCS[0].text
    passage = PassageMap(DOCS)
    assert passage.rank(units) == ["p2", "p1"] and passage.unmapped == 1
    assert nano_context_units(None) == [] and nano_context_units("no sources") == []


def test_lightrag_document_chunks_in_order():
    lines = "\n".join(
        json.dumps({"reference_id": "", "content": d.text}) for d in (DOCS[1], DOCS[0], DOCS[1])
    )
    context = f"Knowledge Graph Data (Entity):\n\n```json\n{{}}\n```\n\nDocument Chunks (Each entry ... e.g. `A → B`):\n\n```json\n{lines}\n```\n\nReference Document List (...):\n\n```\n\n```\n"
    assert PassageMap(DOCS).rank(lightrag_context_units(context)) == ["p2", "p1"]


def test_score_is_recall_at_2_and_5_per_question():
    questions = [
        data.Question("q1", "?", "a", supporting=("p1", "p2")),
        data.Question("q2", "?", "a", supporting=("p3",)),
    ]
    ranked = [["p1", "x", "p2"], []]
    row = score(ranked, questions, [10.0, 30.0])
    assert row["recall@2"] == pytest.approx(0.25) and row["recall@5"] == pytest.approx(0.5)
    assert (
        row["per_question_recall@5"] == [1.0, 0.0]
        and row["no_passage_queries"] == 1
        and row["p50_query_ms"] == 20.0
    )


def test_lightrag_parses_every_row():
    operate = pytest.importorskip("lightrag.operate")
    model = TripleModel(DOCS, FACTS)
    out = answer(model.lightrag(f"---Input Text---\n```\n{DOCS[0].text}\n```\n"))
    nodes, edges = answer(operate._process_extraction_result(out, "chunk-1", 0))
    # lightrag-hku drops names of one or two digits ("1930" has four, so it stays)
    assert set(nodes) == {"Publix", "1930", "George Jenkins"} and len(edges) == 2


def test_nano_parses_every_record():
    op = pytest.importorskip("nano_graphrag._op")
    from nano_graphrag._utils import split_string_by_multi_markers

    model = TripleModel(DOCS, FACTS)
    out = answer(model.nano(f"-Real Data-\nText: {DOCS[0].text}\n######\nOutput:"))
    entities = relations = 0
    for record in split_string_by_multi_markers(out, ["##", "<|COMPLETE|>"]):
        attributes = split_string_by_multi_markers(record.strip()[1:-1], ["<|>"])
        entities += answer(op._handle_single_entity_extraction(attributes, "c")) is not None
        relations += answer(op._handle_single_relationship_extraction(attributes, "c")) is not None
    assert (entities, relations) == (3, 2)
