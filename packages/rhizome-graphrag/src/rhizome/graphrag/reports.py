"""Community reports: the context a report is written from, and the model or offline writer.
The kernel's :class:`~rhizome.core.index.hierarchy.GroupSummarizer` schedules them bottom-up and
reuses every report whose input did not change.

Context (as GraphRAG builds it). A community's raw data is its entities (name, description,
degree) and the relationships between its members (ranked by the combined degree of their
endpoints), added edge by edge with their endpoints until the next edge would pass
``max_input_tokens``, then the members no edge brought, most connected first. When
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

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from rhizome.core.graph.entity_graph import EntityGraph
from rhizome.core.index.hierarchy import GroupInput, SummaryFields, has_summary
from rhizome.core.index.writers import GroupWriter, cell, offline_summary
from rhizome.core.retrieval.contract import provenance
from rhizome.core.text import count_tokens, min_tokens, truncate_tokens
from rhizome.core.types import Chunk, Community, Entity, Hit, Relation
from rhizome.graphrag.prompts import CHILDREN_NOTE, REPORT_PROMPT, REPORT_SYSTEM


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


def report_hit(community: Community, score: float, chunks: dict[str, Chunk], graph: EntityGraph, section: str) -> Hit:
    """A community's report as a hit of a context's ``section``, citing its entities' chunks."""
    return Hit(
        id=community.id, text=full_content(community), score=score, kind="community", provenance=provenance(chunks, graph.community_chunks(community)),
        metadata={"section": section, "title": community.title, "level": community.level, "rating": community.rating},
    )


def community_card(community: Community, graph: EntityGraph, max_tokens: int = 300) -> str:
    """A report-less description of a community (its most connected members and what is said
    about them): what lazy mode embeds and rates before any report exists."""
    # a line takes at least one token, so no more than max_tokens members can show
    lines = [f"{entity.name}: {cell(entity.description, 60)}" for entity in graph.members(community, max_tokens)]
    return truncate_tokens("\n".join(lines), max_tokens)


def build_input(
    community: Community,
    graph: EntityGraph,
    reports: Mapping[str, Community],
    max_input_tokens: int,
) -> GroupInput:
    """The context of one community's report (see the module docstring).

    When the graph's relations are outlines (id, endpoints and weight, no text) with a reader
    (``graph.read_relations``), only the relations the context reaches in rank order are read
    whole (a large community holds tens of thousands of relations, of which a context shows a
    few hundred), or, to see that a large community's rows cannot all fit, only those read until
    their floors pass the budget."""
    rows = _Rows(graph)
    read = graph.whole_relations if graph.read_relations is not None else None
    members = set(community.entity_ids)
    entities = graph.members(community)
    children = [reports[c] for c in community.children if c in reports and has_summary(reports[c])]
    # with child reports to fall back on, the raw rows matter only when all of them fit: those
    # of a large community need not be ranked or tokenised to see that they do not
    if children and _surely_over(entities, _read(_inside(graph, community.entity_ids, members), read), rows, max_input_tokens):
        complete = False
    else:
        internal = _ranked(graph, _inside(graph, community.entity_ids, members))
        raw_entities, raw_relations, complete = _pack_raw(entities, _read(internal, read), rows, max_input_tokens)
    chosen_children: list[Community] = []
    if complete or not children:
        text = _render(raw_entities, raw_relations, [], rows)
    else:
        budget = max_input_tokens
        covered: set[str] = set()
        for child in sorted(children, key=lambda c: (-len(c.entity_ids), c.id)):
            tokens = rows.child(child).tokens + 1
            if tokens > budget:
                continue
            chosen_children.append(child)
            covered.update(child.entity_ids)
            budget -= tokens
        rest_entities = [e for e in entities if e.id not in covered]
        rest_relations = _ranked(graph, _inside(graph, [e for e in community.entity_ids if e not in covered], members))
        raw_entities, raw_relations, _ = _pack_raw(rest_entities, _read(rest_relations, read), rows, max(0, budget - 40))
        text = _render(raw_entities, raw_relations, chosen_children, rows)
    return GroupInput(group=community, text=text, children=chosen_children, extra={"relations": raw_relations})


