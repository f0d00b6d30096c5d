"""The suites of the benchmark harness. Each returns a JSON-able result and a markdown table.

- ``retrieval``: Recall@2 / Recall@5 of gold passages on hotpotqa-100 or musique-dev, every
  system, with paired wins/losses and bootstrap intervals against the dense baseline (``naive``)
  and per-query latency;
- ``proxy``: graphrag-bench-medical, share of reference-answer content words in the retrieved
  context under a token budget, per question type, every system;
- ``cost``: model calls and prompt/completion tokens per indexed 1k corpus tokens and per query,
  counted by CountingChatModel around a schema-driven fake model;
- ``scale``: indexing throughput and query latency excluding the model, and peak memory, at
  growing synthetic corpus sizes (one subprocess per size, so peak memory is that size's own).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data, metrics
from benchmarks.render import cost_table as cost_table
from benchmarks.render import proxy_table as proxy_table
from benchmarks.render import retrieval_table as retrieval_table
from benchmarks.render import scale_growth as scale_growth
from benchmarks.render import scale_table as scale_table
from benchmarks.systems import System, available_methods, build_index, index_class
from rhizome.core.models.counting import CountingChatModel
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.models.registry import make_embedder
from rhizome.core.text import count_tokens

HITS = 10  # hits asked of every retriever; passages are ranked by first citation


def embedder_for(spec: str) -> Any:
    if spec == "minilm":
        spec = "sentence-transformers:all-MiniLM-L6-v2"
    return make_embedder(spec)


def _by_method(selected: list[System]) -> dict[str, list[System]]:
    grouped: dict[str, list[System]] = defaultdict(list)
    for system in selected:
        grouped[system.method].append(system)
    return grouped


async def _retrieve_all(index: Any, system: System, questions: list[data.Question], k: int) -> tuple[list[list[Any]], list[float]]:
    """Every question's hits and the milliseconds of each ``aretrieve`` call on its own."""
    retriever = index.as_retriever(k=k, mode=system.mode, **dict(system.options))
    results, ms = [], []
    for q in questions:
        t0 = time.perf_counter()
        results.append(await retriever.aretrieve(q.question))
        ms.append((time.perf_counter() - t0) * 1000)
    return results, ms


# -- retrieval -------------------------------------------------------------------------------
DATASETS = {"hotpotqa": "hotpotqa-100", "musique": "musique-dev"}
DENSE = System("naive", None)  # the dense baseline of every retrieval run


def half(question_id: str) -> str:
    """The half of a data set a question belongs to (``A`` or ``B``, by the parity of the SHA-1 of
    its id): choices are made on half A of musique-dev and reported on half B."""
    return "A" if int(hashlib.sha1(question_id.encode("utf-8")).hexdigest(), 16) % 2 == 0 else "B"


async def indexed(method: str, embed: str, openie: str | None, documents: list[Any], folder: Path | None) -> tuple[Any, float | None]:
    """An index of ``method`` over ``documents`` and the seconds its build took: built in memory,
    or with ``folder`` kept in ``folder / method`` — built there when missing, else reopened
    read-only (``None`` seconds), so runs that change only the retrieval reuse one build."""
    path = None if folder is None else folder / method
    if path is not None and (path / "manifest.json").exists():
        return index_class(method)(embedder_for(embed), path=path, readonly=True, cache=False), None
    start = time.perf_counter()
    index = build_index(method, embedder_for(embed), openie=openie, cache=False, **({} if path is None else {"path": path}))
    await index.ainsert(documents)
    return index, round(time.perf_counter() - start, 2)


def retrieval_command(selected: list[System], embed: str, limit: int | None, openie: str | None, dataset: str) -> str:
    """The command line that reproduces a retrieval run."""
    python = "uv run python" if embed == "hashing" else ".venv-bench/bin/python"
    parts = [python, "-m benchmarks retrieval"]
    if dataset != "hotpotqa":
        parts.append(f"--data {dataset}")
    parts.append(f"--embed {embed}")
    methods = list(dict.fromkeys(s.method for s in selected))
    if methods != available_methods():
        parts.append(f"--methods {' '.join(methods)}")
    if limit:
        parts.append(f"--limit {limit}")
    if openie:
        parts.append(f"--openie {openie}")
    return " ".join(parts)


