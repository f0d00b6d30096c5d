"""An index written before long profiles kept their citations and fragments as rows of their
own (rhizome.core.graph.lists): every list inside its entity or relation record, no row tables.

It answers as it did when opened read-only (nothing is changed), and its first writable open
moves the long lists to rows; from then on it behaves as an index built with rows from the
start. (The test corpus's profiles are short: the run with every profile long, see conftest.py,
is the one that moves lists.)
"""

from __future__ import annotations

from typing import Any

from _lightrag_fakes import CORPUS

from rhizome.core import Document, HashingEmbedder
from rhizome.core.graph.lists import counts, in_rows, is_long
from rhizome.lightrag import LightRAGIndex

ROWS = "lightrag.list_rows"

EXTRA = Document(id="extra", text="Marie Curie visited Stockholm. Pierre Curie stayed in Paris with Alfred Nobel.")
LATER = Document(id="later", text="Alfred Nobel wrote to Marie Curie from Stockholm about Paris.")
QUERIES = ("Where did Marie Curie work?", "Who founded the Nobel Prize?", "What flows through Paris?", "Stockholm and Paris")


def open_index(path: Any, **options: Any) -> LightRAGIndex:
    # two fragments make a summary (extractive, offline), so records carry summary metadata too
    return LightRAGIndex(HashingEmbedder(), path=path, chunk_size=64, chunk_overlap=8, force_summary_fragments=2, **options)


def build(path: Any) -> LightRAGIndex:
    index = open_index(path)
    index.insert(CORPUS)
    index.insert(EXTRA)
    return index


def answers(index: LightRAGIndex) -> dict[str, Any]:
    """Every mode's hits and context for the queries, with the whole records."""
    out: dict[str, Any] = {"entities": [e.model_dump() for e in index.entities()], "relations": [r.model_dump() for r in index.relations()]}
    for mode in index.modes:
        retriever = index.as_retriever(k=8, mode=mode)
        for query in QUERIES:
            found = retriever.search(query)
            out[f"{mode}: {query}"] = (
                [h.model_dump() for h in retriever.retrieve(query)],
                [h.model_dump() for h in found.context],
            )
    return out


def rows(index: LightRAGIndex) -> dict[str, list[str]]:
    tables = (index.entity_table, index.relation_table, index.entity_graph.lists.citations, index.entity_graph.lists.fragments, index.entity_graph.extractions, index.entity_graph.mentions)
    q = index.store.query
    return {
        "vectors": sorted(q("SELECT collection, id, vector FROM vectors")),
        **{t.name: sorted(r.model_dump_json() for r in t.all()) for t in tables},
    }


def to_old_layout(index: LightRAGIndex) -> None:
    """Store the profiles as the code before the rows did: each record holds its lists, and
    neither the row tables nor the flag exist."""
    entities, relations = index.entities(), index.relations()
    with index.store.transaction() as db:
        index.entity_table.put(db, entities)
        index.relation_table.put(db, relations)
        for table in (index.entity_graph.lists.citations, index.entity_graph.lists.fragments):
            db.execute(f"DROP TABLE {table.sql}")
        db.execute("DELETE FROM meta WHERE key = ?", (ROWS,))


def test_an_old_index_answers_the_same_read_only_and_after_its_migration(tmp_path):
    index = build(tmp_path / "old")
    expected = answers(index)
    assert any(e.metadata.get("summarised") for e in index.entities()), "a profile was summarised"
    to_old_layout(index)
    index.close()

    reader = LightRAGIndex.load(tmp_path / "old", readonly=True)
    assert not any(in_rows(e) for e in reader.entity_table.all())  # as the old code wrote them
    assert answers(reader) == expected
    reader.close()
    reader = LightRAGIndex.load(tmp_path / "old", readonly=True)
    assert not any(in_rows(e) for e in reader.entity_table.all()), "a read-only open changes nothing"
    reader.close()

    writer = open_index(tmp_path / "old")  # the first writable open moves the long lists to rows
    stored = [*writer.entity_table.all(), *writer.relation_table.all()]
    assert all(in_rows(r) == is_long(*counts(r)) for r in stored)
    assert all(not r.source_chunk_ids and not r.descriptions for r in stored if in_rows(r))
    assert answers(writer) == expected
    fresh = build(tmp_path / "fresh")
    assert rows(writer) == rows(fresh)  # as if it had been built with rows
    for index in (writer, fresh):  # and it goes on alike: an insert, a delete
        index.insert(LATER)
        index.delete("extra")
    assert rows(writer) == rows(fresh)
    assert answers(writer) == answers(fresh)
    writer.close()
    fresh.close()
