"""The fault table: processes killed at random points of an insert and a delete, damaged
index files and a reader next to a writer, for every method (rhizome.tools.faults), counted as
cases tried / held, on index directories (SQLite and snapshot files) and on indexes in
PostgreSQL (a private server started with ``pgserver``; the kill and reader cases — a schema has
no files to damage). A run of one backend keeps the other's saved cases.

    uv run python -m benchmarks.fault_injection --kills 15 --backend both --write-docs
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from benchmarks.render import faults_table
from rhizome.tools import faults
from rhizome.tools.testing import registered_methods

RESULTS = Path(__file__).parent / "results"


def run(methods: list[str], kills: int, seed: int, server: str | None = None) -> list[faults.Outcome]:
    """Every case of ``methods`` on index directories, or (``server``, a PostgreSQL URL) the
    kill and reader cases on indexes in that database."""
    outcomes: list[faults.Outcome] = []
    for method in methods:
        for operation in ("insert", "delete"):
            clean = faults.clean_build(method, operation, server)
            for point, k in faults.kill_points(method, operation, kills, seed, server):
                outcomes.append(faults.kill_case(method, operation, point, k, clean, server))
        if server is None:
            outcomes += [faults.corruption_case(method, name) for name in faults.CORRUPTIONS]
        outcomes.append(faults.reader_case(method, server))
    return outcomes


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A private PostgreSQL server with pgvector (``pgserver``) for the run, removed at its end."""
    import pgserver

    server = pgserver.get_server(tempfile.mkdtemp(prefix="rhizome-pg-"), cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fault_injection", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="*", default=registered_methods())
    parser.add_argument("--kills", type=int, default=15, help="kill points per method and operation")
    parser.add_argument("--seed", type=int, default=0)
    has_pg = importlib.util.find_spec("pgserver") is not None
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both" if has_pg else "sqlite",
                        help="index directories, indexes in PostgreSQL (a pgserver of its own), or both (default: both when pgserver is installed)")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--add", action="store_true", help="merge these methods' cases into the saved results (replacing theirs)")
    args = parser.parse_args(argv)
    from benchmarks.__main__ import keep_saved

    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    saved_file = RESULTS / "faults.json"
    keep_saved(saved_file, args.methods, args.add, lambda held: [o["method"] for o in held if o.get("backend", "sqlite") in backends])
    start = time.perf_counter()
    outcomes: list[faults.Outcome] = []
    if "sqlite" in backends:
        outcomes += run(args.methods, args.kills, args.seed)
    if "postgres" in backends:
        with postgres_server() as url:
            outcomes += run(args.methods, args.kills, args.seed, url)
    seconds = f"{time.perf_counter() - start:.0f} s for {' and '.join(backends)}"
    methods = list(args.methods)
    if saved_file.exists():  # the other backend's cases, and with --add the other methods', stay
        saved = [faults.Outcome(**o) for o in json.loads(saved_file.read_text(encoding="utf-8"))]
        kept = [o for o in saved if o.backend not in backends or (args.add and o.method not in methods)]
        if kept:
            seconds += " (the other cases: an earlier run)"
        methods = sorted({o.method for o in kept} | set(methods))
        order = {"sqlite": 0, "postgres": 1}
        outcomes = sorted(kept + outcomes, key=lambda o: order[o.backend])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "faults.json").write_text(json.dumps([asdict(o) for o in outcomes], indent=2), encoding="utf-8")
    body = (
        f"Each kill case runs an insert (8 documents, one per batch) or a delete (4 of them) in a child process that "
        f"SIGKILLs itself inside a transaction before it commits, right after a commit, or while a vector snapshot is "
        f"written ({args.kills} points per method and operation, drawn with seed {args.seed} from every such point), "
        f"then runs the call again and compares every table with a clean build; \"held\" also needs 0 model answers paid "
        f"twice. Damaged files: each case on a fresh index, held when results stay correct or a typed error names the "
        f"file (and `rhizome check` flags the damage). {seconds}. Reproduce: "
        f"`uv run python -m benchmarks.fault_injection --kills {args.kills} --backend {args.backend}`\n\n"
        f"{faults_table([asdict(o) for o in outcomes])}"
    )
    print(body)
    if args.write_docs:
        from benchmarks.__main__ import write_section

        write_section("faults", "Fault injection: cases tried / held", body)


if __name__ == "__main__":
    main()
