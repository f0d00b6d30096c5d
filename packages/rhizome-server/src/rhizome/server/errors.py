"""The server's own errors and how every error becomes a response.

A typed error of the kernel (:class:`~rhizome.core.errors.RhizomeError`) is answered with a 4xx
or 5xx status and its message, which says what to do; the locations of the workspaces are
replaced by their names first, so no path or URL of the server's disk leaves it. Anything else
is a bug or a broken disk: the client gets a generic 500 and the log gets the traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rhizome.core.errors import (
    ConfigurationError,
    IndexClosedError,
    IndexLockedError,
    IndexStorageError,
    InvalidInputError,
    ModelError,
    ModelNotFoundError,
    ModelTimeoutError,
    ModelUnavailableError,
    PromptTooLongError,
    RhizomeError,
)

log = logging.getLogger("rhizome.server")


class ServerError(RhizomeError):
    """An error of the server's own, answered with :attr:`status` and its message."""

    status = 400

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class WorkspaceNotFoundError(ServerError, LookupError):
    """A request named a workspace the server was not started with."""

    status = 404


class WorkspaceKindError(ServerError):
    """A request asked a workspace for what its kind does not do (a classifier to search, an
    index to classify)."""

    status = 400


class ModelNameError(ServerError, LookupError):
    """A chat request named a model that is no workspace of this server."""

    status = 404


class JobNotFoundError(ServerError, LookupError):
    """A job id this server never gave (or forgot: it keeps the latest jobs only)."""

    status = 404


class UnauthorizedError(ServerError, PermissionError):
    """The request lacks the API key, or gave another one."""

    status = 401


class ReadOnlyError(ServerError, PermissionError):
    """A write to a server started with ``--read-only``."""

    status = 403


STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (ServerError, 400),  # its own status, see status_of
    (PromptTooLongError, 400),
    (InvalidInputError, 400),
    (ConfigurationError, 400),
    (IndexLockedError, 409),
    (IndexClosedError, 503),
    (ModelUnavailableError, 503),
    (ModelNotFoundError, 503),
    (ModelTimeoutError, 504),
    (ModelError, 502),
)
"""The status of each typed error, the first matching class winning. Storage errors other than
those listed are 500s: their messages may name files, and the client cannot fix them."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a typed error whose message the client may read, else ``None``."""
    if isinstance(exc, ServerError):
        return exc.status
    for kind, status in STATUS:
        if isinstance(exc, kind):
            return status
    return None


class Redactor:
    """Replaces the locations the server was given (index directories, database URLs, the
    root) by what a client may see (the workspace's name)."""

    def __init__(self, replacements: Iterable[tuple[str, str]] = ()) -> None:
        # the longest first, so a directory is replaced before the root that holds it
        self.pairs = sorted({(a, b) for a, b in replacements if a}, key=lambda p: -len(p[0]))

    def __call__(self, text: str) -> str:
        for secret, shown in self.pairs:
            text = text.replace(secret, shown)
        return text


GENERIC = "the server failed to handle this request; its log has the details"


def public_message(exc: BaseException, redact: Callable[[str], str]) -> tuple[int, str]:
    """The status and message a client is told about ``exc`` (a generic 500 for anything that
    is not a typed error a client can act on; the traceback goes to the log)."""
    status = status_of(exc)
    if status is None:
        if isinstance(exc, IndexStorageError):
            log.error("index storage error: %s", exc)
        else:
            log.exception("unexpected error", exc_info=exc)
        return 500, GENERIC
    return status, redact(str(exc))


def error_body(request: Request, status: int, message: str, kind: str) -> dict[str, object]:
    """The error in the shape the route's clients read: Ollama's ``{"error": "..."}`` under
    ``/api/``, OpenAI's ``{"error": {"message", "type", "code"}}`` elsewhere."""
    if request.url.path.startswith("/api/"):
        return {"error": message}
    return {"error": {"message": message, "type": kind, "code": status}}


def install(app: object, redact: Callable[[str], str]) -> None:
    """Register the handlers on a FastAPI ``app``."""
    from fastapi import FastAPI

    assert isinstance(app, FastAPI)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        body = error_body(request, exc.status_code, str(exc.detail), "http_error")
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error.get('loc', ()))}: {error.get('msg')}" for error in exc.errors()
        )
        return JSONResponse(error_body(request, 422, f"invalid request: {problems}", "invalid_request_error"), status_code=422)

    @app.exception_handler(RhizomeError)
    async def typed_error(request: Request, exc: RhizomeError) -> JSONResponse:
        status, message = public_message(exc, redact)
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, UnauthorizedError) else None
        kind = type(exc).__name__ if status_of(exc) else "server_error"
        return JSONResponse(error_body(request, status, message, kind), status_code=status, headers=headers)

    @app.exception_handler(Exception)
    async def any_error(request: Request, exc: Exception) -> JSONResponse:
        status, message = public_message(exc, redact)
        return JSONResponse(error_body(request, status, message, "server_error"), status_code=status)


class DocumentNotFoundError(ServerError, LookupError):
    """A delete named a document the workspace does not hold."""

    status = 404
