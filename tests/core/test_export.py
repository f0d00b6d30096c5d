"""rhizome export: the tables, parquet, JSON lines and GraphML of every registered method, read
back with pyarrow and networkx."""

from __future__ import annotations

import json

import networkx as nx
import pyarrow.parquet as pq
import pytest

from rhizome.core.errors import InvalidInputError
from rhizome.core.export import (
    COLUMNS,
    export_tables,
    to_graph,
    write_graphml,
    write_jsonl,
    write_parquet,
)
from rhizome.core.testing import IndexConformance, registered_methods, shelved


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
