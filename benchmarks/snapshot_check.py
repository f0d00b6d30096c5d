"""What verifying a vector snapshot costs when an index opens: the (id, vector) digest checked
against the records (docs/reliability.md) next to the rest of a reader's first search, on a naive
index of N chunks (384-dimensional hashing vectors), and the full pair-by-pair comparison of
`rhizome check`. CPU seconds (user + system of this process), the median of interleaved repeats.

    uv run python -m benchmarks.snapshot_check --chunks 20000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rhizome.core import HashingEmbedder, VectorIndex
from rhizome.core.store.storage import load_index
from rhizome.core.store.vectors import VectorStore
from rhizome.core.types import Document
from rhizome.tools.integrity import check_index

RESULTS = Path(__file__).parent / "results"


def _cpu(fn: Any) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def run(chunks: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "idx"
        index = VectorIndex(HashingEmbedder(384), path=path)
        index.insert([Document(id=f"d{i}", text=f"Record {i}: shipment {i * 7919 % 100003} of tin reached pier {i % 97}.") for i in range(chunks)])
        index.close()
        snapshot = path / "vectors" / "chunks.npz"
        loaded, _ = VectorStore.load(snapshot)
        samples: dict[str, list[float]] = {"snapshot read": [], "digest": [], "first search (open, load, verify, query)": [], "rhizome check": []}

        def first_search() -> None:
            reader = load_index(path, readonly=True)
            reader.as_retriever(k=5).retrieve("tin at pier 12")
            reader.close()

        for _ in range(repeats):  # interleaved, so that load on the machine falls on every step alike
            samples["snapshot read"].append(_cpu(lambda: VectorStore.load(snapshot)))
            samples["digest"].append(_cpu(loaded.digest))
            samples["first search (open, load, verify, query)"].append(_cpu(first_search))
            samples["rhizome check"].append(_cpu(lambda: check_index(path)))
        median = {step: statistics.median(values) for step, values in samples.items()}
        share = median["digest"] / median["first search (open, load, verify, query)"]
        return {
            "chunks": len(loaded),
            "dimension": loaded.dimension,
            "snapshot_mb": round(snapshot.stat().st_size / 1e6, 1),
            "repeats": repeats,
            "load_average": round(os.getloadavg()[0], 1),
            "rows": [{"step": step, "cpu_s": round(value, 4)} for step, value in median.items()],
            "digest_share_of_first_search": round(share, 3),
            "command": f"uv run python -m benchmarks.snapshot_check --chunks {chunks}",
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.snapshot_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    result = run(args.chunks, args.repeats)
    print(json.dumps(result, indent=2))
    (RESULTS / "snapshot-check.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
