"""Before and after the cuts of the evidence modes' query cost, interleaved in one process.

Opens each entity method's index in ``--indexes DIR`` (as :mod:`benchmarks.latency` builds
them) twice, as "before" and "after", and asks every question of the naive index and of both,
in turn, three times, with the query vectors served from memory (model excluded); the CPU time
(user + system) of each call, so the load other processes put on the machine weighs less than
in wall time. The hits of both are compared question by question: first five and first ten the
same, and R@2 / R@5 against the gold passages. What differs between the two sides is one of:

- ``--exact``: both search every collection exactly; "before" stops the walk at 1e-6, "after"
  at :data:`~rhizome.core.retrieval.evidence.WALK_TOLERANCE` (the walk's tolerance alone);
- ``--sieve``: both walk at the default tolerance; "before" scans every vector of every
  collection, "after" searches as an index opens (the collections of
  :data:`~rhizome.core.store.vectors.SIEVE_FROM` vectors or more through their sieve: codes
  scanned, candidates re-ranked by exact cosine);
- ``--local-walk``: both search as an index opens; "before" walks as the index would (power
  iteration below :data:`~rhizome.core.retrieval.evidence.LOCAL_WALK_FROM` links), "after" runs
  the walk spread from the seeds on every graph.

    .venv-bench/bin/python -m benchmarks.graph_search --data musique --indexes DIR --sieve

(Its first results, ``graph-search-*-minilm.json`` without a suffix, compared the opt-in HNSW
search graphs of commit 7d8541f, since removed: the sieve does their work without their recall
cost.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks import data, metrics
from benchmarks.harness import DATASETS
from benchmarks.latency import Remembering, open_index
from benchmarks.systems import systems
from rhizome.core.retrieval import evidence

RESULTS = Path(__file__).parent / "results"
BEFORE_TOLERANCE = 1e-6
"""The walk's tolerance before the cut."""
METHODS = ["hipporag", "lightrag", "graphrag", "archrag"]


async def _warm(retriever: Any, questions: list[Any]) -> None:
    for q in questions:
        await retriever.aretrieve(q.question)


async def measure(dataset: str, folder: Path, methods: list[str], reps: int = 3, sieve: bool = False,
                  local: bool = False) -> dict[str, Any]:
    _, questions = data.musique() if dataset == "musique" else data.hotpotqa()
    after_tolerance = evidence.WALK_TOLERANCE
    before_tolerance = after_tolerance if sieve or local else BEFORE_TOLERANCE
    walk_from = evidence.LOCAL_WALK_FROM
    naive = open_index("naive", "minilm", dataset, folder)
    naive.embedder = Remembering(naive.embedder)
    plain = naive.as_retriever(k=10)
    await _warm(plain, questions)
    naive.embedder.replay = True
    rows = []
    load = [round(os.getloadavg()[0], 1)]
    for method in methods:
        before, after = open_index(method, "minilm", dataset, folder), open_index(method, "minilm", dataset, folder)
        for index in (before, after):
            index.embedder = Remembering(index.embedder)
        for system in systems([method]):
            if system.mode == "naive":
                continue
            old, new = before.as_retriever(k=10, mode=system.mode), after.as_retriever(k=10, mode=system.mode)
            await _warm(old, questions)
            await _warm(new, questions)  # the collections a mode searches are loaded now
            before.embedder.replay = after.embedder.replay = True
            sieved = sorted(name for name, c in after.store._collections.items() if sieve and c.sieve)
            for collection in [*([] if local else before.store._collections.values()),
                               *([] if sieve or local else after.store._collections.values())]:
                collection.search_exactly()
            cpu: dict[str, list[float]] = {"naive": [], "before": [], "after": []}
            hits: dict[str, list[list[Any]]] = {"before": [], "after": []}
            try:
                for rep in range(reps):
                    for q in questions:
                        for name, retriever, tolerance in (("naive", plain, after_tolerance), ("before", old, before_tolerance),
                                                           ("after", new, after_tolerance)):
                            evidence.WALK_TOLERANCE = tolerance
                            evidence.LOCAL_WALK_FROM = 0 if local and name == "after" else walk_from  # type: ignore[assignment]
                            start = time.process_time()
                            found = await retriever.aretrieve(q.question)
                            cpu[name].append((time.process_time() - start) * 1000)
                            if rep == 0 and name != "naive":
                                hits[name].append(found)
            finally:
                evidence.WALK_TOLERANCE = after_tolerance
                evidence.LOCAL_WALK_FROM = walk_from  # type: ignore[assignment]
            ranked = {name: [metrics.ranked_documents(h) for h in found] for name, found in hits.items()}
            recall = {(name, k): [metrics.recall_at(r, q.supporting, k) for r, q in zip(ranked[name], questions)]
                      for name in ranked for k in (2, 5)}
            p50 = {name: statistics.median(times) for name, times in cpu.items()}
            rows.append({
                "system": system.name, **({"sieves_searched": sieved} if sieve else {}),
                "naive_cpu_p50_ms": round(p50["naive"], 2), "before_cpu_p50_ms": round(p50["before"], 2),
                "after_cpu_p50_ms": round(p50["after"], 2),
                "before_x_naive": round(p50["before"] / p50["naive"], 2), "after_x_naive": round(p50["after"] / p50["naive"], 2),
                "same_first_5": sum([h.id for h in a[:5]] == [h.id for h in b[:5]] for a, b in zip(hits["before"], hits["after"])),
                "same_first_10": sum([h.id for h in a] == [h.id for h in b] for a, b in zip(hits["before"], hits["after"])),
                **{f"r{k}_{name}": round(statistics.mean(recall[name, k]), 4) for k in (2, 5) for name in ("before", "after")},
                **{f"r{k}_questions_changed": sum(x != y for x, y in zip(recall["before", k], recall["after", k])) for k in (2, 5)},
            })
            print(json.dumps(rows[-1]), flush=True)
            before.embedder.replay = after.embedder.replay = False
        load.append(round(os.getloadavg()[0], 1))
    return {"suite": "graph-search", "data": dataset, "embedder": "minilm", "questions": len(questions), "k": 10, "repeats": reps,
            "load_average": {"first": load[0], "highest": max(load), "last": load[-1]},
            "command": f".venv-bench/bin/python -m benchmarks.graph_search --data {dataset} --indexes DIR"
                       + (f" --methods {' '.join(methods)}" if methods != METHODS else "")
                       + (" --local-walk" if local else " --sieve" if sieve else " --exact"),
            "rows": rows}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph_search", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", choices=DATASETS, default="musique")
    parser.add_argument("--indexes", type=Path, required=True, help="folder of the indexes (as benchmarks.latency builds them)")
    parser.add_argument("--methods", nargs="*", default=METHODS)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--exact", action="store_true", help="after: exact search too (the walk's tolerance alone)")
    which.add_argument("--sieve", action="store_true", help="before: exact, after: through the sieves; both at the default tolerance")
    which.add_argument("--local-walk", action="store_true", help="before: the default walk, after: the local walk on every graph; both as opened")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.data, args.indexes, args.methods, sieve=args.sieve, local=args.local_walk))
    RESULTS.mkdir(exist_ok=True)
    name = f"graph-search-{args.data}-minilm" + ("-exact" if args.exact else "-sieve" if args.sieve else "-local-walk")
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
