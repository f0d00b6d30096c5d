"""The index directory checks itself: identity, missing or damaged records, snapshots that do
not match, chunk checksums, the writer lock, `check` and `repair` (docs/reliability.md)."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rhizome.core.errors import IndexCorruptError, IndexDamageWarning, IndexLockedError
from rhizome.core.naive import VectorIndex
from rhizome.core.store.storage import MANIFEST, RECORDS, load_index
from rhizome.core.store.vectors import VectorStore
from rhizome.core.types import Document
from rhizome.tools.faults import rotate_snapshot
from rhizome.tools.integrity import check_index, repair_index

DOCS = [Document(id=f"d{i}", text=f"Report {i}: the {w} ferry crossed to {p} at dawn.") for i, (w, p) in enumerate(
    [("red", "Oslo"), ("blue", "Bergen"), ("green", "Tromso"), ("grey", "Alesund"), ("white", "Bodo")]
)]
QUERY = "blue ferry Bergen"


def build(path: Path) -> list[str]:
    index = VectorIndex(path=path)
    index.insert(DOCS)
    hits = [h.id for h in index.as_retriever(k=3).retrieve(QUERY)]
    index.close()
    return hits


def search(path: Path, **options) -> list[str]:
    index = load_index(path, **options)
    try:
        return [h.id for h in index.as_retriever(k=3).retrieve(QUERY)]
    finally:
        index.close()


def files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("damage", ["missing", "empty"])
def test_missing_or_empty_records_are_refused_and_nothing_is_overwritten(tmp_path, damage):
    build(tmp_path / "i")
    records = tmp_path / "i" / RECORDS
    records.unlink() if damage == "missing" else records.write_bytes(b"")
    before = files(tmp_path / "i")
    for opener in (lambda: load_index(tmp_path / "i"), lambda: load_index(tmp_path / "i", readonly=True), lambda: VectorIndex(path=tmp_path / "i")):
        with pytest.raises(IndexCorruptError, match="source of truth"):
            opener()
    assert files(tmp_path / "i") == before


def test_a_garbled_database_is_a_typed_error_and_gets_no_writes(tmp_path):
    build(tmp_path / "i")
    records = tmp_path / "i" / RECORDS
    data = bytearray(records.read_bytes())
    for offset in range(4096, len(data), 4096):  # every page but the header: its b-tree headers are gone
        data[offset : offset + 64] = b"\xa5" * 64
    records.write_bytes(bytes(data))
    before = files(tmp_path / "i")
    with pytest.raises(IndexCorruptError, match="is damaged"):
        VectorIndex(path=tmp_path / "i")
    assert files(tmp_path / "i") == before
    found = check_index(tmp_path / "i")
    assert not found.ok and RECORDS in found.problems[0]
    with pytest.raises(IndexCorruptError, match="cannot be repaired"):
        repair_index(tmp_path / "i")


def test_without_a_manifest_no_new_index_adopts_the_records_and_repair_restores_it(tmp_path):
    hits = build(tmp_path / "i")
    (tmp_path / "i" / MANIFEST).unlink()
    with pytest.raises(IndexCorruptError, match="rhizome repair"):
        VectorIndex("hashing:64", path=tmp_path / "i")  # another embedder: its vectors must not mix in
    with pytest.raises(IndexCorruptError):
        load_index(tmp_path / "i")
    found = check_index(tmp_path / "i")  # a problem, as every other command finds it, with the fix
    assert not found.ok and any(MANIFEST in p and "rhizome repair" in p for p in found.problems)
    assert "restored manifest.json from the copy in the records" in repair_index(tmp_path / "i").repaired
    assert search(tmp_path / "i") == hits


def test_a_manifest_naming_another_method_or_index_is_refused(tmp_path):
    hits = build(tmp_path / "i")
    manifest = json.loads((tmp_path / "i" / MANIFEST).read_text())
    (tmp_path / "i" / MANIFEST).write_text(json.dumps({**manifest, "method": "lightrag"}))
    with pytest.raises(IndexCorruptError, match="written by 'naive'"):
        load_index(tmp_path / "i")
    build(tmp_path / "other")
    (tmp_path / "i" / MANIFEST).write_bytes((tmp_path / "other" / MANIFEST).read_bytes())
    with pytest.raises(IndexCorruptError, match="different indexes"):
        load_index(tmp_path / "i")
    repair_index(tmp_path / "i")
    assert search(tmp_path / "i") == hits


def test_a_truncated_or_foreign_snapshot_is_rebuilt_from_the_records(tmp_path):
    hits = build(tmp_path / "i")
    snapshot = tmp_path / "i" / "vectors" / "chunks.npz"
    snapshot.write_bytes(snapshot.read_bytes()[:200])
    assert search(tmp_path / "i") == hits
    assert search(tmp_path / "i", readonly=True) == hits
    # a snapshot of another index, at the same generation, holding other ids
    other = VectorIndex(path=tmp_path / "o")
    other.insert([Document(id=f"x{i}", text=f"Blue ferry Bergen {i}") for i in range(5)])
    other.close()
    snapshot.write_bytes((tmp_path / "o" / "vectors" / "chunks.npz").read_bytes())
    assert any("another index" in w for w in check_index(tmp_path / "i").warnings)
    assert search(tmp_path / "i") == hits
    repair_index(tmp_path / "i")
    assert check_index(tmp_path / "i").warnings == []


def test_a_snapshot_with_vectors_under_rotated_ids_is_rebuilt_reported_and_caught_by_check(tmp_path, caplog):
    docs = [Document(id=f"k{i}", text=f"Logbook {i}: the {i * 7919 % 1000} crates of tin reached pier {i}.") for i in range(40)]
    index = VectorIndex(path=tmp_path / "i")
    index.insert(docs)
    index.close()
    snapshot = tmp_path / "i" / "vectors" / "chunks.npz"
    rotate_snapshot(snapshot)

    def known_items(**options) -> int:
        index = load_index(tmp_path / "i", **options)
        try:
            retriever = index.as_retriever(k=1)
            return sum(retriever.retrieve(doc.text)[0].provenance.document_ids == [doc.id] for doc in docs)
        finally:
            index.close()

    found = check_index(tmp_path / "i")
    assert any("holds other vectors than the records under 40 of its ids" in p for p in found.problems)
    with caplog.at_level("WARNING", logger="rhizome.core.store.backends.sqlite"):
        assert known_items(readonly=True) == 40  # every load path: a reader...
    assert "other vectors under them" in caplog.text
    assert known_items() == 40  # ...and a writer, which rewrites the snapshot when it saves
    index = load_index(tmp_path / "i")
    index.insert([Document(id="new", text="A new logbook entry.")])
    index.close()
    assert check_index(tmp_path / "i").ok and check_index(tmp_path / "i").warnings == []
    assert known_items() == 40


@pytest.mark.parametrize("damage, why", [("text || ' (edited)'", "does not match its checksum"),
                                         ("CAST(X'426C7565FF' AS TEXT)", "is not valid UTF-8")])
def test_a_damaged_chunk_text_costs_a_search_that_passage_and_an_insert_stores_it_again(tmp_path, damage, why):
    """Defect: one chunk changed outside Rhizome failed every search that reached it (bytes that
    are not UTF-8 even with a bare sqlite3 error, and `check` called that index sound), and
    inserting the unchanged document again skipped it, so nothing could store it again."""
    hits = build(tmp_path / "i")
    assert "d1:0" in hits
    with sqlite3.connect(tmp_path / "i" / RECORDS) as db:
        db.execute(f"UPDATE chunks SET text = {damage} WHERE document_id = 'd1'")
    index = load_index(tmp_path / "i")
    with pytest.warns(IndexDamageWarning, match=f"chunk d1:0 of document 'd1' \\({why}"):
        found = index.as_retriever(k=3).search(QUERY)
    others = [h for h in hits if h != "d1:0"]
    assert [h.id for h in found.hits][: len(others)] == others and len(found.hits) == 3  # the rest, then the next nearest
    assert "d1:0" not in {h.id for h in found.hits} and "left out 1 passage" in found.notes[-1]
    with pytest.raises(IndexCorruptError, match=why):  # outside a search a read still refuses it
        index.store.chunks(["d1:0"])
    sizes = index.store.chunk_tokens(["d1:0", "no-such-chunk"])  # sizes read no text: they still answer
    assert list(sizes) == ["d1:0"] and sizes["d1:0"] > 0
    problems = check_index(tmp_path / "i").problems
    assert problems and problems[0].startswith(f"1 chunk {why} (changed outside Rhizome): d1:0; insert its document again")
    report = index.insert(DOCS)  # the same documents, unchanged
    assert report.restored == ["d1"] and report.replaced == ["d1"] and len(report.skipped) == 4
    assert [h.id for h in index.as_retriever(k=3).retrieve(QUERY)] == hits
    index.close()
    assert check_index(tmp_path / "i").ok


def test_check_finds_vectors_that_are_not_finite_and_chunks_without_vectors(tmp_path):
    build(tmp_path / "i")
    with sqlite3.connect(tmp_path / "i" / RECORDS) as db:
        blob = db.execute("SELECT vector FROM vectors WHERE id = (SELECT id FROM chunks WHERE document_id = 'd0')").fetchone()[0]
        db.execute("UPDATE vectors SET vector = ? WHERE id = (SELECT id FROM chunks WHERE document_id = 'd0')", (b"\x00\x00\xc0\x7f" * (len(blob) // 4),))
        db.execute("DELETE FROM vectors WHERE id = (SELECT id FROM chunks WHERE document_id = 'd2')")
    problems = " | ".join(check_index(tmp_path / "i").problems)
    assert "1 vector holds NaN or infinity" in problems and "1 chunk has no vector" in problems


def test_a_copy_is_an_index_of_its_own(tmp_path):
    index = VectorIndex(path=tmp_path / "a")
    index.insert(DOCS)
    index.persist(tmp_path / "b")
    ids = {json.loads((tmp_path / d / MANIFEST).read_text())["index_id"] for d in ("a", "b")}
    assert len(ids) == 2 and None not in ids
    index.close()
    assert check_index(tmp_path / "b").ok and check_index(tmp_path / "b").warnings == []


def test_an_index_written_before_ids_and_checksums_is_adopted(tmp_path):
    hits = build(tmp_path / "i")
    manifest = json.loads((tmp_path / "i" / MANIFEST).read_text())
    (tmp_path / "i" / MANIFEST).write_text(json.dumps({k: v for k, v in manifest.items() if k != "index_id"}))
    with sqlite3.connect(tmp_path / "i" / RECORDS) as db:
        db.execute("DELETE FROM meta WHERE key IN ('index', 'manifest')")
        db.execute("ALTER TABLE chunks DROP COLUMN checksum")
    assert search(tmp_path / "i", readonly=True) == hits
    assert search(tmp_path / "i") == hits  # the writable open records an id; old chunks carry no checksum
    assert json.loads((tmp_path / "i" / MANIFEST).read_text())["index_id"]
    assert check_index(tmp_path / "i").ok


LOCK_HOLDER = """
import sys, time
from rhizome.core.naive import VectorIndex
index = VectorIndex(path=sys.argv[1])
print("open", flush=True)
time.sleep(30)
"""


def test_the_writer_lock_survives_deleting_files(tmp_path):
    build(tmp_path / "i")
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(tmp_path / "i")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        for stray in (tmp_path / "i").glob(".writer.lock"):
            stray.unlink()
        with pytest.raises(IndexLockedError):
            VectorIndex(path=tmp_path / "i")
    finally:
        holder.kill()
        holder.wait()


def test_a_database_replaced_under_a_writer_is_not_written(tmp_path):
    index = VectorIndex(path=tmp_path / "i")
    index.insert(DOCS[:2])
    records = tmp_path / "i" / RECORDS
    os.replace(records, tmp_path / "moved.sqlite")
    records.write_bytes((tmp_path / "moved.sqlite").read_bytes())
    with pytest.raises(IndexLockedError, match="moved, deleted or replaced"):
        index.insert(DOCS[2:])
    index.close()


def test_cli_check_and_repair(tmp_path, capsys):
    from rhizome.rag.cli import main

    build(tmp_path / "i")
    assert main(["check", str(tmp_path / "i")]) == 0
    assert "no problems" in capsys.readouterr().out
    (tmp_path / "i" / MANIFEST).unlink()
    assert main(["check", str(tmp_path / "i")]) == 1  # exits as every other command on it does (not 0)
    assert "problem: manifest.json" in capsys.readouterr().out
    assert main(["repair", str(tmp_path / "i")]) == 0
    assert "repaired: restored manifest.json" in capsys.readouterr().out
    with sqlite3.connect(tmp_path / "i" / RECORDS) as db:
        db.execute("UPDATE chunks SET text = 'changed' WHERE document_id = 'd3'")
    assert main(["check", str(tmp_path / "i")]) == 1
    out, err = capsys.readouterr()
    assert "problem: 1 chunk does not match its checksum" in out and err.endswith(": 1 problem\n")  # not "1 problems"


def test_a_creation_cut_short_before_its_manifest_is_started_again(tmp_path):
    (tmp_path / "i").mkdir()
    with sqlite3.connect(tmp_path / "i" / RECORDS) as db:  # the schema, and an id, but no data
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('index', '{\"id\": \"old\", \"method\": \"naive\"}')")
        db.execute("CREATE TABLE documents (id TEXT PRIMARY KEY)")
    assert build(tmp_path / "i")  # no data to lose: the new index starts over
    assert check_index(tmp_path / "i").ok


def test_an_edited_manifest_is_found_and_restored_from_the_records(tmp_path):
    """Defect: check and repair compared only the manifest's index and method with the records'
    copy, so an edited dimension blamed the vectors (and repair the records) and an edited
    config passed as sound while every open failed."""
    hits = build(tmp_path / "i")
    original = json.loads((tmp_path / "i" / MANIFEST).read_text())
    for edited in ({**original, "embedding_dimension": 128}, {**original, "config": {**original["config"], "chunk_size": -5}}):
        (tmp_path / "i" / MANIFEST).write_text(json.dumps(edited))
        found = check_index(tmp_path / "i")
        assert not found.ok and len(found.problems) == 1, found.problems
        assert "differs from its copy in the records" in found.problems[0] and "rhizome repair" in found.problems[0]
        assert repair_index(tmp_path / "i").ok
        restored = json.loads((tmp_path / "i" / MANIFEST).read_text())
        assert {**restored, "updated": None} == {**original, "updated": None}  # repair's own write moves `updated`
        assert search(tmp_path / "i") == hits


def test_a_delete_leaves_the_snapshots_matching_the_records(tmp_path):
    """Defect: a delete from a freshly opened index (its collection not loaded) left the old
    snapshot behind, so `rhizome check` warned after a clean delete."""
    build(tmp_path / "i")
    for doomed in ([DOCS[0].id], [d.id for d in DOCS[1:]]):  # some, then every document left
        index = load_index(tmp_path / "i")
        index.delete(doomed)
        index.close()
        found = check_index(tmp_path / "i")
        assert found.ok and not found.warnings, found.warnings
    assert not list((tmp_path / "i" / "vectors").glob("*.npz"))  # nothing left to snapshot


def test_check_and_repair_of_a_folder_that_holds_no_index_say_so(tmp_path):
    from rhizome.core.errors import IndexNotFoundError

    for where in (tmp_path / "plain", tmp_path / "missing"):
        (tmp_path / "plain").mkdir(exist_ok=True)
        with pytest.raises(IndexNotFoundError, match="no Rhizome index"):
            check_index(where)
        with pytest.raises(IndexNotFoundError, match="no Rhizome index"):
            repair_index(where)


def test_an_unreadable_or_empty_manifest_points_to_repair(tmp_path):
    from rhizome.core.errors import IndexFormatError

    hits = build(tmp_path / "i")
    for damaged in ("{not json", "{}"):
        (tmp_path / "i" / MANIFEST).write_text(damaged)
        with pytest.raises(IndexFormatError, match="rhizome repair"):
            load_index(tmp_path / "i")
        repair_index(tmp_path / "i")
        assert search(tmp_path / "i") == hits


def _writer_steps(index) -> itertools.cycle:
    """One insert or delete per call, alternately (each a commit and a rewrite of the manifest
    and the snapshots)."""
    extra = [Document(id=f"w{i}", text=f"Note {i}: the {w} ferry was late.") for i, w in enumerate(["red", "blue", "green"])]
    return itertools.cycle([lambda: index.insert(extra), lambda: index.delete([d.id for d in extra])])


def test_check_reads_one_state_of_the_records_while_a_writer_commits(tmp_path, monkeypatch):
    """Defect: check read the chunks, the vectors and the manifest's copy in separate
    transactions, so a writer's commit between two reads showed as chunks without vectors,
    vectors without chunks or a manifest that differs: exit 1 on a healthy index."""
    from rhizome.tools import integrity

    build(tmp_path / "i")
    writer = load_index(tmp_path / "i")
    steps, rows = _writer_steps(writer), integrity._rows
    writes = []

    def rows_then_commit(db, sql, params=()):  # a writer commits after every read of check
        found = rows(db, sql, params)
        writes.append(next(steps)())
        return found

    monkeypatch.setattr(integrity, "_rows", rows_then_commit)
    try:
        for _ in range(2):
            found = check_index(tmp_path / "i")
            assert found.ok, found.problems
    finally:
        monkeypatch.undo()
        writer.close()
    assert len(writes) > 10
    assert check_index(tmp_path / "i").ok


def test_a_manifest_a_writer_is_writing_is_no_problem_but_one_left_halfway_is(tmp_path, monkeypatch):
    """Defect: the writer updates the manifest's copy in the records and then manifest.json; a
    check between the two reported "differs from its copy" (restore a backup or repair) while
    the writer was only halfway. A difference with no writer left is still a problem."""
    build(tmp_path / "i")
    writer = load_index(tmp_path / "i")
    write_file = writer.store._write_manifest_copy
    seen = []

    def check_between(text):  # the records hold the new manifest, the file the old one
        seen.append(check_index(tmp_path / "i"))
        write_file(text)

    monkeypatch.setattr(writer.store, "_write_manifest_copy", check_between)
    writer.insert([Document(id="w0", text="Note: the red ferry was late.")])
    assert seen and all(found.ok for found in seen), [found.problems for found in seen]
    assert any("while a writer had the index open" in w for w in seen[0].warnings), seen[0].warnings
    # a writer that stops between the two (killed): while it is open, the difference is a
    # warning; once it is gone, a problem
    monkeypatch.setattr(writer.store, "_write_manifest_copy", lambda text: None)
    writer.delete(["w0"])
    found = check_index(tmp_path / "i")
    assert found.ok and any("while a writer had the index open" in w for w in found.warnings), found.problems
    writer.close()
    found = check_index(tmp_path / "i")
    assert not found.ok and "differs from its copy in the records (" in found.problems[0], found.problems


def test_snapshots_rewritten_or_removed_during_check_are_no_finding(tmp_path, monkeypatch):
    """Defect: check read the records before the snapshot file, so a snapshot the writer
    rewrote in between looked out of date, and one it removed (its collection emptied)
    unreadable."""

    build(tmp_path / "i")
    load, busy = VectorStore.load, []
    changes = [lambda w: w.insert([Document(id="w0", text="Note: the red ferry was late.")]),
               lambda w: w.delete([d.id for d in DOCS] + ["w0"])]

    def write_then_load(path):  # one change per check, just before it reads the snapshot
        if not busy:  # the writer loads snapshots too
            busy.append(path)
            writer = load_index(tmp_path / "i")
            changes.pop(0)(writer)
            writer.close()
            busy.clear()
        return load(path)

    monkeypatch.setattr(VectorStore, "load", staticmethod(write_then_load))
    for _ in range(2):
        found = check_index(tmp_path / "i")
        assert found.ok and not found.warnings, (found.problems, found.warnings)
    assert not changes
    assert not list((tmp_path / "i" / "vectors").glob("*.npz"))  # the delete removed it


def test_a_read_snapshot_sees_one_committed_state(tmp_path):
    from rhizome.core.store.storage import IndexStore

    build(tmp_path / "i")
    writer, reader = load_index(tmp_path / "i"), IndexStore.open(tmp_path / "i", readonly=True)
    try:
        with reader.read_snapshot():
            before = reader.count("chunks")
            writer.insert([Document(id="w0", text="Note: the red ferry was late.")])
            assert reader.count("chunks") == before
        assert reader.count("chunks") == before + 1
    finally:
        reader.close()
        writer.close()


def test_a_failure_without_a_message_still_says_what_happened():
    """Defect: a cancelled extraction was reported as "CancelledError: " with no reason."""
    import asyncio

    from rhizome.core.index.base import failure_reason

    assert failure_reason(asyncio.CancelledError()) == "CancelledError: cancelled before it finished (the run was interrupted or timed out)"
    assert failure_reason(RuntimeError()) == "RuntimeError: raised without a message"
    assert failure_reason(ValueError("bad  \n value")) == "ValueError: bad value"


class _ProtocolEmbedder:
    """An embedder of the protocol only (not a BaseEmbedder, so none of its own checks): the
    hashing embedder's vectors, one of which is broken for texts containing ``broken``."""

    name = "protocol-hashing"
    dimension = 32

    def __init__(self, fault: str) -> None:
        from rhizome.core.models.embeddings import HashingEmbedder

        self.fault, self.inner = fault, HashingEmbedder(dimension=32)

    async def aembed(self, texts):
        rows = [list(map(float, v)) for v in await self.inner.aembed(texts)]
        for row, text in zip(rows, texts):
            if "broken" in text:
                if self.fault == "short":
                    row.pop()
                else:
                    row[3] = float(self.fault)
        return rows

    async def aembed_query(self, texts):
        return await self.aembed(texts)

    def embed(self, texts):
        from rhizome.core.aio import run_sync

        return run_sync(self.aembed(texts))


