"""Query latency of every retrieval mode against the naive index, measured interleaved.

The retrieval suite times each mode in turn, so a mode measured while something else loads the
machine looks slower than one measured a minute later. Here every question is asked of every
system in turn (naive first, then each mode), with the embedding cache off, so whatever load
the machine carries falls on all systems alike; the p50 of each is then compared with the
naive index's. Indexes are built once into ``--indexes DIR`` (one sub-folder per method) and
reopened read-only on later runs.

    .venv-bench/bin/python -m benchmarks.latency --data musique --embed minilm --indexes /tmp/rhizome-latency
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

from benchmarks import data
from benchmarks.harness import DATASETS, embedder_for
from benchmarks.systems import available_methods, index_class, systems

RESULTS = Path(__file__).parent / "results"


def open_index(method: str, embed: str, dataset: str, folder: Path) -> Any:
    """The index of ``method`` in ``folder / method``, built there first when missing.

    A finished build leaves ``folder / "<method>.built"`` beside it (the index writes its
    manifest when the build starts, so the manifest alone does not say the build ended); a
    folder without that mark is a build that was stopped, and is refused rather than measured.
    """
    cls = index_class(method)
    path, built = folder / method, folder / f"{method}.built"
    options = {"cache": False}
    if method != "naive" and dataset == "musique" and "extraction" in cls.config_class.model_fields:
        options["extraction"] = f"openie:{data.musique_openie()}"
    if path.exists() and not built.exists():
        raise SystemExit(f"{path} holds a build that did not finish (no {built.name} beside it): delete it and run again")
    if not built.exists():
        documents, _ = data.musique() if dataset == "musique" else data.hotpotqa()
        index = cls(embedder_for(embed), path=path, **options)
        index.insert(documents)
        index.close()
        built.write_text(f"{dataset} {embed}\n", encoding="utf-8")
    return cls(embedder_for(embed), path=path, readonly=True, cache=False)


class Remembering:
    """The index's embedder, keeping the query vectors it makes; with ``replay`` on it answers
    a query it has seen from memory, so a second pass times the retrieval without the model."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.held: dict[tuple[str, ...], Any] = {}
        self.replay = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def aembed_query(self, texts: Any) -> Any:
        key = tuple(texts)
        if self.replay and key in self.held:
            return self.held[key]
        vectors = await self.inner.aembed_query(texts)
        self.held[key] = vectors
        return vectors


async def _timed(retrievers: dict[str, Any], questions: list[Any]) -> dict[str, list[float]]:
    """Every question asked of every system in turn: the milliseconds of each call."""
    times: dict[str, list[float]] = {name: [] for name in retrievers}
    for q in questions:
        for name, retriever in retrievers.items():
            start = time.perf_counter()
            await retriever.aretrieve(q.question)
            times[name].append((time.perf_counter() - start) * 1000)
    return times


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


async def measure(dataset: str, embed: str, folder: Path, methods: list[str], k: int = 10, note: str = "") -> dict[str, Any]:
    _, questions = data.musique() if dataset == "musique" else data.hotpotqa()
    indexes = {m: open_index(m, embed, dataset, folder) for m in dict.fromkeys(["naive", *methods])}
    for index in indexes.values():
        index.embedder = Remembering(index.embedder)
    retrievers = {s.name: indexes[s.method].as_retriever(k=k, mode=s.mode) for s in systems(list(indexes))}
    for retriever in retrievers.values():  # load graphs and vectors before timing
        await retriever.aretrieve(questions[0].question)
    load = {"start": _load()}
    times = await _timed(retrievers, questions)  # the query embedded by the model each time
    for index in indexes.values():
        index.embedder.replay = True
    load["after_model_pass"] = _load()
    bare = await _timed(retrievers, questions)  # the same calls with the query vectors from memory
    load["end"] = _load()
    base, bare_base = statistics.median(times["naive"]), statistics.median(bare["naive"])
    rows = [
        {"system": name, "p50_ms": round(statistics.median(t), 2), "p95_ms": round(sorted(t)[int(0.95 * (len(t) - 1))], 2),
         "p50_x_naive": round(statistics.median(t) / base, 2),
         "p50_ms_model_excluded": round(statistics.median(bare[name]), 2),
         "p50_x_naive_model_excluded": round(statistics.median(bare[name]) / bare_base, 2)}
        for name, t in times.items()
    ]
    said = (f"{os.cpu_count()}-core machine, load average (1, 5, 15 min) {load['start']} at the start, "
            f"{load['after_model_pass']} between the passes, {load['end']} at the end")
    return {"suite": "latency", "data": dataset, "embedder": embed, "questions": len(questions), "k": k,
            "load_average": load, "note": f"{said}. {note}".strip(), "rows": rows}


def table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['data']}, {result['questions']} questions asked of every system in turn, embedder `{result['embedder']}`, "
        f"no embedding cache, k = {result['k']}, no chat model. Model excluded: the same calls again, each query's "
        "vectors served from memory (what the retrieval itself costs).",
        "",
        "| system | p50 ms | p95 ms | p50 × naive | p50 ms, model excluded | p50 × naive, model excluded |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['system']} | {r['p50_ms']} | {r['p95_ms']} | {r['p50_x_naive']} | {r.get('p50_ms_model_excluded', '–')} | "
        f"{r.get('p50_x_naive_model_excluded', '–')} |"
        for r in result["rows"]
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.latency", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", choices=DATASETS, default="musique")
    parser.add_argument("--embed", default="minilm")
    parser.add_argument("--indexes", type=Path, required=True, help="folder the indexes are built in (and reopened from)")
    parser.add_argument("--methods", nargs="*", default=[m for m in available_methods() if m != "naive"])
    parser.add_argument("--note", default="", help="what else the machine was doing, kept in the results file")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.data, args.embed, args.indexes, args.methods, note=args.note))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"latency-{args.data}-{args.embed}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(table(result))


if __name__ == "__main__":
    main()
