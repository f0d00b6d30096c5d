from __future__ import annotations

import pytest

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.text import (
    Chunker,
    bundled_tiktoken_cache,
    count_tokens,
    split_sentences,
    truncate_tokens,
)
from rhizome.core.types import Document


def sentences(n: int) -> str:
    return " ".join(f"Sentence {i} mentions the harbour of town {i}." for i in range(n))


def test_encoding_loads_from_bundled_cache():
    assert bundled_tiktoken_cache() is not None
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_sentence_spans_tile_the_text():
    text = "First one. Second one!  Third?\n\nA new paragraph without a stop\nand more"
    spans = split_sentences(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert text[spans[0][0] : spans[0][1]].strip() == "First one."


@pytest.mark.parametrize("size,overlap", [(30, 0), (30, 10), (64, 16), (200, 50)])
def test_chunks_respect_budget_and_cover_document(size, overlap):
    doc = Document(text=sentences(60))
    chunks = Chunker(size, overlap).chunk(doc)
    assert chunks
    for c in chunks:
        assert c.n_tokens <= size
        assert c.text == doc.text[c.start : c.end]
        assert count_tokens(c.text) == c.n_tokens
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert covered == set(range(len(doc.text)))
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert len({c.id for c in chunks}) == len(chunks)


def test_overlap_repeats_whole_trailing_sentences():
    doc = Document(text=sentences(20))
    chunks = Chunker(60, 25).chunk(doc)
    for a, b in zip(chunks, chunks[1:]):
        assert b.start < a.end, "neighbours should share text"
        assert b.start > a.start, "chunking must make progress"
        shared = doc.text[b.start : a.end]
        assert count_tokens(shared) <= 25 + 2


def test_no_overlap_means_disjoint_chunks():
    doc = Document(text=sentences(20))
    chunks = Chunker(40, 0).chunk(doc)
    for a, b in zip(chunks, chunks[1:]):
        assert b.start == a.end


def test_sentence_longer_than_chunk_is_cut_at_token_boundaries():
    text = "word " * 500  # no sentence boundary at all
    chunks = Chunker(100, 10).chunk(Document(text=text))
    assert len(chunks) >= 5
    assert all(c.n_tokens <= 100 for c in chunks)
    joined = "".join(c.text for c in chunks)
    assert text.startswith(joined) and not text[len(joined) :].strip()  # only whitespace dropped


def test_unicode_offsets_are_character_offsets():
    text = "Ærø og Tórshavn ligger nær. " * 40 + "日本語の文です。" * 30
    doc = Document(text=text)
    for c in Chunker(50, 5).chunk(doc):
        assert doc.text[c.start : c.end] == c.text
        assert c.n_tokens <= 50


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t "])
def test_empty_and_whitespace_texts_give_no_chunks(text):
    assert Chunker(50, 5).split_text(text) == []


def test_short_text_is_one_chunk_and_ids_are_stable():
    doc = Document(text="Just one short sentence.")
    first = Chunker(50, 5).chunk(doc)
    again = Chunker(50, 5).chunk(Document(text="Just one short sentence."))
    assert len(first) == 1 and first[0].text == doc.text
    assert [c.id for c in first] == [c.id for c in again]


def test_invalid_parameters_are_rejected():
    with pytest.raises(ConfigurationError):
        Chunker(0, 0)
    with pytest.raises(ConfigurationError):
        Chunker(100, 100)
    with pytest.raises(ConfigurationError):
        Chunker(100, -1)
    with pytest.raises(InvalidInputError):
        Chunker(100, 10).chunk("not a document")  # type: ignore[arg-type]


def test_truncate_tokens():
    text = sentences(10)
    cut = truncate_tokens(text, 7)
    assert count_tokens(cut) <= 7 and text.startswith(cut)
    assert truncate_tokens("short", 10) == "short"


def test_abbreviations_initials_and_dotted_letters_do_not_end_sentences():
    text = "Dr. Smith met J. R. Tolkien in the U.S. in 1950. They talked, e.g. about maps. Done!"
    sentences = [text[a:b].strip() for a, b in split_sentences(text)]
    assert sentences == [
        "Dr. Smith met J. R. Tolkien in the U.S. in 1950.",
        "They talked, e.g. about maps.",
        "Done!",
    ]


def test_chunk_ids_name_a_documents_chunk_and_back():
    from rhizome.core.text import Chunker, chunk_id, chunk_position

    chunks = Chunker(16, 0).chunk(Document(id="a:b", text="One sentence here. " * 20))
    assert [c.id for c in chunks] == [chunk_id("a:b", i) for i in range(len(chunks))]
    assert [chunk_position(c.id) for c in chunks] == [("a:b", i) for i in range(len(chunks))]


def test_a_text_that_fits_one_chunk_is_one_chunk_counted_once():
    text = sentences(12)
    ((start, end, n),) = Chunker(count_tokens(text), 5).split_text(text)
    assert (start, end, n) == (0, len(text), count_tokens(text))
    assert len(Chunker(count_tokens(text) - 1, 5).split_text(text)) == 2


@pytest.mark.parametrize("limit", [1, 7, 40, 200])
def test_long_texts_are_cut_and_measured_from_their_head_as_if_whole(limit):
    from rhizome.core.text import get_encoding, within_tokens

    encoding = get_encoding()
    for text in (sentences(300), "word " * 5000, "ünïcödé-wörds, " * 2000, "x" * 30000):
        tokens = encoding.encode_ordinary(text)
        assert truncate_tokens(text, limit) == encoding.decode(tokens[:limit])
        assert within_tokens(text, limit) is (len(tokens) <= limit)
        assert within_tokens(text, len(tokens)) and not within_tokens(text, len(tokens) - 1)


def test_a_markdown_heading_is_a_sentence_of_its_own_without_its_markers():
    """Defect: offline extraction joined '# The Gull Island Light' to the sentence after it, so
    descriptions, summaries and answers read '# The Gull Island Light Osric Vane keeps ...'."""
    from rhizome.core.text import trimmed_sentences

    text = "# The Gull Island Light\nOsric Vane keeps the light. #2 is his boat.\n\n## Storms ##\n\nStorms close the harbour."
    shown = [text[s:e] for s, e in trimmed_sentences(text)]
    assert shown == ["The Gull Island Light", "Osric Vane keeps the light.", "#2 is his boat.", "Storms", "Storms close the harbour."]
    assert [text[s:e] for s, e in trimmed_sentences(text, headings=False)] == [
        "Osric Vane keeps the light.", "#2 is his boat.", "Storms close the harbour."]
    plain = "No heading here. Only sentences."
    assert trimmed_sentences(plain) == trimmed_sentences(plain, headings=False) == [(0, 16), (17, 32)]


def test_offline_descriptions_and_answers_carry_no_markdown_markup():
    from rhizome.archrag import ArchRAGIndex
    from rhizome.core import Document, HashingEmbedder

    index = ArchRAGIndex(HashingEmbedder())
    index.insert([Document(id="light", text="# The Gull Island Light\n\nOsric Vane keeps the Gull Island Light.\n\n"
                                             "## Storms\n\nStorms close the harbour in winter.")])
    assert all("#" not in e.description for e in index.graph_contents().entities)
    assert all("#" not in h.text for h in index.as_retriever(k=4, mode="hierarchical").retrieve("Who keeps the light?"))
    assert "#" not in index.answer("What happens in winter?", mode="hierarchical").text
