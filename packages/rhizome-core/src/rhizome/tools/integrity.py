"""Check and repair an index directory (``rhizome check IDX``, ``rhizome repair IDX``).

:func:`check_index` reads everything an index holds and reports two kinds of findings:

- *problems*: damage that loses or falsifies data — an unreadable or inconsistent database,
  records and manifest of different indexes, chunk text changed outside Rhizome, vectors that
  are not finite or of the wrong length, chunks without their vector;
- *warnings*: derived state that is out of date and rebuilt without loss — a vector snapshot
  that does not match the records (opening the index already ignores it), a missing manifest
  (its copy is in the records), whole-index work left pending, documents that failed.

It may run beside a writer: the tables it compares come from one read transaction, each vector
snapshot is read before the records it is compared with, and a manifest file that differs from
its copy in the records is a problem only when no writer can be halfway through writing it
(:func:`_compare_manifest`).

:func:`repair_index` rebuilds what is derived from the records — the manifest and every vector
snapshot — and never deletes or changes a record: SQLite is the source of truth. Damage to the
records themselves cannot be repaired here; the report says to restore a backup or re-index.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import numpy as np
from pydantic import BaseModel, Field

from rhizome.core.errors import IndexCorruptError, IndexNotFoundError, IndexStorageError
from rhizome.core.store import outofcore
from rhizome.core.store.backends.sqlite import (
    SQLiteStore,
    connect_records,
    read_transaction,
    snapshot_key,
    writer_active,
    writer_lock,
)
from rhizome.core.store.storage import (
    MANIFEST,
    RECORDS,
    IndexStore,
    Manifest,
    is_url,
    read_manifest,
    stored_chunk_text,
)
from rhizome.core.store.vectors import VectorStore
from rhizome.tools.cli import plural

LISTED = 20
"""Most items of one kind named in a report (the count is always given)."""
LOOKS = 5
PAUSE = 0.05
"""How often, and how many seconds apart, check reads ``manifest.json`` and its copy in the
records when they differ while a writer may be between writing the one and the other."""


class IndexCheck(BaseModel):
    """What :func:`check_index` found (and :func:`repair_index` did)."""

    path: str
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    repaired: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problems (warnings are repairable and lose nothing)."""
        return not self.problems


def check_index(path: str | Path) -> IndexCheck:
    """Verify an index without changing it (it may be open by a writer meanwhile)."""
    if is_url(path):
        return _check_database(str(path))
    path = Path(path)
    report = IndexCheck(path=str(path))
    records = path / RECORDS
    _require_index(path)
    if not records.exists() or records.stat().st_size == 0:
        report.problems.append(f"{records} is {'missing' if not records.exists() else 'empty'}: the records are gone; restore a backup or re-index")
        return report
    with _connect(records, report) as db:
        if db is None:
            return report
        manifest = _compare_manifest(path, db, report)
        with read_transaction(db):  # the tables compared with each other come from one committed state
            stored = _meta(db, "manifest")
            if stored is not None:  # the records' copy is the one written with them
                with contextlib.suppress(ValueError):
                    manifest = Manifest.model_validate(stored)
            dimension = manifest.embedding_dimension if manifest is not None else None
            columns = {r[1] for r in _rows(db, "PRAGMA table_info(chunks)")}
            _check_chunks(lambda sql: _rows(db, sql), "checksum" in columns, report, text="CAST(text AS BLOB)")
            _check_vectors(db, dimension, report)
            _check_work(lambda sql: _rows(db, sql), report)
        if manifest is not None:
            _check_snapshots(path, db, manifest, report)
    if report.warnings and writer_active(path):
        report.warnings.append(
            "a writer has the index open and may be finishing what the warnings above name itself: "
            "run `rhizome check` again once it is closed before you repair anything"
        )
    return report


