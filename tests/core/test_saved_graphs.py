"""Query graphs kept in an index directory (BaseIndex.derived(..., saved=...)): the evidence and
fact graphs read back as they were built, written by a writable open that built them, used by a
later process while the records are as they were, and never trusted otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from rhizome.core.graph.store import EntityGraphStore
from rhizome.core.retrieval.evidence import EvidenceGraph, FactGraph
from rhizome.core.types import Entity, Relation
from rhizome.lightrag import LightRAGIndex

DOCS = [
    "Mira Tolan keeps the lighthouse on Gull Island. Gull Island lies north of Port Averly.",
    "Port Averly has a ferry to Gull Island. The ferry is run by Anders Kell.",
    "Anders Kell was born in Tarn. Tarn is a village on the Averly coast.",
]


@pytest.mark.parametrize("passage_nodes", [True, False])
def test_the_evidence_graph_reads_back_from_its_arrays_as_it_was(passage_nodes):
    entities = [Entity(id="a", name="A", source_chunk_ids=["c1", "c1", "c2"]), Entity(id="b", name="B", source_chunk_ids=["c2"]),
                Entity(id="ç", name="Ç", source_chunk_ids=["c\n3"])]
    graph = EvidenceGraph.from_records(entities, [Relation(id="r", source="a", target="b", weight=2.5)], passage_nodes=passage_nodes)
    back = EvidenceGraph.from_arrays(graph.to_arrays())
    assert (back.entity_ids, back.chunk_ids, back.passage_nodes, back.passages_of) == (
        graph.entity_ids, graph.chunk_ids, graph.passage_nodes, graph.passages_of)
    assert (back.matrix != graph.matrix).nnz == 0 and (back.incidence != graph.incidence).nnz == 0
    assert back.rank({"a": 1.0}, {"c2": 0.5}) == graph.rank({"a": 1.0}, {"c2": 0.5})
    arrays = graph.to_arrays()
    arrays["incidence_shape"] = np.array([1, 1])
    with pytest.raises(ValueError):
        EvidenceGraph.from_arrays(arrays)


def test_the_fact_graph_reads_back_from_its_arrays_as_it_was():
    facts = FactGraph([("f1", "a", "b", ["p1", "p2"]), ("f2", "b", "c", ["p2"]), ("f3", "a", "a", [])])
    back = FactGraph.from_arrays(facts.to_arrays())
    assert (back.ends, back.chunks, back.facts_of) == (facts.ends, facts.chunks, facts.facts_of)


def build(path):
    index = LightRAGIndex(path=path, chunk_size=64, chunk_overlap=8)
    index.insert(DOCS)
    return index


def hits(index) -> list[tuple[str, float, str]]:
    return [(h.id, round(h.score, 9), h.text) for h in index.as_retriever(k=4, mode="local").retrieve("Who runs the ferry to Gull Island?")]


def counting(monkeypatch) -> list[int]:
    """Counts the evidence graphs built from the records."""
    built: list[int] = []
    original = EntityGraphStore.evidence_graph

    def counted(self, *args, **kwargs):
        built.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(EntityGraphStore, "evidence_graph", counted)
    return built


def test_a_reader_uses_the_graph_a_writer_built_while_the_records_are_as_they_were(tmp_path, monkeypatch):
    built = counting(monkeypatch)
    index = build(tmp_path / "idx")
    expected = hits(index)
    assert built == [1] and (tmp_path / "idx" / "graphs" / "evidence.npz").exists()
    index.close()
    reader = LightRAGIndex.load(tmp_path / "idx", readonly=True)
    assert hits(reader) == expected and built == [1]  # read from the file, not built
    reader.close()

    writer = LightRAGIndex.load(tmp_path / "idx")
    writer.insert(["Gull Island has a second ferry, run by Oda Brenn."])  # the records change: the file is of the old ones
    reader = LightRAGIndex.load(tmp_path / "idx", readonly=True)
    after = hits(reader)
    assert built == [1, 1] and any("Oda Brenn" in text for _, _, text in after)
    reader.close()
    assert hits(writer) == after and built == [1, 1, 1]  # the writer builds it and keeps it again
    writer.close()


def test_a_reader_writes_nothing_and_a_damaged_file_is_built_again(tmp_path, monkeypatch):
    build(tmp_path / "idx").close()
    built = counting(monkeypatch)
    reader = LightRAGIndex.load(tmp_path / "idx", readonly=True)
    expected = hits(reader)
    reader.close()
    assert built == [1] and not (tmp_path / "idx" / "graphs").exists()

    writer = LightRAGIndex.load(tmp_path / "idx")
    assert hits(writer) == expected and built == [1, 1]
    writer.close()
    saved = tmp_path / "idx" / "graphs" / "evidence.npz"
    saved.write_bytes(saved.read_bytes()[:200])  # cut short
    reader = LightRAGIndex.load(tmp_path / "idx", readonly=True)
    assert hits(reader) == expected and built == [1, 1, 1]
    reader.close()


def test_every_write_gives_the_records_a_new_state(tmp_path):
    index = build(tmp_path / "idx")
    first = index.store.state()
    index.insert(["Tarn has a harbour."])
    assert first and index.store.state() not in (None, first)
    index.close()
