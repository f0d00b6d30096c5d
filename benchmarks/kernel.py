"""Kernel benchmark (issue: the kernel).

1. Scheduling: LLM extraction of N chunks with a fake model that sleeps 200 ms per call, at
   several concurrency limits, against the ideal N · calls-per-chunk · 0.2 s / c.
2. Cache: the same extraction run again against the same SQLite cache makes no model call.
3. Naive retrieval latency, excluding the model (the query vector is computed beforehand) at
   10k and 100k chunks of synthetic text, plus insert throughput and peak memory.
4. Vector snapshots (``--snapshot N``, apart): saving and opening the faiss snapshot of one
   collection of N random 384-dimensional vectors, each step in a fresh process: its seconds
   and how far it raises the process's peak memory above the collection it holds.

    uv run python -m benchmarks.kernel            # full run (about two minutes)
    uv run python -m benchmarks.kernel --quick    # small sizes, for a smoke test
    uv run python -m benchmarks.kernel --snapshot 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from rhizome.core import Chunk, HashingEmbedder, ModelCache, VectorIndex
from rhizome.core.extraction import LLMExtractor
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.store.vectors import VectorStore

RESULTS = Path(__file__).parent / "results"
DELAY = 0.2

WORDS = ["harbour", "river", "council", "market", "island", "ferry", "lighthouse", "museum", "survey", "fishery", "archive", "bridge", "railway", "school", "hospital", "library", "garden", "quarry", "mill", "forest", "valley", "ridge", "coast", "village", "castle", "church", "abbey", "festival", "treaty", "charter", "merchant", "guild", "harvest", "drought", "flood", "storm", "winter", "summer", "engineer", "painter", "poet", "sailor", "farmer", "weaver", "miner", "teacher", "doctor", "mayor", "bishop", "captain"]
NAMES = [f"{a}{b}" for a in ("Al", "Bar", "Cor", "Del", "Esk", "Fen", "Gar", "Hol") for b in ("ton", "by", "mere", "wick", "stead")]


def synthetic_text(rng: random.Random, sentences: int = 3) -> str:
    out = []
    for _ in range(sentences):
        words = rng.sample(WORDS, 7)
        out.append(f"{rng.choice(NAMES)} {' '.join(words[:3])} near {rng.choice(NAMES)} {' '.join(words[3:])}.")
    return " ".join(out)


def fake_extraction(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
    text = messages[-1]["content"]
    names = sorted({n for n in NAMES if n in text})[:4] or ["Alton"]
    return {
        "entities": [{"name": n, "type": "LOCATION", "description": f"{n} is a place."} for n in names],
        "relations": [
            {"source": a, "target": b, "description": "near each other", "keywords": ["near"], "strength": 5}
            for a, b in zip(names, names[1:])
        ],
    }


def make_chunks(n: int, seed: int = 1) -> list[Chunk]:
    rng = random.Random(seed)
    chunks = []
    for i in range(n):
        text = synthetic_text(rng)
        chunks.append(Chunk(id=f"c{i}", document_id=f"d{i}", text=text, index=0, start=0, end=len(text), n_tokens=40))
    return chunks


async def scheduling(n: int, concurrency: int, cache: ModelCache | None = None) -> dict[str, Any]:
    model = FakeChatModel(fake_extraction, delay=DELAY, max_concurrency=concurrency, cache=cache)
    extractor = LLMExtractor(model, gleaning=1)
    start = time.perf_counter()
    results = await extractor.aextract(make_chunks(n))
    elapsed = time.perf_counter() - start
    calls = model.usage.calls
    calls_per_chunk = sum(r.metadata.get("calls", 0) for r in results) / n
    ideal = n * calls_per_chunk * DELAY / concurrency
    return {
        "chunks": n,
        "concurrency": concurrency,
        "model_calls": calls,
        "cache_hits": model.usage.cache_hits,
        "calls_per_chunk": calls_per_chunk,
        "seconds": round(elapsed, 3),
        "ideal_seconds": round(ideal, 3),
        "ratio_to_ideal": round(elapsed / ideal, 3) if ideal else None,
        "max_in_flight": model.max_in_flight,
        "prompt_tokens": model.usage.prompt_tokens,
        "completion_tokens": model.usage.completion_tokens,
    }


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


async def retrieval(n_chunks: int, queries: int = 200) -> dict[str, Any]:
    rng = random.Random(7)
    embedder = HashingEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        index = VectorIndex(embedder, path=Path(tmp) / "idx", chunk_size=1200, chunk_overlap=100, batch_size=2048)
        docs = [{"id": f"doc{i}", "text": synthetic_text(rng)} for i in range(n_chunks)]
        start = time.perf_counter()
        await index.ainsert(docs)
        insert_s = time.perf_counter() - start
        assert len(index) == n_chunks
        questions = [synthetic_text(rng, 1) for _ in range(queries)]
        vectors = await embedder.aembed(questions)
        collection = index.store.collection(VectorIndex.CHUNK_COLLECTION)
        search_ms, full_ms = [], []
        for q, vector in zip(questions, vectors):
            t0 = time.perf_counter()
            ranked = collection.search(vector.reshape(1, -1), 10)[0]
            index.store.chunks([cid for cid, _ in ranked])
            search_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            await index.as_retriever(k=10).aretrieve(q)
            full_ms.append((time.perf_counter() - t0) * 1000)
        index.close()
        t0 = time.perf_counter()
        reopened = VectorIndex.load(Path(tmp) / "idx", readonly=True)
        reopened.store.collection(VectorIndex.CHUNK_COLLECTION)
        load_s = time.perf_counter() - t0
        reopened.close()
    return {
        "chunks": n_chunks,
        "insert_seconds": round(insert_s, 2),
        "insert_chunks_per_second": round(n_chunks / insert_s),
        "open_seconds": round(load_s, 3),
        "search_ms_p50": round(statistics.median(search_ms), 3),
        "search_ms_p95": round(float(np.percentile(search_ms, 95)), 3),
        "retrieve_ms_p50": round(statistics.median(full_ms), 3),
        "retrieve_ms_p95": round(float(np.percentile(full_ms, 95)), 3),
        "peak_rss_mb": round(peak_rss_mb()),
    }


async def main(quick: bool) -> dict[str, Any]:
    plan = [(20, 1), (100, 4), (100, 8), (200, 16)] if not quick else [(8, 2), (16, 8)]
    sched = []
    for n, c in plan:
        sched.append(await scheduling(n, c))
        print(f"scheduling: {sched[-1]}")
    with tempfile.TemporaryDirectory() as tmp:
        cache_path = Path(tmp) / "calls.sqlite"
        n = 100 if not quick else 16
        first = await scheduling(n, 8, ModelCache(cache_path))
        again = await scheduling(n, 8, ModelCache(cache_path))
    print(f"cache: first {first['model_calls']} calls, re-run {again['model_calls']} calls")
    sizes = [10_000, 100_000] if not quick else [1_000]
    scale = []
    for size in sizes:
        scale.append(await retrieval(size))
        print(f"retrieval: {scale[-1]}")
    return {
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count(), "platform": platform.platform()},
        "fake_model_delay_s": DELAY,
        "scheduling": sched,
        "cache": {"first_run": first, "rerun": again},
        "retrieval": scale,
    }


def snapshot_step(step: str, n: int, path: str) -> dict[str, Any]:
    """One step of the snapshot benchmark, in this process: ``save`` builds a collection of
    ``n`` vectors (in slices, so building it peaks at little more than what it holds) and
    saves it to ``path``; ``open`` loads ``path``."""
    if step == "save":
        rng = np.random.default_rng(0)
        store = VectorStore(384)
        for start in range(0, n, 20_000):
            part = rng.standard_normal((min(20_000, n - start), 384)).astype(np.float32)
            store.add([f"v{i}" for i in range(start, start + len(part))], part / np.linalg.norm(part, axis=1, keepdims=True))
            del part
        held = peak_rss_mb()
        began = time.perf_counter()
        store.save(path)
    else:
        held = peak_rss_mb()
        began = time.perf_counter()
        store, _ = VectorStore.load(path)
        assert len(store) == n
    seconds = time.perf_counter() - began
    return {"step": step, "vectors": n, "seconds": round(seconds, 2), "peak_before_mb": round(held), "peak_after_mb": round(peak_rss_mb())}


def snapshot(n: int) -> list[dict[str, Any]]:
    """Both steps of the snapshot benchmark, each in a fresh process."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for step in ("save", "open"):
            out = subprocess.run([sys.executable, "-m", "benchmarks.kernel", "--snapshot-step", step, str(n), f"{tmp}/v.npz"],
                                 check=True, capture_output=True, text=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
    return rows


def markdown(result: dict[str, Any]) -> str:
    lines = ["| chunks | concurrency | calls | calls/chunk | seconds | ideal | ratio | max in flight |", "|---|---|---|---|---|---|---|---|"]
    for r in result["scheduling"]:
        lines.append(
            f"| {r['chunks']} | {r['concurrency']} | {r['model_calls']} | {r['calls_per_chunk']:.1f} | {r['seconds']} | {r['ideal_seconds']} | {r['ratio_to_ideal']} | {r['max_in_flight']} |"
        )
    c = result["cache"]
    lines += [
        "",
        f"Cache: first run {c['first_run']['model_calls']} model calls; the same run again {c['rerun']['model_calls']} model calls ({c['rerun']['cache_hits']} answers from the cache, {c['rerun']['seconds']} s).",
        "",
        "| chunks | insert (chunks/s) | open (s) | search p50 / p95 (ms) | retrieve p50 / p95 (ms) | peak RSS (MB) |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["retrieval"]:
        lines.append(
            f"| {r['chunks']:,} | {r['insert_chunks_per_second']:,} | {r['open_seconds']} | {r['search_ms_p50']} / {r['search_ms_p95']} | {r['retrieve_ms_p50']} / {r['retrieve_ms_p95']} | {r['peak_rss_mb']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--snapshot", type=int, metavar="N", help="only the vector snapshot benchmark, over N vectors")
    parser.add_argument("--snapshot-step", nargs=3, metavar=("STEP", "N", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.snapshot_step:
        print(json.dumps(snapshot_step(args.snapshot_step[0], int(args.snapshot_step[1]), args.snapshot_step[2])))
        raise SystemExit(0)
    if args.snapshot:
        for row in snapshot(args.snapshot):
            print(json.dumps(row))
        raise SystemExit(0)
    result = asyncio.run(main(args.quick))
    RESULTS.mkdir(exist_ok=True)
    name = "kernel-quick.json" if args.quick else "kernel.json"
    (RESULTS / name).write_text(json.dumps(result, indent=2))
    print()
    print(markdown(result))