def repair_index(path: str | Path) -> IndexCheck:
    """Rebuild the manifest (from its copy in the records) and every vector snapshot (from the
    vectors in the records), then check again. Takes the writer lock; deletes no record. A
    database index has nothing derived to rebuild: it is checked."""
    if is_url(path):
        found = check_index(path)
        found.repaired.append("nothing to rebuild: a PostgreSQL index keeps its manifest in its records and searches "
                              "its vectors where they are stored")
        return found
    path = Path(path)
    found = IndexCheck(path=str(path))
    records = path / RECORDS
    _require_index(path)
    if not records.exists() or records.stat().st_size == 0:
        raise IndexCorruptError(f"{records} is missing or empty: nothing to repair from; restore it from a backup or re-index")
    with _connect(records, found) as db:
        stored = _meta(db, "manifest") if db is not None else None
    if found.problems:
        raise IndexCorruptError(
            f"{path} cannot be repaired: its records are damaged ({found.problems[0]}); restore {RECORDS} from a "
            "backup or index the documents again"
        )
    repaired: list[str] = []
    with writer_lock(path):  # a writer may be rewriting the manifest itself
        if stored is not None and _manifest_differs(path, stored):
            with contextlib.suppress(FileNotFoundError):
                (path / MANIFEST).replace(path / (MANIFEST + ".replaced"))
                repaired.append(f"kept the old {MANIFEST} as {MANIFEST}.replaced")
            (path / MANIFEST).write_text(json.dumps(stored, indent=2), encoding="utf-8")
            repaired.append(f"restored {MANIFEST} from the copy in the records")
    store = cast(SQLiteStore, IndexStore.open(path))  # a folder: SQLite; takes the writer lock for the snapshots
    try:
        names = store.rebuild_snapshots()
        repaired.append(f"rebuilt {len(names)} vector snapshots from the records")
        for stale in sorted((path / "vectors").glob("*.npz")) if (path / "vectors").exists() else ():
            if stale.stem not in names:
                stale.unlink()
                repaired.append(f"removed the snapshot of a collection the records do not hold: {stale.name}")
    finally:
        store.close()
    after = check_index(path)
    after.repaired = repaired
    return after


# -- the checks ------------------------------------------------------------------------------


def _require_index(path: Path) -> None:
    """A folder with neither a manifest nor records holds no index: say so, not "damaged"."""
    if not (path / RECORDS).exists() and not (path / MANIFEST).exists():
        raise IndexNotFoundError(f"no Rhizome index at {path} (neither {MANIFEST} nor {RECORDS}); give an index directory")


