"""Passages over small chunks (rhizome.core.retrieval.passages): how chunks are packed into
passages, how a passage is scored, and that RAPTOR and spRAG keep their passage vectors in step
with inserts, replacements and deletes."""

from __future__ import annotations

import numpy as np
import pytest

from rhizome.core import Document, HashingEmbedder
from rhizome.core.errors import ConfigurationError
from rhizome.core.retrieval.passages import (
    PassageRetriever,
    joined,
    passage_chunks,
    passage_key,
    passage_span,
    passages,
)
from rhizome.core.types import Chunk
from rhizome.raptor import RaptorIndex
from rhizome.sprag import SpRAGIndex


def chunk(document_id: str, index: int, tokens: int, text: str = "", start: int = 0) -> Chunk:
    text = text or f"chunk {index} of {document_id}."
    return Chunk(id=f"{document_id}:{index}", document_id=document_id, text=text, index=index, start=start, end=start + len(text), n_tokens=tokens)


def test_passages_pack_consecutive_chunks_of_one_document_up_to_the_budget():
    chunks = [chunk("b", 0, 50), chunk("a", 2, 40), chunk("a", 0, 40), chunk("a", 1, 40), chunk("a", 3, 200), chunk("a", 5, 10)]
    found = passages(chunks, 100)
    # a: chunks 0-1 (80 tokens; a third would pass 100), chunk 2, chunk 3 alone over the budget,
    # chunk 5 alone (chunk 4 is missing, so 3 and 5 are not consecutive); b: chunk 0
    assert [key for key, _ in found] == ["a:0-2", "a:2-3", "a:3-4", "a:5-6", "b:0-1"]
    assert [[c.index for c in run] for _, run in found] == [[0, 1], [2], [3], [5], [0]]
    assert passages(list(reversed(chunks)), 100) == found  # the same keys whatever the order given


def test_a_passage_key_names_its_document_and_chunks():
    key = passage_key("doc:with:colons", 3, 6)
    assert passage_span(key) == ("doc:with:colons", 3, 6)
    assert passage_chunks(key) == ["doc:with:colons:3", "doc:with:colons:4", "doc:with:colons:5"]


def test_joined_gives_back_the_text_of_consecutive_chunks():
    text = "One sentence here. Another one there. And a third."
    a, b, c = chunk("d", 0, 5, text[:19], 0), chunk("d", 1, 5, text[19:38], 19), chunk("d", 2, 5, text[38:], 38)
    assert joined([a, b, c]) == text
    overlap = chunk("d", 1, 5, text[10:38], 10)
    assert joined([a, overlap]) == text[:38]


