"""HippoRAG benchmark (issue 16): recall of both versions and of our choices against dense
retrieval, what the index embeds and costs, and personalized PageRank latency.

``recall``
    Recall@2/@5 of the default v1 and v2, and of the variants docs/hipporag.md's choices are
    measured on, next to dense retrieval with the same embedder and passages (the harness's
    retrieval suite with retriever options, one index per method): musique-dev with the
    imported GPT-3.5 OpenIE triples, hotpotqa-100 with offline extraction.
``proxy``
    The harness's medical answer-context proxy (graphrag-bench-medical, 2,000-token budget) for
    the same variants next to dense retrieval: the defaults' dense lead puts dense retrieval's
    first two passages first, and two 1,200-token chunks fill the budget, so the variants
    without the lead show what the walk itself brings.
``cost``
    Index time excluding the model on musique-dev (imported triples, the hashing embedder so
    that only our own CPU time counts): seconds, graph size, and the texts embedded per kind
    against dense retrieval (which embeds the passages only).
``query-cost``
    Model calls and tokens per question of v1 and v2 on musique-dev (imported triples, hashing
    embedder, all 47 questions), counted by ``CountingChatModel`` around a fake that keeps the
    first four candidate facts in v2's filter (the harness's schema fake writes no valid triple,
    so in its cost suite v2 finds no fact and costs no call).
``latency``
    Personalized PageRank at 10k, 100k and 1M phrase nodes on synthetic graphs shaped like
    musique-dev's (per phrase: 0.1 passages, 0.9 facts, 0.6 synonymy edges; each phrase in
    1 + Poisson(0.3) passages): the sparse graph built once, then one query's walk (5 seed
    phrases and 200 passage seeds, HippoRAG 2's), median of 20, for both versions.

    .venv-bench/bin/python -m benchmarks.hipporag recall --data musique --embed minilm --write-docs
    .venv-bench/bin/python -m benchmarks.hipporag recall --data hotpotqa --embed minilm --write-docs
    uv run python -m benchmarks.hipporag recall --data hotpotqa --embed hashing --write-docs
    uv run python -m benchmarks.hipporag proxy --write-docs
    uv run python -m benchmarks.hipporag cost --write-docs
    uv run python -m benchmarks.hipporag query-cost --write-docs
    uv run python -m benchmarks.hipporag latency --write-docs        # --sizes 10000 for a quick run

Each part writes benchmarks/results/hipporag-<part>[-<data>-<embed>].json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data, harness
from benchmarks.__main__ import publish
from benchmarks.systems import System
from rhizome.core import HashingEmbedder
from rhizome.core.models.counting import CountingChatModel
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.retrieval.evidence import EvidenceGraph
from rhizome.hipporag import HippoRAGIndex

PAPER = (("temperature", None), ("passage_weight", 0.05), ("link_k", 5), ("fact_k", 5))
VARIANTS = [
    System("hipporag", "v2"),
    System("hipporag", "v1"),
    System("hipporag", "v2", (*PAPER, ("entity_seeds", False)), "paper: fact seeds only, min-max passage seeds at 0.05"),
    System("hipporag", "v2", PAPER, "paper's weights, with entity seeds"),
    System("hipporag", "v2", (("entity_seeds", False),), "no entity seeds"),
    System("hipporag", "v2", (("chains", True),), "with chains of facts"),
]
"""The defaults, the paper's HippoRAG 2 (fact seeds only, scores scaled as published) and one
change of each default at a time (docs/hipporag.md, "Choices")."""


def recall(dataset: str, embed: str, folder: Path | None = None) -> tuple[dict[str, Any], str]:
    result = asyncio.run(harness.retrieval(VARIANTS, embed, dataset=dataset, folder=folder))
    python = "uv run python" if embed == "hashing" else ".venv-bench/bin/python"
    result["command"] = f"{python} -m benchmarks.hipporag recall --data {dataset} --embed {embed}"
    return result, harness.retrieval_table(result)


def proxy(embed: str) -> tuple[dict[str, Any], str]:
    result = asyncio.run(harness.proxy([harness.DENSE, *VARIANTS], embed))
    python = "uv run python" if embed == "hashing" else ".venv-bench/bin/python"
    result["command"] = f"{python} -m benchmarks.hipporag proxy --embed {embed}"
    return result, f"{harness.proxy_table(result)}\n\nReproduce: `{result['command']}`"


def keep_four(messages: list[dict[str, str]], schema: Any) -> Any:
    """The filter keeps the first four candidates; other calls (query NER) get the schema fake's answer."""
    if "facts" in (schema or {}).get("properties", {}):
        lines = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
        return {"facts": [json.loads(line) for line in lines][:4]}
    return SchemaResponder()(messages, schema)


