"""Field types for the JSON that chat models fill in, lenient where leniency is safe.

Small local models produce harmless near misses — ``"7"`` or ``7.5`` for an integer from 1 to
10, ``12`` for a score capped at 10, ``"a, b"`` for a list of strings. Rejecting those costs a
retry and teaches nothing; these types accept them (the JSON schema sent to the model still
states the exact range and type) and leave real nonsense to fail validation, so the model layer
retries with the error shown.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_SEPARATORS = re.compile(r"[,;\n]")


def clamped(low: float, high: float, *, integer: bool = False, default: float | None = None) -> Any:
    """A number in ``[low, high]``: numeric strings are parsed (their first number), values
    outside the range are clamped, integers are rounded. Anything else fails validation, or
    becomes ``default`` when one is given."""

    def coerce(value: Any) -> Any:
        if isinstance(value, str):
            found = _NUMBER.search(value)
            value = float(found.group()) if found else value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = min(high, max(low, value))
            return int(round(value)) if integer else float(value)
        return value if default is None else default

    kind = int if integer else float
    return Annotated[kind, Field(ge=low, le=high), BeforeValidator(coerce)]


def _text_list(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in _SEPARATORS.split(value) if part.strip()]
    if isinstance(value, list):
        return [str(item).strip() for item in value if item is not None and str(item).strip()]
    return value


TextList = Annotated[list[str], BeforeValidator(_text_list)]
"""A list of non-empty strings; one string separated by commas, semicolons or new lines is
split, ``null`` is an empty list."""


class LenientModel(BaseModel):
    """A JSON answer's model that ignores keys it does not know (a small model's extra
    commentary costs no retry)."""

    model_config = ConfigDict(extra="ignore")


__all__ = ["LenientModel", "TextList", "clamped"]
