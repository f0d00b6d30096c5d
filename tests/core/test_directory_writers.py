"""What happens around one index directory besides its own writer: two creations at once, a
directory moved under its writer, a copy cut short, copies sharing a linked records file,
files that cannot be written (permissions, a full disk) and odd directory names
(docs/storage.md, "One writer, many readers")."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rhizome.core.errors import IndexLockedError, IndexWriteError
from rhizome.core.naive import VectorIndex
from rhizome.core.store.backends.sqlite import SQLiteConnection, SQLiteStore
from rhizome.core.store.storage import MANIFEST, RECORDS, has_index, load_index
from rhizome.core.types import Document
from rhizome.tools.integrity import check_index, repair_index

DOCS = [Document(id=f"d{i}", text=f"Report {i}: the {w} ferry crossed to {p} at dawn.") for i, (w, p) in enumerate(
    [("red", "Oslo"), ("blue", "Bergen"), ("green", "Tromso"), ("grey", "Alesund"), ("white", "Bodo")]
)]
OTHER = [Document(id=f"x{i}", text=f"Memo {i}: the {w} train left {p} at noon.") for i, (w, p) in enumerate(
    [("night", "Narvik"), ("day", "Kiruna"), ("mail", "Lulea")]
)]


def stored_ids(path: Path) -> list[str]:
    index = load_index(path, readonly=True)
    try:
        return index.store.document_ids()
    finally:
        index.close()


_SLOW_CREATOR = textwrap.dedent("""
    import sys
    from rhizome.core.store.backends.sqlite import SQLiteStore
    from rhizome.core.naive import VectorIndex
    from rhizome.core.types import Document

    write = SQLiteStore._write_manifest_copy
    def paused(self, text):  # the first manifest write waits for the test's word
        if not getattr(paused, "done", False):
            paused.done = True
            print("records made, manifest not yet written", flush=True)
            sys.stdin.readline()
        write(self, text)
    SQLiteStore._write_manifest_copy = paused
    index = VectorIndex(path=sys.argv[1])
    index.insert([Document(id="a", text="Mira Holt runs the ferry.")])
    print(index.store.document_ids(), flush=True)