@contextlib.contextmanager
def _connect(records: Path, report: IndexCheck) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection, after SQLite's full integrity check (``None`` when it fails).
    Each query reads the newest committed state, except inside a :func:`read_transaction`."""
    try:
        db = connect_records(records, readonly=True)
    except sqlite3.Error as exc:
        report.problems.append(f"{records} cannot be opened: {exc}")
        yield None
        return
    try:
        found = [r[0] for r in db.execute("PRAGMA integrity_check(20)")]
        if found != ["ok"]:
            report.problems += [f"{records}: {line}" for line in found]
            yield None
        else:
            yield db
    except sqlite3.DatabaseError as exc:
        report.problems.append(f"{records} is damaged: {exc}; restore a backup or re-index")
        yield None
    finally:
        db.close()


def _rows(db: sqlite3.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if str(exc).startswith(("no such table", "no such column")):  # what an older index does not have
            return []
        raise  # anything else is a problem to report, not an absent table


def _meta(db: sqlite3.Connection, key: str) -> dict | None:
    rows = _rows(db, "SELECT value FROM meta WHERE key = ?", (key,))
    return json.loads(rows[0][0]) if rows else None


def _compare_manifest(path: Path, db: sqlite3.Connection, report: IndexCheck) -> Manifest | None:
    """Check ``manifest.json`` against the records' identity and copy of it; returns the file's
    manifest (the copy when the file cannot be read).

    A writer updates the copy and then the file, so while it works the two may differ for a
    moment. A difference is a problem only when it was seen with no writer holding the
    directory's lock before and after the look, and the file was not replaced during it: then
    no write can have fallen between the two reads. Otherwise check looks again (:data:`LOOKS`
    times), and a difference that outlasts them while the index is open for writing is a
    warning to check again later."""
    for look in range(LOOKS):
        if look:
            time.sleep(PAUSE)
        idle, before = not writer_active(path), _stamp(path / MANIFEST)
        seen = IndexCheck(path=report.path)
        stored, identity = _meta(db, "manifest"), _meta(db, "index")
        manifest = _check_manifest(path, stored, seen)
        differences = _differences(manifest, stored, identity)
        if not differences or (idle and not writer_active(path) and _stamp(path / MANIFEST) == before):
            report.problems += seen.problems + differences
            report.warnings += seen.warnings
            return manifest
    report.warnings += seen.warnings
    report.warnings.append(
        f"{MANIFEST} differed from its copy in the records while a writer had the index open (a writer updates the "
        f"copy and then {MANIFEST}); run `rhizome check` again when no writer has it open"
    )
    return manifest


def _differences(manifest: Manifest | None, stored: dict | None, identity: dict | None) -> list[str]:
    if manifest is not None and identity is not None and (identity.get("id"), identity.get("method")) != (manifest.index_id, manifest.method):
        return [
            f"{MANIFEST} (index {manifest.index_id}, method {manifest.method!r}) does not belong to the records "
            f"(index {identity.get('id')}, method {identity.get('method')!r}); `rhizome repair` restores it from the records"
        ]
    if manifest is not None and stored is not None and (fields := _differing(manifest, stored)):
        return [
            f"{MANIFEST} differs from its copy in the records ({', '.join(fields)}): it was edited or written "
            "halfway; `rhizome repair` restores it from the records"
        ]
    return []


def _stamp(file: Path) -> tuple[int, ...] | None:
    """What changes when a file is replaced or written."""
    try:
        st = file.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _check_manifest(path: Path, stored: dict | None, report: IndexCheck) -> Manifest | None:
    try:
        return read_manifest(path)
    except IndexStorageError as exc:
        # a problem either way: no other command opens the index until the manifest is back
        fix = "" if stored is None or "rhizome repair" in str(exc) else "; `rhizome repair` restores it from the copy in the records"
        report.problems.append(f"{MANIFEST}: {exc}{fix}" if stored else f"{MANIFEST}: {exc}; no copy in the records (an index written before copies)")
        return Manifest.model_validate(stored) if stored else None


def _manifest_differs(path: Path, stored: dict) -> bool:
    try:
        current = read_manifest(path)
    except IndexStorageError:
        return True
    return bool(_differing(current, stored))


def _differing(current: Manifest, stored: dict) -> list[str]:
    """The fields in which the manifest file differs from the records' copy (both are written
    together, so at rest they agree)."""
    try:
        copy = Manifest.model_validate(stored).model_dump(mode="json")
    except ValueError:
        return ["the records' copy"]
    mine = current.model_dump(mode="json")
    return [name for name in mine if mine[name] != copy.get(name)]


def _check_database(url: str) -> IndexCheck:
    """The checks of a PostgreSQL index: identity and manifest (on open), chunk checksums and
    counts, vectors (of the index's length, finite, one per chunk), unfinished work."""
    from rhizome.core.store.backends.postgres import parse_url

    report = IndexCheck(path=parse_url(url)[2])
    try:
        store = IndexStore.open(url, readonly=True)
    except IndexStorageError as exc:
        report.problems.append(str(exc))
        return report
    try:
        with store.read_snapshot():  # the tables compared with each other come from one committed state
            _check_chunks(store.query, True, report)
            dimension = store.embedding_dimension
            for name in store.collections():
                lengths = store.query("SELECT id, vector_dims(vector) FROM vectors WHERE collection = ?", (name,))
                wrong = [vid for vid, n in lengths if dimension is not None and n != dimension]
                if wrong or len({n for _, n in lengths}) > 1:  # the rows cannot be read as one matrix
                    wrong = wrong or [vid for vid, _ in lengths]
                    report.problems.append(f"collection {name!r}: {plural(len(wrong), 'vector')} of the wrong length: {', '.join(wrong[:LISTED])}")
                    continue
                ids, matrix, _ = store.vector_rows(name)
                bad = [ids[i] for i in np.flatnonzero(~np.isfinite(matrix).all(axis=1))] if matrix is not None else []
                if bad:
                    report.problems.append(f"collection {name!r}: {plural(len(bad), 'vector')} {'holds' if len(bad) == 1 else 'hold'} NaN or infinity: {', '.join(bad[:LISTED])}")
            _check_coverage({r[0] for r in store.query("SELECT id FROM chunks")}, set(store.vector_ids("chunks")), dimension, report)
            _check_work(store.query, report)
    finally:
        store.close()
    return report


def _check_work(rows: Callable[[str], list[tuple]], report: IndexCheck) -> None:
    pending = rows("SELECT value FROM meta WHERE key = 'pending_change'")
    if pending and json.loads(pending[0][0]):
        report.warnings.append("whole-index work of an insert or delete is unfinished: run `rhizome index` again to finish it")
    failed = rows("SELECT COUNT(*) FROM document_status WHERE status = 'failed'")
    if failed and failed[0][0]:
        report.warnings.append(f"{plural(failed[0][0], 'document')} failed and {'is' if failed[0][0] == 1 else 'are'} not stored (`rhizome status` lists them)")


_MANY = {"does not match its checksum": "do not match their checksum", "is not valid UTF-8": "are not valid UTF-8"}
"""What :func:`~rhizome.core.store.storage.stored_chunk_text` says of one damaged chunk, said of several."""


def _check_chunks(rows: Callable[[str], list[tuple]], checksums: bool, report: IndexCheck, text: str = "text") -> None:
    """Chunk texts against their checksums (``text``: how the column is read; SQLite reads its
    bytes, so a text that is not UTF-8 is found too), and each document's chunk count."""
    damaged: dict[str, list[str]] = {}
    for cid, stored, checksum in rows(f"SELECT id, {text}, {'checksum' if checksums else repr('')} FROM chunks"):
        why = stored_chunk_text(stored, checksum)[1]
        if why is not None:
            damaged.setdefault(why, []).append(cid)
    for why, chunks in damaged.items():
        report.problems.append(
            f"{plural(len(chunks), 'chunk')} {why if len(chunks) == 1 else _MANY[why]} (changed outside Rhizome): "
            f"{', '.join(chunks[:LISTED])}; insert {'its document' if len(chunks) == 1 else 'their documents'} again "
            "(`rhizome index` of the files the index was built from stores a damaged document again, unchanged or "
            "not), or delete them"
        )
    counts = rows(
        "SELECT d.id FROM documents d LEFT JOIN (SELECT document_id, COUNT(*) n FROM chunks GROUP BY document_id) c"
        " ON c.document_id = d.id WHERE COALESCE(c.n, 0) != d.n_chunks",
    )
    if counts:
        report.problems.append(f"{plural(len(counts), 'document')} {'does' if len(counts) == 1 else 'do'} not have the chunks they were stored with: {', '.join(r[0] for r in counts[:LISTED])}")


def _check_vectors(db: sqlite3.Connection, dimension: int | None, report: IndexCheck) -> None:
    for (name,) in _rows(db, "SELECT DISTINCT collection FROM vectors"):
        rows = _rows(db, "SELECT id, vector FROM vectors WHERE collection = ?", (name,))
        size = 4 * dimension if dimension else len(rows[0][1])
        wrong = [key for key, blob in rows if len(blob) != size]
        if wrong:
            report.problems.append(f"collection {name!r}: {plural(len(wrong), 'vector')} of the wrong length: {', '.join(wrong[:LISTED])}")
        good = [(key, blob) for key, blob in rows if len(blob) == size]
        if good:
            matrix = np.frombuffer(b"".join(b for _, b in good), dtype=np.float32).reshape(len(good), -1)
            bad = [good[i][0] for i in np.flatnonzero(~np.isfinite(matrix).all(axis=1))]
            if bad:
                report.problems.append(f"collection {name!r}: {plural(len(bad), 'vector')} {'holds' if len(bad) == 1 else 'hold'} NaN or infinity: {', '.join(bad[:LISTED])}")
    chunks = {r[0] for r in _rows(db, "SELECT id FROM chunks")}
    vectors = {r[0] for r in _rows(db, "SELECT id FROM vectors WHERE collection = 'chunks'")}
    _check_coverage(chunks, vectors, dimension, report)


def _check_coverage(chunks: set[str], vectors: set[str], dimension: int | None, report: IndexCheck) -> None:
    if vectors or dimension:
        missing, orphans = sorted(chunks - vectors), sorted(vectors - chunks)
        if missing:
            report.problems.append(f"{plural(len(missing), 'chunk')} {'has' if len(missing) == 1 else 'have'} no vector (not to be found by a search): {', '.join(missing[:LISTED])}")
        if orphans:
            report.problems.append(f"{plural(len(orphans), 'chunk vector')} {'has' if len(orphans) == 1 else 'have'} no chunk: {', '.join(orphans[:LISTED])}")


def _check_snapshots(path: Path, db: sqlite3.Connection, manifest: Manifest, report: IndexCheck) -> None:
    """Each snapshot file against the records. The file is read first and the records after
    it: a writer commits before it writes a snapshot (atomically), so a snapshot it rewrites
    meanwhile is never newer than the records it is compared with."""
    folder = path / "vectors"
    for file in sorted(folder.glob("*.npz")) if folder.exists() else ():
        name = file.stem
        try:
            store, meta = VectorStore.load(file)
        except IndexStorageError as exc:
            if file.exists():  # else a writer removed it meanwhile (its collection was emptied)
                report.warnings.append(f"snapshot {file.name} is unreadable ({exc}); it is rebuilt from the records (`rhizome repair`)")
            continue
        with read_transaction(db):
            rows = _rows(db, "SELECT id, vector FROM vectors WHERE collection = ?", (name,))
            generation = _rows(db, "SELECT value FROM meta WHERE key = ?", (f"generation:vectors/{name}",))
            recorded = _rows(db, "SELECT value FROM meta WHERE key = ?", (snapshot_key(name),))
        ids = {r[0] for r in rows}
        out_of_core = outofcore.is_out_of_core(store._index)  # its codes are lossy: the vectors are the records' own
        if out_of_core:
            store = outofcore.OutOfCoreStore.wrap(store, None)
        if meta.get("index_id") != manifest.index_id:
            report.warnings.append(f"snapshot {file.name} belongs to another index; it is ignored and rebuilt (`rhizome repair`)")
        elif set(store.ids()) != ids or (generation and int(generation[0][0]) != meta.get("generation")):
            report.warnings.append(f"snapshot {file.name} does not match the records; it is ignored and rebuilt (`rhizome repair`)")
        elif not out_of_core and (moved := _other_vectors(store, rows)):
            report.problems.append(
                f"snapshot {file.name} holds other vectors than the records under {len(moved)} of its ids "
                f"({', '.join(moved[:LISTED])}): it is damaged; it is ignored on open and rebuilt, `rhizome repair` rewrites it"
            )
        elif not recorded or json.loads(recorded[0][0]).get("digest") != store.digest():
            report.warnings.append(
                f"snapshot {file.name} has no digest of its vectors in the records (written by an older version); "
                "it is rebuilt on each open until `rhizome repair` (or the next write) rewrites it"
            )


def _other_vectors(store: VectorStore, rows: list[tuple]) -> list[str]:
    """The ids under which the snapshot ``store`` holds another vector than the records' ``rows``
    (every pair compared: the full check behind the digest an open verifies)."""
    if not rows:
        return []
    keys = [r[0] for r in rows]
    _, held = store.present(keys)
    if held.shape[1] * 4 != len(rows[0][1]) or any(len(r[1]) != len(rows[0][1]) for r in rows):
        return keys  # lengths the records' own check reports
    records = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    differ = ~((held == records) | (np.isnan(held) & np.isnan(records))).all(axis=1)
    return [keys[i] for i in np.flatnonzero(differ)]


__all__ = ["IndexCheck", "check_index", "repair_index"]
