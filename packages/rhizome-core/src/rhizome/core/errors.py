"""Typed errors. Every message says what happened and what to do about it."""

from __future__ import annotations


class RhizomeError(Exception):
    """Base class of every error Rhizome raises on purpose."""


class ConfigurationError(RhizomeError, ValueError):
    """A parameter or model specification is invalid."""


class InvalidInputError(RhizomeError, ValueError):
    """Input documents, queries or files cannot be used as given."""


class ModelError(RhizomeError):
    """A model call failed."""


class ModelUnavailableError(ModelError, ConnectionError):
    """The model server cannot be reached."""


class ModelNotFoundError(ModelError, LookupError):
    """The server is up but does not have the requested model."""


class ModelTimeoutError(ModelError, TimeoutError):
    """A model call did not finish within its timeout."""


class PromptTooLongError(ModelError, ValueError):
    """A prompt would not fit the model's context window with room for the answer; it is
    refused before it is sent (a server would silently cut its front)."""


class ModelOutputError(ModelError, ValueError):
    """The model kept returning output that does not match the requested schema."""

    def __init__(self, message: str, *, last_output: str | None = None) -> None:
        super().__init__(message)
        self.last_output = last_output


class EmptyExtractionError(ModelOutputError):
    """An extraction returned nothing for text that should yield something."""


class IndexStorageError(RhizomeError):
    """Base class of index storage errors."""


class IndexNotFoundError(IndexStorageError, FileNotFoundError):
    """The directory holds no Rhizome index."""


class IndexFormatError(IndexStorageError):
    """The index was written by an incompatible format version or is damaged."""


class IndexMismatchError(IndexStorageError):
    """The index was built with another embedding model, dimension or method."""


class IndexLockedError(IndexStorageError):
    """Another process is writing to this index."""


__all__ = [
    "ConfigurationError",
    "EmptyExtractionError",
    "IndexFormatError",
    "IndexLockedError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "IndexStorageError",
    "InvalidInputError",
    "ModelError",
    "ModelNotFoundError",
    "ModelOutputError",
    "ModelTimeoutError",
    "ModelUnavailableError",
    "RhizomeError",
]
