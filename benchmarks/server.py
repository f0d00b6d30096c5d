"""What ``rhizome serve`` costs and gives: query latency over HTTP against the same call in
process and against one ``rhizome query`` process, throughput at 1, 8 and 32 concurrent
clients, and the memory of a server holding the seven sample indexes.

- **Latency.** hotpotqa-100's 994 passages indexed with ``naive`` and ``lightrag`` (offline
  extraction, hashing embedder: no model server, so the figures are the server's and the
  index's own work). A server runs in its own process (``rhizome serve --read-only``); this
  process opens the same indexes read-only. Each question is asked of every system both ways in
  turn — ``POST /{ws}/query`` over a keep-alive HTTP connection, and the kernel call the route
  makes (``index.as_retriever(k, mode).asearch(query)``) awaited here — alternating which goes
  first, so whatever load the machine carries falls on both alike. "HTTP adds" is the median of
  the per-question differences (and the difference of the medians beside it).
- **One ``rhizome query`` process** per question, a few times per system: what a query costs
  without a server (start Python, open the index, search, print).
- **Throughput.** ``N`` requests from 1, 8 and 32 concurrent clients (asyncio, one connection
  each); requests per second, latency p50/p99, and the server process's CPU per request (user +
  system, from /proc), which depends less on the machine's other load than the wall times.
- **Memory.** The resident set of a server process holding the sample corpus indexed with each
  of the seven methods (offline), after start and after one query in every workspace and mode,
  against a server holding only the naive one.

The machine is shared: the load average is recorded before and after every part.

    RHIZOME_SHARED_DATA=DIR uv run python -m benchmarks.server --indexes /tmp/rhizome-server-bench
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
SYSTEMS = [("naive", None), ("lightrag", "local"), ("lightrag", "global"), ("lightrag", "hybrid")]
METHODS = ["naive", "archrag", "graphrag", "hipporag", "lightrag", "raptor", "sprag"]
PAGE_MIB = 1024 * 1024


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


class Server:
    """``rhizome serve ARGS`` in a process of its own, on a free loopback port."""

    def __init__(self, *args: str) -> None:
        self.port = free_port()
        self.args = [sys.executable, "-m", "rhizome.rag.cli", "serve", *args, "--offline", "--no-cache", "--port", str(self.port)]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        import httpx

        self.process = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server stopped: {self.process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start in 300 s")
            time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)

    def memory(self) -> dict[str, float]:
        """Resident set now and at its peak, MiB."""
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines() if ":" in line)
        return {"rss_mib": round(int(fields["VmRSS"].split()[0]) / 1024, 1), "peak_rss_mib": round(int(fields["VmHWM"].split()[0]) / 1024, 1)}

    def cpu_seconds(self) -> float:
        """User + system CPU of the server process so far."""
        parts = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def name_of(method: str, mode: str | None) -> str:
    return f"{method}:{mode}" if mode else method


async def latency(server: Server, indexes: dict[str, Any], questions: list[str], k: int) -> list[dict[str, Any]]:
    """Every question asked of every system over HTTP and in process, in turn."""
    import httpx

    http: dict[str, list[float]] = {name_of(*s): [] for s in SYSTEMS}
    local: dict[str, list[float]] = {name_of(*s): [] for s in SYSTEMS}
    cpu = {name_of(*s): {"server": 0.0, "client": 0.0, "in_process": 0.0} for s in SYSTEMS}

    async def over_http(client: httpx.AsyncClient, method: str, mode: str | None, q: str) -> float:
        served, mine = server.cpu_seconds(), time.process_time()
        start = time.perf_counter()
        answer = await client.post(f"/{method}/query", json={"query": q, "k": k, "mode": mode})
        took = (time.perf_counter() - start) * 1000
        cpu[name_of(method, mode)]["client"] += time.process_time() - mine
        cpu[name_of(method, mode)]["server"] += server.cpu_seconds() - served
        answer.raise_for_status()
        return took

    async def in_process(method: str, mode: str | None, q: str) -> float:
        mine = time.process_time()
        start = time.perf_counter()
        await indexes[method].as_retriever(k=k, mode=mode).asearch(q, context=False)
        took = (time.perf_counter() - start) * 1000
        cpu[name_of(method, mode)]["in_process"] += time.process_time() - mine
        return took

    async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
        for method, mode in SYSTEMS:  # load graphs and vectors both ways before timing
            await over_http(client, method, mode, questions[0])
            await in_process(method, mode, questions[0])
        for counts in cpu.values():
            counts.update(dict.fromkeys(counts, 0.0))
        for i, q in enumerate(questions):
            for method, mode in SYSTEMS:
                name = name_of(method, mode)
                if i % 2:
                    local[name].append(await in_process(method, mode, q))
                    http[name].append(await over_http(client, method, mode, q))
                else:
                    http[name].append(await over_http(client, method, mode, q))
                    local[name].append(await in_process(method, mode, q))
    rows = []
    for name in http:
        h, p = http[name], local[name]
        rows.append({
            "system": name, "questions": len(h),
            "in_process_p50_ms": round(statistics.median(p), 2), "in_process_p99_ms": round(percentile(p, 0.99), 2),
            "http_p50_ms": round(statistics.median(h), 2), "http_p99_ms": round(percentile(h, 0.99), 2),
            "http_adds_p50_ms": round(statistics.median(a - b for a, b in zip(h, p)), 2),
            "difference_of_p50s_ms": round(statistics.median(h) - statistics.median(p), 2),
            **{f"{side}_cpu_ms": round(seconds * 1000 / len(h), 2) for side, seconds in cpu[name].items()},
        })
    return rows


def one_process(paths: dict[str, Path], questions: list[str], k: int, runs: int) -> list[dict[str, Any]]:
    """``rhizome query`` started once per question: wall and CPU (the child's user + system)."""
    rows = []
    for method, mode in SYSTEMS:
        walls, cpus = [], []
        for q in questions[:runs]:
            before = os.times()
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "rhizome.rag.cli", "query", str(paths[method]), q, "-k", str(k), "--offline",
                            "--no-cache", *(["--mode", mode] if mode else [])], check=True, stdout=subprocess.DEVNULL)
            walls.append((time.perf_counter() - start) * 1000)
            after = os.times()
            cpus.append((after.children_user + after.children_system - before.children_user - before.children_system) * 1000)
        rows.append({"system": name_of(method, mode), "runs": len(walls), "wall_p50_ms": round(statistics.median(walls)),
                     "cpu_p50_ms": round(statistics.median(cpus))})
    return rows


