"""Metadata filters: which documents a search may draw on.

A filter is a mapping of document metadata fields to what they must hold, in the shape of
LangChain's filter dicts (Chroma, PGVector) and MongoDB queries::

    {"source": "/docs/a.md"}                              # equality
    {"year": {"$gt": 1900, "$lte": 1950}}                 # comparisons (all must hold)
    {"year": {"$in": [2023, 2024]}}                       # one of several values ($nin: none of them)
    {"tags": "salt"}                                      # a list field: "salt" is one of its values
    {"tags": {"$contains": "salt"}}                       # the same; on a text field: a substring
    {"$or": [{"author": "Ann"}, {"page": {"$lt": 3}}]}    # either
    {"$not": {"shelf": "north"}}                          # not
    {"author": "Ann", "page": 3}                          # every condition holds ($and spelt out)

Operators of a field: ``$eq $ne $gt $gte $lt $lte $in $nin $contains $icontains $exists
$between``; of filters: ``$and $or $not``. What they mean, the same on SQLite and PostgreSQL
(both evaluate a filter in SQL over the stored metadata, see :meth:`MetadataFilter.sql`):

- A **list field** matches when one of its values does (``$eq``, ``$in``, comparisons,
  ``$contains``); ``$ne`` and ``$nin`` are their negations, so they match when none does.
- A **number and its decimal text** (written as JSON writes a number) are the same value (a CSV column gives ``"2024"``, a filter
  from the command line too): ``{"year": {"$gt": "1900"}}`` compares numbers, and a stored
  ``"1911"`` is greater than ``1900``. A comparison with other text compares text (code point
  order, so ISO dates compare as dates) and matches only text. Booleans equal only booleans.
- A **missing field** equals ``None`` (and so matches ``$ne`` of any other value).
  ``{"f": {"$exists": true}}`` matches a field with a value: present, and not ``None``, ``""``
  or ``[]``.
- ``$contains`` is list membership, or for text a substring; ``$icontains`` a substring with
  the letters A-Z compared without case. ``$between: [low, high]`` is ``$gte`` low and
  ``$lte`` high.

A malformed filter (an unknown operator, an operand of the wrong type) or a field that no stored
document has (a misspelt field would otherwise match nothing; ``$exists`` excepted) is an
:class:`~rhizome.core.errors.InvalidInputError` that says what to write instead; nothing is
silently ignored.

How a retriever applies a filter, the same for every method and mode, is
:meth:`rhizome.core.retrieval.contract.BaseRetriever.asearch`'s: a hit is kept only when every
document it cites matches.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rhizome.core.errors import InvalidInputError

FIELD_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$icontains", "$exists", "$between")
"""The operators of one field (``{"year": {"$gt": 1900}}``)."""
LOGICAL_OPERATORS = ("$and", "$or", "$not")
"""The operators that join filters (``{"$or": [{...}, {...}]}``)."""
OPERATORS = FIELD_OPERATORS + LOGICAL_OPERATORS

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""Text that is a number: written as JSON writes one (``1911``, ``-2.5``, ``1e3``), blanks around it aside."""
_NUMBER_SQL = r"^-{0,1}(0|[1-9][0-9]*)(\.[0-9]+){0,1}([eE][+-]{0,1}[0-9]+){0,1}$"
"""The same in a PostgreSQL regular expression, with no ``?`` (which would read as a parameter)."""
_COMPARE = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_SQL_DIALECTS = ("sqlite", "postgresql")
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_LOWER = str.maketrans(_UPPER, _UPPER.lower())


