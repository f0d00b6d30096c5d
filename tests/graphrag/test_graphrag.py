"""rhizome-graphrag: communities, reports, searches, incremental updates, persistence, adapters."""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rhizome.core import (
    ConfigurationError,
    Document,
    FakeChatModel,
    HashingEmbedder,
    InvalidInputError,
    ModelOutputError,
    load_index,
)
from rhizome.core.aio import run_sync
from rhizome.core.graph.entity_graph import EntityGraph
from rhizome.core.index.hierarchy import cluster_hierarchy
from rhizome.core.models.base import usage_scope
from rhizome.core.retrieval.answer import aanswer
from rhizome.core.retrieval.contract import vector_search
from rhizome.core.text import count_tokens
from rhizome.core.types import Community, Entity, Relation
from rhizome.graphrag import (
    GlobalSearch,
    GraphRAGIndex,
    LocalSearch,
    ReportWriter,
    build_input,
)
from rhizome.graphrag.prompts import MAP_SYSTEM, RATE_SYSTEM, REPORT_SYSTEM

# four topics whose names never meet across documents, so their graphs are disjoint
TOPICS = {
    "space": [
        "Carol White leads the Orion Project at NASA. Carol White met Dave Brown in Houston.",
        "Dave Brown tested the Orion Project capsule in Houston for NASA.",
    ],
    "business": [
        "Alice Smith founded Acme Industries in Paris. Alice Smith hired Bob Jones at Acme Industries.",
        "Bob Jones opened the Lyon office of Acme Industries with Alice Smith.",
    ],
    "music": [
        "Elena Rossi conducts the Vienna Philharmonic. Elena Rossi recorded Mahler with Franz Weber.",
        "Franz Weber plays first violin in the Vienna Philharmonic under Elena Rossi.",
    ],
    "sport": [
        "Tomas Berg coaches Falcon United. Tomas Berg signed Nils Holm for Falcon United.",
        "Nils Holm scored twice for Falcon United in Bergen.",
    ],
}


def topic_docs(*names: str) -> list[Document]:
    return [
        Document(id=f"{name}-{i}", text=text, metadata={"title": f"{name} {i}"})
        for name in names
        for i, text in enumerate(TOPICS[name])
    ]


def offline_index(**kwargs: Any) -> GraphRAGIndex:
    kwargs.setdefault("chunk_size", 200)
    kwargs.setdefault("chunk_overlap", 20)
    return GraphRAGIndex(HashingEmbedder(), **kwargs)


def report_json(messages: list[dict[str, str]]) -> dict[str, Any]:
    names = [line.split("|")[0] for line in messages[-1]["content"].splitlines() if line.count("|") == 3]
    names = [n for n in names if n not in ("entity", "source", "id")] or ["community"]
    return {
        "title": f"About {names[0]}",
        "summary": f"{', '.join(names[:3])} are connected.",
        "rating": 5,
        "rating_explanation": "test",
        "findings": [{"summary": n, "explanation": f"{n} is a member."} for n in names[:3]],
    }


