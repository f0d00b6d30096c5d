"""A workspace's graph, read a piece at a time: an entity's neighbourhood, the groups of one
level (GraphRAG's communities, ArchRAG's layers, RAPTOR's tree nodes) and one group, and the
entities a name or a passage points to.

Plain blocking functions over a :class:`~rhizome.server.workspaces.Workspace` that return
JSON-ready dicts, shared by the REST routes (:mod:`rhizome.server.graphapi`, which run them in
a worker thread) and any other front-end (MCP tools). Each reads through the kernel's record
tables (the entity-graph layer's :class:`~rhizome.core.graph.store.EntityGraphStore`, the
index's :class:`~rhizome.core.index.hierarchy.Hierarchy`) inside one
:meth:`~rhizome.core.store.storage.IndexStore.read_snapshot`, so a request sees one committed
generation however a writer commits meanwhile, and reads only the rows it shows: the
relations of the entities it walks, the groups of one level, the members of one page. What is
kept across requests (the entities ranked by degree, the groups an entity belongs to) is cached
by the index's ``derived`` until the tables it came from are written.

A method without the structure asked for (an entity graph for :func:`neighbourhood` and
:func:`entities`, a hierarchy for :func:`groups`) is a :class:`NoGraphError` (404) that says
which methods have it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rhizome.core.errors import InvalidInputError
from rhizome.core.graph.entity_graph import EntityOutline, RelationOutline
from rhizome.core.graph.store import EntityGraphStore
from rhizome.core.index.hierarchy import Hierarchy
from rhizome.core.store.records import RecordTable
from rhizome.core.store.storage import damaged_left_out
from rhizome.core.types import Community
from rhizome.server.errors import ServerError
from rhizome.server.workspaces import Workspace

MAX_DEPTH = 2
MAX_NODES = 200
"""Most entities one neighbourhood holds (``limit``)."""
MAX_EDGES_PER_NODE = 4
"""A neighbourhood keeps at most this many relations per entity it holds, the heaviest first."""
MAX_GROUPS = 100
"""Most groups one page of :func:`groups` holds."""
MAX_MEMBERS = 100
"""Members listed per group (``member_count`` says how many it has)."""
DESCRIPTION_CHARS = 400
"""A neighbour's description is cut to this many characters (the entity asked for keeps its own)."""
EXCERPT_CHARS = 160

ENTITY_METHODS = "GraphRAG, LightRAG, HippoRAG and ArchRAG"
GROUP_METHODS = "GraphRAG (communities), ArchRAG (layers) and RAPTOR (tree nodes)"


# -- errors ----------------------------------------------------------------------------------------
class NoGraphError(ServerError, LookupError):
    """The workspace's method keeps no entity graph, or no groups."""

    status = 404


class EntityNotFoundError(ServerError, LookupError):
    """No entity of the workspace has the name or id asked for."""

    status = 404


class GroupNotFoundError(ServerError, LookupError):
    """No community, layer node or tree node of the workspace has the id asked for."""

    status = 404


# -- what the functions return (the REST API's response models) ------------------------------------
class GraphNode(EntityOutline):
    """An entity as a graph shows it: the kernel's outline (id, name, type, description) and
    where it stands."""

    degree: int = Field(0, description="relations the entity takes part in (in the whole graph)")
    depth: int = Field(0, description="steps from the entity asked for (0: itself)")
    score: float | None = Field(None, description="how well it matches the name searched for (entities only)")


class GraphEdge(RelationOutline):
    """A relation as a graph shows it: the kernel's outline (ends, predicate, description,
    keywords, weight)."""


class GroupRef(BaseModel):
    id: str
    level: int
    title: str = ""


class Neighbourhood(BaseModel):
    workspace: str
    method: str
    entity: GraphNode = Field(description="the entity asked for, with its whole description")
    chunks: list[str] = Field(description="passages (chunk ids) the entity was found in, the first 50")
    groups: list[GroupRef] = Field(description="the communities or layer nodes that hold the entity, the coarsest level first")
    depth: int
    limit: int
    nodes: list[GraphNode] = Field(description="the entity and its neighbours up to `depth` steps, nearest and most strongly related first")
    edges: list[GraphEdge] = Field(description="relations between the nodes")
    truncated: bool = Field(description="true when `limit` (or the cap on relations) left some out")


