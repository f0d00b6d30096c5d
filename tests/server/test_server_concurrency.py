"""Reads run side by side, off the event loop, while writes queue behind the kernel's write lock:
a search that takes long blocks no other request, and queries during inserts all succeed and
see every document once its job is done."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from server_support import API_KEY, AUTH, RunningServer, open_app


def test_a_slow_search_blocks_no_other_request(fresh, monkeypatch):
    app = open_app([f"w={fresh('naive')}"], "--api-key", API_KEY)
    index = app.state.server.workspaces.get("w").index
    release, entered = threading.Event(), threading.Event()
    original = index.as_retriever

    def slow(*args, **kwargs):
        if kwargs.get("k") == 7:  # only the first request's search waits
            entered.set()
            assert release.wait(20)
        return original(*args, **kwargs)

    monkeypatch.setattr(index, "as_retriever", slow)
    with RunningServer(app) as server, ThreadPoolExecutor(1) as pool:
        stuck = pool.submit(httpx.post, f"{server.url}/w/query", json={"query": "harbour", "k": 7}, headers=AUTH, timeout=30)
        assert entered.wait(20)
        started = time.monotonic()
        assert httpx.get(f"{server.url}/health").status_code == 200
        other = httpx.post(f"{server.url}/w/query", json={"query": "harbour", "k": 2}, headers=AUTH, timeout=10)
        assert other.status_code == 200 and len(other.json()["hits"]) == 2
        assert time.monotonic() - started < 5 and not stuck.done()
        release.set()
        assert stuck.result().status_code == 200


def test_queries_during_inserts_all_succeed_and_then_find_every_document(fresh):
    app = open_app([f"w={fresh('lightrag')}"], "--api-key", API_KEY)
    with RunningServer(app) as server, httpx.Client(base_url=server.url, headers=AUTH, timeout=60) as client:
        texts = [{"id": f"new/{i}", "text": f"Skipper Number{i} sails the boat Gannet{i} out of Port Amsel every spring."} for i in range(40)]
        jobs = [client.post("/w/documents", json={"documents": texts[i:i + 10]}).json()["id"] for i in range(0, 40, 10)]

        def ask(i: int) -> tuple[int, int]:
            answer = httpx.post(f"{server.url}/w/query", json={"query": f"Who sails Gannet{i}?", "k": 3, "mode": ["hybrid", "naive"][i % 2]},
                                headers=AUTH, timeout=60)
            return answer.status_code, len(answer.json().get("hits", []))

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(ask, range(64)))
        assert results == [(200, 3)] * 64
        deadline = time.monotonic() + 120
        while any(client.get(f"/jobs/{j}").json()["status"] in ("queued", "running") for j in jobs):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert [client.get(f"/jobs/{j}").json()["status"] for j in jobs] == ["done"] * 4
        listed = {d["id"] for d in client.get("/w/documents", params={"limit": 1000}).json()["documents"]}
        assert {t["id"] for t in texts} <= listed
        for i in (0, 17, 39):
            hits = client.post("/w/query", json={"query": f"Who sails the boat Gannet{i}?", "mode": "naive", "k": 1}).json()["hits"]
            assert hits[0]["provenance"]["document_ids"] == [f"new/{i}"]
