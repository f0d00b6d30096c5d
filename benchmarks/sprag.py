"""spRAG benchmark (issue 17): recall with segments mapped to passages, the medical proxy under
the harness's token budget, and the time RSE takes to choose segments in 10k-chunk documents.

Systems, all with the same embedder and questions:

- ``naive``: the harness's dense baseline (the kernel's 1,200-token chunks; every hotpotqa and
  musique passage is one chunk);
- ``naive@200``: dense retrieval over spRAG's own chunks (200 tokens, no overlap), so that
  chunking and the method are told apart;
- ``sprag:chunks``: the nearest AutoContext chunks (headers, no RSE);
- ``sprag:<preset>``: segments (AutoContext + RSE), dsRAG's presets;
- ``sprag-bare:balanced``: RSE without AutoContext headers (``auto_context=False``).

Recall walks the hits in the order returned and each hit puts every passage its provenance
cites at its rank (a segment lies in one document, so it cites one passage here); each system is
asked for 10 hits, as in the harness. No chat model: the headers are the offline ones (title
and lead sentences).

    uv run python -m benchmarks.sprag recall --data hotpotqa --embed hashing
    .venv-bench/bin/python -m benchmarks.sprag recall --data hotpotqa --embed minilm
    .venv-bench/bin/python -m benchmarks.sprag recall --data musique --embed minilm
    uv run python -m benchmarks.sprag proxy --embed hashing
    uv run python -m benchmarks.sprag selection
    uv run python -m benchmarks.sprag long          # whole queries on one 10,000-chunk document
    uv run python -m benchmarks.sprag cost          # model calls and tokens of AutoContext (counting fake)

Results go to benchmarks/results/sprag.json (one key per run), never to the harness's files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data, harness, metrics
from benchmarks.harness import HITS, _retrieval_row, embedder_for
from benchmarks.systems import systems
from rhizome.core import VectorIndex
from rhizome.sprag import PRESETS, SpRAGIndex, best_segments, chunk_values
from rhizome.sprag.rse import exhaustive_segments

RESULTS = Path(__file__).parent / "results" / "sprag.json"
SPRAG_CHUNKS = {"chunk_size": 200, "chunk_overlap": 0}


VARIANTS = {  # what drives RSE's ranking: each dsRAG option turned, one at a time, on balanced
    "balanced, no length adjustment": {"chunk_length_adjustment": False},
    "balanced, raw cosine": {"relevance": "similarity"},
    "balanced, constant 0.8": {"relevance": "constant"},
}


def indexes(embedder: Any) -> dict[str, tuple[Any, list[tuple[str | None, dict[str, Any]]]]]:
    """Each index built for the run, with the modes (and retriever options) asked of it."""
    return {
        "naive": (VectorIndex(embedder, cache=False), [(None, {})]),
        "naive@200": (VectorIndex(embedder, cache=False, **SPRAG_CHUNKS), [(None, {})]),
        "sprag": (SpRAGIndex(embedder, cache=False), [(m, {}) for m in SpRAGIndex.modes] + list(VARIANTS.items())),
        "sprag-bare": (SpRAGIndex(embedder, cache=False, auto_context=False), [("balanced", {})]),
    }


async def _runs(documents: list[Any], questions: list[data.Question], embed: str) -> dict[str, dict[str, Any]]:
    """Hits, per-query milliseconds and index seconds of every system."""
    runs = {}
    for name, (index, modes) in indexes(embedder_for(embed)).items():
        start = time.perf_counter()
        await index.ainsert(documents)
        build = round(time.perf_counter() - start, 2)
        for mode, options in modes:
            retriever = index.as_retriever(k=HITS, mode="balanced" if mode in VARIANTS else mode, **options)
            results, ms = [], []
            for q in questions:
                t0 = time.perf_counter()
                results.append(await retriever.aretrieve(q.question))
                ms.append((time.perf_counter() - t0) * 1000)
            runs[name if mode is None else f"{name}:{mode}"] = {"hits": results, "ms": ms, "index_seconds": build}
        index.close()
    return runs


def _shape(hits: list[list[Any]]) -> dict[str, float]:
    """What the hits are: segments, their length in chunks and passages, fill."""
    flat = [h for hs in hits for h in hs]
    segments = [h for h in flat if h.kind == "segment"]
    return {
        "segment_share": round(len(segments) / max(1, len(flat)), 3),
        "chunks_per_segment": round(statistics.fmean(len(h.provenance.chunk_ids) for h in segments), 2) if segments else 0.0,
        "passages_per_hit": round(statistics.fmean(len(h.provenance.document_ids) for h in flat), 2) if flat else 0.0,
        "fill_share": round(sum(h.metadata.get("via") == "fill" for h in flat) / max(1, len(flat)), 3),
        "distinct_passages_in_10_hits": round(statistics.fmean(len(metrics.ranked_documents(hs)) for hs in hits), 2),
    }


async def recall(dataset: str, embed: str, limit: int | None = None) -> dict[str, Any]:
    documents, questions = getattr(data, dataset)()
    questions = questions[:limit] if limit else questions
    runs = await _runs(documents, questions, embed)
    for run in runs.values():
        ranked = [metrics.ranked_documents(hits) for hits in run["hits"]]
        run["recall"] = {k: [metrics.recall_at(r, q.supporting, k) for r, q in zip(ranked, questions)] for k in (2, 5)}
        run["ranked"] = {q.id: r[:HITS] for q, r in zip(questions, ranked)}
    rows = []
    for name, run in runs.items():
        row = _retrieval_row(name, run, runs["naive"])
        row["baseline"] = name == "naive"
        row["vs_same_chunks"] = {f"recall@{k}": metrics.paired_counts(run["recall"][k], runs["naive@200"]["recall"][k]) for k in (2, 5)}
        row["shape"] = _shape(run["hits"])
        rows.append(row)
    python = "uv run python" if embed == "hashing" else ".venv-bench/bin/python"
    return {"data": dataset, "embedder": embed, "questions": len(questions), "hits": HITS, "rows": rows,
            "command": f"{python} -m benchmarks.sprag recall --data {dataset} --embed {embed}" + (f" --limit {limit}" if limit else "")}


def recall_table(result: dict[str, Any]) -> str:
    lines = [
        "| system | R@2 | R@5 | ΔR@5 vs dense (95% CI) | W/L vs dense | W/L vs naive@200 | chunks / segment | passages in 10 hits | fill | p50 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        delta = "–" if r["baseline"] else f"{r['delta_recall@5']:+.3f} ({r['delta_recall@5_ci'][0]:+.3f}, {r['delta_recall@5_ci'][1]:+.3f})"
        wl = "–" if r["baseline"] else f"{r['vs_dense']['recall@5']['wins']}/{r['vs_dense']['recall@5']['losses']}"
        same = f"{r['vs_same_chunks']['recall@5']['wins']}/{r['vs_same_chunks']['recall@5']['losses']}"
        s = r["shape"]
        lines.append(
            f"| {r['system']} | {r['recall@2']:.3f} | {r['recall@5']:.3f} | {delta} | {wl} | {same} | "
            f"{s['chunks_per_segment'] or '–'} | {s['distinct_passages_in_10_hits']} | {s['fill_share']:.0%} | {r['query_p50_ms']} |"
        )
    return "\n".join(lines)


async def proxy(embed: str, limit: int | None = None, budget: int = 2000) -> dict[str, Any]:
    """The harness's medical proxy (answer words in the first ``budget`` tokens of the hits)."""
    documents, questions = data.medical()
    if limit:
        questions = questions[:limit]
    runs = await _runs(documents, questions, embed)
    rows = []
    for name, run in runs.items():
        per_type: dict[str, list[float]] = defaultdict(list)
        used = []
        for hits, q in zip(run["hits"], questions):
            context = metrics.budgeted_context(hits, budget)
            used.append(len(context))
            per_type[q.type].append(metrics.answer_coverage(context, q.answer))
        row = {"system": name, **{t: statistics.fmean(v) for t, v in sorted(per_type.items())}}
        row["all"] = statistics.fmean(x for v in per_type.values() for x in v)
        row["context_chars"] = round(statistics.fmean(used))
        row["shape"] = _shape(run["hits"])
        row["query_p50_ms"] = round(statistics.median(run["ms"]), 2)
        rows.append(row)
    python = "uv run python" if embed == "hashing" else ".venv-bench/bin/python"
    return {"data": "graphrag-bench-medical", "embedder": embed, "questions": len(questions), "budget_tokens": budget, "rows": rows,
            "command": f"{python} -m benchmarks.sprag proxy --embed {embed}" + (f" --limit {limit}" if limit else "")}


