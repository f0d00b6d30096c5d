"""Token counting and sentence-aware chunking with tiktoken's ``cl100k_base``.

The encoding must load without network. tiktoken downloads encodings on first use and caches
them in ``TIKTOKEN_CACHE_DIR``; llama-index-core ships that cache pre-filled, so when the
variable is unset and llama-index-core is installed we point tiktoken at its copy.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.types import Chunk, Document

ENCODING = "cl100k_base"


def bundled_tiktoken_cache() -> Path | None:
    """The tiktoken cache directory shipped inside llama-index-core, if installed."""
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "_static" / "tiktoken_cache"
        if candidate.is_dir():
            return candidate
    return None


@functools.lru_cache(maxsize=4)
def get_encoding(name: str = ENCODING):  # -> tiktoken.Encoding
    """Load a tiktoken encoding offline when possible; a clear error when it cannot load."""
    import tiktoken

    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        bundled = bundled_tiktoken_cache()
        if bundled is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # network errors surface as many types
        raise ConfigurationError(
            f"cannot load the tiktoken encoding {name!r} ({exc}). Install llama-index-core, which "
            "bundles it, or set TIKTOKEN_CACHE_DIR to a directory holding tiktoken's cache."
        ) from exc


def count_tokens(text: str) -> int:
    """Number of ``cl100k_base`` tokens in ``text`` (special tokens counted as plain text)."""
    if not text:
        return 0
    return len(get_encoding().encode_ordinary(text))


def fits_by_bytes(text: str, max_tokens: int) -> bool:
    """Whether ``text`` surely has at most ``max_tokens`` tokens, without tokenising it: a token
    holds at least one byte, so a text of at most ``max_tokens`` UTF-8 bytes always fits."""
    return len(text) <= max_tokens and len(text.encode("utf-8")) <= max_tokens


def min_tokens(text: str) -> int:
    """A lower bound of :func:`count_tokens`, without tokenising: the number of words
    (whitespace-separated runs). ``cl100k_base`` cuts a text into pieces before merging bytes
    into tokens, and a piece is either all whitespace or has whitespace at most as its first
    character, so no token holds parts of two words. (Python also splits at the separators
    U+001C–U+001F, which are not whitespace to tiktoken: they count as letters here.)"""
    if _SEPARATORS.search(text):
        text = _SEPARATORS.sub("x", text)
    return len(text.split())


_SEPARATORS = re.compile("[\x1c-\x1f]")


_CHARS_PER_TOKEN = 8
"""Characters a ``cl100k_base`` token is assumed to hold at most when deciding how much of a
text to tokenise (English averages about 4): a text of more characters than this many per token
of a budget is not tokenised whole in the hope that it fits."""
_HEAD_SPARE_TOKENS = 16


def _long_head(text: str, max_tokens: int) -> list[int] | None:
    """The tokens of a head of ``text`` when that head alone holds more than ``max_tokens``,
    else ``None``. tiktoken cuts text into words before merging bytes into tokens, so a head
    begins with the same tokens as the whole text except near its cut (the last word, which
    ``_HEAD_SPARE_TOKENS`` covers): long texts need not be tokenised whole to be truncated or
    found too long. The head usually holds about twice what is wanted."""
    head_chars = _CHARS_PER_TOKEN * (max_tokens + _HEAD_SPARE_TOKENS)
    if len(text) <= head_chars:
        return None
    tokens = get_encoding().encode_ordinary(text[:head_chars])
    return tokens if len(tokens) > max_tokens + _HEAD_SPARE_TOKENS else None


def within_tokens(text: str, max_tokens: int) -> bool:
    """Whether ``text`` has at most ``max_tokens`` tokens (short texts are not tokenised, long
    ones only in part)."""
    if fits_by_bytes(text, max_tokens):
        return True
    if _long_head(text, max_tokens) is not None:
        return False
    return count_tokens(text) <= max_tokens


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens."""
    if fits_by_bytes(text, max_tokens):
        return text
    encoding = get_encoding()
    tokens = _long_head(text, max_tokens) or encoding.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    return encoding.decode(tokens[:max_tokens])


# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace,
# or at a blank line. Each sentence span owns the whitespace that follows it, so spans tile the
# text exactly and a chunk is always a contiguous slice of its document.
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*\s+|\n\s*\n\s*")
_LAST_WORD = re.compile(r"(\w+(?:\.\w+)*)\W*$")
_DOTTED = re.compile(r"(?:\w\.)+\w")

ABBREVIATIONS = frozenset(
    ["mr", "mrs", "ms", "mx", "dr", "prof", "sr", "jr", "st", "mt", "ft", "rev", "gen", "col", "capt", "lt", "sgt", "adm", "gov", "sen", "rep", "inc", "corp", "ltd", "co", "vs", "etc", "e.g", "i.e", "cf", "al", "no", "vol", "fig", "approx", "dept", "univ"]
)
"""A full stop after these words does not end a sentence."""


_WORD_WINDOW = 64


def _last_word(text: str, start: int, end: int) -> str:
    """The last word of ``text[start:end]`` (dotted parts included: "U.S"), or "". Searched for
    in the last ``_WORD_WINDOW`` characters first: ``_LAST_WORD`` is tried at every position of
    what it is given, so a long sentence searched whole costs its length times a word's. A match
    starting past the window's second character is the whole slice's (a word reaching further
    left would have matched earlier); otherwise the slice is searched whole."""
    lo = max(start, end - _WORD_WINDOW)
    last = _LAST_WORD.search(text, lo, end)
    if lo > start and (last is None or last.start() <= lo + 1):
        last = _LAST_WORD.search(text, start, end)
    return last.group(1) if last else ""


def _is_boundary(text: str, start: int, match: re.Match[str]) -> bool:
    """A full stop after an abbreviation, an initial ("J."), dotted letters ("U.S.") or before a
    lower-case word does not end a sentence."""
    if not match.group().startswith("."):
        return True
    word = _last_word(text, start, match.start())
    following = text[match.end() : match.end() + 1]
    return not (
        word.lower() in ABBREVIATIONS
        or (len(word) == 1 and word.isupper())
        or _DOTTED.fullmatch(word)
        or following.islower()
    )


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of the sentences of ``text``; they tile the text
    (each span keeps the whitespace after its sentence)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if not _is_boundary(text, start, match):
            continue
        end = match.end()
        if end > start:
            spans.append((start, end))
            start = end
    if start < len(text):
        spans.append((start, len(text)))
    return spans


_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t#]*$", re.MULTILINE)
"""A Markdown heading line (``## Storms``): its text is group 1."""


def trimmed_sentences(text: str, *, headings: bool = True) -> list[tuple[int, int]]:
    """Like :func:`split_sentences`, with surrounding whitespace left out of each span and
    whitespace-only spans dropped. A Markdown heading line is a span of its own, its ``#``
    markers left out (``headings=False``: left out whole), so a heading is never joined to the
    sentence after it."""
    out = []
    for start, end in split_sentences(text):
        pieces = [(start, end)]
        if "#" in text[start:end]:
            pieces, cursor = [], start
            for heading in _HEADING_LINE.finditer(text, start, end):
                pieces.append((cursor, heading.start()))
                if headings:
                    pieces.append(heading.span(1))
                cursor = heading.end()
            pieces.append((cursor, end))
        for first, last in pieces:
            piece = text[first:last]
            stripped = piece.strip()
            if stripped:
                offset = first + (len(piece) - len(piece.lstrip()))
                out.append((offset, offset + len(stripped)))
    return out


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    tokens: int


def chunk_id(document_id: str, index: int) -> str:
    """The id of a document's ``index``-th chunk (0-based), as every index stores it: methods
    that address chunks by position (neighbours, contiguous runs) build ids with it."""
    return f"{document_id}:{index}"


def chunk_position(chunk_id: str) -> tuple[str, int]:
    """``(document id, index)`` of a chunk id made by :func:`chunk_id` (the inverse)."""
    document_id, _, index = chunk_id.rpartition(":")
    return document_id, int(index)


