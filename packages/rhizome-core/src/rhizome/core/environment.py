"""Settings read from the environment, checked alike wherever they are read."""

from __future__ import annotations

import os

from rhizome.core.errors import ConfigurationError


def positive_number(name: str, unit: str, parse: type[int] | type[float] = int) -> float | None:
    """The environment variable ``name`` as a positive number of ``unit`` (a whole one when
    ``parse`` is ``int``), or ``None`` when it is unset or blank; ``ConfigurationError`` (naming
    it and what to do) for anything else."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    kind = "whole number" if parse is int else "number"
    try:
        value = parse(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a {kind} of {unit}; fix or unset it") from None
    if not value > 0:
        raise ConfigurationError(f"{name} must be a positive {kind} of {unit}, got {raw!r}; fix or unset it")
    return value


def positive_int(name: str, unit: str) -> int | None:
    """:func:`positive_number` of a whole number."""
    value = positive_number(name, unit, int)
    return None if value is None else int(value)


__all__ = ["positive_int", "positive_number"]
