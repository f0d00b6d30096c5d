"""Rerankers on hotpotqa-100 and musique-dev (issue 57): the best mode of each method with and
without a reranker, what an LLM reranker costs, and the query latency a reranker adds.

No cross-encoder can be installed here (no package on PyPI ships cross-encoder weights and the
model hub cannot be reached; see docs/benchmarks.md), and no chat model runs here, so:

- **quality** is measured with a *bi-encoder re-scorer* as a stand-in: MiniLM (the index's own
  embedder) scores the query against the whole text of each of the 20 candidates
  (``rerank_candidates``) and the best 10 are kept. It is not a cross-encoder — it reads query
  and passage apart, as the dense index does — so it says what re-scoring candidates by dense
  similarity does to each method's ranking, not what a trained reranker would;
- the **LLM reranker** (:class:`~rhizome.core.retrieval.llm_rerank.LLMReranker`) is measured
  for **cost only**: calls, prompt and completion tokens per query, counted by the kernel's
  :class:`~rhizome.core.models.counting.CountingChatModel` around a fake model whose answer is
  deterministic and well formed (listwise: the passages in the order shown; pointwise: the
  same grade for every passage — so its order, and recall, are the search's own: no quality
  figure for it);
- **latency**: CPU milliseconds per query (user + system of this process, p50) of the search
  alone (``k`` = 10), with the over-fetch of 20 candidates, and with each reranker; the LLM
  reranker with a fake model that answers at once, so what it adds is Rhizome's own work
  (prompts, token counting and cutting, parsing), not the model's. All run interleaved per
  question; the load average is recorded.

The best mode of a method is the one with the highest Recall@5 (then Recall@2) in the published
every-method table of the data set (``retrieval-minilm.json``, ``retrieval-musique-minilm.json``),
leaving out a graph method's ``naive`` mode (plain vector search: the ``naive`` row). Indexes
are built into ``--indexes DIR`` (one folder per method) or reopened read-only from there.

    .venv-bench/bin/python -m benchmarks.rerank --data musique --indexes DIR
    .venv-bench/bin/python -m benchmarks.rerank --data hotpotqa --indexes DIR
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data, metrics
from benchmarks.harness import DATASETS, HITS, embedder_for
from benchmarks.latency import open_index
from rhizome.core.models.base import BaseChatModel, Message
from rhizome.core.models.counting import CountingChatModel
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.models.ollama import DEFAULT_NUM_CTX
from rhizome.core.protocols import Completion
from rhizome.core.retrieval.llm_rerank import LLMReranker

RESULTS = Path(__file__).parent / "results"
CANDIDATES = 20
SMALL_WINDOW = 4096
"""A second, smaller context window for the listwise cost: the candidates no longer fit one prompt."""
PUBLISHED = {"hotpotqa": "retrieval-minilm.json", "musique": "retrieval-musique-minilm.json"}
_PASSAGE = re.compile(r"^\[(\d+)\]", re.M)


def best_modes(dataset: str) -> list[tuple[str, str | None]]:
    """``(method, mode)`` of each method's best mode in the published every-method table."""
    rows = json.loads((RESULTS / PUBLISHED[dataset]).read_text(encoding="utf-8"))["rows"]
    best: dict[str, tuple[tuple[float, float], str | None]] = {}
    for row in rows:
        method, _, mode = row["system"].partition(":")
        if mode == "naive":
            continue
        score = (row["recall@5"], row["recall@2"])
        if method not in best or score > best[method][0]:
            best[method] = (score, mode or None)
    return [(method, mode) for method, (_, mode) in best.items()]


