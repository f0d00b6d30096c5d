"""HippoRAG benchmark (issue 16): what the index embeds and costs, and PPR query latency.

1. Index time excluding the model on musique-dev (the imported GPT-3.5 OpenIE triples, the
   offline hashing embedder so that only our own CPU time counts): seconds, graph size, and
   the texts embedded per kind against dense retrieval (which embeds the passages only).
2. Personalized PageRank latency at 10k, 100k and 1M phrase nodes on synthetic graphs shaped
   like musique-dev's (per phrase: 0.1 passages, 0.9 facts, 0.6 synonymy edges; each phrase in
   1 + Poisson(0.3) passages): building the sparse graph once, then one query's walk (5 seed
   phrases and 200 passage seeds, HippoRAG 2's), median of 20, for both versions.

    uv run python -m benchmarks.hipporag            # full run, writes results/hipporag.json
    uv run python -m benchmarks.hipporag --quick    # 10k only

Recall (v1, v2 against dense) is the retrieval suite's: ``python -m benchmarks retrieval``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data
from rhizome.core import HashingEmbedder
from rhizome.core.evidence import EvidenceGraph
from rhizome.hipporag import HippoRAGIndex

RESULTS = Path(__file__).parent / "results" / "hipporag.json"


def index_cost() -> dict[str, Any]:
    documents, _ = data.musique()
    embedder = HashingEmbedder()
    start, cpu = time.perf_counter(), time.process_time()
    index = HippoRAGIndex(embedder, extraction=f"openie:{data.musique_openie()}", cache=False)
    report = index.insert(documents)
    row = {
        "passages": len(documents),
        "seconds": round(time.perf_counter() - start, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "phrases": index.phrases.count(),
        "facts": index.facts.count(),
        "synonymy_edges": index.synonyms.count(),
        "embedded": {
            "passages": report.stats["chunks_added"],
            "phrases": report.stats["phrases_added"],
            "facts": report.stats["facts_added"],
        },
    }
    row["embedded_x_dense"] = round(sum(row["embedded"].values()) / row["passages"], 1)
    start = time.perf_counter()
    index.graph()
    row["graph_build_seconds"] = round(time.perf_counter() - start, 2)
    index.close()
    return row


def synthetic_graph(phrases: int, passage_nodes: bool, seed: int = 0) -> EvidenceGraph:
    rng = np.random.default_rng(seed)
    passages = max(1, phrases // 10)
    counts = 1 + rng.poisson(0.3, phrases)
    chunks = rng.integers(0, passages, counts.sum())
    entity_chunks: dict[str, list[str]] = {}
    at = 0
    for i, n in enumerate(counts):
        entity_chunks[f"p{i}"] = [f"c{c}" for c in chunks[at : at + n]]
        at += n
    edges = rng.integers(0, phrases, (int(phrases * 1.5), 2))
    weights = np.concatenate([np.ones(int(phrases * 0.9)), rng.uniform(0.8, 1.0, len(edges) - int(phrases * 0.9))])
    relations = ((f"p{a}", f"p{b}", float(w)) for (a, b), w in zip(edges, weights))
    return EvidenceGraph(entity_chunks, relations, passage_nodes=passage_nodes)


def latency(phrases: int, passage_nodes: bool, runs: int = 20) -> dict[str, Any]:
    start = time.perf_counter()
    graph = synthetic_graph(phrases, passage_nodes)
    build = time.perf_counter() - start
    rng = np.random.default_rng(1)
    ms = []
    for _ in range(runs):
        seeds = {f"p{i}": 1.0 for i in rng.integers(0, phrases, 5)}
        dense = {f"c{i}": float(s) for i, s in zip(rng.integers(0, phrases // 10, 200), rng.uniform(0.2, 0.8, 200))}
        t0 = time.perf_counter()
        graph.rank(seeds, dense, limit=200)
        ms.append((time.perf_counter() - t0) * 1000)
    return {
        "phrase_nodes": phrases,
        "version": "v2" if passage_nodes else "v1",
        "nodes": len(graph),
        "edges": int(graph.matrix.nnz // 2),
        "graph_build_seconds": round(build, 1),
        "ppr_p50_ms": round(statistics.median(ms), 1),
        "ppr_p95_ms": round(float(np.percentile(ms, 95)), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def markdown(result: dict[str, Any]) -> str:
    cost = result["index"]
    lines = [
        "| passages | phrases | facts | synonymy edges | s excl. model | CPU s | texts embedded (passages / phrases / facts) | × dense |",
        "|---|---|---|---|---|---|---|---|",
        f"| {cost['passages']:,} | {cost['phrases']:,} | {cost['facts']:,} | {cost['synonymy_edges']:,} | {cost['seconds']} | "
        f"{cost['cpu_seconds']} | {cost['embedded']['passages']:,} / {cost['embedded']['phrases']:,} / {cost['embedded']['facts']:,} | "
        f"{cost['embedded_x_dense']} |",
        "",
        "| phrase nodes | version | nodes in the walk | edges | graph build s | PPR p50 ms | PPR p95 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["latency"]:
        lines.append(
            f"| {row['phrase_nodes']:,} | {row['version']} | {row['nodes']:,} | {row['edges']:,} | {row['graph_build_seconds']} | "
            f"{row['ppr_p50_ms']} | {row['ppr_p95_ms']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = (10_000,) if args.quick else (10_000, 100_000, 1_000_000)
    result = {"command": "uv run python -m benchmarks.hipporag" + (" --quick" if args.quick else "")}
    result["latency"] = [latency(n, v) for n in sizes for v in (True, False)]
    print(json.dumps(result["latency"], indent=1), flush=True)
    result["index"] = index_cost()
    print(json.dumps(result["index"], indent=1), flush=True)
    if not args.quick:
        RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
