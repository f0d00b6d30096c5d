"""Fault injection for every method: processes killed mid-write, damaged files, a reader next
to a writer. Run by the conformance kit (``tests/conformance/test_faults.py``, a few cases per
method) and by ``benchmarks/fault_injection.py`` (many kill points, the fault table in
docs/results/faults.md). Each case returns an :class:`Outcome` instead of asserting, so both can
count what held.

A *kill* case runs an insert (or a delete) of the kit's corpus in a child process that kills
itself with SIGKILL at a chosen point — inside the k-th transaction before it commits, right
after it commits, or while the k-th vector snapshot is being written — then runs the same call
again in this process and compares the index with a clean build, row for row, and counts the
model answers paid twice (calls of the re-run plus answers kept in the model-call cache, beyond
what a clean build pays). Builds use one document per batch, so the offline extractor's
corpus-level weights do not depend on where a run was cut.

The kill cases and the reader case also run on an index in PostgreSQL: pass ``server``, the URL
of a database with pgvector (without ``schema``); each case makes a schema of its own there and
drops it afterwards. A PostgreSQL index writes no snapshot files, so its kills land before or
after a commit only, and the damaged-file cases have no PostgreSQL counterpart.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import sqlite3
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rhizome.core.errors import IndexLockedError, IndexStorageError, RhizomeError
from rhizome.core.store.storage import MANIFEST, RECORDS, is_url, load_index
from rhizome.core.store.vectors import VectorStore

CHILD_TIMEOUT = 60.0
KILL_POINTS = ("before-commit", "after-commit", "snapshot")


@dataclass
class Outcome:
    """One case on one method: whether the guarantee held, and what was seen."""

    family: str
    case: str
    method: str
    held: bool
    detail: str = ""
    backend: str = "sqlite"
    """``sqlite`` (an index directory) or ``postgres`` (a schema of a PostgreSQL database)."""


Location = Path | str
"""An index directory, or a ``postgresql://`` URL naming a schema."""


@contextlib.contextmanager
def place(server: str | None = None) -> Iterator[Location]:
    """A fresh location for one case's index: a directory in a temporary folder, or (with
    ``server``, a PostgreSQL URL) a new schema of that database, dropped afterwards."""
    if server is None:
        with tempfile.TemporaryDirectory() as folder:
            yield Path(folder) / "idx"
        return
    from rhizome.core.store.backends.postgres import connect, parse_url

    url = f"{server}{'&' if '?' in server else '?'}schema=faults_{uuid.uuid4().hex[:16]}"
    try:
        yield url
    finally:
        raw = connect(url)
        try:
            raw.execute(f'DROP SCHEMA IF EXISTS "{parse_url(url)[1]}" CASCADE')
        finally:
            raw.close()


def _backend(server: str | None) -> str:
    return "sqlite" if server is None else "postgres"


def _kit() -> Any:
    from rhizome.tools.testing import IndexConformance  # the kit needs pytest; imported on use

    return IndexConformance()


def build(method: str, path: Location | None, documents: Any = None, **options: Any) -> Any:
    """An index of the kit's corpus (or ``documents``) built like the conformance kit builds
    it, one document per batch."""
    from rhizome.tools.testing import CORPUS

    return _kit().build(method, path=path, documents=CORPUS if documents is None else documents, batch_size=1, **options)


def reopen(method: str, path: Location, **options: Any) -> Any:
    from rhizome.tools.testing import IndexConformance, index_class

    return index_class(method).load(path, llm=IndexConformance.model(method), batch_size=1, **options)


def rows(index: Any) -> dict[str, list[tuple]]:
    """Everything an index stores that a clean build must equal, table by table."""
    return index.store.contents()


def _diff(got: dict[str, list[tuple]], want: dict[str, list[tuple]]) -> str:
    return "; ".join(f"{t}: {len(got.get(t, []))} rows, clean build {len(want.get(t, []))}" for t in sorted(set(got) | set(want)) if got.get(t) != want.get(t))