def _number(value: Any) -> float | None:
    """``value`` as a number: a number (not a boolean), or decimal text; else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip(" ")):
        return float(value.strip(" "))
    return None


def _same(stored: Any, wanted: Any) -> bool:
    """Whether one stored value (a field's, or one of a list field's) equals ``wanted``."""
    if wanted is None or isinstance(wanted, bool) or isinstance(stored, bool):
        return type(stored) is type(wanted) and stored == wanted
    if isinstance(stored, str) and isinstance(wanted, str):
        return stored == wanted
    if isinstance(stored, (str, int, float)):
        number = _number(wanted)
        return number is not None and _number(stored) == number
    return False


def _ordered(stored: Any, op: str, wanted: Any) -> bool:
    number = _number(wanted)
    left: Any
    right: Any
    if number is not None:
        left, right = _number(stored), number
        if left is None:
            return False
    elif isinstance(stored, str):
        left, right = stored, wanted
    else:
        return False
    return {"gt": left > right, "gte": left >= right, "lt": left < right, "lte": left <= right}[op]


# -- the parsed form -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Condition:
    """One field and what it must hold: ``op`` is ``eq``, ``in`` (``value``: a tuple), ``gt``,
    ``gte``, ``lt``, ``lte``, ``contains``, ``icontains`` or ``exists``."""

    field: str
    op: str
    value: Any

    def holds(self, metadata: Mapping[str, Any]) -> bool:
        stored = metadata.get(self.field)
        if self.op == "exists":
            return (stored not in (None, "", [])) is self.value
        values = stored if isinstance(stored, list) else [stored]
        return any(self._holds_for(v) for v in values)

    def _holds_for(self, stored: Any) -> bool:
        if self.op == "eq":
            return _same(stored, self.value)
        if self.op == "in":
            return any(_same(stored, v) for v in self.value)
        if self.op == "contains":
            if isinstance(self.value, str) and isinstance(stored, str):
                return self.value in stored
            return _same(stored, self.value)
        if self.op == "icontains":
            return isinstance(stored, str) and self.value.translate(_ASCII_LOWER) in stored.translate(_ASCII_LOWER)
        return _ordered(stored, self.op, self.value)

    @property
    def fields(self) -> set[str]:
        return set() if self.op == "exists" else {self.field}

    def to_dict(self) -> dict[str, Any]:
        return {self.field: {f"${self.op}": list(self.value) if self.op == "in" else self.value}}

    def __str__(self) -> str:
        if self.op == "exists":
            return f"{self.field} {'exists' if self.value else 'is empty'}"
        if self.op == "in":
            return f"{self.field} in ({', '.join(_show(v) for v in self.value)})"
        sign = {"eq": "=", "contains": "contains", "icontains": "contains (any case)", **_COMPARE}[self.op]
        return f"{self.field} {sign} {_show(self.value)}"

    def sql(self, dialect: str) -> tuple[str, list[Any]]:
        return (_sqlite if dialect == "sqlite" else _postgres)(self)


@dataclass(frozen=True)
class Junction:
    """Filters joined: ``op`` is ``and`` (all hold; none: always) or ``or`` (one holds)."""

    op: str
    parts: tuple[Node, ...]

    def holds(self, metadata: Mapping[str, Any]) -> bool:
        return (all if self.op == "and" else any)(p.holds(metadata) for p in self.parts)

    @property
    def fields(self) -> set[str]:
        return set().union(*(p.fields for p in self.parts))

    def to_dict(self) -> dict[str, Any]:
        return {f"${self.op}": [p.to_dict() for p in self.parts]}

    def __str__(self) -> str:
        shown = [str(p) if isinstance(p, (Condition, Negation)) else f"({p})" for p in self.parts]
        return f" {self.op} ".join(shown) or "anything"

    def sql(self, dialect: str) -> tuple[str, list[Any]]:
        if not self.parts:
            return ("1 = 1", [])
        clauses, params = zip(*(p.sql(dialect) for p in self.parts))
        return (f" {self.op.upper()} ".join(f"({c})" for c in clauses), [x for p in params for x in p])


@dataclass(frozen=True)
class Negation:
    """A filter that must not hold."""

    part: Node

    def holds(self, metadata: Mapping[str, Any]) -> bool:
        return not self.part.holds(metadata)

    @property
    def fields(self) -> set[str]:
        return self.part.fields

    def to_dict(self) -> dict[str, Any]:
        return {"$not": self.part.to_dict()}

    def __str__(self) -> str:
        return f"not {self.part}" if isinstance(self.part, Condition) else f"not ({self.part})"

    def sql(self, dialect: str) -> tuple[str, list[Any]]:
        clause, params = self.part.sql(dialect)
        return (f"NOT ({clause})", params)


Node = Condition | Junction | Negation


@dataclass(frozen=True)
class MetadataFilter:
    """A parsed filter (see the module docstring); build one with :func:`as_filter`."""

    root: Node

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a document with this metadata matches (the same answer as :meth:`sql`)."""
        return self.root.holds(metadata)

    @property
    def fields(self) -> set[str]:
        """The fields whose values the filter compares (a field only tested with ``$exists``
        is not one: it may be absent everywhere)."""
        return self.root.fields

    def sql(self, dialect: str) -> tuple[str, list[Any]]:
        """A SQL condition on a ``metadata`` column, and its ``?`` parameters. ``dialect``:
        ``"sqlite"`` (``metadata`` holds JSON text) or ``"postgresql"`` (``metadata`` is
        ``jsonb``). A store runs it as ``SELECT id FROM documents WHERE <condition>``."""
        if dialect not in _SQL_DIALECTS:
            raise ValueError(f"no SQL dialect {dialect!r}; one of {', '.join(_SQL_DIALECTS)}")
        return self.root.sql(dialect)

    def to_dict(self) -> dict[str, Any]:
        """The filter in its mapping form (what :func:`as_filter` reads)."""
        return self.root.to_dict()

    def __str__(self) -> str:
        return str(self.root)


