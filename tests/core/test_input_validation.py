"""Input and model output are checked before anything is written (docs/storage.md, "What is
refused before anything is written"): one bad document fails the whole call, nothing of it
stored; a malformed embedding is a ModelOutputError, never a stored NaN or a numpy error."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from rhizome.core.errors import InvalidInputError, ModelOutputError
from rhizome.core.models.base import BaseEmbedder, extract_json
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.naive import VectorIndex
from rhizome.core.types import Document

GOOD = [Document(id=f"g{i}", text=f"Good document number {i} about harbours.") for i in range(40)]


class ScriptedEmbedder(BaseEmbedder):
    """Returns whatever ``shape`` makes of each batch (an embedder gone wrong)."""

    def __init__(self, shape, dimension: int | None = 4, **options: Any) -> None:
        super().__init__("scripted:embed", dimension=dimension, **options)
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
        (lambda texts: [[] for _ in texts], "returned 0-dimensional vectors"),  # was accepted
        (lambda texts: [1.0 for _ in texts], r"output of shape \(3,\) for 3 texts"),  # said "3 vectors for 3 texts"
        (lambda texts: [[1e39, 0.0, 1.0, 0.0] for _ in texts], "containing NaN or infinity"),  # beyond float32
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


class DictCache:
    """The two calls an embedder makes on its cache, over a dict the test can look into."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def put(self, key: str, value: Any, kind: str = "chat") -> None:
        self.values[key] = value


def test_a_wrong_dimension_is_refused_on_both_paths_before_it_is_cached():
    cache = DictCache()
    broken = ScriptedEmbedder(lambda texts: [[1.0, 0.0, 0.0] for _ in texts], dimension=4, cache=cache)
    says = r"scripted:embed returned 3-dimensional vectors, expected 4; check the embedding model"
    with pytest.raises(ModelOutputError, match=says):
        broken.embed(["one"])
    with pytest.raises(ModelOutputError, match=says):
        broken.embed_query(["one"])
    assert cache.values == {}  # a mended model is not served the broken answer from the cache
    mended = ScriptedEmbedder(lambda texts: [[0.0, 3.0, 4.0, 0.0] for _ in texts], cache=cache)
    assert np.allclose(mended.embed(["one"]), [[0.0, 0.6, 0.8, 0.0]])


def test_batches_of_one_call_with_different_lengths_are_a_model_output_error():
    # used to raise numpy's "all the input array dimensions ... must match exactly"
    embedder = ScriptedEmbedder(lambda texts: [[1.0] * (3 if t == "b" else 4) for t in texts], dimension=None, batch_size=1)
    with pytest.raises(ModelOutputError, match=r"scripted:embed returned \d-dimensional vectors, expected \d"):
        embedder.embed(["a", "b", "c"])


def test_a_malformed_vector_in_the_cache_is_embedded_again():
    cache = DictCache()
    embedder = ScriptedEmbedder(lambda texts: [[0.0, 0.0, 3.0, 4.0] for _ in texts], cache=cache)
    embedder.embed(["one", "two"])
    for key in cache.values:  # as a version that did not check its output may have cached them
        cache.values[key] = [math.nan] * 4
    cache.values[next(iter(cache.values))] = [1.0, 2.0]
    assert np.allclose(embedder.embed(["one", "two"]), [[0.0, 0.0, 0.6, 0.8]] * 2)
    assert embedder.usage.calls == 2 and embedder.usage.cache_hits == 0


def test_the_message_counts_the_bad_vectors():
    embedder = ScriptedEmbedder(lambda texts: [[math.nan if t == "b" else 1.0] * 4 for t in texts])
    with pytest.raises(ModelOutputError, match=r"scripted:embed returned 1 of 3 vectors containing NaN or infinity"):
        embedder.embed(["a", "b", "c"])


@pytest.mark.parametrize(
    "metadata, says",
    [
        ({"what": object()}, "cannot be stored as JSON"),  # was stored as a repr that changes each run
        ({"nested": {1: "a", "b": 2}}, "cannot be stored as JSON"),  # was a raw TypeError from the document hash
        ({"note": "a\x00b"}, "NUL character in its metadata"),
        ({"k\udc80": "v"}, "metadata that is not valid Unicode"),
        ({"x": float("nan")}, "cannot be stored as JSON"),  # was stored, then printed as NaN: not JSON
        ({"readings": [1.0, float("inf")]}, "None for NaN"),
        ({"deep": {"y": float("-inf")}}, "finite float"),
    ],
)
def test_metadata_that_cannot_be_stored_as_it_is_fails_the_call(metadata, says):
    index = VectorIndex(batch_size=4)
    with pytest.raises(InvalidInputError, match=says):
        index.insert([*GOOD, Document(id="m", text="fine", metadata=metadata)])
    assert len(index) == 0 and index.store.statuses() == []


@pytest.mark.parametrize(
    "given, says",
    [
        ({"id": "a", "text": "fine", "metadata": "not a dict"}, "document 'a' has metadata of type str"),  # raw ValueError
        ({"id": "a", "text": "fine", "metadata": {1: "one"}}, "metadata keys must be strings"),  # pydantic ValidationError
        ({"id": "a", "text": b"bytes"}, "decode it first"),
        ({"id": "a", "text": "a NUL \x00"}, r"document 0 \('a'\) has a NUL character in its text"),
    ],
)
def test_documents_given_as_mappings_are_checked(given, says):
    index = VectorIndex()
    with pytest.raises(InvalidInputError, match=says):
        index.insert([given, *GOOD[:3]])
    assert len(index) == 0 and index.store.statuses() == []