# -- child processes -------------------------------------------------------------------------
@functools.cache
def _processes() -> Any:
    """How the cases start their child processes. Where the system has multiprocessing's fork
    server, forked from it: it imports this module, the kit and every registered method once,
    and each child starts from those imports in milliseconds, where a new interpreter paid
    about 1.5 s of CPU importing them again. Elsewhere a new interpreter (``spawn``). Chosen
    once per process."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    from rhizome.core.store.storage import method_registry

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["rhizome.tools.faults", "rhizome.tools.testing", *sorted({e.module for e in method_registry().values()})])
    return context


class _Child:
    """A child process running ``target(*args)`` as a new interpreter started here would: with
    this process's environment and working folder as they are now, what it prints kept in a
    file (:meth:`output`), and ``lines`` a pipe on which it may send this process messages."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        context = _processes()
        self.folder = tempfile.TemporaryDirectory()
        self.log = Path(self.folder.name) / "output"
        self.lines, sender = context.Pipe(duplex=False)
        self.process = context.Process(target=_child_main, args=(dict(os.environ), os.getcwd(), str(self.log), sender, target, args), daemon=True)
        self.process.start()
        sender.close()  # the child holds the other end: when it exits, reading here ends

    def messages(self) -> Iterator[Any]:
        """What the child sends, until it closes the pipe (or exits)."""
        while True:
            try:
                yield self.lines.recv()
            except EOFError:
                return

    def wait(self, timeout: float = CHILD_TIMEOUT) -> int | None:
        """The child's exit code (``-signal.SIGKILL`` when it was killed so), ``None`` if it is
        still running after ``timeout`` seconds."""
        self.process.join(timeout)
        return self.process.exitcode

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def close(self) -> None:
        """Kill the child if it still runs, and remove its files."""
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        self.process.close()
        self.lines.close()
        self.folder.cleanup()


def _child_main(environment: dict[str, str], folder: str, log: str, lines: Any, target: Callable[..., None], args: tuple[Any, ...]) -> None:
    os.environ.clear()
    os.environ.update(environment)
    tempfile.tempdir = None  # from TMPDIR, as the parent set it
    os.chdir(folder)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    target(lines, *args)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _killed_operation(lines: Any, method: str, where: str, operation: str, point: str, k: int) -> None:
    """The child of a kill case: ``operation`` on the index at ``where``, killed with SIGKILL
    at the ``k``-th ``point`` (a transaction before or after its commit, a snapshot write)."""
    from rhizome.core.store.storage import IndexStore

    path: Location = where if "://" in where else Path(where)
    seen = {"n": 0}

    def reached() -> bool:
        seen["n"] += 1
        return seen["n"] == k

    if operation == "delete":
        build(method, path).close()
    if point in ("before-commit", "after-commit"):
        execute = IndexStore.transaction

        @contextlib.contextmanager
        def transaction(self: Any) -> Iterator[Any]:
            with execute(self) as db:
                yield db
                if point == "before-commit" and reached():
                    _die()
            if point == "after-commit" and reached():
                _die()

        setattr(IndexStore, "transaction", transaction)  # noqa: B010 - this process only
    else:
        save = VectorStore.save

        def slow_save(self: Any, file: Any, meta: Any = None) -> Any:
            if reached():
                Path(file).parent.mkdir(parents=True, exist_ok=True)
                Path(str(file) + ".tmp").write_bytes(b"partial")
                _die()
            return save(self, file, meta)

        setattr(VectorStore, "save", slow_save)  # noqa: B010 - this process only
    index = reopen(method, path) if operation == "delete" else build(method, path, documents=[])
    operate(index, operation)
    print("finished", flush=True)


def operate(index: Any, operation: str) -> None:
    """The call a kill case interrupts and then repeats."""
    from rhizome.tools.testing import CORPUS

    if operation == "insert":
        index.insert(CORPUS)
    else:
        index.delete([d.id for d in CORPUS[::2]])


