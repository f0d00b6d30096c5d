"""rhizome-graphrag benchmark (issue 4).

1. Retrieval quality, offline (OfflineExtractor, HashingEmbedder, offline reports):
   hotpotqa-100 Recall@2/@5 of supporting passages (ranked as the harness ranks them: chunk hits'
   passages first, then passages cited by the other hits) from local search, DRIFT and basic
   search; graphrag-bench-medical proxy (share of the reference answer's content words found in
   the first 2,000 tokens of retrieved context).
2. Cost with a counting fake model (instant, valid JSON; calls and cl100k tokens from its usage
   counters): report writing per 1k indexed tokens (eager vs lazy), LLM extraction per 1k tokens,
   and a global query — static map over a level (the paper), dynamic selection, and lazy reports —
   against the nano-graphrag anchor (26 map calls, ~425k prompt tokens per global query on
   hotpotqa-100 with a dense fake graph).
3. Leiden + report scheduling time on synthetic planted-partition graphs of 10k and 100k entities.

    uv run python -m benchmarks.graphrag            # full run
    uv run python -m benchmarks.graphrag --quick    # small sizes, smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import re
import time
from pathlib import Path
from typing import Any

from benchmarks import data, metrics
from benchmarks.harness import HITS
from rhizome.core import Chunk, FakeChatModel, HashingEmbedder
from rhizome.core.extraction import LLMExtractor
from rhizome.core.graph.entity_graph import EntityGraph
from rhizome.core.index.hierarchy import GroupSummarizer, cluster_hierarchy
from rhizome.core.models.embeddings import hashed_features
from rhizome.core.store.storage import IndexStore, Manifest
from rhizome.core.text import count_tokens
from rhizome.core.types import Entity, Relation
from rhizome.graphrag import GraphRAGIndex, ReportWriter, build_input
from rhizome.graphrag.prompts import MAP_SYSTEM, RATE_SYSTEM, REPORT_SYSTEM

RESULTS = Path(__file__).parent / "results"
NANO_ANCHOR = {"map_calls": 26, "prompt_tokens": 425_000}
MEDICAL_BUDGET = 2000


# -- 1. quality ----------------------------------------------------------------------------------


async def quality(quick: bool) -> dict[str, Any]:
    docs, questions = data.hotpotqa()
    if quick:
        questions = questions[:20]
    index = GraphRAGIndex(HashingEmbedder())
    t = time.perf_counter()
    report = await index.ainsert(docs)
    build = time.perf_counter() - t
    out: dict[str, Any] = {
        "hotpotqa": {
            "passages": len(docs),
            "questions": len(questions),
            "index_seconds": round(build, 2),
            "indexed_tokens": report.tokens,
            **report.stats,
        }
    }
    modes = {
        "local": index.as_retriever(mode="local", k=HITS),  # the harness's number of hits
        "drift": index.as_retriever(mode="drift", k=HITS),
        "naive": index.as_retriever(mode="naive", k=HITS),
    }
    for name, retriever in modes.items():
        r2 = r5 = 0.0
        t = time.perf_counter()
        for q in questions:
            # the harness's ranking: the passages of chunk hits first, then passages cited by
            # the other hits (entities, relations, reports)
            ranked = metrics.ranked_documents(await retriever.aretrieve(q.question))
            r2 += metrics.recall_at(ranked, q.supporting, 2)
            r5 += metrics.recall_at(ranked, q.supporting, 5)
        out["hotpotqa"][name] = {
            "recall@2": round(r2 / len(questions), 4),
            "recall@5": round(r5 / len(questions), 4),
            "ms_per_query": round(1000 * (time.perf_counter() - t) / len(questions), 1),
        }
    index.close()

    mdocs, mquestions = data.medical()
    mquestions = mquestions[: (50 if quick else 300)]
    mindex = GraphRAGIndex(HashingEmbedder())
    t = time.perf_counter()
    mreport = await mindex.ainsert(mdocs)
    out["medical"] = {
        "questions": len(mquestions),
        "index_seconds": round(time.perf_counter() - t, 2),
        "indexed_tokens": mreport.tokens,
        "budget_tokens": MEDICAL_BUDGET,
        **mreport.stats,
    }
    retrievers = {
        "local": mindex.as_retriever(mode="local", k=HITS, max_tokens=MEDICAL_BUDGET),
        "naive": mindex.as_retriever(mode="naive", k=10),
        "global": mindex.as_retriever(mode="global"),  # its default 50 points, as before
    }
    for name, retriever in retrievers.items():
        total = 0.0
        for q in mquestions:
            context = metrics.budgeted_context(await retriever.aretrieve(q.question), MEDICAL_BUDGET)
            total += metrics.answer_coverage(context, q.answer)
        out["medical"][name] = round(total / len(mquestions), 4)
    mindex.close()
    return out


# -- 2. cost -------------------------------------------------------------------------------------


def words(text: str) -> set[str]:
    """The fake model's rating words (normalised content words of the hashing embedder)."""
    return {f for f in hashed_features(text) if " " not in f}


