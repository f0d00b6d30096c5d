"""The graph routes: an entity's neighbourhood, entities to start from, and the groups of a
level (communities, layers, tree nodes), paged. Each runs :mod:`rhizome.server.graphview` in a
worker thread; a method without the structure asked for is a 404 that names the methods
that have it."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request

from rhizome.server import graphview
from rhizome.server.graphview import (
    MAX_DEPTH,
    MAX_GROUPS,
    MAX_NODES,
    Entities,
    Group,
    Groups,
    Neighbourhood,
)
from rhizome.server.offload import call_in_thread
from rhizome.server.security import require_read
from rhizome.server.state import workspace

router = APIRouter(dependencies=[Depends(require_read)], tags=["graph"])


@router.get("/{ws}/graph/neighbourhood", response_model=Neighbourhood)
async def neighbourhood(
    request: Request, ws: str,
    entity: str = Query(min_length=1, description="an entity's name as written, or its id"),
    depth: int = Query(1, ge=1, le=MAX_DEPTH, description="relations to follow out from the entity"),
    limit: int = Query(50, ge=1, le=MAX_NODES, description="most entities returned, the entity included"),
) -> Neighbourhood:
    """The entity and the entities up to ``depth`` relations away (GraphRAG, LightRAG, HippoRAG,
    ArchRAG), the most strongly related first, with the relations between them and the
    communities that hold the entity."""
    space = workspace(request, ws)
    found = await call_in_thread(lambda: graphview.neighbourhood(space, entity, depth, limit))
    return Neighbourhood.model_validate(found)


@router.get("/{ws}/graph/entities", response_model=Entities)
async def entities(
    request: Request, ws: str,
    q: str | None = Query(None, description="a name: the entity of that name, then the nearest names"),
    chunk: list[str] = Query([], description="passage (chunk) ids: the entities they mention, the most mentioned first"),
    limit: int = Query(20, ge=1, le=MAX_NODES),
) -> Entities:
    """Entities to start from: those the given passages mention, else those named like ``q``,
    else the most connected."""
    space = workspace(request, ws)
    return Entities.model_validate(await call_in_thread(lambda: graphview.entities(space, q, chunk, limit)))


@router.get("/{ws}/graph/groups", response_model=Groups)
async def groups(
    request: Request, ws: str,
    level: int | None = Query(None, ge=0, description="default: the first level (GraphRAG's 0 is its coarsest; ArchRAG's and RAPTOR's start at 1)"),
    offset: int = Query(0, ge=0),
    limit: int = Query(20, ge=1, le=MAX_GROUPS),
) -> Groups:
    """One page of a level's groups, the largest first: GraphRAG's communities, ArchRAG's
    layer nodes or RAPTOR's tree nodes, each with its summary, parent, child groups and members."""
    space = workspace(request, ws)
    return Groups.model_validate(await call_in_thread(lambda: graphview.groups(space, level, offset, limit)))


@router.get("/{ws}/graph/groups/{group_id}", response_model=Group)
async def group(request: Request, ws: str, group_id: str) -> Group:
    """One group by id, with its summary, parent, child groups and members."""
    space = workspace(request, ws)
    return Group.model_validate(await call_in_thread(lambda: graphview.group(space, group_id)))