class Responder:
    """Deterministic fake model: valid JSON for each GraphRAG call, counted by kind."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.fail_reports = False

    def __call__(self, messages: list[dict[str, str]], schema: Any) -> Any:
        system = messages[0]["content"]
        kind = {REPORT_SYSTEM: "report", MAP_SYSTEM: "map", RATE_SYSTEM: "rate"}.get(system, "other")
        self.counts[kind] = self.counts.get(kind, 0) + 1
        prompt = messages[-1]["content"]
        if kind == "report":
            return "not json" if self.fail_reports else report_json(messages)
        if kind == "rate":
            return {"rating": 5 if "Orion" in prompt.split("Community report:")[1] else 0}
        if kind == "map":
            ids = [line.split()[2] for line in prompt.splitlines() if line.startswith("----- report ")]
            return {
                "points": [
                    {"description": f"Point from {ids[0]}", "score": 80, "reports": [ids[0]]},
                    {"description": "Useless point", "score": 0, "reports": ids[:1]},
                    {"description": "Minor point", "score": 20, "reports": []},
                ]
            }
        if "answer" in (schema or {}).get("properties", {}) and "citations" in schema["properties"]:
            return {"answer": "The Orion Project is led by Carol White.", "citations": [1]}
        if "follow_ups" in (schema or {}).get("properties", {}):
            deeper = "Current sub-question" in prompt
            question = "What does NASA do in Houston?" if deeper else "Who is Dave Brown?"
            return {"answer": "Carol White leads it.", "follow_ups": [question], "score": 70}
        return {"summary": "merged"}


# -- communities ------------------------------------------------------------------------------


def test_leiden_recovers_planted_partition():
    import random

    rng = random.Random(7)
    groups = [[f"g{g}-n{i}" for i in range(8)] for g in range(4)]
    entities = {n: Entity(id=n, name=n) for group in groups for n in group}
    relations = {}
    for group in groups:
        for i, u in enumerate(group):
            for v in group[i + 1 :]:
                if rng.random() < 0.8:
                    relations[f"{u}|{v}"] = Relation(id=f"{u}|{v}", source=u, target=v, weight=1.0)
    for g in range(4):  # one weak bridge between neighbouring groups
        u, v = groups[g][0], groups[(g + 1) % 4][1]
        relations[f"{u}|{v}"] = Relation(id=f"{u}|{v}", source=u, target=v, weight=1.0)
    communities = cluster_hierarchy(EntityGraph.build(entities, relations).weighted(), max_cluster_size=10, seed=0xDEADBEEF)
    level0 = [c for c in communities if c.level == 0]
    assert sorted(sorted(c.entity_ids) for c in level0) == sorted(sorted(g) for g in groups)
    # stable ids: the same graph gives the same ids, whatever the insertion order
    again = cluster_hierarchy(EntityGraph.build(dict(reversed(entities.items())), dict(reversed(relations.items()))).weighted(), max_cluster_size=10, seed=0xDEADBEEF)
    assert {c.id for c in again} == {c.id for c in communities}


def test_hierarchy_splits_communities_above_max_cluster_size():
    graph = nx.planted_partition_graph(3, 12, 0.9, 0.01, seed=3)
    entities = {str(n): Entity(id=str(n), name=f"n{n}") for n in graph.nodes}
    relations = {f"{u}-{v}": Relation(id=f"{u}-{v}", source=str(u), target=str(v)) for u, v in graph.edges}
    communities = cluster_hierarchy(EntityGraph.build(entities, relations).weighted(), max_cluster_size=5, seed=1)
    by_id = {c.id: c for c in communities}
    assert any(c.level >= 1 for c in communities)
    for c in communities:
        if c.parent:
            assert set(c.entity_ids) < set(by_id[c.parent].entity_ids)
            assert c.id in by_id[c.parent].children


# -- reports ----------------------------------------------------------------------------------


def _small_graph() -> tuple[EntityGraph, Community]:
    entities = {n: Entity(id=n, name=n.title(), description=f"{n.title()} is a thing.") for n in ("a", "b", "c")}
    relations = {
        "ab": Relation(id="ab", source="a", target="b", description="A knows B", weight=2),
        "bc": Relation(id="bc", source="b", target="c", description="B knows C", weight=1),
    }
    community = Community(id="comm-0-x", level=0, entity_ids=["a", "b", "c"])
    return EntityGraph.build(entities, relations, {community.id: community}), community


async def test_report_json_is_validated_and_retried():
    graph, community = _small_graph()
    good = report_json([{"role": "user", "content": build_input(community, graph, {}, 8000).text}])
    bad_then_good = FakeChatModel([{"title": "", "summary": "x", "rating": 3, "findings": []}, good])
    writer = ReportWriter(bad_then_good)
    data = build_input(community, graph, {}, 8000)
    report = await writer.awrite(data, graph)
    assert report["title"].startswith("About") and report["findings"] and report["rating"] == 5.0
    assert bad_then_good.usage.calls == 2 and bad_then_good.usage.retries == 1
    assert "could not be used" in bad_then_good.requests[1][-1]["content"]
    with pytest.raises(ModelOutputError):
        await ReportWriter(FakeChatModel(["nonsense"], max_retries=1)).awrite(data, graph)
    # the identity stored reports were digested with
    assert ReportWriter(None).identity == ["offline", "", "English", 2000]


def test_a_sub_community_row_shows_a_long_summary_cut_and_is_counted_once(monkeypatch):
    from rhizome.graphrag import reports

    entities = {f"e{i}": Entity(id=f"e{i}", name=f"Entity {i}", description="word " * 80) for i in range(12)}
    relations = {f"r{i}": Relation(id=f"r{i}", source=f"e{i}", target=f"e{i + 1}", description="linked") for i in range(11)}
    long = "The river floods every spring. " * 100
    child_a = Community(id="ca", level=1, entity_ids=[f"e{i}" for i in range(6)], parent="p", title="Child | A", summary=long, rating=7.0, metadata={"summary_by": "model"})
    child_b = Community(id="cb", level=1, entity_ids=[f"e{i}" for i in range(6, 12)], parent="p", title="Child B", summary="second half", metadata={"summary_by": "model"})
    parent = Community(id="p", level=0, entity_ids=list(entities), children=["ca", "cb"])
    graph = EntityGraph.build(entities, relations, {c.id: c for c in (parent, child_a, child_b)})
    counted = []
    monkeypatch.setattr(reports, "count_tokens", lambda text: counted.append(text) or count_tokens(text))
    data = build_input(parent, graph, {"ca": child_a, "cb": child_b}, 900)
    assert [c.id for c in data.children] == ["ca", "cb"] and count_tokens(data.text) <= 900
    row = f"ca|Child / A|{reports.cut_at_word(long.strip(), reports.CHILD_CELL_BYTES)}|7.0"
    assert row in data.text.splitlines() and len(row.encode()) <= reports.CHILD_CELL_BYTES + len("ca|Child / A||7.0")
    assert "cb|Child B|second half|" in data.text.splitlines()
    assert counted.count(row) == 1  # counted for the budget, not again when rendered


def test_report_context_uses_child_reports_when_raw_data_is_too_long():
    entities = {f"e{i}": Entity(id=f"e{i}", name=f"Entity {i}", description="word " * 80) for i in range(12)}
    relations = {f"r{i}": Relation(id=f"r{i}", source=f"e{i}", target=f"e{i + 1}", description="linked") for i in range(11)}
    child_a = Community(id="ca", level=1, entity_ids=[f"e{i}" for i in range(6)], parent="p", title="Child A", summary="first half", metadata={"summary_by": "model"})
    child_b = Community(id="cb", level=1, entity_ids=[f"e{i}" for i in range(6, 12)], parent="p", title="Child B", summary="second half", metadata={"summary_by": "model"})
    parent = Community(id="p", level=0, entity_ids=list(entities), children=["ca", "cb"])
    graph = EntityGraph.build(entities, relations, {c.id: c for c in (parent, child_a, child_b)})
    data = build_input(parent, graph, {"ca": child_a, "cb": child_b}, 600)
    assert [c.id for c in data.children] == ["ca", "cb"] and "Child A" in data.text
    assert count_tokens(data.text) <= 600
    roomy = build_input(parent, graph, {"ca": child_a, "cb": child_b}, 8000)
    assert roomy.children == [] and "Entity 11" in roomy.text
    # a graph of relation outlines read through a reader gives the same contexts
    outlines = {k: SimpleNamespace(id=k, source=r.source, target=r.target, weight=r.weight) for k, r in relations.items()}
    light = EntityGraph.build(entities, outlines, {c.id: c for c in (parent, child_a, child_b)})
    light.read_relations = lambda ids: {k: relations[k] for k in ids}
    for budget in (300, 600, 1200, 8000):
        expected = build_input(parent, graph, {"ca": child_a, "cb": child_b}, budget)
        got = build_input(parent, light, {"ca": child_a, "cb": child_b}, budget)
        assert (got.text, got.children) == (expected.text, expected.children)



def test_report_context_reads_only_the_relations_it_shows():
    """A graph of relation outlines (no text) with a reader gives the same context as the whole
    graph, and reads relations in rank order only up to the first that does not fit."""
    from dataclasses import dataclass

    @dataclass
    class Outline:
        id: str
        source: str
        target: str
        weight: float

    entities = {f"e{i}": Entity(id=f"e{i}", name=f"Entity {i}", description="word " * 10) for i in range(40)}
    relations = {
        f"r{i}-{j}": Relation(id=f"r{i}-{j}", source=f"e{i}", target=f"e{j}", description="tied " * 15, weight=float(i + j))
        for i in range(40) for j in range(i + 1, 40) if (i * j) % 7 < 3
    }
    community = Community(id="c", level=0, entity_ids=list(entities))
    whole = EntityGraph.build(entities, relations, {"c": community})
    outlines = {k: Outline(k, r.source, r.target, r.weight) for k, r in relations.items()}
    light = EntityGraph.build(entities, outlines, {"c": community})
    read: list[str] = []

    def reader(ids: list[str]) -> dict[str, Relation]:
        read.extend(ids)
        return {k: relations[k] for k in ids}

    light.read_relations = reader

    for budget in (600, 2000, 100000):
        read.clear()
        expected = build_input(community, whole, {}, budget)
        got = build_input(community, light, {}, budget)
        assert got.text == expected.text and got.extra["relations"] == expected.extra["relations"]
        shown = len(expected.extra["relations"])
        assert shown < len(relations) or budget == 100000
        assert len(read) <= min(len(relations), shown + 64)  # the shown ones and the rest of one block
    assert len(read) == len(relations)  # everything fits the largest budget


# -- local search -----------------------------------------------------------------------------


def test_local_context_respects_the_budget_and_proportions():
    index = offline_index()
    index.insert(topic_docs("space", "business", "music", "sport"))
    for budget in (300, 800, 12000):
        search = LocalSearch(index, max_tokens=budget)
        context = run_sync(search.abuild("Who leads the Orion Project at NASA?"))
        sections: dict[str, int] = {}
        for hit in context:
            sections[hit.metadata["section"]] = sections.get(hit.metadata["section"], 0) + count_tokens(hit.text) + 2
        assert sections.get("reports", 0) <= int(budget * 0.15)
        assert sections.get("entities", 0) + sections.get("relationships", 0) <= budget - int(budget * 0.15) - int(budget * 0.5)
        assert sections.get("chunks", 0) <= int(budget * 0.5)
        assert sum(sections.values()) <= budget
    result = index.as_retriever(mode="local", k=3).search("Who leads the Orion Project at NASA?")
    hits = result.hits
    assert len(hits) == 3 and {h.kind for h in result.context} >= {"entity", "chunk", "relation"}
    chunks = [h for h in hits if h.kind == "chunk"]
    assert chunks[0].provenance.document_ids[0].startswith("space")
    assert all(h.provenance.chunk_ids for h in hits)


# -- global search ----------------------------------------------------------------------------


def test_global_map_reduce_with_a_fake_model_scores_filters_and_ranks():
    responder = Responder()
    llm = FakeChatModel(responder)
    index = offline_index(llm=llm, extraction="offline")
    index.insert(topic_docs("space", "business"))
    n_reports = len(index.graph().communities)
    assert responder.counts["report"] == n_reports
    search = index.as_retriever(mode="global", dynamic=False, map_max_tokens=600)
    found = search.search("What is the Orion Project?")
    hits = [h for h in found.hits if h.kind == "point"]
    assert found.stats["map_calls"] >= 1 and found.stats["model_calls"] == found.stats["map_calls"]
    # fewer points than k: the nearest chunks fill the rest, after every point
    assert found.hits[: len(hits)] == hits and all(h.metadata["via"] == "fill" for h in found.hits[len(hits) :])
    assert "Useless point" not in [h.text for h in hits]  # score 0 is filtered out
    assert [h.raw_score for h in hits] == sorted((h.raw_score for h in hits), reverse=True)
    assert hits[0].metadata["importance"] == 80 and hits[0].metadata["report_ids"]
    assert hits[0].provenance.chunk_ids
    minor = [h for h in hits if h.text == "Minor point"]
    assert minor and len(minor[0].metadata["report_ids"]) >= 1  # no ids cited: the batch's reports
    result = index.answer("What is the Orion Project?", mode="global", dynamic=False)
    assert "Carol White" in result.text and result.citations[0].metadata["report_ids"] and result.chunk_ids


def test_global_search_is_its_plan_map_and_reduce():
    """The steps a LangGraph graph runs as branches give the points the retriever returns."""
    index = offline_index(llm=FakeChatModel(Responder()), extraction="offline")
    index.insert(topic_docs("space", "business"))
    search = index.as_retriever(mode="global", dynamic=False, map_max_tokens=450, k=3)
    query = "What is the Orion Project?"
    plan = run_sync(search.aplan(query))
    assert len(plan.batches) >= 2 and plan.stats["map_calls"] == len(plan.batches)
    json.dumps(plan.model_dump())  # a plan is plain JSON
    points = [p for batch in plan.batches for p in run_sync(search.amap(query, batch, 3))]
    assert all(p.kind == "point" and p.provenance.chunk_ids for p in points)
    expected = [(h.id, h.text, h.raw_score, h.provenance) for h in search.retrieve(query) if h.kind == "point"]
    assert [(h.id, h.text, h.score, h.provenance) for h in search.reduce(query, points, 3)[: len(expected)]] == expected


def test_global_search_cites_only_the_points_its_reduce_keeps():
    """Its own search maps points that cite nothing and reads the chunks of the kept ones only."""
    index = offline_index()
    index.insert(topic_docs("space", "business", "music"))
    search = index.as_retriever(mode="global", dynamic=False, k=2, offline_batch=1)  # a batch a report
    mapped, cited = [], []
    apoints, acite = search.apoints, search.acite

    async def points(query, batch, k):
        found = await apoints(query, batch, k)
        mapped.extend(found)
        return found

    async def cite(query, found):
        cited.append(len(found))
        return await acite(query, found)

    search.apoints, search.acite = points, cite
    hits = [h for h in search.retrieve("Vienna Philharmonic Orion Project mission company merger") if h.kind == "point"]
    assert len(mapped) > 2 and not any(p.provenance.chunk_ids for p in mapped)
    assert cited == [2] and len(hits) == 2 and all(h.provenance.chunk_ids for h in hits)


def test_global_offline_points_score_by_query_overlap():
    index = offline_index()
    index.insert(topic_docs("space", "business", "music"))
    hits = index.as_retriever(mode="global").retrieve("Vienna Philharmonic violin")
    assert hits and "Vienna" in hits[0].text
    assert all(h.raw_score > 0 for h in hits)


def _tree_index(llm: Any) -> Any:
    """A hand-made hierarchy: two roots, each with two children; only the 'Orion' subtree is relevant."""
    entities = {f"e{i}": Entity(id=f"e{i}", name=f"E{i}") for i in range(8)}
    communities = {}

    def add(cid: str, level: int, members: list[str], parent: str | None, children: list[str], title: str) -> None:
        communities[cid] = Community(
            id=cid, level=level, entity_ids=members, parent=parent, children=children, title=title,
            summary=title, rating=5.0, findings=[{"summary": title, "explanation": title}], metadata={"summary_by": "model"},
        )

    add("r1", 0, ["e0", "e1", "e2", "e3"], None, ["c1", "c2"], "Orion space programme")
    add("c1", 1, ["e0", "e1"], "r1", [], "Orion capsule tests")
    add("c2", 1, ["e2", "e3"], "r1", [], "Budget office")
    add("r2", 0, ["e4", "e5", "e6", "e7"], None, ["c3", "c4"], "Football league")
    add("c3", 1, ["e4", "e5"], "r2", [], "Falcon United")
    add("c4", 1, ["e6", "e7"], "r2", [], "Bergen stadium")
    graph = EntityGraph.build(entities, {}, communities)

    async def areports(ids):
        return {i: graph.communities[i] for i in ids}

    store = SimpleNamespace(embedding_dimension=None, manifest=SimpleNamespace(embedding_dimension=None), chunks=lambda ids: {})
    return SimpleNamespace(graph=lambda: graph, llm=llm, store=store, areports=areports, config=SimpleNamespace(language="English"))


def test_dynamic_selection_prunes_irrelevant_subtrees():
    responder = Responder()
    llm = FakeChatModel(responder)
    search = GlobalSearch(_tree_index(llm), dynamic=True)
    selected, stats = run_sync(search.aselect("Tell me about Orion"))
    assert [c.id for c in selected] == ["c1"]  # parent r1 replaced by its relevant child
    # rated: the two roots and the children of the relevant root only; r2's subtree never rated
    assert set(stats["ratings"]) == {"r1", "r2", "c1", "c2"}
    assert stats["rating_calls"] == 4 == responder.counts["rate"]
    kept, _ = run_sync(GlobalSearch(_tree_index(llm), keep_parent=True).aselect("Tell me about Orion"))
    assert {c.id for c in kept} == {"r1", "c1"}
    static, _ = run_sync(GlobalSearch(_tree_index(llm), dynamic=False, level=1).aselect("Tell me about Orion"))
    assert {c.id for c in static} == {"c1", "c2", "c3", "c4"}
    budget = GlobalSearch(_tree_index(FakeChatModel(Responder())), max_rating_calls=1)
    assert run_sync(budget.aselect("Tell me about Orion"))[1]["rating_calls"] == 1


# -- incremental updates ----------------------------------------------------------------------


def test_incremental_insert_regenerates_only_affected_reports():
    responder = Responder()
    index = offline_index(llm=FakeChatModel(responder), extraction="offline")
    index.insert(topic_docs("space", "business"))
    first = responder.counts["report"]
    assert first == len(index.graph().communities) >= 2
    before = {c.id: c.title for c in index.graph().communities.values()}
    report = index.insert(topic_docs("music"))  # a disjoint topic: only its own communities are new
    new = {c.id for c in index.graph().communities.values()} - set(before)
    assert responder.counts["report"] - first == len(new) >= 1
    assert report.stats["reports_written"] == len(new) == report.stats["model_calls"]
    count = responder.counts["report"]
    index.insert(topic_docs("space", "business", "music"))  # nothing changed: nothing written
    assert responder.counts["report"] == count
    # a document that touches only the space topic rewrites only the space communities
    report = index.insert([Document(id="space-extra", text="Carol White and Dave Brown visited Houston again.")])
    space = [c for c in index.graph().communities.values() if "carol white" in c.entity_ids]
    assert responder.counts["report"] - count == len(space) == report.stats["reports_written"]
    _assert_no_orphans(index)  # every relation an update wrote has its vector


def test_local_search_seeds_the_walk_with_the_relations_nearest_the_question():
    index = offline_index(cache=False)
    index.insert(topic_docs("space", "business", "music"))
    local = index.as_retriever(mode="local")
    question = "Who leads the Orion Project?"
    vector = run_sync(index.embed([question]))
    relations = index.graph().relations
    nearest = vector_search(index.store, index.RELATION_COLLECTION, vector, 10)
    seeds = local.fact_seeds(vector)
    best = relations[nearest[0][0]]
    assert seeds[best.source] == seeds[best.target] == 1.0  # the nearest relation's two entities
    assert set(seeds) <= {x for r, _ in nearest for x in (relations[r].source, relations[r].target)}
    # an index without relation vectors (built before they existed) seeds from entity descriptions
    with index.store.transaction() as db:
        index.store.delete_vectors(db, index.RELATION_COLLECTION, list(relations))
    fallback = local.fact_seeds(vector)
    assert fallback and set(fallback) <= set(index.graph().entities)
    assert local.retrieve(question)


def test_failed_report_generation_loses_nothing_and_resumes():
    responder = Responder()
    index = offline_index(llm=FakeChatModel(responder, max_retries=0), extraction="offline")
    index.insert(topic_docs("space"))
    responder.fail_reports = True
    report = index.insert(topic_docs("music"))  # the documents are stored; the reports are owed
    assert report.unfinished and report.unfinished.startswith("ModelOutputError") and not report.failed
    assert index.needs_refresh
    assert set(index.store.document_ids()) == {"space-0", "space-1", "music-0", "music-1"}
    assert index.as_retriever(mode="local", k=3).retrieve("Elena Rossi")  # searchable meanwhile
    with pytest.raises(ModelOutputError):  # an explicit refresh says why it cannot finish
        index.refresh()
    responder.fail_reports = False
    report = index.insert(topic_docs("music"))  # the same insert again finishes the work
    assert report.skipped == ["music-0", "music-1"] and report.unfinished is None
    assert not index.needs_refresh
    assert any("elena rossi" in c.entity_ids for c in index.graph().communities.values())


def _records(index: GraphRAGIndex) -> dict[str, Any]:
    vectors: dict[str, set[str]] = {}
    for collection, key in index.store.query("SELECT collection, id FROM vectors"):
        collection = "graphrag_communities" if collection.startswith("graphrag_communities_L") else collection
        vectors.setdefault(collection, set()).add(key)
    return {
        "chunks": {r[0] for r in index.store.query("SELECT id FROM chunks")},
        "extractions": {e.chunk_id: e.model_dump() for e in index.entity_graph.extractions.all()},
        "entities": {e.id: e.model_dump() for e in index.entity_table.all()},
        "relations": {r.id: r.model_dump() for r in index.relation_table.all()},
        "communities": {c.id: c.model_dump() for c in index.communities.groups.all()},
        "vectors": vectors,
    }


def _assert_no_orphans(index: GraphRAGIndex) -> dict[str, Any]:
    r = _records(index)
    assert set(r["extractions"]) == r["chunks"]
    for entity in r["entities"].values():
        assert entity["source_chunk_ids"] and set(entity["source_chunk_ids"]) <= r["chunks"]
    for relation in r["relations"].values():
        assert relation["source"] in r["entities"] and relation["target"] in r["entities"]
        assert set(relation["source_chunk_ids"]) <= r["chunks"]
    for community in r["communities"].values():
        assert set(community["entity_ids"]) <= set(r["entities"])
        assert community["parent"] is None or community["parent"] in r["communities"]
    assert r["vectors"].get("chunks", set()) == r["chunks"]
    assert r["vectors"].get("graphrag_entities", set()) == set(r["entities"])
    assert r["vectors"].get("graphrag_relations", set()) == set(r["relations"])  # the facts local search matches
    assert r["vectors"].get("graphrag_names", set()) == set(r["entities"])  # what a query's names are linked to
    assert r["vectors"].get("graphrag_communities", set()) == set(r["communities"])
    return r


def test_delete_leaves_no_orphan_records():
    index = offline_index()
    index.insert(topic_docs("space", "business", "music"))
    _assert_no_orphans(index)
    index.delete(["music-0", "music-1"])
    r = _assert_no_orphans(index)
    assert "elena rossi" not in r["entities"] and "franz weber" not in r["entities"]
    assert "carol white" in r["entities"]
    # an entity supported by two documents survives the deletion of one
    index.delete("space-0")
    r = _assert_no_orphans(index)
    assert r["entities"]["dave brown"]["source_chunk_ids"] == ["space-1:0"]
    index.delete(["space-1", "business-0", "business-1"])
    r = _assert_no_orphans(index)
    assert not r["entities"] and not r["communities"] and not r["chunks"]
    assert index.as_retriever(mode="global").retrieve("anything") == []
    assert index.as_retriever(mode="local").retrieve("anything") == []


# -- lazy reports -----------------------------------------------------------------------------


def test_lazy_reports_are_written_only_for_what_a_query_needs():
    responder = Responder()
    index = offline_index(llm=FakeChatModel(responder), extraction="offline", reports="lazy")
    index.insert(topic_docs("space", "business", "music", "sport"))
    assert responder.counts.get("report", 0) == 0
    total = len(index.graph().communities)
    hits = index.as_retriever(mode="global").retrieve("What is the Orion Project?")
    written = responder.counts.get("report", 0)
    assert hits and 1 <= written < total
    index.as_retriever(mode="global").retrieve("What is the Orion Project?")
    assert responder.counts["report"] == written  # reports written once are kept


def test_lazy_reports_written_across_a_delete_are_not_stored():
    """Defect: a search writing lazy reports stored them after a delete committed meanwhile,
    bringing back communities the delete had removed (members and reports of deleted
    documents), which later searches and exports then read."""
    import threading

    from rhizome.core.models.fake import SchemaResponder
    from rhizome.tools.testing import CORPUS

    responder, asked, go = SchemaResponder(), threading.Event(), threading.Event()

    def reports_wait(messages, schema):  # a report is being written when the delete commits
        if messages[0]["content"] == REPORT_SYSTEM and not go.is_set():
            asked.set()
            go.wait(10)
        return responder(messages, schema)

    settings = {"reports": "lazy", "extraction": "offline", "cache": False}
    index = offline_index(llm=FakeChatModel(reports_wait), **settings)
    index.insert(CORPUS)
    gone = ["island", "storm", "chapel", "survey"]
    search = threading.Thread(target=lambda: index.as_retriever(mode="global", k=5, dynamic=False, level=0).retrieve(
        "Who keeps the lighthouse on Gull Island?"))
    search.start()
    assert asked.wait(10)
    index.delete(gone)
    go.set()
    search.join()
    clean = offline_index(llm=FakeChatModel(responder), **settings)
    clean.insert([d for d in CORPUS if d.id not in gone])
    members = {c.id: sorted(c.entity_ids) for c in index.graph().communities.values()}
    assert members == {c.id: sorted(c.entity_ids) for c in clean.graph().communities.values()}


# -- DRIFT and basic ---------------------------------------------------------------------------


def test_drift_primer_then_local_follow_ups():
    responder = Responder()
    llm = FakeChatModel(responder)
    index = offline_index(llm=llm, extraction="offline")
    index.insert(topic_docs("space", "business"))
    search = index.as_retriever(mode="drift", primer_folds=2, n_depth=2)
    found = search.search("Who leads the Orion Project?", k=3)
    hits = found.hits
    # passages are the hits; the answers of the steps and the reports are the context
    assert len(hits) == 3 and {h.kind for h in hits} == {"chunk"}
    assert {"point", "community", "chunk"} <= {h.kind for h in found.context}
    assert found.stats["follow_ups"] >= 2 and found.stats["points"] >= 1  # one round from the primer, one deeper
    assert [h.raw_score for h in hits] == sorted((h.raw_score for h in hits), reverse=True)
    offline = offline_index()
    offline.insert(topic_docs("space", "business"))
    hits = offline.as_retriever(mode="drift").retrieve("Who leads the Orion Project?")
    assert hits and any(h.kind == "chunk" and h.provenance.document_ids[0].startswith("space") for h in hits)
    basic = offline.as_retriever(mode="naive", k=2).retrieve("Orion Project NASA")
    assert len(basic) == 2 and basic[0].provenance.document_ids[0].startswith("space")


def test_offline_drift_turns_to_the_primer_communities_members_without_embedding_more():
    index = offline_index(cache=False)
    index.insert(topic_docs("space", "business", "music"))
    drift = index.as_retriever(mode="drift", followups_per_depth=2, followup_weight=0.4)
    asked: dict[str, Any] = {}
    arank = drift.local.arank

    async def spy(query: str, limit: int | None = None, **options: Any) -> Any:
        asked.update(options)
        return await arank(query, limit, **options)

    drift.local.arank = spy
    question = "Who leads the Orion Project?"
    with usage_scope() as used:
        hits = drift.retrieve(question)
    with usage_scope() as local:
        index.as_retriever(mode="local").retrieve(question)
    graph = index.graph()
    primer = [c for c, _ in index.communities.search(run_sync(index.embed([question])), 20) if c in graph.communities]
    focus = {e.id for c in primer[:2] for e in graph.members(graph.communities[c])[:3]}
    assert hits and asked["followups"] == [] and asked["entities"]
    # the members of each primer community at 0.4 times its weight relative to the other reports
    assert set(asked["entities"]) == focus and max(asked["entities"].values()) == pytest.approx(0.4)
    assert all(0 < w <= 0.4 for w in asked["entities"].values())
    # the follow-ups add no text to embed, and the question is embedded once, for primer and walk
    assert used.embed.texts == local.embed.texts


# -- answers ----------------------------------------------------------------------------------


async def test_local_answer_cites_reports_and_chunks():
    llm = FakeChatModel(Responder())
    index = offline_index(llm=llm, extraction="offline")
    await index.ainsert(topic_docs("space"))
    result = await index.aanswer("Who leads the Orion Project?", mode="local")
    assert result.text and result.citations
    offline = offline_index()
    await offline.ainsert(topic_docs("space", "business"))
    hits = await offline.as_retriever().acontext("Who founded Acme Industries?")
    answer = await aanswer("Who founded Acme Industries?", hits)
    assert answer.extractive and "Alice Smith" in answer.text and answer.chunk_ids


# -- persistence, adapters, CLI, errors --------------------------------------------------------


def test_persist_and_load_round_trip(tmp_path):
    index = offline_index(path=tmp_path / "idx", reports="lazy", max_cluster_size=7)
    index.insert(topic_docs("space", "business"))
    index.as_retriever(mode="local").retrieve("Orion Project")  # writes the reports it needs
    before = [(h.kind, h.id) for h in index.as_retriever(mode="local").retrieve("Orion Project")]
    index.close()
    loaded = load_index(tmp_path / "idx")
    assert isinstance(loaded, GraphRAGIndex)
    assert loaded.config.reports == "lazy" and loaded.config.max_cluster_size == 7 and loaded.config.extraction == "offline"
    assert [(h.kind, h.id) for h in loaded.as_retriever(mode="local").retrieve("Orion Project")] == before
    loaded.insert(topic_docs("music"))
    assert any("elena rossi" in c.entity_ids for c in loaded.graph().communities.values())
    loaded.close()
    readonly = GraphRAGIndex.load(tmp_path / "idx", readonly=True)
    assert readonly.as_retriever(mode="global").retrieve("Vienna Philharmonic")
    readonly.close()
    memory = offline_index()
    memory.insert(topic_docs("sport"))
    memory.persist(tmp_path / "copy")
    with sqlite3.connect(tmp_path / "copy" / "records.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM rec_graphrag_entities").fetchone()[0] > 0


def test_framework_retrievers_work_through_the_generic_adapters():
    from langchain_rhizome import RhizomeRetriever
    from llama_index.retrievers.rhizome import RhizomeRetriever as LlamaRetriever

    index = offline_index()
    index.insert(topic_docs("space", "business"))
    docs = RhizomeRetriever.from_index(index, k=3, mode="global").invoke("Orion Project NASA")
    assert docs and docs[0].metadata["kind"] == "point"
    nodes = LlamaRetriever(retriever=index.as_retriever(mode="local"), similarity_top_k=3).retrieve("Orion Project")
    assert nodes


def test_cli_index_and_query_modes(tmp_path, capsys):
    from rhizome.rag.cli import main, sample_corpus

    out = tmp_path / "g"
    assert main(["index", str(sample_corpus()), "--out", str(out), "--method", "graphrag", "--offline", "-q"]) == 0
    capsys.readouterr()
    for mode in ("local", "global", "drift", "naive"):
        assert main(["query", str(out), "Who led the closure of the Mire Banks?", "--mode", mode, "--json", "--offline"]) == 0
        payload = json.loads(capsys.readouterr().out)
        assert payload["hits"], mode


def test_bad_input_gets_typed_errors():
    with pytest.raises(ConfigurationError):
        offline_index(reports="sometimes")
    with pytest.raises(ConfigurationError):
        offline_index(extraction="magic")
    index = offline_index()
    index.insert(topic_docs("space"))
    with pytest.raises(ConfigurationError):
        index.as_retriever(mode="sideways")
    with pytest.raises(InvalidInputError):
        index.as_retriever(mode="local").retrieve("  ")
    with pytest.raises(InvalidInputError):
        index.as_retriever(mode="global").retrieve("x", k=0)
    with pytest.raises(ConfigurationError, match=r"the local mode: text_unit_prop \+ community_prop must not exceed 1, got 0.9 \+ 0.5"):
        index.as_retriever(mode="local", text_unit_prop=0.9, community_prop=0.5)
    with pytest.raises(ConfigurationError, match=r"the drift mode: local_text_unit_prop \+ local_community_prop must not exceed 1"):
        index.as_retriever(mode="drift", local_text_unit_prop=0.95)
    with pytest.raises(ConfigurationError, match="the drift mode: primer_k must be a positive integer, got True"):
        index.as_retriever(mode="drift", primer_k=True)
    with pytest.raises(ConfigurationError, match="the global mode has no setting 'top_k_entities'; its settings are level, dynamic"):
        index.as_retriever(mode="global", top_k_entities=5)  # a setting of another mode
    assert index.as_retriever(mode="local", top_k_entities=5).params.top_k_entities == 5
    # checked when the retriever is made, saying what is allowed: "no" was taken as true, "high" a raw ValueError
    for option, says in [({"min_score": "high"}, "min_score must be a number between 0 and 100"),
                         ({"keep_parent": "no"}, "keep_parent must be True or False"),
                         ({"dynamic": "no"}, "dynamic must be True or False"),
                         ({"seed": "x"}, "seed must be an integer"),
                         ({"threshold": "1"}, "threshold must be a number between 0 and 5")]:
        with pytest.raises(ConfigurationError, match=says):
            index.as_retriever(mode="global", **option)
    with pytest.raises(ConfigurationError):
        GraphRAGIndex(HashingEmbedder(), extraction="llm").insert(topic_docs("music"))


def test_report_contexts_pack_the_same_rows_by_bytes_and_by_tokens(monkeypatch):
    """A context whose rows fit by bytes is packed without tokenising a row, and chooses
    exactly the rows packing by tokens chooses, at every budget."""
    from rhizome.core.graph.entity_graph import EntityGraph
    from rhizome.core.types import Community, Entity, Relation
    from rhizome.graphrag import reports

    entities = {e: Entity(id=e, name=e.upper(), description=f"{e} is a thing " * (3 + i)) for i, e in enumerate("abcdef")}
    relations = {
        f"r{i}": Relation(id=f"r{i}", source=s, target=t, weight=1.0 + i, description=f"{s} knows {t} well")
        for i, (s, t) in enumerate(["ab", "bc", "cd", "de", "ef", "fa", "ac"])
    }
    community = Community(id="comm-0-x", level=0, entity_ids=list("abcdef"))
    graph = EntityGraph.build(entities, relations, {community.id: community})
    members = graph.members(community)
    ranked = sorted(relations.values(), key=lambda r: (-graph.combined_degree(r), -r.weight, r.id))
    rows = reports._Rows(graph)
    whole = reports._HEADERS + sum(rows.entity(e).bound + 1 for e in members) + sum(rows.relation(r).bound + 1 for r in ranked)
    gave_up = 0
    for budget in range(reports._HEADERS, whole + 20, 7):
        fresh = reports._Rows(EntityGraph.build(entities, relations, {community.id: community}))
        counted = reports._pack_counted(members, ranked, rows, budget)
        assert reports._pack_raw(members, ranked, fresh, budget) == counted
        # the rows' floors give a context up only where the counted packing could not fit it
        fresh = reports._Rows(EntityGraph.build(entities, relations, {community.id: community}))
        over = reports._surely_over(members, ranked, fresh, budget)
        assert not (over and counted[2])
        gave_up += over
    assert gave_up  # some budgets were given up by the floors alone

    # a context that fits by tokens but not by bytes is found whole counting only its largest rows
    exact = reports._HEADERS + sum(rows.entity(e).tokens + 1 for e in members) + sum(rows.relation(r).tokens + 1 for r in ranked)
    fresh = reports._Rows(EntityGraph.build(entities, relations, {community.id: community}))
    assert exact < whole and reports._pack_raw(members, ranked, fresh, exact + 40) == (members, ranked, True)
    counted = [row for row in [*fresh.entities.values(), *fresh.relations.values()] if row.counted]
    assert 0 < len(counted) < len(members) + len(ranked)

    def no_counting(text):
        raise AssertionError("a context that fits by bytes was tokenised")

    monkeypatch.setattr(reports, "count_tokens", no_counting)
    fresh = reports._Rows(EntityGraph.build(entities, relations, {community.id: community}))
    assert reports._pack_raw(members, ranked, fresh, whole) == (members, ranked, True)


CELL_WORDS = ["Paris", "is", "a", "city", "1999", "123456", "—", "naïve", "日本語", "🙂", "don't", "x" * 60, "!!", "\u00a0", "|", "é" * 30]
CELLS = st.lists(st.sampled_from(CELL_WORDS), min_size=1, max_size=400).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(CELL_WORDS), max_size=12).map(" ".join), CELLS, st.integers(min_value=1, max_value=1300))
def test_a_context_rows_floor_never_exceeds_its_tokens(head, cell, max_bytes):
    """The lower bound packing gives up by is one, and its upper bound is one."""
    from rhizome.graphrag.reports import _Row

    row = _Row((), f"{head}|TYPE|", cell, max_bytes, "|12")
    assert row.floor <= row.tokens <= row.bound


@settings(max_examples=200, deadline=None)
@given(CELLS.map(lambda t: " ".join(t.split())), st.integers(min_value=1, max_value=1300))
def test_a_long_cell_is_cut_at_the_last_word_that_fits_its_bytes(cell, max_bytes):
    from rhizome.graphrag.reports import cut_at_word

    cut = cut_at_word(cell, max_bytes)
    assert cell.startswith(cut) and len(cut.encode("utf-8")) <= max_bytes or cut == cell
    if cut != cell:
        longer = cell[len(cut) :]
        next_word = longer.split(" ")[1] if longer.startswith(" ") else ""
        if longer.startswith(" "):  # no whole word more would fit
            assert len(f"{cut} {next_word}".encode()) > max_bytes
        else:  # a first word longer than the cell: as many whole characters of it as fit
            assert " " not in cut and len(cell[: len(cut) + 1].encode("utf-8")) > max_bytes
    else:
        assert len(cell.encode("utf-8")) <= max_bytes


def test_a_context_row_cuts_a_long_text_and_counts_itself():
    from rhizome.core.text import count_tokens
    from rhizome.graphrag.reports import ENTITY_CELL_BYTES, _Row

    long = _Row((), "PARIS|CITY|", "Paris is a large city on the river. " * 200, ENTITY_CELL_BYTES, "|12")
    assert long.text.startswith("PARIS|CITY|Paris is") and long.text.endswith("river. Paris is a|12")  # 33 sentences of 36 bytes, then two words
    assert len(long.text) <= ENTITY_CELL_BYTES + len("PARIS|CITY||12") and long.bound == len(long.text)
    assert not long.counted and long.tokens == count_tokens(long.text) and long.counted
    short = _Row((), "PARIS|CITY|", "A  city |\n here.", ENTITY_CELL_BYTES, "|12")
    assert short.text == "PARIS|CITY|A city / here.|12" and short.tokens == count_tokens(short.text)
