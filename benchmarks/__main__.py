"""Command line of the benchmark harness.

    uv run python -m benchmarks retrieval                 # hotpotqa-100 recall, every method and mode
    uv run python -m benchmarks retrieval --data musique  # musique-dev recall, imported OpenIE triples
    uv run python -m benchmarks proxy --limit 300         # medical answer-content proxy (--budget: context tokens)
    uv run python -m benchmarks cost                      # calls and tokens with a counting fake model
    uv run python -m benchmarks scale --sizes 1000 10000  # speed and memory at growing sizes
    uv run python -m benchmarks classify --shots 1 5      # gorag-wos rounds (benchmarks/gorag.py)
    .venv-bench/bin/python -m benchmarks retrieval --embed minilm   # real embeddings (benchmarks/setup.sh)
    ... retrieval --indexes DIR                           # keep the indexes in DIR/<method>, reuse them next time
    .venv-bench/bin/python -m benchmarks peers            # lightrag-hku, nano-graphrag side by side
    uv run python -m benchmarks compare OLD.json NEW.json # two retrieval results, question by question

Each run writes benchmarks/results/<suite>-<variant>.json (retrieval: [musique-]<embed>[-openie];
proxy: <embed>[-<budget>]);
with --write-docs the pages of docs/results/ are rendered again from the results files
(`python -m benchmarks render`, benchmarks/render.py).
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.systems import available_methods, systems

RESULTS = Path(__file__).parent / "results"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def write_section(key: str, title: str, body: str) -> None:
    """What ``--write-docs`` does once a run has saved its JSON: render docs/results/ again from
    benchmarks/results/*.json (benchmarks/render.py places each file on its page).

    A page that still collects tables by hand — one holding the ``<!-- harness:end -->`` marker,
    which docs/benchmarks.md no longer does — gets the run's table as before: the block between
    ``<!-- harness:key -->`` markers replaced or added, under an exclusive lock, the file
    replaced whole, so benchmarks running side by side lose none of each other's sections."""
    if not (DOCS.exists() and "<!-- harness:end -->" in DOCS.read_text(encoding="utf-8")):
        from benchmarks import render

        render.main([])
        return
    start, end = f"<!-- harness:{key} -->", f"<!-- /harness:{key} -->"
    block = f"{start}\n### {title}\n\n{body}\n{end}"
    with open(Path(tempfile.gettempdir()) / "rhizome-benchmarks-docs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = DOCS.read_text(encoding="utf-8")
        if start in text and end in text:
            text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
        else:
            anchor = "<!-- harness:end -->"
            text = text.replace(anchor, f"{block}\n\n{anchor}") if anchor in text else f"{text.rstrip()}\n\n{block}\n"
        fresh = DOCS.with_name(f".{DOCS.name}.{os.getpid()}.tmp")
        fresh.write_text(text, encoding="utf-8")
        os.replace(fresh, DOCS)


def save(name: str, result: dict) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")


def publish(name: str, title: str, result: dict, table: str, write_docs: bool) -> None:
    """Save a run's JSON, print its table and, with ``write_docs``, render docs/results/ again."""
    save(name, result)
    print(table)
    if write_docs:
        write_section(name, title, table)


def row_method(row: dict) -> str:
    """The method a harness row belongs to (``method``, or the first word of its ``system``)."""
    return row.get("method") or row["system"].split(":")[0].split(" ")[0]


def keep_saved(saved: Path, ran: list[str], add: bool, held: Callable[[Any], list[str]]) -> None:
    """Refuse, before running, a run of some methods only that would overwrite the results
    file ``saved`` whole while it holds other methods' results (``held`` names the methods of
    its JSON): without ``add`` their rows would be lost from the committed table."""
    others = sorted(set(held(json.loads(saved.read_text(encoding="utf-8")))) - set(ran)) if saved.exists() else []
    if not add and others:
        raise SystemExit(
            f"{saved.name} holds results of {', '.join(others)}, which this run does not make; "
            f"pass --add to put this run's rows in place of their methods' saved rows, or run every method"
        )


def merge_rows(saved: Path, new: dict) -> dict:
    """``new``'s rows added to the results saved at ``saved``: the rows of each method ``new``
    ran take the place of that method's saved rows (a method not saved yet goes last), every
    other row is kept. The run's settings (data, questions, budget...) must be the saved run's;
    a run with another command line (a retrieval run of fewer methods) is listed under
    ``rerun``, so the table says how its rows were made."""
    if not saved.exists():
        return new
    old = json.loads(saved.read_text(encoding="utf-8"))
    kept = ("rows", "command", "rerun")
    if {k: v for k, v in new.items() if k not in kept} != {k: v for k, v in old.items() if k not in kept}:
        raise SystemExit(f"--add: this run's settings differ from {saved.name}'s; run every method instead")

    fresh: dict[str, list[dict]] = {}
    for row in new["rows"]:
        fresh.setdefault(row_method(row), []).append(row)
    rows: list[dict] = []
    placed: set[str] = set()
    for row in old["rows"]:
        name = row_method(row)
        if name not in fresh:
            rows.append(row)
        elif name not in placed:
            rows += fresh[name]
            placed.add(name)
    rows += [r for name, group in fresh.items() if name not in placed for r in group]
    merged = {**old, "rows": rows}
    if new.get("command") and new["command"] != old.get("command"):
        merged["rerun"] = list(dict.fromkeys([*old.get("rerun", []), new["command"]]))
    return merged


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["compare"]:
        old, new = (json.loads(Path(p).read_text(encoding="utf-8")) for p in argv[1:3])
        print(harness.compare(old, new, {"graphrag:basic": "graphrag:naive"}))
        return 0
    if argv[:1] == ["render"]:  # docs/results/ from the results files
        from benchmarks import render

        return render.main(argv[1:])
    if argv[:1] == ["classify"]:  # its options are benchmarks/gorag.py's own
        from benchmarks import gorag

        gorag.main(argv[1:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="suite", required=True)
    for name in ("retrieval", "proxy", "cost", "scale"):
        p = sub.add_parser(name)
        p.add_argument("--methods", nargs="*", help=f"methods to run (default: all installed: {', '.join(available_methods())})")
        p.add_argument("--write-docs", action="store_true", help="render docs/results/ again")
        p.add_argument("--add", action="store_true",
                       help="merge these methods' rows into the saved results (in place of theirs) instead of "
                            "replacing the whole table, so a method joins or is re-run in a published table without re-running the others "
                            "(a run of fewer methods than the saved table holds is refused without it)")
        if name in ("retrieval", "proxy"):
            p.add_argument("--embed", default="hashing", help="hashing (offline) or minilm (needs benchmarks/setup.sh)")
            p.add_argument("--limit", type=int, help="number of questions (default: all)")
        if name == "proxy":
            p.add_argument("--budget", type=int, default=harness.PROXY_BUDGET,
                           help=f"context tokens read per question ({harness.PROXY_BUDGET}; another budget is its own table)")
        if name == "retrieval":
            p.add_argument("--data", choices=sorted(harness.DATASETS), default="hotpotqa",
                           help="hotpotqa (offline extraction) or musique (its imported OpenIE triples)")
            p.add_argument("--openie", help="HippoRAG OpenIE JSON to use instead of the data set's default extraction")
            p.add_argument("--indexes", type=Path, metavar="DIR",
                           help="keep each method's index in DIR/<method> and reopen it on later runs (one folder per data set "
                                "and embedder); without it every index is built in memory")
        if name == "cost":
            p.add_argument("--passages", type=int, default=100)
            p.add_argument("--queries", type=int, default=20)
        if name == "scale":
            p.add_argument("--sizes", nargs="*", type=int, default=[1000, 10000])
            p.add_argument("--corpus", choices=harness.CORPORA, default="heaps",
                           help="heaps (distinct entities grow with the corpus, Zipfian mentions; saved as scale-heaps) or "
                                "places (the corpus of the rows published before issue 60; saved as scale-offline)")
            p.add_argument("--on-disk", metavar="DIR", help="build each index in a fresh folder under DIR (default: in memory; "
                                                             "saved with -disk after the corpus's name)")
    sub.add_parser("classify", help="gorag-wos few-shot classification; takes benchmarks/gorag.py's options", add_help=False)
    p = sub.add_parser("scale-one", help=argparse.SUPPRESS)
    p.add_argument("method")
    p.add_argument("size", type=int)
    p.add_argument("--warm-up", action="store_true", help="index 200 other documents first: one-time costs left out of the build")
    p.add_argument("--queries", type=int, default=100, help="queries a retrieval mode (0: time the build only)")
    p.add_argument("--on-disk", metavar="DIR", help="build the index in a fresh folder under DIR (default: in memory)")
    p.add_argument("--corpus", choices=harness.CORPORA, default="heaps", help="the synthetic corpus (see harness.CORPORA)")
    p.add_argument("--memory-gb", type=float, help="the index's memory budget (memory_gb=)")
    p = sub.add_parser("peers", help="peer projects side by side (needs benchmarks/setup.sh)")
    p.add_argument("--passages", type=int, default=994)
    p.add_argument("--systems", nargs="*", help="run only these systems and merge their rows into the saved results")
    p.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)

    if args.suite == "scale-one":
        print(json.dumps(harness.scale_one(args.method, args.size, queries=args.queries, emit=lambda row: print(json.dumps(row), flush=True),
                                            warm_up=args.warm_up, on_disk=args.on_disk, corpus=args.corpus,
                                            memory_gb=args.memory_gb)))
        return 0
    if args.suite == "peers":
        from benchmarks import peers

        name = "peers" if args.passages == 994 else f"peers-{args.passages}"
        result = peers.run(args.passages, args.systems)
        if args.systems and (RESULTS / f"{name}.json").exists():
            result = peers.merge(json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8")), result)
        save(name, result)
        from benchmarks.render import peers_table

        table = peers_table(result)
        print(table)
        if args.write_docs:
            write_section(name, "Peers side by side" + ("" if name == "peers" else f": {args.passages} passages"), table)
        return 0

    methods = args.methods or available_methods()
    variant = {
        "retrieval": lambda: f"{'' if args.data == 'hotpotqa' else args.data + '-'}{args.embed}{'-openie' if args.openie else ''}",
        "proxy": lambda: args.embed if args.budget == harness.PROXY_BUDGET else f"{args.embed}-{args.budget}",
        "cost": lambda: "fake",
        "scale": lambda: ("offline" if args.corpus == "places" else "heaps") + ("-disk" if args.on_disk else ""),
    }[args.suite]()
    saved = RESULTS / f"{args.suite}-{variant}.json"
    ran = [*methods, "naive"] if args.suite == "retrieval" else methods  # every retrieval run measures dense retrieval
    keep_saved(saved, ran, args.add, lambda held: [row_method(row) for row in held["rows"]])
    selected = systems(methods)
    if args.suite == "retrieval":
        result = asyncio.run(harness.retrieval(selected, args.embed, args.limit, args.openie, args.data, args.indexes))
        table, title = harness.retrieval_table(result), f"Retrieval quality: {result['data']} ({variant})"
    elif args.suite == "proxy":
        result = asyncio.run(harness.proxy(selected, args.embed, args.limit, args.budget))
        table, title = harness.proxy_table(result), f"Answer-context proxy: graphrag-bench-medical ({variant})"
    elif args.suite == "cost":
        result = asyncio.run(harness.cost(selected, args.passages, args.queries))
        table, title = harness.cost_table(result), "Cost: model calls and tokens"
    else:
        result = harness.scale(methods, args.sizes, corpus=args.corpus, on_disk=args.on_disk)
        result["command"] = " ".join(["uv run python -m benchmarks scale", *(["--methods", *args.methods] if args.methods else []),
                                      "--sizes", *map(str, args.sizes), *(["--corpus", args.corpus] if args.corpus != "heaps" else []),
                                      *(["--on-disk", "DIR"] if args.on_disk else [])])
        table, title = harness.scale_table(result), "Speed and scale"
    if args.add:
        result = merge_rows(saved, result)
        table = {"retrieval": harness.retrieval_table, "proxy": harness.proxy_table, "cost": harness.cost_table,
                 "scale": harness.scale_table}[args.suite](result)
    save(f"{args.suite}-{variant}", result)
    print(table)
    if args.write_docs:
        write_section(f"{args.suite}-{variant}", title, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
