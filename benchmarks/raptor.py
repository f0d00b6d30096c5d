"""RAPTOR benchmark (issue 15): what building the tree costs besides the model.

1. ``build``: the tree over 1k, 10k and 50k synthetic leaves (the harness's scale documents,
   one leaf each), hashing embeddings, summaries from an instant fake model that answers with
   the first words of its passages (so summaries differ and upper layers have something to
   cluster): wall time of the insert, of which UMAP and the Gaussian mixtures, numba's one-time
   compilation of UMAP measured apart, the tree's shape, and the peak memory of the process
   (one subprocess per size).
2. ``cost``: model calls and tokens per 1k indexed tokens, counting fake model (the same
   responder), on 993 of the hotpotqa-100 passages; then the last one inserted into that
   tree, with the calls it cost, and a full rebuild with the stage results in place.
3. ``recall``: hotpotqa-100 recall of each mode, every hit scored (summaries put their leaves
   at their rank) and the leaf hits alone.

    uv run python -m benchmarks.raptor build --sizes 1000 10000 50000
    uv run python -m benchmarks.raptor cost
    uv run python -m benchmarks.raptor recall --embed hashing    # .venv-bench/bin/python ... --embed minilm

Recall (collapsed, traversal, dense over the same leaves) and the medical proxy are the
harness's: ``python -m benchmarks retrieval --methods naive raptor`` and ``proxy``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data, harness
from rhizome.core import HashingEmbedder
from rhizome.core.models.counting import CountingChatModel
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.text import count_tokens

RESULTS = Path(__file__).parent / "results"


def first_words(messages: list[dict[str, str]], schema: Any) -> dict[str, str]:
    """The fake's summary: the first 60 words of the passages it was given."""
    passages = messages[-1]["content"].split("Passages:\n", 1)[-1].split("\n\nSummarise", 1)[0]
    return {"summary": " ".join(passages.split()[:60])}


def _timed(module: Any, name: str, totals: dict[str, float]) -> None:
    inner = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), time.process_time()  # the clustering runs alone in its process
        try:
            return inner(*args, **kwargs)
        finally:
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - start
            totals[name + "_cpu"] = totals.get(name + "_cpu", 0.0) + time.process_time() - cpu

    setattr(module, name, wrapper)


def shape(index: Any) -> dict[str, Any]:
    groups = list(index.tree.all().values())
    per_layer: dict[int, int] = {}
    for g in groups:
        per_layer[g.level] = per_layer.get(g.level, 0) + 1
    children = [len(g.children) for g in groups]
    leaves = index.store.chunk_ids()
    in_layer1 = [c for g in groups if g.level == 1 for c in g.children]
    return {
        "nodes_per_layer": [len(leaves)] + [per_layer[k] for k in sorted(per_layer)],
        "children_per_parent": round(statistics.fmean(children), 2) if children else 0,
        "children_max": max(children, default=0),
        "leaf_memberships": round(len(in_layer1) / max(1, len(leaves)), 3),
    }