def _broken_embedder(kind: str, fault: str):
    if kind == "protocol":
        return _ProtocolEmbedder(fault)
    from rhizome.core.models.base import BaseEmbedder

    class Broken(BaseEmbedder):
        async def _aembed_batch(self, texts):
            return await _ProtocolEmbedder(fault).aembed(texts)

    return Broken(name="broken-hashing", batch_size=8, cache=None)


@pytest.mark.parametrize("kind", ["base", "protocol"])
@pytest.mark.parametrize("fault", ["short", "nan", "inf"])
@pytest.mark.parametrize(("size", "broken"), [(2, 1), (41, 1), (41, 40)])
def test_a_broken_vector_fails_its_document_alone_on_every_insert_size(tmp_path, kind, fault, size, broken):
    """Dimension and finiteness are checked in one place (`checked_vectors`) that every
    embedding passes: the embedder's own batches and, for any embedder, the index's slices
    (the 41st document is alone in the insert's second batch of chunks)."""
    docs = [Document(id=f"d{i}", text=f"Entry {i} of the harbour log" + (" broken" if i == broken else "")) for i in range(size)]
    index = VectorIndex(path=tmp_path / "i", embedder=_broken_embedder(kind, fault))
    index.insert(docs)
    failed = [s for s in index.store.statuses() if s.status == "failed"]
    assert [s.id for s in failed] == [f"d{broken}"] and "broken" in (failed[0].error or "")
    assert index.store.count("vectors") == index.store.count("chunks") == size - 1
    index.close()
    assert check_index(tmp_path / "i").problems == []