def _inside(graph: EntityGraph, ids: Iterable[str], members: set[str]) -> Iterator[Relation]:
    """The relations of the entities ``ids`` between two ``members``, each once."""
    relations, seen = graph.relations, set()
    for e in ids:
        for rid in graph.relations_of.get(e, ()):
            relation = relations[rid]
            if rid not in seen and relation.source in members and relation.target in members:
                seen.add(rid)
                yield relation


def _ranked(graph: EntityGraph, relations: Iterable[Relation]) -> list[Relation]:
    """``relations`` best first (GraphRAG's order: combined degree, then weight)."""
    return sorted(relations, key=lambda r: (-graph.combined_degree(r), -r.weight, r.id))


def _read(
    relations: Iterable[Relation], read: Callable[[list[str]], Mapping[str, Relation]] | None, block: int = 64
) -> Iterator[Relation]:
    """``relations`` in order, each read whole through ``read`` (when given) a block at a time."""
    if read is None:
        yield from relations
        return
    relations = iter(relations)
    while part := list(itertools.islice(relations, block)):
        whole = read([r.id for r in part])
        yield from (whole.get(r.id, r) for r in part)


ENTITY_CELL_BYTES = 1200
RELATION_CELL_BYTES = 800
CHILD_CELL_BYTES = 1600
"""The longest description an entity or relation row and the longest summary a sub-community
row shows, in UTF-8 bytes (about 300, 200 and 400 tokens of English): a longer one is cut at a
word boundary, so that one long text cannot take a community's whole context. Bytes, not
tokens: a row is then known without tokenising it, and only a packing that does not fit by
bytes counts tokens."""


def cut_at_word(text: str, max_bytes: int) -> str:
    """``text`` when it holds at most ``max_bytes`` UTF-8 bytes, else its longest prefix of at
    most that many that ends before a space (the first ``max_bytes`` bytes of a first word
    longer than that, whole characters only)."""
    if len(text) * 4 <= max_bytes:  # a character is at most 4 bytes
        return text
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    head = data[: max_bytes + 1].decode("utf-8", "ignore")  # one byte more: is the cut at a space?
    space = head.rfind(" ")
    return head[:space] if space > 0 else data[:max_bytes].decode("utf-8", "ignore")


class _Row:
    """One context row: its ``text`` (``head``, the cell cut by :func:`cut_at_word`, ``tail``),
    what it shows (``shown``, to tell when it is stale) and ``bound``, its UTF-8 length, an upper
    bound of its tokens (a token holds at least one byte; about fourfold for English). Its
    tokens are counted once, when a packing needs them."""

    __slots__ = ("shown", "text", "bound", "_tokens", "_floor")

    def __init__(self, shown: tuple[Any, ...], head: str, text: str, max_bytes: int, tail: str) -> None:
        self.shown = shown
        self.text = f"{head}{cut_at_word(cell(text), max_bytes)}{tail}"
        self.bound = len(self.text.encode("utf-8"))
        self._tokens: int | None = None
        self._floor: int | None = None

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = count_tokens(self.text)
        return self._tokens

    @property
    def counted(self) -> bool:
        """Whether ``tokens`` is known (asking for it costs nothing more)."""
        return self._tokens is not None

    @property
    def ceiling(self) -> int:
        """An upper bound of ``tokens``: the count once made, else ``bound``."""
        return self._tokens if self._tokens is not None else self.bound

    @property
    def floor(self) -> int:
        """A lower bound of ``tokens`` that tokenises nothing: the row's words
        (:func:`~rhizome.core.text.min_tokens`)."""
        if self._tokens is not None:
            return self._tokens
        if self._floor is None:
            self._floor = min_tokens(self.text)
        return self._floor