def count_points(method: str, operation: str, server: str | None = None) -> dict[str, int]:
    """How many transactions and snapshot writes the operation makes (where a kill can land),
    in a directory or (``server``) in PostgreSQL."""
    from rhizome.core.store.storage import IndexStore
    from rhizome.core.store.vectors import VectorStore

    counts = {"commits": 0, "snapshots": 0}
    with place(server) as path, _counting(IndexStore, "transaction", counts, "commits"), _counting(VectorStore, "save", counts, "snapshots"):
        if operation == "delete":
            build(method, path).close()
            counts.update(commits=0, snapshots=0)
            index = reopen(method, path)
        else:
            index = build(method, path, documents=[])
        operate(index, operation)
        index.close()
    return counts


@contextlib.contextmanager
def _counting(owner: Any, name: str, counts: dict[str, int], key: str) -> Iterator[None]:
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)
    try:
        yield
    finally:
        setattr(owner, name, original)


def clean_build(method: str, operation: str, server: str | None = None) -> tuple[dict[str, list[tuple]], int]:
    """Rows of an uninterrupted run of ``operation`` and the model calls it pays."""
    from rhizome.tools.testing import CORPUS, FailingChatModel

    with place(server) as path:
        model = FailingChatModel()
        index = build(method, path, llm=model, cache=False)
        if operation == "delete":
            index.delete([d.id for d in CORPUS[::2]])
        out = rows(index), model.usage.calls
        index.close()
    return out


def kill_case(method: str, operation: str, point: str, k: int, clean: tuple[dict[str, list[tuple]], int], server: str | None = None) -> Outcome:
    """Kill a child at the ``k``-th ``point`` of ``operation``, run the operation again here,
    and compare with ``clean`` (from :func:`clean_build` on the same backend)."""
    case = f"kill {operation} {point} #{k}"
    crash = functools.partial(Outcome, "crash", case, method, backend=_backend(server))
    with place(server) as path:
        child = _Child(_killed_operation, method, str(path), operation, point, k)
        try:
            code, output = child.wait(), child.output()
        finally:
            child.close()
        if code != -signal.SIGKILL:
            return crash(False, f"the child was not killed (exit {code}): {output[-300:]}")
        cached = _cached_answers(path)
        try:
            index = reopen(method, path) if _holds_index(path) else build(method, path, documents=[])
            operate(index, operation)
        except RhizomeError as exc:
            return crash(False, f"the re-run failed: {type(exc).__name__}: {exc}")
        got, calls = rows(index), index.llm.usage.calls if index.llm is not None else 0
        index.close()
    want, price = clean
    if got != want:
        return crash(False, "differs from a clean build: " + _diff(got, want))
    repaid = calls + cached - price
    return crash(repaid <= 0, f"{max(repaid, 0)} model answers paid twice" if repaid > 0 else "equal to a clean build, 0 paid twice")


def _holds_index(path: Location) -> bool:
    if is_url(path):
        from rhizome.core.store.backends.postgres import PostgresStore

        return PostgresStore.holds_index(path)
    return (Path(path) / MANIFEST).exists()


def _cached_answers(path: Location) -> int:
    """The model answers kept in the index's model-call cache (its file, or its table)."""
    if is_url(path):
        from rhizome.core.store.backends.postgres import connect

        raw = connect(str(path))
        try:
            if raw.execute("SELECT to_regclass('model_calls')").fetchone()[0] is None:
                return 0
            return int(raw.execute("SELECT COUNT(*) FROM model_calls WHERE kind = 'chat'").fetchone()[0])
        finally:
            raw.close()
    cache = Path(path) / "model-calls.sqlite"
    if not cache.exists():
        return 0
    with contextlib.closing(sqlite3.connect(cache)) as db:
        return int(db.execute("SELECT COUNT(*) FROM calls WHERE kind = 'chat'").fetchone()[0])


# -- damaged files ---------------------------------------------------------------------------
def _answers(method: str, path: Path, **options: Any) -> Any:
    index = reopen(method, path, **options)
    try:
        return _kit().results(index)
    finally:
        index.close()


