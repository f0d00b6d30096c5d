"""The evidence walk of a large index: the power iteration over the whole graph against the walk
spread from the seeds (:func:`~rhizome.core.graph.local_pagerank`, what
:meth:`~rhizome.core.retrieval.evidence.EvidenceGraph.rank` runs from
:data:`~rhizome.core.retrieval.evidence.LOCAL_WALK_FROM` links).

Opens a ``heaps`` index built as ``benchmarks scale`` builds it (hashing vectors, offline
extraction; ``--build N`` builds it in the folder first) read-only, and asks it the scale
benchmark's questions (the first clause of a document drawn at random, seed 9). Each question
goes to every evidence mode twice in turn, the walk forced to the power iteration and then to
the local walk, so load on the machine falls on both alike. Reported per mode and walk: the
query's p50 and p95 (model excluded: the index has none), the walk's own p50 (``scores``
timed), how often the two give the same first five and first ten hits, and how often the
document the question was drawn from is the first hit or in the first ten. Each run replaces
its method and size's row of ``benchmarks/results/walk-scale.json``::

    uv run python -m benchmarks.walk_scale hipporag /tmp/hipporag-300000 --build 300000

With ``--compare search`` the two sides are the vector searches instead, both with the default
walk: every collection scanned whole (the index opened a second time, its collections set to
``search_exactly``) against the collections searched as they open (through their sieves,
:data:`~rhizome.core.store.vectors.SIEVE_FROM`, or out of core).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.graph_view import build_heaps
from benchmarks.harness import embedder_for, index_class, synthetic_documents
from rhizome.core.retrieval import evidence

RESULTS = Path(__file__).resolve().parent / "results" / "walk-scale.json"
WALKS = {"power iteration": float("inf"), "local": 0}
"""The walk comparison's sides: the links from which the walk is local (``LOCAL_WALK_FROM``)."""
SEARCHES = ("exact search", "sieve")
"""The search comparison's sides."""


def _p(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2)


async def measure(method: str, path: Path, size: int, queries: int, compare: str = "walk") -> dict[str, Any]:
    documents = synthetic_documents(size, corpus="heaps")
    rng = random.Random(9)
    asked = [rng.choice(documents) for _ in range(queries)]
    index = index_class(method)(embedder_for("hashing"), path=path, readonly=True)
    default_walk = evidence.LOCAL_WALK_FROM
    if compare == "walk":
        sides = {walk: (index, threshold) for walk, threshold in WALKS.items()}
    else:
        exact = index_class(method)(embedder_for("hashing"), path=path, readonly=True)
        sides = {SEARCHES[0]: (exact, default_walk), SEARCHES[1]: (index, default_walk)}
    walk_ms: list[float] = []
    scores = evidence.EvidenceGraph.scores
    size_of: dict[str, int] = {}

    def timed(graph: Any, restart: Any, damping: float = evidence.DEFAULT_PPR_DAMPING) -> Any:
        size_of.update(nodes=len(graph), links=int(graph.matrix.nnz))
        t0 = time.perf_counter()
        out = scores(graph, restart, damping)
        walk_ms.append((time.perf_counter() - t0) * 1000)
        return out

    evidence.EvidenceGraph.scores = timed  # type: ignore[method-assign]
    rows: dict[str, Any] = {}
    load = [round(os.getloadavg()[0], 1)]
    try:
        for mode in getattr(type(index), "modes", ()):
            if mode == "naive":
                continue
            retrievers = {side: opened.as_retriever(k=10, mode=mode) for side, (opened, _) in sides.items()}
            for retriever in retrievers.values():
                await retriever.aretrieve(asked[0]["text"].split(",")[0])  # the graphs loaded, not timed
            if compare == "search":
                for collection in sides[SEARCHES[0]][0].store._collections.values():
                    collection.search_exactly()
            per: dict[str, dict[str, list[Any]]] = {w: {"ms": [], "walk": [], "ids": [], "first": [], "ten": []} for w in sides}
            for doc in asked:
                question = doc["text"].split(",")[0]
                for side, (_, threshold) in sides.items():
                    evidence.LOCAL_WALK_FROM = threshold  # type: ignore[assignment]
                    walk_ms.clear()
                    t0 = time.perf_counter()
                    hits = await retrievers[side].aretrieve(question)
                    one = per[side]
                    one["ms"].append((time.perf_counter() - t0) * 1000)
                    one["walk"].append(sum(walk_ms))
                    one["ids"].append([h.id for h in hits])
                    found = [doc["id"] in h.provenance.document_ids for h in hits]
                    one["first"].append(bool(found[:1] and found[0]))
                    one["ten"].append(any(found))
            first, second = per.values()
            rows[mode] = {
                walk: {"p50_ms": _p(one["ms"], 50), "p95_ms": _p(one["ms"], 95), "walk_p50_ms": _p(one["walk"], 50),
                       "source_first": sum(one["first"]), "source_in_ten": sum(one["ten"])}
                for walk, one in per.items()
            }
            rows[mode]["same_first_five"] = sum(a[:5] == b[:5] for a, b in zip(first["ids"], second["ids"], strict=True))
            rows[mode]["same_first_ten"] = sum(a == b for a, b in zip(first["ids"], second["ids"], strict=True))
            rows[mode]["same_set_of_ten"] = sum(set(a) == set(b) for a, b in zip(first["ids"], second["ids"], strict=True))
            load.append(round(os.getloadavg()[0], 1))
    finally:
        evidence.EvidenceGraph.scores = scores  # type: ignore[method-assign]
        evidence.LOCAL_WALK_FROM = default_walk  # type: ignore[assignment]
    out = {"method": method, "size": size, "compare": compare, "sides": list(sides), "queries": queries, **size_of,
           "epsilon": evidence.DEFAULT_LOCAL_EPSILON, "tolerance": evidence.WALK_TOLERANCE, "load_average": load, "modes": rows}
    for opened, _ in sides.values():
        opened.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.walk_scale", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method", choices=("hipporag", "lightrag", "graphrag", "archrag"))
    parser.add_argument("path", type=Path, help="the index folder (heaps documents, hashing vectors)")
    parser.add_argument("--size", type=int, required=True, help="documents the index was built from (its questions are drawn from them)")
    parser.add_argument("--build", action="store_true", help="build the index of --size documents there first when it holds none")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--compare", choices=("walk", "search"), default="walk", help="the two walks, or exact search against the sieves")
    args = parser.parse_args(argv)
    if args.build and not (args.path / "manifest.json").exists():
        asyncio.run(build_heaps(args.method, args.size, args.path))
    row = asyncio.run(measure(args.method, args.path, args.size, args.queries, args.compare))
    print(json.dumps(row, indent=1))
    saved = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {"rows": []}
    key = lambda r: (r["method"], r["size"], r.get("compare", "walk"))  # noqa: E731
    rows = [r for r in saved["rows"] if key(r) != key(row)] + [row]
    rows.sort(key=key)
    RESULTS.write_text(json.dumps({
        "suite": "walk-scale",
        "command": "uv run python -m benchmarks.walk_scale METHOD DIR --size N --build [--compare search] (OMP_NUM_THREADS=1)",
        "rows": rows,
    }, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
