"""Input and model output are checked before anything is written (docs/storage.md, "What is
refused before anything is written"): one bad document fails the whole call, nothing of it
stored; a malformed embedding is a ModelOutputError, never a stored NaN or a numpy error."""

from __future__ import annotations

import math

import pytest

from rhizome.core.errors import InvalidInputError, ModelOutputError
from rhizome.core.models.base import BaseEmbedder
from rhizome.core.naive import VectorIndex
from rhizome.core.types import Document

GOOD = [Document(id=f"g{i}", text=f"Good document number {i} about harbours.") for i in range(40)]


class ScriptedEmbedder(BaseEmbedder):
    """Returns whatever ``shape`` makes of each batch (an embedder gone wrong)."""

    def __init__(self, shape, dimension: int = 4) -> None:
        super().__init__("scripted:embed", dimension=dimension)
        self.shape = shape

    async def _aembed_batch(self, texts):
        return self.shape(texts)


@pytest.mark.parametrize(
    "bad, says",
    [
        ("Harbour \ud800 log", "lone surrogate"),
        ("Harbour \x00 log", "NUL character"),
        (Document(id="m", text="fine", metadata={"note": "\udcff"}), "metadata that is not valid Unicode"),
        (Document(id="bad\ud800id", text="fine"), "id that is not valid Unicode"),
    ],
)
def test_a_document_that_cannot_be_stored_fails_the_call_before_anything_is_stored(bad, says):
    index = VectorIndex(batch_size=4)  # 40 good documents make ten batches before the bad one
    with pytest.raises(InvalidInputError, match=says):
        index.insert([*GOOD, bad])
    assert len(index) == 0 and index.store.statuses() == []


def test_bytes_are_refused_with_what_to_do():
    index = VectorIndex()
    for given in (b"Harbour log", [b"Harbour log"], bytearray(b"x")):
        with pytest.raises(InvalidInputError, match=r"decode it first"):
            index.insert(given)


@pytest.mark.parametrize(
    "shape, says",
    [
        (lambda texts: [[math.nan, 0.0, 1.0, 0.0] for _ in texts], "containing NaN or infinity"),
        (lambda texts: [[math.inf, 0.0, 1.0, 0.0] for _ in texts], "containing NaN or infinity"),
        (lambda texts: [[1.0, 0.0, 0.0, 0.0], *([[1.0, 0.0, 0.0]] * len(texts))][: len(texts)] if len(texts) > 1 else [[1.0, 0.0, 0.0]], "rows of numbers of one length"),
        (lambda texts: [[1.0, 0.0, 0.0, 0.0] for _ in texts[1:]], "vectors for"),
        (lambda texts: [["a", "b", "c", "d"] for _ in texts], "rows of numbers"),
    ],
)
def test_malformed_embeddings_are_model_output_errors_and_nothing_is_stored(shape, says):
    embedder = ScriptedEmbedder(shape)
    with pytest.raises(ModelOutputError, match=says):
        embedder.embed(["one", "two", "three"])
    index = VectorIndex(embedder)
    report = index.insert(GOOD[:3])  # a model failure costs the documents that needed it
    assert len(index) == 0 and set(report.failed) == {"g0", "g1", "g2"}
    assert all(r.startswith("ModelOutputError") for r in report.failed.values())


def test_an_all_zero_vector_is_allowed():
    index = VectorIndex(ScriptedEmbedder(lambda texts: [[0.0] * 4 for _ in texts]))
    index.insert(GOOD[:2])
    assert len(index) == 2
