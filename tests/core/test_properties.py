"""Property-based tests (hypothesis) of the parsers and the storage layer: whatever text,
model answer or vectors come in, the outcome is the documented one or a typed error."""

from __future__ import annotations

import contextlib
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rhizome.core.errors import InvalidInputError, ModelOutputError
from rhizome.core.models.base import BaseEmbedder, extract_json
from rhizome.core.naive import VectorIndex
from rhizome.core.types import Document

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# any code point, lone surrogates and NULs included
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), min_size=0, max_size=200)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@FAST
@given(ANY_TEXT)
def test_the_json_parser_returns_a_value_or_raises_value_error(text):
    with contextlib.suppress(ValueError):
        extract_json(text)


@FAST
@given(st.dictionaries(st.text(max_size=8), JSON_VALUES, min_size=1, max_size=4), st.sampled_from(["{}", "```json\n{}\n```", "<think>hmm {not json}</think>{}", "Here it is: {} Thanks."]))
def test_the_json_parser_recovers_an_object_around_fences_thoughts_and_prose(value, wrapper):
    assert extract_json(wrapper.replace("{}", json.dumps(value))) == value


@FAST
@given(st.lists(ANY_TEXT, min_size=1, max_size=4))
def test_any_text_is_stored_and_read_back_identically_or_refused_with_nothing_stored(texts):
    index = VectorIndex()
    documents = [Document(id=f"d{i}", text=t) for i, t in enumerate(texts)]
    try:
        index.insert(documents)
    except InvalidInputError:
        assert len(index) == 0 and index.store.document_ids() == []
        return
    for document in documents:  # at most 200 characters: one chunk each
        chunks = index.store.chunks_of(document.id)
        assert len(chunks) == 1 and document.text[chunks[0].start : chunks[0].end] == chunks[0].text
        assert chunks[0].text.strip() == document.text.strip()
        assert index.store.document_state(document.id)[1] == "done"


class ArrayEmbedder(BaseEmbedder):
    def __init__(self, rows: list[list[float]]) -> None:
        super().__init__("array:embed", dimension=None)
        self.rows = rows

    async def _aembed_batch(self, texts):
        return [self.rows[i % len(self.rows)] for i in range(len(texts))]


FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)


@FAST
@given(st.lists(st.lists(FLOATS, min_size=3, max_size=3), min_size=1, max_size=3))
def test_any_vectors_are_searchable_or_refused_with_nothing_stored(rows):
    index = VectorIndex(ArrayEmbedder(rows))
    finite = np.isfinite(np.asarray(rows, dtype=np.float32)).all()
    report = index.insert([Document(id=f"d{i}", text=f"text {i}") for i in range(3)])
    if finite:
        assert len(index) == 3 and not report.failed
        assert len(index.as_retriever(k=3).retrieve("text")) <= 3
    else:
        assert all(r.startswith(ModelOutputError.__name__) for r in report.failed.values())
        stored = np.asarray([v for v in index.store.collection("chunks").vectors(index.store.vector_ids("chunks"))]) if len(index) else np.zeros((0, 3))
        assert np.isfinite(stored).all()