class Chunker:
    """Splits documents into chunks of at most ``chunk_size`` tokens that end on sentence
    boundaries where possible, consecutive chunks sharing up to ``overlap`` tokens of whole
    sentences. A sentence longer than a chunk is cut at token boundaries.

    Parameters
    ----------
    chunk_size: token budget of a chunk (GraphRAG and LightRAG use 1,200; RAPTOR 100).
    overlap: tokens of trailing sentences repeated at the start of the next chunk (GraphRAG and
        LightRAG use 100). Must be smaller than ``chunk_size``.
    """

    def __init__(self, chunk_size: int = 1200, overlap: int = 100) -> None:
        if chunk_size < 1:
            raise ConfigurationError(f"chunk_size must be a positive number of tokens, got {chunk_size}")
        if overlap < 0 or overlap >= chunk_size:
            raise ConfigurationError(
                f"overlap must be between 0 and chunk_size - 1 ({chunk_size - 1}), got {overlap}"
            )
        self.chunk_size = chunk_size
        self.overlap = overlap

    def _pieces(self, text: str) -> list[_Piece]:
        encoding = get_encoding()
        pieces: list[_Piece] = []
        for start, end in split_sentences(text):
            sentence = text[start:end]
            tokens = encoding.encode_ordinary(sentence)
            if len(tokens) <= self.chunk_size:
                pieces.append(_Piece(start, end, len(tokens)))
                continue
            # cut an over-long sentence at token boundaries (character offsets from tiktoken)
            _, offsets = encoding.decode_with_offsets(tokens)
            cuts = list(range(0, len(tokens), self.chunk_size))
            for i, first in enumerate(cuts):
                piece_start = start + offsets[first]
                piece_end = start + offsets[cuts[i + 1]] if i + 1 < len(cuts) else end
                if piece_end > piece_start:
                    pieces.append(_Piece(piece_start, piece_end, min(self.chunk_size, len(tokens) - first)))
        return pieces

    def split_text(self, text: str) -> list[tuple[int, int, int]]:
        """``(start, end, n_tokens)`` of each chunk of ``text``; whitespace-only chunks are dropped.
        A text that fits in one chunk is that chunk (tokenised once, not sentence by sentence)."""
        if not text.strip():
            return []
        if len(text) <= _CHARS_PER_TOKEN * self.chunk_size:
            whole = count_tokens(text)
            if whole <= self.chunk_size:
                return [(0, len(text), whole)]
        pieces = self._pieces(text)
        spans: list[tuple[int, int, int]] = []
        i = 0
        while i < len(pieces):
            j, total = i, 0
            while j < len(pieces) and total + pieces[j].tokens <= self.chunk_size:
                total += pieces[j].tokens
                j += 1
            j = max(j, i + 1)
            start, end = pieces[i].start, pieces[j - 1].end
            n_tokens = count_tokens(text[start:end])
            # token counts of pieces are not additive at every boundary; shrink if needed
            while n_tokens > self.chunk_size and j - 1 > i:
                j -= 1
                end = pieces[j - 1].end
                n_tokens = count_tokens(text[start:end])
            if text[start:end].strip():
                spans.append((start, end, n_tokens))
            if j >= len(pieces):
                break
            # start the next chunk with trailing sentences worth at most `overlap` tokens
            k, carried = j, 0
            while k - 1 > i and carried + pieces[k - 1].tokens <= self.overlap:
                carried += pieces[k - 1].tokens
                k -= 1
            i = k
        return spans

    def chunk(self, document: Document) -> list[Chunk]:
        """The chunks of one document, with ids stable across runs."""
        if not isinstance(document, Document):
            raise InvalidInputError(f"expected a rhizome Document, got {type(document).__name__}")
        chunks = []
        for index, (start, end, n_tokens) in enumerate(self.split_text(document.text)):
            metadata = {k: v for k, v in document.metadata.items() if k in ("title", "source")}
            chunks.append(
                Chunk(
                    id=chunk_id(document.id, index),
                    document_id=document.id,
                    text=document.text[start:end],
                    index=index,
                    start=start,
                    end=end,
                    n_tokens=n_tokens,
                    metadata=metadata,
                )
            )
        return chunks

    def chunk_all(self, documents: list[Document]) -> Iterator[Chunk]:
        for document in documents:
            yield from self.chunk(document)


__all__ = [
    "ENCODING",
    "Chunker",
    "bundled_tiktoken_cache",
    "chunk_id",
    "chunk_position",
    "count_tokens",
    "fits_by_bytes",
    "get_encoding",
    "min_tokens",
    "split_sentences",
    "trimmed_sentences",
    "truncate_tokens",
    "within_tokens",
]