class _Rows:
    """The entity, relation and sub-community rows of report contexts, remembered in the
    graph's cache: every level of the hierarchy puts the same entity in a report context, so
    each row is formatted (and, when a packing needs it, tokenised) once per graph. An entry is
    reused only while everything the row shows is unchanged."""

    def __init__(self, graph: EntityGraph) -> None:
        self.graph = graph
        self.entities: dict[str, _Row] = graph.cache.setdefault("report-entity-rows", {})
        self.relations: dict[str, _Row] = graph.cache.setdefault("report-relation-rows", {})
        self.children: dict[str, _Row] = graph.cache.setdefault("report-child-rows", {})

    def entity(self, entity: Entity) -> _Row:
        """The row of ``entity``."""
        shown = (entity.name, entity.type, entity.description, self.graph.degree.get(entity.id, 0))
        held = self.entities.get(entity.id)
        if held is None or held.shown != shown:
            held = self.entities[entity.id] = _Row(shown, f"{entity.name}|{cell(entity.type)}|", entity.description, ENTITY_CELL_BYTES, f"|{shown[3]}")
        return held

    def relation(self, relation: Relation) -> _Row:
        """The row of ``relation``."""
        graph = self.graph
        source, target = graph.name(relation.source), graph.name(relation.target)
        description = relation.description or relation.predicate or ", ".join(relation.keywords)
        shown = (source, target, description, graph.combined_degree(relation))
        held = self.relations.get(relation.id)
        if held is None or held.shown != shown:
            held = self.relations[relation.id] = _Row(shown, f"{source}|{target}|", description, RELATION_CELL_BYTES, f"|{shown[3]}")
        return held

    def child(self, child: Community) -> _Row:
        """The row of a sub-community's report."""
        shown = (child.title, child.summary, child.rating)
        held = self.children.get(child.id)
        if held is None or held.shown != shown:
            rating = child.rating if child.rating is not None else ""
            held = self.children[child.id] = _Row(shown, f"{child.id}|{cell(child.title)}|", child.summary, CHILD_CELL_BYTES, f"|{rating}")
        return held


def _pack_raw(
    entities: Sequence[Entity], relations: Iterable[Relation], rows: _Rows, budget: int
) -> tuple[list[Entity], list[Relation], bool]:
    """Add relations (best first) with their endpoints until the next one does not fit (as
    GraphRAG does; so only the relations up to it are read), then the leftover entities (most
    connected first) until the next one does not fit. Returns the chosen entities (in
    ``entities``' order), the chosen relations and whether everything fitted.

    Whether everything fits is settled first, with as little tokenising as it takes: a row's
    bytes bound its tokens from above (a token holds at least one byte), about fourfold, so the
    rows are added up by their bytes, and only when the sum passes the budget are the largest
    rows so far counted, one at a time, until it fits again; a context whose rows all fit so is
    packed whole — most of a hierarchy's, many without counting a row. When every row so far is
    counted and the sum still passes the budget, not everything fits, and the rows are packed
    by their tokens (:func:`_pack_counted`), which reads on only as far as its own stopping
    rule takes it; this pass formats and reads no row beyond that point."""
    relations = iter(relations)
    seen: list[Relation] = []
    uncounted: list[tuple[int, int, _Row]] = []  # the largest row first
    order = itertools.count()
    size = _HEADERS

    def fits(row: _Row) -> bool:
        nonlocal size
        size += row.ceiling + 1
        if not row.counted:
            heapq.heappush(uncounted, (-row.bound, next(order), row))
        while size > budget and uncounted:
            largest = heapq.heappop(uncounted)[2]
            size -= largest.bound - largest.tokens
        return size <= budget

    for entity in entities:
        if not fits(rows.entity(entity)):
            break
    else:
        for relation in relations:
            seen.append(relation)
            if not fits(rows.relation(relation)):
                break
        else:
            return list(entities), seen, True
    return _pack_counted(entities, itertools.chain(seen, relations), rows, budget)


def _surely_over(entities: Iterable[Entity], relations: Iterable[Relation], rows: _Rows, budget: int) -> bool:
    """Whether the rows of ``entities`` and ``relations`` surely hold more tokens than
    ``budget`` leaves (so :func:`_pack_raw` could not fit them all), by their floors
    (:attr:`_Row.floor`): nothing is tokenised, and rows are formatted (relations read) only
    until the floors pass the budget."""
    floor = _HEADERS
    for row in itertools.chain(map(rows.entity, entities), map(rows.relation, relations)):
        floor += row.floor + 1
        if floor > budget:
            return True
    return False


