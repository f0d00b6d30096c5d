"""Resident memory through the steps of one GraphRAG or ArchRAG build: where a build's peak comes from.

Builds N synthetic ``heaps`` documents (hashing vectors, offline extraction, as ``benchmarks
scale``) into a fresh folder while a thread samples the process's resident set every 0.2 s, and
prints, for each entry to and exit from the steps below, the time, the resident set then and
the highest sample since the line before::

    uv run python -m benchmarks.build_memory graphrag 30000 /tmp/graphrag-memory
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.graph_view import build_heaps, resident_mb


def steps(method: str) -> list[tuple[Any, str]]:
    """The functions of ``method``'s build whose entry and exit are reported (owner, attribute)."""
    from rhizome.core.graph.store import EntityGraphStore

    if method == "archrag":
        import rhizome.archrag.index as archrag

        return [(EntityGraphStore, "settle"), (archrag.ArchRAGIndex, "_rebuild"), (archrag.ArchRAGIndex, "_cluster"),
                (archrag.ArchRAGIndex, "_reports"), (archrag, "augment"), (archrag, "partition"), (archrag.ArchRAGIndex, "_build_chnsw")]
    import rhizome.graphrag.index as graphrag
    from rhizome.core.index.hierarchy import GroupSummarizer

    return [(EntityGraphStore, "settle"), (graphrag.GraphRAGIndex, "_rebuild"), (graphrag.GraphRAGIndex, "_update"),
            (graphrag, "_edge_rows"), (graphrag, "_weighted"), (graphrag, "cluster_hierarchy"),
            (GroupSummarizer, "asummarize"), (graphrag.GraphRAGIndex, "_community_vectors")]


def _watch(owner: Any, name: str, events: list[tuple[float, str, int]], start: float) -> None:
    step = getattr(owner, name)

    def note(mark: str) -> None:
        events.append((time.perf_counter() - start, f"{mark}{name}", resident_mb()))

    if inspect.iscoroutinefunction(step):
        @functools.wraps(step)
        async def watched_async(*args: Any, **kwargs: Any) -> Any:
            note("+")
            try:
                return await step(*args, **kwargs)
            finally:
                note("-")
        setattr(owner, name, watched_async)
    else:
        @functools.wraps(step)
        def watched(*args: Any, **kwargs: Any) -> Any:
            note("+")
            try:
                return step(*args, **kwargs)
            finally:
                note("-")
        setattr(owner, name, watched)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.build_memory", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method", choices=("graphrag", "archrag"))
    parser.add_argument("size", type=int)
    parser.add_argument("path", type=Path, help="a folder for the index (emptied first)")
    args = parser.parse_args(argv)
    shutil.rmtree(args.path, ignore_errors=True)
    start = time.perf_counter()
    samples: list[tuple[float, int]] = []
    events: list[tuple[float, str, int]] = []

    def sample() -> None:
        while True:
            samples.append((time.perf_counter() - start, resident_mb()))
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    for owner, name in steps(args.method):
        _watch(owner, name, events, start)
    asyncio.run(build_heaps(args.method, args.size, args.path))
    since = 0.0
    for at, step, held in events:
        peak = max([mb for t, mb in samples if since <= t <= at] or [held])
        print(f"{at:8.1f} s  {step:22s} {held:6d} MB  (highest since the line before: {peak} MB)")
        since = at
    print(f"peak {max(mb for _, mb in samples)} MB")


if __name__ == "__main__":
    main()