def build_one(size: int) -> dict[str, Any]:
    """In a subprocess: build the tree over ``size`` synthetic leaves (see the module docstring)."""
    from rhizome.raptor import RaptorIndex, clustering

    start = time.perf_counter()
    clustering.reduce(np.random.default_rng(0).normal(size=(30, 64)), 10, 5, 224)  # numba compiles UMAP here
    compile_s = time.perf_counter() - start
    totals: dict[str, float] = {}
    _timed(clustering, "reduce", totals)
    _timed(clustering, "mixture_probabilities", totals)
    documents = harness.synthetic_documents(size, corpus="places")  # the corpus of its published rows
    llm = CountingChatModel(FakeChatModel(first_words))
    index = RaptorIndex(HashingEmbedder(), llm=llm, cache=False, batch_size=1024)
    start, cpu = time.perf_counter(), time.process_time()
    report = asyncio.run(index.ainsert(documents))
    seconds = time.perf_counter() - start
    return {
        "leaves": len(index),
        "leaf_tokens_mean": round(report.tokens / len(index), 1),
        "seconds": round(seconds, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "umap_seconds": round(totals.get("reduce", 0.0), 1),
        "mixture_seconds": round(totals.get("mixture_probabilities", 0.0), 1),
        "umap_cpu_seconds": round(totals.get("reduce_cpu", 0.0), 1),
        "mixture_cpu_seconds": round(totals.get("mixture_probabilities_cpu", 0.0), 1),
        "umap_compile_seconds": round(compile_s, 1),
        "model_calls": llm.usage.calls,
        **shape(index),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def build(sizes: list[int], timeout: float = 3600) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        cmd = [sys.executable, "-m", "benchmarks.raptor", "build-one", str(size)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        except subprocess.TimeoutExpired:
            rows.append({"leaves": size, "error": f"did not finish within {timeout:.0f} s"})
        except subprocess.CalledProcessError as exc:
            rows.append({"leaves": size, "error": (exc.stderr or "").strip().splitlines()[-1:]})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def cost() -> dict[str, Any]:
    from rhizome.raptor import RaptorIndex

    documents, _ = data.hotpotqa()
    tokens = sum(count_tokens(d.text) for d in documents[:-1])
    llm = CountingChatModel(FakeChatModel(first_words))
    index = RaptorIndex(HashingEmbedder(), llm=llm, cache=False)
    start = time.perf_counter()
    report = index.insert(documents[:-1])
    build_s = time.perf_counter() - start
    usage = llm.usage.snapshot()
    per_1k = 1000 / tokens
    row = {
        "passages": len(documents) - 1,
        "tokens": tokens,
        "leaves": len(index),
        "calls_per_1k_tokens": round(usage["calls"] * per_1k, 2),
        "prompt_tokens_per_1k": round(usage["prompt_tokens"] * per_1k),
        "completion_tokens_per_1k": round(usage["completion_tokens"] * per_1k),
        "build_seconds": round(build_s, 1),
        **shape(index),
        "summaries": report.stats["summaries_written"],
    }
    llm.reset()
    start = time.perf_counter()
    one = index.insert([documents[-1]])
    row["insert_one"] = {
        "tree": one.stats["tree_built"],
        "leaves_added": one.chunks,
        "model_calls": llm.usage.calls,
        "summaries_rewritten": one.stats["summaries_written"],
        "seconds": round(time.perf_counter() - start, 2),
    }
    llm.reset()
    start = time.perf_counter()
    rebuilt = index.rebuild()
    row["rebuild"] = {"model_calls": llm.usage.calls, "summaries_written": rebuilt["summaries_written"], "seconds": round(time.perf_counter() - start, 1)}
    return row


def recall(embed: str) -> dict[str, Any]:
    """hotpotqa-100 Recall@2/@5 of each mode, scored two ways: every hit (a summary puts the
    leaves it cites at its rank, the harness's metric) and the leaf hits alone; and what share
    of the hits are summaries. Offline summaries (no chat model), as in the harness."""
    from benchmarks import metrics
    from rhizome.raptor import RaptorIndex

    documents, questions = data.hotpotqa()
    index = RaptorIndex(harness.embedder_for(embed), cache=False)
    index.insert(documents)
    rows = []
    for mode in index.modes:
        retriever = index.as_retriever(k=harness.HITS, mode=mode)
        results = [retriever.retrieve(q.question) for q in questions]
        row: dict[str, Any] = {"mode": mode, "summary_share": round(statistics.fmean(sum(h.kind == "summary" for h in r) / max(1, len(r)) for r in results), 3)}
        for variant, keep in (("all", lambda h: True), ("leaves", lambda h: h.kind == "chunk")):
            ranked = [metrics.ranked_documents([h for h in r if keep(h)]) for r in results]
            for k in (2, 5):
                row[f"{variant}_recall@{k}"] = round(statistics.fmean(metrics.recall_at(x, q.supporting, k) for x, q in zip(ranked, questions)), 3)
        rows.append(row)
    return {"embedder": embed, "leaves": len(index), **shape(index), "rows": rows}


def markdown_build(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| leaves | tokens/leaf | build wall s | build CPU s | UMAP / mixtures wall s | numba compile s (once) | model calls | nodes per layer | children/parent | layer-1 clusters per leaf | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['leaves']:,} | – | not measured: {r['error']} | | | | | | | | |")
            continue
        lines.append(
            f"| {r['leaves']:,} | {r['leaf_tokens_mean']} | {r['seconds']:,} | {r['cpu_seconds']} | {r['umap_seconds']} / {r['mixture_seconds']} | "
            f"{r['umap_compile_seconds']} | {r['model_calls']:,} | {' / '.join(f'{n:,}' for n in r['nodes_per_layer'])} | "
            f"{r['children_per_parent']} | {r['leaf_memberships']} | {r['peak_rss_mb']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("build")
    p.add_argument("--sizes", nargs="*", type=int, default=[1000, 10000, 50000])
    p = sub.add_parser("build-one")
    p.add_argument("size", type=int)
    sub.add_parser("cost")
    p = sub.add_parser("recall")
    p.add_argument("--embed", default="hashing")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if args.what == "build-one":
        print(json.dumps(build_one(args.size)))
    elif args.what == "build":
        rows = build(args.sizes)
        (RESULTS / "raptor-build.json").write_text(json.dumps({"command": f"uv run python -m benchmarks.raptor build --sizes {' '.join(map(str, args.sizes))}", "rows": rows}, indent=1) + "\n")
        print(markdown_build(rows))
    elif args.what == "recall":
        result = recall(args.embed)
        (RESULTS / f"raptor-recall-{args.embed}.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
    else:
        row = cost()
        (RESULTS / "raptor-cost.json").write_text(json.dumps({"command": "uv run python -m benchmarks.raptor cost", **row}, indent=1) + "\n")
        print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
