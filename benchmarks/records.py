"""Every entity, relation and community GraphRAG or ArchRAG builds, for comparing two versions of the code.

Builds ``METHOD`` on musique-dev (its GPT-3.5 OpenIE triples, hashing vectors, no model), then
deletes documents 5–24 and inserts them again, and writes what the graph holds after each step
(``insert.json``, ``delete.json``, ``reinsert.json`` in ``OUT``): every entity, relation and
community whole, as the index exports them (``graph_contents``). ``compare`` says, per step and kind, how many records differ (exit code 1 when any
does). A refactoring that must not change what a method builds runs ``dump`` on the commit
before it (this file copied into that checkout's ``benchmarks/``) and after it::

    cd <old checkout> && PYTHONPATH=.:<its packages/*/src, colon-separated> uv run --project <this checkout> python -m benchmarks.records dump graphrag /tmp/old
    uv run python -m benchmarks.records dump graphrag /tmp/new
    uv run python -m benchmarks.records compare /tmp/old /tmp/new

``retrieval METHOD OUT`` is the same for what a method's searches return: it builds ``METHOD``
on hotpotqa-100 (offline extraction, hashing vectors, no model) and writes, per mode, every
question's search (hits, context, stats and notes of ``asearch``, the hits of ``aretrieve``) and
answer (``<mode>.json``), and the graph it holds after the insert, after deleting documents 5–24
and after inserting them again (``graph-insert.json`` and so on); ``compare``
reads whichever of the files both folders hold. ``--fake-llm`` builds and searches with a fake
chat model whose answers are made from the schemas it is asked for, so that every model step
runs too (``--passages`` and ``--limit`` keep that run short).
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
from rhizome.core.models.fake import FakeChatModel, SchemaResponder

STEPS = ("insert", "delete", "reinsert")
TIMINGS = ("seconds", "_ms", "cpu")
"""Stats whose names hold one of these are timings, which differ from run to run."""


async def dump(method: str, out: Path, limit: int | None) -> None:
    documents, _ = data.musique()
    documents = documents[:limit] if limit else documents
    index = build_index(method, HashingEmbedder(), openie=str(data.musique_openie()))
    changed = documents[5:25]

    async def step(name: str) -> None:
        held = _graph(index)
        (out / f"{name}.json").write_text(json.dumps(held, sort_keys=True), encoding="utf-8")
        print(name, {kind: len(records) for kind, records in held.items()}, flush=True)

    await index.ainsert(documents)
    await step("insert")
    await index.adelete([d.id for d in changed])
    await step("delete")
    await index.ainsert(changed)
    await step("reinsert")


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not any(t in str(k) for t in TIMINGS)}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _graph(index: Any) -> dict[str, dict[str, Any]]:
    """Every entity, relation and community of ``index`` as exported (``graph_contents``)."""
    held = index.graph_contents()
    return {
        "entities": {e.id: e.model_dump(mode="json") for e in held.entities},
        "relations": {r.id: r.model_dump(mode="json") for r in held.relations},
        "communities": {c.id: c.model_dump(mode="json") for c in held.communities},
    }


async def dump_retrieval(method: str, out: Path, limit: int | None, passages: int | None = None, fake_llm: bool = False) -> None:
    documents, questions = data.hotpotqa()
    questions = questions[:limit] if limit else questions
    documents = documents[:passages] if passages else documents
    llm = FakeChatModel(SchemaResponder()) if fake_llm else None  # the model's steps, with answers made from their schemas
    index = build_index(method, HashingEmbedder(), llm=llm, cache=False)
    changed = documents[5:25]
    await index.ainsert(documents)
    (out / "graph-insert.json").write_text(json.dumps(_graph(index), sort_keys=True), encoding="utf-8")
    for mode in index.modes:
        retriever = index.as_retriever(k=10, mode=mode)
        rows = {}
        for q in questions:
            found = await retriever.asearch(q.question)
            hits = await retriever.aretrieve(q.question)
            answer = await index.aanswer(q.question, mode=mode, k=10)
            rows[q.id] = _untimed({
                "hits": [h.model_dump(mode="json") for h in found.hits],
                "context": [h.model_dump(mode="json") for h in found.context],
                "stats": found.stats, "notes": found.notes,
                "retrieve": [h.model_dump(mode="json") for h in hits],
                "answer": [answer.text, [h.id for h in answer.citations]],
            })
        (out / f"{mode}.json").write_text(json.dumps(rows, sort_keys=True), encoding="utf-8")
        print(mode, len(rows), flush=True)
    await index.adelete([d.id for d in changed])
    (out / "graph-delete.json").write_text(json.dumps(_graph(index), sort_keys=True), encoding="utf-8")
    await index.ainsert(changed)
    (out / "graph-reinsert.json").write_text(json.dumps(_graph(index), sort_keys=True), encoding="utf-8")


def compare(old: Path, new: Path) -> int:
    differ = 0
    for path in sorted(old.glob("*.json")):
        if path.stem in STEPS or not (new / path.name).exists():
            continue
        a = json.loads(path.read_text(encoding="utf-8"))
        b = json.loads((new / path.name).read_text(encoding="utf-8"))
        groups = a.items() if path.stem.startswith("graph-") else [("questions", a)]
        for kind, records in groups:
            other = b.get(kind, {}) if path.stem.startswith("graph-") else b
            n = sum(1 for k in set(records) | set(other) if records.get(k) != other.get(k))
            differ += n
            print(f"{path.stem:15} {kind:12} {len(records):7} {len(other):7}  differ {n}")
    for name in STEPS:
        if not (old / f"{name}.json").exists():
            continue
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
    searches = commands.add_parser("retrieval")
    searches.add_argument("method")
    searches.add_argument("out", type=Path)
    searches.add_argument("--limit", type=int, default=None, help="the first N questions only")
    searches.add_argument("--passages", type=int, default=None, help="the first N passages only")
    searches.add_argument("--fake-llm", action="store_true", help="a fake chat model (FakeChatModel(SchemaResponder())), so the model's steps run")
    check = commands.add_parser("compare")
    check.add_argument("old", type=Path)
    check.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        args.out.mkdir(parents=True, exist_ok=True)
        asyncio.run(dump(args.method, args.out, args.limit))
        return 0
    if args.command == "retrieval":
        args.out.mkdir(parents=True, exist_ok=True)
        asyncio.run(dump_retrieval(args.method, args.out, args.limit, args.passages, args.fake_llm))
        return 0
    return compare(args.old, args.new)


if __name__ == "__main__":
    raise SystemExit(main())