_HEADERS = 60
"""Tokens kept for the section headers of a context. Adding bytes in place of tokens on top of
it, a context that fits by bytes fits by tokens, so both ways choose the same rows."""


def _pack_counted(
    entities: Sequence[Entity], relations: Iterable[Relation], rows: _Rows, budget: int
) -> tuple[list[Entity], list[Relation], bool]:
    """:func:`_pack_raw` by the rows' tokens."""
    by_id = {e.id: e for e in entities}
    chosen_entities: dict[str, Entity] = {}
    chosen_relations: list[Relation] = []
    complete = True
    used = _HEADERS
    for relation in relations:
        new = [by_id[x] for x in (relation.source, relation.target) if x in by_id and x not in chosen_entities]
        cost = rows.relation(relation).tokens + 1 + sum(rows.entity(e).tokens + 1 for e in new)
        if used + cost > budget:
            complete = False
            break
        used += cost
        for e in new:
            chosen_entities[e.id] = e
        chosen_relations.append(relation)
    for entity in entities:
        if entity.id in chosen_entities:
            continue
        cost = rows.entity(entity).tokens + 1
        if used + cost > budget:
            complete = False
            break
        used += cost
        chosen_entities[entity.id] = entity
    ordered = [e for e in entities if e.id in chosen_entities]
    return ordered, chosen_relations, complete


def _render(entities: list[Entity], relations: list[Relation], children: list[Community], rows: _Rows) -> str:
    parts = []
    if children:
        parts += ["-----Sub-community reports-----", "id|title|summary|rating"]
        parts += [rows.child(c).text for c in children]
    parts += ["-----Entities-----", "entity|type|description|degree"]
    parts += [rows.entity(e).text for e in entities]
    parts += ["-----Relationships-----", "source|target|description|combined_degree"]
    parts += [rows.relation(r).text for r in relations]
    return "\n".join(parts)


class ReportWriter(GroupWriter):
    """Writes community reports with a chat model, or extractively when ``llm`` is ``None``
    (GraphRAG ``max_length`` 2,000 tokens; in English unless ``language`` says otherwise).
    :meth:`awrite` takes the community's input and the entity graph (which the offline report
    reads)."""

    system = REPORT_SYSTEM

    def __init__(self, llm: Any = None, *, max_tokens: int = 2000, language: str = "English") -> None:
        super().__init__(llm, max_tokens=max_tokens, language=language)

    def prompt(self, data: GroupInput | None) -> str:
        note = CHILDREN_NOTE if data is None or data.children else ""
        return REPORT_PROMPT.format(children_note=note, language=self.language, context="" if data is None else data.text) + (
            f"\nKeep the whole report within about {self.max_tokens} tokens."
        )

    def offline(self, data: GroupInput, *context: Any) -> SummaryFields:
        (graph,) = context
        return offline_report(data, graph)


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
    summary = offline_summary(data.children, [e.description for e in members[:12]], [e.name for e in members])
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
        findings.append({"summary": child.title, "explanation": cell(child.summary, 120)})
    for relation in sorted(data.extra["relations"], key=lambda r: (-r.weight, -graph.combined_degree(r), r.id)):
        if len(findings) >= 8:
            break
        if not relation.description:  # a finding states something: a bare pair says nothing
            continue
        label = relation.predicate or ", ".join(relation.keywords[:2])
        headline = f"{graph.name(relation.source)} – {graph.name(relation.target)}" + (f" ({label})" if label else "")
        findings.append({"summary": headline, "explanation": cell(relation.description, 120)})
    for entity in members:
        if len(findings) >= 3:
            break
        if entity.description:
            findings.append({"summary": entity.name, "explanation": cell(entity.description, 120)})
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


__all__ = ["ReportWriter", "build_input", "community_card", "full_content", "offline_report", "report_hit", "short_content"]
