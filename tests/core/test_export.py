"""rhizome export: the tables, parquet, JSON lines and GraphML of every registered method, read
back with pyarrow and networkx."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pyarrow.parquet as pq
import pytest

from rhizome.core.errors import InvalidInputError
from rhizome.core.types import Document
from rhizome.tools.export import (
    COLUMNS,
    export_tables,
    to_graph,
    write_graphml,
    write_jsonl,
    write_parquet,
)
from rhizome.tools.testing import IndexConformance, registered_methods, shelved

CONTROL = Document(id="pdf-page", text="Captain Mira Holt\x0c sails the Tarn Ferry.\x1b[0m Osric Vane\x0b keeps Gull Island Light.")
"""Control characters common in PDF and terminal text, which an insert accepts and XML 1.0 cannot hold."""


@pytest.fixture(scope="module", params=registered_methods())
def tables(request):
    index = IndexConformance().build(request.param, documents=shelved(), llm=None)  # offline extraction: a real graph
    yield request.param, export_tables(index), index.graph_contents().summary()
    index.close()


def test_tables_have_their_columns_and_cite_what_is_stored(tables):
    method, found, held = tables
    assert set(found) == set(COLUMNS)
    for name, rows in found.items():
        assert all(list(row) == list(COLUMNS[name]) for row in rows), name
    documents = {d["id"] for d in found["documents"]}
    units = {u["id"] for u in found["text_units"]}
    assert documents == {d.id for d in shelved()} and len(units) >= len(documents)
    assert json.loads(next(d for d in found["documents"] if d["id"] == "storm")["metadata"])["shelf"] == "north"
    entities = {e["id"] for e in found["entities"]}
    for row in found["entities"] + found["relationships"] + found["communities"]:
        assert set(row["text_unit_ids"]) <= units and set(row["document_ids"]) <= documents, (method, row["id"])
    for relation in found["relationships"]:
        assert {relation["source"], relation["target"]} <= entities, (method, relation["id"])
    communities = {c["id"]: c for c in found["communities"]}
    for community in communities.values():
        assert set(community["entity_ids"]) <= entities | units and set(community["children"]) <= set(communities)
        assert set(community["text_unit_ids"]) and set(community["document_ids"]), (method, community["id"])
        assert community["parent"] == "" or community["id"] in communities[community["parent"]]["children"]
    assert (len(entities), len(found["relationships"]), len(communities)) == (held["entities"], held["relations"], held["communities"])
    if method == "naive":
        assert not entities and not communities
    if method in ("graphrag", "lightrag", "hipporag"):  # entity graphs even on this small corpus
        assert entities and found["relationships"], method
    if method == "graphrag":
        assert communities and all(c["title"] for c in communities.values())


def test_parquet_and_jsonl_read_back_equal(tables, tmp_path):
    _, found, _ = tables
    for name, path in write_parquet(found, tmp_path / "parquet").items():
        table = pq.read_table(path)
        assert table.column_names == list(COLUMNS[name])
        assert table.to_pylist() == found[name], name
    for name, path in write_jsonl(found, tmp_path / "jsonl").items():
        assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == found[name], name


def test_graphml_reads_back_in_networkx(tables, tmp_path):
    method, found, _ = tables
    graph = to_graph(found)
    if not found["entities"]:
        with pytest.raises(InvalidInputError, match="no entity graph"):
            write_graphml(graph, tmp_path / "g.graphml")
        return
    back = nx.read_graphml(write_graphml(graph, tmp_path / "g.graphml"), force_multigraph=True)
    assert set(back.nodes) == {e["id"] for e in found["entities"]}
    assert {(u, v, key) for u, v, key in back.edges(keys=True)} == {(r["source"], r["target"], r["id"]) for r in found["relationships"]}
    for entity in found["entities"]:
        node = back.nodes[entity["id"]]
        assert node["label"] == entity["title"] and node["degree"] == entity["degree"]
        assert node["document_ids"].split(";") == entity["document_ids"]
        levels = {c["level"]: c["id"] for c in found["communities"] if c["id"] in entity["community_ids"]}
        for level in {c["level"] for c in found["communities"]}:
            assert node[f"community_{level}"] == levels.get(level, ""), (method, entity["id"], level)
    relation = found["relationships"][0]
    edge = back.edges[relation["source"], relation["target"], relation["id"]]
    assert edge["weight"] == pytest.approx(relation["weight"]) and edge["predicate"] == relation["predicate"]


@pytest.mark.parametrize("method", registered_methods())
def test_graphml_of_text_with_control_characters_is_valid(method, tmp_path):
    index = IndexConformance().build(method, documents=[CONTROL], llm=None)
    found = export_tables(index)
    index.close()
    if not found["entities"]:
        pytest.skip(f"{method} keeps no entity graph")
    graph = to_graph(found)
    back = nx.read_graphml(write_graphml(graph, tmp_path / "g.graphml"), force_multigraph=True)
    assert back.number_of_nodes() == graph.number_of_nodes() and back.number_of_edges() == graph.number_of_edges()
    written = "".join(str(value) for _, data in back.nodes(data=True) for value in data.values())
    written += "".join(str(value) for *_, data in back.edges(keys=True, data=True) for value in data.values())
    assert "\ufffd" in written and not set("\x0b\x0c\x1b") & set(written)
    assert any("\x1b" in e["description"] for e in found["entities"] + found["relationships"])  # the tables keep it


def test_a_failed_graphml_write_leaves_no_partial_file(tables, tmp_path, monkeypatch):
    _, found, _ = tables
    if not found["entities"]:
        return

    def fails(graph, path):
        Path(path).write_text("<?xml version=", encoding="utf-8")
        raise OSError("disk full")

    monkeypatch.setattr(nx, "write_graphml", fails)
    with pytest.raises(OSError, match="disk full"):
        write_graphml(to_graph(found), tmp_path / "new.graphml")
    (tmp_path / "old.graphml").write_text("an earlier export", encoding="utf-8")
    with pytest.raises(OSError, match="disk full"):
        write_graphml(to_graph(found), tmp_path / "old.graphml", replace=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.graphml"]
    assert (tmp_path / "old.graphml").read_text(encoding="utf-8") == "an earlier export"


def test_graphml_refuses_ids_that_differ_only_in_control_characters(tmp_path):
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(["Vane\x0b", "Vane\x0c"])
    with pytest.raises(InvalidInputError, match="parquet or jsonl"):
        write_graphml(graph, tmp_path / "g.graphml")
    assert not list(tmp_path.iterdir())


def test_an_export_never_writes_into_an_index_directory_nor_over_a_file(tmp_path, capsys):
    """Defect: `rhizome export IDX --out IDX/records.sqlite` wrote the GraphML over the index's
    own records (every later open failed), and --out replaced any existing file without a word."""
    from rhizome.core import Document
    from rhizome.core.store.storage import load_index
    from rhizome.rag.cli import main
    from rhizome.tools.testing import index_class

    built = index_class("lightrag")(path=tmp_path / "idx")
    built.insert([Document(id="d", text="Piet Hale kept the Oskel light. Ilse Varn drew the map.")])
    built.close()
    records = (tmp_path / "idx" / "records.sqlite").read_bytes()
    for out in (tmp_path / "idx" / "records.sqlite", tmp_path / "idx" / "vectors" / "g.graphml", tmp_path / "idx" / "sub"):
        assert main(["export", str(tmp_path / "idx"), "--out", str(out), "--force"]) == 2
        assert "inside the index directory" in capsys.readouterr().err
    assert (tmp_path / "idx" / "records.sqlite").read_bytes() == records
    load_index(tmp_path / "idx", readonly=True, offline=True).close()  # still opens
    (tmp_path / "g.graphml").write_text("mine", encoding="utf-8")
    assert main(["export", str(tmp_path / "idx"), "--out", str(tmp_path / "g.graphml")]) == 2
    assert "exists; choose another --out, or pass --force" in capsys.readouterr().err
    assert (tmp_path / "g.graphml").read_text(encoding="utf-8") == "mine"
    assert main(["export", str(tmp_path / "idx"), "--out", str(tmp_path / "g.graphml"), "--force"]) == 0
    assert main(["export", str(tmp_path / "idx"), "--format", "jsonl", "--out", str(tmp_path / "t")]) == 0
    assert main(["export", str(tmp_path / "idx"), "--format", "jsonl", "--out", str(tmp_path / "t")]) == 2

