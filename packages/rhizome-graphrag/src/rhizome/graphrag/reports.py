"""Community reports: the context a report is written from, and the model or offline writer.
The kernel's :class:`~rhizome.core.hierarchy.GroupSummarizer` schedules them bottom-up and
reuses every report whose input did not change.

Context (as GraphRAG builds it). A community's raw data is its entities (name, description,
degree) and the relationships between its members (ranked by the combined degree of their
endpoints), added edge by edge with their endpoints until ``max_input_tokens`` is reached. When
the raw data of a community with sub-communities does not fit, the sub-communities' reports
replace the raw data of their members (largest sub-community first), and raw rows of members
whose sub-community report did not fit fill the remaining budget. Reports are therefore written
level by level from the deepest up, each level concurrently.

Offline reports are extractive: the title names the most connected members, the summary keeps
the most central sentences of their descriptions (or of the sub-community summaries), the
findings are the strongest relationships, and the rating grows with the community's internal
relation weight.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rhizome.core.entity_graph import EntityGraph
from rhizome.core.hierarchy import GroupInput, SummaryFields, has_summary
from rhizome.core.models.budget import fit
from rhizome.core.summarize import extractive_summary
from rhizome.core.text import count_tokens, truncate_tokens
from rhizome.core.types import Community, Entity, Relation
from rhizome.graphrag.prompts import CHILDREN_NOTE, REPORT_PROMPT, REPORT_SYSTEM
from rhizome.graphrag.schemas import ReportOutput


def _cell(text: str, limit: int = 0) -> str:
    text = " ".join(str(text).split()).replace("|", "/")
    return truncate_tokens(text, limit) if limit else text


def full_content(community: Community) -> str:
    """A report as Markdown: title, summary, findings (what is embedded and returned as a hit)."""
    parts = [f"# {community.title}", "", community.summary]
    for finding in community.findings:
        parts += ["", f"## {finding.get('summary', '')}", finding.get("explanation", "")]
    return "\n".join(parts).strip()


def short_content(community: Community, max_tokens: int = 500) -> str:
    """Title, summary and finding headlines, for relevance rating."""
    lines = [community.title, community.summary] + [f"- {f.get('summary', '')}" for f in community.findings]
    return truncate_tokens("\n".join(x for x in lines if x), max_tokens)


def community_card(community: Community, graph: EntityGraph, max_tokens: int = 300) -> str:
    """A report-less description of a community (its most connected members and what is said
    about them): what lazy mode embeds and rates before any report exists."""
    lines = [f"{entity.name}: {_cell(entity.description, 60)}" for entity in graph.members(community)]
    return truncate_tokens("\n".join(lines), max_tokens)


def build_input(
    community: Community,
    graph: EntityGraph,
    reports: Mapping[str, Community],
    max_input_tokens: int,
) -> GroupInput:
    """The context of one community's report (see the module docstring)."""
    member_set = set(community.entity_ids)
    entities = graph.members(community)
    internal = sorted(
        {
            rid: graph.relations[rid]
            for e in community.entity_ids
            for rid in graph.relations_of.get(e, ())
            if graph.relations[rid].source in member_set and graph.relations[rid].target in member_set
        }.values(),
        key=lambda r: (-graph.combined_degree(r), -r.weight, r.id),
    )
    raw_entities, raw_relations, raw_tokens = _pack_raw(entities, internal, graph, max_input_tokens, exhaustive=True)
    children = [reports[c] for c in community.children if c in reports and has_summary(reports[c])]
    use_children = raw_tokens > max_input_tokens and bool(children)
    chosen_children: list[Community] = []
    if not use_children:
        raw_entities, raw_relations, raw_tokens = _pack_raw(entities, internal, graph, max_input_tokens)
        text = _render(raw_entities, raw_relations, [], graph)
    else:
        budget = max_input_tokens
        covered: set[str] = set()
        for child in sorted(children, key=lambda c: (-len(c.entity_ids), c.id)):
            tokens = count_tokens(_child_row(child)) + 1
            if tokens > budget:
                continue
            chosen_children.append(child)
            covered.update(child.entity_ids)
            budget -= tokens
        rest_entities = [e for e in entities if e.id not in covered]
        rest_relations = [r for r in internal if r.source not in covered or r.target not in covered]
        raw_entities, raw_relations, _ = _pack_raw(rest_entities, rest_relations, graph, max(0, budget - 40))
        text = _render(raw_entities, raw_relations, chosen_children, graph)
    return GroupInput(group=community, text=text, children=chosen_children, extra={"relations": raw_relations})


