"""Every entity, relation and community GraphRAG or ArchRAG builds, for comparing two versions of the code.

Builds ``METHOD`` on musique-dev (its GPT-3.5 OpenIE triples, hashing vectors, no model), then
deletes documents 5–24 and inserts them again, and writes what the graph holds after each step
(``insert.json``, ``delete.json``, ``reinsert.json`` in ``OUT``): per entity its name, type,
description and cited chunks; per relation its ends, predicate, weight, description, keywords
and chunks; per community its level, members, parent, children, title, summary and report input
digest. ``compare`` says, per step and kind, how many records differ (exit code 1 when any
does). A refactoring that must not change what a method builds runs ``dump`` on the commit
before it (this file copied into that checkout's ``benchmarks/``) and after it::

    cd <old checkout> && PYTHONPATH=.:<its packages/*/src, colon-separated> uv run --project <this checkout> python -m benchmarks.records dump graphrag /tmp/old
    uv run python -m benchmarks.records dump graphrag /tmp/new
    uv run python -m benchmarks.records compare /tmp/old /tmp/new
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from benchmarks import data
from benchmarks.systems import build_index
from rhizome.core import HashingEmbedder

STEPS = ("insert", "delete", "reinsert")


def contents(index: Any) -> dict[str, dict[str, Any]]:
    graph = index.graph()
    return {
        "entities": {k: [e.name, e.type, e.description, list(e.source_chunk_ids)] for k, e in graph.entities.items()},
        "relations": {
            k: [r.source, r.target, r.predicate, r.weight, r.description, list(r.keywords), list(r.source_chunk_ids)]
            for k, r in graph.relations.items()
        },
        "communities": {
            k: [c.level, list(c.entity_ids), c.parent, sorted(c.children), c.title, c.summary, c.metadata.get("input_digest")]
            for k, c in graph.communities.items()
        },
    }


async def dump(method: str, out: Path, limit: int | None) -> None:
    documents, _ = data.musique()
    documents = documents[:limit] if limit else documents
    index = build_index(method, HashingEmbedder(), openie=str(data.musique_openie()))
    changed = documents[5:25]

    async def step(name: str) -> None:
        (out / f"{name}.json").write_text(json.dumps(contents(index), sort_keys=True), encoding="utf-8")
        print(name, {kind: len(records) for kind, records in contents(index).items()}, flush=True)

    await index.ainsert(documents)
    await step("insert")
    await index.adelete([d.id for d in changed])
    await step("delete")
    await index.ainsert(changed)
    await step("reinsert")


def compare(old: Path, new: Path) -> int:
    differ = 0
    for name in STEPS:
        a = json.loads((old / f"{name}.json").read_text(encoding="utf-8"))
        b = json.loads((new / f"{name}.json").read_text(encoding="utf-8"))
        for kind in ("entities", "relations", "communities"):
            keys = set(a[kind]) | set(b[kind])
            n = sum(1 for k in keys if a[kind].get(k) != b[kind].get(k))
            differ += n
            print(f"{name:9} {kind:12} {len(a[kind]):7} {len(b[kind]):7}  differ {n}")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("dump")
    run.add_argument("method", choices=("graphrag", "archrag"))
    run.add_argument("out", type=Path)
    run.add_argument("--limit", type=int, default=None, help="the first N passages only")
    check = commands.add_parser("compare")
    check.add_argument("old", type=Path)
    check.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        args.out.mkdir(parents=True, exist_ok=True)
        asyncio.run(dump(args.method, args.out, args.limit))
        return 0
    return compare(args.old, args.new)


if __name__ == "__main__":
    raise SystemExit(main())
