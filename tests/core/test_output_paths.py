"""One rule for every path a command writes (rhizome.core.store.targets): never inside an index
directory, never over an index's records or a file a writer holds, never over an existing file
without --force. Checked before any work, so a refused command writes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rhizome.core.errors import IndexLockedError, InvalidInputError
from rhizome.core.naive import VectorIndex
from rhizome.core.store.storage import RECORDS, load_index
from rhizome.core.store.targets import check_output_files, check_output_folder
from rhizome.core.types import Document
from rhizome.rag.cli import main

DOCS = [Document(id=f"d{i}", text=f"Report {i}: the ferry crossed to Gull Island at dawn.") for i in range(3)]


def files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def index_dir(tmp_path) -> Path:
    index = VectorIndex(path=tmp_path / "idx")
    index.insert(DOCS)
    index.close()
    return tmp_path / "idx"


def test_no_index_is_created_or_copied_inside_another_index(index_dir, tmp_path, capsys):
    before = files(index_dir)
    with pytest.raises(InvalidInputError, match="inside the index directory"):
        VectorIndex(path=index_dir / "vectors" / "nested")
    index = load_index(index_dir)
    with pytest.raises(InvalidInputError, match="inside the index directory"):
        index.persist(index_dir / "copy")  # persist, and the LlamaIndex retriever's persist through it
    index.close()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("A ferry log.", encoding="utf-8")
    assert main(["index", str(tmp_path / "docs"), "--out", str(index_dir / "sub"), "--offline", "-q"]) == 2
    assert main(["demo", "--out", str(index_dir), "--offline", "-q", "--method", "naive"]) == 2
    assert capsys.readouterr().err.count("inside the index directory") == 2
    assert files(index_dir) == before
    load_index(index_dir).close()  # an index is still opened where it is, and added to
    assert main(["index", str(tmp_path / "docs"), "--out", str(index_dir), "--offline", "-q"]) == 0


def test_an_export_never_replaces_an_indexs_records_even_through_a_link_or_with_force(index_dir, tmp_path, capsys):
    records = (index_dir / RECORDS).read_bytes()
    os.link(index_dir / RECORDS, tmp_path / "hard-link.graphml")
    (tmp_path / "sym-link.graphml").symlink_to(index_dir / RECORDS)
    for out in ("hard-link.graphml", "sym-link.graphml"):
        assert main(["export", str(index_dir), "--format", "graphml", "--out", str(tmp_path / out), "--force"]) == 2
    err = capsys.readouterr().err
    assert "holds an index's records" in err and "inside the index directory" in err
    assert (index_dir / RECORDS).read_bytes() == records


def test_a_file_a_writer_holds_is_not_written(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    (disk / "store.db").touch()
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / RECORDS).symlink_to(disk / "store.db")
    writer = VectorIndex(path=tmp_path / "idx")  # holds the lock of the linked records too
    writer.insert(DOCS)
    try:
        with pytest.raises(IndexLockedError, match="held by a process writing an index"):
            check_output_files([disk / "store.db"], replace=True)
    finally:
        writer.close()
    with pytest.raises(InvalidInputError, match="holds an index's records"):
        check_output_files([disk / "store.db"], replace=True)


def test_a_folder_for_other_files_is_never_an_index_nor_inside_one(index_dir, tmp_path):
    with pytest.raises(InvalidInputError, match="is an index directory"):
        check_output_folder(index_dir, what="the classifier")
    with pytest.raises(InvalidInputError, match="inside the index directory"):
        check_output_folder(index_dir / "clf", what="the classifier")
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "manifest.json").write_text('{"name": "a web app"}', encoding="utf-8")
    assert check_output_files([tmp_path / "web" / "g.graphml"]) == [tmp_path / "web" / "g.graphml"]  # not an index's


def test_classify_writes_no_file_over_another_without_force(index_dir, tmp_path, capsys):
    rows = "".join(f"{label}\t{text}\n" for label, text in [("harbour", "the ferry left the harbour"), ("school", "the pupils read maps")])
    (tmp_path / "train.tsv").write_text(rows, encoding="utf-8")
    (tmp_path / "mine.txt").write_text("mine", encoding="utf-8")
    run = ["classify", str(tmp_path / "train.tsv"), "--train", str(tmp_path / "train.tsv"), "--offline", "-q"]
    assert main([*run, "--out", str(tmp_path / "mine.txt")]) == 2
    assert (tmp_path / "mine.txt").read_text(encoding="utf-8") == "mine"
    assert main([*run, "--out", str(tmp_path / "mine.txt"), "--force"]) == 0
    assert main([*run, "--save", str(index_dir / "clf")]) == 2
    assert main([*run, "--save", str(tmp_path / "clf")]) == 0
    assert main([*run, "--save", str(tmp_path / "clf")]) == 2  # another classifier is there
    assert main(["classify", str(tmp_path / "train.tsv"), "--classifier", str(tmp_path / "clf"), "--save", str(tmp_path / "clf"), "--offline", "-q"]) == 0
    err = capsys.readouterr().err
    assert "exists; choose another --out, or pass --force" in err and "holds a saved classifier" in err
    assert "inside the index directory" in err
