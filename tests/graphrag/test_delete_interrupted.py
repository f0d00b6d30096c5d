"""A GraphRAG delete interrupted during the rebuild that follows it (issue 13).

The delete's own transaction removes whatever only the deleted documents supported — entities
and relations left without a source chunk, the deleted chunks in the survivors' source lists,
their vectors, and the communities (with their reports and report vectors) holding a member the
deleted documents supported — so that every mode is correct from the moment the delete commits,
whether or not the rebuild (re-clustering, reports) runs. The next insert, delete or refresh
finishes the rebuild, ending equal to a clean build of the remaining documents.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from rhizome.core import Document, FakeChatModel, HashingEmbedder
from rhizome.core.index.hierarchy import prune_groups
from rhizome.core.models.fake import SchemaResponder
from rhizome.core.types import Community
from rhizome.graphrag import GraphRAGIndex, ReportWriter

DOCS = [
    Document(id="space-0", text="Carol White leads the Orion Project at NASA. Carol White met Dave Brown in Houston."),
    Document(id="space-1", text="Dave Brown tested the Orion Project capsule in Houston for NASA."),
    Document(id="business-0", text="Alice Smith founded Acme Industries in Paris. Alice Smith hired Bob Jones at Acme Industries."),
    Document(id="business-1", text="Bob Jones opened the Lyon office of Acme Industries with Alice Smith."),
    Document(id="music-0", text="Elena Rossi conducts the Vienna Philharmonic. Elena Rossi recorded Mahler with Franz Weber."),
    Document(id="music-1", text="Franz Weber plays first violin in the Vienna Philharmonic under Elena Rossi."),
    Document(id="sport-0", text="Tomas Berg coaches Falcon United. Tomas Berg signed Nils Holm for Falcon United."),
    Document(id="sport-1", text="Nils Holm scored twice for Falcon United in Bergen."),
    # bridges: the deleted documents share entities with the ones that stay
    Document(id="bridge-0", text="Carol White met Elena Rossi after a concert of the Vienna Philharmonic in Houston."),
    Document(id="bridge-1", text="Alice Smith and Tomas Berg signed a sponsorship of Falcon United by Acme Industries."),
]
DELETED = ["music-0", "music-1", "bridge-0", "space-1"]
REMAINING = [d for d in DOCS if d.id not in DELETED]
QUERIES = [
    "Elena Rossi",
    "Who conducts the Vienna Philharmonic?",
    "Franz Weber and Mahler",
    "Carol White in Houston",
    "Dave Brown and the Orion Project capsule",
    "What are the main themes of the collection?",
]


class Killed(BaseException):
    """Stands for a kill: not an ``Exception``, so nothing on the way catches it."""


def build(path: Path, documents: list[Document] = DOCS, llm: Any = None, **settings: Any) -> GraphRAGIndex:
    # one document per batch: the offline extractor's weights depend on the chunks of one call,
    # so the extractions of a clean build are only comparable batch for batch
    index = GraphRAGIndex(
        HashingEmbedder(), llm=llm, path=path, extraction="offline", chunk_size=200, chunk_overlap=20, batch_size=1, **settings
    )
    if documents:
        index.insert(documents)
    return index


def reopen(path: Path, llm: Any = None) -> GraphRAGIndex:
    return GraphRAGIndex(HashingEmbedder(), llm=llm, path=path, batch_size=1)


def fake_model() -> FakeChatModel:
    return FakeChatModel(SchemaResponder(), name="fake:delete")


def records(index: GraphRAGIndex) -> dict[str, Any]:
    """Every stored record, row for row (vectors by collection and id)."""
    vectors: dict[str, set[str]] = {}
    for collection, key in index.store.query("SELECT collection, id FROM vectors"):
        collection = "graphrag_communities" if collection.startswith("graphrag_communities_L") else collection
        vectors.setdefault(collection, set()).add(key)
    return {
        "documents": set(index.store.document_ids()),
        "chunks": {r[0] for r in index.store.query("SELECT id FROM chunks")},
        "extractions": {e.chunk_id: e.model_dump() for e in index.entity_graph.extractions.all()},
        "entities": {e.id: e.model_dump() for e in index.entity_table.all()},
        "relations": {r.id: r.model_dump() for r in index.relation_table.all()},
        "communities": {c.id: c.model_dump() for c in index.communities.groups.all()},
        "vectors": vectors,
    }


def gone(original: dict[str, Any], clean: dict[str, Any]) -> tuple[set[str], set[str]]:
    """Ids of the entities and relations only the deleted documents supported, and the names of
    those entities that no remaining document mentions (so no search text may hold them)."""
    entities = set(original["entities"]) - set(clean["entities"])
    relations = set(original["relations"]) - set(clean["relations"])
    remaining = " ".join(d.text for d in REMAINING).lower()
    names = {original["entities"][e]["name"].lower() for e in entities}
    names = {n for n in names if n not in remaining}
    assert entities and relations and {"elena rossi", "franz weber", "vienna philharmonic"} <= names
    return entities | relations, names


def assert_serves_nothing_deleted(index: GraphRAGIndex, clean: dict[str, Any], gone_ids: set[str], gone_names: set[str]) -> None:
    deleted_chunks = {f"{d}:0" for d in DELETED}
    r = records(index)
    # the store: the documents, their chunks and extractions are gone
    assert not r["documents"] & set(DELETED) and not r["chunks"] & deleted_chunks
    assert r["documents"] == clean["documents"] and r["chunks"] == clean["chunks"]
    # the graph the modes read: the entities and relations of the clean build, each citing the
    # stored chunks that support it
    assert set(r["entities"]) == set(clean["entities"]) and set(r["relations"]) == set(clean["relations"])
    for kind in ("entities", "relations"):
        for key, record in r[kind].items():
            assert set(record["source_chunk_ids"]) == set(clean[kind][key]["source_chunk_ids"]), key
            for name in gone_names:
                assert name not in record["description"].lower(), (key, name)
    for relation in r["relations"].values():
        assert relation["source"] in r["entities"] and relation["target"] in r["entities"]
    for community in r["communities"].values():
        assert set(community["entity_ids"]) <= set(r["entities"])
        assert community["parent"] is None or community["parent"] in r["communities"]
        assert set(community["children"]) <= set(r["communities"])
        text = " ".join([community["title"] or "", community["summary"] or "", str(community["findings"])]).lower()
        assert not any(name in text for name in gone_names), community["id"]
    assert r["vectors"].get("chunks", set()) == r["chunks"]
    assert r["vectors"].get("graphrag_entities", set()) == set(r["entities"])
    assert r["vectors"].get("graphrag_communities", set()) == set(r["communities"])
    graph = index.graph()
    assert set(graph.entities_of_chunk) <= r["chunks"]
    assert set(index.evidence().chunk_ids) <= r["chunks"]
    # every mode, hits and context
    for mode in index.modes:
        for query in QUERIES:
            result = index.as_retriever(mode=mode, k=5).search(query)
            for hit in [*result.hits, *(result.context or [])]:
                where = (mode, query, hit.kind, hit.id)
                assert hit.id not in gone_ids and hit.id not in deleted_chunks, where
                assert not set(hit.provenance.document_ids) & set(DELETED), where
                assert not set(hit.provenance.chunk_ids) & deleted_chunks, where
                assert set(hit.metadata.get("report_ids", ())) <= set(r["communities"]), where
                assert not any(name in hit.text.lower() for name in gone_names), where
            answer = index.answer(query, mode=mode)
            assert not set(answer.chunk_ids) & deleted_chunks


def interrupt(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """Make the rebuild after the next change stop at ``point`` as a kill would."""
    import rhizome.graphrag.index as module

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise Killed(point)

    if point == "start":
        monkeypatch.setattr(GraphRAGIndex, "_rebuild", lambda self, stats: killed())
    elif point == "clustering":
        monkeypatch.setattr(module, "cluster_hierarchy", killed)
    elif point == "reports":
        async def awrite(self: Any, data: Any, graph: Any) -> Any:
            raise Killed(point)  # summaries and unchanged reports are committed or reused by now

        monkeypatch.setattr(ReportWriter, "awrite", awrite)
    elif point == "commit":  # inside the rebuild's final transaction: rolled back
        monkeypatch.setattr(module, "prune_stage", killed)
    else:  # pragma: no cover
        raise ValueError(point)


@pytest.mark.parametrize(
    ("point", "finish", "model", "levels"),
    [
        ("start", "delete", False, 1),
        ("clustering", "refresh", False, 1),
        ("reports", "insert", False, 1),
        ("commit", "delete", False, 1),
        ("reports", "delete", True, 1),
        ("reports", "refresh", False, 2),  # sub-communities left without their parent
    ],
)
def test_a_delete_killed_during_its_rebuild_serves_nothing_deleted_and_completes(tmp_path, monkeypatch, point, finish, model, levels):
    llm = fake_model() if model else None
    settings = {"max_cluster_size": 3} if levels > 1 else {}
    clean = records(build(tmp_path / "clean", REMAINING, llm=fake_model() if model else None, **settings))
    index = build(tmp_path / "index", llm=llm, **settings)
    assert index.graph().levels() == levels
    gone_ids, gone_names = gone(records(index), clean)

    with monkeypatch.context() as patch:
        interrupt(patch, point)
        with pytest.raises(Killed):
            index.delete(DELETED)
    index.close()

    index = reopen(tmp_path / "index", llm=fake_model() if model else None)
    assert index.needs_refresh
    assert_serves_nothing_deleted(index, clean, gone_ids, gone_names)

    if finish == "delete":  # the same delete again: every id is missing, and the rebuild is done
        report = index.delete(DELETED)
        assert report.missing == DELETED and not report.deleted and report.unfinished is None
    elif finish == "refresh":
        index.refresh()
    else:
        report = index.insert(REMAINING)
        assert sorted(report.skipped) == sorted(d.id for d in REMAINING)
    assert not index.needs_refresh
    assert records(index) == clean


def test_the_delete_alone_serves_nothing_deleted_in_the_same_process(tmp_path, monkeypatch):
    """Before the rebuild, in the process that deleted (its cached graph and vectors)."""
    clean = records(build(tmp_path / "clean", REMAINING))
    index = build(tmp_path / "index")
    gone_ids, gone_names = gone(records(index), clean)
    for mode in index.modes:  # warm every cache the searches keep
        index.as_retriever(mode=mode).search(QUERIES[0])
    with monkeypatch.context() as patch:
        interrupt(patch, "start")
        with pytest.raises(Killed):
            index.delete(DELETED)
    assert_serves_nothing_deleted(index, clean, gone_ids, gone_names)
    index.refresh()
    assert records(index) == clean


def test_a_replaced_document_stops_serving_its_old_version_before_the_rebuild(tmp_path, monkeypatch):
    index = build(tmp_path / "index")
    new = Document(id="music-0", text="Greta Lund sings at the Oslo Opera.")
    with monkeypatch.context() as patch:
        interrupt(patch, "start")
        with pytest.raises(Killed):
            index.insert([new])
    entities = {e.id for e in index.entity_table.all()}
    assert "elena rossi" in entities and "mahler" not in entities  # music-1 and bridge-0 still name her
    for community in index.communities.all().values():
        assert "mahler" not in community.entity_ids
    index.refresh()
    assert records(index) == records(build(tmp_path / "clean", [d for d in DOCS if d.id != "music-0"] + [new]))


def test_prune_groups_drops_the_groups_of_touched_members_and_keeps_the_rest_reachable():
    def group(gid: str, level: int, members: str, parent: str | None, children: list[str]) -> Community:
        return Community(id=gid, level=level, entity_ids=list(members), parent=parent, children=children, title=gid)

    groups = {
        g.id: g
        for g in [
            group("r1", 0, "abcd", None, ["c1", "c2"]),
            group("c1", 1, "ab", "r1", ["d1"]),
            group("d1", 2, "a", "c1", []),
            group("c2", 1, "cd", "r1", []),
            group("r2", 0, "ef", None, []),
        ]
    }
    dropped, changed = prune_groups(groups, {"c"})
    assert [g.id for g in dropped] == ["c2", "r1"]  # the group of c, and its parent
    assert {g.id: (g.parent, g.children) for g in changed} == {"c1": (None, ["d1"])}  # now a root
    assert groups["c1"].parent == "r1"  # the input is not changed
    assert prune_groups(groups, {"z"}) == ([], [])


KILLED_DURING_REBUILD = textwrap.dedent(
    """
    import sys, time
    from rhizome.core import HashingEmbedder
    from rhizome.graphrag import GraphRAGIndex, ReportWriter

    original = ReportWriter.awrite

    async def awrite(self, data, graph):
        print("rebuilding", flush=True)  # the delete committed; the rebuild writes reports
        time.sleep(60)
        return await original(self, data, graph)

    ReportWriter.awrite = awrite
    index = GraphRAGIndex(HashingEmbedder(), path=sys.argv[1])
    index.delete(sys.argv[2].split(","))
    print("finished", flush=True)
    """
)


def test_a_delete_sigkilled_during_its_rebuild_completes_in_the_next_process(tmp_path):
    clean = records(build(tmp_path / "clean", REMAINING))
    index = build(tmp_path / "index")
    gone_ids, gone_names = gone(records(index), clean)
    index.close()

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_DURING_REBUILD, str(tmp_path / "index"), ",".join(DELETED)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline() if ready else ""
        assert line.strip() == "rebuilding", process.stderr.read() if process.poll() is not None else line
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL

    index = reopen(tmp_path / "index")
    assert index.needs_refresh
    assert_serves_nothing_deleted(index, clean, gone_ids, gone_names)
    report = index.delete(DELETED)
    assert report.missing == DELETED and report.unfinished is None and not index.needs_refresh
    assert records(index) == clean