""")


def test_a_second_creation_of_one_directory_is_refused_without_harming_the_first(tmp_path):
    """Defect: a creation cleared what it took for a creation cut short (records without a
    manifest) before it took the writer lock, so it deleted the records another process was
    creating at that moment: both failed, and the directory kept a manifest without records."""
    target = tmp_path / "idx"
    first = subprocess.Popen([sys.executable, "-c", _SLOW_CREATOR, str(target)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "records made, manifest not yet written"
        with pytest.raises(IndexLockedError, match="open for writing elsewhere"):
            VectorIndex(path=target)
        out, err = first.communicate("go\n", timeout=120)
    finally:
        first.kill()
    assert first.returncode == 0, err
    assert out.strip() == "['a']"
    assert stored_ids(target) == ["a"] and check_index(target).ok


def test_a_writer_whose_directory_was_moved_writes_nothing_at_the_old_path(tmp_path):
    """Defect: after its directory was moved, a writer's persist() wrote its manifest over the
    manifest of the index now at the old path (and a path left empty failed untyped)."""
    old, moved = tmp_path / "idx", tmp_path / "idx.moved"
    writer = VectorIndex(path=old)
    writer.insert(DOCS)
    old.rename(moved)
    with pytest.raises(IndexLockedError, match="moved, deleted or replaced"):
        writer.persist()
    newcomer = VectorIndex(path=old)
    newcomer.insert(OTHER)
    newcomer.close()
    manifest = (old / MANIFEST).read_bytes()
    snapshots = {p.name: p.read_bytes() for p in (old / "vectors").iterdir()}
    for write in (writer.persist, lambda: writer.insert(DOCS[:1] + OTHER[:1])):
        with pytest.raises(IndexLockedError, match="moved, deleted or replaced"):
            write()
    writer.close()
    assert (old / MANIFEST).read_bytes() == manifest
    assert {p.name: p.read_bytes() for p in (old / "vectors").iterdir()} == snapshots
    assert stored_ids(old) == ["x0", "x1", "x2"] and check_index(old).ok
    assert stored_ids(moved) == [d.id for d in DOCS] and check_index(moved).ok


def test_a_copy_cut_short_holds_no_index_and_runs_again(tmp_path, persist_cut_short):
    """Defect: persist() to a new directory wrote the copy's manifest (with the source's
    counts) before its records; cut short, it left an empty index that `check` passed and a
    second persist() refused."""
    source = VectorIndex()
    source.insert(DOCS)
    persist_cut_short(source, tmp_path / "copy")
    assert not has_index(tmp_path / "copy")
    source.persist(tmp_path / "copy")
    assert stored_ids(tmp_path / "copy") == [d.id for d in DOCS] and check_index(tmp_path / "copy").ok
    assert json.loads((tmp_path / "copy" / MANIFEST).read_text())["stats"] == {"documents": 5, "chunks": 5}


def test_copies_of_a_directory_that_share_a_linked_records_file_take_turns(tmp_path):
    """Defect: records.sqlite kept on another disk behind a symbolic link got around the
    directory lock: a copy of the directory (which copies the link) let a second writer write
    the same records; and a new index replaced a link to an empty file by a file of its own."""
    disk, first = tmp_path / "disk", tmp_path / "idx"
    disk.mkdir()
    (disk / "records.sqlite").touch()
    first.mkdir()
    (first / RECORDS).symlink_to(disk / "records.sqlite")
    writer = VectorIndex(path=first)
    writer.insert(DOCS)
    assert (first / RECORDS).is_symlink() and (disk / "records.sqlite").stat().st_size > 0
    shutil.copytree(first, tmp_path / "copy", symlinks=True)
    with pytest.raises(IndexLockedError, match="links to"):
        VectorIndex(path=tmp_path / "copy")
    writer.close()
    second = VectorIndex(path=tmp_path / "copy")  # once the first writer is done, it may write
    second.insert(OTHER)
    second.close()
    assert stored_ids(first) == [d.id for d in DOCS + OTHER]


def test_a_database_that_cannot_be_written_is_a_typed_error_and_keeps_what_was_stored(tmp_path, monkeypatch):
    """Defect: a read-only records file or directory gave a raw sqlite3 error, and a full disk
    (an I/O error) was called damage — "restore it from a backup" — for a sound file."""
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(DOCS[:2])
    upsert = SQLiteConnection.upsert
    for pragma, said in (("PRAGMA query_only = ON", "readonly"), ("PRAGMA max_page_count = 1", "full")):
        def failing(self, table, columns, key, rows, pragma=pragma):
            self.raw.execute(pragma)  # SQLite's own refusal, as from a read-only file or a full disk
            return upsert(self, table, columns, key, rows)

        monkeypatch.setattr(SQLiteConnection, "upsert", failing)
        with pytest.raises(IndexWriteError, match=f"cannot write .*{RECORDS}.*{said}.*what was committed is kept") as caught:
            index.insert(DOCS[2:])
        assert isinstance(caught.value, OSError)
        monkeypatch.setattr(SQLiteConnection, "upsert", upsert)
        index.store.db.raw.execute("PRAGMA query_only = OFF")
    index.close()
    assert stored_ids(tmp_path / "idx") == ["d0", "d1"] and check_index(tmp_path / "idx").ok
    again = VectorIndex(path=tmp_path / "idx")
    again.insert(DOCS)
    again.close()
    assert stored_ids(tmp_path / "idx") == [d.id for d in DOCS]


@pytest.mark.parametrize("blocked", [MANIFEST, "vectors/chunks.npz"])
def test_a_file_beside_the_records_that_cannot_be_written_is_a_typed_error(tmp_path, blocked):
    """Defect: a manifest or vector snapshot that could not be written (a read-only directory,
    a full disk) raised a raw PermissionError / OSError."""
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(DOCS[:2])
    (tmp_path / "idx" / f"{blocked}.tmp").mkdir()  # the file cannot be made (IsADirectoryError)
    with pytest.raises(IndexWriteError, match=f"cannot write .*{Path(blocked).name}.*Nothing stored is lost"):
        index.insert(DOCS[2:])
    index.close()
    (tmp_path / "idx" / f"{blocked}.tmp").rmdir()
    assert sorted(stored_ids(tmp_path / "idx")) == [d.id for d in DOCS]  # committed before the file
    assert repair_index(tmp_path / "idx").ok  # an old manifest is restored from the records


_READER = textwrap.dedent("""
    import sys
    from rhizome.tools.integrity import check_index, repair_index
    from rhizome.core.store.storage import load_index
    index = load_index(sys.argv[1], readonly=True)
    print(len(index.as_retriever(k=2).retrieve("blue ferry Bergen")), check_index(sys.argv[1]).ok, flush=True)