class CountingResponder:
    """Instant, deterministic, valid JSON for every GraphRAG call; counts calls by kind."""

    def __init__(self) -> None:
        self.kinds: dict[str, dict[str, int]] = {}

    def __call__(self, messages: list[dict[str, str]], schema: Any) -> Any:
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        kind = {REPORT_SYSTEM: "report", MAP_SYSTEM: "map", RATE_SYSTEM: "rate"}.get(system, "other")
        entry = self.kinds.setdefault(kind, {"calls": 0, "prompt_tokens": 0})
        entry["calls"] += 1
        entry["prompt_tokens"] += sum(count_tokens(m["content"]) for m in messages)
        prompt = messages[-1]["content"]
        if kind == "report":
            names = [ln.split("|")[0] for ln in prompt.splitlines() if ln.count("|") == 3][2:8] or ["the community"]
            return {
                "title": f"{names[0]} and related entities",
                "summary": f"This community links {', '.join(names[:4])}. " * 3,
                "rating": 5,
                "rating_explanation": "A fixed rating from the fake model.",
                "findings": [
                    {"summary": f"{n} is central", "explanation": f"{n} appears in several relationships of this community. " * 3}
                    for n in names[:5]
                ],
            }
        if kind == "rate":
            question = prompt.split("\n", 1)[0]
            report = prompt.split("Community report:", 1)[1]
            share = len(words(question) & words(report)) / max(1, len(words(question)))
            return {"rating": int(5 * share + 0.5)}
        if kind == "map":
            ids = re.findall(r"----- report (\S+) -----", prompt)
            return {"points": [{"description": f"A key point from report {i}.", "score": 50, "reports": [i]} for i in ids[:5]]}
        if "entities" in (schema or {}).get("properties", {}):
            text = prompt.split('"""')[1] if '"""' in prompt else prompt
            names = list(dict.fromkeys(re.findall(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*", text)))[:4] or ["Thing"]
            return {
                "entities": [{"name": n, "type": "PERSON", "description": f"{n} is mentioned."} for n in names],
                "relations": [
                    {"source": a, "target": b, "description": "mentioned together", "keywords": ["together"], "strength": 5}
                    for a, b in zip(names, names[1:])
                ],
            }
        return {"summary": "merged description"}



async def cost(quick: bool) -> dict[str, Any]:
    docs, questions = data.hotpotqa()
    questions = questions[: (5 if quick else 20)]
    out: dict[str, Any] = {"anchor_nano_graphrag": NANO_ANCHOR}

    async def build(mode: str) -> tuple[GraphRAGIndex, CountingResponder, FakeChatModel, int]:
        responder = CountingResponder()
        llm = FakeChatModel(responder, max_concurrency=16)
        index = GraphRAGIndex(HashingEmbedder(), llm=llm, extraction="offline", reports=mode, cache=False)  # type: ignore[arg-type]
        report = await index.ainsert(docs)
        return index, responder, llm, report.tokens

    for mode in ("eager", "lazy"):
        index, responder, llm, tokens = await build(mode)
        indexing = llm.usage.snapshot()
        out[f"index_{mode}"] = {
            "indexed_tokens": tokens,
            "communities": len(index.graph().communities),
            "levels": index.graph().levels(),
            "calls": indexing["calls"],
            "prompt_tokens": indexing["prompt_tokens"],
            "completion_tokens": indexing["completion_tokens"],
            "calls_per_1k_tokens": round(1000 * indexing["calls"] / tokens, 3),
            "prompt_tokens_per_1k_tokens": round(1000 * indexing["prompt_tokens"] / tokens, 1),
        }
        variants = {"dynamic": {"dynamic": True}}
        if mode == "eager":
            variants = {
                "static_level_0": {"dynamic": False, "level": 0},
                "static_level_2": {"dynamic": False, "level": 2},
                **variants,
            }
        for name, options in variants.items():
            search = index.as_retriever(mode="global", **options)
            rows = []
            for q in questions:
                before = llm.usage.snapshot()
                kinds_before = json.loads(json.dumps(responder.kinds))
                found = await search.asearch(q.question)
                after = llm.usage.snapshot()
                by_kind = {
                    k: responder.kinds[k]["calls"] - kinds_before.get(k, {"calls": 0})["calls"] for k in responder.kinds
                }
                rows.append(
                    {
                        "calls": after["calls"] - before["calls"],
                        "prompt_tokens": after["prompt_tokens"] - before["prompt_tokens"],
                        "map_calls": by_kind.get("map", 0),
                        "rating_calls": by_kind.get("rate", 0),
                        "report_calls": by_kind.get("report", 0),
                        "communities": found.stats.get("communities", 0),
                    }
                )
            mean = {k: round(sum(r[k] for r in rows) / len(rows), 1) for k in rows[0]}
            mean["share_of_anchor_prompt_tokens"] = round(mean["prompt_tokens"] / NANO_ANCHOR["prompt_tokens"], 4)
            out[f"global_{mode}_{name}"] = mean
        index.close()

    # LLM extraction cost per 1k tokens (one gleaning round), on the first 200 passages
    chunks = [
        Chunk(id=d.id, document_id=d.id, text=d.text, index=0, start=0, end=len(d.text), n_tokens=count_tokens(d.text))
        for d in docs[: (50 if quick else 200)]
    ]
    llm = FakeChatModel(CountingResponder(), max_concurrency=16)
    await LLMExtractor(llm, gleaning=1).aextract(chunks)
    tokens = sum(c.n_tokens for c in chunks)
    usage = llm.usage.snapshot()
    out["extraction_llm"] = {
        "chunks": len(chunks),
        "tokens": tokens,
        "calls_per_1k_tokens": round(1000 * usage["calls"] / tokens, 3),
        "prompt_tokens_per_1k_tokens": round(1000 * usage["prompt_tokens"] / tokens, 1),
    }
    return out


# -- 3. scale ------------------------------------------------------------------------------------


def planted(n: int, seed: int = 5) -> tuple[dict[str, Entity], dict[str, Relation]]:
    rng = random.Random(seed)
    entities: dict[str, Entity] = {}
    relations: dict[str, Relation] = {}
    groups: list[list[str]] = []
    i = 0
    while i < n:
        size = min(n - i, rng.randint(5, 30))
        group = [f"e{j}" for j in range(i, i + size)]
        groups.append(group)
        i += size
    for g, group in enumerate(groups):
        for eid in group:
            entities[eid] = Entity(id=eid, name=f"Entity {eid}", description=f"Entity {eid} belongs to group {g}.", source_chunk_ids=[f"c{g}"])
        for a in range(len(group)):
            for _ in range(3):
                b = rng.randrange(len(group))
                if b != a:
                    u, v = sorted((group[a], group[b]))
                    relations.setdefault(f"{u}|{v}", Relation(id=f"{u}|{v}", source=u, target=v, description=f"{u} works with {v}.", weight=1.0))
    for _ in range(len(groups)):  # sparse bridges
        ga, gb = rng.sample(range(len(groups)), 2)
        u, v = sorted((rng.choice(groups[ga]), rng.choice(groups[gb])))
        relations.setdefault(f"{u}|{v}", Relation(id=f"{u}|{v}", source=u, target=v, description="bridge", weight=1.0))
    return entities, relations


async def schedule_reports(writer: ReportWriter, communities: list[Any], graph: EntityGraph) -> tuple[Any, int]:
    """Every report written bottom-up by the kernel's group summariser, on a fresh in-memory store."""
    summarizer = GroupSummarizer(
        IndexStore.create(None, Manifest(method="bench")),
        "bench.report",
        build_input=lambda c, done: build_input(c, graph, done, 8000),
        write=lambda data: writer.awrite(data, graph),
        identity=writer.identity,
    )
    reports, counts = await summarizer.asummarize(communities)
    return reports, counts["written"]


async def scale(quick: bool) -> list[dict[str, Any]]:
    rows = []
    for n in (2_000, 10_000) if quick else (10_000, 100_000):
        entities, relations = planted(n)
        t = time.perf_counter()
        communities = cluster_hierarchy(EntityGraph.build(entities, relations).weighted(), max_cluster_size=10, seed=0xDEADBEEF)
        leiden = time.perf_counter() - t
        graph = EntityGraph.build(entities, relations, {c.id: c for c in communities})
        t = time.perf_counter()
        _, written = await schedule_reports(ReportWriter(None), communities, graph)
        offline = time.perf_counter() - t
        row = {
            "entities": n,
            "relations": len(relations),
            "communities": len(communities),
            "levels": graph.levels(),
            "leiden_seconds": round(leiden, 2),
            "offline_reports_seconds": round(offline, 2),
            "reports": written,
        }
        if n <= 10_000:
            llm = FakeChatModel(CountingResponder(), max_concurrency=16)
            t = time.perf_counter()
            await schedule_reports(ReportWriter(llm), communities, graph)
            row["fake_model_reports_seconds"] = round(time.perf_counter() - t, 2)
            row["fake_model_calls"] = llm.usage.calls
        rows.append(row)
    return rows


# -- report ----------------------------------------------------------------------------------------


def markdown(results: dict[str, Any]) -> str:
    q = results["quality"]
    lines = ["### Retrieval quality (offline)", "", "| data | mode | Recall@2 | Recall@5 | ms/query |", "|---|---|---|---|---|"]
    for mode in ("local", "drift", "naive"):
        r = q["hotpotqa"][mode]
        lines.append(f"| hotpotqa-100 | {mode} | {r['recall@2']:.3f} | {r['recall@5']:.3f} | {r['ms_per_query']} |")
    lines += ["", f"Medical proxy (answer content words in the first {MEDICAL_BUDGET} tokens, {q['medical']['questions']} questions):", "",
              "| mode | proxy |", "|---|---|"]
    for mode in ("local", "naive", "global"):
        lines.append(f"| {mode} | {q['medical'][mode]:.3f} |")
    c = results["cost"]
    lines += ["", "### Indexing cost (counting fake model)", "",
              "| reports | communities | calls | prompt tokens | calls / 1k indexed tokens | prompt tokens / 1k indexed tokens |",
              "|---|---|---|---|---|---|"]
    for mode in ("eager", "lazy"):
        r = c[f"index_{mode}"]
        lines.append(f"| {mode} | {r['communities']} | {r['calls']} | {r['prompt_tokens']} | {r['calls_per_1k_tokens']} | {r['prompt_tokens_per_1k_tokens']} |")
    e = c["extraction_llm"]
    lines.append(f"\nLLM extraction (gleaning 1): {e['calls_per_1k_tokens']} calls and {e['prompt_tokens_per_1k_tokens']} prompt tokens per 1k indexed tokens.")
    lines += ["", "### Global query cost (mean per query)", "",
              "| index | selection | calls | map calls | rating calls | report calls | prompt tokens | share of nano-graphrag's 425k |",
              "|---|---|---|---|---|---|---|---|"]
    for key, r in c.items():
        if key.startswith("global_"):
            _, mode, name = key.split("_", 2)
            lines.append(f"| {mode} | {name} | {r['calls']} | {r['map_calls']} | {r['rating_calls']} | {r['report_calls']} | {int(r['prompt_tokens'])} | {r['share_of_anchor_prompt_tokens']:.4f} |")
    lines += ["", "### Leiden and report scheduling", "",
              "| entities | relations | communities | levels | Leiden s | offline reports s | fake-model reports s (calls) |",
              "|---|---|---|---|---|---|---|"]
    for r in results["scale"]:
        fake = f"{r['fake_model_reports_seconds']} ({r['fake_model_calls']})" if "fake_model_reports_seconds" in r else "–"
        lines.append(f"| {r['entities']} | {r['relations']} | {r['communities']} | {r['levels']} | {r['leiden_seconds']} | {r['offline_reports_seconds']} | {fake} |")
    return "\n".join(lines)


async def main_async(quick: bool) -> dict[str, Any]:
    results = {
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "quick": quick,
        "quality": await quality(quick),
        "cost": await cost(quick),
        "scale": await scale(quick),
    }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = parser.parse_args(argv)
    results = asyncio.run(main_async(args.quick))
    RESULTS.mkdir(exist_ok=True)
    name = "graphrag-quick.json" if args.quick else "graphrag.json"
    (RESULTS / name).write_text(json.dumps(results, indent=2))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