# -- SQL ------------------------------------------------------------------------------------------
def _sqlite(c: Condition) -> tuple[str, list[Any]]:
    """SQLite: ``json_type``/``json_extract`` of the field; a list field through ``json_each``."""
    if any(ch in c.field for ch in '"\\'):
        raise InvalidInputError(f"the filter field {c.field!r} has a quote or backslash, which filters cannot name; rename the field")
    path = "'" + f'$."{c.field}"'.replace("'", "''") + "'"
    kind, value = f"json_type(metadata, {path})", f"json_extract(metadata, {path})"
    if c.op == "exists":
        clause = (f"COALESCE({kind} <> 'null' AND NOT ({kind} = 'array' AND json_array_length(metadata, {path}) = 0) "
                  f"AND NOT ({kind} = 'text' AND {value} = ''), 0)")
        return (clause if c.value else f"NOT {clause}", [])
    each, params = _value_test(c, _SQLiteValue("e.type", "e.value"))
    one, more = _value_test(c, _SQLiteValue(f"COALESCE({kind}, 'null')", value))
    return (f"CASE {kind} WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each(metadata, {path}) AS e WHERE {each}) "
            f"ELSE COALESCE({one}, 0) END", params + more)


def _postgres(c: Condition) -> tuple[str, list[Any]]:
    """PostgreSQL: the field's ``jsonb`` value; a list field through ``jsonb_array_elements``."""
    if c.op == "exists":
        clause = "COALESCE(jsonb_typeof(f) <> 'null' AND f <> '[]'::jsonb AND f <> '\"\"'::jsonb, FALSE)"
        return (f"EXISTS (SELECT 1 FROM (SELECT metadata -> ?::text AS f) AS x WHERE {clause if c.value else f'NOT {clause}'})", [c.field])
    each, params = _value_test(c, _PostgresValue("e.v"))
    one, more = _value_test(c, _PostgresValue("COALESCE(f, 'null'::jsonb)"))
    return (f"EXISTS (SELECT 1 FROM (SELECT metadata -> ?::text AS f) AS x WHERE CASE WHEN jsonb_typeof(f) = 'array' "
            f"THEN EXISTS (SELECT 1 FROM jsonb_array_elements(f) AS e(v) WHERE {each}) ELSE COALESCE({one}, FALSE) END)",
            [c.field, *params, *more])


class _SQLiteValue:
    """Tests of one stored value in SQLite, whose ``json_type`` is ``kind`` and SQL value ``value``."""

    def __init__(self, kind: str, value: str) -> None:
        self.kind, self.value = kind, value

    def null(self) -> str:
        return f"{self.kind} = 'null'"

    def boolean(self, wanted: bool) -> str:
        return f"{self.kind} = '{'true' if wanted else 'false'}'"

    def text(self, sign: str) -> str:
        return f"({self.kind} = 'text' AND {self.value} {sign} ?)"

    def number(self, sign: str) -> str:
        return f"({self.kind} IN ('integer', 'real') AND {self.value} {sign} ?)"

    def number_text(self, sign: str) -> str:
        v = f"trim({self.value}, ' ')"
        return (f"(CASE WHEN {self.kind} = 'text' AND json_valid({v}) THEN json_type({v}) IN ('integer', 'real') "
                f"AND CAST({v} AS REAL) {sign} ? END)")

    def substring(self, lower: bool) -> str:
        return f"({self.kind} = 'text' AND instr({f'lower({self.value})' if lower else self.value}, ?) > 0)"


