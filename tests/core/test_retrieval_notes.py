"""A search that finds nothing, or less than k of its own, says why (Retrieval.notes)."""

from __future__ import annotations

from rhizome.core import HashingEmbedder, VectorIndex
from rhizome.graphrag import GraphRAGIndex
from rhizome.lightrag import LightRAGIndex
from rhizome.tools.testing import CORPUS

NONSENSE = "zebra quantum xylophone"


def test_an_empty_index_and_a_filter_nothing_matches():
    index = VectorIndex()
    assert index.as_retriever().search("anything").notes == ["the index holds no documents yet; insert some first (rhizome index)"]
    index.insert(CORPUS)
    found = index.as_retriever(k=3).search("ferry", filter={"title": "Nowhere"})
    assert found.hits == [] and found.notes == ['no stored document matches the filter title = "Nowhere"']
    found = index.as_retriever(k=3).search("ferry", filter={"title": "Tarn Harbour"})
    assert len(found.hits) == 1 and "found 1 hit among the 1 document matching" in found.notes[0]
    assert index.as_retriever(k=3).search("ferry").notes == []  # k hits of its own: nothing to explain


def test_graph_modes_say_why_their_own_hits_ran_out():
    graph = GraphRAGIndex(chunk_size=200, chunk_overlap=20)
    graph.insert(CORPUS)
    found = graph.as_retriever(mode="global", k=3).search(NONSENSE)
    assert found.notes[0].startswith("no community report was rated relevant to the query")
    assert "the other 3 are the passages nearest to the query" in found.notes[1]
    assert [h.metadata["via"] for h in found.hits] == ["fill"] * 3
    light = LightRAGIndex(chunk_size=200, chunk_overlap=20)
    light.insert(CORPUS)
    found = light.as_retriever(mode="local", k=2).search(NONSENSE)
    assert found.notes[0] == "no entity or relation is within cosine 0.2 of the query's keywords (zebra, quantum, xylophone): the context holds passages only"
    assert [h.kind for h in found.hits] == ["chunk"] * 2  # the passages are ranked whatever their cosine


def test_a_query_with_nothing_to_match_says_so():
    """Defect: "???" returned k hits at score 0.000 with no note."""
    index = VectorIndex(HashingEmbedder())
    index.insert(["Piet Hale kept the Oskel light.", "The Moot paid for the lighthouse."])
    found = index.as_retriever(k=2).search("???")
    assert any("has no letter or digit" in note for note in found.notes)
    assert not any("letter or digit" in note for note in index.as_retriever(k=2).search("Who kept the light?").notes)
