"""A folder's life in an index from the command line: files that cannot be read, --sync with
added, changed and removed files (for every method, through its own delete), docs list and
delete, export, filters and empty results."""

from __future__ import annotations

import json
import os
from pathlib import Path

import networkx as nx
import pyarrow.parquet as pq
import pytest

from rhizome.core.store.storage import load_index
from rhizome.rag.cli import main
from rhizome.tools.testing import registered_methods


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


FILES = {
    "ferry.txt": "Captain Mira Holt runs the Tarn Harbour ferry. The ferry crosses to Gull Island.",
    "light.md": "# The Gull Light\n\nOsric Vane keeps the lighthouse on Gull Island.",
    "guild.txt": "Petra Lind chairs the Salt Guild of Tarn. The Salt Guild buys fish.",
}


def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


def cited(index_dir: Path, question: str, k: int = 10) -> set[str]:
    index = load_index(index_dir, readonly=True, offline=True)
    try:
        return {d for h in index.as_retriever(k=k).retrieve(question) for d in h.provenance.document_ids}
    finally:
        index.close()


def test_files_that_cannot_be_read_are_listed_and_fail_the_run(tmp_path, capsys):
    docs = folder(tmp_path)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not a pdf")
    (docs / "photo.png").write_bytes(b"\x89PNG")
    (docs / "cafe.txt").write_bytes("Café Zürich serves the harbour.".encode("latin-1"))
    code, out, err = run(capsys, "index", str(docs), "--out", str(tmp_path / "i"), "--offline", "-q")
    assert code == 1
    assert f"not read: {docs / 'broken.pdf'}: pypdf cannot read it" in err and "1 file could not be read" in err
    assert "decoded as cp1252" in err
    code, out, err = run(capsys, "index", str(docs), "--out", str(tmp_path / "i"), "--offline")
    assert "files: 4 read, 1 of other types left out (photo.png)" in out and "4 unchanged" in out
    assert "Café Zürich" in json.loads(run(capsys, "query", str(tmp_path / "i"), "Café", "--json", "-k", "1")[1])["hits"][0]["text"]


@pytest.mark.parametrize("method", registered_methods())
def test_sync_adds_new_reindexes_changed_and_deletes_removed_files(tmp_path, capsys, method):
    docs = folder(tmp_path)
    index_dir = tmp_path / "idx"
    (tmp_path / "elsewhere.txt").write_text("Hanna Crest mapped the reefs.", encoding="utf-8")
    assert run(capsys, "index", str(docs), "--out", str(index_dir), "--method", method, "--offline", "-q")[0] == 0
    assert run(capsys, "index", str(tmp_path / "elsewhere.txt"), "--out", str(index_dir), "--method", method, "--offline", "-q")[0] == 0
    (docs / "guild.txt").unlink()                                                            # removed
    (docs / "ferry.txt").write_text("Captain Mira Holt sold the ferry to Ansel Brandt.", encoding="utf-8")  # changed
    (docs / "school.txt").write_text("Petra Lind founded the Tarn Sea School.", encoding="utf-8")            # added
    code, out, err = run(capsys, "index", str(docs), "--out", str(index_dir), "--method", method, "--offline", "--sync")
    assert code == 0, err
    assert "documents: 1 new, 1 changed, 1 unchanged, 1 removed, 0 failed; 4 in the index" in out
    code, out, _ = run(capsys, "docs", "list", str(index_dir), "--json")
    assert sorted(row["id"] for row in json.loads(out)) == ["elsewhere.txt", "ferry.txt", "light.md", "school.txt"]
    assert "guild.txt" not in cited(index_dir, "Who chairs the Salt Guild? Petra Lind")  # gone from every hit
    index = load_index(index_dir, readonly=True, offline=True)
    try:
        texts = [c.text for c in index.store.chunks(index.store.chunk_ids(["ferry.txt"])).values()]
        assert texts == ["Captain Mira Holt sold the ferry to Ansel Brandt."]
        contents = index.graph_contents()
        assert not [e for e in contents.entities if e.name == "Salt Guild"]  # only the removed file named it
        if contents.entities:
            assert any(e.name == "Ansel Brandt" for e in contents.entities), method
    finally:
        index.close()
    code, out, _ = run(capsys, "index", str(docs), "--out", str(index_dir), "--method", method, "--offline", "--sync")
    assert code == 0 and "0 new, 0 changed, 3 unchanged, 0 removed" in out


def stored_texts(index_dir: Path) -> dict[str, str]:
    index = load_index(index_dir, readonly=True, offline=True)
    try:
        ids = index.store.document_ids()
        return {c.document_id: c.text.strip() for c in index.store.chunks(index.store.chunk_ids(ids)).values()}
    finally:
        index.close()