async def retrieval(
    selected: list[System], embed: str, limit: int | None = None, openie: str | None = None, dataset: str = "hotpotqa",
    folder: Path | None = None,
) -> dict[str, Any]:
    """Recall of gold passages on ``dataset`` (``hotpotqa``: offline extraction unless ``openie``;
    ``musique``: the data set's imported OpenIE triples unless ``openie``), each system compared
    question by question with the dense baseline, which runs even when not selected. ``folder``:
    keep the indexes there and reuse them (:func:`indexed`)."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown data set {dataset!r} (known: {', '.join(DATASETS)})")
    command = retrieval_command(selected, embed, limit, openie, dataset)
    documents, questions = getattr(data, dataset)()
    questions = questions[:limit] if limit else questions
    if openie is None and dataset == "musique":
        openie = str(data.musique_openie())
    runs = {}
    for method, group in _by_method(selected if DENSE in selected else [DENSE, *selected]).items():
        # no embedding cache: every query is embedded afresh in every mode, so the latencies
        # of the modes of one index compare with each other and with the naive index
        # imported triples go to the methods that extract (dense retrieval, RAPTOR and spRAG do not)
        extracts = "extraction" in index_class(method).config_class.model_fields
        index, build_s = await indexed(method, embed, openie if extracts else None, documents, folder)
        for system in group:
            results, ms = await _retrieve_all(index, system, questions, HITS)
            ranked = [metrics.ranked_documents(hits) for hits in results]
            recall = {k: [metrics.recall_at(r, q.supporting, k) for r, q in zip(ranked, questions)] for k in (2, 5)}
            runs[system.name] = {"recall": recall, "ms": ms, "index_seconds": build_s,
                                 "ranked": {q.id: r[:HITS] for q, r in zip(questions, ranked)}}
        index.close()
    dense = runs[DENSE.name]
    rows = [_retrieval_row(name, run, dense) for name, run in runs.items()]
    return {"suite": "retrieval", "data": DATASETS[dataset], "dataset": dataset, "embedder": embed, "questions": len(questions),
            "extraction": "imported OpenIE" if openie else "offline", "openie": Path(openie).name if openie else None,
            "command": command, "rows": rows}


def _retrieval_row(name: str, run: dict[str, Any], dense: dict[str, Any]) -> dict[str, Any]:
    r5, delta = run["recall"][5], np.subtract(run["recall"][5], dense["recall"][5])
    delta2 = np.subtract(run["recall"][2], dense["recall"][2])
    p50 = statistics.median(run["ms"])
    halves = {}
    sides = [half(qid) for qid in run["ranked"]]
    for side in ("A", "B"):
        at = [i for i, x in enumerate(sides) if x == side]
        halves[side] = {
            "questions": len(at),
            **{f"recall@{k}": round(statistics.fmean(run["recall"][k][i] for i in at), 4) for k in (2, 5) if at},
            **{f"delta_recall@{k}": round(statistics.fmean(run["recall"][k][i] - dense["recall"][k][i] for i in at), 4) for k in (2, 5) if at},
        }
    return {
        "system": name,
        "baseline": name == DENSE.name,
        "recall@2": statistics.fmean(run["recall"][2]),
        "recall@5": statistics.fmean(r5),
        "recall@5_ci": [round(x, 4) for x in metrics.bootstrap_ci(r5)],
        "delta_recall@2": round(float(delta2.mean()), 4),
        "delta_recall@2_ci": [round(x, 4) for x in metrics.bootstrap_ci(delta2)],
        "delta_recall@5": round(float(delta.mean()), 4),
        "delta_recall@5_ci": [round(x, 4) for x in metrics.bootstrap_ci(delta)],
        "vs_dense": {f"recall@{k}": metrics.paired_counts(run["recall"][k], dense["recall"][k]) for k in (2, 5)},
        "halves": halves,
        "query_p50_ms": round(p50, 2),
        "query_p95_ms": round(float(np.percentile(run["ms"], 95)), 2),
        "p50_x_dense": round(p50 / statistics.median(dense["ms"]), 2),
        "index_seconds": run["index_seconds"],
        "ranked": run["ranked"],
    }


def compare(old: dict[str, Any], new: dict[str, Any], renamed: dict[str, str] | None = None) -> str:
    """Two retrieval results question by question: how many questions keep the same top-2 and
    top-5 passages, and the recalls before and after (``renamed``: old system name → new)."""
    renamed = renamed or {}
    lines = ["| system | same top-2 | same top-5 | Recall@2 before → after | Recall@5 before → after |", "|---|---|---|---|---|"]
    after = {r["system"]: r for r in new["rows"]}
    for row in old["rows"]:
        name = renamed.get(row["system"], row["system"])
        now = after.get(name)
        if now is None or "ranked" not in row or "ranked" not in now:
            continue
        same = {n: sum(row["ranked"][q][:n] == now["ranked"].get(q, [])[:n] for q in row["ranked"]) for n in (2, 5)}
        total = len(row["ranked"])
        lines.append(
            f"| {name} | {same[2]}/{total} | {same[5]}/{total} | {row['recall@2']:.3f} → {now['recall@2']:.3f} | "
            f"{row['recall@5']:.3f} → {now['recall@5']:.3f} |"
        )
    return "\n".join(lines)


# -- medical proxy ---------------------------------------------------------------------------
PROXY_BUDGET = 2000
"""Context tokens the medical proxy reads per question by default."""


async def proxy(selected: list[System], embed: str, limit: int | None = None, budget: int = PROXY_BUDGET) -> dict[str, Any]:
    documents, questions = data.medical()
    if limit:
        questions = random.Random(0).sample(questions, min(limit, len(questions)))
    rows = []
    for method, group in _by_method(selected).items():
        index = build_index(method, embedder_for(embed))
        await index.ainsert(documents)
        for system in group:
            results, _ = await _retrieve_all(index, system, questions, HITS)
            per_type: dict[str, list[float]] = defaultdict(list)
            for hits, q in zip(results, questions):
                context = metrics.budgeted_context(hits, budget)
                per_type[q.type].append(metrics.answer_coverage(context, q.answer))
            row = {"system": system.name, **{t: statistics.fmean(v) for t, v in sorted(per_type.items())}}
            row["all"] = statistics.fmean(x for v in per_type.values() for x in v)
            rows.append(row)
        index.close()
    return {"suite": "proxy", "data": "graphrag-bench-medical", "embedder": embed, "questions": len(questions),
            "budget_tokens": budget, "rows": rows}


# -- cost ------------------------------------------------------------------------------------
async def cost(selected: list[System], passages: int = 100, queries: int = 20) -> dict[str, Any]:
    documents, questions = data.hotpotqa()
    documents = documents[:passages]
    corpus_tokens = sum(count_tokens(d.text) for d in documents)
    rows = []
    for method, group in _by_method(selected).items():
        llm = CountingChatModel(FakeChatModel(SchemaResponder()))
        index = build_index(method, embedder_for("hashing"), llm=llm, cache=False)  # count every call
        if not getattr(type(index), "uses_llm", False):
            index.llm = None
        await index.ainsert(documents)
        indexing = llm.usage.snapshot()
        per_1k = 1000 / max(1, corpus_tokens)
        for system in group:
            llm.reset()
            retriever = index.as_retriever(k=HITS, mode=system.mode)
            for q in questions[:queries]:
                await retriever.aretrieve(q.question)
            q_usage = llm.usage.snapshot()
            rows.append({
                "system": system.name,
                "index_calls_per_1k": round(indexing["calls"] * per_1k, 2),
                "index_prompt_tokens_per_1k": round(indexing["prompt_tokens"] * per_1k),
                "index_completion_tokens_per_1k": round(indexing["completion_tokens"] * per_1k),
                "query_calls": round(q_usage["calls"] / queries, 2),
                "query_prompt_tokens": round(q_usage["prompt_tokens"] / queries),
                "query_completion_tokens": round(q_usage["completion_tokens"] / queries),
            })
        index.close()
    return {"suite": "cost", "data": f"hotpotqa-100 (first {passages} passages, {corpus_tokens} tokens)",
            "queries": queries, "model": "CountingChatModel(FakeChatModel(SchemaResponder()))", "rows": rows}


# -- scale -----------------------------------------------------------------------------------
WORDS = ["harbour", "river", "council", "market", "island", "ferry", "lighthouse", "museum", "survey", "fishery", "archive", "bridge", "railway", "school", "hospital", "library", "garden", "quarry", "mill", "forest", "valley", "ridge", "coast", "village", "castle", "church", "abbey", "festival", "treaty", "charter", "merchant", "guild", "harvest", "drought", "flood", "storm", "engineer", "painter", "poet", "sailor", "farmer"]
NAMES = [f"{a}{b}" for a in ("Al", "Bar", "Cor", "Del", "Esk", "Fen", "Gar", "Hol", "Ist", "Jor") for b in ("ton", "by", "mere", "wick", "stead", "ham", "ford")]


CORPORA = ("heaps", "places")
"""The synthetic corpora of the scale suite: ``heaps`` (the default since issue 60: distinct
entities grow as a power of the corpus, mentions Zipfian) and ``places`` (the first one: about
2,500 places at 100k documents, each as likely as the next; every published row of
``scale-offline``, ``scale-build-rerun``, ``scale-disk-100k`` and the RAPTOR/LightRAG re-runs up
to issue 60 used it)."""

HEAPS_K, HEAPS_BETA = 20.0, 0.6
"""Distinct entities of a ``heaps`` corpus of N documents: ``round(K * N ** beta)`` (Heaps' law;
text corpora show beta of about 0.4-0.7): 1,262 at 1k, 5,024 at 10k, 20,000 at 100k, 79,621 at 1M."""
ZIPF_S, ZIPF_Q = 1.0, 10.0
"""Mention frequencies over the vocabulary: Zipf-Mandelbrot, the entity of rank r drawn with
probability proportional to ``1 / (r + q) ** s``; the offset q keeps the head from taking a
tenth of every mention (the top entity gets about 1 % of them at 100k, rank 100 a tenth of that)."""
_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s", "st", "t", "tr", "v", "w", "z")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "ou")
_CODAS = ("", "n", "r", "l", "s", "th", "m", "rk", "nd", "x")
_NAMES = len(_ONSETS) ** 3 * len(_NUCLEI) ** 3 * len(_CODAS)


def entity_name(rank: int) -> str:
    """A distinct pronounceable capitalised name for each rank below 54.5 million: three
    syllables (an onset and a vowel each) and a closing consonant or none, e.g. ``Wudavark``;
    a name splits into its parts in one way only, so no two ranks share one. Ranks are shuffled
    first (a multiplication modulo the number of names, a bijection), so that neighbouring
    ranks, which are about as frequent, do not share a first syllable."""
    if not 0 <= rank < _NAMES:
        raise ValueError(f"entity ranks go from 0 to {_NAMES - 1}")
    value = rank * 2654435761 % _NAMES
    value, coda = divmod(value, len(_CODAS))
    parts = []
    for _ in range(3):
        value, digit = divmod(value, len(_ONSETS) * len(_NUCLEI))
        parts.append(_ONSETS[digit // len(_NUCLEI)] + _NUCLEI[digit % len(_NUCLEI)])
    return ("".join(parts) + _CODAS[coda]).capitalize()


def heaps_vocabulary(n: int) -> int:
    """Distinct entities of a ``heaps`` corpus of ``n`` documents (:data:`HEAPS_K`)."""
    return max(20, round(HEAPS_K * n**HEAPS_BETA))


def synthetic_documents(n: int, seed: int = 3, corpus: str = "heaps") -> list[dict[str, str]]:
    """``n`` one-chunk documents of three sentences, each sentence naming two entities (see
    :data:`CORPORA`): ``heaps`` draws them Zipfian from a vocabulary of
    :func:`heaps_vocabulary` names, ``places`` (the corpus of the rows published before issue 60,
    reproduced exactly) uniformly from about ``n // 10 + n // 50`` places, 2,490 at most."""
    if corpus == "places":
        return _place_documents(n, seed)
    if corpus != "heaps":
        raise ValueError(f"unknown synthetic corpus {corpus!r}; choose one of {', '.join(CORPORA)}")
    rng = random.Random(seed)
    size = heaps_vocabulary(n)
    weights = 1.0 / (np.arange(1, size + 1) + ZIPF_Q) ** ZIPF_S
    draws = np.random.default_rng(seed).choice(size, size=(n, 3, 2), p=weights / weights.sum())
    names: dict[int, str] = {}
    docs = []
    for i in range(n):
        sentences = []
        for a, b in draws[i].tolist():
            if a == b:
                b = (b + 1) % size
            w = rng.sample(WORDS, 5)
            first = names.setdefault(a, entity_name(a))
            second = names.setdefault(b, entity_name(b))
            sentences.append(f"{first} has a {w[0]} and a {w[1]} near {second}, known for its {w[2]} {w[3]} {w[4]}.")
        docs.append({"id": f"s{i}", "text": " ".join(sentences)})
    return docs