def query_cost() -> tuple[dict[str, Any], str]:
    documents, questions = data.musique()
    llm = CountingChatModel(FakeChatModel(keep_four))
    index = HippoRAGIndex(HashingEmbedder(), llm=llm, extraction=f"openie:{data.musique_openie()}", cache=False)
    index.insert(documents)
    rows = []
    for mode in ("v2", "v1"):
        llm.reset()
        retriever = index.as_retriever(k=harness.HITS, mode=mode)
        kept = [retriever.search(q.question).stats.get("facts_kept", 0) for q in questions]
        usage = llm.usage.snapshot()
        n = len(questions)
        rows.append({"mode": mode, "calls": round(usage["calls"] / n, 2), "prompt_tokens": round(usage["prompt_tokens"] / n),
                     "completion_tokens": round(usage["completion_tokens"] / n), "facts_kept": round(statistics.fmean(kept), 2)})
    index.close()
    result = {"data": "musique-dev", "questions": len(questions), "model": "CountingChatModel(FakeChatModel(keep_four))", "rows": rows,
              "command": "uv run python -m benchmarks.hipporag query-cost"}
    table = "\n".join([
        f"musique-dev, {len(questions)} questions, imported GPT-3.5 triples, hashing embedder; the fake filter keeps the first "
        f"four candidate facts; completions are the fake's. Reproduce: `{result['command']}`",
        "",
        "| mode | model calls / question | prompt tokens / question | completion tokens / question | facts kept |",
        "|---|---|---|---|---|",
        *[f"| {r['mode']} | {r['calls']} | {r['prompt_tokens']:,} | {r['completion_tokens']:,} | {r['facts_kept'] if r['mode'] == 'v2' else '–'} |" for r in rows],
    ])
    return result, table