def proxy_table(result: dict[str, Any]) -> str:
    types = [k for k in result["rows"][0] if k not in ("system", "all", "context_chars", "shape", "query_p50_ms")]
    lines = ["| system | " + " | ".join(types) + " | all | context chars | chunks / segment | p50 ms |", "|---|" + "---|" * (len(types) + 4)]
    for r in result["rows"]:
        lines.append(
            f"| {r['system']} | " + " | ".join(f"{r[t]:.3f}" for t in types)
            + f" | {r['all']:.3f} | {r['context_chars']:,} | {r['shape']['chunks_per_segment'] or '–'} | {r['query_p50_ms']} |"
        )
    return "\n".join(lines)


# -- segment selection ---------------------------------------------------------------------------
def meta_document(documents: int, chunks: int, ranked: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """A meta-document of ``documents`` documents of ``chunks`` chunks each, ``ranked`` of them
    ranked as a search ranks them: relevance falling with rank, the ranked chunks in clusters
    (a relevant passage tends to sit beside other relevant ones)."""
    rng = np.random.default_rng(seed)
    n = documents * chunks
    centres = rng.integers(0, n, max(1, ranked // 8))
    positions = np.unique(np.clip(centres[rng.integers(0, len(centres), ranked * 3)] + rng.integers(-6, 7, ranked * 3), 0, n - 1))
    positions = rng.permutation(positions)[:ranked]
    rank = np.full(n, np.inf)
    rank[positions] = np.arange(len(positions))
    relevance = np.zeros(n)
    relevance[positions] = np.clip(np.linspace(1.0, 0.2, len(positions)) + rng.normal(0, 0.1, len(positions)), 0, 1)
    return relevance, rank, [chunks * (i + 1) for i in range(documents)]


def selection(repeats: int = 20) -> list[dict[str, Any]]:
    """Milliseconds to choose the segments of one query: ours against the exhaustive search."""
    rows = []
    for documents, chunks in ((1, 10_000), (10, 10_000), (1, 1_000)):
        relevance, rank, splits = meta_document(documents, chunks)
        for name, p in PRESETS.items():
            values = chunk_values(relevance, rank, decay_rate=p.decay_rate, penalty=p.irrelevant_chunk_penalty)
            options = {"max_length": p.max_length, "overall_max_length": p.overall_max_length, "minimum_value": p.minimum_value}
            ms = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                ours = best_segments([values], splits, **options)
                ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            reference = exhaustive_segments([values.tolist()], splits, **options)
            exhaustive_ms = (time.perf_counter() - t0) * 1000
            same = [(s.start, s.end) for s in ours] == [(s.start, s.end) for s in reference]
            rows.append({"documents": documents, "chunks_per_document": chunks, "preset": name, "segments": len(ours),
                         "chunks_chosen": sum(s.end - s.start for s in ours), "ms_p50": round(statistics.median(ms), 2),
                         "ms_max": round(max(ms), 2), "exhaustive_ms": round(exhaustive_ms, 1), "same_segments": same})
            print(rows[-1], flush=True)
    return rows


async def long_document(chunks: int = 10_000, queries: int = 100) -> list[dict[str, Any]]:
    """Whole queries on one document of ``chunks`` chunks (the harness's synthetic sentences
    joined into one text), hashing embedder: milliseconds per ``aretrieve`` in every mode."""
    sentences = [d["text"] for d in harness.synthetic_documents(chunks * 3, corpus="places")]  # as published
    index = SpRAGIndex(embedder_for("hashing"), cache=False, batch_size=4096)
    start = time.perf_counter()
    await index.ainsert([{"id": "long", "text": " ".join(sentences)}])
    build = time.perf_counter() - start
    rng = np.random.default_rng(5)
    asked = [sentences[i].split(",")[0] for i in rng.integers(0, len(sentences), queries)]
    rows = []
    for mode in SpRAGIndex.modes:
        retriever = index.as_retriever(k=HITS, mode=mode)
        ms, stats = [], []
        for q in asked:
            t0 = time.perf_counter()
            stats.append((await retriever.asearch(q)).stats)
            ms.append((time.perf_counter() - t0) * 1000)
        rows.append({"chunks": len(index), "mode": mode, "index_seconds": round(build, 1), "ms_p50": round(statistics.median(ms), 2),
                     "ms_p95": round(float(np.percentile(ms, 95)), 2),
                     "segments": round(statistics.fmean(s.get("segments", 0) for s in stats), 1)})
        print(rows[-1], flush=True)
    index.close()
    return rows


def selection_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| meta-document | preset | segments (chunks) | ours p50 / max ms | exhaustive search ms | same segments |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['documents']} × {r['chunks_per_document']:,} chunks | {r['preset']} | {r['segments']} ({r['chunks_chosen']}) | "
            f"{r['ms_p50']} / {r['ms_max']} | {r['exhaustive_ms']:,} | {'yes' if r['same_segments'] else 'NO'} |"
        )
    return "\n".join(lines)


def _save(key: str, value: Any) -> None:
    stored = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    stored[key] = value
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", choices=("recall", "proxy", "selection", "cost", "long"))
    parser.add_argument("--data", choices=("hotpotqa", "musique"), default="hotpotqa")
    parser.add_argument("--embed", default="hashing")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    if args.suite == "long":
        rows = asyncio.run(long_document())
        _save("long", {"command": "uv run python -m benchmarks.sprag long", "rows": rows})
    elif args.suite == "cost":  # the harness's cost suite, for spRAG's modes only
        result = asyncio.run(harness.cost(systems(["sprag"])))
        result["command"] = "uv run python -m benchmarks.sprag cost"
        _save("cost", result)
        print(harness.cost_table(result))
    elif args.suite == "selection":
        rows = selection()
        _save("selection", {"command": "uv run python -m benchmarks.sprag selection", "rows": rows})
        print(selection_table(rows))
    elif args.suite == "recall":
        result = asyncio.run(recall(args.data, args.embed, args.limit))
        _save(f"recall-{args.data}-{args.embed}", result)
        print(recall_table(result))
    else:
        result = asyncio.run(proxy(args.embed, args.limit))
        _save(f"proxy-{args.embed}", result)
        print(proxy_table(result))


if __name__ == "__main__":
    main()
