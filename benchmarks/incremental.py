"""Incremental inserts (issue 21): what 100 documents cost when inserted into a 10k-document index.

GraphRAG: build an index of ``--size`` documents, insert ``--add`` more, then run a full
rebuild of the communities (:meth:`GraphRAGIndex.arebuild`: the whole graph clustered
from scratch, every report checked). Reported: non-model CPU seconds (``time.process_time``) of
each step, and which reports the insert wrote, reused and dropped. Two runs: offline (rule-based
extraction, extractive summaries and offline reports, no model) and with a counting fake chat
model writing summaries and reports (extraction stays offline, so the graphs are equal).

LightRAG: build ``--size`` documents with the counting fake model (extraction, gleaning and
summaries by the model) in one insert call, then insert ``--add`` more; counts extraction calls
and summary calls.

The documents are hotpotqa-100 text, as in the issue's measurement: 994 passages do not make
10k documents, so document ``i`` is passage ``i mod 994`` with its sentences rotated by
``i // 994`` places (the ten copies of a passage name the same entities: the graph grows in
weights and citations more than in entities).

    nice -n 10 uv run python -m benchmarks.incremental graphrag --size 10000 --add 100
    nice -n 10 uv run python -m benchmarks.incremental graphrag --size 10000 --add 100 --model
    nice -n 10 uv run python -m benchmarks.incremental lightrag --size 10000 --add 100
    nice -n 10 uv run python -m benchmarks.incremental archrag --size 10000 --add 100 [--model]

ArchRAG: build ``--size`` documents, insert ``--add`` more; the insert's CPU and model calls
against the build's (a rebuild from scratch), and how much of the insert is its layers of
communities (built again whole on every change).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import data
from rhizome.core import Document, FakeChatModel, HashingEmbedder

RESULTS = Path(__file__).parent / "results"


def documents(n: int) -> list[Document]:
    """``n`` documents of hotpotqa text: document ``i`` is passage ``i mod 994`` (title line and
    sentences), its sentences rotated by ``i // 994`` places (see the module docstring)."""
    passages, _ = data.hotpotqa()
    corpus = json.loads((data.data_dir() / "hotpotqa-100" / "corpus.json").read_text(encoding="utf-8"))
    m = len(passages)
    out = []
    for i in range(n):
        title = passages[i % m].id
        sentences = [s.strip() for s in corpus[title] if s.strip()] or [title]
        k = (i // m) % len(sentences)
        out.append(Document(id=f"h{i}", text=f"{title}\n{' '.join(sentences[k:] + sentences[:k])}"))
    return out


class _Clock:
    def __init__(self) -> None:
        self.cpu = time.process_time()
        self.wall = time.perf_counter()

    def read(self) -> dict[str, float]:
        return {"cpu_seconds": round(time.process_time() - self.cpu, 2), "wall_seconds": round(time.perf_counter() - self.wall, 2)}


async def graphrag(size: int, add: int, model: bool) -> dict[str, Any]:
    from benchmarks.graphrag import CountingResponder
    from rhizome.graphrag import GraphRAGIndex

    docs = documents(size + add)
    responder = CountingResponder()
    llm = FakeChatModel(responder, max_concurrency=16) if model else None

    def calls() -> dict[str, int]:
        return {k: v["calls"] for k, v in responder.kinds.items()}

    with tempfile.TemporaryDirectory() as tmp:
        index = GraphRAGIndex(HashingEmbedder(), llm=llm, path=Path(tmp) / "idx", extraction="offline", cache=False, batch_size=1024)
        clock = _Clock()
        built = await index.ainsert(docs[:size])
        build = {**clock.read(), "calls": calls(), **{k: built.stats.get(k) for k in ("entities", "relations", "communities", "levels")}}
        print("build", build, flush=True)
        before = calls()
        old = {c.id for c in index.graph().communities.values()}
        clock = _Clock()
        inserted = await index.ainsert(docs[size:])
        insert = {**clock.read(), "calls": {k: v - before.get(k, 0) for k, v in calls().items()}}
        new = {c.id for c in index.graph().communities.values()}
        insert.update(
            {k: inserted.stats.get(k) for k in ("entities", "relations", "communities", "reports_written", "reports_reused", "entity_embeddings", "community_embeddings", "reclustered_entities", "recluster", "update_cpu_seconds", "communities_kept", "reports_kept_same_input", "report_inputs_built", "report_relations_read")},
            communities_same_id=len(old & new),
            communities_dropped=len(old - new),
            communities_new=len(new - old),
        )
        print("insert", insert, flush=True)
        clock = _Clock()
        stats: dict[str, Any] = {}
        if hasattr(index, "arebuild"):
            stats = await index.arebuild()
        else:  # the code before issue 21's incremental insert rebuilt on every insert
            async with index.store.write_lock:
                await index._rebuild(stats)
        rebuild = {**clock.read(), **{k: stats.get(k) for k in ("communities", "reports_written", "reports_reused")}}
        print("rebuild", rebuild, flush=True)
        index.close()
    return {
        "suite": "incremental-graphrag",
        "size": size,
        "added": add,
        "model": "counting fake (summaries, reports)" if model else "none (offline)",
        "build": build,
        "insert": insert,
        "rebuild": rebuild,
        "insert_share_of_rebuild": round(insert["cpu_seconds"] / max(rebuild["cpu_seconds"], 1e-9), 3),
        "insert_share_of_build": round(insert["cpu_seconds"] / max(build["cpu_seconds"], 1e-9), 3),
    }


class _Counted:
    """Valid answers to every schema (the kernel's SchemaResponder), counted by what is asked:
    a report (it has findings), a description summary, or anything else."""

    def __init__(self) -> None:
        from rhizome.core.models.fake import SchemaResponder

        self.answer = SchemaResponder()
        self.kinds: dict[str, int] = {}

    def __call__(self, messages: list[dict[str, str]], schema: Any) -> Any:
        fields = (schema or {}).get("properties", {})
        kind = "report" if "findings" in fields else "summary" if "summary" in fields else "other"
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        return self.answer(messages, schema)


async def archrag(size: int, add: int, model: bool) -> dict[str, Any]:
    from rhizome.archrag import ArchRAGIndex

    docs = documents(size + add)
    responder = _Counted()
    llm = FakeChatModel(responder, max_concurrency=16) if model else None

    def calls() -> dict[str, int]:
        return dict(responder.kinds)

    with tempfile.TemporaryDirectory() as tmp:
        index = ArchRAGIndex(HashingEmbedder(), llm=llm, path=Path(tmp) / "idx", extraction="offline", cache=False, batch_size=1024)
        clock = _Clock()
        built = await index.ainsert(docs[:size])
        build = {**clock.read(), "calls": calls(), **{k: built.stats.get(k) for k in ("entities", "relations", "communities", "layers")}}
        print("build", build, flush=True)
        before = calls()
        layers = index._rebuild
        spent: dict[str, float] = {}

        async def timed(stats: Any, **options: Any) -> None:
            start = time.process_time()
            await layers(stats, **options)
            spent["layers_cpu_seconds"] = round(time.process_time() - start, 2)

        index._rebuild = timed  # type: ignore[method-assign]
        clock = _Clock()
        inserted = await index.ainsert(docs[size:])
        insert = {**clock.read(), **spent, "calls": {k: v - before.get(k, 0) for k, v in calls().items()}}
        insert.update({k: inserted.stats.get(k) for k in ("entities_written", "relations_written", "entity_embeddings", "relation_embeddings", "communities", "reports_written", "reports_reused")})
        print("insert", insert, flush=True)
        index.close()
    build_calls, insert_calls = sum(build["calls"].values()), sum(insert["calls"].values())
    return {
        "suite": "incremental-archrag",
        "size": size,
        "added": add,
        "model": "counting fake (summaries, reports)" if model else "none (offline)",
        "build": build,
        "insert": insert,
        "insert_share_of_build": round(insert["cpu_seconds"] / max(build["cpu_seconds"], 1e-9), 3),
        "layers_share_of_insert": round(insert.get("layers_cpu_seconds", 0.0) / max(insert["cpu_seconds"], 1e-9), 3),
        "insert_calls_share_of_build": round(insert_calls / build_calls, 3) if build_calls else None,
    }


async def lightrag(size: int, add: int) -> dict[str, Any]:
    from benchmarks.lightrag import ExtractionResponder
    from rhizome.core.models.counting import CountingChatModel
    from rhizome.lightrag import LightRAGIndex

    class Kinds(ExtractionResponder):
        def __init__(self) -> None:
            super().__init__()
            self.kinds: dict[str, int] = {}

        def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> Any:
            props = set((schema or {}).get("properties", {}))
            kind = "summary" if "summary" in props else "extraction" if "content_keywords" in props else "gleaning" if "entities" in props else "other"
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            return super().__call__(messages, schema)

    docs = documents(size + add)
    responder = Kinds()
    model = CountingChatModel(FakeChatModel(responder), max_concurrency=16)
    with tempfile.TemporaryDirectory() as tmp:
        index = LightRAGIndex(HashingEmbedder(), llm=model, path=Path(tmp) / "idx", allow_empty=True, cache=False)
        clock = _Clock()
        report = await index.ainsert(docs[:size])
        build = {**clock.read(), "calls": dict(responder.kinds), "entities": index.entity_table.count(), "relations": index.relation_table.count(), "chunks": report.chunks}
        print("build", build, flush=True)
        before = dict(responder.kinds)
        clock = _Clock()
        await index.ainsert(docs[size:])
        insert = {**clock.read(), "calls": {k: v - before.get(k, 0) for k, v in responder.kinds.items()}}
        print("insert", insert, flush=True)
        index.close()
    return {"suite": "incremental-lightrag", "size": size, "added": add, "build": build, "insert": insert}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method", choices=("graphrag", "lightrag", "archrag"))
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--add", type=int, default=100)
    parser.add_argument("--model", action="store_true", help="GraphRAG, ArchRAG: summaries and reports by a counting fake model")
    parser.add_argument("--name", default=None, help="results file name (default incremental-<method>[-model])")
    args = parser.parse_args(argv)
    if args.method == "graphrag":
        result = asyncio.run(graphrag(args.size, args.add, args.model))
    elif args.method == "archrag":
        result = asyncio.run(archrag(args.size, args.add, args.model))
    else:
        result = asyncio.run(lightrag(args.size, args.add))
    name = args.name or f"incremental-{args.method}{'-model' if args.model else ''}"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
