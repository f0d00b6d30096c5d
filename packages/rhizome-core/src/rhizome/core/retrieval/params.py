"""Retriever settings: the keywords of ``index.as_retriever(mode=..., **settings)`` as a pydantic model.

Each retrieval mode declares the model of its settings
(:attr:`~rhizome.core.retrieval.contract.BaseRetriever.params_class`): a subclass of
:class:`RetrieverParams` whose fields carry the paper's defaults and say where they come from,
as an index's configuration does (:mod:`rhizome.core.index.config`). The retriever validates the
keywords it is made with once, into ``retriever.params``, so a bad setting fails when the
retriever is made, not inside a search; ``params_class.model_json_schema()`` lists a mode's
settings with their defaults, bounds and descriptions.

Validation is strict, as a setting typed by hand should be: ``True`` is not an integer,
``"no"`` is not a switch (``bool("no")`` is true) and ``"0.2"`` is not a number; an integer is
a number, a list gives a tuple, and a numpy scalar counts as the Python value it holds. A bad
setting is a :class:`~rhizome.core.errors.ConfigurationError` naming the setting, the value
given and what the setting allows; an unknown one lists the settings the mode takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.errors import PydanticInvalidForJsonSchema
from pydantic_core import ErrorDetails

from rhizome.core.errors import ConfigurationError

P = TypeVar("P", bound="RetrieverParams")


class RetrieverParams(BaseModel):
    """The settings of one retrieval mode (none here: a mode subclasses it with its own fields,
    each documented with its default and where that comes from)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, validate_default=True, use_attribute_docstrings=True)

    def __init__(self, subject: str | None = None, /, **data: Any) -> None:
        """The settings ``data``, validated; a bad one is a :class:`ConfigurationError` whose
        message starts with ``subject`` (e.g. ``"the local mode"``; default: the model's name)."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigurationError(explain(type(self), exc, data, subject or type(self).__name__)) from None

    @classmethod
    def of(cls: type[P], settings: Mapping[str, Any], *, subject: str | None = None) -> P:
        """``settings`` validated; an error's message starts with ``subject``, as the
        constructor's does."""
        return cls(subject, **settings)

    @model_validator(mode="before")
    @classmethod
    def _python_scalars(cls, data: Any) -> Any:
        """A numpy scalar (``np.int64(3)``, ``np.True_``) as the Python value it holds."""
        if isinstance(data, dict):
            return {key: value.item() if isinstance(value, np.generic) else value for key, value in data.items()}
        return data


def explain(model: type[BaseModel], exc: ValidationError, given: Mapping[str, Any], subject: str) -> str:
    """The errors of ``exc`` in words: per setting, what it allows and the value given (from
    the model's JSON schema); the message of a rule a validator states; for an unknown
    setting, the settings there are."""
    try:
        schema = model.model_json_schema()["properties"]
    except PydanticInvalidForJsonSchema:  # a field JSON cannot describe (a callable): pydantic's words
        schema = {}
    problems: dict[str, str] = {}
    unknown: list[str] = []
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else ""
        if error["type"] == "extra_forbidden":
            unknown.append(name)
        elif name in problems:
            continue  # one line per setting (a union fails once per member)
        elif error["type"] == "value_error":
            problems[name] = str(error.get("ctx", {}).get("error", error["msg"]))
        elif name in schema:
            problems[name] = f"{name} must be {allowed(schema[name])}, got {given.get(name, error['input'])!r}"
        else:
            problems[name] = _pydantic_words(error)
    out = [f"{subject}: {'; '.join(problems.values())}"] if problems else []
    if unknown:
        settings = ", ".join(model.model_fields) or "none"
        named = ", ".join(repr(name) for name in unknown)
        out.append(f"{subject} has no setting{'s' if len(unknown) > 1 else ''} {named}; its settings are {settings}")
    return ". ".join(out)


def _pydantic_words(error: ErrorDetails) -> str:
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def allowed(schema: Mapping[str, Any]) -> str:
    """What a JSON schema allows, in words: ``a positive integer``, ``a number between 0 and
    1``, ``True or False``, ``one of 'a', 'b'``..."""
    if "anyOf" in schema:
        return " or ".join(allowed(option) for option in schema["anyOf"])
    if "enum" in schema:
        values = [repr(v) for v in schema["enum"]]
        return values[0] if len(values) == 1 else f"one of {', '.join(values)}"
    kind = schema.get("type")
    if kind == "null":
        return "None"
    if kind == "boolean":
        return "True or False"
    if kind == "string":
        return "a string"
    if kind == "array":
        items = schema.get("items")
        listed = "a non-empty list" if schema.get("minItems", 0) >= 1 else "a list"
        return f"{listed} ({allowed(items)} each)" if items else listed
    if kind in ("integer", "number"):
        return _number(kind, schema)
    return "valid"


def _number(kind: str, schema: Mapping[str, Any]) -> str:
    noun = "an integer" if kind == "integer" else "a number"
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    unbounded_above = high is None and below is None
    if unbounded_above and ((kind == "integer" and low == 1 and above is None) or (above == 0 and low is None)):
        return f"a positive {noun.split()[-1]}"
    if low is not None and high is not None and above is None and below is None:
        return f"{noun} between {low:g} and {high:g}"
    bounds = [f"{word} {value:g}" for word, value in (("at least", low), ("above", above), ("at most", high), ("below", below)) if value is not None]
    return f"{noun} of {' and '.join(bounds)}" if bounds else noun


__all__ = ["RetrieverParams", "allowed", "explain"]
