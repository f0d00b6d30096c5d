"""Where a command may write: the one rule for every path Rhizome writes on a user's say-so
(an export's files, a copy of an index, a new index, a saved classifier, a predictions file).

Never inside an index directory (a folder holding a manifest or records, or any folder below
one: a file written there could replace the index's own); never over a file a writer holds (the
writer lock of :mod:`rhizome.core.store.backends.sqlite`) or over an index's records wherever they
are (a hard link); never over an existing file unless ``replace`` (``--force``). Checked before
any work is done, so a refused command has written nothing.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from rhizome.core.errors import IndexLockedError, InvalidInputError
from rhizome.core.store.storage import MANIFEST, RECORDS, file_in_the_way


def is_index_directory(folder: Path) -> bool:
    """Whether ``folder`` holds an index's records, or a manifest that is an index's (another
    tool's ``manifest.json`` does not make a folder an index)."""
    if (folder / RECORDS).exists():
        return True
    try:
        return '"method"' in (folder / MANIFEST).read_text(encoding="utf-8", errors="replace")[:65536]
    except OSError:
        return False


def index_directory_of(path: str | Path) -> Path | None:
    """The index directory ``path`` lies in (the nearest folder above it that
    :func:`is_index_directory`; symbolic links followed), or ``None``."""
    for folder in Path(path).resolve().parents:
        if is_index_directory(folder):
            return folder
    return None


def _is_records(path: Path) -> bool:
    """Whether the file ``path`` is an index's records database (by its content, not its name)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(16) != b"SQLite format 3\x00":
                return False
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            return bool(db.execute("SELECT 1 FROM meta WHERE key IN ('index', 'manifest') LIMIT 1").fetchall())
    except (OSError, sqlite3.Error):
        return False


def _held(path: Path) -> None:
    from rhizome.core.store.backends.sqlite import writer_active

    if writer_active(path):
        raise IndexLockedError(f"{path} is held by a process writing an index; write to another path")


def check_output_files(paths: Iterable[str | Path], *, replace: bool = False, what: str = "the output") -> list[Path]:
    """Refuse (:class:`InvalidInputError`, :class:`IndexLockedError`) to write the files
    ``paths`` where the module's rule forbids it; returns them as paths."""
    files = [Path(p) for p in paths]
    for path in files:
        if (folder := index_directory_of(path)) is not None:
            raise InvalidInputError(
                f"{path} is inside the index directory {folder}; {what} there could overwrite the index's own "
                "files: write it to another folder"
            )
        if path.is_dir():
            raise InvalidInputError(f"{path} is a folder; name the file to write, e.g. {path / 'out.txt'}")
        if path.exists():
            _held(path)
            if _is_records(path):
                raise InvalidInputError(f"{path} holds an index's records; {what} must not replace them: write it to another path")
            if not replace:
                raise InvalidInputError(f"{path} exists; choose another --out, or pass --force (replace=True) to replace it")
    return files


def check_output_folder(path: str | Path, *, what: str, index: bool = False) -> Path:
    """Refuse to write the folder ``path`` (``what`` says what goes there) when a file stands
    in its way, when it lies inside an index directory, when a writer holds it, or — unless
    ``index`` (a location for an index: one there is opened, not replaced) — when it is an
    index directory itself."""
    folder = Path(path)
    if (blocker := file_in_the_way(folder)) is not None:
        raise InvalidInputError(f"cannot write {what} to {folder}: {blocker} is a file, not a directory; give a directory")
    if (outer := index_directory_of(folder)) is not None:
        raise InvalidInputError(
            f"{folder} is inside the index directory {outer}; {what} there could overwrite the index's own files: "
            "choose a folder outside it"
        )
    if not index and is_index_directory(folder):
        raise InvalidInputError(f"{folder} is an index directory; {what} must not go there: choose another folder")
    if folder.exists() and not index:
        _held(folder)
    return folder


__all__ = ["check_output_files", "check_output_folder", "index_directory_of", "is_index_directory"]