class _PostgresValue:
    """Tests of one stored ``jsonb`` value ``element`` in PostgreSQL."""

    def __init__(self, element: str) -> None:
        self.element, self.kind, self.value = element, f"jsonb_typeof({element})", f"({element} #>> '{{}}')"

    def null(self) -> str:
        return f"{self.kind} = 'null'"

    def boolean(self, wanted: bool) -> str:
        return f"{self.element} = '{'true' if wanted else 'false'}'::jsonb"

    def text(self, sign: str) -> str:
        return f"({self.kind} = 'string' AND {self.value} COLLATE \"C\" {sign} ?)"

    def number(self, sign: str) -> str:
        return f"({self.kind} = 'number' AND {self.value}::float8 {sign} ?)"

    def number_text(self, sign: str) -> str:
        v = f"trim({self.value}, ' ')"
        return f"(CASE WHEN {self.kind} = 'string' AND {v} ~ '{_NUMBER_SQL}' THEN {v}::float8 {sign} ? END)"

    def substring(self, lower: bool) -> str:
        text = f"translate({self.value}, '{_UPPER}', '{_UPPER.lower()}')" if lower else self.value
        return f"({self.kind} = 'string' AND strpos({text}, ?) > 0)"


def _value_test(c: Condition, on: _SQLiteValue | _PostgresValue) -> tuple[str, list[Any]]:
    """The SQL of ``c`` on one stored value (a field's, or one of a list field's), as
    :meth:`Condition._holds_for` decides it."""
    parts: list[str] = []
    params: list[Any] = []

    def equal(wanted: Any) -> None:
        if wanted is None:
            parts.append(on.null())
        elif isinstance(wanted, bool):
            parts.append(on.boolean(wanted))
        else:
            number = _number(wanted)
            if isinstance(wanted, str):
                parts.append(on.text("="))
                params.append(wanted)
            if number is not None:
                parts.append(on.number("="))
                params.append(number)
                if not isinstance(wanted, str):
                    parts.append(on.number_text("="))
                    params.append(number)

    if c.op == "eq":
        equal(c.value)
    elif c.op == "in":
        for wanted in c.value:
            equal(wanted)
    elif c.op == "contains" and isinstance(c.value, str):
        parts.append(on.substring(lower=False))
        params.append(c.value)
    elif c.op == "contains":
        equal(c.value)
    elif c.op == "icontains":
        parts.append(on.substring(lower=True))
        params.append(c.value.translate(_ASCII_LOWER))
    else:
        sign, number = _COMPARE[c.op], _number(c.value)
        if number is None:
            parts.append(on.text(sign))
            params.append(c.value)
        else:
            parts += [on.number(sign), on.number_text(sign)]
            params += [number, number]
    return (" OR ".join(parts), params)


# -- parsing --------------------------------------------------------------------------------------
_EXAMPLE = "{'year': {'$gt': 1900}}, {'tags': {'$contains': 'salt'}} or {'$or': [{'shelf': 'south'}, {'year': 1901}]}"


def as_filter(spec: Any) -> MetadataFilter | None:
    """A :class:`MetadataFilter` from its mapping form (``None`` and ``{}``: no filter)."""
    if spec is None or isinstance(spec, MetadataFilter):
        return spec
    if not isinstance(spec, Mapping):
        raise InvalidInputError(f"a metadata filter is a dict such as {_EXAMPLE}, not a {type(spec).__name__}")
    root = _parse(spec)
    if isinstance(root, Junction) and not root.parts:
        return None
    return MetadataFilter(root)