async def throughput(server: Server, questions: list[str], k: int, requests: int, levels: list[int]) -> list[dict[str, Any]]:
    return [await level(server, method, mode, clients, questions, k, requests)
            for method, mode in [SYSTEMS[0], SYSTEMS[3]] for clients in levels]


async def level(server: Server, method: str, mode: str | None, clients: int, questions: list[str], k: int, requests: int) -> dict[str, Any]:
    """``requests`` queries from ``clients`` concurrent clients."""
    import httpx

    todo = list(range(requests))
    times: list[float] = []

    async def worker(client: httpx.AsyncClient) -> None:
        while todo:
            i = todo.pop()
            start = time.perf_counter()
            answer = await client.post(f"/{method}/query", json={"query": questions[i % len(questions)], "k": k, "mode": mode})
            answer.raise_for_status()
            times.append((time.perf_counter() - start) * 1000)

    cpu = server.cpu_seconds()
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=server.url, timeout=300, limits=httpx.Limits(max_connections=clients)) as client:
        await asyncio.gather(*(worker(client) for _ in range(clients)))
    wall = time.perf_counter() - started
    return {"system": name_of(method, mode), "clients": clients, "requests": requests,
            "requests_per_s": round(requests / wall, 1), "p50_ms": round(statistics.median(times), 1),
            "p99_ms": round(percentile(times, 0.99), 1),
            "server_cpu_ms_per_request": round((server.cpu_seconds() - cpu) * 1000 / requests, 2), "load": load()}


def memory(folder: Path) -> list[dict[str, Any]]:
    """A server holding the seven sample indexes, and one holding the naive one only."""
    import httpx

    from rhizome.rag.cli import main as rhizome
    from rhizome.rag.demo import sample_corpus

    samples = folder / "samples"
    for method in METHODS:
        if not (samples / method / "manifest.json").exists():
            assert rhizome(["index", str(sample_corpus()), "--method", method, "--out", str(samples / method), "--offline", "-q", "--no-cache"]) == 0
    rows = []
    for label, specs in [("naive sample index only", [str(samples / "naive")]), ("the seven sample indexes", ["--root", str(samples)])]:
        with Server(*specs, "--read-only") as server:
            started = server.memory()
            described = httpx.get(f"{server.url}/workspaces", timeout=120).json()["workspaces"]
            for space in described:
                for mode in space["modes"]:
                    httpx.post(f"{server.url}/{space['name']}/query", json={"query": "Who kept the Oskel light?", "mode": mode["name"]},
                               timeout=120).raise_for_status()
            rows.append({"server": label, "workspaces": len(described), "modes_queried": sum(len(s["modes"]) for s in described),
                         "rss_after_start_mib": started["rss_mib"], **{f"{k}_after_queries": v for k, v in server.memory().items()}})
    return rows


def measure(folder: Path, k: int, runs: int, requests: int, levels: list[int]) -> dict[str, Any]:
    from benchmarks import data
    from benchmarks.latency import open_index

    result: dict[str, Any] = {"suite": "server", "data": "hotpotqa-100", "embedder": "hashing", "k": k, "load_before": load(),
                              "cpus": os.cpu_count(), "command": f"uv run python -m benchmarks.server --indexes DIR --runs {runs} --requests {requests}"}
    indexes = {m: open_index(m, "hashing", "hotpotqa", folder) for m in ("naive", "lightrag")}
    _, qs = data.hotpotqa()
    questions = [q.question for q in qs]
    paths = {m: folder / m for m in indexes}
    with Server(*[f"{m}={p}" for m, p in paths.items()], "--read-only") as server:
        result["latency"] = asyncio.run(latency(server, indexes, questions, k))
        result["load_after_latency"] = load()
        result["throughput"] = asyncio.run(throughput(server, questions, k, requests, levels))
    for index in indexes.values():
        index.close()
    result["one_process"] = one_process(paths, questions, k, runs)
    result["load_after_one_process"] = load()
    result["memory"] = memory(folder)
    result["load_after"] = load()
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.server", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--indexes", type=Path, default=Path(tempfile.gettempdir()) / "rhizome-server-bench",
                        help="folder the indexes are built in (and reused from)")
    parser.add_argument("-k", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5, help="rhizome query processes per system")
    parser.add_argument("--requests", type=int, default=320, help="requests per throughput level")
    parser.add_argument("--levels", type=int, nargs="*", default=[1, 8, 32])
    args = parser.parse_args(argv)
    args.indexes.mkdir(parents=True, exist_ok=True)
    result = measure(args.indexes, args.k, args.runs, args.requests, args.levels)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "server.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    from benchmarks.render import server_table

    print(server_table(result))


if __name__ == "__main__":
    main()