def test_langchain_and_llamaindex_documents_are_checked_the_same_way():
    langchain = pytest.importorskip("langchain_core.documents")
    llama_index = pytest.importorskip("llama_index.core.schema")
    for bad, says in (
        (langchain.Document(page_content="Harbour \ud800 log", id="lc"), r"\('lc'\) has text that is not valid Unicode"),
        (llama_index.Document(text="Harbour \x00 log", id_="li"), r"\('li'\) has a NUL character in its text"),
        (langchain.Document(page_content="fine", metadata={"what": object()}), "cannot be stored as JSON"),
    ):
        index = VectorIndex()
        with pytest.raises(InvalidInputError, match=says):
            index.insert([*GOOD[:3], bad])
        assert len(index) == 0


def test_a_document_object_holds_any_text_and_is_checked_when_inserted():
    document = Document(text="Harbour \ud800 log")  # constructing is free; storing is what is checked
    assert document.id.startswith("doc-")
    with pytest.raises(InvalidInputError, match=r"lone surrogate at position 8\); decode the source with errors='replace'"):
        VectorIndex().insert(document)


def test_dates_paths_and_numpy_numbers_in_metadata_are_stored_as_plain_values():
    import numpy as np

    index = VectorIndex()
    index.insert([Document(id="d", text="Harbour log.", metadata={"when": datetime(2024, 5, 1), "file": Path("/logs/a.txt"), "n": np.int64(3)})])
    assert index.store.documents_metadata(["d"])["d"] == {"when": "2024-05-01 00:00:00", "file": "/logs/a.txt", "n": 3}
    assert index.insert([Document(id="d", text="Harbour log.", metadata={"when": datetime(2024, 5, 1), "file": Path("/logs/a.txt"), "n": np.int64(3)})]).skipped == ["d"]


def test_one_id_given_twice_in_a_call_with_other_metadata_is_refused():
    """Defect: the same id and text with other metadata in one call kept the last metadata silently."""
    index = VectorIndex(batch_size=4)
    with pytest.raises(InvalidInputError, match="'y' is given twice with the same text and different metadata \\(year\\)"):
        index.insert([*GOOD, Document(id="y", text="Ferry log.", metadata={"year": 1911, "shelf": "north"}),
                      Document(id="y", text="Ferry log.", metadata={"year": 1999, "shelf": "north"})])
    with pytest.raises(InvalidInputError, match="different metadata \\(flag\\)"):  # 1 and True are stored differently
        index.insert([Document(id="z", text="Ferry log.", metadata={"flag": 1}), Document(id="z", text="Ferry log.", metadata={"flag": True})])
    assert len(index) == 0 and index.store.statuses() == []
    same = Document(id="y", text="Ferry log.", metadata={"year": 1911})
    assert index.insert([same, same.model_copy()]).inserted == ["y"]  # the same document twice is kept once


def test_an_id_of_zero_is_kept():
    index = VectorIndex()
    index.insert([{"id": 0, "text": "Zero harbours."}])  # an id of 0 used to become the text's hash
    assert index.store.document_ids() == ["0"]


class Pair(BaseModel):
    name: str
    count: int


DEGENERATE = ["[" * 100_000, '{"a":' * 50_000, "```json\n" + "\n " * 2_000, "<think>" * 20_000]


@pytest.mark.parametrize("answer", DEGENERATE, ids=["deep-array", "deep-object", "unclosed-fence", "unclosed-thoughts"])
def test_degenerate_model_answers_are_a_value_error(answer):
    # deep nesting raised RecursionError; the fence and thought patterns took minutes (backtracking)
    with pytest.raises(ValueError, match="no JSON value found"):
        extract_json(answer)


async def test_a_degenerate_answer_ends_in_a_model_output_error():
    model = FakeChatModel(DEGENERATE[:2], max_retries=1)
    with pytest.raises(ModelOutputError, match="invalid Pair JSON 2 times"):
        await model.acomplete_json("give me a pair", Pair)


def test_a_query_that_is_not_valid_unicode_is_refused():
    index = VectorIndex()
    index.insert(GOOD[:2])
    with pytest.raises(InvalidInputError, match="the query is not valid Unicode"):
        index.as_retriever(k=1).retrieve("caf\udce9")  # a Latin-1 byte from the command line


def test_delete_takes_ids_and_reports_ids_that_cannot_be_stored_as_missing():
    index = VectorIndex()
    index.insert(GOOD[:2])
    for bad in (None, 3, ["g0", None]):
        with pytest.raises(InvalidInputError, match="document id"):
            index.delete(bad)
    report = index.delete(["x\udcff", "g0"])
    assert report.missing == ["x\udcff"] and report.deleted == ["g0"]
    assert index.store.document_ids() == ["g1"]


def test_a_chunk_size_below_the_default_overlap_names_both_values():
    from rhizome.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"chunk_overlap \(100; 100 unless given\) must be smaller than chunk_size \(50\)"):
        VectorIndex(chunk_size=50)
