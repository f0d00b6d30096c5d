"""What an index holds, as tables and a graph other tools read.

Every index has documents and chunks; a method with a graph also has entities, relations and
communities, which it hands over through one hook, :meth:`BaseIndex.graph_contents
<rhizome.core.index.base.BaseIndex.graph_contents>` (the kernel's ``Entity``, ``Relation`` and
``Community`` records). From those, for any method:

- :func:`export_tables` — five tables in the spirit of GraphRAG's output parquet files:
  ``documents``, ``text_units`` (the chunks), ``entities``, ``relationships`` and
  ``communities`` (with their level, parent, children, report and members: entities, or the
  chunks themselves for a tree of summaries such as RAPTOR's), each row citing
  the chunks (``text_unit_ids``) and documents (``document_ids``) it comes from;
- :func:`write_parquet` — the tables as one ``<table>.parquet`` file each (pyarrow, extra ``parquet``),
  with fixed column types, read back by pandas, polars, DuckDB or GraphRAG's own notebooks;
- :func:`write_jsonl` — the tables as one ``<table>.jsonl`` file each, one JSON object a line;
- :func:`to_graph` and :func:`write_graphml` — the entity graph for Gephi, Cytoscape or
  networkx: entities as nodes,
  relations as directed edges (several between one pair allowed), each entity's community at
  every level as the node attributes ``community_0``, ``community_1``...; list fields are joined
  with ``;`` (GraphML holds scalars only), characters XML 1.0 cannot hold as U+FFFD.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rhizome.core.errors import InvalidInputError
from rhizome.core.store.targets import check_output_files
from rhizome.core.types import GraphContents

FORMATS = ("graphml", "parquet", "jsonl")

_STR, _INT, _FLOAT, _LIST = "string", "int64", "float64", "list<string>"
COLUMNS: dict[str, dict[str, str]] = {
    "documents": {"id": _STR, "title": _STR, "source": _STR, "metadata": _STR, "n_chunks": _INT, "text_unit_ids": _LIST},
    "text_units": {"id": _STR, "document_id": _STR, "index": _INT, "text": _STR, "n_tokens": _INT, "start": _INT,
                   "end": _INT, "entity_ids": _LIST, "document_ids": _LIST},
    "entities": {"id": _STR, "title": _STR, "type": _STR, "description": _STR, "degree": _INT, "text_unit_ids": _LIST,
                 "document_ids": _LIST, "community_ids": _LIST, "metadata": _STR},
    "relationships": {"id": _STR, "source": _STR, "target": _STR, "predicate": _STR, "description": _STR,
                      "keywords": _LIST, "weight": _FLOAT, "text_unit_ids": _LIST, "document_ids": _LIST, "metadata": _STR},
    "communities": {"id": _STR, "level": _INT, "parent": _STR, "children": _LIST, "title": _STR, "summary": _STR,
                    "rating": _FLOAT, "findings": _STR, "entity_ids": _LIST, "relationship_ids": _LIST, "size": _INT,
                    "text_unit_ids": _LIST, "document_ids": _LIST},
}
"""The tables and their columns with their types: ``string``, ``int64``, ``float64`` and
``list<string>`` (metadata and findings are JSON text, so every row has the same type)."""


def export_tables(index: Any) -> dict[str, list[dict[str, Any]]]:
    """The tables of :data:`COLUMNS` for ``index`` (any method), rows as dicts."""
    store = index.store
    contents: GraphContents = index.graph_contents()
    document_ids = store.document_ids()
    metadata = store.documents_metadata(document_ids)
    chunk_ids = store.chunk_ids()
    chunks = store.chunks(chunk_ids)
    doc_of = {cid: c.document_id for cid, c in chunks.items()}

    def docs(chunk_ids: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(doc_of[c] for c in chunk_ids if c in doc_of))

    mentions: dict[str, list[str]] = defaultdict(list)
    for entity in contents.entities:
        for cid in entity.source_chunk_ids:
            mentions[cid].append(entity.id)
    member_of: dict[str, list[str]] = defaultdict(list)
    for community in contents.communities:
        for eid in community.entity_ids:
            member_of[eid].append(community.id)
    entity_chunks = {e.id: e.source_chunk_ids for e in contents.entities}
    degree = contents.degrees()
    by_document: dict[str, list[str]] = defaultdict(list)
    for cid in chunk_ids:
        by_document[doc_of[cid]].append(cid)

    tables: dict[str, list[dict[str, Any]]] = {
        "documents": [
            {"id": d, "title": _text(metadata.get(d, {}).get("title")), "source": _text(metadata.get(d, {}).get("source")),
             "metadata": json.dumps(metadata.get(d, {}), ensure_ascii=False, sort_keys=True), "n_chunks": len(by_document[d]),
             "text_unit_ids": by_document[d]}
            for d in document_ids
        ],
        "text_units": [
            {"id": c.id, "document_id": c.document_id, "index": c.index, "text": c.text, "n_tokens": c.n_tokens,
             "start": c.start, "end": c.end, "entity_ids": mentions.get(c.id, []), "document_ids": [c.document_id]}
            for c in (chunks[cid] for cid in chunk_ids)
        ],
        "entities": [
            {"id": e.id, "title": e.name, "type": e.type, "description": e.description, "degree": degree.get(e.id, 0),
             "text_unit_ids": list(e.source_chunk_ids), "document_ids": docs(e.source_chunk_ids),
             "community_ids": member_of.get(e.id, []), "metadata": _json(e.metadata)}
            for e in contents.entities
        ],
        "relationships": [
            {"id": r.id, "source": r.source, "target": r.target, "predicate": r.predicate, "description": r.description,
             "keywords": list(r.keywords), "weight": float(r.weight), "text_unit_ids": list(r.source_chunk_ids),
             "document_ids": docs(r.source_chunk_ids), "metadata": _json(r.metadata)}
            for r in contents.relations
        ],
    }
    at_level = {(c.level, eid): c.id for c in contents.communities for eid in c.entity_ids}
    inside: dict[str, list[str]] = defaultdict(list)  # the relations within each community
    for r in contents.relations:
        for level in contents.levels():
            home = at_level.get((level, r.source))
            if home is not None and home == at_level.get((level, r.target)):
                inside[home].append(r.id)
    rows = []
    for c in contents.communities:
        # members are entities, or chunks themselves (a tree of summaries over passages, RAPTOR's)
        units = list(dict.fromkeys(cid for m in c.entity_ids for cid in entity_chunks.get(m, [m] if m in doc_of else [])))
        rows.append(
            {"id": c.id, "level": c.level, "parent": c.parent or "", "children": list(c.children), "title": c.title,
             "summary": c.summary, "rating": c.rating, "findings": _json(c.findings), "entity_ids": list(c.entity_ids),
             "relationship_ids": inside.get(c.id, []), "size": len(c.entity_ids), "text_unit_ids": units, "document_ids": docs(units)}
        )
    tables["communities"] = rows
    return tables


def write_jsonl(tables: dict[str, list[dict[str, Any]]], folder: str | Path, *, replace: bool = False) -> dict[str, Path]:
    """One ``<table>.jsonl`` per table of :func:`export_tables` in ``folder``; returns the files
    (an existing one is replaced only with ``replace``; see :func:`writable`)."""
    out = _folder(folder, "jsonl", replace)
    written = {}
    for name, rows in tables.items():
        path = out / f"{name}.jsonl"
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        written[name] = path
    return written


def write_parquet(tables: dict[str, list[dict[str, Any]]], folder: str | Path, *, replace: bool = False) -> dict[str, Path]:
    """One ``<table>.parquet`` per table of :func:`export_tables` in ``folder``, with the column
    types of :data:`COLUMNS`; returns the files. Needs pyarrow (``rhizome-rag[parquet]``)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidInputError(
            "writing parquet needs pyarrow: install rhizome-rag[parquet] (pip install 'rhizome-rag[parquet]'), "
            "or export --format jsonl"
        ) from None
    types = {_STR: pa.string(), _INT: pa.int64(), _FLOAT: pa.float64(), _LIST: pa.list_(pa.string())}
    out = _folder(folder, "parquet", replace)
    written = {}
    for name, rows in tables.items():
        schema = pa.schema([(column, types[kind]) for column, kind in COLUMNS[name].items()])
        path = out / f"{name}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        written[name] = path
    return written