class Fixed(HashingEmbedder):
    """Unit vectors chosen per text, so that a test sets every cosine."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        super().__init__(8)
        self.table = table

    def _vector(self, text: str) -> list[float]:
        return self.table.get(text.strip(), unit(0, 0, 0, 1))


def unit(*v: float) -> list[float]:
    x = np.zeros(8)
    x[: len(v)] = v
    return (x / np.linalg.norm(x)).tolist()


def test_a_passage_scores_its_own_cosine_plus_its_best_chunks():
    # "near" has one chunk close to the query but as a whole is less so; "even" is fairly close
    # as a whole and in each chunk; "far" is far. Own + best: even (0.8 + 0.8) > near (0.5 + 0.95).
    one, two = " one holds a sentence of about twelve tokens here.", " two holds a sentence of about twelve tokens here."
    vectors = {"near": (unit(0.95, (1 - 0.95**2) ** 0.5), unit(0.1, 1), unit(0.5, 0.75**0.5)),
               "even": (unit(0.8, 0.6), unit(0.8, 0, 0.6), unit(0.8, 0.6)),
               "far": (unit(0, 1), unit(0, 1), unit(0, 1))}
    table = {"Q": unit(1)}
    for name, (a, b, whole) in vectors.items():
        title = name.title()
        table |= {title + one: a, title + two: b, f"{title}{one} {title}{two}": whole}
    index = RaptorIndex(Fixed(table), chunk_size=16)
    index.insert([Document(id=name, text=f"{name.title()}{one} {name.title()}{two}") for name in vectors])
    assert index.store.chunk_ids(["even"]) == ["even:0", "even:1"]
    hits = index.as_retriever(k=3, mode="passages").retrieve("Q")
    assert [h.id for h in hits] == ["even:0-2", "near:0-2", "far:0-2"]
    assert [h.kind for h in hits] == ["segment"] * 3
    assert hits[0].metadata["own"] == pytest.approx(0.8, abs=1e-6) and hits[0].metadata["best_chunk"] == pytest.approx(0.8, abs=1e-6)
    assert hits[1].raw_score == pytest.approx(0.5 + 0.95, abs=1e-6)  # the ranking score; .score is the relevance
    assert hits[0].provenance.chunk_ids == ["even:0", "even:1"] and hits[0].text == f"Even{one} Even{two}"
    # the nearest chunks alone put "near" first
    assert index.as_retriever(k=1, mode="naive").retrieve("Q")[0].id == "near:0"


def test_bad_passage_settings_are_configuration_errors():
    index = RaptorIndex(HashingEmbedder(10), chunk_size=16)
    with pytest.raises(ConfigurationError):
        PassageRetriever(index, candidates=0)


def docs(n: int = 14) -> list[Document]:
    return [Document(id=f"d{i:02d}", text=" ".join(f"Sentence {j} of document {i} is about topic {i % 4} and item {j}." for j in range(8)))
            for i in range(n)]


@pytest.mark.parametrize("method", ["raptor", "sprag"])
def test_passage_vectors_follow_inserts_replacements_and_deletes(method):
    make = {"raptor": lambda: RaptorIndex(HashingEmbedder(10), chunk_size=30, passage_tokens=60),
            "sprag": lambda: SpRAGIndex(HashingEmbedder(10), chunk_size=30, passage_tokens=60)}[method]
    index = make()
    collection = index.PASSAGE_COLLECTION
    index.insert(docs())

    def expected() -> list[str]:
        return sorted(key for key, _ in passages(index.store.chunks(index.store.chunk_ids()).values(), 60))

    assert sorted(index.store.vector_ids(collection)) == expected()
    assert len(expected()) > len(docs())  # documents longer than a passage have several
    hits = index.as_retriever(k=4, mode="passages").retrieve("topic 1 and item 5")
    assert len(hits) == 4 and all(h.kind == "segment" and h.id.startswith(h.metadata["document_id"] + ":") for h in hits)
    index.delete(["d01", "d05"])
    assert sorted(index.store.vector_ids(collection)) == expected()
    assert not [k for k in index.store.vector_ids(collection) if k.startswith(("d01:", "d05:"))]
    assert all(h.metadata["document_id"] not in ("d01", "d05") for h in index.as_retriever(k=10, mode="passages").retrieve("topic 1"))
    index.insert([Document(id="d02", text="A short replacement about a lighthouse.")])
    assert sorted(index.store.vector_ids(collection)) == expected()
    assert [k for k in index.store.vector_ids(collection) if k.startswith("d02:")] == ["d02:0-1"]
    assert index.as_retriever(k=1, mode="passages").retrieve("replacement lighthouse")[0].id == "d02:0-1"


def test_an_index_without_passage_vectors_returns_the_nearest_chunks():
    index = RaptorIndex(HashingEmbedder(10), chunk_size=30)
    index.insert(docs(4))
    with index.store.transaction() as db:  # as an index built before passages were kept
        index.store.delete_vectors(db, index.PASSAGE_COLLECTION, index.store.vector_ids(index.PASSAGE_COLLECTION))
    result = index.as_retriever(k=3, mode="passages").search("topic 1")
    assert result.stats["candidates"] == 0 and result.stats["filled"] == 3
    assert "holds no passage vectors (raptor_passages): it was built before the passages mode" in result.notes[0]
    assert [h.id for h in result.hits] == [h.id for h in index.as_retriever(k=3, mode="naive").retrieve("topic 1")]
