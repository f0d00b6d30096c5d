"""Offline community reports state what the graph says (no model)."""

from __future__ import annotations

from rhizome.core.graph.entity_graph import EntityGraph
from rhizome.core.index.hierarchy import GroupInput
from rhizome.core.types import Community, Entity, Relation
from rhizome.graphrag.reports import offline_report


def test_a_relation_without_a_description_is_no_finding():
    """Defect: a relation with an empty description became the finding 'A – B: A – B'."""
    entities = {k: Entity(id=k, name=k.title(), description=f"{k.title()} is on the island.") for k in ("ada", "bo", "cy")}
    relations = {
        "r1": Relation(id="r1", source="ada", target="bo", description="Ada taught Bo the trade.", weight=2.0),
        "r2": Relation(id="r2", source="bo", target="cy", description="", weight=5.0),
    }
    community = Community(id="c0", level=0, entity_ids=list(entities))
    graph = EntityGraph.build(entities, relations, {"c0": community})
    report = offline_report(GroupInput(group=community, text="", extra={"relations": list(relations.values())}), graph)
    shown = [(f["summary"], f["explanation"]) for f in report["findings"]]
    assert ("Ada – Bo", "Ada taught Bo the trade.") in shown
    assert not any("Cy" in summary and "Bo" in summary for summary, _ in shown)
