"""Agent benchmark (issue 19): what routing each question to an index and mode is worth, and
what the agent costs in model calls.

One corpus is indexed with two methods — GraphRAG (offline extraction) and HippoRAG — and the
agent of ``langgraph_rhizome.create_rag_agent`` runs over both, driven by the offline question
router (no model). Three agents differ only in their routes:

- ``router``: the rules of ``langgraph_rhizome.question_kind`` — specific questions to
  GraphRAG local, global ones to GraphRAG global, multi-hop ones to HippoRAG v2 (the defaults
  the indexes' mode descriptions give);
- ``always local``: every question to GraphRAG local;
- ``always global``: every question to GraphRAG global.

``always hipporag v2`` and ``best of three`` (per question, the best of the three single
routes: what a perfect router over these routes would reach) are given for reference.

``recall``
    hotpotqa-100: Recall@2 / Recall@5 of the passages the agent's tool call returned
    (10 hits, ranked as the harness ranks them), the routes taken, paired wins/losses
    against always local.
``proxy``
    graphrag-bench-medical: the answer-content proxy of the harness on the tool call's hits
    (2,000 tokens), per question type, and where the router sent each type.
``calls``
    Model calls per question for the agent with counting fakes, on the first 100 hotpotqa
    passages and 20 questions: the indexes are built with ``CountingChatModel(FakeChatModel(
    SchemaResponder()))`` (calls inside retrieval: GraphRAG's ratings and map steps, HippoRAG's
    fact filter), the agent's model is the offline router with every call counted, and its
    prompt tokens are what a model would be sent (system prompt, question, tool results).

    uv run python -m benchmarks.agents recall --write-docs
    uv run python -m benchmarks.agents proxy --write-docs        # --limit 300 for a sample
    uv run python -m benchmarks.agents calls --write-docs

Each part writes benchmarks/results/agents-<part>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from typing import Any

from langchain_core.callbacks import AsyncCallbackHandler
from langgraph_rhizome import create_rag_agent
from langgraph_rhizome.state import hits_from

from benchmarks import data, metrics
from benchmarks.__main__ import publish
from rhizome.core import HashingEmbedder
from rhizome.core.index.base import QUESTION_KINDS
from rhizome.core.models.counting import CountingChatModel
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.text import count_tokens
from rhizome.graphrag import GraphRAGIndex
from rhizome.hipporag import HippoRAGIndex

HITS = 10
AGENTS = {
    "router": None,
    "always local": "graph:local",
    "always global": "graph:global",
    "always hipporag v2": "memory:v2",
}


def build(documents: list[Any], llm: Any = None) -> dict[str, Any]:
    """The corpus as a GraphRAG and a HippoRAG index (hashing embedder, offline extraction)."""
    indexes = {"graph": GraphRAGIndex(HashingEmbedder(), llm=llm, extraction="offline", cache=False),
               "memory": HippoRAGIndex(HashingEmbedder(), llm=llm, extraction="offline", cache=False)}
    for index in indexes.values():
        index.insert(documents)
    return indexes


def agents(indexes: dict[str, Any], **options: Any) -> dict[str, Any]:
    """One offline agent per routing policy (see the module docstring)."""
    out = {}
    for name, target in AGENTS.items():
        routes = None if target is None else {kind: target for kind in QUESTION_KINDS}
        out[name] = create_rag_agent(None, indexes, routes=routes, k=HITS, **options)
    return out


async def ask(agent: Any, question: str, config: dict[str, Any] | None = None) -> tuple[str, list[Any]]:
    """The route the agent took (``tool:mode``) and the hits its tool call returned."""
    state = await agent.ainvoke({"messages": [("user", question)]}, config)
    call = state["messages"][1].tool_calls[0]
    hits = hits_from([d for m in state["messages"] if m.type == "tool" for d in m.artifact or []])
    return f"{call['name']}:{call['args'].get('mode')}", hits


async def run_all(indexes: dict[str, Any], questions: list[data.Question]) -> dict[str, dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    for name, agent in agents(indexes).items():
        routes, results, ms = [], [], []
        for q in questions:
            t0 = time.perf_counter()
            route, hits = await ask(agent, q.question)
            ms.append((time.perf_counter() - t0) * 1000)
            routes.append(route)
            results.append(hits)
        runs[name] = {"routes": routes, "hits": results, "ms": ms}
    return runs


# -- recall ------------------------------------------------------------------------------------
def recall() -> tuple[dict[str, Any], str]:
    documents, questions = data.hotpotqa()
    start = time.perf_counter()
    indexes = build(documents)
    build_s = time.perf_counter() - start
    runs = asyncio.run(run_all(indexes, questions))
    rows = []
    scores: dict[str, dict[int, list[float]]] = {}
    for name, run in runs.items():
        ranked = [metrics.ranked_documents(h) for h in run["hits"]]
        scores[name] = {k: [metrics.recall_at(r, q.supporting, k) for r, q in zip(ranked, questions)] for k in (2, 5)}
    singles = [n for n in AGENTS if n != "router"]
    scores["best of three"] = {k: [max(scores[n][k][i] for n in singles) for i in range(len(questions))] for k in (2, 5)}
    base = scores["always local"]
    for name, s in scores.items():
        run = runs.get(name)
        rows.append({
            "system": name,
            "recall@2": statistics.fmean(s[2]),
            "recall@5": statistics.fmean(s[5]),
            "recall@5_ci": [round(x, 4) for x in metrics.bootstrap_ci(s[5])],
            "vs_local": metrics.paired_counts(s[5], base[5]),
            "routes": dict(Counter(run["routes"])) if run else None,
            "agent_p50_ms": round(statistics.median(run["ms"]), 1) if run else None,
        })
    kinds = Counter(runs["router"]["routes"])
    by_type = defaultdict(Counter)
    for q, route in zip(questions, runs["router"]["routes"]):
        by_type[q.type][route] += 1
    for index in indexes.values():
        index.close()
    result = {"part": "recall", "data": "hotpotqa-100", "questions": len(questions), "index_seconds": round(build_s, 1),
              "rows": rows, "router_routes": dict(kinds), "routes_by_type": {t: dict(c) for t, c in by_type.items()}}
    lines = [
        f"hotpotqa-100, {len(questions)} questions (78 bridge, 22 comparison), hashing embedder, offline extraction, no model; "
        "the passages of the agent's tool call (10 hits). Reproduce: `uv run python -m benchmarks.agents recall`",
        "",
        "| agent | R@2 | R@5 | R@5 95% CI | W/L/T vs always local (R@5) | routes taken | agent p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["recall@5_ci"]
        wlt = "–" if r["system"] == "always local" else "/".join(str(r["vs_local"][x]) for x in ("wins", "losses", "ties"))
        routes = ", ".join(f"{k} {v}" for k, v in sorted((r["routes"] or {}).items())) or "per question, the best of the three"
        lines.append(f"| {r['system']} | {r['recall@2']:.3f} | {r['recall@5']:.3f} | {lo:.3f}–{hi:.3f} | {wlt} | {routes} | {r['agent_p50_ms'] or '–'} |")
    lines += ["", "Router routes by hotpotqa question type: " + "; ".join(
        f"{t}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())) for t, c in sorted(result["routes_by_type"].items()))]
    return result, "\n".join(lines)


# -- medical proxy -----------------------------------------------------------------------------
def proxy(limit: int | None, budget: int = 2000) -> tuple[dict[str, Any], str]:
    documents, questions = data.medical()
    if limit:
        questions = random.Random(0).sample(questions, min(limit, len(questions)))
    start = time.perf_counter()
    indexes = build(documents)
    build_s = time.perf_counter() - start
    runs = asyncio.run(run_all(indexes, questions))
    types = sorted({q.type for q in questions})
    rows = []
    for name, run in runs.items():
        per_type: dict[str, list[float]] = defaultdict(list)
        for hits, q in zip(run["hits"], questions):
            per_type[q.type].append(metrics.answer_coverage(metrics.budgeted_context(hits, budget), q.answer))
        row = {"system": name, **{t: statistics.fmean(per_type[t]) for t in types}}
        row["all"] = statistics.fmean(x for v in per_type.values() for x in v)
        rows.append(row)
    by_type: dict[str, Counter] = defaultdict(Counter)
    for q, route in zip(questions, runs["router"]["routes"]):
        by_type[q.type][route] += 1
    for index in indexes.values():
        index.close()
    command = "uv run python -m benchmarks.agents proxy" + (f" --limit {limit}" if limit else "")
    result = {"part": "proxy", "data": "graphrag-bench-medical", "questions": len(questions), "budget_tokens": budget,
              "index_seconds": round(build_s, 1), "rows": rows, "routes_by_type": {t: dict(c) for t, c in by_type.items()},
              "command": command}
    lines = [
        f"graphrag-bench-medical, {len(questions)} questions, context budget {budget} tokens, hashing embedder, offline "
        f"extraction, no model; the hits of the agent's tool call. Reproduce: `{command}`",
        "",
        "| agent | " + " | ".join(types) + " | all |",
        "|---|" + "---|" * (len(types) + 1),
    ]
    lines += [f"| {r['system']} | " + " | ".join(f"{r[t]:.3f}" for t in types) + f" | {r['all']:.3f} |" for r in rows]
    lines += ["", "| question type | router: specific → graph:local | multi-hop → memory:v2 | global → graph:global |", "|---|---|---|---|"]
    for t in types:
        c = by_type[t]
        lines.append(f"| {t} | {c['graph:local']} | {c['memory:v2']} | {c['graph:global']} |")
    return result, "\n".join(lines)


# -- model calls -------------------------------------------------------------------------------
class ModelCalls(AsyncCallbackHandler):
    """Counts the agent model's calls and the tokens of what it is sent."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0

    async def on_chat_model_start(self, serialized: Any, messages: list[list[Any]], **kwargs: Any) -> None:
        for batch in messages:
            self.calls += 1
            self.prompt_tokens += sum(count_tokens(m.text) for m in batch)


