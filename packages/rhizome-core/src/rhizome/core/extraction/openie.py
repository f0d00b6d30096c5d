"""Importing precomputed OpenIE results in HippoRAG's JSON layout, instead of extracting."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rhizome.core.errors import InvalidInputError
from rhizome.core.extraction.schema import (
    Extraction,
    check_chunks,
    clean_name,
    entity_key,
    new_entity,
    new_relation,
)
from rhizome.core.types import Chunk, Entity

logger = logging.getLogger(__name__)

TRIPLE = "triple"
"""``Relation.metadata["kind"]`` of imported subject–predicate–object facts."""

_SPACES = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _load(path_or_dict: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(path_or_dict, Mapping):
        return path_or_dict
    if not isinstance(path_or_dict, (str, os.PathLike)):
        raise InvalidInputError(
            f"import_openie expects a file path or the parsed JSON object, got {type(path_or_dict).__name__}"
        )
    path = Path(path_or_dict)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InvalidInputError(f"OpenIE file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the OpenIE file {path}: {exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); expected "
            'HippoRAG OpenIE output such as {"docs": [{"idx": ..., "passage": ..., '
            '"extracted_entities": [...], "extracted_triples": [[s, p, o], ...]}]}'
        ) from exc
    if not isinstance(data, Mapping):
        raise InvalidInputError(
            f"{path} holds a JSON {type(data).__name__}, but HippoRAG OpenIE output is an object "
            'with a "docs" list'
        )
    return data


def _fallback_id(idx: Any) -> str:
    """Chunk id for a passage that matches no given chunk: a string ``idx`` is already an id
    (HippoRAG 2 uses ``"chunk-<hash>"``); a number becomes ``"openie-<n>"``."""
    if isinstance(idx, str) and idx.strip():
        return idx.strip()
    return f"openie-{idx}"


def import_openie(
    path_or_dict: str | os.PathLike[str] | Mapping[str, Any],
    chunks: Sequence[Chunk] | None = None,
) -> list[Extraction]:
    """Read HippoRAG's OpenIE output (a file path or the parsed object) as one
    :class:`~rhizome.core.extraction.schema.Extraction` per passage, in file order.

    The expected layout is ``{"docs": [{"idx": ..., "passage": "...", "extracted_entities":
    [...], "extracted_triples": [[subject, predicate, object], ...]}, ...]}``; other keys at
    either level are ignored, and a passage may omit one of the two lists (not both).

    Chunk ids
        When ``chunks`` is given, each passage is matched to the first chunk with the same text,
        then to the first chunk whose text is equal once whitespace is collapsed. A passage that
        matches nothing (or when no chunks are given) gets an id from its ``idx`` — a string is
        used as is, a number ``n`` becomes ``"openie-n"``, and a missing ``idx`` is the passage's
        position. ``metadata["matched_chunk"]`` says which happened.

    Records
        Listed entities become entities with an empty type and no description (OpenIE gives
        neither). Each triple becomes a directed relation ``subject → object`` with
        ``predicate`` = the triple's predicate, ``description`` = ``"subject predicate
        object"``, weight 1 and ``metadata["kind"] = "triple"``; subjects and objects that are
        not listed are added as entities. Repeated triples within a passage are kept once.

    Skipped items
        Triples that are not three-element lists, that hold a non-string or blank element, or
        whose subject and object are the same name are skipped; so are entity names that are not
        non-empty strings. The counts are in each extraction's ``metadata`` (``skipped_triples``,
        ``skipped_entities``) and a warning is logged.

    Raises :class:`~rhizome.core.errors.InvalidInputError` when the file is missing or not
    JSON, when there is no ``docs`` list, or when a passage entry is malformed.
    """
    data = _load(path_or_dict)
    docs = data.get("docs")
    if docs is None:
        keys = ", ".join(sorted(map(str, data.keys()))[:8]) or "none"
        raise InvalidInputError(
            f'OpenIE data has no "docs" list (top-level keys: {keys}); this does not look like '
            "HippoRAG OpenIE output"
        )
    if not isinstance(docs, list):
        raise InvalidInputError(
            f'OpenIE "docs" must be a list of passages, got {type(docs).__name__}'
        )

    exact: dict[str, Chunk] = {}
    squashed: dict[str, Chunk] = {}
    for given in check_chunks(chunks or []):
        exact.setdefault(given.text, given)
        squashed.setdefault(_squash(given.text), given)

    results: list[Extraction] = []
    total_triples = total_entities = unmatched = 0
    for position, doc in enumerate(docs):
        if not isinstance(doc, Mapping):
            raise InvalidInputError(
                f"OpenIE docs[{position}] is a {type(doc).__name__}; every passage must be an object"
            )
        if "extracted_entities" not in doc and "extracted_triples" not in doc:
            raise InvalidInputError(
                f'OpenIE docs[{position}] has neither "extracted_entities" nor "extracted_triples"'
            )
        passage = doc.get("passage")
        if passage is not None and not isinstance(passage, str):
            raise InvalidInputError(
                f'OpenIE docs[{position}] "passage" must be a string, got {type(passage).__name__}'
            )
        names = doc.get("extracted_entities") or []
        triples = doc.get("extracted_triples") or []
        for field_name, value in (("extracted_entities", names), ("extracted_triples", triples)):
            if not isinstance(value, list):
                raise InvalidInputError(
                    f'OpenIE docs[{position}] "{field_name}" must be a list, got {type(value).__name__}'
                )

        idx = doc.get("idx", position)
        chunk: Chunk | None = None
        if passage is not None:
            chunk = exact.get(passage)
            if chunk is None:
                chunk = squashed.get(_squash(passage))
        if chunk is None and (exact or squashed):
            unmatched += 1
        chunk_id = chunk.id if chunk is not None else _fallback_id(idx)

        entities: dict[str, Entity] = {}
        skipped_entities = 0
        for name in names:
            if not isinstance(name, str) or not clean_name(name):
                skipped_entities += 1
                continue
            key = entity_key(name)
            if key not in entities:
                entities[key] = new_entity(name, chunk_id)

        relations = []
        seen: set[str] = set()
        skipped_triples = 0
        for triple in triples:
            if not isinstance(triple, (list, tuple)) or len(triple) != 3:
                skipped_triples += 1
                continue
            if not all(isinstance(part, str) and clean_name(part) for part in triple):
                skipped_triples += 1
                continue
            subject, predicate, obj = (clean_name(part) for part in triple)
            skey, okey = entity_key(subject), entity_key(obj)
            if skey == okey:
                skipped_triples += 1
                continue
            relation = new_relation(
                skey,
                okey,
                chunk_id,
                predicate=predicate,
                description=f"{subject} {predicate} {obj}",
                directed=True,
                kind=TRIPLE,
            )
            if relation.id in seen:
                continue
            seen.add(relation.id)
            relations.append(relation)
            for key, display in ((skey, subject), (okey, obj)):
                if key not in entities:
                    entities[key] = new_entity(display, chunk_id)

        total_triples += skipped_triples
        total_entities += skipped_entities
        results.append(
            Extraction(
                chunk_id=chunk_id,
                entities=list(entities.values()),
                relations=relations,
                metadata={
                    "extractor": "openie",
                    "idx": idx if isinstance(idx, (str, int, float)) else str(idx),
                    "matched_chunk": chunk is not None,
                    "skipped_triples": skipped_triples,
                    "skipped_entities": skipped_entities,
                },
            )
        )

    if total_triples or total_entities:
        logger.warning(
            "OpenIE import skipped %d malformed triple(s) and %d invalid entity name(s) in %d passage(s)",
            total_triples,
            total_entities,
            len(docs),
        )
    if unmatched:
        logger.warning(
            "%d of %d OpenIE passage(s) matched no given chunk; their ids come from 'idx'",
            unmatched,
            len(docs),
        )
    return results


class OpenIEExtractor:
    """Precomputed OpenIE triples used in place of an extractor: ``aextract(chunks)`` returns,
    for each chunk, the triples of the passage whose text matches it (an empty extraction when
    none does). The file is read and validated once, on construction. Built from a file, its
    ``spec`` is ``"openie:<absolute path>"``, so an index records it and reopens with it."""

    def __init__(self, path_or_dict: str | os.PathLike[str] | Mapping[str, Any]) -> None:
        self.data = _load(path_or_dict)
        import_openie(self.data)  # validate now: a bad file fails before indexing starts
        self.spec = None if isinstance(path_or_dict, Mapping) else f"openie:{os.path.abspath(path_or_dict)}"
        self._exact: dict[str, Mapping[str, Any]] = {}
        self._squashed: dict[str, Mapping[str, Any]] = {}
        for doc in self.data["docs"]:
            if isinstance(doc.get("passage"), str):
                self._exact.setdefault(doc["passage"], doc)
                self._squashed.setdefault(_squash(doc["passage"]), doc)

    async def aextract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        chunks = list(chunks)
        # only the passages of this batch are imported: the cost follows the batch, and the
        # passages of other batches are not reported as unmatched
        docs = [self._exact.get(c.text) or self._squashed.get(_squash(c.text)) for c in chunks]
        batch = list({id(d): d for d in docs if d is not None}.values())
        found = {e.chunk_id: e for e in import_openie({"docs": batch}, chunks) if e.metadata.get("matched_chunk")}
        return [found.get(c.id) or Extraction(chunk_id=c.id, metadata={"extractor": "openie", "matched_chunk": False}) for c in chunks]

    def extract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        from rhizome.core.aio import run_sync

        return run_sync(self.aextract(chunks))


__all__ = ["TRIPLE", "OpenIEExtractor", "import_openie"]