def _place_documents(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    vocabulary = [f"{name} {suffix}" for suffix in ("", "North", "South", "Mill", "Cross", "Bay", "Hill") for name in NAMES]
    vocabulary = vocabulary[: max(20, min(len(vocabulary), n // 10))] + [f"Place{i}" for i in range(n // 50)]
    docs = []
    for i in range(n):
        sentences = []
        for _ in range(3):
            a, b = rng.sample(vocabulary, 2)
            w = rng.sample(WORDS, 5)
            sentences.append(f"{a.strip()} has a {w[0]} and a {w[1]} near {b.strip()}, known for its {w[2]} {w[3]} {w[4]}.")
        docs.append({"id": f"s{i}", "text": " ".join(sentences)})
    return docs


def scale_one(method: str, size: int, queries: int = 100, query_seconds: float = 300.0, emit: Any = None, warm_up: bool = False,
              on_disk: str | None = None, corpus: str = "heaps", memory_gb: float | None = None) -> dict[str, Any]:
    """Run in a subprocess: index ``size`` synthetic documents offline and time ``queries``
    queries a retrieval mode (none: the build alone). The index is in memory (SQLite's
    ``:memory:`` database holds every record and vector in the process) unless ``on_disk``
    names a directory to build it in (a fresh folder there, removed afterwards).
    ``emit`` (when given) receives the row as soon as the build is measured, before any query,
    so a slow query phase cannot lose the build's numbers; each mode's queries stop after
    ``query_seconds`` (the row's ``note`` then says how many ran). ``warm_up``: first index 200
    other documents in a throwaway index, so that what a process pays once (imports, numba's
    compilation of UMAP for RAPTOR) is not in the build's time; its CPU goes in the row.
    ``corpus``: which synthetic corpus (:data:`CORPORA`); ``memory_gb``: the index's memory
    budget (``None``: none, or ``RHIZOME_MEMORY_GB``)."""
    if on_disk is None:
        return asyncio.run(_scale_one(method, size, queries, query_seconds, emit, warm_up, None, corpus, memory_gb))
    Path(on_disk).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=on_disk) as folder:
        return asyncio.run(_scale_one(method, size, queries, query_seconds, emit, warm_up, Path(folder) / "index", corpus, memory_gb))


async def _scale_one(method: str, size: int, queries: int, query_seconds: float, emit: Any, warm_up: bool, path: Path | None,
                     corpus: str = "heaps", memory_gb: float | None = None) -> dict[str, Any]:
    documents = synthetic_documents(size, corpus=corpus)
    if warm_up:
        warm_cpu = time.process_time()
        throwaway = build_index(method, embedder_for("hashing"), batch_size=1024)
        await throwaway.ainsert(synthetic_documents(200, seed=11))
        throwaway.close()
        warm_cpu = time.process_time() - warm_cpu
    index = build_index(method, embedder_for("hashing"), batch_size=1024, path=path, **({} if memory_gb is None else {"memory_gb": memory_gb}))
    start, cpu = time.perf_counter(), time.process_time()
    await index.ainsert(documents)
    index_s, index_cpu = time.perf_counter() - start, time.process_time() - cpu
    row: dict[str, Any] = {
        "method": method,
        "size": size,
        "index_seconds": round(index_s, 2),
        "index_cpu_seconds": round(index_cpu, 2),
        "chunks_per_second": round(size / index_s, 1),
        "latency_ms": {},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "store": "memory" if path is None else "disk",
        "corpus": corpus,
    }
    if memory_gb is not None:
        row["memory_gb"] = memory_gb
    if path is not None:
        index.store.save_snapshots()  # what a reopen reads, on disk before it is measured
        row["disk_mb"] = _megabytes_in(path)
    if warm_up:
        row["warm_up_cpu_seconds"] = round(warm_cpu, 2)
    if emit is not None:
        emit({**row, "note": "build only: the query phase did not finish"})
    rng = random.Random(9)
    cut: list[str] = []
    for mode in (getattr(type(index), "modes", ()) or (None,)) if queries else ():
        retriever = index.as_retriever(k=HITS, mode=mode)
        times: list[float] = []
        began = time.perf_counter()
        for _ in range(queries):
            question = rng.choice(documents)["text"].split(",")[0]
            t0 = time.perf_counter()
            await retriever.aretrieve(question)
            times.append((time.perf_counter() - t0) * 1000)
            if time.perf_counter() - began > query_seconds and len(times) < queries:
                cut.append(f"{mode or method}: {len(times)} of {queries} queries (stopped after {query_seconds:.0f} s)")
                break
        row["latency_ms"][mode or method] = {"p50": round(statistics.median(times), 2), "p95": round(float(np.percentile(times, 95)), 2)}
    index.close()
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if path is not None and queries:  # opening the directory again, to the first answer of the default mode
        t0 = time.perf_counter()
        reopened = index_class(method)(embedder_for("hashing"), path=path, readonly=True)
        await reopened.as_retriever(k=HITS).aretrieve(documents[0]["text"].split(",")[0])
        row["open_seconds"] = round(time.perf_counter() - t0, 3)  # a small index opens in milliseconds
        reopened.close()
    if cut:
        row["note"] = "; ".join(cut)
    return row


def _megabytes_in(folder: Path) -> int:
    """The size of the files under ``folder``, in MB."""
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20)


def scale(methods: list[str], sizes: list[int], timeout: float = 1800, corpus: str = "heaps", on_disk: str | None = None) -> dict[str, Any]:
    """``scale_one`` of every method and size, each in a subprocess of its own (so each row's
    peak RSS is its own); ``on_disk``: build in a directory under it rather than in memory."""
    rows = []
    for method in methods:
        for size in sizes:
            cmd = [sys.executable, "-m", "benchmarks", "scale-one", method, str(size), "--corpus", corpus]
            if on_disk:
                cmd += ["--on-disk", on_disk]
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
                rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            except subprocess.TimeoutExpired as exc:
                built = _last_row(exc.stdout)  # the build row, printed before the queries
                rows.append(built or {"method": method, "size": size, "error": f"did not finish within {timeout:.0f} s"})
            except subprocess.CalledProcessError as exc:
                rows.append({"method": method, "size": size, "error": (exc.stderr or "").strip().splitlines()[-1:]})
            print(f"scale: {rows[-1]}", file=sys.stderr)
    return {"suite": "scale", "corpus": corpus, "rows": rows,
            "note": f"load average {os.getloadavg()[0]:.1f} when the run ended (2 cores, shared): wall times and query latencies "
                    "carry the contention, CPU seconds and peak RSS much less"}


def _last_row(stdout: Any) -> dict[str, Any] | None:
    """The last JSON row a ``scale-one`` process printed, if any."""
    text = stdout.decode() if isinstance(stdout, bytes) else (stdout or "")
    lines = [line for line in text.strip().splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None