class Member(BaseModel):
    id: str
    kind: Literal["entity", "chunk"]
    name: str = Field(description="an entity's name, or the start of a passage's text")
    document_id: str | None = None


class GroupView(BaseModel):
    id: str
    level: int
    title: str = ""
    summary: str = ""
    rating: float | None = None
    findings: list[dict[str, str]] = []
    parent: str | None = None
    children: list[str] = Field(description="child groups one level down (a tree node's leaves are its members)")
    members: list[Member] = Field(description=f"the group's entities (a tree node's passages), at most {MAX_MEMBERS}")
    member_count: int


class Groups(BaseModel):
    workspace: str
    method: str
    kind: Literal["communities", "tree"] = Field(description="communities of entities, or a tree of passage summaries")
    levels: list[int] = Field(description="the levels the workspace has")
    level: int | None = Field(description="the level listed (null: the workspace has no groups yet)")
    total: int = Field(description="groups at this level")
    offset: int
    limit: int
    groups: list[GroupView]


class Group(BaseModel):
    workspace: str
    method: str
    kind: Literal["communities", "tree"]
    group: GroupView


class Entities(BaseModel):
    workspace: str
    method: str
    entities: list[GraphNode]


# -- the structures of a workspace ------------------------------------------------------------------
def entity_graph(workspace: Workspace) -> EntityGraphStore:
    """The workspace's entity-graph layer, or a :class:`NoGraphError`."""
    found = getattr(workspace.index, "entity_graph", None)
    if not isinstance(found, EntityGraphStore):
        raise NoGraphError(
            f"workspace {workspace.name!r} is a {workspace.index.method} index, which keeps no entity graph; "
            f"entities and neighbourhoods come from {ENTITY_METHODS} indexes"
        )
    return found


def hierarchy(workspace: Workspace) -> Hierarchy:
    """The workspace's groups (communities, layers or tree), or a :class:`NoGraphError`."""
    for name in ("communities", "tree"):
        found = getattr(workspace.index, name, None)
        if isinstance(found, Hierarchy):
            return found
    raise NoGraphError(
        f"workspace {workspace.name!r} is a {workspace.index.method} index, which keeps no communities, levels or tree; "
        f"they come from {GROUP_METHODS} indexes"
    )


def _relation_tables(workspace: Workspace, graph: EntityGraphStore) -> list[RecordTable[RelationOutline]]:
    """The tables of relations between entities: the layer's, and HippoRAG's synonymy edges
    (a ``synonyms`` table of relations kept beside them)."""
    tables = [graph.relations]
    extra = getattr(workspace.index, "synonyms", None)
    if isinstance(extra, RecordTable) and {"source", "target"} <= set(extra.lookups):
        tables.append(extra)
    return [t.view(RelationOutline) for t in tables]