def _line(kind: str, record: Entity | Relation, graph: EntityGraph) -> tuple[str, int]:
    """An entity's or relation's row and its token count (with the newline), made once per
    graph: the same member appears in the input of its community at every level, and the
    packing measures rows twice."""
    lines = graph.cache.setdefault("report_rows", {})
    key = (kind, record.id)
    found = lines.get(key)
    if found is None:
        row = _entity_row(record, graph) if kind == "e" else _relation_row(record, graph)  # type: ignore[arg-type]
        found = lines[key] = (row, count_tokens(row) + 1)
    return found


def _entity_row(entity: Entity, graph: EntityGraph) -> str:
    return f"{entity.name}|{_cell(entity.type)}|{_cell(entity.description, 300)}|{graph.degree.get(entity.id, 0)}"


def _relation_row(relation: Relation, graph: EntityGraph) -> str:
    source = graph.entities[relation.source].name if relation.source in graph.entities else relation.source
    target = graph.entities[relation.target].name if relation.target in graph.entities else relation.target
    description = relation.description or relation.predicate or ", ".join(relation.keywords)
    return f"{source}|{target}|{_cell(description, 200)}|{graph.combined_degree(relation)}"


def _child_row(child: Community) -> str:
    return f"{child.id}|{_cell(child.title)}|{_cell(child.summary, 400)}|{child.rating if child.rating is not None else ''}"


def _pack_raw(
    entities: Sequence[Entity],
    relations: Sequence[Relation],
    graph: EntityGraph,
    budget: int,
    *,
    exhaustive: bool = False,
) -> tuple[list[Entity], list[Relation], int]:
    """Add relations (best first) with their endpoints while they fit, then leftover entities.
    With ``exhaustive`` nothing is dropped and the total is returned (to test whether all fits)."""
    by_id = {e.id: e for e in entities}
    chosen_entities: dict[str, Entity] = {}
    chosen_relations: list[Relation] = []
    used = 60  # the section headers
    for relation in relations:
        new = [by_id[x] for x in (relation.source, relation.target) if x in by_id and x not in chosen_entities]
        cost = _line("r", relation, graph)[1] + sum(_line("e", e, graph)[1] for e in new)
        if not exhaustive and used + cost > budget:
            continue
        used += cost
        for e in new:
            chosen_entities[e.id] = e
        chosen_relations.append(relation)
        if exhaustive and used > budget:
            return list(entities), list(relations), used + 1
    for entity in entities:
        if entity.id in chosen_entities:
            continue
        cost = _line("e", entity, graph)[1]
        if not exhaustive and used + cost > budget:
            continue
        used += cost
        chosen_entities[entity.id] = entity
    ordered = [e for e in entities if e.id in chosen_entities]
    return ordered, chosen_relations, used


def _render(entities: list[Entity], relations: list[Relation], children: list[Community], graph: EntityGraph) -> str:
    parts = []
    if children:
        parts += ["-----Sub-community reports-----", "id|title|summary|rating"]
        parts += [_child_row(c) for c in children]
    parts += ["-----Entities-----", "entity|type|description|degree"]
    parts += [_line("e", e, graph)[0] for e in entities]
    parts += ["-----Relationships-----", "source|target|description|combined_degree"]
    parts += [_line("r", r, graph)[0] for r in relations]
    return "\n".join(parts)