def calls(passages: int = 100, queries: int = 20) -> tuple[dict[str, Any], str]:
    documents, questions = data.hotpotqa()
    documents, questions = documents[:passages], questions[:queries]
    llm = CountingChatModel(FakeChatModel(SchemaResponder()))
    indexes = build(documents, llm=llm)
    rows = []
    for name, agent in agents(indexes).items():
        llm.reset()
        counter = ModelCalls()
        routes = []

        async def run(agent: Any = agent, counter: ModelCalls = counter, routes: list[str] = routes) -> None:
            for q in questions:
                route, _ = await ask(agent, q.question, {"callbacks": [counter]})
                routes.append(route)

        asyncio.run(run())
        inside = llm.usage.snapshot()
        rows.append({
            "system": name,
            "routes": dict(Counter(routes)),
            "agent_calls": counter.calls / queries,
            "agent_prompt_tokens": round(counter.prompt_tokens / queries),
            "retrieval_calls": inside["calls"] / queries,
            "retrieval_prompt_tokens": round(inside["prompt_tokens"] / queries),
            "total_calls": (counter.calls + inside["calls"]) / queries,
        })
    for index in indexes.values():
        index.close()
    result = {"part": "calls", "data": f"hotpotqa-100, first {passages} passages", "questions": queries,
              "model": "agent: offline router, counted; indexes: CountingChatModel(FakeChatModel(SchemaResponder()))", "rows": rows}
    lines = [
        f"hotpotqa-100 (first {passages} passages), {queries} questions; the indexes built and queried with "
        "`CountingChatModel(FakeChatModel(SchemaResponder()))`, the agent's model the offline router with every call "
        "counted (prompt tokens: tiktoken over the messages a model would be sent). Reproduce: `uv run python -m benchmarks.agents calls`",
        "",
        "| agent | routes taken | agent model calls / q | agent prompt tok / q | calls inside retrieval / q | their prompt tok / q | all model calls / q |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        routes = ", ".join(f"{k} {v}" for k, v in sorted(r["routes"].items()))
        lines.append(f"| {r['system']} | {routes} | {r['agent_calls']:.2f} | {r['agent_prompt_tokens']:,} | {r['retrieval_calls']:.2f} | "
                     f"{r['retrieval_prompt_tokens']:,} | {r['total_calls']:.2f} |")
    return result, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    sub.add_parser("recall").add_argument("--write-docs", action="store_true")
    p = sub.add_parser("proxy")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--write-docs", action="store_true")
    sub.add_parser("calls").add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    if args.part == "recall":
        (result, table), title = recall(), "Agents: routing and recall, hotpotqa-100 (hashing)"
    elif args.part == "proxy":
        (result, table), title = proxy(args.limit), "Agents: routing and the medical proxy (hashing)"
    else:
        (result, table), title = calls(), "Agents: model calls per question (counting fakes)"
    publish(f"agents-{args.part}", title, result, table, args.write_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