def _typed(fn: Callable[[], Any]) -> str | None:
    """``None`` when ``fn`` raised a typed storage error naming the index; else what happened."""
    try:
        fn()
    except IndexStorageError:
        return None
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"
    return "no error"


def _files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


def _truncate_snapshot(method: str, path: Path, expected: Any) -> str | None:
    snapshot = sorted((path / "vectors").glob("*.npz"))[0]
    snapshot.write_bytes(snapshot.read_bytes()[: snapshot.stat().st_size // 2])
    return None if _answers(method, path) == expected == _answers(method, path, readonly=True) else "other results"


def _foreign_snapshot(method: str, path: Path, expected: Any) -> str | None:
    from rhizome.core.types import Document

    other = path.parent / "other"
    build(method, other, documents=[Document(id=f"x{i}", text=f"Gull Island ferry log {i}.") for i in range(8)]).close()
    for snapshot in (other / "vectors").glob("*.npz"):
        if (path / "vectors" / snapshot.name).exists():
            (path / "vectors" / snapshot.name).write_bytes(snapshot.read_bytes())
    return None if _answers(method, path) == expected else "results changed with another index's snapshot"


def _damaged_graphs(method: str, path: Path, expected: Any) -> str | None:
    """The query graphs a writer kept (``graphs/*.npz``; none for a method without them) cut
    short, then replaced by another index's: a cache, read by no process while wrong."""
    from rhizome.core.types import Document

    for saved in sorted((path / "graphs").glob("*.npz")):
        saved.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    if _answers(method, path, readonly=True) != expected:
        return "other results with the query graphs cut short"
    other = path.parent / "other"
    build(method, other, documents=[Document(id=f"x{i}", text=f"Gull Island ferry log {i}.") for i in range(8)]).close()
    _answers(method, other)  # a writer's queries keep its graphs
    for saved in (other / "graphs").glob("*.npz"):
        (path / "graphs" / saved.name).write_bytes(saved.read_bytes())
    return None if _answers(method, path, readonly=True) == _answers(method, path) == expected else "results changed with another index's query graphs"


def rotate_snapshot(snapshot: Path) -> None:
    """File every vector of the snapshot ``snapshot`` under the next id, keeping its ids,
    generation and index id: only a check of the (id, vector) pairs can tell."""
    store, meta = VectorStore.load(snapshot)
    keys = store.ids()
    rotated = VectorStore(store.dimension)
    rotated.add(keys, store.vectors(keys[1:] + keys[:1]))
    rotated.save(snapshot, meta=meta)


def _rotated_snapshots(method: str, path: Path, expected: Any) -> str | None:
    for snapshot in sorted((path / "vectors").glob("*.npz")):
        rotate_snapshot(snapshot)
    if _answers(method, path, readonly=True) != expected:
        return "a reader served other results"
    return None if _answers(method, path) == expected else "other results"


def _dimension_edited(method: str, path: Path, expected: Any) -> str | None:
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["embedding_dimension"] = int(manifest["embedding_dimension"]) + 8
    (path / MANIFEST).write_text(json.dumps(manifest))
    try:
        _answers(method, path)
    except IndexStorageError as exc:
        return None if "rhizome repair" in str(exc) else f"the error does not advise `rhizome repair`: {exc}"
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"
    return "no error"


def _records_gone(empty: bool) -> Callable[[str, Path, Any], str | None]:
    def case(method: str, path: Path, expected: Any) -> str | None:
        records = path / RECORDS
        records.write_bytes(b"") if empty else records.unlink()
        before = _files(path)
        for opener in (lambda: reopen(method, path), lambda: reopen(method, path, readonly=True), lambda: load_index(path, offline=True)):
            problem = _typed(opener)
            if problem:
                return problem
        return None if _files(path) == before else "files were changed"

    return case


def _garbled_records(method: str, path: Path, expected: Any) -> str | None:
    records = path / RECORDS
    data = bytearray(records.read_bytes())
    for offset in range(4096, len(data), 4096):
        data[offset : offset + 64] = b"\xa5" * 64
    records.write_bytes(bytes(data))
    before = _files(path)
    problem = _typed(lambda: reopen(method, path).insert("The harbour master retired in 1920."))
    return problem or (None if _files(path) == before else "the damaged file was written to")


def _manifest_gone(method: str, path: Path, expected: Any) -> str | None:
    from rhizome.core.naive import VectorIndex

    (path / MANIFEST).unlink()
    return _typed(lambda: VectorIndex("hashing:64", path=path)) or _typed(lambda: load_index(path))


def _method_relabelled(method: str, path: Path, expected: Any) -> str | None:
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["method"] = "naive" if method != "naive" else "lightrag"
    (path / MANIFEST).write_text(json.dumps(manifest))
    return _typed(lambda: load_index(path, offline=True))


def _chunk_damaged(new_text: str) -> Callable[[str, Path, Any], str | None]:
    """The chunk texts of the corpus's first document changed to ``new_text`` (SQL) outside
    Rhizome: every search still answers, leaving those passages out, ``rhizome check`` names
    them, and inserting the (unchanged) documents again restores the clean build's results."""

    def case(method: str, path: Path, expected: Any) -> str | None:
        from rhizome.core.errors import IndexDamageWarning
        from rhizome.tools.integrity import check_index
        from rhizome.tools.testing import CORPUS

        with contextlib.closing(sqlite3.connect(path / RECORDS)) as db, db:
            db.execute(f"UPDATE chunks SET text = {new_text} WHERE document_id = ?", (CORPUS[0].id,))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", IndexDamageWarning)
                _answers(method, path)
        except Exception as exc:
            return f"a search raised {type(exc).__name__}: {exc}"
        if check_index(path).ok:
            return "rhizome check did not flag it"
        index = reopen(method, path)
        try:
            report = index.insert(CORPUS)
            if report.restored != [CORPUS[0].id]:
                return f"inserting the documents again stored again {report.restored}, not the damaged one"
            if _kit().results(index) != expected:
                return "inserting the documents again did not restore the clean build's results"
        finally:
            index.close()
        return None if check_index(path).ok else "rhizome check still flags the index after the insert"

    return case


def _lock_file_deleted(method: str, path: Path, expected: Any) -> str | None:
    holder = _Child(_holding, method, str(path))
    try:
        if next(holder.messages(), None) != "open":
            return "the holder did not open the index"
        for stray in path.glob(".writer.lock"):
            stray.unlink()
        try:
            reopen(method, path).close()
        except IndexLockedError:
            return None
        return "a second writer got in"
    finally:
        holder.close()


def _holding(lines: Any, method: str, where: str) -> None:
    """The child of the lock case: opens the index for writing, says so, and holds it."""
    index = reopen(method, Path(where))  # noqa: F841 - held open until the process is killed
    lines.send("open")
    time.sleep(CHILD_TIMEOUT)


CORRUPTIONS: dict[str, Callable[[str, Path, Any], str | None]] = {
    "truncated snapshot": _truncate_snapshot,
    "snapshot of another index": _foreign_snapshot,
    "snapshot vectors under rotated ids": _rotated_snapshots,
    "query graphs cut short or of another index": _damaged_graphs,
    "manifest dimension edited": _dimension_edited,
    "records missing": _records_gone(empty=False),
    "records empty": _records_gone(empty=True),
    "records garbled": _garbled_records,
    "manifest missing, new index over it": _manifest_gone,
    "manifest names another method": _method_relabelled,
    "chunk text edited": _chunk_damaged("text || ' (edited)'"),
    "chunk text not UTF-8": _chunk_damaged("CAST(X'4B656C70FF' AS TEXT)"),
    "lock file deleted under a writer": _lock_file_deleted,
}


_CLEAN: dict[str, tuple[tempfile.TemporaryDirectory[str], Any]] = {}


def _clean_index(method: str) -> tuple[Path, Any]:
    """A clean build of the kit's corpus (closed) and its results, made once in a process: each
    damage case works on a copy of it, byte for byte what a build of its own would write."""
    if method not in _CLEAN:
        folder = tempfile.TemporaryDirectory()
        index = build(method, Path(folder.name) / "idx")
        expected = _kit().results(index)
        index.close()
        _CLEAN[method] = (folder, expected)
    folder, expected = _CLEAN[method]
    return Path(folder.name) / "idx", expected


def corruption_case(method: str, name: str) -> Outcome:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "idx"
        clean, expected = _clean_index(method)
        shutil.copytree(clean, path)
        try:
            problem = CORRUPTIONS[name](method, path, expected)
        except Exception as exc:  # a case must report, never crash the run
            problem = f"raised {type(exc).__name__}: {exc}"
        if problem is None and name not in ("lock file deleted under a writer", "truncated snapshot", "snapshot of another index",
                                            "chunk text edited", "chunk text not UTF-8",  # these check and then repair
                                            "query graphs cut short or of another index"):  # a cache, rebuilt: nothing to flag
            from rhizome.tools.integrity import check_index

            with contextlib.suppress(Exception):
                found = check_index(path)
                if found.ok and not found.warnings:
                    problem = "rhizome check did not flag it"
    return Outcome("corruption", name, method, problem is None, problem or "typed error or correct results")


# -- a reader next to a writer ---------------------------------------------------------------
def _writing(lines: Any, method: str, where: str) -> None:
    """The writer of the reader case: inserts the corpus one document per call, sending each
    document's id once its insert returned."""
    from rhizome.tools.testing import CORPUS

    index = reopen(method, where if "://" in where else Path(where))
    for document in CORPUS:
        index.insert([document])
        lines.send(document.id)
    index.close()


def reader_case(method: str, server: str | None = None) -> Outcome:
    """A writer process inserts the corpus one document per call while a read-only index here,
    opened on the empty index, looks each document up as soon as its insert returned."""
    from rhizome.core.aio import run_sync
    from rhizome.core.retrieval.contract import query_vector, vector_search

    concurrency = functools.partial(Outcome, "concurrency", "reader next to a writer", method, backend=_backend(server))
    with place(server) as path:
        build(method, path, documents=[]).close()
        reader = reopen(method, path, readonly=True)
        writer = _Child(_writing, method, str(path))
        missed: list[str] = []
        try:
            for doc_id in writer.messages():
                chunks = reader.store.chunks_of(doc_id)
                if not chunks:
                    missed.append(doc_id)
                    continue
                vector = run_sync(query_vector(reader, chunks[0].text))  # as every retriever does
                found = vector_search(reader.store, reader.CHUNK_COLLECTION, vector, 3)
                if chunks[0].id not in {key for key, _ in found}:
                    missed.append(doc_id)
            code, output = writer.wait(), writer.output()
        except Exception as exc:
            return concurrency(False, f"raised {type(exc).__name__}: {exc}")
        finally:
            writer.close()
            reader.close()
    if code != 0:
        return concurrency(False, f"the writer failed (exit {code}): {output[-300:]}")
    return concurrency(not missed, f"missed {missed}" if missed else "every committed document found")


def kill_points(method: str, operation: str, n: int, seed: int = 0, server: str | None = None) -> list[tuple[str, int]]:
    """``n`` kill points spread over the operation's commits and snapshot writes (seeded)."""
    import random

    counts = count_points(method, operation, server)
    choices = [(p, k) for p in KILL_POINTS for k in range(1, counts["snapshots" if p == "snapshot" else "commits"] + 1)]
    random.Random(f"{seed}-{method}-{operation}").shuffle(choices)
    return choices[:n]


__all__ = ["CORRUPTIONS", "Outcome", "clean_build", "place", "corruption_case", "kill_case", "kill_points", "reader_case"]