def cost() -> tuple[dict[str, Any], str]:
    documents, _ = data.musique()
    start, cpu = time.perf_counter(), time.process_time()
    index = HippoRAGIndex(HashingEmbedder(), extraction=f"openie:{data.musique_openie()}", cache=False)
    report = index.insert(documents)
    row: dict[str, Any] = {
        "passages": len(documents),
        "seconds": round(time.perf_counter() - start, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "phrases": index.phrases.count(),
        "facts": index.facts.count(),
        "synonymy_edges": index.synonyms.count(),
        "embedded": {kind: report.stats[key] for kind, key in (("passages", "chunks_added"), ("phrases", "phrases_added"), ("facts", "facts_added"))},
    }
    row["embedded_x_dense"] = round(sum(row["embedded"].values()) / row["passages"], 1)
    start = time.perf_counter()
    index.graph()
    row["graph_build_seconds"] = round(time.perf_counter() - start, 2)
    index.close()
    table = "\n".join([
        "musique-dev, imported GPT-3.5 OpenIE triples, hashing embedder (no model time). Reproduce: "
        "`uv run python -m benchmarks.hipporag cost`",
        "",
        "| passages | phrases | facts | synonymy edges | index s excl. model | CPU s | graph build s | texts embedded (passages / phrases / facts) | × dense |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {row['passages']:,} | {row['phrases']:,} | {row['facts']:,} | {row['synonymy_edges']:,} | {row['seconds']} | "
        f"{row['cpu_seconds']} | {row['graph_build_seconds']} | {row['embedded']['passages']:,} / {row['embedded']['phrases']:,} / "
        f"{row['embedded']['facts']:,} | {row['embedded_x_dense']} |",
    ])
    return row, table


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


def walk_latency(phrases: int, passage_nodes: bool, runs: int = 20) -> dict[str, Any]:
    start = time.perf_counter()
    graph = synthetic_graph(phrases, passage_nodes)
    build = time.perf_counter() - start
    rng = np.random.default_rng(1)
    ms, cpu_ms = [], []
    for _ in range(runs):
        seeds = {f"p{i}": 1.0 for i in rng.integers(0, phrases, 5)}
        dense = {f"c{i}": float(s) for i, s in zip(rng.integers(0, phrases // 10, 200), rng.uniform(0.2, 0.8, 200))}
        t0, c0 = time.perf_counter(), time.process_time()
        graph.rank(seeds, dense, limit=200)
        ms.append((time.perf_counter() - t0) * 1000)
        cpu_ms.append((time.process_time() - c0) * 1000)
    return {
        "phrase_nodes": phrases,
        "version": "v2" if passage_nodes else "v1",
        "nodes": len(graph),
        "edges": int(graph.matrix.nnz // 2),
        "graph_build_seconds": round(build, 1),
        "ppr_p50_ms": round(statistics.median(ms), 1),
        "ppr_p95_ms": round(float(np.percentile(ms, 95)), 1),
        "ppr_cpu_p50_ms": round(statistics.median(cpu_ms), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def latency(sizes: list[int]) -> tuple[dict[str, Any], str]:
    rows = [walk_latency(n, v) for n in sizes for v in (True, False)]
    command = "uv run python -m benchmarks.hipporag latency" + (f" --sizes {' '.join(map(str, sizes))}" if sizes != SIZES else "")
    lines = [
        f"Synthetic graphs shaped like musique-dev's; one query's walk (`EvidenceGraph.rank`), median of 20; the walk is "
        f"single-threaded, so its CPU time is its wall time on an idle core. Reproduce: `{command}`",
        "",
        "| phrase nodes | version | nodes in the walk | edges | graph build s | PPR p50 ms | PPR p95 ms | PPR CPU p50 ms | peak RSS MB (cumulative) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['phrase_nodes']:,} | {r['version']} | {r['nodes']:,} | {r['edges']:,} | {r['graph_build_seconds']} | "
        f"{r['ppr_p50_ms']} | {r['ppr_p95_ms']} | {r['ppr_cpu_p50_ms']} | {r['peak_rss_mb']:,} |"
        for r in rows
    ]
    return {"command": command, "rows": rows}, "\n".join(lines)


SIZES = [10_000, 100_000, 1_000_000]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    p = sub.add_parser("recall")
    p.add_argument("--data", choices=sorted(harness.DATASETS), default="musique")
    p.add_argument("--embed", default="hashing")
    p.add_argument("--indexes", type=Path, metavar="DIR", help="keep the indexes in DIR/<method> and reuse them (as `benchmarks retrieval`)")
    p.add_argument("--write-docs", action="store_true")
    p = sub.add_parser("proxy")
    p.add_argument("--embed", default="hashing")
    p.add_argument("--write-docs", action="store_true")
    p = sub.add_parser("cost")
    p.add_argument("--write-docs", action="store_true")
    p = sub.add_parser("query-cost")
    p.add_argument("--write-docs", action="store_true")
    p = sub.add_parser("latency")
    p.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    p.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    if args.part == "recall":
        result, table = recall(args.data, args.embed, args.indexes)
        name, title = f"hipporag-recall-{args.data}-{args.embed}", f"HippoRAG recall: {harness.DATASETS[args.data]} ({args.embed})"
    elif args.part == "proxy":
        (result, table), name = proxy(args.embed), f"hipporag-proxy-{args.embed}"
        title = f"HippoRAG answer-context proxy: graphrag-bench-medical ({args.embed})"
    elif args.part == "query-cost":
        (result, table), name, title = query_cost(), "hipporag-query-cost", "HippoRAG model calls per question"
    elif args.part == "cost":
        (result, table), name, title = cost(), "hipporag-cost", "HippoRAG index cost"
    else:
        (result, table), name, title = latency(args.sizes), "hipporag-latency", "HippoRAG PageRank latency"
    publish(name, title, result, table, args.write_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