def answer_in_order(messages: list[Message], json_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The fake model's answer: a well-formed one that keeps the passages' order (listwise: the
    numbers as shown; pointwise: grade 5 for each)."""
    n = len(_PASSAGE.findall(messages[-1]["content"]))
    if json_schema is not None and "grades" in json_schema.get("properties", {}):
        return {"grades": [{"passage": i, "grade": 5} for i in range(1, n + 1)]}
    return {"ranking": list(range(1, n + 1))}


class InstantModel(BaseChatModel):
    """A chat model that answers at once and counts nothing (for timing what Rhizome itself does
    around a model call): :func:`answer_in_order`, no token counting, no sleeping."""

    async def _achat(self, messages: list[Message], json_schema: dict[str, Any] | None) -> Completion:
        return Completion(text=json.dumps(answer_in_order(messages, json_schema)))


class CosineRescorer:
    """The bi-encoder stand-in (not a cross-encoder): the cosine of the query's and each
    passage's embedding by ``embedder``, over the passage's whole text."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    async def __call__(self, query: str, texts: list[str]) -> list[float]:
        vectors = await self.embedder.aembed(texts)
        return (vectors @ (await self.embedder.aembed_query([query]))[0]).tolist()


def _recalls(found: list[list[Any]], questions: list[Any]) -> dict[int, list[float]]:
    ranked = [metrics.ranked_documents(hits) for hits in found]
    return {k: [metrics.recall_at(r, q.supporting, k) for r, q in zip(ranked, questions)] for k in (2, 5)}


async def measure(dataset: str, folder: Path, limit: int | None = None, methods: list[str] | None = None) -> dict[str, Any]:
    _, questions = data.musique() if dataset == "musique" else data.hotpotqa()
    questions = questions[:limit] if limit else questions
    rescorer = CosineRescorer(embedder_for("minilm"))
    counted = {
        "listwise": CountingChatModel(FakeChatModel(answer_in_order), context_window=DEFAULT_NUM_CTX),
        "pointwise": CountingChatModel(FakeChatModel(answer_in_order), context_window=DEFAULT_NUM_CTX),
        f"listwise-{SMALL_WINDOW}": CountingChatModel(FakeChatModel(answer_in_order), context_window=SMALL_WINDOW),
    }
    quality, cost, latency = [], [], []
    for method, mode in best_modes(dataset):
        if methods and method not in methods:
            continue
        index = open_index(method, "minilm", dataset, folder)
        name = method if mode is None else f"{method}:{mode}"
        timed = {
            "search": index.as_retriever(k=HITS, mode=mode),
            "over-fetch": index.as_retriever(k=CANDIDATES, mode=mode),
            "llm-listwise": index.as_retriever(k=HITS, mode=mode, rerank_candidates=CANDIDATES,
                                               reranker=LLMReranker(InstantModel("instant", context_window=DEFAULT_NUM_CTX))),
            "llm-pointwise": index.as_retriever(k=HITS, mode=mode, rerank_candidates=CANDIDATES, reranker=LLMReranker(
                InstantModel("instant", context_window=DEFAULT_NUM_CTX), method="pointwise")),
            "bi-encoder": index.as_retriever(k=HITS, mode=mode, reranker=rescorer, rerank_candidates=CANDIDATES),
        }
        costed = {label: index.as_retriever(k=HITS, mode=mode, rerank_candidates=CANDIDATES, reranker=LLMReranker(
            llm, method="pointwise" if label == "pointwise" else "listwise")) for label, llm in counted.items()}
        for retriever in timed.values():  # graphs, vectors and the model loaded before timing
            await retriever.aretrieve(questions[0].question)
        found: dict[str, list[list[Any]]] = {label: [] for label in timed}
        cpu: dict[str, list[float]] = {label: [] for label in timed}
        stats: dict[str, list[dict[str, Any]]] = {label: [] for label in costed}
        for q in questions:
            for label, retriever in timed.items():
                start = time.process_time()
                found[label].append(await retriever.aretrieve(q.question))
                cpu[label].append((time.process_time() - start) * 1000)
            for label, retriever in costed.items():
                stats[label].append((await retriever.asearch(q.question, context=False)).stats)
        index.close()
        plain, rescored = _recalls(found["search"], questions), _recalls(found["bi-encoder"], questions)
        row: dict[str, Any] = {"system": name}
        for k in (2, 5):
            delta = np.subtract(rescored[k], plain[k])
            row |= {f"R@{k}": round(statistics.fmean(plain[k]), 4), f"R@{k} re-scored": round(statistics.fmean(rescored[k]), 4),
                    f"ΔR@{k}": round(float(delta.mean()), 4),
                    f"ΔR@{k} 95% CI": [round(x, 4) for x in metrics.bootstrap_ci(delta.tolist())],
                    f"W/L R@{k}": "{wins}/{losses}".format(**metrics.paired_counts(rescored[k], plain[k]))}
        # the fake LLM answers keep the order of the 20 candidates: the over-fetch alone, cut to 10
        kept = _recalls(found["llm-listwise"], questions)
        row |= {f"R@{k} over-fetched, order kept": round(statistics.fmean(kept[k]), 4) for k in (2, 5)}
        quality.append(row)
        one: dict[str, Any] = {"system": name}
        for label, runs in stats.items():
            one |= {f"{label} calls": round(statistics.fmean(s.get("model_calls", 0) for s in runs), 2),
                    f"{label} prompt tokens": round(statistics.fmean(s.get("prompt_tokens", 0) for s in runs)),
                    f"{label} completion tokens": round(statistics.fmean(s.get("completion_tokens", 0) for s in runs))}
        one["candidates"] = round(statistics.fmean(s.get("reranked", 0) for s in stats["listwise"]), 1)
        cost.append(one)
        base = statistics.median(cpu["search"])
        latency.append({"system": name, **{f"{label} p50 CPU ms": round(statistics.median(ms), 2) for label, ms in cpu.items()},
                        "LLM listwise adds (CPU ms)": round(statistics.median(cpu["llm-listwise"]) - base, 2),
                        "LLM pointwise adds (CPU ms)": round(statistics.median(cpu["llm-pointwise"]) - base, 2)})
        print(row, one, latency[-1], flush=True)
    return {"quality": quality, "cost": cost, "latency": latency}


def merged(saved: dict[str, Any], new: dict[str, Any], dataset: str) -> dict[str, Any]:
    """``saved`` with ``new``'s rows in place of its rows of the same systems, in the order of
    :func:`best_modes`; the load average spans both runs."""
    order = [method if mode is None else f"{method}:{mode}" for method, mode in best_modes(dataset)]
    for part in ("quality", "cost", "latency"):
        rows = {row["system"]: row for row in saved[part]["rows"]} | {row["system"]: row for row in new[part]["rows"]}
        new[part]["rows"] = sorted(rows.values(), key=lambda row: order.index(row["system"]))
    low, high = saved["latency"]["load_average"], new["latency"]["load_average"]
    new["latency"]["load_average"] = [min(low[0], high[0]), max(low[1], high[1])]
    return new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rerank", description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=DATASETS, default="musique")
    parser.add_argument("--indexes", type=Path, required=True, help="folder the indexes are built in (and reopened from)")
    parser.add_argument("--limit", type=int, help="first N questions only (a smoke test; nothing is written)")
    parser.add_argument("--methods", nargs="*", help="only these methods (default: every method of the published table)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    result = asyncio.run(measure(args.data, args.indexes, args.limit, args.methods))
    _, questions = data.musique() if args.data == "musique" else data.hotpotqa()
    load = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    command = f".venv-bench/bin/python -m benchmarks.rerank --data {args.data} --indexes DIR"
    result = {
        "suite": "rerank", "data": DATASETS[args.data], "embedder": "minilm", "command": command,
        "quality": {"questions": args.limit or len(questions), "k": HITS, "rerank_candidates": CANDIDATES, "rows": result["quality"]},
        "cost": {"questions": args.limit or len(questions), "rerank_candidates": CANDIDATES, "rows": result["cost"]},
        "latency": {"load_average": load, "rows": result["latency"]},
    }
    if args.limit:
        return 0
    path = RESULTS / f"rerank-{args.data}-minilm.json"
    if args.methods and path.exists():  # these methods' rows replace theirs in the saved run
        result = merged(json.loads(path.read_text(encoding="utf-8")), result, args.data)
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
