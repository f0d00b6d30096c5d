"""Settings read from the environment, checked alike wherever they are read."""

from __future__ import annotations

import os

from rhizome.core.errors import ConfigurationError


def positive_int(name: str, unit: str) -> int | None:
    """The environment variable ``name`` as a positive whole number of ``unit``, or ``None``
    when it is unset or blank; ``ConfigurationError`` (naming it) for anything else."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a whole number of {unit}; fix or unset it") from None
    if value < 1:
        raise ConfigurationError(f"{name} must be a positive number of {unit}, got {value}")
    return value


__all__ = ["positive_int"]