""")


def test_a_reader_opens_an_index_in_a_directory_it_may_not_write(tmp_path):
    """Defect: a read-only open of an index on read-only media or of another user's index
    failed with a raw "attempt to write a readonly database", and `check` called it damaged:
    SQLite's readers of a WAL database need to create its shared-memory file."""
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(DOCS)
    index.close()
    command = [sys.executable, "-c", _READER, str(tmp_path / "idx")]
    if os.geteuid() == 0:  # root writes anywhere: drop the capabilities that let it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: the directory's mode cannot apply")
        caps = "-dac_override,-dac_read_search,-fowner"
        command = ["setpriv", "--bounding-set", caps, "--inh-caps", caps, *command]
    modes = {p: p.stat().st_mode for p in (tmp_path / "idx", *(tmp_path / "idx").rglob("*"))}
    for p in modes:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "True"]


@pytest.mark.parametrize("name", ["notes#2", "what?", "100%"])
def test_a_directory_name_with_uri_characters_keeps_its_records_inside(tmp_path, name):
    """Defect: the records were opened through a file: URI built from the raw path, so a '#'
    or '?' in a directory name cut the path short: the records were written to a file outside
    the index directory and the index could not be opened again."""
    target = tmp_path / name / "idx"
    index = VectorIndex(path=target)
    index.insert(DOCS)
    index.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert (target / RECORDS).stat().st_size > 0
    assert stored_ids(target) == [d.id for d in DOCS] and check_index(target).ok
    with sqlite3.connect(target / RECORDS) as raw:
        assert raw.execute("SELECT COUNT(*) FROM documents").fetchone() == (5,)
    assert isinstance(SQLiteStore.read_manifest(target).index_id, str)


def test_repair_waits_for_the_writer_to_close(tmp_path):
    """Defect: repair restored manifest.json before it took the writer lock, so it could
    rewrite the file beside a writer that was rewriting it too."""
    writer = VectorIndex(path=tmp_path / "idx")
    writer.insert(DOCS)
    manifest = tmp_path / "idx" / MANIFEST
    edited = {**json.loads(manifest.read_text()), "embedding_dimension": 7}
    manifest.write_text(json.dumps(edited))
    with pytest.raises(IndexLockedError, match="open for writing elsewhere"):
        repair_index(tmp_path / "idx")
    assert json.loads(manifest.read_text()) == edited and not (tmp_path / "idx" / f"{MANIFEST}.replaced").exists()
    writer.close()
    assert repair_index(tmp_path / "idx").ok


def test_deleting_every_document_leaves_no_snapshot_whichever_way(tmp_path):
    """A writer that had searched (its collection loaded) and then deleted every document left
    an empty vectors/chunks.npz, where a delete from a fresh open removed the file; repair then
    took the empty file for a stale one."""
    for searched in (True, False):
        where = tmp_path / f"idx-{searched}"
        VectorIndex(path=where).insert(DOCS)
        index = VectorIndex(path=where)
        if searched:
            assert index.as_retriever(k=1).retrieve("blue ferry")
        index.delete([d.id for d in DOCS])
        index.close()
        assert not (where / "vectors" / "chunks.npz").exists()
        found = check_index(where)
        assert found.ok and not found.warnings, found
        assert VectorIndex.load(where, readonly=True).as_retriever(k=1).retrieve("blue ferry") == []


def test_check_beside_a_writer_says_the_writer_may_finish_what_it_warns_of(tmp_path):
    writer = VectorIndex(path=tmp_path / "idx")
    writer.insert(DOCS)
    (tmp_path / "idx" / "vectors" / "chunks.npz").write_bytes(b"not a snapshot")
    found = check_index(tmp_path / "idx")
    assert found.ok and "a writer has the index open" in found.warnings[-1]
    writer.close()
    found = check_index(tmp_path / "idx")
    assert found.warnings and not any("a writer has the index open" in w for w in found.warnings)