class ReportWriter:
    """Writes community reports with a chat model, or extractively when ``llm`` is ``None``.

    Parameters
    ----------
    llm:
        Chat model, or ``None`` for offline reports.
    max_tokens:
        Length the model is asked to keep a report within (GraphRAG ``max_length`` 2,000).
    language:
        Language of the reports.
    """

    def __init__(self, llm: Any = None, *, max_tokens: int = 2000, language: str = "English") -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.language = language

    @property
    def identity(self) -> list[Any]:
        """What besides its context decides a report (part of its stage digest)."""
        return ["offline" if self.llm is None else "model", getattr(self.llm, "name", ""), self.language, self.max_tokens]

    def _prompt(self, context: str, children: bool) -> str:
        note = CHILDREN_NOTE if children else ""
        return REPORT_PROMPT.format(children_note=note, language=self.language, context=context) + (
            f"\nKeep the whole report within about {self.max_tokens} tokens."
        )

    def input_budget(self, max_input_tokens: int) -> int:
        """Tokens of community context a report prompt may hold: ``max_input_tokens``, less
        when the model's context window holds less with room for the report."""
        return fit(self.llm, max_input_tokens, reply_tokens=self.max_tokens, fixed=[REPORT_SYSTEM, self._prompt("", True)])

    async def awrite(self, data: GroupInput, graph: EntityGraph) -> SummaryFields:
        """The report fields of one community."""
        if self.llm is None:
            return offline_report(data, graph)
        prompt = self._prompt(data.text, bool(data.children))
        out = await self.llm.acomplete_json(prompt, ReportOutput, system=REPORT_SYSTEM)
        return {
            "title": out.title,
            "summary": out.summary,
            "rating": out.rating,
            "findings": [{"summary": f.summary, "explanation": f.explanation} for f in out.findings],
            "metadata": {"rating_explanation": out.rating_explanation},
            "by": "model",
        }


def offline_report(data: GroupInput, graph: EntityGraph) -> SummaryFields:
    """An extractive report from a community's context (no model)."""
    community = data.group
    members = graph.members(community)
    names = [e.name for e in members[:3]]
    if len(names) > 1:
        title = ", ".join(names[:-1]) + " and " + names[-1]
    else:
        title = names[0] if names else community.id
    if len(members) > 3:
        title += f" (+{len(members) - 3} more)"
    fragments = [c.summary for c in data.children] + [e.description for e in members[:12] if e.description]
    summary = extractive_summary(fragments, 120) if fragments else ""
    if not summary:
        summary = f"A group of {len(members)} related entities: {', '.join(e.name for e in members[:8])}."
    member_set = set(community.entity_ids)
    weight = sum(
        graph.relations[rid].weight
        for e in community.entity_ids
        for rid in graph.relations_of.get(e, ())
        if graph.relations[rid].source == e and graph.relations[rid].target in member_set
    )
    rating = round(min(10.0, 2.0 * math.log2(1.0 + weight)), 1)
    findings: list[dict[str, str]] = []
    for child in data.children[:4]:
        findings.append({"summary": child.title, "explanation": _cell(child.summary, 120)})
    for relation in sorted(data.extra["relations"], key=lambda r: (-r.weight, -graph.combined_degree(r), r.id)):
        if len(findings) >= 8:
            break
        source = graph.entities[relation.source].name if relation.source in graph.entities else relation.source
        target = graph.entities[relation.target].name if relation.target in graph.entities else relation.target
        label = relation.predicate or ", ".join(relation.keywords[:2])
        headline = f"{source} – {target}" + (f" ({label})" if label else "")
        findings.append({"summary": headline, "explanation": _cell(relation.description or headline, 120)})
    for entity in members:
        if len(findings) >= 3:
            break
        if entity.description:
            findings.append({"summary": entity.name, "explanation": _cell(entity.description, 120)})
    if not findings:
        findings.append({"summary": title, "explanation": summary})
    return {
        "title": title,
        "summary": summary,
        "rating": rating,
        "findings": findings,
        "metadata": {"rating_explanation": f"{len(members)} entities with an internal relation weight of {weight:g}."},
        "by": "offline",
    }


__all__ = ["ReportWriter", "build_input", "community_card", "full_content", "offline_report", "short_content"]
