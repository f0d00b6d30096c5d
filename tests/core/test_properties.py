"""Property-based tests (hypothesis) of the parsers and the storage layer: whatever text,
model answer or vectors come in, the outcome is the documented one or a typed error
(docs/storage.md, "What is refused before anything is written"; docs/models.md)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from rhizome.core.errors import InvalidInputError, ModelOutputError
from rhizome.core.extraction.schema import ExtractionOutput
from rhizome.core.models.base import BaseEmbedder, extract_json, validate_json
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.naive import VectorIndex
from rhizome.core.types import Document

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# any code point, lone surrogates, NULs, control characters and combining marks included
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=200)
# text made of what steers a JSON parser: brackets, quotes, fences, thought tags
TOKENS = [*'{}[]":,` \n0123456789', "true", "null", "<think>", "</think>", "```", "```json"]
STRUCTURAL = st.lists(st.sampled_from(TOKENS), max_size=150).map("".join)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
OBJECTS = st.dictionaries(st.text(max_size=8), JSON_VALUES, min_size=1, max_size=4)
PROSE = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="{}[]<`"), max_size=40)


# -- the JSON parser of model answers ------------------------------------------------------------
@FAST
@given(ANY_TEXT | STRUCTURAL)
def test_the_json_parser_returns_a_value_or_raises_value_error(text):
    with contextlib.suppress(ValueError):  # the documented outcome for text holding no JSON
        extract_json(text)


@FAST
@given(JSON_VALUES, st.sampled_from(["{}", "```json\n{}\n```", "```\n{}```", "  ```JSON {} ```\n"]), ANY_TEXT.filter(lambda t: "</think>" not in t))
def test_any_json_value_is_recovered_from_fences_and_thoughts(value, wrapper, thought):
    answer = f"<think>{thought}</think>" + wrapper.replace("{}", json.dumps(value))
    assert extract_json(answer) == value


@FAST
@given(OBJECTS, PROSE, PROSE)
def test_an_object_is_recovered_from_prose_around_it(value, before, after):
    assert extract_json(f"{before}{json.dumps(value)}{after}") == value


# extraction answers with the near misses the lenient fields accept, and some they refuse
LOOSE = st.none() | st.integers(-3, 12) | st.floats(-3, 12, allow_nan=False) | st.text(max_size=12) | st.lists(st.integers(0, 4) | st.text(max_size=4), max_size=3)
ENTITY = st.fixed_dictionaries({"name": st.text(max_size=12), "type": st.text(max_size=8), "description": st.text(max_size=20)}, optional={"passages": LOOSE})
RELATION = st.fixed_dictionaries(
    {"source": st.text(max_size=12), "target": st.text(max_size=12), "description": st.text(max_size=20)},
    optional={"keywords": LOOSE, "strength": LOOSE, "passages": LOOSE, "extra": JSON_VALUES},
)
ANSWERS = st.fixed_dictionaries({"entities": st.lists(ENTITY | JSON_VALUES, max_size=3), "relations": st.lists(RELATION, max_size=3)})


def _two_steps(answer: str) -> ExtractionOutput:
    return ExtractionOutput.model_validate(extract_json(answer))


def _outcome(parse, *args):
    try:
        return parse(*args).model_dump()
    except ValueError as exc:  # a pydantic ValidationError is a ValueError
        return type(exc)


@FAST
@given(ANSWERS, st.sampled_from(["{}", "```json\n{}\n```", "<think>{}</think>{}", "Here: {} ok", "{} {}"]), ANY_TEXT | STRUCTURAL)
def test_validating_a_model_answer_in_one_step_gives_what_parsing_first_gives(value, wrapper, noise):
    for answer in (wrapper.replace("{}", json.dumps(value, ensure_ascii=False)), noise, json.dumps(value)[:-1]):
        assert _outcome(validate_json, answer, ExtractionOutput) == _outcome(_two_steps, answer)


class Pair(BaseModel):
    name: str
    count: int


@FAST
@given(ANY_TEXT | STRUCTURAL)
def test_any_answer_to_a_structured_call_is_a_valid_value_or_a_model_output_error(answer):
    model = FakeChatModel([answer], max_retries=0)
    try:
        assert isinstance(model.complete_json("give me a pair", Pair), Pair)
    except ModelOutputError as exc:
        assert exc.last_output == answer


# -- documents ------------------------------------------------------------------------------------
METADATA = st.dictionaries(
    ANY_TEXT.map(lambda t: t[:8]),
    st.recursive(SCALARS | ANY_TEXT.map(lambda t: t[:20]), lambda inner: st.lists(inner, max_size=3), max_leaves=6),
    max_size=3,
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (*_strings(key), *_strings(item))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _refusable(document: Document) -> bool:
    """What the documented rule refuses: no text, or a lone surrogate or a NUL anywhere."""
    strings = [document.text, document.id, *_strings(document.metadata)]
    return not document.text.strip() or any("\x00" in s or any(0xD800 <= ord(c) <= 0xDFFF for c in s) for s in strings)


def _assert_stored_as_given(index: VectorIndex, document: Document) -> None:
    chunks = index.store.chunks_of(document.id)
    assert chunks and all(document.text[c.start : c.end] == c.text for c in chunks)
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert all(i in covered for i, char in enumerate(document.text) if not char.isspace())  # nothing lost
    assert index.store.documents_metadata([document.id]) == {document.id: document.metadata}
    assert index.store.document_state(document.id)[1] == "done"  # type: ignore[index]


@FAST
@given(st.lists(st.tuples(ANY_TEXT, METADATA), min_size=1, max_size=4))
def test_any_document_is_stored_and_read_back_as_given_or_refused_with_nothing_stored(items):
    documents = [Document(id=f"d{i}", text=text, metadata=metadata) for i, (text, metadata) in enumerate(items)]
    index = VectorIndex()
    try:
        index.insert(documents)
    except InvalidInputError:
        event("refused")
        assert any(_refusable(d) for d in documents)
        assert len(index) == 0 and index.store.document_ids() == [] and index.store.statuses() == []
        return
    event("stored")
    assert not any(_refusable(d) for d in documents)
    for document in documents:
        _assert_stored_as_given(index, document)


STORABLE_LINE = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00\n\r"), min_size=1, max_size=40)


@settings(FAST, max_examples=15)
@given(STORABLE_LINE.filter(str.strip), st.integers(min_value=50, max_value=300))
def test_a_very_long_line_is_chunked_without_losing_or_changing_a_character(piece, times):
    document = Document(id="long", text=piece * times)
    index = VectorIndex(chunk_size=64, chunk_overlap=8)
    index.insert(document)
    _assert_stored_as_given(index, document)


# -- token counting -------------------------------------------------------------------------------
WORDY = st.lists(
    st.sampled_from(["the", " ", "  ", "\n", "\t", "don't", "1999", "123456", "|", "—", "é", "naïve", "日本語", "🙂", "!!", "x" * 40, "'s", "\u00a0", "\x1c", "\x85", "\u2028"]),
    max_size=60,
).map("".join)


@FAST
@given(STORABLE_LINE | WORDY | st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_the_words_of_a_text_never_outnumber_its_tokens(text):
    from rhizome.core.text import count_tokens, min_tokens

    assert min_tokens(text) <= count_tokens(text)


@FAST
@given(
    st.lists(st.sampled_from(["Mr", "U", ".", "S", " ", "  ", "a" * 70, "x.y" * 30, ")", '"', "é", "1", "co", "—", " " * 80, "!"]), max_size=40).map("".join),
    st.integers(min_value=0, max_value=40),
)
def test_the_last_word_before_a_full_stop_is_the_whole_slices(text, start):
    """The windowed search finds what searching the whole slice finds."""
    from rhizome.core.text import _LAST_WORD, _last_word

    start = min(start, len(text))
    whole = _LAST_WORD.search(text[start:])
    assert _last_word(text, start, len(text)) == (whole.group(1) if whole else "")


# -- embeddings -----------------------------------------------------------------------------------
class ScriptedEmbedder(BaseEmbedder):
    """Answers every call, documents and queries alike, with the same rows."""

    def __init__(self, rows: Any) -> None:
        super().__init__("scripted:embed", dimension=None)
        self.rows = rows

    async def _aembed_batch(self, texts):
        return self.rows


FLOATS = st.floats(allow_nan=True, allow_infinity=True)  # 64-bit: some overflow float32
ROWS = st.lists(st.lists(FLOATS, max_size=4), max_size=4)


def _well_formed(rows: list[list[float]], texts: int) -> bool:
    """One row per text, all of one non-zero length, every value finite as float32."""
    if len(rows) != texts or len({len(r) for r in rows}) != 1 or not rows[0]:
        return False
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.asarray(rows, dtype=np.float32)).all())


@FAST
@given(ROWS, st.integers(min_value=1, max_value=4))
def test_any_embedder_output_is_unit_vectors_or_a_model_output_error(rows, texts):
    embedder = ScriptedEmbedder(rows)
    try:
        matrix = embedder.embed([f"text {i}" for i in range(texts)])
    except ModelOutputError as exc:
        event("refused")
        assert not _well_formed(rows, texts) and str(exc).startswith("scripted:embed returned")
        return
    assert _well_formed(rows, texts) and matrix.shape == (texts, len(rows[0]))
    zero = ~np.asarray(rows, dtype=np.float32).any(axis=1)  # all-zero rows stay zero, the rest have length 1
    assert matrix.dtype == np.float32 and np.allclose(np.linalg.norm(matrix.astype(np.float64), axis=1), np.where(zero, 0.0, 1.0), atol=1e-5)


@FAST
@given(st.lists(FLOATS, max_size=4), st.integers(min_value=0, max_value=2))
def test_any_vector_for_a_document_is_searchable_or_refused_with_nothing_stored(row, count):
    index = VectorIndex(ScriptedEmbedder([row] * count), cache=False)  # each example its own answers
    report = index.insert(Document(id="d", text="harbour log"))
    event("searchable" if _well_formed([row] * count, 1) else "refused")
    if _well_formed([row] * count, 1):
        assert len(index) == 1 and not report.failed
        hits = index.as_retriever(k=1).retrieve("harbour")  # the query vector is checked the same way
        assert [h.provenance.document_ids for h in hits] == [["d"]]
    else:
        assert list(report.failed) == ["d"] and report.failed["d"].startswith(ModelOutputError.__name__)
        assert len(index) == 0 and index.store.chunks_of("d") == [] and index.store.vector_ids("chunks") == []
