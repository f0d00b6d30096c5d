"""Render the benchmark results (``benchmarks/results/*.json``) into ``docs/results/``: one page
per suite, every number a table cell read from a results file, each section with the command
that reproduces it.

    uv run python -m benchmarks render            # write docs/results/*.md
    uv run python -m benchmarks render --check    # exit 1 if a page differs from its rendering

Standard library only, and deterministic: the same JSON gives the same bytes. ``PAGES`` says
which file goes on which page; a results file on no page is listed on the index page, so none
goes unseen. The harness's own tables (``retrieval_table``, ``proxy_table``, ``cost_table``,
``scale_table``) live here, so what a run prints is what its page shows.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUT = ROOT / "docs" / "results"
LONG_CELL = 100
"""A text longer than this goes below its table as a numbered note, not into a cell."""
MANY = 24
"""A list or mapping with more items than this (per-question rankings...) stays in the JSON."""


# -- the harness's tables ----------------------------------------------------------------------
def _delta(row: dict[str, Any], result: dict[str, Any], k: int) -> str:
    """A row's change in Recall@k against dense retrieval, with its 95 % interval (a row saved
    before the intervals were kept: the change alone)."""
    if f"delta_recall@{k}_ci" not in row:
        dense = next(r for r in result["rows"] if r.get("baseline"))
        return f"{row[f'recall@{k}'] - dense[f'recall@{k}']:+.3f}"
    lo, hi = row[f"delta_recall@{k}_ci"]
    return f"{row[f'delta_recall@{k}']:+.3f} ({lo:+.3f}, {hi:+.3f})"


def retrieval_table(result: dict[str, Any]) -> str:
    """Recall@2 / Recall@5 of every system against the dense baseline (``naive``)."""
    extraction = (f" {result['extraction']}" + (f" (`{result['openie']}`)" if result.get("openie") else "") + " extraction,"
                  if result.get("extraction") else "")
    head = (f"{result['data']}, {result['questions']} questions, embedder `{result['embedder']}`,{extraction} "
            "no chat model. Dense baseline: `naive`.")
    if result.get("command"):
        head += f" Reproduce: `{result['command']}`" + "".join(f"; rows re-run with `{c}`" for c in result.get("rerun", []))
    lines = [
        head,
        "",
        "| system | R@2 | ΔR@2 vs dense (95% CI) | W/L R@2 | R@5 | ΔR@5 vs dense (95% CI) | W/L/T R@5 | ΔR@2 / ΔR@5, half A · half B | p50 ms | p50 × dense | index s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        if r["baseline"]:
            name, d2, w2, d5, wlt, halves = f"{r['system']} (dense baseline)", "–", "–", "–", "–", "–"
        else:
            name, d2, d5 = r["system"], _delta(r, result, 2), _delta(r, result, 5)
            w2 = "/".join(str(r["vs_dense"]["recall@2"][x]) for x in ("wins", "losses"))
            wlt = "/".join(str(r["vs_dense"]["recall@5"][x]) for x in ("wins", "losses", "ties"))
            halves = " · ".join(
                f"{h['delta_recall@2']:+.3f} / {h['delta_recall@5']:+.3f}" for h in (r.get("halves") or {}).values() if "delta_recall@2" in h
            ) or "–"
        seconds = "reused" if r["index_seconds"] is None else r["index_seconds"]
        lines.append(
            f"| {name} | {r['recall@2']:.3f} | {d2} | {w2} | {r['recall@5']:.3f} | {d5} | {wlt} | {halves} | "
            f"{r['query_p50_ms']} | {r['p50_x_dense']:.2f} | {seconds} |"
        )
    split = next((r.get("halves") for r in result["rows"] if r.get("halves")), None)
    if split:
        lines += ["", f"Halves by the parity of the SHA-1 of each question id (`benchmarks.harness.half`): A {split['A']['questions']} "
                      f"questions, B {split['B']['questions']}."]
    return "\n".join(lines)


def proxy_table(result: dict[str, Any]) -> str:
    """Share of the reference answers' content words in each system's context, per question type."""
    types = [k for k in result["rows"][0] if k not in ("system", "all")] if result["rows"] else []
    lines = [
        f"graphrag-bench-medical, {result['questions']} questions, context budget {result['budget_tokens']} tokens"
        + (f", embedder `{result['embedder']}`." if result.get("embedder") else "."),
        "",
        "| system | " + " | ".join(types) + " | all |",
        "|---|" + "---|" * (len(types) + 1),
    ]
    for r in result["rows"]:
        lines.append(f"| {r['system']} | " + " | ".join(f"{r[t]:.3f}" for t in types) + f" | {r['all']:.3f} |")
    return "\n".join(lines)


def cost_table(result: dict[str, Any]) -> str:
    """Model calls and tokens per indexed 1k corpus tokens and per query."""
    lines = [
        f"{result['data']}; {result['queries']} queries; every request counted with tiktoken by `{result['model']}`.",
        "",
        "| system | index calls / 1k tok | index prompt tok / 1k | index completion tok / 1k | calls / query | prompt tok / query | completion tok / query |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['system']} | {r['index_calls_per_1k']} | {r['index_prompt_tokens_per_1k']:,} | {r['index_completion_tokens_per_1k']:,} | "
            f"{r['query_calls']} | {r['query_prompt_tokens']:,} | {r['query_completion_tokens']:,} |"
        )
    return "\n".join(lines)


def scale_growth(result: dict[str, Any]) -> dict[str, tuple[int, int, float]]:
    """Per method, the exponent k of CPU ∝ size^k between its smallest and largest measured size."""
    by_method: dict[str, list[tuple[int, float]]] = {}
    for r in result["rows"]:
        if r.get("index_cpu_seconds"):
            by_method.setdefault(r["method"], []).append((r["size"], r["index_cpu_seconds"]))
    out = {}
    for method, points in by_method.items():
        (a, ca), (b, cb) = min(points), max(points)
        if b > a:
            out[method] = (a, b, math.log(cb / ca) / math.log(b / a))
    return out


CORPUS_NAMES = {
    "places": "the `places` corpus: two of about n/10 + n/50 places per sentence, at most 2,490, drawn uniformly",
    "heaps": "the `heaps` corpus: two entities per sentence, Zipfian, from 20·n^0.6 distinct ones",
}
"""The synthetic corpora of ``benchmarks.harness.CORPORA`` as a table names them (a results file
without ``corpus`` predates issue 60 and used ``places``)."""


def scale_table(result: dict[str, Any]) -> str:
    """Indexing time, CPU and memory, and query latency, per method and corpus size."""
    lines = [
        f"Synthetic one-chunk documents ({CORPUS_NAMES[result.get('corpus', 'places')]}), offline (no model), hashing embedder; "
        "query latency excludes any model. "
        "CPU: process time of the insert call; growth: the exponent of CPU time from the method's smallest to its largest size.",
        "",
        "| method | documents | index wall (s) | index CPU (s) | chunks/s | query p50 / p95 (ms), per mode | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"| {r['method']} | {r['size']:,} | – | – | – | {r['error']} | – |")
            continue
        lat = "; ".join([f"{m} {v['p50']} / {v['p95']}" for m, v in r["latency_ms"].items()] + ([f"({r['note']})"] if r.get("note") else []))
        cpu = r.get("index_cpu_seconds", "–")
        if "warm_up_cpu_seconds" in r:
            cpu = f"{cpu} (warm-up apart: {r['warm_up_cpu_seconds']})"
        rss = f"{r['peak_rss_mb']}" + "".join(f"; {label} {r[key]}" for key, label in (("disk_mb", "on disk (MB)"), ("open_seconds", "opened again (s)"),
                                                                                   ("memory_gb", "budget (GB)")) if key in r)
        lines.append(f"| {r['method']} | {r['size']:,} | {r['index_seconds']} | {cpu} | {r['chunks_per_second']:,} | {lat or '–'} | {rss} |")
    growth = scale_growth(result)
    if growth:
        lines += ["", "| method | sizes | CPU growth exponent |", "|---|---|---|"]
        lines += [f"| {m} | {a:,} → {b:,} | {e:.2f} |" for m, (a, b, e) in growth.items()]
    return "\n".join(lines)


def ann_table(result: dict[str, Any]) -> str:
    """The out-of-core chunk collection against exact search (``benchmarks/ann.py``)."""
    default = result.get("default_candidates", 96)
    lines = [
        "| chunks | codes | collection in memory: exact / out of core (MB) | build CPU (s) | codes per vector × bits | candidates re-ranked | "
        "recall@10 seen | recall@10 unseen | query CPU ms: out of core / exact |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        for run in r["runs"]:
            lines.append(
                f"| {r['size']:,} | {r.get('codes', 'pq')} | {r['exact_mb']} / {r['out_of_core_mb']} | {r['build_cpu_seconds']} | {r['m']} × {r['nbits']} | "
                f"{run['candidates']}{' (default)' if run['candidates'] == default else ''} | {run['recall@10_seen']} | "
                f"{run['recall@10_unseen']} | {run['query_cpu_ms']} / {r['exact_query_cpu_ms']} |"
            )
    return "\n".join(lines)


def walk_table(result: dict[str, Any]) -> str:
    """The evidence walk on a large index (``benchmarks/walk_scale.py``): power iteration against
    the local walk, or exact search against the sieves, each row's two sides in turn."""
    lines = [
        "| method | documents | graph: nodes / links | mode | walk or search | query p50 / p95 ms | the walk's p50 ms | source document first / in the first ten "
        "| same first five / first ten as the side above | load average |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        sides = r.get("sides", ["power iteration", "local"])
        for mode, one in r["modes"].items():
            for walk in sides:
                w = one[walk]
                same = f"{one['same_first_five']} / {one['same_first_ten']} of {r['queries']}" if walk == sides[1] else "–"
                lines.append(
                    f"| {r['method']} | {r['size']:,} | {r['nodes']:,} / {r['links']:,} | {mode} | {walk} | {w['p50_ms']} / {w['p95_ms']} | "
                    f"{w['walk_p50_ms']} | {w['source_first']} / {w['source_in_ten']} of {r['queries']} | {same} | "
                    f"{min(r['load_average'])}–{max(r['load_average'])} |"
                )
    return "\n".join(lines)


# -- GORAG ---------------------------------------------------------------------------------------
GORAG_ROWS = {
    "gorag_tfidf": "GORAG, TF-IDF only (default)",
    "gorag_minilm": "GORAG with MiniLM (default)",
    "gorag_published": "GORAG as published, offline (`as_published()`)",
    "nearest_tfidf": "baseline: TF-IDF 1-nearest labelled example",
    "centroid_minilm": "baseline: MiniLM nearest centroid, label name as one more example",
    "name_tfidf": "baseline: label named in the text, else TF-IDF 1-NN (name rule)",
    "name_minilm": "baseline: label named in the text, else MiniLM centroid + name (name rule)",
}


def _fmt(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def gorag_row_names(online_mode: str) -> dict[str, str]:
    """The table rows' names; GORAG's name its online mode when it is not the default."""
    if online_mode == "deferred":
        return GORAG_ROWS
    mode = f'`online_mode="{online_mode}"`'
    return {**GORAG_ROWS, "gorag_tfidf": f"GORAG, TF-IDF only, {mode}", "gorag_minilm": f"GORAG with MiniLM, {mode}"}


def gorag_tables(results: dict[str, Any]) -> str:
    """gorag-wos rounds: cumulative accuracy, candidates and order sensitivity, per test file."""
    names = gorag_row_names(results.get("online_mode", "deferred"))
    lines: list[str] = []
    command = results.get("command", "")
    limit, orders = results.get("limit"), results.get("orders", 1)
    texts = f"the first {limit} of each test file" if limit else "every text of each test file"
    dev = results.get("stream", "test texts") != "test texts"
    if dev:
        texts = f"the round's {results['stream']} (never the test files; R_r counts those of rounds 1..r)"
    spread = (f"order sensitivity = max − min of R_r over {orders} orders (file order and seeded shuffles of "
              "each round's test texts)" if orders > 1 else "file order only (no shuffles)")
    lines.append(f"Command: `{command.strip()}`; {'stream' if dev else 'test texts'} per round: {texts}; {spread}."
                 + ("" if dev else " R2 re-tests round 1 only (the round-2 test file is not published).")
                 + (f" Baselines re-run alone and merged in by `{results['baselines_command']}`; the name rule "
                    "(a label whose name occurs in the text wins, longest name first) was added after an audit."
                    if results.get("baselines_command") else "") + "\n")
    for shots, entry in results["shots"].items():
        lines.append(f"#### {shots}-shot: cumulative accuracy R1..R4\n")
        lines.append("| classifier | R1 | R2 | R3 | R4 |\n|---|---|---|---|---|")
        for key, name in names.items():
            if key in entry:
                lines.append(f"| {name} | " + " | ".join(_fmt(r["cumulative_accuracy"]) for r in entry[key]["rounds"]) + " |")
        paper = results["paper_gorag_llama3"].get(shots) or results["paper_gorag_llama3"].get(int(shots))
        if not dev:
            lines.append("| paper: GORAG, LLaMA3-8B, all 4 test files (Table 2) | " + " | ".join(f"{v:.4f}" for v in paper) + " |")
        lines.append(f"\n#### {shots}-shot: candidates (recall = oracle ceiling of a chooser among them) and order sensitivity\n")
        lines.append("| classifier | round | candidate recall | mean candidates | indexed online (right) | ms/query | accuracy spread over shuffles |")
        lines.append("|---|---|---|---|---|---|---|")
        for key in ("gorag_tfidf", "gorag_minilm", "gorag_published"):
            if key not in entry:
                continue
            spread_by_round = entry.get(f"{key}_shuffles", {}).get("spread")
            for i, r in enumerate(entry[key]["rounds"]):
                lines.append(
                    f"| {names[key]} | {r['round']} | {_fmt(r['candidate_recall'], 3)} | {_fmt(r['mean_candidates'], 2)} | "
                    f"{r['indexed_online']} ({r['indexed_online_correct']}) | {_fmt(r['ms_per_query'], 1)} | "
                    f"{_fmt(spread_by_round[i], 4) if spread_by_round else '–'} |"
                )
        lines += _gorag_file_table(entry, dev, names)
        lines.append("")
    return "\n".join(lines)


def _gorag_file_table(entry: dict[str, Any], dev: bool, names: dict[str, str]) -> list[str]:
    """Each round's passes one file at a time (runs saved before files were kept have none)."""
    keys = [key for key in ("gorag_tfidf", "gorag_minilm") if key in entry and "files" in entry[key]["rounds"][0]]
    if not keys:
        return []
    source = "stream" if dev else "test file"
    lines = [f"\n#### per {source}: the first pass over the round's new labels, then the re-tests\n",
             f"| classifier | round (new labels) | {source} of round | pass | texts | accuracy | candidate recall "
             "| mean candidates | candidates that are new labels |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key in keys:
        for r in entry[key]["rounds"]:
            for row in r["files"]:
                first = row["file"] == r["round"]
                lines.append(
                    f"| {names[key]} | {r['round']} ({r['new_labels']}) | {row['file']} | {'first' if first else 're-test'} | "
                    f"{row['texts']} | {_fmt(row['accuracy'])} | {_fmt(row['candidate_recall'], 3)} | "
                    f"{_fmt(row['mean_candidates'], 2)} | {_fmt(row['new_label_share'], 3)} |"
                )
    return lines


def gorag_dev_cut_table(results: dict[str, Any]) -> str:
    """Candidate recall and size of each coverage / cap rule on the dev split."""
    lines = [f"Command: `{results['command']}`; dev texts only (never the test files), no online indexing, "
             "every label scored; a rule keeps the most probable labels until they hold the coverage or reach the cap. "
             "The rules read the plain probabilities: the lexical background of the shipped offline cut is not applied here "
             "(this table is how the coverage and cap were chosen, before it; see the dev-stream tables).", ""]
    for shots, entry in results["shots"].items():
        lines += [f"#### {shots}-shot: candidate recall / mean candidates on the dev split "
                  f"({' / '.join(str(n) for n in entry['texts'])} texts at R1–R4)", "",
                  "| coverage / cap | R1 | R2 | R3 | R4 |", "|---|---|---|---|---|"]
        for rule, values in entry["rules"].items():
            lines.append(f"| {rule} | " + " | ".join(f"{rec:.3f} / {size:.2f}" for rec, size in values) + " |")
        if "accuracy" in entry:
            lines.append("| accuracy of the label (any rule) | " + " | ".join(f"{a:.3f}" for a in entry["accuracy"]) + " |")
        lines.append("")
    return "\n".join(lines)


# -- peers and a flaky server -------------------------------------------------------------------
PEER_SYSTEMS = ["rhizome-lightrag", "lightrag-hku", "rhizome-graphrag", "nano-graphrag", "rhizome-naive", "llama-index-vector", "llama-index-bm25"]
PEER_PAIRS = [("rhizome-lightrag", "lightrag-hku"), ("rhizome-graphrag", "nano-graphrag"), ("rhizome-naive", "llama-index-vector"), ("rhizome-naive", "llama-index-bm25")]
FLAKY_MAX_RUNS = 10
"""The runs ``benchmarks.robustness`` makes at most before it gives up on finishing an index."""


def _peer_graph(r: dict[str, Any]) -> str:
    g = r.get("graph")
    return f"{g['entities']:,} / {g['relations']:,}" if g else "–"


def peers_table(result: dict[str, Any]) -> str:
    by = {r["system"]: r for r in result["rows"]}
    g = result["oracle_graph"]
    lines = [
        f"hotpotqa-100, first {result['passages']} passages, {result['queries']} queries; every extraction prompt answered by one oracle "
        f"(`benchmarks/oracle.py`: the same {g['entity_mentions']:,} entity and {g['relation_mentions']:,} relation mentions, "
        f"{g['entities']:,} distinct entities and {g['relations']:,} distinct pairs, for every system), other calls by an instant counting fake; "
        "hashing embeddings. Graph = entities / relations each system stored after indexing. Non-model CPU = process time of the "
        "indexing call less the time inside the fake model and the embedder." + (f" {result['note']}" if result.get("note") else ""),
        "",
        "| system | graph | index calls / 1k tok | index prompt tok / 1k | index time (s) | index non-model CPU (s) | calls / query | prompt tok / query | query time (ms) | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in PEER_SYSTEMS:
        r = by.get(name)
        if r is None:
            continue
        if "error" in r:
            lines.append(f"| {name} | not run: {r['error']} | | | | | | | | |")
            continue
        per_1k = 1000 / max(1, r["corpus_tokens"])
        cpu = r.get("index_nonmodel_cpu_seconds")  # llama-index embeds inside its own calls: not separable
        lines.append(
            f"| {name} | {_peer_graph(r)} | {r['index']['calls'] * per_1k:.2f} | {r['index']['prompt_tokens'] * per_1k:,.0f} | {r['index_seconds']:.1f} | "
            f"{'–' if cpu is None else f'{cpu:.1f}'} | {r['query']['calls'] / result['queries']:.1f} | {r['query']['prompt_tokens'] / result['queries']:,.0f} | "
            f"{r['query_seconds'] * 1000:.1f} | {r['peak_rss_mb']} |"
        )
    lines += ["", "Ratios, peer / ours (above 1: the peer spends more), with both graphs:", "",
              "| ours | peer | graphs (ours; peer) | index prompt tokens | index time | index non-model CPU | query prompt tokens | query time | peak RSS |",
              "|---|---|---|---|---|---|---|---|---|"]
    for ours, peer in PEER_PAIRS:
        a, b = by.get(ours), by.get(peer)
        if not a or not b or "error" in a or "error" in b:
            continue

        def ratio(x: float, y: float) -> str:
            return f"{y / x:.1f}×" if x else ("–" if not y else "∞")

        cpu = "–"
        if "index_nonmodel_cpu_seconds" in a and "index_nonmodel_cpu_seconds" in b:
            cpu = ratio(a["index_nonmodel_cpu_seconds"], b["index_nonmodel_cpu_seconds"])
        lines.append(
            f"| {ours} | {peer} | {_peer_graph(a)}; {_peer_graph(b)} | {ratio(a['index']['prompt_tokens'], b['index']['prompt_tokens'])} | "
            f"{ratio(a['index_seconds'], b['index_seconds'])} | {cpu} | "
            f"{ratio(a['query']['prompt_tokens'], b['query']['prompt_tokens'])} | {ratio(a['query_seconds'], b['query_seconds'])} | {ratio(a['peak_rss_mb'], b['peak_rss_mb'])} |"
        )
    return "\n".join(lines)


def server_table(result: dict[str, Any]) -> str:
    """``rhizome serve`` against in-process calls and ``rhizome query``; throughput; memory (benchmarks/server.py)."""
    head = (f"{result['data']} ({result['embedder']} embedder, offline, k = {result['k']}), one server process beside this one on a "
            f"{result['cpus']}-core machine shared with other work: load average (1, 5, 15 min) {result['load_before']} before, "
            f"{result['load_after']} after.")
    lines = [head, "", "### Latency: HTTP against the same call in process", "",
             "Each question asked both ways in turn (the order alternating); \"HTTP adds\" is the median of the per-question "
             f"differences. Load average after this part: {result['load_after_latency']}.", "",
             "| system | questions | in process p50 ms | in process p99 ms | HTTP p50 ms | HTTP p99 ms | HTTP adds, p50 ms | difference of p50s, ms |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['system']} | {r['questions']} | {r['in_process_p50_ms']} | {r['in_process_p99_ms']} | {r['http_p50_ms']} | "
              f"{r['http_p99_ms']} | {r['http_adds_p50_ms']} | {r['difference_of_p50s_ms']} |" for r in result["latency"]]
    lines += ["", "The CPU of the same calls, which the machine's other work disturbs less than their wall time: the mean per call "
              "in process (this process), and per HTTP request in the server process (from /proc, in clock ticks, summed over "
              "the questions) and in the client (this process, httpx).", "",
              "| system | in process CPU ms | HTTP: server CPU ms | HTTP: client CPU ms | CPU HTTP adds, ms |", "|---|---|---|---|---|"]
    lines += [f"| {r['system']} | {r['in_process_cpu_ms']} | {r['server_cpu_ms']} | {r['client_cpu_ms']} | "
              f"{round(r['server_cpu_ms'] + r['client_cpu_ms'] - r['in_process_cpu_ms'], 2)} |" for r in result["latency"]]
    lines += ["", "### One `rhizome query` process per question", "",
              f"Start Python, open the index, search, print; load average after: {result['load_after_one_process']}.", "",
              "| system | runs | wall p50 ms | CPU p50 ms | × HTTP p50 |", "|---|---|---|---|---|"]
    http = {r["system"]: r["http_p50_ms"] for r in result["latency"]}
    lines += [f"| {r['system']} | {r['runs']} | {r['wall_p50_ms']:,} | {r['cpu_p50_ms']:,} | {r['wall_p50_ms'] / http[r['system']]:,.0f} |"
              for r in result["one_process"]]
    lines += ["", "### Throughput", "",
              "Concurrent clients, one connection each; server CPU is the server process's user + system time per request.", "",
              "| system | clients | requests | requests/s | p50 ms | p99 ms | server CPU ms / request | load average |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['system']} | {r['clients']} | {r['requests']} | {r['requests_per_s']} | {r['p50_ms']} | {r['p99_ms']} | "
              f"{r['server_cpu_ms_per_request']} | {', '.join(map(str, r['load']))} |" for r in result["throughput"]]
    lines += ["", "### Memory", "",
              "Resident set of the server process (`/proc/PID/status`), the sample corpus of `rhizome demo` indexed offline.", "",
              "| server | workspaces | modes queried | RSS after start MiB | RSS after a query per mode MiB | peak RSS MiB |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['server']} | {r['workspaces']} | {r['modes_queried']} | {r['rss_after_start_mib']} | {r['rss_mib_after_queries']} | "
              f"{r['peak_rss_mib_after_queries']} |" for r in result["memory"]]
    return "\n".join(lines)


def _flaky_work(run: dict[str, Any]) -> str:
    unfinished = run.get("index_work_unfinished")
    return "done" if not unfinished else f"pending ({unfinished.split(':')[0]})"


def robustness_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| method | invalid / busy | done after run 1 | failed in run 1 (why) | whole-index work after run 1 | done after re-run | whole-index work after re-run | requests run 1 / re-run | answers re-paid | runs until all done |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        f, s = r["first_run"], r["second_run"]
        why = ", ".join(f["reasons"]) or "-"
        lines.append(
            f"| {r['method']} | {r['invalid_rate']:.0%} / {r['busy_rate']:.0%} | {f['done'] / r['documents']:.1%} ({f['done']}/{r['documents']}) "
            f"| {f['failed']} ({why}) | {_flaky_work(f)} | {s['done'] / r['documents']:.1%} | {_flaky_work(s)} | {f['requests']} / {s['requests']} | {r['repaid_answers']} | {r.get('runs_until_complete') or f'more than {FLAKY_MAX_RUNS}'} |"
        )
    return "\n".join(lines)


# -- faults --------------------------------------------------------------------------------------
def faults_table(outcomes: list[dict[str, Any]]) -> str:
    """Fault-injection cases held / tried, per kind of case and method; an index directory's
    cases first, then (rows marked PostgreSQL) those of an index in PostgreSQL."""
    methods = sorted({o["method"] for o in outcomes})
    groups: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        group = " ".join(o["case"].split()[:2]) if o["family"] == "crash" else o["case"]
        where = "PostgreSQL " if o.get("backend", "sqlite") == "postgres" else ""
        groups[f"{where}{o['family']}: {group}"][o["method"]].append(o["held"])
    lines = ["| case | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for group, by_method in groups.items():
        cells = [f"{sum(by_method[m])} / {len(by_method[m])}" if by_method[m] else "–" for m in methods]
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
    backends = {o.get("backend", "sqlite") for o in outcomes}
    if "postgres" in backends:
        lines.append("| PostgreSQL corruption: damaged files | " + " | ".join(["does not apply¹"] * len(methods)) + " |")
    held = sum(o["held"] for o in outcomes)
    lines += ["", f"{held} held of {len(outcomes)} tried."]
    for backend, name in (("sqlite", "Index directories"), ("postgres", "PostgreSQL")):
        ran = [o for o in outcomes if o.get("backend", "sqlite") == backend]
        if ran and len(backends) > 1:
            lines[-1] += f" {name}: {sum(o['held'] for o in ran)} held of {len(ran)}."
    if "postgres" in backends:
        lines += ["", "¹ An index in PostgreSQL is a schema: no snapshot, manifest, records or lock file to damage "
                      "(the manifest lives in the records, vectors in `vector` columns), so its kills land before or "
                      "after a commit only and the damaged-file cases have no counterpart; what the server keeps "
                      "durable is the server's."]
    failed = [o for o in outcomes if not o["held"]]
    if failed:
        lines += ["", "Not held:", *[f"- {o['method']}{' (PostgreSQL)' if o.get('backend') == 'postgres' else ''}: {o['case']}: {o['detail']}" for o in failed]]
    return "\n".join(lines)


# -- any other results file ----------------------------------------------------------------------
def cell(value: Any, notes: list[str]) -> str | None:
    """``value`` as a table cell; ``None`` when it is too large for one (it stays in the JSON).
    A long text becomes a numbered note below the table."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "–"
        return f"{round(value, 3):,}" if abs(value) >= 1 or value == 0 else f"{value:.3g}"
    if isinstance(value, str):
        text = value.replace("|", "\\|").replace("\n", " ")
        if len(text) > LONG_CELL:
            notes.append(text)
            return f"see note {len(notes)}"
        return text
    if isinstance(value, list):
        if len(value) > MANY or any(isinstance(v, (dict, list)) for v in value):
            return None
        items = [cell(v, notes) or "…" for v in value]
        return " / ".join(items) if items else "–"
    if isinstance(value, dict):
        if len(value) > MANY or any(isinstance(v, (dict, list)) and not _flat_dict(v) for v in value.values()):
            return None
        if not value:
            return "–"
        parts: list[str] = []
        for k, v in value.items():
            inner = cell(v, notes)
            if inner is None:
                return None
            parts.append(f"{k} {inner}")
        return "; ".join(parts)
    return str(value)


def _flat_dict(value: Any) -> bool:
    return isinstance(value, dict) and len(value) <= 8 and all(not isinstance(v, (dict, list)) for v in value.values())


def _rows_of(value: Any) -> list[dict[str, Any]] | None:
    """``value`` as table rows: a list of mappings, or a mapping of mappings (its keys first)."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return value
    if (isinstance(value, dict) and value and len(value) <= 60 and all(isinstance(v, dict) for v in value.values())
            and all(_scalarish(v) for v in value.values())):
        return [{"": k, **v} for k, v in value.items()]
    return None


def _scalarish(row: dict[str, Any]) -> bool:
    """A mapping whose values fit a row: scalars, short lists, small flat mappings, or big
    per-question data (left out)."""
    return not any((isinstance(v, dict) and not _flat_dict(v) and len(v) <= MANY)
                   or (isinstance(v, list) and any(isinstance(x, dict) for x in v)) for v in row.values())


def _explode(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A row holding one list of mappings (a run per setting) becomes one row per item, the
    parent's fields repeated."""
    out = []
    for row in rows:
        nested = [k for k, v in row.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        if len(nested) != 1:
            out.append(row)
            continue
        key = nested[0]
        parent = {k: v for k, v in row.items() if k != key}
        out += [{**parent, **{f"{key}.{k}": v for k, v in item.items()}} for item in row[key]]
    return out


def _flatten(row: dict[str, Any]) -> dict[str, Any]:
    """Nested mappings of a row as ``outer.inner`` columns (two levels at most)."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, dict) and v and len(v) <= MANY and not _flat_dict(v):
            for k2, v2 in v.items():
                out[f"{k}.{k2}"] = v2
        else:
            out[k] = v
    return out


def generic_table(rows: list[dict[str, Any]]) -> str:
    """Rows as one table: a column per key (in first-seen order), numbers rounded to three
    decimals, large values left in the JSON and named below the table."""
    rows = [_flatten(r) for r in _explode(rows)]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    notes: list[str] = []
    cells = [[cell(r[c], notes) if c in r else "–" for c in columns] for r in rows]
    kept = [i for i, c in enumerate(columns) if any(row[i] is not None for row in cells)]
    left = [c for i, c in enumerate(columns) if i not in kept]
    header = [columns[i] or "" for i in kept]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row[i] or "…" for i in kept) + " |" for row in cells]
    if left:
        lines += ["", "In the JSON only: " + ", ".join(f"`{c}`" for c in left) + "."]
    lines += [f"\n{n + 1}. {text}" for n, text in enumerate(notes)]
    return "\n".join(lines)


def generic(data: Any, depth: int = 4) -> str:
    """Any results file: its settings as a line, each list of records as a table, each nested
    mapping as a titled part."""
    rows = _rows_of(data)
    if rows is not None:
        return generic_table(rows)
    if not isinstance(data, dict):
        notes: list[str] = []
        return cell(data, notes) or "(in the JSON only)"
    settings: list[tuple[str, str]] = []
    parts: list[str] = []
    notes = []
    for key, value in data.items():
        if key in ("command", "source", "suite", "note"):
            continue
        if isinstance(value, str) and "\n|" in value:  # a table the run printed: its figures are the file's own fields
            continue
        rows = _rows_of(value)
        if rows is not None:
            parts.append(generic_table(rows) if key == "rows" else f"{'#' * depth} {key}\n\n{generic_table(rows)}")
            continue
        text = cell(value, notes)
        if text is not None:
            settings.append((key, text))
        elif isinstance(value, dict) and depth < 6:
            parts.append(f"{'#' * depth} {key}\n\n{generic(value, depth + 1)}")
        else:
            settings.append((key, "(in the JSON only)"))
    lines = []
    if settings and all(v == "(in the JSON only)" for _, v in settings) and not parts:
        return "In the JSON only: " + ", ".join(f"`{k}`" for k, _ in settings) + "."
    if settings and len(settings) <= 4 and sum(len(k) + len(v) for k, v in settings) < 200:
        lines.append("; ".join(f"{k}: {v}" for k, v in settings) + ".")
    elif settings:
        lines += ["| field | value |", "|---|---|", *[f"| {k} | {v} |" for k, v in settings]]
    lines += [f"\n{n + 1}. {text}" for n, text in enumerate(notes)]
    return "\n\n".join(["\n".join(lines)] * bool(lines) + parts)


# -- the pages -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Section:
    """One results file (or one part of it, ``key``) on a page."""

    title: str
    file: str
    kind: str = "auto"
    key: str | None = None
    command: str | None = None
    """The command that reproduces it when the file does not record one."""
    intro: str = ""


@dataclass(frozen=True)
class Page:
    title: str
    intro: str
    sections: list[Section] = field(default_factory=list)


BENCH = ".venv-bench/bin/python"
"""The interpreter of the runs that need MiniLM or the peer projects (``bash benchmarks/setup.sh``)."""

PAGES: dict[str, Page] = {
    "retrieval": Page(
        "Retrieval quality: passage recall against dense retrieval",
        "Recall@2 and Recall@5 of the gold passages on hotpotqa-100 (100 multi-hop questions, 994 passages, "
        "offline extraction) and musique-dev (47 questions, 1,890 passages, the data set's GPT-3.5 OpenIE "
        "triples), every method and mode against dense retrieval (`naive`) with the same embedder and no chat "
        "model. The metric and the data are described in [benchmarks.md](../benchmarks.md).",
        [
            Section("Every method: musique-dev (MiniLM)", "retrieval-musique-minilm.json"),
            Section("Every method: hotpotqa-100 (MiniLM)", "retrieval-minilm.json"),
            Section("Every method: hotpotqa-100 (hashing)", "retrieval-hashing.json"),
            Section("Query latency: musique-dev (MiniLM)", "latency-musique-minilm.json",
                    command=f"{BENCH} -m benchmarks.latency --data musique --embed minilm --indexes DIR/musique",
                    intro="Every question asked of every system in turn, no embedding cache; first with the query "
                          "embedded by MiniLM, then again with its vector served from memory (model excluded)."),
            Section("Query latency: hotpotqa-100 (MiniLM)", "latency-hotpotqa-minilm.json",
                    command=f"{BENCH} -m benchmarks.latency --data hotpotqa --embed minilm --indexes DIR/hotpotqa"),
            *[section
              for data, name in (("musique", "musique-dev"), ("hotpotqa", "hotpotqa-100"))
              for section in (
                  Section(f"Rerankers: {name} (MiniLM)", f"rerank-{data}-minilm.json", key="quality",
                          command=f"{BENCH} -m benchmarks.rerank --data {data} --indexes DIR",
                          intro="The best mode of each method (highest R@5 in the every-method table above, a graph "
                                "method's `naive` mode left out), k = 10, without a reranker and re-scored: 20 candidates "
                                "(`rerank_candidates`), the 10 whose whole text MiniLM puts nearest the query kept. That "
                                "re-scorer is a **bi-encoder stand-in, not a cross-encoder** (none can be installed here: no "
                                "package ships cross-encoder weights and the model hub is out of reach); it reads query and "
                                "passage apart, as the dense index does. Δ: re-scored minus without, with its 95 % interval "
                                "and the questions won / lost. \"over-fetched, order kept\": the 20 candidates cut to 10 in "
                                "the search's order (what the fake LLM answers below give back)."),
                  Section(f"Rerankers: what the LLM reranker costs per query, {name}", f"rerank-{data}-minilm.json",
                          key="cost", command=f"{BENCH} -m benchmarks.rerank --data {data} --indexes DIR",
                          intro="`LLMReranker` over the same 20 candidates, **cost only** (no chat model runs here, so no "
                                "quality figure): model calls and prompt / completion tokens per query, counted by "
                                "`CountingChatModel` (tiktoken `cl100k_base`) around a fake model whose answers are well "
                                "formed and keep the candidates' order. Listwise and pointwise with a 32,768-token context "
                                "window (Rhizome's default `num_ctx`: one prompt of 20 passages; pointwise, 5 to a prompt), "
                                "listwise again with 4,096 (windows of 14 overlapping by 7). Passages cut to 200 tokens."),
                  Section(f"Rerankers: the query latency they add, {name}", f"rerank-{data}-minilm.json",
                          key="latency", command=f"{BENCH} -m benchmarks.rerank --data {data} --indexes DIR",
                          intro="p50 CPU milliseconds per query (user + system of the process, every variant asked in turn "
                                "for each question; the load average is in the file): the search at k = 10, the over-fetch "
                                "of 20, the LLM reranker with a model that answers at once (what Rhizome itself adds: "
                                "prompts, token counts and cuts, parsing; a real model's time comes on top), and the "
                                "bi-encoder re-scorer, whose MiniLM embeds the 20 candidates on every query (no cache)."),
              )],
            Section("Search graphs and the walk's tolerance, before and after: musique-dev (MiniLM)", "graph-search-musique-minilm.json",
                    intro="The evidence modes with every vector collection searched exactly and the walk stopped at 1e-6 "
                          "(before) against the collections of 10k vectors or more searched through their saved HNSW graphs "
                          "and the walk at 1e-4 (after), interleaved in one process, CPU time with the query vectors from "
                          "memory; hits compared question by question ([benchmarks/graph_search.py](../../benchmarks/graph_search.py)). "
                          "The search graphs were opt-in (`RHIZOME_SEARCH_GRAPH_FROM`) and have since been removed: the command "
                          "below ran on commit 7d8541f; the sieve (below) does their work without their recall cost."),
            Section("Search graphs and the walk's tolerance, before and after: hotpotqa-100 (MiniLM)", "graph-search-hotpotqa-minilm.json"),
            Section("The walk's tolerance alone (the default), before and after: musique-dev (MiniLM)", "graph-search-musique-minilm-exact.json",
                    intro="As above with exact search on both sides: the walk stopped at 1e-6 (before) against 1e-4 (after)."),
            Section("The walk's tolerance alone (the default), before and after: hotpotqa-100 (MiniLM)", "graph-search-hotpotqa-minilm-exact.json"),
            Section("The sieve, before and after: musique-dev (MiniLM)", "graph-search-musique-minilm-sieve.json",
                    intro="The evidence modes with every vector collection scanned whole (before) against the collections "
                          "of 10k vectors or more searched through their sieves (after: fast-scan codes scanned for "
                          "candidates, re-ranked by exact cosine), both walking at the default tolerance, interleaved in "
                          "one process, CPU time with the query vectors from memory; hits compared question by question "
                          "([benchmarks/graph_search.py](../../benchmarks/graph_search.py) `--sieve`)."),
            Section("The sieve, before and after: hotpotqa-100 (MiniLM)", "graph-search-hotpotqa-minilm-sieve.json"),
            Section("The local walk on every graph, before and after: musique-dev (MiniLM)", "graph-search-musique-minilm-local-walk.json",
                    intro="A check, not the default: the evidence modes walking as they do (power iteration below 1M links: "
                          "every graph here) against the walk spread from the seeds (`local_pagerank`, epsilon 1e-5) forced "
                          "on every graph, both searching through their sieves, interleaved in one process, CPU time with "
                          "the query vectors from memory; hits compared question by question."),
            Section("HippoRAG and its variants: musique-dev (MiniLM)", "hipporag-recall-musique-minilm.json"),
            Section("HippoRAG and its variants: hotpotqa-100 (MiniLM)", "hipporag-recall-hotpotqa-minilm.json"),
            Section("HippoRAG and its variants: hotpotqa-100 (hashing)", "hipporag-recall-hotpotqa-hashing.json"),
            Section("ArchRAG and its variants: musique-dev (MiniLM)", "archrag-recall-musique-minilm.json"),
            Section("ArchRAG and its variants: hotpotqa-100 (MiniLM)", "archrag-recall-hotpotqa-minilm.json"),
            Section("ArchRAG and its variants: hotpotqa-100 (hashing)", "archrag-recall-hotpotqa-hashing.json"),
            Section("RAPTOR: musique-dev (MiniLM)", "raptor-retrieval-musique-minilm.json",
                    intro="`raptor:naive` is dense retrieval over RAPTOR's own 100-token leaves."),
            Section("RAPTOR: hotpotqa-100 (MiniLM)", "raptor-retrieval-minilm.json"),
            Section("RAPTOR: hotpotqa-100 (hashing)", "raptor-retrieval-hashing.json"),
            Section("RAPTOR: every hit against the leaf hits alone (hotpotqa-100, hashing)", "raptor-recall-hashing.json",
                    command="uv run python -m benchmarks.raptor recall --embed hashing"),
            Section("spRAG: musique-dev (MiniLM)", "sprag.json", key="recall-musique-minilm",
                    command=f"{BENCH} -m benchmarks.sprag recall --data musique --embed minilm",
                    intro="`naive@200` is dense retrieval over spRAG's own 200-token chunks."),
            Section("spRAG: hotpotqa-100 (MiniLM)", "sprag.json", key="recall-hotpotqa-minilm",
                    command=f"{BENCH} -m benchmarks.sprag recall --data hotpotqa --embed minilm"),
            Section("spRAG: hotpotqa-100 (hashing)", "sprag.json", key="recall-hotpotqa-hashing",
                    command="uv run python -m benchmarks.sprag recall --data hotpotqa --embed hashing"),
            Section("Agents: routing and recall, hotpotqa-100 (hashing)", "agents-recall.json",
                    command="uv run python -m benchmarks.agents recall"),
            Section("LightRAG's own quality run (offline, hashing)", "lightrag.json", key="recall",
                    command="uv run python -m benchmarks.lightrag",
                    intro="Recorded before the modes ranked their passages by the evidence walk, with the harness's earlier "
                          "ranking; the every-method tables above are the current code's."),
            Section("GraphRAG's own quality run (offline, hashing)", "graphrag.json", key="quality",
                    command="uv run python -m benchmarks.graphrag",
                    intro="Recorded before local and DRIFT search ranked their passages by the evidence walk; the "
                          "every-method tables above are the current code's."),
            Section("Before the method-facing kernel: hotpotqa-100 (hashing)", "retrieval-hashing-before-kernel.json",
                    command="uv run python -m benchmarks compare benchmarks/results/retrieval-hashing-before-kernel.json "
                            "benchmarks/results/retrieval-hashing.json",
                    intro="Kept to compare rankings question by question across the kernel refactor."),
            Section("Before the method-facing kernel: hotpotqa-100 (MiniLM)", "retrieval-minilm-before-kernel.json",
                    command="uv run python -m benchmarks compare benchmarks/results/retrieval-minilm-before-kernel.json "
                            "benchmarks/results/retrieval-minilm.json"),
        ],
    ),
    "proxy": Page(
        "Answer-context proxy: graphrag-bench-medical",
        "The share of each reference answer's content words found in the retrieved context, cut at a token "
        "budget, averaged per question type. The data has no gold evidence; this rewards context that holds the "
        "answer's vocabulary, not correct answers (see [benchmarks.md](../benchmarks.md#metrics)).",
        [
            Section("Every method, 2,000-token budget (hashing)", "proxy-hashing.json", command="uv run python -m benchmarks proxy",
                    intro="Not all rows come from one run: HippoRAG's and RAPTOR's joined later with `--add` (the same "
                          "settings), spRAG's come from its own run of the same suite (`benchmarks.sprag proxy`)."),
            Section("Every method, 6,000-token budget (hashing)", "proxy-hashing-6000.json",
                    command="uv run python -m benchmarks proxy --budget 6000"),
            Section("HippoRAG and its variants (hashing)", "hipporag-proxy-hashing.json"),
            Section("ArchRAG (hashing, 300 questions)", "archrag-proxy-hashing.json"),
            Section("RAPTOR (hashing)", "raptor-proxy-hashing.json"),
            Section("spRAG (hashing)", "sprag.json", key="proxy-hashing"),
            Section("spRAG (MiniLM)", "sprag.json", key="proxy-minilm"),
            Section("Agents: routing and the medical proxy (hashing)", "agents-proxy.json"),
            Section("LightRAG's own proxy run", "lightrag.json", key="proxy", command="uv run python -m benchmarks.lightrag",
                    intro="Recorded before the modes ranked their passages by the evidence walk (k = 30, 200 questions); "
                          "the every-method table above is the current code's."),
        ],
    ),
    "cost": Page(
        "Cost: model calls and tokens",
        "Every request that reaches the model, retries included, counted by `CountingChatModel` around a "
        "schema-driven fake model; prompt and completion tokens measured with tiktoken `cl100k_base`. Call counts "
        "and prompt tokens are what our prompts send; completions are the fake's, not a real model's "
        "(see [benchmarks.md](../benchmarks.md#metrics)).",
        [
            Section("Every method: per indexed 1k tokens and per query", "cost-fake.json", command="uv run python -m benchmarks cost",
                    intro="RAPTOR's, HippoRAG's and spRAG's rows joined later with `--add` (the same settings). HippoRAG v2 "
                          "shows no query call here: the fake model writes no valid triple, so that index holds no fact and "
                          "v2 falls back to dense retrieval; its calls with facts are in its own table below."),
            Section("ArchRAG against GraphRAG global search, per query", "archrag-cost.json"),
            Section("spRAG (AutoContext)", "sprag.json", key="cost"),
            Section("RAPTOR: summaries, one insert, a rebuild", "raptor-cost.json"),
            Section("HippoRAG: what indexing embeds", "hipporag-cost.json", command="uv run python -m benchmarks.hipporag cost"),
            Section("HippoRAG: model calls per question", "hipporag-query-cost.json"),
            Section("GraphRAG: eager and lazy reports, global search", "graphrag.json", key="cost",
                    command="uv run python -m benchmarks.graphrag"),
            Section("LightRAG: packed extraction, one insert", "lightrag.json", key="cost", command="uv run python -m benchmarks.lightrag"),
            Section("LightRAG: one document into an index of 993", "lightrag.json", key="single_insert",
                    command="uv run python -m benchmarks.lightrag"),
            Section("LightRAG: the lightrag-hku anchor", "lightrag.json", key="anchor_lightrag_hku",
                    command="uv run python -m benchmarks.lightrag"),
            Section("Agents: model calls per question", "agents-calls.json", command="uv run python -m benchmarks.agents calls"),
        ],
    ),
    "scale": Page(
        "Speed and scale",
        "Build time, CPU and memory as corpora grow, incremental inserts, query latency excluding the model, "
        "workers and stores. Reference machine: 2 CPU cores, 24 GB RAM, no GPU, Python 3.11, usually shared with "
        "other work: read timings within one table, as ratios.",
        [
            Section("Build and query, 1k to 100k synthetic documents (every method)", "scale-offline.json"),
            Section("Build and query, the heaps corpus: naive and GraphRAG, 1k and 10k", "scale-heaps.json"),
            Section("Naive, 100k heaps documents in a directory, with and without a memory budget", "scale-heaps-disk-budget.json"),
            Section("Build and query, 100k, 300k and 1M heaps documents in a directory", "scale-heaps-disk-1m.json"),
            Section("Builds again, one at a time", "scale-build-rerun.json"),
            Section("LightRAG builds again, one at a time", "scale-lightrag-build-rerun.json"),
            Section("LightRAG: long profiles as rows, three rounds against the code before", "scale-lightrag-rows.json"),
            Section("RAPTOR builds again, warm-up apart", "scale-raptor-build-rerun.json"),
            Section("100k documents built in a directory", "scale-disk-100k.json"),
            Section("Ray workers and PostgreSQL", "scale_workers.json", command="uv run python -m benchmarks.scale_workers"),
            Section("Out-of-core chunk collection: recall against exact search", "ann-outofcore.json", kind="ann",
                    intro="Product-quantizer codes in memory, the candidates they rank first re-ranked by their exact vectors "
                          "read from SQLite (`rhizome.core.store.outofcore`), against exact search over the same vectors: the "
                          "`heaps` corpus's chunks, hashing embedder. Recall@10 counts a tie at the tenth place as found. Build CPU: "
                          "training the quantizer and coding every vector, from vectors already in memory (an index reads "
                          "them from its records, a block at a time, besides)."),
            Section("The evidence walk on a large index: power iteration and local walk", "walk-scale.json", kind="walk",
                    intro="The scale benchmark's questions (the first clause of a document drawn at random) asked of a `heaps` index "
                          "(hashing vectors, offline extraction), each in turn with the walk forced to the power iteration over "
                          "the whole graph and to the walk spread from its seeds (`rhizome.core.graph.local_pagerank`, what an "
                          "evidence graph of 1M links or more runs; epsilon 1e-5, tolerance 1e-4). The query's time includes every "
                          "vector search (model excluded: the index has none)."),
            Section("Incremental inserts: GraphRAG, 100 documents into 10,000", "incremental-graphrag.json",
                    command="OMP_NUM_THREADS=1 nice -n 10 uv run python -m benchmarks.incremental graphrag --size 10000 --add 100"),
            Section("Incremental inserts: GraphRAG, 10 into 1,000", "incremental-graphrag-1k.json",
                    command="uv run python -m benchmarks.incremental graphrag --size 1000 --add 10 --name incremental-graphrag-1k"),
            Section("Incremental inserts: GraphRAG, 10 into 1,000, counting model", "incremental-graphrag-model-1k.json",
                    command="uv run python -m benchmarks.incremental graphrag --size 1000 --add 10 --model --name incremental-graphrag-model-1k"),
            Section("Incremental inserts: GraphRAG on the shared entity-graph layer", "incremental-graphrag-layer.json",
                    command="uv run python -m benchmarks.incremental graphrag --size 10000 --add 100 --name incremental-graphrag-layer"),
            Section("Incremental inserts: ArchRAG, 100 into 10,000", "incremental-archrag.json",
                    command="uv run python -m benchmarks.incremental archrag --size 10000 --add 100"),
            Section("Incremental inserts: ArchRAG, 100 into 10,000, counting model", "incremental-archrag-model.json",
                    command="uv run python -m benchmarks.incremental archrag --size 10000 --add 100 --model --name incremental-archrag-model"),
            Section("Incremental inserts: ArchRAG, 10 into 1,000", "incremental-archrag-1k.json",
                    command="uv run python -m benchmarks.incremental archrag --size 1000 --add 10 --name incremental-archrag-1k"),
            Section("Incremental inserts: ArchRAG, 10 into 1,000, counting model", "incremental-archrag-model-1k.json",
                    command="uv run python -m benchmarks.incremental archrag --size 1000 --add 10 --model --name incremental-archrag-model-1k"),
            Section("Incremental inserts: LightRAG, 100 into 10,000", "incremental-lightrag.json",
                    command="uv run python -m benchmarks.incremental lightrag --size 10000 --add 100"),
            Section("Incremental inserts: LightRAG, 100 into 1,000", "incremental-lightrag-1k.json",
                    command="uv run python -m benchmarks.incremental lightrag --size 1000 --add 100 --name incremental-lightrag-1k"),
            Section("Incremental inserts: every recorded GraphRAG run", "incremental-graphrag-*.json", kind="incremental-history",
                    command="OMP_NUM_THREADS=1 nice -n 10 uv run python -m benchmarks.incremental graphrag --size 10000 --add 100 --name NAME",
                    intro="One row per saved run, in file-name order: the earlier code, runs repeated under different "
                          "machine load. The share of a rebuild is the figure the target (≤ 10 %) read until the entity-graph layer "
                          "(`incremental-graphrag-layer.json`), whose rebuild no longer merges every extraction again: "
                          "there it compares the insert with a re-clustering only, and the share of a build is the one to read."),
            Section("Incremental inserts: the code before, for comparison", "incremental-*-before.json", kind="incremental-history",
                    command="PYTHONPATH=<the earlier commit's packages/*/src> uv run python -m benchmarks.incremental METHOD ... --name NAME-before"),
            Section("Kernel: scheduling of model calls, the cache, naive retrieval", "kernel.json", command="uv run python -m benchmarks.kernel"),
            Section("Kernel: a vector snapshot of 1M vectors, saved and opened", "kernel-snapshot-1m.json"),
            Section("Metadata filters: query latency with a selective filter against none", "filters.json",
                    intro="Naive retrieval, k = 10, `{\"year\": {\"$gt\": 2014}}` matching about 4 % of the documents, "
                          "evaluated in the store's SQL; with and without the filter interleaved per query. Read the CPU "
                          "columns: the wall-clock ones were taken on a shared, loaded machine (load average in the file)."),
            Section("HippoRAG: the walk's latency as the graph grows", "hipporag-latency.json"),
            Section("ArchRAG C-HNSW against one HNSW per layer (random vectors, 10k)", "archrag-chnsw-random-10k.json"),
            Section("ArchRAG C-HNSW against one HNSW per layer (tree vectors, 10k)", "archrag-chnsw-tree-10k.json"),
            Section("ArchRAG C-HNSW against one HNSW per layer (random vectors, 100k)", "archrag-chnsw-random-100k.json"),
            Section("ArchRAG C-HNSW against one HNSW per layer (tree vectors, 100k)", "archrag-chnsw-tree-100k.json"),
            Section("ArchRAG C-HNSW against one HNSW per layer (random vectors, 1M)", "archrag-chnsw-random-1000k.json"),
            Section("RAPTOR tree builds, 1k / 10k / 50k leaves (before the clustering in parts)", "raptor-build.json"),
            Section("RAPTOR tree build, 1k leaves", "raptor-build-1k-shipped.json"),
            Section("RAPTOR tree build, 10k leaves, clustered in parts", "raptor-build-10k-parts.json",
                    command="uv run python -m benchmarks.raptor build-one 10000"),
            Section("RAPTOR tree build, 50k leaves, clustered in parts", "raptor-build-50k-parts.json",
                    command="uv run python -m benchmarks.raptor build-one 50000"),
            Section("RAPTOR tree build, 10k leaves, before the clustering in parts", "raptor-build-10k-shipped.json",
                    command="uv run python -m benchmarks.raptor build-one 10000"),
            Section("RAPTOR tree build, 50k leaves, before the clustering in parts", "raptor-build-50k-shipped.json",
                    command="uv run python -m benchmarks.raptor build-one 50000"),
            Section("spRAG: segment selection against the exhaustive search", "sprag.json", key="selection"),
            Section("spRAG: whole queries on one 10,000-chunk document", "sprag.json", key="long"),
            Section("GraphRAG: Leiden and report scheduling at scale", "graphrag.json", key="scale",
                    command="uv run python -m benchmarks.graphrag"),
            Section("LightRAG: growth on slices of hotpotqa-100", "lightrag.json", key="growth", command="uv run python -m benchmarks.lightrag"),
            Section("LightRAG: query latency excluding the model", "lightrag.json", key="latency", command="uv run python -m benchmarks.lightrag"),
            Section("The demo: seconds per method (offline)", "demo.json", command="uv run python -m benchmarks.demo"),
        ],
    ),
    "peers": Page(
        "Peers side by side: lightrag-hku and nano-graphrag",
        "Rhizome's LightRAG and GraphRAG next to the projects they follow, on the same passages. In the cost runs "
        "one extraction oracle answers every system's extraction calls, so the graphs are the same and the counts "
        "compare prompts and pipelines; in the recall run every system gets the same imported triples and embedder. "
        "Needs `bash benchmarks/setup.sh` (the peers' pinned versions are in `benchmarks/constraints.txt`).",
        [
            Section("Cost and CPU, all 994 hotpotqa-100 passages", "peers.json", kind="peers", command=f"{BENCH} -m benchmarks peers"),
            Section("Cost and CPU, the first 200 passages", "peers-200.json", kind="peers", command=f"{BENCH} -m benchmarks peers --passages 200"),
            Section("Passage recall on musique-dev (MiniLM, the data set's triples)", "peer-recall-musique.json"),
            Section("GraphRAG against nano-graphrag: non-model indexing CPU, paired runs", "graphrag-nano-cpu-pairs.json"),
        ],
    ),
    "faults": Page(
        "Faults: crashes, damaged files and a flaky model server",
        "What an index survives, case by case ([reliability.md](../reliability.md) says what it guarantees). "
        "The same cases against the code before the storage hardening are in "
        "[faults-before-6fc616a.md](../../benchmarks/results/faults-before-6fc616a.md).",
        [
            Section("Fault injection: cases held / tried", "faults.json", kind="faults",
                    command="uv run python -m benchmarks.fault_injection --kills 15 --backend both",
                    intro="A kill case runs an insert (8 documents, one per batch) or a delete (4 of them) in a child "
                          "process that SIGKILLs itself before a commit, right after one, or while a vector snapshot is "
                          "written, then runs the call again and compares every table with a clean build; \"held\" also "
                          "needs 0 model answers paid twice. A damaged-file case holds when results stay correct or a "
                          "typed error names the file. The rows marked PostgreSQL run the kill and reader cases on an "
                          "index in a schema of a private PostgreSQL server (`pgserver`), compared with a "
                          "clean build in PostgreSQL. 15 kill points per method and operation, drawn with seed 0; a "
                          "count below 15 is every point the operation has."),
            Section("What verifying vector snapshots costs (20,000 chunks)", "snapshot-check.json",
                    command="uv run python -m benchmarks.snapshot_check --chunks 20000",
                    intro="CPU seconds (median of 5 interleaved repeats) of reading the chunk collection's snapshot, of its "
                          "(id, vector) digest that every load checks against the records, of a reader's first search "
                          "(open, load and verify the collection, one query), and of `rhizome check`, which compares every "
                          "pair; the first search without the digest check costs the first minus the digest."),
            Section("Indexing through a flaky server (5 % invalid answers, 10 % busy)", "robustness-5-10.json", kind="robustness",
                    command="uv run python -m benchmarks.robustness"),
            Section("Indexing through a flaky server (30 % invalid answers, 30 % busy)", "robustness-30-30.json", kind="robustness",
                    command="uv run python -m benchmarks.robustness --invalid 0.3 --busy 0.3"),
        ],
    ),
    "gorag": Page(
        "GORAG on gorag-wos: few-shot classification",
        "Cumulative accuracy over GORAG's four rounds on the Web of Science abstracts, no chat model, against "
        "the baselines; candidate recall is the ceiling of a chooser among the candidates. The default "
        "configuration (every test text, deferred online indexing) comes first; "
        "[gorag.md](../gorag.md#design-choices) says why each choice was made.",
        [
            Section("TF-IDF only, 1- and 5-shot, every test text", "gorag-none-1-5shot-all.json"),
            Section("With MiniLM, 1-shot, every test text", "gorag-minilm-1shot-all.json"),
            Section("With MiniLM, 5-shot, every test text", "gorag-minilm-5shot-all.json"),
            Section("TF-IDF only, every test text, `online_mode=\"revisit\"`", "gorag-none-1-5shot-all-revisit.json"),
            Section("With MiniLM, 1-shot, every test text, `online_mode=\"revisit\"`", "gorag-minilm-1shot-all-revisit.json"),
            Section("With MiniLM, 5-shot, every test text, `online_mode=\"revisit\"`", "gorag-minilm-5shot-all-revisit.json"),
            Section("TF-IDF only, every test text, `online_mode=\"sequential\"`", "gorag-none-1-5shot-all-sequential.json",
                    intro="Recorded with an earlier scorer than the tables above (before the label choice read the whole name): compare its spread over orders, not its accuracy, with them."),
            Section("TF-IDF only, 1-shot, every test text, `online_mode=\"sequential\"`", "gorag-none-1shot-all-sequential.json",
                    intro="Recorded with an earlier scorer than the tables above (before the label choice read the whole name): compare its spread over orders, not its accuracy, with them."),
            Section("Side experiment: a sharper name specificity (TF-IDF only)", "gorag-none-1-5shot-all-name-specificity.json"),
            Section("Side experiment: a sharper name specificity (with MiniLM)", "gorag-minilm-1-5shot-all-name-specificity.json"),
            Section("Side experiment: a query likelihood in the cut (TF-IDF only)", "gorag-none-1-5shot-all-likelihood.json"),
            Section("TF-IDF only, 1-shot, first 200 texts a file, three orders", "gorag-none-1shot.json"),
            Section("TF-IDF only, 5-shot, first 200 texts a file, three orders", "gorag-none-5shot.json"),
            Section("With MiniLM, 1-shot, first 200 texts a file, three orders", "gorag-minilm-1shot.json"),
            Section("With MiniLM, 5-shot, first 200 texts a file, three orders", "gorag-minilm-5shot.json"),
            Section("TF-IDF only, 1-shot, first 200 texts, `online_mode=\"sequential\"`", "gorag-none-1shot-sequential.json",
                    intro="Recorded at commit f3b0d78, before deferred indexing became the default: compare its spread over orders, not its accuracy, with the tables above."),
            Section("TF-IDF only, 5-shot, first 200 texts, `online_mode=\"sequential\"`", "gorag-none-5shot-sequential.json",
                    intro="Recorded at commit f3b0d78, before deferred indexing became the default: compare its spread over orders, not its accuracy, with the tables above."),
            Section("Candidate cut rules on the dev split (TF-IDF only)", "gorag-devcuts-none.json", kind="gorag-devcuts"),
            Section("Candidate cut rules on the dev split (with MiniLM)", "gorag-devcuts-minilm.json", kind="gorag-devcuts"),
            Section("Dev stream: the 5-shot dev texts (TF-IDF only)", "gorag-devstream-none-1-5shot.json",
                    intro="The dev runs below are how the settings were chosen; each was recorded with the code of its time, "
                          "so compare rows within a table, not across tables."),
            Section("Dev stream: the 5-shot dev texts (with MiniLM)", "gorag-devstream-minilm-1-5shot.json"),
            Section("Dev stream, `online_mode=\"revisit\"` (TF-IDF only)", "gorag-devstream-none-1-5shot-revisit.json"),
            Section("Dev stream, `online_mode=\"revisit\"` (with MiniLM)", "gorag-devstream-minilm-1-5shot-revisit.json"),
            Section("Dev stream, `online_mode=\"sequential\"` (TF-IDF only)", "gorag-devstream-none-1-5shot-sequential.json"),
            Section("Wide dev stream: dev texts and unlabelled train texts (TF-IDF only)", "gorag-devstream-wide-none-1shot.json"),
            Section("Wide dev stream: dev texts and unlabelled train texts (with MiniLM)", "gorag-devstream-wide-minilm-1shot.json"),
        ],
    ),
    "server": Page(
        "`rhizome serve`: HTTP against in process, throughput and memory",
        "What the server adds to a query and what it saves against a `rhizome query` process, how many queries it "
        "answers a second, and what holding indexes open costs in memory ([server.md](../server.md)). The machine is "
        "shared with other work: each table records the load average it ran under.",
        [
            Section("hotpotqa-100, naive and LightRAG (hashing, offline)", "server.json", kind="server"),
        ],
    ),
}

PAGE_ORDER = ["retrieval", "proxy", "cost", "scale", "peers", "faults", "gorag", "server"]


def _load(name: str) -> Any:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _kind(data: Any) -> str:
    if isinstance(data, dict):
        rows = data.get("rows")
        if "shots" in data and "paper_gorag_llama3" in data:
            return "gorag"
        if isinstance(rows, list) and rows and isinstance(rows[0], dict):
            first = rows[0]
            if "recall@5" in first and "baseline" in first and "vs_dense" in first and "query_p50_ms" in first:
                return "retrieval"
            if "index_calls_per_1k" in first:
                return "cost"
            if ("all" in first and "budget_tokens" in data and all(set(r) <= {"system", "all", *first} for r in rows)
                    and all(isinstance(v, (int, float)) for k, v in first.items() if k != "system")):
                return "proxy"
            if {"method", "size", "index_cpu_seconds", "chunks_per_second", "latency_ms"} <= set(first):
                return "scale"
    return "generic"


def _incremental_history(pattern: str) -> tuple[str, list[str]]:
    files = sorted(p.name for p in RESULTS.glob(pattern))
    lines = ["| file | documents + added | model | build CPU s | insert CPU s | rebuild CPU s | insert / rebuild | insert / build |",
             "|---|---|---|---|---|---|---|---|"]
    for name in files:
        d = _load(name)
        insert, rebuild = d.get("insert") or {}, d.get("rebuild") or {}

        def num(value: Any) -> str:
            return "–" if value is None else f"{value:,}" if isinstance(value, int) else f"{round(value, 3):,}"

        lines.append(
            f"| {name} | {d['size']:,} + {d['added']} | {d.get('model', '–')} | {num(d['build'].get('cpu_seconds'))} | "
            f"{num(insert.get('cpu_seconds'))} | {num(rebuild.get('cpu_seconds'))} | {num(d.get('insert_share_of_rebuild'))} | "
            f"{num(d.get('insert_share_of_build'))} |"
        )
    return "\n".join(lines), files


def scale_rows(data: dict[str, Any]) -> str:
    """A scale run: its rows as the harness's scale table, and any other rows it kept (the code
    before, a contended run) each as a table of their own."""
    parts = [scale_table(data)]
    for key, value in data.items():
        if key in ("rows", "command", "note", "suite", "source", "corpus"):  # the corpus: in the table's first line
            continue
        rows = [value] if isinstance(value, dict) and "size" in value else value
        if isinstance(rows, list) and rows and all(isinstance(r, dict) and "size" in r for r in rows):
            parts.append(f"#### {key}\n\n" + scale_table({"rows": rows}).split("\n\n", 1)[1])
        else:
            parts.append(f"#### {key}\n\n" + generic(value, 5))
    return "\n\n".join(parts)


def render_section(section: Section) -> tuple[str, list[str]]:
    """The Markdown of one section and the results files it read."""
    if section.kind == "incremental-history":
        body, files = _incremental_history(section.file)
        data: Any = {}
    else:
        files = [section.file]
        data = _load(section.file)
        if section.key:
            data = data[section.key]
        kind = _kind(data) if section.kind == "auto" else section.kind
        renderers: dict[str, Callable[[Any], str]] = {
            "retrieval": retrieval_table,
            "proxy": proxy_table,
            "cost": cost_table,
            "scale": scale_rows,
            "ann": ann_table,
            "walk": walk_table,
            "gorag": gorag_tables,
            "gorag-devcuts": gorag_dev_cut_table,
            "faults": faults_table,
            "peers": peers_table,
            "robustness": robustness_table,
            "server": server_table,
            "generic": generic,
        }
        body = renderers[kind](data)
    recorded = data.get("command") if isinstance(data, dict) else None
    command = recorded or section.command
    source = ", ".join(f"`benchmarks/results/{f}`" + (f" (`{section.key}`)" if section.key else "") for f in files)
    head = [f"## {section.title}", ""]
    if section.intro:
        head += [section.intro, ""]
    if isinstance(data, dict) and isinstance(data.get("source"), str):
        head += [f"Source of these figures: {data['source']}", ""]
    foot = [f"From {source}."]
    if command and f"`{command}`" not in body and f"`{command.strip()}`" not in body:
        foot.append(f"Reproduce: `{command}`" + ("" if recorded else " (the command is not recorded in the file)"))
    if isinstance(data, dict) and isinstance(data.get("note"), str):
        foot.append(f"Note recorded with the run: {data['note']}")
    return "\n".join(head) + "\n" + body.strip() + "\n\n" + "\n\n".join(foot) + "\n", files


def render_page(name: str) -> tuple[str, list[str]]:
    page = PAGES[name]
    sections, files = [], []
    for section in page.sections:
        text, read = render_section(section)
        sections.append(text)
        files += read
    contents = "\n".join(f"- [{s.title}](#{slug(s.title)})" for s in page.sections)
    text = (
        f"# {page.title}\n\n"
        f"<!-- generated by `uv run python -m benchmarks render` from benchmarks/results/*.json: edit the JSON or "
        f"benchmarks/render.py, not this page -->\n\n"
        f"*Generated from the results files named under each table by `python -m benchmarks render`; do not edit by hand.*\n\n"
        f"{page.intro}\n\n{contents}\n\n" + "\n".join(sections)
    )
    return text, files


def slug(heading: str) -> str:
    """GitHub's anchor of a heading (lower case, punctuation dropped, spaces as hyphens)."""
    import re

    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def render_index(rendered: dict[str, list[str]]) -> str:
    used = {f for files in rendered.values() for f in files}
    unplaced = sorted(p.name for p in RESULTS.glob("*.json") if p.name not in used)
    lines = [
        "# Benchmark results",
        "",
        "<!-- generated by `uv run python -m benchmarks render` from benchmarks/results/*.json: edit the JSON or "
        "benchmarks/render.py, not this page -->",
        "",
        "*Generated by `python -m benchmarks render`; do not edit by hand.* One page per suite, each table read from "
        "a results file in `benchmarks/results/` and followed by the command that reproduces it. How the suites "
        "measure, and on which data: [benchmarks.md](../benchmarks.md). Which method to use: [choosing.md](../choosing.md).",
        "",
        "| page | results files |",
        "|---|---|",
    ]
    for name in PAGE_ORDER:
        lines.append(f"| [{PAGES[name].title}]({name}.md) | {len(set(rendered[name]))} |")
    if unplaced:
        lines += ["", "Results files on no page yet: " + ", ".join(f"`{f}`" for f in unplaced) + "."]
    return "\n".join(lines) + "\n"


def render_all() -> dict[str, str]:
    """Every page's text, keyed by its path relative to the repository."""
    pages, read = {}, {}
    for name in PAGE_ORDER:
        text, files = render_page(name)
        pages[f"docs/results/{name}.md"] = text
        read[name] = files
    pages["docs/results/README.md"] = render_index(read)
    return pages


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    stale = []
    for path, text in render_all().items():
        target = ROOT / path
        if check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:  # whole files replaced, so a reader (or a second run rendering at once) never sees half a page
            target.parent.mkdir(parents=True, exist_ok=True)
            fresh = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            fresh.write_text(text, encoding="utf-8")
            os.replace(fresh, target)
            print(f"wrote {path}")
    if stale:
        print("out of date (run `uv run python -m benchmarks render`): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
