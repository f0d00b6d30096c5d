"""How long ``rhizome demo`` takes, offline, per method (issue 18: "in a few seconds per method").

Each method runs as ``rhizome demo --offline --no-cache --method M`` in a fresh Python process,
as a user starts it (imports included), then the whole demo once; each is run ``--repeat``
times and the fastest run is kept (the machine is shared, so slower runs measure the other
work on it). Per method: the build time the demo prints (indexing the 8 sample documents) and
the process's wall time (imports, build, the three questions in every mode); and each method's
build time inside the whole demo (where the libraries one method imports are already loaded for
the next). The target, read as at most 5 s per method, is reported as met or missed.

    uv run python -m benchmarks.demo --write-docs

Writes benchmarks/results/demo.json.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

from benchmarks.__main__ import publish

TARGET_S = 5.0
"""'A few seconds per method', as a number."""

BUILT = re.compile(r"^  (?P<method>\S+)\s+\d+ chunks.*\((?P<new>\d+) new documents, (?P<seconds>[\d.]+) s\)$", re.MULTILINE)
RUN = "from rhizome.rag.cli import main; raise SystemExit(main(['demo', '--offline', '--no-cache', *__import__('sys').argv[1:]]))"


def run_demo(methods: list[str]) -> tuple[float, dict[str, float]]:
    """Wall time of one demo process and the build time it printed per method."""
    args = [a for m in methods for a in ("--method", m)]
    env = {**os.environ, "OLLAMA_HOST": "http://127.0.0.1:9"}  # offline whatever runs on this machine
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env, timeout=900)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"rhizome demo {' '.join(args)} failed: {done.stderr[-2000:]}")
    return wall, {m["method"]: float(m["seconds"]) for m in BUILT.finditer(done.stdout)}


def main(argv: list[str] | None = None) -> int:
    from rhizome.core.store.storage import method_registry

    parser = argparse.ArgumentParser(prog="python -m benchmarks.demo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each; the fastest is kept (default 2)")
    parser.add_argument("--write-docs", action="store_true", help="render docs/results/ again")
    args = parser.parse_args(argv)
    methods = sorted(method_registry(), key=lambda m: (m != "naive", m))
    rows: dict[str, dict[str, float]] = {}
    for method in methods:
        runs = [run_demo([method]) for _ in range(args.repeat)]
        rows[method] = {"build_s": min(r[1][method] for r in runs), "wall_s": min(r[0] for r in runs)}
        print(method, rows[method], flush=True)
    whole = [run_demo([]) for _ in range(args.repeat)]
    for method in methods:
        rows[method]["in_demo_s"] = min(r[1][method] for r in whole)
    rows["all methods"] = {"build_s": min(sum(r[1].values()) for r in whole), "wall_s": min(r[0] for r in whole)}
    rows["all methods"]["in_demo_s"] = rows["all methods"]["build_s"]
    load = os.getloadavg()[0]
    lines = [
        f"`rhizome demo --offline --no-cache`, the 8 sample documents, one fresh process per row, fastest of {args.repeat} runs; "
        f"{os.cpu_count()} cores shared with other work (load average {load:.1f} at the end). "
        "Reproduce: `uv run python -m benchmarks.demo`",
        "",
        "| methods | build alone (s, as the demo prints it) | build within the whole demo (s) | process alone (s): imports, build, 3 questions in every mode | target ≤ 5 s per method (build alone) |",
        "|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        verdict = "–" if name == "all methods" else ("met" if row["build_s"] <= TARGET_S else "**missed**")
        lines.append(f"| {name} | {row['build_s']:.1f} | {row['in_demo_s']:.1f} | {row['wall_s']:.1f} | {verdict} |")
    result = {"target_s": TARGET_S, "repeat": args.repeat, "load_average": load, "rows": rows}
    publish("demo", "rhizome demo: seconds per method (offline)", result, "\n".join(lines), args.write_docs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
