"""The out-of-core chunk collection (issue 60): what its approximation costs against exact search.

    OMP_NUM_THREADS=1 uv run python -m benchmarks.ann --sizes 100000 300000

For each size N: the chunks of N synthetic documents of the ``heaps`` corpus (the scale suite's),
embedded with the hashing embedder (384 dimensions), held once exactly (faiss ``IndexFlatIP``,
what every collection of an index directory is below the threshold, through ``VectorStore``) and once as
:class:`~rhizome.core.store.outofcore.OutOfCoreStore` (product-quantizer codes in memory; the exact vectors read
from an SQLite table by id, as an index directory's records are, and the candidates the codes
rank first re-ranked by them). Queries: the first clause of 500 documents of the collection ("seen", what the scale
suite asks) and of 500 documents left out of it ("unseen"). Recall@10: the share of the exact
top ten the out-of-core search returns, a tie at the tenth place counted as found (any returned
chunk whose exact cosine is at least the tenth exact score, to 1e-6). Also: build CPU, memory
held by each collection, and CPU per query (one at a time, one thread) for the default probes
for 2, 8 and 32 candidates per neighbour wanted (``2k + 16``...), for each kind of codes
(``--codes``: ``fast scan``, the default's 4-bit codes scanned with SIMD lookups, and ``pq``, the
8-bit ``IndexPQ`` before it). Writes ``benchmarks/results/ann-outofcore.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from benchmarks.render import ann_table

RESULTS = Path(__file__).resolve().parent / "results" / "ann-outofcore.json"
QUERIES = 500
K = 10


def _reader(db: sqlite3.Connection) -> Any:
    """Exact vectors by id from the table, as ``SQLiteStore._vector_reader`` reads them."""

    def read(keys: list[str]) -> tuple[list[str], np.ndarray]:
        marks = ",".join("?" * len(keys))
        found = dict(db.execute(f"SELECT id, vector FROM vectors WHERE collection = 'chunks' AND id IN ({marks})", keys).fetchall())
        held = [k for k in keys if k in found]
        return held, np.frombuffer(b"".join(found[k] for k in held), dtype=np.float32).reshape(len(held), -1)

    return read


def _recall(found: list[list[tuple[str, float]]], truth_scores: np.ndarray) -> float:
    """Mean share of the exact top ``K`` found (ties at the ``K``-th place count as found)."""
    shares = []
    for hits, exact in zip(found, truth_scores):
        tenth = exact[K - 1]
        shares.append(min(K, sum(1 for _, score in hits if score >= tenth - 1e-6)) / K)
    return round(float(np.mean(shares)), 4)


def _cpu_ms(search: Any, queries: np.ndarray) -> float:
    times = []
    for q in queries:
        t0 = time.process_time()
        search(q.reshape(1, -1))
        times.append((time.process_time() - t0) * 1000)
    return round(statistics.median(times), 3)


CODES = ("fast scan", "pq")
"""The collection's codes: what :func:`~rhizome.core.store.codes.quantizer` chooses (4-bit
codes scanned with SIMD lookups at 384 dimensions), and the 8-bit ``IndexPQ`` it chose before."""


def run(size: int, queries: int = QUERIES, codes: str = "fast scan") -> dict[str, Any]:
    import faiss

    from rhizome.core import HashingEmbedder
    from rhizome.core.store import codes as quantizers
    from rhizome.core.store import outofcore
    from rhizome.core.store import vectors as search
    from rhizome.core.store.vectors import TIE_MARGIN, VectorStore

    documents = harness.synthetic_documents(size + queries)
    inside, outside = documents[:size], documents[size:]
    embedder = HashingEmbedder()
    ids = [f"{d['id']}:0" for d in inside]
    vectors = np.empty((size, embedder.dimension), dtype=np.float32)
    for start in range(0, size, 20_000):
        vectors[start : start + 20_000] = embedder.embed([d["text"] for d in inside[start : start + 20_000]])
    rng = np.random.default_rng(5)
    asked = {
        "seen": embedder.embed([inside[i]["text"].split(",")[0] for i in rng.choice(size, queries, replace=False).tolist()]),
        "unseen": embedder.embed([d["text"].split(",")[0] for d in outside]),
    }
    flat = VectorStore(embedder.dimension)  # exact search: every vector scanned, no sieve
    flat.search_exactly()
    flat.add(ids, vectors)
    truth = {kind: np.array([[score for _, score in hits] for hits in flat.search(qv, K)]) for kind, qv in asked.items()}
    row: dict[str, Any] = {"size": size, "dimension": embedder.dimension, "exact_mb": round(vectors.nbytes / 2**20, 1)}
    with tempfile.TemporaryDirectory() as folder:
        db = sqlite3.connect(os.path.join(folder, "records.sqlite"))
        db.execute("CREATE TABLE vectors (collection TEXT, id TEXT, vector BLOB, PRIMARY KEY (collection, id))")
        db.executemany("INSERT INTO vectors VALUES ('chunks', ?, ?)", ((k, vectors[i].tobytes()) for i, k in enumerate(ids)))
        db.commit()
        step = max(1, size // quantizers.TRAIN_SAMPLE)
        chosen = quantizers.quantizer
        if codes == "pq":
            quantizers.quantizer = lambda d, n: faiss.IndexPQ(d, *quantizers.plan(d, n), faiss.METRIC_INNER_PRODUCT)  # type: ignore[assignment]
        t0 = time.process_time()
        store = outofcore.OutOfCoreStore.build(
            embedder.dimension, _reader(db), vectors[::step][: quantizers.TRAIN_SAMPLE],
            ((ids[s : s + outofcore.BLOCK], vectors[s : s + outofcore.BLOCK]) for s in range(0, size, outofcore.BLOCK)),
        )
        row["build_cpu_seconds"] = round(time.process_time() - t0, 2)
        quantizers.quantizer = chosen
        row["codes"] = codes
        crc = _Bytes()
        faiss.write_index(store._index, faiss.PyCallbackIOWriter(crc))  # type: ignore[attr-defined]
        row["out_of_core_mb"] = round(crc.total / 2**20, 1)
        codes = faiss.downcast_index(store._index.index)
        row["m"], row["nbits"] = int(codes.pq.M), int(codes.pq.nbits)
        del vectors  # the exact collection and the SQLite table hold them now
        row["runs"] = []
        default = search.CANDIDATES
        for candidates in (2, 8, 32):
            search.CANDIDATES = candidates
            run_row: dict[str, Any] = {"candidates": candidates * K + TIE_MARGIN}
            for kind, qv in asked.items():
                run_row[f"recall@10_{kind}"] = _recall(store.search(qv, K), truth[kind])
            run_row["query_cpu_ms"] = _cpu_ms(lambda q: store.search(q, K), asked["unseen"][:200])
            row["runs"].append(run_row)
        search.CANDIDATES = default
        row["exact_query_cpu_ms"] = _cpu_ms(lambda q: flat.search(q, K), asked["unseen"][:200])
        db.close()
    return row


class _Bytes:
    total = 0

    def __call__(self, block: bytes) -> int:
        self.total += len(block)
        return len(block)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="*", type=int, default=[100_000, 300_000],
                        help="collection sizes; the saved rows of other sizes are kept")
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--codes", nargs="*", choices=list(CODES), default=list(CODES),
                        help="which codes to build (each size once per kind, in one process)")
    args = parser.parse_args(argv)
    from rhizome.core.store import vectors as search
    from rhizome.core.store.vectors import TIE_MARGIN

    saved = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    runs = [(size, codes) for size in args.sizes for codes in args.codes]
    rows: list[dict[str, Any]] = [r for r in saved.get("rows", []) if (r["size"], r.get("codes", "pq")) not in runs]  # the others stay
    for size, codes in runs:  # saved after each: a later one that does not finish loses nothing
        rows.append(run(size, args.queries, codes))
        rows.sort(key=lambda r: (r["size"], r.get("codes", "pq")))
        print(json.dumps(next(r for r in rows if (r["size"], r.get("codes", "pq")) == (size, codes))), flush=True)
        result = {
            "suite": "ann-outofcore",
            "default_candidates": search.CANDIDATES * K + TIE_MARGIN,
            "command": f"OMP_NUM_THREADS=1 uv run python -m benchmarks.ann --sizes {' '.join(sorted({str(r['size']) for r in rows}, key=int))}",
            "corpus": "heaps",
            "note": f"load average {os.getloadavg()[0]:.1f} when the last size ended (2 cores shared with other sessions, 20-28 during "
                "the runs of 2026-12-02): read CPU, not wall; the out-of-core size is the faiss index's (codes, quantizer, "
                "id map), without the Python map of string ids every collection keeps (about 100 bytes an id)",
            "rows": rows,
        }
        RESULTS.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(ann_table(result))


if __name__ == "__main__":
    main()