def _check(value: int, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return value


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- an entity's neighbourhood -------------------------------------------------------------------------
def neighbourhood(workspace: Workspace, entity: str, depth: int = 1, limit: int = 50) -> dict[str, Any]:
    """``entity`` (a name as written, or an entity id) and the entities up to ``depth`` (1 or 2)
    relations away, at most ``limit`` (1-200) in all, with the relations between them. At each
    step the neighbours most strongly related to those already found come first (the summed
    weight of their relations, then their id). Blocking: reads the store."""
    graph = entity_graph(workspace)
    depth = _check(depth, "depth", 1, MAX_DEPTH)
    limit = _check(limit, "limit", 1, MAX_NODES)
    index = workspace.index
    with index.store.read_snapshot():
        center = graph.entity(entity)
        if center is not None:
            kept, edges, truncated = _walk(_relation_tables(workspace, graph), center.id, depth, limit)
            outlines = graph.entities.view(EntityOutline).get(kept)
            degrees = graph.degrees(list(kept))
            groups = _groups_holding(workspace, center.id)
    if center is None:  # (the suggestions embed the name: outside the snapshot, which holds the store)
        raise EntityNotFoundError(_unknown_entity(workspace, entity))
    head = GraphNode(id=center.id, name=center.name, type=center.type, description=center.description,
                     degree=degrees.get(center.id, 0))
    nodes = [head] + [GraphNode(id=eid, name=outlines[eid].name, type=outlines[eid].type, depth=d,
                                description=_cut(outlines[eid].description, DESCRIPTION_CHARS), degree=degrees.get(eid, 0))
                      for eid, d in kept.items() if d and eid in outlines]
    view = Neighbourhood(
        workspace=workspace.name, method=index.method, entity=head, chunks=center.source_chunk_ids[:50], groups=groups,
        depth=depth, limit=limit, nodes=nodes, truncated=truncated,
        edges=[GraphEdge(id=r.id, source=r.source, target=r.target, predicate=r.predicate,
                         description=_cut(r.description, DESCRIPTION_CHARS), keywords=r.keywords, weight=r.weight)
               for r in sorted(edges, key=lambda r: r.id)],
    )
    return view.model_dump(mode="json")


def _walk(tables: Sequence[RecordTable[RelationOutline]], start: str, depth: int, limit: int) -> tuple[dict[str, int], list[RelationOutline], bool]:
    """The entities up to ``depth`` steps from ``start`` (by their step), at most ``limit``, the
    most strongly related first at each step; the relations among them (those of ``start``
    first when they are capped); whether anything was left out."""
    kept = {start: 0}
    frontier = [start]
    truncated = False
    for step in range(1, depth + 1):
        strength: dict[str, float] = defaultdict(float)
        ends = set(frontier)
        for relation in _incident(tables, frontier):
            for a, b in ((relation.source, relation.target), (relation.target, relation.source)):
                if a in ends and b not in kept:
                    strength[b] += relation.weight or 1.0
        ranked = sorted(strength, key=lambda e: (-strength[e], e))
        room = limit - len(kept)
        truncated = truncated or len(ranked) > room
        frontier = ranked[:room]
        kept.update(dict.fromkeys(frontier, step))
        if not frontier:
            break
    edges = _edges_among(tables, kept)
    cap = MAX_EDGES_PER_NODE * len(kept)
    if len(edges) > cap:
        truncated = True
        edges = sorted(edges, key=lambda r: (start not in (r.source, r.target), -(r.weight or 1.0), r.id))[:cap]
    return kept, edges, truncated


def _incident(tables: Sequence[RecordTable[RelationOutline]], ids: Sequence[str]) -> list[RelationOutline]:
    """The relations with an end among ``ids`` (each once)."""
    found: dict[str, RelationOutline] = {}
    for table in tables:
        for relation in table.find("source", ids) + table.find("target", ids):
            found.setdefault(relation.id, relation)
    return list(found.values())


def _edges_among(tables: Sequence[RecordTable[RelationOutline]], ids: Iterable[str]) -> list[RelationOutline]:
    """The relations whose both ends are among ``ids`` (every such relation has its source there)."""
    members = set(ids)
    found: dict[str, RelationOutline] = {}
    for table in tables:
        for relation in table.find("source", members):
            if relation.target in members and relation.source != relation.target:
                found.setdefault(relation.id, relation)
    return list(found.values())


def _unknown_entity(workspace: Workspace, name: str) -> str:
    message = f"workspace {workspace.name!r} has no entity named {name!r}"
    try:
        near = [n["name"] for n in _nearest_names(workspace, name, 5)]
    except Exception:  # suggestions are a courtesy: the 404 stands without them
        near = []
    hint = f"; the nearest names: {', '.join(near)}" if near else ""
    return f"{message}{hint} (GET /{workspace.name}/graph/entities?q=NAME searches them)"


def _groups_holding(workspace: Workspace, entity_id: str) -> list[GroupRef]:
    """The groups whose members include ``entity_id`` (none for a method without groups, or
    whose groups hold passages), from a map kept until the groups change."""
    try:
        groups = hierarchy(workspace)
    except NoGraphError:
        return []
    index = workspace.index

    def build() -> dict[str, list[GroupRef]]:
        held: dict[str, list[GroupRef]] = defaultdict(list)
        for g in groups.groups.view(_GroupOutline).all():
            for member in g.entity_ids:
                held[member].append(GroupRef(id=g.id, level=g.level, title=g.title))
        return {k: sorted(v, key=lambda r: (r.level, r.id)) for k, v in held.items()}

    held = index.derived("server.groups-of-entity", groups.groups.generation(), build)
    return list(held.get(entity_id, []))


class _GroupOutline(BaseModel):
    """A stored group read without its summary and findings."""

    model_config = ConfigDict(extra="ignore")

    id: str
    level: int
    title: str = ""
    entity_ids: list[str] = []


# -- groups ----------------------------------------------------------------------------------------
def groups(workspace: Workspace, level: int | None = None, offset: int = 0, limit: int = 20) -> dict[str, Any]:
    """One page of the groups at ``level`` (default: the workspace's first level; GraphRAG's
    level 0 is its coarsest, ArchRAG's layers and RAPTOR's tree levels start at 1), the largest
    first (then by id), each with its summary, parent, child groups and members. Blocking:
    reads the store."""
    tree = hierarchy(workspace)
    offset = _check(offset, "offset", 0, 10**9)
    limit = _check(limit, "limit", 1, MAX_GROUPS)
    index = workspace.index
    with index.store.read_snapshot():
        levels = tree.levels()
        if level is None:
            level = levels[0] if levels else None
        elif level not in levels:
            shown = ", ".join(map(str, levels)) or "none yet"
            raise InvalidInputError(f"workspace {workspace.name!r} has no level {level}; its levels: {shown}")
        outlines = tree.groups.view(_GroupOutline).find("level", [str(level)]) if level is not None else []
        outlines.sort(key=lambda g: (-len(g.entity_ids), g.id))
        page = [g.id for g in outlines[offset:offset + limit]]
        found = tree.groups.get(page)
        views = _views(workspace, tree, [found[g] for g in page if g in found])
    return Groups(workspace=workspace.name, method=index.method, kind=_kind(workspace), levels=levels, level=level,
                  total=len(outlines), offset=offset, limit=limit, groups=views).model_dump(mode="json")


def group(workspace: Workspace, group_id: str) -> dict[str, Any]:
    """The group ``group_id`` with its summary, parent, child groups and members. Blocking."""
    tree = hierarchy(workspace)
    index = workspace.index
    with index.store.read_snapshot():
        found = tree.groups.one(group_id)
        if found is None:
            raise GroupNotFoundError(
                f"workspace {workspace.name!r} has no group {group_id!r}; GET /{workspace.name}/graph/groups lists them"
            )
        view = _views(workspace, tree, [found])[0]
    return Group(workspace=workspace.name, method=index.method, kind=_kind(workspace), group=view).model_dump(mode="json")


def _kind(workspace: Workspace) -> Literal["communities", "tree"]:
    return "communities" if isinstance(getattr(workspace.index, "entity_graph", None), EntityGraphStore) else "tree"


def _views(workspace: Workspace, tree: Hierarchy, found: list[Community]) -> list[GroupView]:
    """The groups as shown: members named (entities by name, passages by their first words),
    children only where they are groups."""
    shown = {g.id: g.entity_ids[:MAX_MEMBERS] for g in found}
    wanted = [m for ids in shown.values() for m in ids]
    if _kind(workspace) == "communities":
        names = entity_graph(workspace).names(wanted)
        members = {m: Member(id=m, kind="entity", name=names.get(m, m)) for m in wanted}
    else:
        with damaged_left_out():  # a passage whose stored text is damaged is not shown; the rest are
            chunks = workspace.index.store.chunks(wanted)
        members = {m: Member(id=m, kind="chunk", name=_cut(c.text, EXCERPT_CHARS), document_id=c.document_id)
                   for m, c in chunks.items()}
    children = set(tree.groups.view(_GroupOutline).get({c for g in found for c in g.children}))
    return [GroupView(id=g.id, level=g.level, title=g.title, summary=g.summary, rating=g.rating, findings=g.findings,
                      parent=g.parent, children=[c for c in g.children if c in children],
                      members=[members[m] for m in shown[g.id] if m in members], member_count=len(g.entity_ids))
            for g in found]


# -- entities --------------------------------------------------------------------------------------
def entities(workspace: Workspace, query: str | None = None, chunk_ids: Sequence[str] = (), limit: int = 20) -> dict[str, Any]:
    """Entities to start from: those the passages ``chunk_ids`` mention (the most mentioned
    first), else those whose names are nearest ``query`` (an exact name first, then by the
    index's name vectors), else the most connected. Blocking: reads the store (and embeds
    ``query`` with the index's embedder)."""
    graph = entity_graph(workspace)
    limit = _check(limit, "limit", 1, MAX_NODES)
    if chunk_ids:
        with workspace.index.store.read_snapshot():
            counts: dict[str, int] = defaultdict(int)
            for mention in graph.mentions.find("chunk_id", list(chunk_ids)):
                counts[mention.entity_id] += 1
            ranked = sorted(counts, key=lambda e: (-counts[e], e))
            found = _nodes(graph, ranked, limit)
    elif query is not None and query.strip():
        found = [GraphNode.model_validate(n) for n in _nearest_names(workspace, query.strip(), limit)]
    else:
        with workspace.index.store.read_snapshot():
            found = _nodes(graph, _by_degree(workspace, graph), limit)
    return Entities(workspace=workspace.name, method=workspace.index.method, entities=found).model_dump(mode="json")


def _nodes(graph: EntityGraphStore, ranked: Sequence[str], limit: int, scores: dict[str, float] | None = None) -> list[GraphNode]:
    outlines = graph.entities.view(EntityOutline).get(ranked[:limit])
    degrees = graph.degrees(list(outlines))
    return [GraphNode(id=e.id, name=e.name, type=e.type, description=_cut(e.description, DESCRIPTION_CHARS),
                      degree=degrees.get(e.id, 0), score=(scores or {}).get(e.id)) for e in outlines.values()]


def _by_degree(workspace: Workspace, graph: EntityGraphStore) -> list[str]:
    """Every entity id, the most connected first (kept until the graph changes)."""
    def build() -> list[str]:
        ids = graph.entities.keys()
        degrees = graph.degrees(ids)
        return sorted(ids, key=lambda e: (-degrees.get(e, 0), e))

    ranked: list[str] = workspace.index.derived("server.entities-by-degree", graph.generations(), build)
    return ranked


def _nearest_names(workspace: Workspace, query: str, limit: int) -> list[dict[str, Any]]:
    """The entity ``query`` names exactly (score 1), then those whose name vectors are nearest."""
    from rhizome.core.aio import run_sync
    from rhizome.core.retrieval.contract import vector_search

    graph = entity_graph(workspace)
    index = workspace.index
    collection = graph.name_collection if index.store.has_collection(graph.name_collection) else graph.entity_collection
    vectors = run_sync(index.embed([query], what="query")) if collection and index.store.has_collection(collection) else None
    with index.store.read_snapshot():
        exact = graph.entity(query)
        scores: dict[str, float] = {exact.id: 1.0} if exact is not None else {}
        if collection and vectors is not None:
            for key, score in vector_search(index.store, collection, vectors, limit):
                if score > 0:  # a name that shares nothing with the query is no suggestion
                    scores.setdefault(key, float(score))
        ranked = sorted(scores, key=lambda e: (-scores[e], e))
        return [n.model_dump(mode="json") for n in _nodes(graph, ranked, limit, scores)]


__all__ = [
    "EntityNotFoundError",
    "GroupNotFoundError",
    "NoGraphError",
    "entities",
    "entity_graph",
    "group",
    "groups",
    "hierarchy",
    "neighbourhood",
]
