"""Insert jobs: a failure is reported with its reason, a stopping server finishes its jobs
first, and a read-only server sees what another writer commits."""

from __future__ import annotations

from server_support import API_KEY, AUTH, open_app, wait_for

from rhizome.core.errors import ModelUnavailableError


def test_a_failed_job_says_why(fresh, client_for, monkeypatch):
    location = fresh("naive")
    client = client_for([f"w={location}"], "--api-key", API_KEY)
    index = client.app.state.server.workspaces.get("w").index

    async def down(documents):
        raise ModelUnavailableError(f"Ollama is not reachable; nothing was written to {location}")

    monkeypatch.setattr(index, "ainsert", down)
    job = wait_for(client, client.post("/w/documents", json={"documents": ["x"]}, headers=AUTH).json()["id"])
    assert job["status"] == "failed" and job["finished"]
    assert job["error"] == "Ollama is not reachable; nothing was written to <workspace w>"
    monkeypatch.undo()
    assert wait_for(client, client.post("/w/documents", json={"documents": ["y"]}, headers=AUTH).json()["id"])["status"] == "done"


def test_writes_run_in_the_order_they_came(fresh, client_for):
    client = client_for([f"w={fresh('naive')}"], "--api-key", API_KEY)
    first = client.post("/w/documents", json={"documents": [{"id": "d", "text": "First version."}]}, headers=AUTH).json()
    second = client.post("/w/documents", json={"documents": [{"id": "d", "text": "Second version."}]}, headers=AUTH).json()
    assert wait_for(client, second["id"])["result"]["replaced"] == ["d"]
    assert wait_for(client, first["id"])["result"]["inserted"] == ["d"]
    hit = client.post("/w/query", json={"query": "version", "filter": None, "k": 10}, headers=AUTH).json()["hits"]
    assert [h["text"] for h in hit if h["provenance"]["document_ids"] == ["d"]] == ["Second version."]


def test_a_stopping_server_finishes_its_jobs_first(fresh):
    from fastapi.testclient import TestClient

    from rhizome.core.store.storage import load_index

    location = fresh("lightrag")
    texts = [{"id": f"late/{i}", "text": f"Skipper Late{i} sails out of Port Amsel."} for i in range(30)]
    with TestClient(open_app([f"w={location}"], "--api-key", API_KEY), base_url="http://127.0.0.1") as client:
        client.post("/w/documents", json={"documents": texts}, headers=AUTH)
    index = load_index(location, offline=True, readonly=True)
    try:
        assert {t["id"] for t in texts} <= set(index.store.document_ids())
    finally:
        index.close()


def test_a_read_only_server_sees_another_writers_commits(fresh, client_for):
    from rhizome.core.store.storage import load_index

    location = fresh("naive")
    client = client_for([f"w={location}"], "--read-only")
    assert client.get("/workspaces").json()["workspaces"][0]["writable"] is False
    writer = load_index(location, offline=True)
    try:
        writer.insert([{"id": "fresh.md", "text": "The ferry Gannet now sails to Little Skerry every Sunday."}])
    finally:
        writer.close()
    hits = client.post("/w/query", json={"query": "Which ferry sails to Little Skerry on Sunday?", "k": 1}).json()["hits"]
    assert hits[0]["provenance"]["document_ids"] == ["fresh.md"]
    assert client.get("/workspaces").json()["workspaces"][0]["counts"]["documents"] == 9
