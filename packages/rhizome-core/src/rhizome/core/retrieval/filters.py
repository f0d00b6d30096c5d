"""Metadata filters: which documents a search may draw on.

A filter is a mapping of document metadata fields to what they must hold, in the shape
LangChain's vector stores and Chroma use::

    {"source": "/docs/a.md"}                       # equality
    {"year": {"$in": [2023, 2024]}}                # one of several values
    {"author": "Ann", "page": {"$eq": 3}}          # every condition holds
    {"$and": [{"author": "Ann"}, {"page": 3}]}     # the same, spelled out

Fields are the metadata stored with each document (``source``, ``title``, ``page``, ``row``
and whatever the caller or a loader put there). A number and its decimal text compare equal
(a CSV column gives ``"2024"``, a filter from the command line too), booleans only equal
booleans, and a missing field equals ``None``. Any other operator (``$ne``, ``$gt``, ``$or``,
...) is an :class:`~rhizome.core.errors.InvalidInputError`, never silently ignored; so is a
field that no stored document has (a misspelt field would otherwise match nothing).

How a retriever applies a filter, the same for every method and mode, is
:meth:`rhizome.core.retrieval.contract.BaseRetriever.asearch`'s: a hit is kept only when every document
it cites matches.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rhizome.core.errors import InvalidInputError

OPERATORS = ("$eq", "$in")


@dataclass(frozen=True)
class Condition:
    """One field and the values it may hold (one value: equality)."""

    field: str
    values: tuple[Any, ...]

    def holds(self, metadata: Mapping[str, Any]) -> bool:
        stored = metadata.get(self.field)
        return any(_equal(stored, wanted) for wanted in self.values)

    def __str__(self) -> str:
        if len(self.values) == 1:
            return f"{self.field} = {_show(self.values[0])}"
        return f"{self.field} in ({', '.join(_show(v) for v in self.values)})"


@dataclass(frozen=True)
class MetadataFilter:
    """Conditions that all must hold (see the module docstring); build one with :func:`as_filter`."""

    conditions: tuple[Condition, ...]

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        return all(c.holds(metadata) for c in self.conditions)

    @property
    def fields(self) -> set[str]:
        return {c.field for c in self.conditions}

    def allowed(self, documents: Mapping[str, Mapping[str, Any]]) -> set[str]:
        """The ids among ``documents`` (id → metadata) that match. A field that none of them
        has is an :class:`InvalidInputError` naming the fields they do have."""
        if documents:
            known = {key for metadata in documents.values() for key in metadata}
            unknown = sorted(f for f in self.fields if f not in known)
            if unknown:
                raise InvalidInputError(
                    f"no stored document has the metadata field{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(map(repr, unknown))}; the documents' fields are: {', '.join(sorted(known)) or 'none'}"
                )
        return {doc_id for doc_id, metadata in documents.items() if self.matches(metadata)}

    def to_dict(self) -> dict[str, Any]:
        """The filter in its mapping form (what :func:`as_filter` reads)."""
        return {c.field: c.values[0] if len(c.values) == 1 else {"$in": list(c.values)} for c in self.conditions}

    def __str__(self) -> str:
        return " and ".join(str(c) for c in self.conditions)


def as_filter(spec: Any) -> MetadataFilter | None:
    """A :class:`MetadataFilter` from its mapping form (``None`` and ``{}``: no filter)."""
    if spec is None or isinstance(spec, MetadataFilter):
        return spec or None
    if not isinstance(spec, Mapping):
        raise InvalidInputError(
            f"a metadata filter is a dict such as {{'source': 'a.md'}} or {{'year': {{'$in': [2023, 2024]}}}}, "
            f"not a {type(spec).__name__}"
        )
    conditions = list(_conditions(spec))
    merged: dict[str, tuple[Any, ...]] = {}
    for condition in conditions:  # one field twice: both must hold, so what both allow
        if condition.field in merged:
            merged[condition.field] = tuple(v for v in merged[condition.field] if any(_equal(v, w) for w in condition.values))
        else:
            merged[condition.field] = condition.values
    return MetadataFilter(tuple(Condition(f, v) for f, v in merged.items())) if merged else None


def _conditions(spec: Mapping[Any, Any]) -> Iterable[Condition]:
    for field, wanted in spec.items():
        if field == "$and":
            if not isinstance(wanted, list) or not all(isinstance(x, Mapping) for x in wanted):
                raise InvalidInputError("'$and' takes a list of filters")
            for part in wanted:
                yield from _conditions(part)
            continue
        if not isinstance(field, str) or field.startswith("$"):
            raise InvalidInputError(f"unsupported filter operator {field!r}; filters support equality and $in, all conditions joined by and")
        if isinstance(wanted, Mapping):
            if len(wanted) != 1 or next(iter(wanted)) not in OPERATORS:
                ops = ", ".join(map(repr, wanted)) or "nothing"
                raise InvalidInputError(
                    f"the filter on {field!r} uses {ops}; filters support equality ({{'{field}': value}} or $eq) "
                    "and membership ($in)"
                )
            operator, value = next(iter(wanted.items()))
            if operator == "$in":
                if not isinstance(value, (list, tuple, set, frozenset)) or not value:
                    raise InvalidInputError(f"$in on {field!r} takes a non-empty list of values")
                yield Condition(field, tuple(_checked(field, v) for v in value))
            else:
                yield Condition(field, (_checked(field, value),))
        else:
            yield Condition(field, (_checked(field, wanted),))


def _checked(field: str, value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"the filter value for {field!r} must be a JSON value (str, number, bool, None, list), got {value!r}") from exc
    return value


def _equal(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return type(stored) is type(wanted) and stored == wanted
    if isinstance(stored, (int, float)) and isinstance(wanted, str):
        return _number_text(stored) == wanted.strip()
    if isinstance(stored, str) and isinstance(wanted, (int, float)):
        return stored.strip() == _number_text(wanted)
    return bool(stored == wanted)


def _number_text(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


__all__ = ["Condition", "MetadataFilter", "OPERATORS", "as_filter"]
