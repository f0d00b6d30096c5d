"""Turning what users have into :class:`Document` records: strings, dicts, LangChain and
LlamaIndex documents (files on disk: :mod:`rhizome.tools.loaders`)."""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePath
from typing import Any

from pydantic import ValidationError

from rhizome.core.errors import InvalidInputError
from rhizome.core.types import Document

_BYTES = (
    "a document must be text, not bytes: decode it first (e.g. data.decode('utf-8'), or "
    "errors='replace' when the encoding is unsure)"
)


def as_document(item: Any) -> Document:
    """One document from a str, a mapping with ``text``, a rhizome/LangChain/LlamaIndex document.
    Bytes are refused (decode them first: only the caller knows their encoding)."""
    if isinstance(item, Document):
        return item
    if isinstance(item, (bytes, bytearray)):
        raise InvalidInputError(_BYTES)
    if isinstance(item, str):
        return Document(text=item)
    if isinstance(item, Mapping):
        if isinstance(item.get("text"), (bytes, bytearray)):
            raise InvalidInputError(_BYTES)
        if not isinstance(item.get("text"), str):
            raise InvalidInputError("a document given as a mapping needs a string 'text' field")
        return _built(item["text"], item.get("id"), item.get("metadata"))
    page_content = getattr(item, "page_content", None)  # LangChain Document
    if isinstance(page_content, str):
        return _built(page_content, getattr(item, "id", None), getattr(item, "metadata", None))
    text = getattr(item, "text", None)  # LlamaIndex Document / TextNode
    if isinstance(text, str):
        # LlamaIndex gives every object a random id unless one is passed: only a given id is
        # kept, else the content hash, so inserting the same text again is recognised
        given = "id_" in getattr(item, "model_fields_set", {"id_"})
        return _built(text, getattr(item, "id_", None) if given else None, getattr(item, "metadata", None))
    raise InvalidInputError(
        f"cannot use a {type(item).__name__} as a document; pass a str, a dict with 'text', or a "
        "rhizome, LangChain or LlamaIndex document"
    )


def _built(text: str, id: Any, metadata: Any) -> Document:
    """A :class:`Document` from fields read off another kind of document; unusable metadata is
    an :class:`InvalidInputError` (an id of ``None`` or ``""`` becomes the content hash)."""
    name = "a document" if id is None else f"document {id!r}"
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidInputError(f"{name} has metadata of type {type(metadata).__name__}; metadata must be a dict")
    try:
        return Document(text=text, id="" if id is None else str(id), metadata=dict(metadata or {}))
    except ValidationError as exc:  # the only field left to fail: a metadata key that is not a str
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise InvalidInputError(f"{name} cannot be used ({where}: {error['msg']}); metadata keys must be strings") from exc


def coerce_documents(items: Iterable[Any] | Any) -> list[Document]:
    """Validate a batch of documents up front, before anything is stored.

    Raises :class:`InvalidInputError` for an unusable item, an empty text, text or metadata
    that cannot be stored as UTF-8 (a lone surrogate such as ``"\\ud800"``, a NUL character),
    or one id given twice with different texts or metadata (the same document given twice is
    kept once).
    One bad document fails the whole call before anything of it is stored."""
    if isinstance(items, (str, bytes, bytearray, Document, Mapping)) or not isinstance(items, Iterable):
        items = [items]
    documents: dict[str, Document] = {}
    for position, item in enumerate(items):
        document = as_document(item)
        if not document.text.strip():
            raise InvalidInputError(
                f"document {position} ({document.id}) has no text; remove it or give it content"
            )
        plain = _plain(document.metadata)
        if plain != document.metadata:
            document = document.model_copy(update={"metadata": plain})
        _check_storable(position, document)
        previous = documents.get(document.id)
        if previous is not None and previous.text != document.text:
            raise InvalidInputError(
                f"document id {document.id!r} is given twice with different texts{_origins(previous, document)}"
            )
        if previous is not None and _json_text(previous.metadata) != _json_text(document.metadata):
            differ = sorted(k for k in {*previous.metadata, *document.metadata}
                            if _json_text(previous.metadata.get(k)) != _json_text(document.metadata.get(k)))
            raise InvalidInputError(
                f"document id {document.id!r} is given twice with the same text and different metadata "
                f"({', '.join(differ)}){_origins(previous, document)}"
            )
        documents[document.id] = document
    return list(documents.values())


def _json_text(value: Any) -> str:
    """``value`` as it is stored (JSON), so ``1`` and ``True`` differ as they do once stored."""
    return json.dumps(value, sort_keys=True)


def _origins(first: Document, second: Document) -> str:
    """Where two documents with one id came from, when both name their file (``source``, as
    the loaders set it), and what to do."""
    sources = [d.metadata.get("source") for d in (first, second)]
    if not all(isinstance(s, str) and s for s in sources):
        return "; ids must be unique"
    where = f"both in {sources[0]}" if sources[0] == sources[1] else f"in {sources[0]} and in {sources[1]}"
    return (f" ({where}); ids must be unique: for rows of CSV or JSON files, name a column whose values are "
            "unique with --id-field (id_field= in Python), or index the files separately, each with its own "
            "--id-prefix (id_prefix=)")


def lone_surrogate(text: str) -> int | None:
    """Where ``text`` holds a lone surrogate (text decoded from bytes that were not UTF-8), which
    nothing that takes UTF-8 can store; ``None`` when it is valid Unicode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _check_storable(position: int, document: Document) -> None:
    """Text, id and metadata must be storable as they are: valid Unicode (no lone surrogates:
    SQLite and every model server take UTF-8), no NUL characters (a NUL ends a string in many
    tools), and metadata that JSON holds (str, int, float, bool, None, lists, dicts with string
    keys, after :func:`_plain`) -- any other object would come back as its ``str()``, which
    may change from run to run and with it the document's hash."""
    where = f"document {position} ({document.id!r})"
    try:
        json.dumps(document.metadata, sort_keys=True, allow_nan=False)  # NaN and infinity are not JSON
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"{where} has metadata that cannot be stored as JSON ({exc}); use str, int, finite float, bool, "
            "None, lists and dicts with string keys (e.g. str(value) or value.isoformat(); None for NaN)"
        ) from exc
    parts = [("text", document.text), ("id", document.id), *(("metadata", s) for s in _strings(document.metadata))]
    for part, value in parts:
        if (at := lone_surrogate(value)) is not None:
            raise InvalidInputError(
                f"{where} has {part} that is not valid Unicode (a lone surrogate at position {at}); "
                "decode the source with errors='replace', or remove the character"
            )
        if "\x00" in value:
            raise InvalidInputError(f"{where} has a NUL character in its {part}; remove it (e.g. text.replace('\\x00', ''))")


STABLE_TEXT = (_dt.date, _dt.time, _dt.timedelta, PurePath, uuid.UUID, decimal.Decimal)
"""Metadata values stored as their ``str()``, which never changes between runs (loaders put
dates and paths in metadata); any other object is refused."""


def _plain(value: Any) -> Any:
    """Metadata with dates, times, paths, UUIDs, decimals and numpy scalars made plain values."""
    if isinstance(value, STABLE_TEXT):
        return str(value)
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


__all__ = ["as_document", "coerce_documents", "lone_surrogate"]
