"""Incremental GraphRAG inserts (issue 21): an insert merges only its own extractions, clusters
again only around what it changed, and writes reports and vectors only for the communities
whose members changed; a full rebuild stays available."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest

import rhizome.graphrag.index as module
from rhizome.core import Document, FakeChatModel, HashingEmbedder
from rhizome.core.index.hierarchy import cluster_hierarchy
from rhizome.graphrag import GraphRAGIndex

PEOPLE = [
    ["Carol White", "Dave Brown", "Erin Black", "Frank Green"],
    ["Alice Smith", "Bob Jones", "Cathy Moore", "Dan Hall"],
    ["Elena Rossi", "Franz Weber", "Greta Lang", "Hans Vogel"],
    ["Ivan Petrov", "Juri Sokol", "Kira Volkova", "Lev Orlov"],
    ["Mona Berg", "Nils Dahl", "Olga Lind", "Per Holm"],
]


def group_docs() -> list[Document]:
    docs = []
    for g, names in enumerate(PEOPLE):
        for i in range(len(names)):
            a, b, c = names[i], names[(i + 1) % len(names)], names[(i + 2) % len(names)]
            docs.append(Document(id=f"g{g}-{i}", text=f"{a} met {b} in Town{g}. {a} wrote to {c} about Town{g}."))
    return docs


class Reports:
    """A fake model that answers report prompts (everything else with a one-line summary)."""

    def __init__(self) -> None:
        self.reports = 0

    def __call__(self, messages: list[dict[str, str]], schema: Any) -> Any:
        if "findings" in (schema or {}).get("properties", {}):
            self.reports += 1
            return {"title": f"Report {self.reports}", "summary": "People meet.", "rating": 5, "rating_explanation": "fixed",
                    "findings": [{"summary": "meetings", "explanation": "They meet."}]}
        return {"summary": "merged description"}


def make(**options: Any) -> GraphRAGIndex:
    return GraphRAGIndex(HashingEmbedder(), extraction="offline", chunk_size=200, chunk_overlap=20, **options)


def test_an_insert_touching_one_group_writes_only_that_groups_reports(monkeypatch):
    responder = Reports()
    index = make(llm=FakeChatModel(responder))
    index.insert(group_docs())
    before = index.graph().communities
    assert len(before) >= len(PEOPLE)
    inputs: list[str] = []
    real = module.build_input
    monkeypatch.setattr(module, "build_input", lambda c, *a, **k: inputs.append(c.id) or real(c, *a, **k))
    written = responder.reports

    report = index.insert(Document(id="extra", text="Carol White met Dave Brown again in Town0."))

    after = index.graph().communities
    touched = {c.id for c in after.values() if {"carol white", "dave brown"} & set(c.entity_ids)}
    assert set(inputs) == touched  # no other community's report input was even built
    assert report.stats["recluster"] == "local"
    assert responder.reports - written == report.stats["reports_written"] <= len(touched)
    others = {c.id for c in before.values() if "carol white" not in c.entity_ids and "dave brown" not in c.entity_ids}
    assert others <= set(after)  # every other community kept its id ...
    assert all(after[c].title == before[c].title for c in others)  # ... and its report
    assert report.stats["entity_embeddings"] <= 3 and report.stats["community_embeddings"] <= len(touched)


def test_incremental_inserts_then_rebuild_equal_one_build():
    docs = group_docs()
    index = make()
    index.insert(docs[:8])
    index.insert(docs[8:14])
    index.insert(docs[14:])
    stats = index.rebuild()
    assert stats["communities"] == len(index.graph().communities)
    whole = make()
    whole.insert(docs)
    for table in ("entity_table", "relation_table"):
        assert getattr(index, table).all() == getattr(whole, table).all()
    assert index.graph().communities.keys() == whole.graph().communities.keys()


def test_an_interrupted_update_is_finished_by_the_next_insert(monkeypatch):
    docs = group_docs()
    index = make()
    index.insert(docs[:10])

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(module, "recluster_hierarchy", killed)
        with pytest.raises(KeyboardInterrupt):
            index.insert(docs[10:15])
    assert index.needs_refresh and index.changed.count() > 0
    index.insert(docs[15:])  # merges the chunks the cut-short insert left as well as its own
    assert not index.needs_refresh and index.changed.count() == 0
    names = {e.name for e in index.entity_table.all()}
    assert {"Ivan Petrov", "Mona Berg"} <= names
    clustered = {e for c in index.graph().communities.values() for e in c.entity_ids}
    assert {"ivan petrov", "mona berg"} <= clustered


def test_recluster_moves_only_what_changed():
    from rhizome.core.index.hierarchy import recluster_hierarchy

    graph = nx.Graph()
    for g in range(4):  # four 6-cliques joined in a ring by single weak edges
        members = [f"n{g}-{i}" for i in range(6)]
        graph.add_edges_from((a, b, {"weight": 5.0}) for i, a in enumerate(members) for b in members[i + 1 :])
        graph.add_edge(f"n{g}-0", f"n{(g + 1) % 4}-1", weight=0.1)
    previous = {c.id: c for c in cluster_hierarchy(graph, max_cluster_size=4, seed=7)}
    graph.add_edge("new", "n2-3", weight=5.0)
    graph.add_edge("new", "n2-4", weight=5.0)
    groups, info = recluster_hierarchy(graph, previous, {"new", "n2-3", "n2-4"}, max_cluster_size=4, seed=7)
    by_id = {g.id: g for g in groups}
    assert "new" in next(g for g in groups if g.level == 0 and "n2-3" in g.entity_ids).entity_ids
    untouched = {gid for gid, g in previous.items() if not any(e.startswith("n2-") for e in g.entity_ids)}
    assert untouched and untouched <= set(info["kept_ids"]) and untouched <= set(by_id)
    assert info["movable"] == 3  # the new node and the two it links to: nothing else may move
    for g in groups:  # a consistent tree
        assert g.parent is None or g.id in by_id[g.parent].children


def current_digests(index: GraphRAGIndex) -> dict[str, str]:
    """The input digest each stored community's report would have if written now from the
    whole graph (what a rebuild checks its stored reports against)."""
    graph = index.graph()
    summarizer = index._reports(graph)
    return {c.id: summarizer.input_digest(summarizer.build_input(c, graph.communities)) for c in graph.communities.values()}


def test_every_report_after_inserts_is_written_from_its_current_input():
    docs = group_docs()
    index = make(llm=FakeChatModel(Reports()))
    index.insert(docs[:12])
    index.insert(docs[12:])
    # the same sentences again: weights grow, descriptions stay (their fragments are deduplicated)
    first = index.insert(Document(id="again", text=docs[0].text + " " + docs[4].text))
    bridge = index.insert(Document(id="bridge", text="Carol White met Alice Smith in Town9."))
    again = index.insert(Document(id="bridge-again", text="Carol White met Alice Smith in Town9."))
    for report in (first, bridge, again):
        assert report.stats["recluster"] == "local"
    assert again.stats["reports_kept_same_input"] > 0  # the bridge's weight grew, no input changed
    stored = {c.id: c.metadata.get("input_digest") for c in index.graph().communities.values()}
    assert stored == current_digests(index)  # no report kept whose input changed


def test_the_edge_table_follows_inserts_and_deletes():
    def expected(index: GraphRAGIndex) -> dict[str, tuple[str, str, float]]:
        entities = set(index.entity_table.keys())
        return {r.id: (r.source, r.target, r.weight) for r in index.relation_table.all() if r.source in entities and r.target in entities}

    def edges(index: GraphRAGIndex) -> dict[str, tuple[str, str, float]]:
        found = {rid: (row.id, target, weight) for row in index.edge_table.all() for rid, target, weight in row.edges}
        assert all(row.edges for row in index.edge_table.all())  # no empty row is left behind
        return found

    docs = group_docs()
    index = make()
    index.insert(docs[:10])
    index.insert(docs[10:])
    index.insert(Document(id="bridge", text="Carol White met Alice Smith in Town9."))
    assert edges(index) == expected(index) and len(edges(index)) > 20
    index.delete(["bridge", "g0-1"])
    assert edges(index) == expected(index)
    assert not any("alice smith" in (s, t) and "carol white" in (s, t) for s, t, _ in edges(index).values())

    class Killed(BaseException):
        pass

    def killed(*args: Any) -> Any:
        raise Killed

    before = edges(index)
    with pytest.MonkeyPatch.context() as patch:  # the delete's own transaction keeps it too
        patch.setattr(GraphRAGIndex, "_rebuild", lambda self, stats: killed())
        with pytest.raises(Killed):
            index.delete(["g1-0"])
    assert index.needs_refresh and edges(index) == expected(index) != before


def test_an_update_without_the_edge_table_fills_it_from_the_relations():
    docs = group_docs()
    index = make()
    index.insert(docs[:12])
    with index.store.transaction() as db:  # as an index written before the edge table was kept
        index.edge_table.delete(db, index.edge_table.keys())
    index.insert(docs[12:])
    assert {rid for row in index.edge_table.all() for rid, _, _ in row.edges} == {r.id for r in index.relation_table.all()}


def test_a_failed_stability_check_clusters_the_whole_graph(monkeypatch):
    docs = group_docs()
    index = make()
    index.insert(docs[:12])
    monkeypatch.setattr(module, "MODULARITY_TOLERANCE", -1.0)  # no local update is good enough
    full = index.insert(docs[12:16])
    assert full.stats["recluster"] == "full"
    # nothing kept as the local clustering keeps it; only reports whose input is unchanged
    assert full.stats["communities_kept"] == full.stats["reports_kept_same_input"]
    monkeypatch.setattr(module, "MODULARITY_TOLERANCE", 0.02)
    monkeypatch.setattr(module, "MOVABLE_SHARE", 0.0)  # nor any that lets an entity move
    assert index.insert(docs[16:]).stats["recluster"] == "full"
    whole = make()
    whole.insert(docs)
    assert index.graph().communities.keys() == whole.graph().communities.keys()
    assert {c.id: c.metadata.get("input_digest") for c in index.graph().communities.values()} == current_digests(index)


def test_a_report_is_kept_without_its_input_only_when_the_input_is_unchanged():
    """``_same_inputs`` against the inputs themselves: for each change, a community it keeps
    has the same report input text before and after, and one whose text changed is not kept."""
    from rhizome.core.graph.entity_graph import EntityGraph
    from rhizome.core.types import Community, Entity, Relation
    from rhizome.graphrag.reports import build_input

    entities = {e: Entity(id=e, name=e.upper(), description=f"{e} is a thing") for e in "abcdef"}
    base = {
        "r1": Relation(id="r1", source="a", target="b", weight=1.0, description="a knows b"),
        "r2": Relation(id="r2", source="c", target="d", weight=1.0, description="c knows d"),
        "r3": Relation(id="r3", source="a", target="d", weight=2.0, description="a knows d"),
        "r4": Relation(id="r4", source="b", target="c", weight=2.0, description="b knows c"),
        "r5": Relation(id="r5", source="e", target="f", weight=1.0, description="e knows f"),
        "r6": Relation(id="r6", source="d", target="e", weight=1.0, description="d knows e"),
    }
    group = Community(id="comm-0-x", level=0, entity_ids=list("abcd"))
    other = Community(id="comm-0-y", level=0, entity_ids=list("ef"))
    structure = {group.id: group, other.id: other}

    def text(relations: dict[str, Relation], community: Community) -> str:
        graph = EntityGraph.build(entities, relations, structure)
        return build_input(community, graph, {}, 8000).text

    def kept(new: dict[str, Relation]) -> set[str]:
        rows = module._edge_rows(base.values(), entities)
        changed = {k: r for k, r in new.items() if base.get(k) != r}
        neighbours = module._new_neighbours(rows, [r for k, r in changed.items() if k not in base])
        module._update_edges(rows, changed.values(), ())
        degree = module._weighted(rows.values()).degree()
        shown = [r for k, r in changed.items() if k not in base or module._row(r) != module._row(base[k])]
        reweighed = {k: base[k].weight for k, r in changed.items() if k in base and module._row(r) == module._row(base[k])}
        return set(module._same_inputs(structure, {}, structure, neighbours, shown, reweighed, rows, degree))

    cases = {
        "r1 outranks r4": {**base, "r1": base["r1"].model_copy(update={"weight": 3.0})},  # both of combined degree 4
        "r1 keeps its place": {**base, "r1": base["r1"].model_copy(update={"weight": 1.5})},
        "a new neighbour in another community": {**base, "r7": Relation(id="r7", source="a", target="f", weight=1.0)},
        "a second relation between neighbours": {**base, "r7": Relation(id="r7", source="e", target="d", weight=0.5)},
        "a new relation inside": {**base, "r7": Relation(id="r7", source="b", target="a", weight=0.5, description="a knows b")},
        "a new description": {**base, "r2": base["r2"].model_copy(update={"description": "c met d"})},
        "between communities": {**base, "r6": base["r6"].model_copy(update={"weight": 9.0})},
    }
    outcomes = {}
    for name, new in cases.items():
        kept_ids = kept(new)
        for community in structure.values():
            unchanged = text(base, community) == text(new, community)
            assert community.id not in kept_ids or unchanged, (name, community.id)
        outcomes[name] = sorted(kept_ids)
    assert outcomes == {
        "r1 outranks r4": [other.id],
        "r1 keeps its place": [group.id, other.id],
        "a new neighbour in another community": [],  # the degrees of a and f grow
        "a second relation between neighbours": [group.id, other.id],  # between communities, no new neighbour
        "a new relation inside": [other.id],  # its own row is new
        "a new description": [other.id],
        "between communities": [group.id, other.id],
    }
