"""Filter cost: query latency of naive retrieval with a selective metadata filter against none
(issue 57), at 10k and 100k documents of synthetic text with a ``year`` between 1800 and 2024.

The filter ``{"year": {"$gt": 2014}}`` matches about 4 % of the documents; the store evaluates
it in SQL (``MetadataFilter.sql``), then the search keeps the nearest chunks among the matching
documents. Each query runs with and without the filter, interleaved, so machine load weighs on
both alike; wall-clock and CPU (user + system of this process) milliseconds are reported, with
the load average at the start and end.

    uv run python -m benchmarks.filters            # 10k and 100k documents
    uv run python -m benchmarks.filters --quick    # 1k, for a smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.kernel import synthetic_text
from rhizome.core import HashingEmbedder, VectorIndex
from rhizome.core.retrieval.filters import as_filter

RESULTS = Path(__file__).parent / "results"
FILTER = {"year": {"$gt": 2014}}


def _ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


async def run(n_docs: int, queries: int = 50) -> dict[str, Any]:
    rng = random.Random(57)
    with tempfile.TemporaryDirectory() as tmp:
        index = VectorIndex(HashingEmbedder(), path=Path(tmp) / "idx", chunk_size=1200, chunk_overlap=100, batch_size=2048)
        await index.ainsert([{"id": f"doc{i}", "text": synthetic_text(rng), "metadata": {"year": rng.randint(1800, 2024)}}
                             for i in range(n_docs)])
        matching = len(index.store.matching_documents(as_filter(FILTER)))
        questions = [synthetic_text(rng, 1) for _ in range(queries)]
        plain, filtered = index.as_retriever(k=10), index.as_retriever(k=10, filter=FILTER)
        await plain.aretrieve(questions[0])  # warm: the vector collection loaded once
        await filtered.aretrieve(questions[0])
        wall: dict[str, list[float]] = {"none": [], "filter": [], "sql": []}
        cpu: dict[str, list[float]] = {"none": [], "filter": [], "sql": []}
        for question in questions:
            for name, retriever in (("none", plain), ("filter", filtered)):
                w, c = time.perf_counter(), time.process_time()
                hits = await retriever.aretrieve(question)
                wall[name].append(time.perf_counter() - w)
                cpu[name].append(time.process_time() - c)
                assert len(hits) == 10
            w, c = time.perf_counter(), time.process_time()
            index.store.matching_documents(as_filter(FILTER))
            wall["sql"].append(time.perf_counter() - w)
            cpu["sql"].append(time.process_time() - c)
        index.close()
    return {
        "documents": n_docs, "matching": matching, "queries": queries,
        "p50_ms_no_filter": _ms(wall["none"]), "p50_ms_filter": _ms(wall["filter"]),
        "p50_cpu_ms_no_filter": _ms(cpu["none"]), "p50_cpu_ms_filter": _ms(cpu["filter"]),
        "p50_ms_sql_alone": _ms(wall["sql"]), "p50_cpu_ms_sql_alone": _ms(cpu["sql"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    rows = [asyncio.run(run(n)) for n in ([1_000] if args.quick else [10_000, 100_000])]
    for row in rows:
        print(row)
    result = {
        "command": "uv run python -m benchmarks.filters",
        "filter": json.dumps(FILTER),
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "sizes": rows,
    }
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "filters.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
