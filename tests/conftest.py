"""Shared test setup: no test may reach a real model server or write to the user's cache."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full", action="store_true", default=False,
        help="run the slow sweeps in full (every kill point of the fault-injection cases, every call "
             "stack of the generation-read check): for release checks; the default runs a small sample",
    )


def pytest_configure(config: pytest.Config) -> None:
    _temporary_files_in_memory(config)
    _share_bytecode(config)  # its folder in the run's temporary folder (removed at the end in either case)


MEMORY = "/dev/shm"
MEMORY_FREE = 4 << 30  # bytes free there, at least: a run writes about 1 GB at its peak (PostgreSQL's data included)


def _temporary_files_in_memory(config: pytest.Config) -> None:
    """The suite writes thousands of small indexes (SQLite files that sync at each commit,
    snapshots written and renamed, PostgreSQL's data folder, removed again): on a disk, many
    workers waited for it (a third of the wall time of ``tests/core`` on a 2-core machine). For
    this run, where the machine has a memory file system with room (``/dev/shm``, at least
    4 GB free) and no ``TMPDIR`` was set, every temporary file of the run and of its child
    processes (``tmp_path``, ``tempfile``) goes to a new folder there, removed at the end. Set
    ``TMPDIR`` to keep them on disk (and a failed test's files after the run)."""
    if os.environ.get("TMPDIR") or hasattr(config, "workerinput") or not os.path.isdir(MEMORY):
        return  # chosen by the user, or the controller already arranged it, or no such file system
    try:
        disk = os.statvfs(MEMORY)
        if disk.f_bavail * disk.f_frsize < MEMORY_FREE:
            return
        folder = tempfile.mkdtemp(prefix="rhizome-tests-", dir=MEMORY)
    except OSError:
        return
    # reachable by PostgreSQL, which pgserver runs as another user when the suite runs as root
    os.chmod(folder, 0o711)
    os.environ["TMPDIR"] = tempfile.tempdir = folder  # this process, the xdist workers and every child
    # removed when this process exits, after multiprocessing removed its own folders in it (a
    # fork server's, see rhizome.tools.faults), which it does at exit with priority -100
    from multiprocessing import util

    util.Finalize(None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, exitpriority=-1000)


def _share_bytecode(config: pytest.Config) -> None:
    """Where Python is told not to write bytecode (``PYTHONDONTWRITEBYTECODE``, ``-B``), every
    process compiles each module it imports from source, and the suite starts hundreds of them
    (xdist workers, fault-injection children, CLI and example runs): on such a machine that was
    more than half of the suite's CPU. For this run, the processes write their bytecode to one
    temporary folder (``sys.pycache_prefix``), read it from there, and the folder is removed at
    the end: each module is compiled once per run, and nothing is written beside the sources."""
    if not sys.dont_write_bytecode or hasattr(config, "workerinput"):
        return  # bytecode is written as usual, or the controller already arranged it
    folder = tempfile.mkdtemp(prefix="rhizome-pyc-")
    sys.pycache_prefix, sys.dont_write_bytecode = folder, False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = folder  # xdist workers and every child process
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.fixture(scope="session")
def full(pytestconfig: pytest.Config) -> bool:
    """Whether this run was asked for the full sweeps (``--full``)."""
    return bool(pytestconfig.getoption("--full"))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path_factory):
    # a port nobody listens on: code that forgets to be offline fails fast instead of finding a
    # developer's real Ollama
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("RHIZOME_CACHE_DIR", str(tmp_path_factory.mktemp("rhizome-cache")))
    monkeypatch.delenv("RHIZOME_LLM", raising=False)
    monkeypatch.delenv("RHIZOME_EMBED", raising=False)


# The suite's longest tests, longest first (seconds alone on the 2-core machine the suite is timed
# on, at load average 3): a test whose node id starts with one of these starts before every other
# in a parallel run, in this order. pytest-xdist hands the tests out in the order collected, and a
# long test handed out near the end left the other workers idle while it ran (the tests of
# tests/test_examples.py were collected last). A test missing here only starts later; the
# xdist_group groups (UMAP's compile, Ray) still start before all of these.
LONGEST_FIRST = (
    "tests/postgres/test_conformance_postgres.py::TestEveryMethodOnPostgres::test_a_write_committed_during_a_query_is_seen_by_the_next[archrag]",  # 22
    "tests/postgres/test_conformance_postgres.py::TestEveryMethodOnPostgres::test_a_write_committed_during_a_query_is_seen_by_the_next[graphrag]",  # 17
    "tests/server/test_server_load.py::",  # 17
    "tests/cli/test_cli.py::test_demo_uses_ollama_when_it_is_running",  # 13
    "tests/benchmarks/test_harness.py::test_heaps_corpus_grows_its_vocabulary_as_a_power_of_the_corpus",  # 12
    "tests/server/test_server_mcp.py::test_stdio_",  # 9, 8, 4: a rhizome mcp process each
    "tests/test_examples.py::",  # 5-8 each: a process each
    "tests/conformance/test_conformance.py::TestEveryMethod::test_a_write_committed_during_a_query_is_seen_by_the_next[graphrag]",  # 7
    "tests/cli/test_cli.py::test_console_script_runs_the_offline_demo",  # 6
    "tests/conformance/test_conformance.py::TestEveryMethod::test_a_write_committed_during_a_query_is_seen_by_the_next[archrag]",  # 6
    "tests/postgres/test_conformance_postgres.py::TestEveryMethodOnPostgres::test_a_write_committed_during_a_query_is_seen_by_the_next",  # 2-6
    "tests/server/test_server_page.py::",  # 3-5 each, the browser's start included
    "tests/cli/test_cli.py::test_a_slow_ollama_is_waited_for_and_reported_as_slow",  # 4
    "tests/postgres/test_postgres_faults.py::test_a_killed_call",  # 3-4
    "tests/server/test_server_agent.py::test_openai_client_sees_the_agent",  # 4
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """In every second xdist worker, import what the test modules import, in the reverse of the
    order the collection will: the workers start together and each collects every test module,
    and each compiled every module it imported (the shared bytecode folder is new for each run)
    at the same time as the other, in the same order. This way each compiles about half and
    reads the rest from the folder the other wrote to. What fails to import here (a helper on a
    path a test module sets up itself) is left to the collection."""
    worker = getattr(session.config, "workerinput", {}).get("workerid", "")
    if not worker.startswith("gw") or int(worker[2:]) % 2 == 0:
        return
    import ast
    import importlib
    from pathlib import Path

    files: set[Path] = set()
    for arg in session.config.args:  # the paths asked for (the testpaths when none)
        path = Path(session.config.invocation_params.dir, arg.split("::")[0])
        files.update(path.rglob("test_*.py") if path.is_dir() else [path] if path.suffix == ".py" else [])
    names: list[str] = []
    for path in sorted(files):
        tree = ast.parse(path.read_bytes())
        for node in tree.body:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module)
    for name in reversed(names):
        if name not in sys.modules and not name.startswith("tests"):
            with contextlib.suppress(Exception):
                importlib.import_module(name)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # one process: the order does not matter
    _longest_first(items)
    if config.getvalue("loadgroup"):
        _keep_groups(items)


def _longest_first(items: list[pytest.Item]) -> None:
    """The tests of :data:`LONGEST_FIRST` first, in its order (the others as collected). Each
    worker sorts its own collection the same way, as xdist requires."""

    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: the collected order within a rank


def _keep_groups(items: list[pytest.Item]) -> None:
    """Keep ``--dist loadgroup``'s groups (``xdist_group``: tests that share a costly start-up,
    run in one worker). pytest-xdist 3.8 names a test's group by renaming it ``<id>@<group>``
    through an attribute pytest 9.2 no longer reads, and the groups are lost
    (pytest-dev/pytest-xdist#1386); this renames it through the one that pytest reads. It does
    nothing where xdist's own renaming took effect."""
    from _pytest.nodeid import NodeId

    for item in items:
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")})
        if groups and "@" not in item.nodeid.rpartition("]")[2] and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


def pytest_sessionfinish(session, exitstatus):
    # a selection (-k/-m) that matches no test is not a failure of the suite
    if exitstatus == 5:
        session.exitstatus = 0


@pytest.fixture(params=["lists-inline", "lists-as-rows"])
def every_list_layout(request: pytest.FixtureRequest):
    """Runs a test twice: with the shipped limit of list items an entity-graph profile keeps
    inside its record (test corpora's profiles are short: their lists stay inside), and with
    none, so that every profile keeps its citations and fragments as rows
    (rhizome.core.graph.lists). Set by hand, not with monkeypatch: a test's monkeypatch.undo()
    must not reset it."""
    from rhizome.core.graph import lists

    shipped = lists.INLINE
    lists.INLINE = shipped if request.param == "lists-inline" else 0
    yield lists.INLINE
    lists.INLINE = shipped


@pytest.fixture
def corpus_folder(tmp_path):
    """A folder of the conformance kit's documents, one text file each."""
    from rhizome.tools.testing import CORPUS

    folder = tmp_path / "docs"
    folder.mkdir()
    for doc in CORPUS:
        (folder / f"{doc.id}.txt").write_text(doc.text, encoding="utf-8")
    return folder


class PostgresServer:
    """A PostgreSQL server with pgvector, run by the ``pgserver`` package for this test session;
    each :meth:`url` is the location of a new index (a schema of its own)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._names = itertools.count()
        self._watch: Any = None

    def url(self, prefix: str = "t") -> str:
        return f"{self.base}{'&' if '?' in self.base else '?'}schema={prefix}_{os.getpid()}_{next(self._names)}"

    def clients(self) -> int:
        """How many client connections the server holds (this one included)."""
        import psycopg

        if self._watch is None:
            self._watch = psycopg.connect(self.base, autocommit=True)
        row = self._watch.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()


@pytest.fixture
def persist_cut_short(monkeypatch):
    """``persist_cut_short(index, target)``: ``index.persist(target)`` stopped after the copy's
    rows are written, before they commit (as a killed process stops it); raises nothing."""
    from rhizome.core.store.storage import IndexStore

    copy_rows = IndexStore._copy_rows

    def cut(self, db, target):
        copy_rows(self, db, target)
        raise KeyboardInterrupt

    def run(index, target) -> None:
        with monkeypatch.context() as patched:
            patched.setattr(IndexStore, "_copy_rows", cut)
            with pytest.raises(KeyboardInterrupt):
                index.persist(target)

    return run


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One server for the whole session, started on first use (a few seconds), stopped and
    removed at the end. Its data lives in a new folder right under the run's temporary
    directory (in memory where it can be: see ``_temporary_files_in_memory``): run as root,
    pgserver runs the server as another user, which must be able to reach it."""
    import pgserver

    server = pgserver.get_server(tempfile.mkdtemp(prefix="rhizome-pg-"), cleanup_mode="delete")
    # a server for tests, removed at the end: no flush to disk at each commit (no test survives
    # a crash of the machine; a killed client or a rolled-back transaction behaves the same)
    server.psql("ALTER SYSTEM SET fsync = off;\nALTER SYSTEM SET synchronous_commit = off;\n"
                "ALTER SYSTEM SET full_page_writes = off;\nSELECT pg_reload_conf();\n")
    handle = PostgresServer(server.get_uri())
    yield handle
    handle.close()
    # pgserver stops it at the process's exit, but an xdist worker ends without running exit
    # handlers: every run left a server behind
    server.cleanup()
