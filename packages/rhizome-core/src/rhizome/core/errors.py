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


class ModelServerError(ModelError):
    """The model server kept failing after the retries — error or busy answers (5xx, 429),
    dropped connections, an answer stream cut short: the server's failure, not the request's."""


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


class IndexClosedError(IndexStorageError):
    """The index object was closed (``close()``, or the end of its ``with`` block): open the
    index again to use it."""


class IndexUnavailableError(IndexStorageError, ConnectionError):
    """The database server that holds the index cannot be reached (or the connection broke)."""


class IndexWriteError(IndexStorageError, OSError):
    """The index's files cannot be written: no permission, a read-only file system, a full
    disk or a failing device. What was committed before is kept."""


class IndexCorruptError(IndexFormatError):
    """A file of the index is damaged or does not belong to it (a truncated or garbled
    database, records of another index, chunk text changed outside Rhizome)."""


class IndexDamageWarning(UserWarning):
    """A search left out a passage whose stored text is damaged (changed outside Rhizome, or
    not UTF-8) instead of failing; the warning names it and how to store it again."""


class MemoryBudgetError(RhizomeError, MemoryError):
    """A step of a build would take the process past its memory budget (``memory_gb``,
    ``RHIZOME_MEMORY_GB``): raised before the step allocates anything or stores anything, with
    what it needs, what the process holds and what to do (a larger budget, a directory or
    PostgreSQL instead of memory, smaller batches)."""

    def __init__(self, message: str, *, step: str = "", needed: int = 0, held: int = 0, budget: int = 0) -> None:
        super().__init__(message)
        self.step, self.needed, self.held, self.budget = step, needed, held, budget


SERVER_FAILURES = (ModelUnavailableError, ModelNotFoundError, ModelTimeoutError)
"""Model errors that say the server cannot serve at all, not this request: see :func:`fails_alone`."""


def fails_alone(exc: BaseException) -> bool:
    """Whether ``exc`` costs only the item (document, report, summary) whose model call raised
    it: an answer that stayed invalid after the retries (or that the caller refused), a prompt
    too long for the context window, a request the server refused, and a server still busy or
    failing after the transport retries (:class:`ModelServerError`: a flaky or overloaded
    server serves the next request, and a smaller batch may fit its memory). A server that
    cannot serve (:data:`SERVER_FAILURES`) is not — unreachable, lacking the model, no answer
    within the timeout (a hung server would make every request wait it out): every item would
    fail alike, so the work stops at once instead of sending every request again (and a re-run
    resumes)."""
    return isinstance(exc, ModelError) and not isinstance(exc, SERVER_FAILURES)


__all__ = [
    "ConfigurationError",
    "EmptyExtractionError",
    "IndexClosedError",
    "IndexCorruptError",
    "IndexDamageWarning",
    "IndexFormatError",
    "IndexLockedError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "IndexStorageError",
    "IndexUnavailableError",
    "IndexWriteError",
    "InvalidInputError",
    "MemoryBudgetError",
    "ModelError",
    "ModelNotFoundError",
    "ModelOutputError",
    "ModelServerError",
    "ModelTimeoutError",
    "ModelUnavailableError",
    "fails_alone",
    "RhizomeError",
    "SERVER_FAILURES",
]
