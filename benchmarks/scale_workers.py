"""Scale (issue 21): index and query throughput with 1, 2 and 4 workers, on SQLite and on
PostgreSQL.

    uv run python -m benchmarks.scale_workers                 # 200 hotpotqa passages, 200 ms calls
    uv run python -m benchmarks.scale_workers --docs 400 --delay 0.5

Indexing: GraphRAG (lazy reports, so every model call of the build is an extraction call) over
hotpotqa-100 passages, with a fake chat model that answers every schema after ``--delay``
seconds (a realistic latency for a local 7B model on one extraction prompt) and the hashing
embedder; no cache. Each backend is built once in one process without Ray, then with Ray on 1,
2 and 4 workers (a local Ray in this process; its start-up and the workers' first import are
paid once before the timed runs). Every Ray build is compared with the single-process one, row
for row. Queries: GraphRAG local search without a chat model, from 1, 2 and 4 reader processes
at once (each opens the index read-only and asks every question 5 times), throughput over the
span in which they all run.
Writes ``benchmarks/results/scale_workers.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.data import hotpotqa

RESULTS = Path(__file__).resolve().parent / "results" / "scale_workers.json"
WORKERS = (1, 2, 4)
ROUNDS = 5
"""Times each reader asks every question (so a reader runs for seconds, not a fraction of one)."""


def _model(delay: float) -> Any:
    from rhizome.core.models.fake import FakeChatModel, SchemaResponder

    return FakeChatModel(SchemaResponder(), delay=delay, name="fake:latency")


def build(location: Any, documents: list, delay: float, workers: Any) -> tuple[float, Any, int]:
    """Seconds to build the index at ``location``, its rows, and the model calls it paid."""
    from rhizome.core.models.embeddings import HashingEmbedder
    from rhizome.graphrag import GraphRAGIndex

    model = _model(delay)
    index = GraphRAGIndex(HashingEmbedder(), llm=model, path=location, reports="lazy", cache=False, workers=workers)
    started = time.perf_counter()
    index.insert(documents)
    seconds = time.perf_counter() - started
    rows = index.store.contents()
    index.close()
    return seconds, rows, model.usage.calls


def _reader(location: Any, questions: list[str], start: Any, out: Any) -> None:
    from rhizome.core.store.storage import load_index

    index = load_index(location, readonly=True, offline=True)
    retriever = index.as_retriever(k=10, mode="local")
    retriever.retrieve(questions[0])  # warm: the graph and the vectors are loaded
    start.wait()
    began = time.perf_counter()
    for _ in range(ROUNDS):
        for question in questions:
            retriever.retrieve(question)
    out.put((began, time.perf_counter()))
    index.close()


def query_throughput(location: Any, questions: list[str], readers: int) -> float:
    """Queries per second of ``readers`` processes each running ``questions``."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(readers)
    out = context.Queue()
    processes = [context.Process(target=_reader, args=(location, questions, start, out)) for _ in range(readers)]
    for process in processes:
        process.start()
    spans = [out.get(timeout=600) for _ in processes]
    for process in processes:
        process.join()
    return readers * ROUNDS * len(questions) / (max(e for _, e in spans) - min(b for b, _ in spans))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)

    import pgserver

    from rhizome.core.extraction.parallel import RayWorkers

    documents, questions = hotpotqa()
    documents = documents[: args.docs]
    asked = [q.question for q in questions][: args.queries]
    folder = Path(tempfile.mkdtemp(prefix="rhizome-scale-"))
    server = pgserver.get_server(tempfile.mkdtemp(prefix="rhizome-pg-"), cleanup_mode="delete")
    base = server.get_uri()
    started = time.perf_counter()
    RayWorkers(workers=max(WORKERS)).start()
    build(folder / "warm", documents[:16], 0.0, RayWorkers(workers=max(WORKERS)))  # Ray workers start and import
    ray_start = time.perf_counter() - started

    results: dict[str, Any] = {"docs": len(documents), "delay": args.delay, "queries": len(asked), "ray_start_s": round(ray_start, 1), "runs": []}
    for backend in ("sqlite", "postgresql"):

        def where(name: str, backend: str = backend) -> Any:
            return folder / name if backend == "sqlite" else f"{base}&schema={name}"

        seconds, reference, calls = build(where("alone"), documents, args.delay, None)
        results["runs"].append({"backend": backend, "workers": "none (one process)", "index_s": round(seconds, 1),
                                "docs_per_s": round(len(documents) / seconds, 2), "model_calls": calls, "rows_equal": True})
        print(results["runs"][-1], flush=True)
        for n in WORKERS:
            seconds, rows, calls = build(where(f"ray{n}"), documents, args.delay, RayWorkers(workers=n))
            results["runs"].append({"backend": backend, "workers": n, "index_s": round(seconds, 1),
                                    "docs_per_s": round(len(documents) / seconds, 2), "model_calls": calls, "rows_equal": rows == reference})
            print(results["runs"][-1], flush=True)
        for readers in WORKERS:
            qps = query_throughput(where("alone"), asked, readers)
            results["runs"].append({"backend": backend, "readers": readers, "queries_per_s": round(qps, 1)})
            print(results["runs"][-1], flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