def test_a_folder_with_the_same_file_names_as_another_is_refused_not_replaced(tmp_path, capsys):
    fa, fb = tmp_path / "fa", tmp_path / "fb"
    for team, where in (("Alpha", fa), ("Beta", fb)):
        where.mkdir()
        (where / "notes.md").write_text(f"{team} team notes: the ferry leaves at nine.", encoding="utf-8")
    index_dir = tmp_path / "idx"
    assert run(capsys, "index", str(fa), "--out", str(index_dir), "--offline", "-q")[0] == 0
    code, out, err = run(capsys, "index", str(fb), "--out", str(index_dir), "--offline", "-q")
    assert code == 2 and out == ""
    assert f"notes.md: stored from {(fa / 'notes.md').resolve()}, now from {(fb / 'notes.md').resolve()}" in err
    assert "Nothing was written" in err and "--id-prefix fb" in err and "--replace" in err
    assert stored_texts(index_dir) == {"notes.md": "Alpha team notes: the ferry leaves at nine."}
    # both kept: the second folder under its own ids
    code, out, _ = run(capsys, "index", str(fb), "--out", str(index_dir), "--offline", "--id-prefix", "fb")
    assert code == 0 and "1 new, 0 changed" in out
    assert stored_texts(index_dir) == {"notes.md": "Alpha team notes: the ferry leaves at nine.",
                                       "fb/notes.md": "Beta team notes: the ferry leaves at nine."}
    # the same folder again still updates its changed files
    (fa / "notes.md").write_text("Alpha team notes: the ferry leaves at ten.", encoding="utf-8")
    code, out, _ = run(capsys, "index", str(fa), "--out", str(index_dir), "--offline")
    assert code == 0 and "0 new, 1 changed" in out
    # replacing on purpose
    code, out, _ = run(capsys, "index", str(fb), "--out", str(index_dir), "--offline", "--replace")
    assert code == 0 and "0 new, 1 changed" in out
    assert stored_texts(index_dir)["notes.md"] == "Beta team notes: the ferry leaves at nine."


def test_a_single_file_with_the_name_of_a_stored_one_is_refused(tmp_path, capsys):
    for team in ("a", "b"):
        (tmp_path / team).mkdir()
        (tmp_path / team / "report.txt").write_text(f"Report {team.upper()} on kelp.", encoding="utf-8")
    index_dir = tmp_path / "idx"
    assert run(capsys, "index", str(tmp_path / "a" / "report.txt"), "--out", str(index_dir), "--offline", "-q")[0] == 0
    code, _, err = run(capsys, "index", str(tmp_path / "b" / "report.txt"), "--out", str(index_dir), "--offline", "-q")
    assert code == 2 and "report.txt: stored from" in err and "--id-prefix b" in err
    assert stored_texts(index_dir) == {"report.txt": "Report A on kelp."}


def test_many_clashes_are_counted_not_all_listed(tmp_path, capsys):
    """A moved folder of thousands of files printed one line per file."""
    for team in ("a", "b"):
        (tmp_path / team).mkdir()
        for i in range(25):
            (tmp_path / team / f"r{i:02d}.txt").write_text(f"Report {team}{i} on kelp.", encoding="utf-8")
    index_dir = tmp_path / "idx"
    assert run(capsys, "index", str(tmp_path / "a"), "--out", str(index_dir), "--offline", "-q")[0] == 0
    code, _, err = run(capsys, "index", str(tmp_path / "b"), "--out", str(index_dir), "--offline", "-q")
    assert code == 2 and "25 documents of" in err and "… and 5 more" in err
    assert err.count(": stored from") == 20 and "--replace" in err


def test_two_tables_with_the_same_ids_name_both_files(tmp_path, capsys):
    docs = tmp_path / "two"
    docs.mkdir()
    (docs / "ferries.csv").write_text("id,text\n1,Ferry timetable for spring.\n", encoding="utf-8")
    (docs / "lights.csv").write_text("id,text\n1,Lighthouse keepers of Oskel.\n", encoding="utf-8")
    code, _, err = run(capsys, "index", str(docs), "--out", str(tmp_path / "idx"), "--offline", "-q")
    assert code == 2 and "document id '1' is given twice" in err
    assert str((docs / "ferries.csv").resolve()) in err and str((docs / "lights.csv").resolve()) in err
    assert "--id-field" in err and not (tmp_path / "idx").exists()  # refused before anything is written


