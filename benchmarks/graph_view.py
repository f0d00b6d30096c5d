"""What GraphRAG's or ArchRAG's searches hold of their entity graph: the time ``index.graph()``
takes after a read-only open, and the memory it holds (resident set before and after, garbage
collected). ``--build N`` first builds the index of N synthetic ``heaps`` documents in the
folder when it holds none (hashing vectors, offline extraction, as ``benchmarks scale``)::

    uv run python -m benchmarks.graph_view graphrag /tmp/graphrag-30000 --build 30000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from pathlib import Path

from benchmarks.harness import build_index, embedder_for, index_class, synthetic_documents


def resident_mb() -> int:
    with open("/proc/self/status", encoding="utf-8") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) // 1024


async def build_heaps(method: str, size: int, path: Path) -> None:
    """Build ``method``'s index of ``size`` synthetic ``heaps`` documents in ``path`` (hashing
    vectors, offline extraction, batches of 1,024, as ``benchmarks scale``)."""
    index = build_index(method, embedder_for("hashing"), batch_size=1024, path=path)
    await index.ainsert(synthetic_documents(size, corpus="heaps"))
    index.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph_view", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method", choices=("graphrag", "archrag"))
    parser.add_argument("path", type=Path, help="the index folder (built with the hashing embedder)")
    parser.add_argument("--build", type=int, metavar="N", help="build N heaps documents there first when it holds no index")
    args = parser.parse_args(argv)
    if args.build and not (args.path / "manifest.json").exists():
        asyncio.run(build_heaps(args.method, args.build, args.path))
    index = index_class(args.method)(embedder_for("hashing"), path=args.path, readonly=True)
    gc.collect()
    before = resident_mb()
    start = time.perf_counter()
    graph = index.graph()
    seconds = time.perf_counter() - start
    gc.collect()
    print(f"graph() {seconds:.2f} s, {resident_mb() - before} MB held: {len(graph.entities)} entities, "
          f"{len(graph.relations)} relations, {len(graph.communities)} communities")
    index.close()


if __name__ == "__main__":
    main()
