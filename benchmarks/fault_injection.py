"""The fault table: processes killed at random points of an insert and a delete, damaged
index files and a reader next to a writer, for every method (rhizome.tools.faults), counted as
cases tried / held.

    uv run python -m benchmarks.fault_injection --kills 15 --write-docs
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from rhizome.tools import faults
from rhizome.tools.testing import registered_methods

RESULTS = Path(__file__).parent / "results"


def run(methods: list[str], kills: int, seed: int) -> list[faults.Outcome]:
    outcomes: list[faults.Outcome] = []
    for method in methods:
        for operation in ("insert", "delete"):
            clean = faults.clean_build(method, operation)
            for point, k in faults.kill_points(method, operation, kills, seed):
                outcomes.append(faults.kill_case(method, operation, point, k, clean))
        outcomes += [faults.corruption_case(method, name) for name in faults.CORRUPTIONS]
        outcomes.append(faults.reader_case(method))
    return outcomes


def table(outcomes: list[faults.Outcome], methods: list[str]) -> str:
    groups: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        group = " ".join(o.case.split()[:2]) if o.family == "crash" else o.case
        groups[f"{o.family}: {group}"][o.method].append(o.held)
    lines = ["| case | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for group, by_method in groups.items():
        cells = [f"{sum(by_method[m])} / {len(by_method[m])}" if by_method[m] else "–" for m in methods]
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
    held = sum(o.held for o in outcomes)
    lines.append(f"| **all** | {held} held of {len(outcomes)} tried | " + " | ".join([""] * (len(methods) - 1)) + " |")
    failed = [o for o in outcomes if not o.held]
    if failed:
        lines += ["", "Not held:", *[f"- {o.method}: {o.case}: {o.detail}" for o in failed]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fault_injection", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="*", default=registered_methods())
    parser.add_argument("--kills", type=int, default=15, help="kill points per method and operation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--add", action="store_true", help="merge these methods' cases into the saved results (replacing theirs)")
    args = parser.parse_args(argv)
    from benchmarks.__main__ import keep_saved

    keep_saved(RESULTS / "faults.json", args.methods, args.add, lambda held: [o["method"] for o in held])
    start = time.perf_counter()
    outcomes = run(args.methods, args.kills, args.seed)
    seconds = f"{time.perf_counter() - start:.0f} s"
    methods = list(args.methods)
    if args.add and (RESULTS / "faults.json").exists():
        saved = [faults.Outcome(**o) for o in json.loads((RESULTS / "faults.json").read_text(encoding="utf-8"))]
        kept = [o for o in saved if o.method not in methods]
        seconds += f" for {', '.join(methods)} (the others: an earlier run with the same settings)"
        methods = sorted({o.method for o in kept} | set(methods))
        outcomes = kept + outcomes
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "faults.json").write_text(json.dumps([asdict(o) for o in outcomes], indent=2), encoding="utf-8")
    body = (
        f"Each kill case runs an insert (8 documents, one per batch) or a delete (4 of them) in a child process that "
        f"SIGKILLs itself inside a transaction before it commits, right after a commit, or while a vector snapshot is "
        f"written ({args.kills} points per method and operation, drawn with seed {args.seed} from every such point), "
        f"then runs the call again and compares every table with a clean build; \"held\" also needs 0 model answers paid "
        f"twice. Damaged files: each case on a fresh index, held when results stay correct or a typed error names the "
        f"file (and `rhizome check` flags the damage). {seconds}. Reproduce: "
        f"`uv run python -m benchmarks.fault_injection --kills {args.kills}`\n\n{table(outcomes, methods)}"
    )
    print(body)
    if args.write_docs:
        from benchmarks.__main__ import write_section

        write_section("faults", "Fault injection: cases tried / held", body)


if __name__ == "__main__":
    main()
