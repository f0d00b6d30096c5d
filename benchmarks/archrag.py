"""ArchRAG benchmark (issue 14): the C-HNSW index against brute force and one HNSW per layer,
model calls and tokens per query against GraphRAG's global search, and retrieval recall against
dense retrieval over the same chunks.

``chnsw``
    Synthetic layers shaped like the paper's (each layer 3.5× smaller than the one below, down
    to fewer than 100 nodes at the top; 128-d unit vectors, random as in the paper or
    tree-shaped, each node near a node of the layer above), 200 queries. For every
    layer the top-5: our C-HNSW (Algorithms 2 and 3 over one level-0-only faiss HNSW graph per
    layer and numpy inter-layer links, M 32 / 64 at layer 0, efConstruction 100), exact search
    (one numpy product per layer), and one faiss ``IndexHNSWFlat`` per layer (M 32,
    efConstruction 100) — the paper's baseline — both searched at ef 10, 40 and 100. Reported:
    build CPU seconds, query CPU milliseconds (all layers of one query), recall@5 of every layer
    against exact search, and distance evaluations per query (faiss's ``hnsw_stats.ndis`` for
    both).
``cost``
    Model calls and tokens per query of ArchRAG's filtered search against GraphRAG's global
    search (dynamic selection, our default, and every community of the level, the paper's
    baseline) on the same corpus, extraction and counting fake model (the harness's cost suite).
``proxy``
    The harness's medical answer-content proxy (graphrag-bench-medical, 300 questions sampled
    with seed 0, 2,000-token contexts) for the same three modes.
``recall``
    Recall@2/@5 of ArchRAG's modes against dense retrieval over the same chunks (the harness's
    retrieval suite): hotpotqa-100 with offline extraction, musique-dev with its imported
    OpenIE triples. ``archrag`` and ``hierarchical`` twice: each retrieved node citing its
    chunks nearest the query first (the default) and in source order (the earlier behaviour);
    ``passages`` with and without the retrieved communities seeding the walk.

    OMP_NUM_THREADS=1 uv run python -m benchmarks.archrag chnsw --data random --sizes 10000 --write-docs
    OMP_NUM_THREADS=1 uv run python -m benchmarks.archrag chnsw --data tree --sizes 10000 --write-docs
    OMP_NUM_THREADS=1 uv run python -m benchmarks.archrag chnsw --data random --sizes 100000 --write-docs   # and 1000000
    uv run python -m benchmarks.archrag cost --write-docs
    .venv-bench/bin/python -m benchmarks.archrag recall --data hotpotqa --embed minilm --write-docs
    uv run python -m benchmarks.archrag recall --data hotpotqa --embed hashing --write-docs
    .venv-bench/bin/python -m benchmarks.archrag proxy --embed minilm --write-docs

Each part writes benchmarks/results/archrag-<part>[-<sizes> | -<data>-<embed>].json.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from benchmarks.__main__ import publish
from benchmarks.systems import System
from rhizome.archrag.chnsw import CHNSW, SearchCounter, unit_rows

SIZES = [10_000, 100_000]
DIM = 128
QUERIES = 200
K = 5
EFS = [10, 40, 100]
"""Beam widths each index is searched with (the authors' code 40, the paper's synthetic run 100)."""


def layer_sizes(bottom: int, shrink: float = 3.5, top: int = 100) -> list[int]:
    sizes = [bottom]
    while sizes[-1] >= top:
        sizes.append(max(1, int(sizes[-1] / shrink)))
    return sizes


def synthetic_layers(sizes: list[int], shape: str, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    """Layers of ``sizes`` (bottom first) and queries. ``random``: independent random unit
    vectors in every layer (the paper's synthetic run). ``tree``: the top layer random, each
    node below drawn around a random node of the layer above (cosine about 0.7 to it), so a
    community sits near its members as ArchRAG's summaries do; queries are drawn around random
    layer-0 nodes the same way."""
    if shape == "random":
        return [unit_rows(rng.standard_normal((n, DIM))) for n in sizes], unit_rows(rng.standard_normal((QUERIES, DIM)))

    def around(parents: np.ndarray, n: int) -> np.ndarray:
        picked = parents[rng.integers(len(parents), size=n)]
        return unit_rows(picked + rng.standard_normal((n, DIM)) / np.sqrt(DIM))

    layers = [unit_rows(rng.standard_normal((sizes[-1], DIM)))]
    for n in reversed(sizes[:-1]):
        layers.insert(0, around(layers[0], n))
    return layers, around(layers[0], QUERIES)


def top_k(scores: np.ndarray) -> np.ndarray:
    """The columns of the ``K`` highest scores of each row, best first."""
    if scores.shape[1] <= K:
        return np.argsort(-scores, axis=1)
    part = np.argpartition(-scores, K, axis=1)[:, :K]
    return np.take_along_axis(part, np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1), axis=1)


def chnsw_row(bottom: int, shape: str = "random", seed: int = 0) -> dict[str, Any]:
    import faiss

    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(seed)
    sizes = layer_sizes(bottom)
    layers, queries = synthetic_layers(sizes, shape, rng)
    exact = [top_k(queries @ layer.T) for layer in layers]

    start = time.process_time()
    ours = CHNSW(layers, m=32, m0=64, ef_construction=100, ef_search=100)
    build_ours = time.process_time() - start
    start = time.process_time()
    hnsws: list[Any] = []
    for layer in layers:
        index = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 100
        index.add(layer)
        index.hnsw.efSearch = 100
        hnsws.append(index)
    build_faiss = time.process_time() - start

    def recall(found: list[np.ndarray]) -> float:
        return float(np.mean([len(set(f[i]) & set(e[i])) / K for f, e in zip(found, exact) for i in range(QUERIES)]))

    brute_ms = []
    for q in queries:
        t0 = time.process_time()
        for layer in layers:
            scores = layer @ q
            np.argpartition(-scores, K)[:K] if len(layer) > K else np.argsort(-scores)
        brute_ms.append((time.process_time() - t0) * 1000)

    t0 = time.process_time()
    for layer in layers:
        top_k(queries @ layer.T)
    batch_brute = (time.process_time() - t0) * 1000 / QUERIES

    runs = []
    for ef in EFS:
        ms, counted = [], SearchCounter()
        found_ours = [np.zeros((QUERIES, K), dtype=np.int64) for _ in layers]
        for i, q in enumerate(queries):
            t0 = time.process_time()
            result = ours.search(q, K, ef=ef, counter=counted)
            ms.append((time.process_time() - t0) * 1000)
            for layer, rows in result.items():
                found_ours[layer][i, : len(rows)] = [r for r, _ in rows]
        faiss_ms = []
        faiss.cvar.hnsw_stats.reset()
        found_faiss = [np.zeros((QUERIES, K), dtype=np.int64) for _ in layers]
        for index in hnsws:
            index.hnsw.efSearch = max(ef, K)
        for i, q in enumerate(queries):
            t0 = time.process_time()
            for layer, index in enumerate(hnsws):
                found_faiss[layer][i] = index.search(q[None], K)[1][0]
            faiss_ms.append((time.process_time() - t0) * 1000)
        faiss_distances = faiss.cvar.hnsw_stats.ndis  # before the batches below add theirs
        t0 = time.process_time()  # the same queries as one batch: the per-call Python cost amortised
        ours.search_many(queries, K, ef=ef)
        batch_ours = (time.process_time() - t0) * 1000 / QUERIES
        t0 = time.process_time()
        for index in hnsws:
            index.search(queries, K)
        batch_faiss = (time.process_time() - t0) * 1000 / QUERIES
        runs.append({
            "ef": ef,
            "batch_query_ms": {"chnsw": round(batch_ours, 3), "faiss_hnsw_per_layer": round(batch_faiss, 3), "brute_force": round(batch_brute, 3)},
            "query_ms_p50": {"chnsw": round(statistics.median(ms), 2), "faiss_hnsw_per_layer": round(statistics.median(faiss_ms), 2),
                             "brute_force": round(statistics.median(brute_ms), 2)},
            "recall_at_5": {"chnsw": round(recall(found_ours), 4), "faiss_hnsw_per_layer": round(recall(found_faiss), 4)},
            "distances_per_query": {"chnsw": round(counted.distances / QUERIES), "faiss_hnsw_per_layer": round(faiss_distances / QUERIES),
                                    "brute_force": sum(sizes)},
        })
    return {
        "bottom": bottom, "shape": shape, "layers": len(sizes), "nodes": sum(sizes), "sizes": sizes, "dim": DIM,
        "build_s": {"chnsw": round(build_ours, 1), "faiss_hnsw_per_layer": round(build_faiss, 1)}, "runs": runs,
    }


def chnsw(sizes: list[int], shape: str) -> tuple[dict[str, Any], str]:
    rows = [chnsw_row(n, shape) for n in sizes]
    command = f"OMP_NUM_THREADS=1 uv run python -m benchmarks.archrag chnsw --data {shape} --sizes " + " ".join(map(str, sizes))
    what = "Random unit vectors" if shape == "random" else "Tree-shaped unit vectors (each node near a node of the layer above; see `synthetic_layers`)"
    lines = [
        f"{what} ({DIM}-d), layers shrinking 3.5× to under 100 nodes, {QUERIES} queries, top-{K} of every layer; "
        "one thread; times are CPU seconds of this process (the machine was shared, so wall time would measure the "
        "neighbours), medians for single queries (the batch column runs all queries in one call per layer, one thread). C-HNSW is ours: one level-0-only faiss HNSW graph per layer (built node by node from "
        "Algorithm 3's entries) and numpy inter-layer links, searched top-down with faiss's `search_level_0` (one call per layer); the "
        f"per-layer baseline is one faiss `IndexHNSWFlat` per layer (M 32, efConstruction 100; C-HNSW M 32 / 64 at layer 0, "
        "efConstruction 100), both searched at each ef below, so both times are the same C++ plus a few Python calls per layer. "
        f"Reproduce: `{command}`",
        "",
        "| layer-0 nodes | layers / all nodes | build CPU s: C-HNSW / faiss per layer | ef | query CPU ms p50: C-HNSW / faiss per layer / brute force | "
        "batch of all queries, CPU ms per query: C-HNSW / faiss per layer / brute force | "
        "recall@5: C-HNSW / faiss per layer | distances per query: C-HNSW / faiss per layer / brute force | faiss / C-HNSW distances |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r["build_s"]
        for run in r["runs"]:
            q, rc, d, bq = run["query_ms_p50"], run["recall_at_5"], run["distances_per_query"], run["batch_query_ms"]
            lines.append(
                f"| {r['bottom']:,} | {r['layers']} / {r['nodes']:,} | {b['chnsw']} / {b['faiss_hnsw_per_layer']} | {run['ef']} | "
                f"{q['chnsw']} / {q['faiss_hnsw_per_layer']} / {q['brute_force']} | {bq['chnsw']} / {bq['faiss_hnsw_per_layer']} / {bq['brute_force']} | "
                f"{rc['chnsw']} / {rc['faiss_hnsw_per_layer']} | "
                f"{d['chnsw']:,} / {d['faiss_hnsw_per_layer']:,} / {d['brute_force']:,} | {d['faiss_hnsw_per_layer'] / max(1, d['chnsw']):.2f}× |"
            )
    return {"command": command, "rows": rows}, "\n".join(lines)


COST_SYSTEMS = [
    System("archrag", "archrag"),
    System("graphrag", "global"),
    System("graphrag", "global", (("dynamic", False),), "every community of level 2, the paper's baseline"),
]


def cost(passages: int, queries: int) -> tuple[dict[str, Any], str]:
    result = asyncio.run(cost_runs(passages, queries))
    result["command"] = f"uv run python -m benchmarks.archrag cost --passages {passages} --queries {queries}"
    rows = {r["system"]: r for r in result["rows"]}
    ours = rows[COST_SYSTEMS[0].name]
    lines = [harness.cost_table(result), "", "ArchRAG per query against GraphRAG global search (ratio = GraphRAG / ArchRAG):", "",
             "| GraphRAG variant | calls ratio | prompt tokens ratio | completion tokens ratio |", "|---|---|---|---|"]
    for system in COST_SYSTEMS[1:]:
        other = rows[system.name]
        lines.append(
            f"| {system.name} | {_ratio(other['query_calls'], ours['query_calls'])} | "
            f"{_ratio(other['query_prompt_tokens'], ours['query_prompt_tokens'])} | {_ratio(other['query_completion_tokens'], ours['query_completion_tokens'])} |"
        )
    lines += ["", f"Reproduce: `{result['command']}`"]
    return result, "\n".join(lines)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}×" if b else "n/a"


async def cost_runs(passages: int, queries: int) -> dict[str, Any]:
    """The harness's cost suite over :data:`COST_SYSTEMS`, with each system's retriever options."""
    from rhizome.core.models.counting import CountingChatModel
    from rhizome.core.models.fake import FakeChatModel, SchemaResponder
    from rhizome.core.text import count_tokens

    documents, questions = harness.data.hotpotqa()
    documents = documents[:passages]
    corpus_tokens = sum(count_tokens(d.text) for d in documents)
    rows = []
    for method in dict.fromkeys(s.method for s in COST_SYSTEMS):
        llm = CountingChatModel(FakeChatModel(SchemaResponder()))
        index = harness.build_index(method, harness.embedder_for("hashing"), llm=llm, cache=False)
        await index.ainsert(documents)
        indexing = llm.usage.snapshot()
        per_1k = 1000 / max(1, corpus_tokens)
        for system in (s for s in COST_SYSTEMS if s.method == method):
            llm.reset()
            retriever = index.as_retriever(k=harness.HITS, mode=system.mode, **dict(system.options))
            for q in questions[:queries]:
                await retriever.aretrieve(q.question)
            used = llm.usage.snapshot()
            rows.append({
                "system": system.name,
                "index_calls_per_1k": round(indexing["calls"] * per_1k, 2),
                "index_prompt_tokens_per_1k": round(indexing["prompt_tokens"] * per_1k),
                "index_completion_tokens_per_1k": round(indexing["completion_tokens"] * per_1k),
                "query_calls": round(used["calls"] / queries, 2),
                "query_prompt_tokens": round(used["prompt_tokens"] / queries),
                "query_completion_tokens": round(used["completion_tokens"] / queries),
            })
        index.close()
    return {"suite": "cost", "data": f"hotpotqa-100 (first {passages} passages, {corpus_tokens} tokens)", "queries": queries,
            "model": "CountingChatModel(FakeChatModel(SchemaResponder()))", "rows": rows}


SOURCE_ORDER = (("rank_provenance", False),)
"""The retriever option that cites each node's chunks in source order (most cited first for a
community) instead of nearest the query first."""

RECALL_SYSTEMS = [
    System("archrag", "archrag"), System("archrag", "hierarchical"), System("archrag", "passages"),
    System("archrag", "passages", (("community_seeds", True),), "with community seeds"),
    System("archrag", "archrag", SOURCE_ORDER, "chunks in source order"),
    System("archrag", "hierarchical", SOURCE_ORDER, "chunks in source order"),
    System("archrag", "naive"),
]


def recall(dataset: str, embed: str, folder: Path | None = None) -> tuple[dict[str, Any], str]:
    result = asyncio.run(harness.retrieval(RECALL_SYSTEMS, embed, dataset=dataset, folder=folder))
    python = "uv run python" if embed == "hashing" else ".venv-bench/bin/python"
    result["command"] = f"{python} -m benchmarks.archrag recall --data {dataset} --embed {embed}"
    return result, harness.retrieval_table(result)


def proxy(embed: str, limit: int | None) -> tuple[dict[str, Any], str]:
    result = asyncio.run(harness.proxy(RECALL_SYSTEMS, embed, limit))
    python = "uv run python" if embed == "hashing" else ".venv-bench/bin/python"
    result["command"] = f"{python} -m benchmarks.archrag proxy --embed {embed}" + (f" --limit {limit}" if limit else "")
    return result, harness.proxy_table(result) + f"\n\nReproduce: `{result['command']}`"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    p = sub.add_parser("chnsw")
    p.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    p.add_argument("--data", choices=["random", "tree"], default="random")
    p.add_argument("--write-docs", action="store_true")
    p = sub.add_parser("cost")
    p.add_argument("--passages", type=int, default=100)
    p.add_argument("--queries", type=int, default=20)
    p.add_argument("--write-docs", action="store_true")
    p = sub.add_parser("recall")
    p.add_argument("--data", choices=sorted(harness.DATASETS), default="hotpotqa")
    p.add_argument("--embed", default="hashing")
    p.add_argument("--indexes", type=Path, metavar="DIR", help="keep the indexes in DIR/<method> and reuse them (as `benchmarks retrieval`)")
    p.add_argument("--write-docs", action="store_true")
    p = sub.add_parser("proxy")
    p.add_argument("--embed", default="hashing")
    p.add_argument("--limit", type=int, default=300)
    p.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    if args.part == "chnsw":
        sizes = "-".join(f"{n // 1000}k" for n in args.sizes)
        (result, table), name = chnsw(args.sizes, args.data), f"archrag-chnsw-{args.data}-{sizes}"
        title = f"ArchRAG C-HNSW against brute force and one HNSW per layer ({args.data} vectors, {sizes.replace('-', ', ')})"
    elif args.part == "cost":
        (result, table), name, title = cost(args.passages, args.queries), "archrag-cost", "ArchRAG model calls and tokens per query against GraphRAG global search"
    elif args.part == "proxy":
        (result, table), name = proxy(args.embed, args.limit), f"archrag-proxy-{args.embed}"
        title = f"ArchRAG answer-context proxy: graphrag-bench-medical ({args.embed})"
    else:
        result, table = recall(args.data, args.embed, args.indexes)
        name, title = f"archrag-recall-{args.data}-{args.embed}", f"ArchRAG recall: {harness.DATASETS[args.data]} ({args.embed})"
    publish(name, title, result, table, args.write_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