def _parse(spec: Any, where: str = "the filter") -> Node:
    if not isinstance(spec, Mapping):
        raise InvalidInputError(f"{where} must be a dict such as {_EXAMPLE}, not {spec!r}")
    parts: list[Node] = []
    for key, wanted in spec.items():
        if key in ("$and", "$or"):
            if not isinstance(wanted, (list, tuple)) or (key == "$or" and not wanted):
                raise InvalidInputError(f"{key!r} takes a {'non-empty ' if key == '$or' else ''}list of filters, such as "
                                        f"{{'{key}': [{{'shelf': 'south'}}, {{'year': {{'$gt': 1900}}}}]}}; got {wanted!r}")
            joined = [_parse(part, f"each filter in {key!r}") for part in wanted]
            parts.append(joined[0] if len(joined) == 1 else Junction(key[1:], tuple(joined)))
        elif key == "$not":
            parts.append(Negation(_parse(wanted, "the filter of '$not'")))
        elif not isinstance(key, str) or key.startswith("$"):
            raise InvalidInputError(f"unknown filter operator {key!r}: filters are joined with $and, $or and $not, "
                                    f"and a field's operators go inside it, such as {{'year': {{'$gt': 1900}}}}")
        elif isinstance(wanted, Mapping):
            if not wanted:
                raise InvalidInputError(f"the filter on {key!r} has no operator; give a value, or one of {', '.join(FIELD_OPERATORS)}")
            parts += [_operator(key, op, operand) for op, operand in wanted.items()]
        else:
            parts.append(_operator(key, "$eq", wanted))
    return parts[0] if len(parts) == 1 else Junction("and", tuple(parts))


def _operator(field: str, op: Any, operand: Any) -> Node:
    if op not in FIELD_OPERATORS:
        hint = " ($and, $or and $not join whole filters)" if op in LOGICAL_OPERATORS else ""
        raise InvalidInputError(f"unknown operator {op!r} in the filter on {field!r}{hint}; a field's operators are "
                                f"{', '.join(FIELD_OPERATORS)}")
    name = op[1:]
    if name in ("eq", "ne"):
        if isinstance(operand, (list, tuple, set, frozenset)):
            raise InvalidInputError(f"{op} on {field!r} takes one value, not a list; for one of several values use "
                                    f"{{'{field}': {{'{'$in' if name == 'eq' else '$nin'}': {list(operand)!r}}}}}")
        equal = Condition(field, "eq", _scalar(field, op, operand))
        return equal if name == "eq" else Negation(equal)
    if name in ("in", "nin"):
        if not isinstance(operand, (list, tuple, set, frozenset)) or not operand:
            raise InvalidInputError(f"{op} on {field!r} takes a non-empty list of values, such as {{'{field}': {{'{op}': [2023, 2024]}}}}")
        member = Condition(field, "in", tuple(_scalar(field, op, v) for v in operand))
        return member if name == "in" else Negation(member)
    if name in _COMPARE:
        return Condition(field, name, _comparable(field, op, operand))
    if name == "between":
        if not isinstance(operand, (list, tuple)) or len(operand) != 2:
            raise InvalidInputError(f"$between on {field!r} takes [low, high], such as {{'{field}': {{'$between': [1900, 1950]}}}}")
        return Junction("and", (Condition(field, "gte", _comparable(field, op, operand[0])),
                                Condition(field, "lte", _comparable(field, op, operand[1]))))
    if name == "exists":
        if not isinstance(operand, bool):
            raise InvalidInputError(f"$exists on {field!r} takes true or false, not {operand!r}")
        return Condition(field, "exists", operand)
    if name == "icontains" and not isinstance(operand, str):
        raise InvalidInputError(f"$icontains on {field!r} takes text, not {operand!r}; use $contains for a number or a boolean")
    if operand is None or isinstance(operand, (list, tuple, set, frozenset)):
        raise InvalidInputError(f"{op} on {field!r} takes one value (a list member or a piece of text), not {operand!r}; "
                                f"for several, join them: {{'$and': [{{'{field}': {{'{op}': 'a'}}}}, {{'{field}': {{'{op}': 'b'}}}}]}}")
    return Condition(field, name, _scalar(field, op, operand))


def _scalar(field: str, op: str, value: Any) -> Any:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    raise InvalidInputError(f"{op} on {field!r} compares with text, a number, a boolean or None, not {value!r}")


def _comparable(field: str, op: str, value: Any) -> Any:
    if isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)):
        return value
    raise InvalidInputError(f"{op} on {field!r} compares with a number or text (a year, an ISO date such as "
                            f"'2024-05-01'), not {value!r}")


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


__all__ = ["FIELD_OPERATORS", "LOGICAL_OPERATORS", "OPERATORS", "Condition", "Junction", "MetadataFilter", "Negation", "as_filter"]
