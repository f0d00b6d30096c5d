"""File uploads: ``POST /{ws}/documents`` with a ``multipart/form-data`` body.

The files go through the kernel's loaders (:func:`rhizome.tools.loaders.load_files`, the same
as ``rhizome index``: .txt .md .html .pdf .docx .csv .jsonl ...), from a private temporary
folder that is gone before the answer is sent; their documents are inserted as a job
(:mod:`rhizome.server.jobs`), so the answer is a 202 with the job and what each file gave. A
request whose files give no document at all is refused (400) with each file's reason, and
nothing is queued. The request body limit (``--max-body``) covers the whole upload: a larger
one is a 413 before it is read (or as soon as it passes the limit).

The JSON form of the same route is :func:`rhizome.server.rest.insert_documents`: the upload
route matches a multipart request only (:class:`MultipartRoute`), so the two share a path.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.routing import Match
from starlette.types import Scope

from rhizome.core.errors import InvalidInputError
from rhizome.server.offload import call_in_thread
from rhizome.server.schemas import JobView
from rhizome.server.security import require_write
from rhizome.server.state import server, workspace

MULTIPART = "multipart/form-data"

MULTIPART_BODY: dict[str, Any] = {"requestBody": {"content": {MULTIPART: {"schema": {
    "type": "object",
    "required": ["files"],
    "properties": {
        "files": {"type": "array", "items": {"type": "string", "format": "binary"},
                  "description": "the files (.txt .md .html .pdf .docx .csv .tsv .jsonl .json); each file's name is its document id"},
        "id_prefix": {"type": "string", "description": "put before every id, with a '/' (team-b/notes.md)"},
        "text_field": {"type": "string", "description": "the column or field holding a CSV row's or JSON record's text"},
        "id_field": {"type": "string", "description": "the column or field holding a row's or record's id"},
    },
}}}}}
"""The multipart form, added to the OpenAPI description of ``POST /{ws}/documents`` beside its JSON body."""


class FileReport(BaseModel):
    name: str
    documents: int = Field(description="documents the file gave (a PDF: one per page with text; a table: one per row)")
    error: str | None = Field(None, description="why the file gave none")
    warnings: list[str] = Field(default_factory=list, description="what the loader changed (an encoding guessed, bytes replaced)")


class UploadReceipt(JobView):
    files: list[FileReport] = Field(description="each uploaded file and what it gave")


class MultipartRoute(APIRoute):
    """A route that matches a multipart request only: any other request goes on to the next
    route of the same path (the JSON insert)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and not _is_multipart(scope):
            return Match.NONE, {}
        return match, child


def _is_multipart(scope: Scope) -> bool:
    content_type = dict(scope.get("headers") or []).get(b"content-type", b"")
    return content_type.split(b";", 1)[0].strip().lower() == MULTIPART.encode()


router = APIRouter(route_class=MultipartRoute, dependencies=[Depends(require_write)])


@router.post("/{ws}/documents", response_model=UploadReceipt, status_code=202, tags=["documents"], include_in_schema=False)
async def upload_documents(
    request: Request, ws: str,
    files: list[UploadFile] = File(...),
    id_prefix: str | None = Form(None),
    text_field: str | None = Form(None),
    id_field: str | None = Form(None),
) -> UploadReceipt:
    """Insert the documents of uploaded files as a background job (``GET /jobs/{id}``)."""
    space = workspace(request, ws)
    documents, report = await call_in_thread(lambda: load_uploads(files, id_prefix=id_prefix, text_field=text_field, id_field=id_field))
    job = server(request).jobs.submit_insert(space, documents)
    return UploadReceipt(**job.model_dump(), files=report)


def safe_name(given: str | None) -> str:
    """The file name an upload is stored and known by: the last part of what the client sent
    (no folder, so never a path out of the upload folder)."""
    name = (given or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not name or name in (".", "..") or name.startswith(".") or "\x00" in name:
        raise InvalidInputError(
            f"an uploaded file is named {given!r}; send each file with a name such as notes.md (its type comes from the suffix)"
        )
    return name


def load_uploads(files: list[UploadFile], **options: Any) -> tuple[list[Any], list[FileReport]]:
    """The documents of the uploaded ``files`` and what each gave (blocking: writes them to a
    temporary folder and reads them with the loaders). No document at all is an
    :class:`~rhizome.core.errors.InvalidInputError` listing why."""
    from rhizome.tools.loaders import SUFFIXES, load_files

    names = [safe_name(f.filename) for f in files]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidInputError(f"two uploaded files are named {twice[0]!r}; a file's name is its document id, so give each its own")
    with tempfile.TemporaryDirectory(prefix="rhizome-upload-") as temporary:
        root = Path(temporary).resolve()
        folder = str(root)
        for name, upload in zip(names, files):
            with (root / name).open("wb") as out:
                upload.file.seek(0)
                shutil.copyfileobj(upload.file, out)
        result = load_files(root, **options)
    given = {str(root / n): n for n in names}
    per_file: dict[str, list[Any]] = {n: [] for n in names}
    for document in result.documents:
        name = given.get(document.metadata.get("source", ""), document.id)
        document.metadata["source"] = name  # the file's name, not the temporary folder it was read from
        per_file.setdefault(name, []).append(document)
    unsupported = {given.get(f, f) for f in result.unsupported}
    errors = {given.get(f, f): _hide(reason, folder) for f, reason in result.unreadable.items()}
    for name in unsupported:
        errors[name] = f"no loader reads this type; readable: {', '.join(sorted(SUFFIXES))}"
    report = [FileReport(name=n, documents=len(per_file.get(n, [])), error=errors.get(n),
                         warnings=[_hide(w, folder) for w in result.warnings.get(str(root / n), [])]) for n in names]
    if not result.documents:
        why = "; ".join(f"{r.name}: {r.error}" for r in report if r.error) or "the files hold no text"
        raise InvalidInputError(f"the uploaded files gave no document ({why})")
    return result.documents, report


def _hide(text: str, folder: str) -> str:
    """A loader's message without the temporary folder's path."""
    return text.replace(folder + "/", "").replace(folder, "the upload")