def test_sync_keeps_the_documents_of_a_file_that_cannot_be_read_now(tmp_path, capsys):
    docs = folder(tmp_path)
    index_dir = tmp_path / "idx"
    run(capsys, "index", str(docs), "--out", str(index_dir), "--offline", "-q")
    (docs / "guild.txt").write_bytes(b"\x00\x01 binary now")
    code, out, err = run(capsys, "index", str(docs), "--out", str(index_dir), "--offline", "--sync")
    assert code == 1 and "guild.txt: it holds NUL bytes" in err
    assert "0 removed" in out and "guild.txt" in cited(index_dir, "Salt Guild")


def test_bytes_that_are_not_utf8_in_a_file_name_or_an_argument_are_reported(tmp_path, capsys):
    docs = folder(tmp_path)
    with open(os.fsencode(docs) + b"/caf\xe9.txt", "wb") as f:  # a Latin-1 file name
        f.write(b"Notes about the cafe by the harbour.")
    index_dir = str(tmp_path / "idx")
    code, out, err = run(capsys, "index", str(docs), "--out", index_dir, "--offline")
    assert code == 1 and "3 new" in out
    assert f"not read: {docs}/caf\\xe9.txt: its path is not UTF-8" in err
    code, out, err = run(capsys, "query", index_dir, os.fsdecode(b"caf\xe9"))
    assert code == 2 and "the query is not valid Unicode" in err
    code, out, err = run(capsys, "docs", "delete", index_dir, os.fsdecode(b"x\xff"), "-q", "--offline")
    assert code == 1 and "not in the index: x\\xff" in err
    assert run(capsys, "docs", "list", index_dir)[1].endswith("3 documents: 3 done\n")
    assert run(capsys, "docs", index_dir)[1] == run(capsys, "docs", "list", index_dir)[1]  # listing is the default
    assert run(capsys, "docs", index_dir, "--json")[0] == 0


def test_nan_never_reaches_the_json_the_commands_print(tmp_path, capsys):
    from rhizome.core.errors import InvalidInputError
    from rhizome.core.naive import VectorIndex

    index_dir = tmp_path / "idx"
    index = VectorIndex(path=index_dir)
    try:
        with pytest.raises(InvalidInputError, match="cannot be stored as JSON"):
            index.insert([{"id": "n", "text": "a reading", "metadata": {"x": float("nan"), "y": float("inf")}}])
        index.insert([{"id": "r", "text": "a reading", "metadata": {"x": 3.5}}])
    finally:
        index.close()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "readings.jsonl").write_text('{"text": "another reading", "x": NaN}\n', encoding="utf-8")
    code, _, err = run(capsys, "index", str(docs), "--out", str(index_dir), "--offline", "-q")
    assert code == 2 and "readings.jsonl: line 1 is not valid JSON (NaN is not a JSON value" in err  # its only file
    strict = {"parse_constant": lambda c: pytest.fail(f"not JSON: {c}")}
    code, out, _ = run(capsys, "query", str(index_dir), "a reading", "--json", "-k", "1")
    assert code == 0 and json.loads(out, **strict)["hits"][0]["metadata"]["x"] == 3.5
    assert run(capsys, "export", str(index_dir), "--format", "jsonl", "--out", str(tmp_path / "t"))[0] == 0
    for line in (tmp_path / "t" / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        json.loads(json.loads(line, **strict)["metadata"], **strict)


def test_docs_delete_uses_the_methods_delete_and_reports_unknown_ids(tmp_path, capsys):
    docs = folder(tmp_path)
    index_dir = tmp_path / "g"
    run(capsys, "index", str(docs), "--out", str(index_dir), "--method", "graphrag", "--offline", "-q")
    code, out, _ = run(capsys, "docs", "list", str(index_dir))
    assert code == 0 and "light.md" in out and "The Gull Light" in out and "3 documents: 3 done" in out
    code, out, err = run(capsys, "docs", "delete", str(index_dir), "guild.txt", "no-such-doc", "--offline")
    assert code == 1 and "deleted 1 document (1 chunk) and what only it supported" in out and "not in the index: no-such-doc" in err
    assert "deleting 1 document" in err + out and "deleting 2" not in err + out  # what is deleted is announced
    code, out, err = run(capsys, "docs", "delete", str(index_dir), "nope", "nor-this", "--offline")
    assert code == 1 and "deleting" not in err + out and "not in the index: nope, nor-this" in err  # nothing to delete
    index = load_index(index_dir, readonly=True, offline=True)
    try:
        assert index.store.document_ids() == ["ferry.txt", "light.md"]
        assert all("guild.txt:0" not in e.source_chunk_ids for e in index.graph_contents().entities)
    finally:
        index.close()
    assert run(capsys, "docs", "delete", str(index_dir), "ferry.txt", "--offline", "-q")[0] == 0


def test_export_writes_each_format(tmp_path, capsys, monkeypatch):
    docs = folder(tmp_path)
    run(capsys, "index", str(docs), "--out", str(tmp_path / "g"), "--method", "graphrag", "--offline", "-q")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "export", "g")
    assert code == 0 and out.startswith("wrote g.graphml:")
    graph = nx.read_graphml(tmp_path / "g.graphml", force_multigraph=True)
    assert graph.number_of_nodes() and "community_0" in next(iter(graph.nodes.values()))
    code, out, _ = run(capsys, "export", "g", "--format", "parquet", "--out", "tables")
    assert code == 0 and "documents 3 rows" in out
    assert sorted(pq.read_table(tmp_path / "tables" / "documents.parquet").column("id").to_pylist()) == sorted(FILES)
    code, out, _ = run(capsys, "export", "g", "--format", "jsonl")
    assert code == 0 and (tmp_path / "g-jsonl" / "communities.jsonl").read_text(encoding="utf-8")
    run(capsys, "index", str(docs), "--out", str(tmp_path / "n"), "--offline", "-q")
    code, _, err = run(capsys, "export", "n")
    assert code == 2 and "no entity graph" in err and "--format parquet" in err