def to_graph(tables: dict[str, list[dict[str, Any]]]) -> Any:
    """The entity graph of the tables of :func:`export_tables` as a ``networkx.MultiDiGraph``
    with GraphML-safe attributes (graph attribute ``levels``: community levels): nodes are
    entities (``label``, ``type``, ``description``, ``degree``, ``document_ids``,
    ``text_unit_ids``, ``community_<level>``), edges relations keyed by their id (``predicate``,
    ``description``, ``keywords``, ``weight``, ``document_ids``, ``text_unit_ids``)."""
    import networkx as nx

    communities = {c["id"]: c for c in tables["communities"]}
    levels = sorted({c["level"] for c in communities.values()})
    g = nx.MultiDiGraph(levels=len(levels))
    for e in tables["entities"]:
        attrs = {"label": e["title"], "type": e["type"], "description": e["description"], "degree": e["degree"],
                 "document_ids": _joined(e["document_ids"]), "text_unit_ids": _joined(e["text_unit_ids"])}
        attrs.update({f"community_{level}": "" for level in levels})
        for cid in e["community_ids"]:
            attrs[f"community_{communities[cid]['level']}"] = cid
        g.add_node(e["id"], **attrs)
    for r in tables["relationships"]:
        for end in (r["source"], r["target"]):
            if end not in g:  # a relation to an entity the method keeps no record of
                g.add_node(end, label=end, type="", description="", degree=0, document_ids="", text_unit_ids="",
                           **{f"community_{level}": "" for level in levels})
        g.add_edge(r["source"], r["target"], key=r["id"], predicate=r["predicate"], description=r["description"],
                   keywords=_joined(r["keywords"]), weight=r["weight"], document_ids=_joined(r["document_ids"]),
                   text_unit_ids=_joined(r["text_unit_ids"]))
    return g


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""A character XML 1.0 cannot hold: control characters other than tab, newline and carriage
return (a form feed or an escape from PDF or terminal text), surrogates, U+FFFE and U+FFFF."""


def targets(fmt: str, out: str | Path) -> list[Path]:
    """The files an export in ``fmt`` writes at ``out``: the GraphML file, or one file per table
    of :data:`COLUMNS` in the folder ``out``."""
    out = Path(out)
    return [out] if fmt == "graphml" else [out / f"{name}.{fmt}" for name in COLUMNS]


def writable(paths: Iterable[str | Path], *, replace: bool = False) -> None:
    """Refuse to write ``paths`` inside an index directory, over a file a writer holds or an
    index's records, or over an existing file unless ``replace``
    (:func:`rhizome.core.store.targets.check_output_files`, the rule of every command that
    writes a path). Nothing is written before the check passes."""
    check_output_files(paths, replace=replace, what="an export")


def write_graphml(graph: Any, path: str | Path, *, replace: bool = False) -> Path:
    """A graph of :func:`to_graph` as a GraphML file. Every character XML 1.0 cannot hold (in
    ids, keys and attributes) is written as U+FFFD (``\ufffd``, the replacement character);
    the tables keep the text exactly. The file is written under a temporary name and renamed,
    so a failed write leaves no partial file (and an existing file as it was). An index without
    entities (the naive baseline) has no graph: that is an :class:`InvalidInputError` that says so."""
    import networkx as nx

    if not graph.number_of_nodes():
        tree = bool(graph.graph.get("levels"))  # summary nodes over the passages (RAPTOR's tree)
        kept = "passages and a tree of summary nodes over them" if tree else "passages only"
        nodes = ", and its summary nodes in the communities table (with level and children)" if tree else ""
        raise InvalidInputError(
            f"this index holds no entity graph to write as GraphML (its method keeps {kept}, not entities "
            f"and relations); export --format parquet or jsonl for its documents and chunks{nodes}"
        )
    target = Path(path)
    writable([target], replace=replace)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    try:
        nx.write_graphml(_xml_safe(graph), tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def _xml_safe(graph: Any) -> Any:
    """A copy of ``graph`` with every string that XML 1.0 cannot hold made writable."""

    def safe(value: Any) -> Any:
        return _NOT_XML.sub("\ufffd", value) if isinstance(value, str) else value

    def attributes(items: dict[str, Any]) -> dict[str, Any]:
        return {safe(name): safe(value) for name, value in items.items()}

    out = graph.__class__()
    out.graph.update(attributes(graph.graph))
    out.add_nodes_from((safe(node), attributes(data)) for node, data in graph.nodes(data=True))
    if graph.is_multigraph():
        out.add_edges_from((safe(u), safe(v), safe(key), attributes(data)) for u, v, key, data in graph.edges(keys=True, data=True))
    else:
        out.add_edges_from((safe(u), safe(v), attributes(data)) for u, v, data in graph.edges(data=True))
    if (out.number_of_nodes(), out.number_of_edges()) != (graph.number_of_nodes(), graph.number_of_edges()):
        raise InvalidInputError(
            "two entities or relations of this graph differ only in characters GraphML cannot hold "
            "(control characters); export --format parquet or jsonl, which keep them"
        )
    return out


def _folder(folder: str | Path, fmt: str, replace: bool) -> Path:
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise InvalidInputError(f"{out} is a file; export tables into a folder")
    writable(targets(fmt, out), replace=replace)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _joined(values: list[str]) -> str:
    return ";".join(values)


__all__ = ["COLUMNS", "FORMATS", "export_tables", "targets", "to_graph", "writable", "write_graphml", "write_jsonl", "write_parquet"]