def test_a_query_vector_that_is_not_finite_is_refused(tmp_path):
    from rhizome.core.errors import ModelOutputError

    index = VectorIndex(path=tmp_path / "i", embedder=_ProtocolEmbedder("nan"))
    index.insert(DOCS)
    with pytest.raises(ModelOutputError, match="NaN or infinity"):
        index.as_retriever(k=2).retrieve("a broken query")
    index.close()


def test_an_edited_manifest_dimension_advises_repair_and_repair_fixes_it(tmp_path):
    from rhizome.core.errors import IndexMismatchError
    from rhizome.core.models.embeddings import HashingEmbedder

    build(tmp_path / "i")
    manifest = json.loads((tmp_path / "i" / MANIFEST).read_text())
    right = manifest["embedding_dimension"]
    manifest["embedding_dimension"] = right + 8
    (tmp_path / "i" / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(IndexCorruptError, match="the manifest was changed outside Rhizome; run `rhizome repair"):
        search(tmp_path / "i")
    index = load_index(tmp_path / "i")
    with pytest.raises(IndexCorruptError, match="rhizome repair"):
        index.insert([Document(id="n", text="one more ferry")])
    index.close()
    repair_index(tmp_path / "i")
    assert search(tmp_path / "i") == build(tmp_path / "j")
    # an embedder of another dimension is still told to use the index's own
    with pytest.raises(IndexMismatchError, match="Query it with"):
        search(tmp_path / "i", embedder=HashingEmbedder(dimension=right + 8))