def test_query_filters_and_says_why_there_are_no_hits(tmp_path, capsys):
    docs = folder(tmp_path)
    (docs / "boats.csv").write_text("id,year,notes\nketch,1911,The ketch sank in the Great Storm.\nsloop,1920,The sloop sails to Oslo.\n",
                                    encoding="utf-8")
    index_dir = str(tmp_path / "i")
    assert run(capsys, "index", str(docs), "--out", index_dir, "--offline", "-q", "--text-field", "notes")[0] == 0
    code, out, _ = run(capsys, "query", index_dir, "Which boat sank?", "--filter", "year=1920", "--json")
    assert code == 0 and [h["provenance"]["document_ids"] for h in json.loads(out)["hits"]] == [["sloop"]]
    code, out, _ = run(capsys, "query", index_dir, "boats", "--filter", "year=1911", "--filter", "year=1920", "--json")
    assert code == 0 and {h["metadata"]["year"] for h in json.loads(out)["hits"]} == {"1911", "1920"}
    code, out, _ = run(capsys, "query", index_dir, "boats", "-k", "5", "--filter", "year>1911", "--json")
    assert code == 0 and {h["provenance"]["document_ids"][0] for h in json.loads(out)["hits"]} == {"sloop"}
    code, out, _ = run(capsys, "query", index_dir, "boats", "-k", "5", "--filter", "year<=1911", "--filter", "year!=1920", "--json")
    assert code == 0 and {h["provenance"]["document_ids"][0] for h in json.loads(out)["hits"]} == {"ketch"}
    code, out, _ = run(capsys, "query", index_dir, "boats", "-k", "5", "--json",
                       "--filter", '{"$or": [{"year": {"$gte": 1920}}, {"year": {"$in": [1911, 1800]}}]}')
    assert code == 0 and {h["provenance"]["document_ids"][0] for h in json.loads(out)["hits"]} == {"ketch", "sloop"}
    code, _, err = run(capsys, "query", index_dir, "boats", "--filter", "year~1911")
    assert code == 2 and "FIELD>VALUE" in err
    code, out, err = run(capsys, "query", index_dir, "Which boat sank?", "--filter", "year=1999")
    assert code == 1 and out == "" and err == 'no hits: no stored document matches the filter year = "1999"\n'
    code, _, err = run(capsys, "query", index_dir, "boats", "--filter", "yaer=1911")
    assert code == 2 and "no stored document has the metadata field 'yaer'" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    run(capsys, "index", str(docs), "--out", str(empty / "i"), "--offline", "-q")
    run(capsys, "docs", "delete", str(empty / "i"), *FILES, "boats.csv#0", "ketch", "sloop", "--offline", "-q")
    code, _, err = run(capsys, "query", str(empty / "i"), "anything")
    assert code == 1 and "no hits: the index holds no documents yet" in err


@pytest.mark.parametrize("method, graphs", [("lightrag", ["evidence", "fact-graph"]), ("hipporag", ["fact-graph", "graph", "phrase-graph"]),
                                            ("naive", [])])
def test_index_keeps_the_query_graphs_the_readers_first_queries_read(tmp_path, capsys, method, graphs):
    code, _, err = run(capsys, "index", str(folder(tmp_path)), "--out", str(tmp_path / "idx"), "--method", method, "--offline")
    assert code == 0, err
    assert sorted(p.stem for p in (tmp_path / "idx" / "graphs").glob("*.npz")) == graphs
