"""Indexing through a flaky model server: how much is done after one run and after a re-run,
and how many model answers the re-run pays for again.

The loopback Ollama stub of the test suite stands in for the server. Each chat request is, at
random (seeded), answered with text that is not JSON (``--invalid``, default 5 %), refused with
HTTP 503 "server busy" (``--busy``, 10 %), or answered with a valid instance of the requested
schema. Rhizome talks to it through its own ``OllamaChatModel`` with the defaults a user gets
(2 retries of invalid JSON, 2 of failed requests; the backoff is shortened to 20 ms so the run
is quick) and the model-call cache an index keeps in its directory. The corpus is the 994
hotpotqa-100 passages, one document each; embeddings are offline (hashing), so only chat calls
go to the stub.

Measured per method: documents done after the first ``insert``, after a second ``insert`` of
the same documents (only those not done are retried), the answers re-paid in the second
run (requests whose exact messages had already been answered validly in the first), and how
many runs it takes until no document failed and the whole-index work is done.

    uv run python -m benchmarks.robustness --write-docs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import data
from benchmarks.render import FLAKY_MAX_RUNS as MAX_RUNS
from benchmarks.render import robustness_table as table
from benchmarks.systems import index_class
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.models.fake import SchemaResponder
from rhizome.core.models.ollama import OllamaChatModel
from rhizome.tools.testing import registered_methods

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the test suite's stub
from ollama_stub import OllamaStub, StubError  # noqa: E402

RESULTS = Path(__file__).parent / "results"
MODEL = "qwen2.5:7b-instruct"


class FlakyServer:
    """The stub's reply function: invalid, busy or valid at the given rates, and a record of
    which requests were answered validly (by a digest of their messages and schema)."""

    def __init__(self, invalid: float, busy: float, seed: int = 7) -> None:
        self.invalid, self.busy = invalid, busy
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.responder = SchemaResponder()
        self.answered: set[str] = set()
        self.requests: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Any:
        key = hashlib.sha256(json.dumps([body.get("messages"), body.get("format")], sort_keys=True).encode()).hexdigest()
        with self.lock:
            self.requests.append(key)
            draw = self.rng.random()
            if draw < self.busy:
                return StubError(503, "server busy")
            if draw < self.busy + self.invalid:
                return "Sorry, the answer is not available right now."
            self.answered.add(key)
            return self.responder(body["messages"], body.get("format"))


def run(method: str, invalid: float, busy: float) -> dict[str, Any]:
    documents, _ = data.hotpotqa()
    server = FlakyServer(invalid, busy)
    with OllamaStub(models=[MODEL]) as stub, tempfile.TemporaryDirectory() as folder:
        stub.reply_fn = server

        def index() -> Any:
            llm = OllamaChatModel(MODEL, host=stub.url, retry_backoff=0.02)
            return index_class(method)(HashingEmbedder(), llm=llm, path=Path(folder) / "idx", progress=False)

        first = index()
        start = time.perf_counter()
        report = first.insert(documents)
        first_seconds = time.perf_counter() - start
        first_failed, first_unfinished = dict(report.failed), report.unfinished
        first.close()
        answered_before, calls_before = set(server.answered), len(server.requests)
        second = index()
        report = second.insert(documents)
        second_failed, second_unfinished = dict(report.failed), report.unfinished
        statuses = {s.status for s in second.store.statuses()}
        second.close()
        again = server.requests[calls_before:]
        runs = 2  # further re-runs until nothing is left undone (at most MAX_RUNS in all)
        while (report.failed or report.unfinished) and runs < MAX_RUNS:
            more = index()
            report = more.insert(documents)
            more.close()
            runs += 1
        every_rerun = server.requests[calls_before:]
    n = len(documents)
    return {
        "method": method,
        "documents": n,
        "invalid_rate": invalid,
        "busy_rate": busy,
        "first_run": {"done": n - len(first_failed), "failed": len(first_failed), "requests": calls_before, "seconds": round(first_seconds, 1),
                      "reasons": sorted({r.split(":")[0] for r in first_failed.values()}), "index_work_unfinished": first_unfinished},
        "second_run": {"done": n - len(second_failed), "failed": len(second_failed), "requests": len(again),
                       "retried_documents": len(first_failed), "statuses": sorted(statuses), "index_work_unfinished": second_unfinished},
        "repaid_answers": sum(1 for key in again if key in answered_before),
        "runs_until_complete": runs if not (report.failed or report.unfinished) else None,
        "repaid_answers_all_reruns": sum(1 for key in every_rerun if key in answered_before),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.robustness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="*", help="default: every installed method that uses a chat model")
    parser.add_argument("--add", action="store_true", help="merge these methods' rows into the saved results of the same rates (replacing theirs)")
    parser.add_argument("--invalid", type=float, default=0.05)
    parser.add_argument("--busy", type=float, default=0.10)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    from benchmarks.__main__ import keep_saved

    methods = args.methods or [m for m in registered_methods() if index_class(m).uses_llm]
    name = f"robustness-{int(args.invalid * 100)}-{int(args.busy * 100)}"
    keep_saved(RESULTS / f"{name}.json", methods, args.add, lambda held: [r["method"] for r in held])
    results = [run(m, args.invalid, args.busy) for m in methods]
    RESULTS.mkdir(exist_ok=True)
    if args.add and (RESULTS / f"{name}.json").exists():
        saved = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
        results = [r for r in saved if r["method"] not in methods] + results
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    body = (
        f"994 hotpotqa-100 passages through the loopback Ollama stub answering {args.invalid:.0%} of chat requests with "
        f"invalid JSON and {args.busy:.0%} with HTTP 503; `OllamaChatModel` defaults (2 + 2 retries, backoff 20 ms), hashing "
        f"embeddings. Reproduce: `uv run python -m benchmarks.robustness --invalid {args.invalid} --busy {args.busy}`\n\n{table(results)}"
    )
    print(body)
    if args.write_docs:
        from benchmarks.__main__ import write_section

        write_section(name, f"Indexing through a flaky server ({args.invalid:.0%} invalid, {args.busy:.0%} busy)", body)


if __name__ == "__main__":
    main()
