"""The REST API through httpx against the app: every route, its answers and its errors."""

from __future__ import annotations

import json

import pytest
from server_support import API_KEY, AUTH, wait_for


@pytest.fixture
def client(built, client_for):
    """Two read-only uses of the session's indexes: naive (one mode) and LightRAG (several)."""
    return client_for([f"docs={built('naive')}", f"light={built('lightrag')}"], "--api-key", API_KEY)


def test_health_needs_no_key(client):
    body = client.get("/health").json()
    assert body["status"] == "ok" and body["workspaces"] == 2


def test_workspaces_list_method_modes_models_and_counts(client):
    spaces = {w["name"]: w for w in client.get("/workspaces", headers=AUTH).json()["workspaces"]}
    assert set(spaces) == {"docs", "light"}
    light = spaces["light"]
    assert light["method"] == "lightrag"
    assert [m["name"] for m in light["modes"]][:3] == ["hybrid", "local", "global"]
    assert [m["default"] for m in light["modes"]].count(True) == 1 and light["modes"][0]["default"]
    assert light["models"] == {"embedder": "hashing:384", "llm": None}
    assert light["counts"]["documents"] == 8 and light["counts"]["entities"] > 0
    assert "rhizome/light" in light["chat_models"] and "rhizome/light:local" in light["chat_models"]
    assert spaces["docs"]["modes"] == [{"name": None, "purpose": spaces["docs"]["modes"][0]["purpose"], "suits": ["specific"], "default": True}]
    assert spaces["docs"]["chat_models"] == ["rhizome/docs"]


def test_query_returns_hits_with_provenance_metadata_and_stats(client):
    body = client.post("/light/query", json={"query": "Who drew the first map of the islands?", "mode": "local", "k": 3}, headers=AUTH).json()
    assert body["workspace"] == "light" and body["mode"] == "local"
    assert len(body["hits"]) == 3
    top = body["hits"][0]
    assert top["provenance"]["document_ids"] == ["03-ilse-varn.md"]
    assert top["metadata"]["title"] == "Ilse Varn, cartographer"
    assert 0.0 <= body["hits"][1]["score"] <= 1.0 and top["metadata"]["raw_score"] >= body["hits"][1]["metadata"]["raw_score"]
    assert "embed_calls" in body["stats"]
    threshold = sorted(h["score"] for h in body["hits"])[1]
    kept = client.post("/light/query", json={"query": "Who drew the first map of the islands?", "mode": "local", "k": 3,
                                             "score_threshold": threshold}, headers=AUTH).json()
    assert [h["id"] for h in kept["hits"]] == [h["id"] for h in body["hits"] if h["score"] >= threshold]
    bad = client.post("/light/query", json={"query": "islands", "score_threshold": 2}, headers=AUTH)
    assert bad.status_code == 422


def test_query_filter_restricts_the_documents(client):
    wanted = {"title": "Ilse Varn, cartographer"}
    body = client.post("/docs/query", json={"query": "lighthouse", "k": 5, "filter": wanted}, headers=AUTH).json()
    assert body["hits"] and {d for h in body["hits"] for d in h["provenance"]["document_ids"]} == {"03-ilse-varn.md"}


@pytest.mark.parametrize(("payload", "status", "says"), [
    ({"query": "x", "mode": "nope"}, 400, "unknown mode 'nope'"),
    ({"query": "x", "filter": {"colour": "red"}}, 400, "no stored document has the metadata field 'colour'"),
    ({"query": "x", "k": 0}, 422, "k"),
    ({"query": ""}, 422, "query"),
    ({"query": "x", "surprise": 1}, 422, "surprise"),
])
def test_bad_queries_are_4xx_with_what_to_do(client, payload, status, says):
    answer = client.post("/light/query", json=payload, headers=AUTH)
    assert answer.status_code == status
    assert says in answer.json()["error"]["message"]


def test_answer_as_json_cites_its_hits(client):
    body = client.post("/docs/answer", json={"query": "Who drew the first map of the islands?", "k": 3}, headers=AUTH).json()
    assert body["extractive"] is True  # offline: a sentence copied from the best hit
    assert body["answer"] and body["citations"]
    assert body["answer"] in body["citations"][0]["text"].replace("\n", " ") or body["answer"].split()[0] in body["citations"][0]["text"]


def events(text: str) -> list[tuple[str, dict]]:
    found = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_answer_streams_hits_then_pieces_then_done(client):
    with client.stream("POST", "/light/answer", json={"query": "Who drew the first map?", "k": 2, "stream": True}, headers=AUTH) as answer:
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
        found = events(answer.read().decode())
    names = [name for name, _ in found]
    assert names[0] == "hits" and names[-1] == "done" and "token" in names
    assert len(found[0][1]["hits"]) == 2
    assert found[-1][1]["answer"] == "".join(data["text"] for name, data in found if name == "token")


def test_a_bad_streamed_answer_fails_before_the_stream(client):
    answer = client.post("/light/answer", json={"query": "x", "mode": "nope", "stream": True}, headers=AUTH)
    assert answer.status_code == 400 and answer.headers["content-type"] == "application/json"


def test_documents_are_listed_with_status_and_paged(client):
    body = client.get("/docs/documents", headers=AUTH).json()
    assert body["total"] == 8 and len(body["documents"]) == 8
    assert {d["status"] for d in body["documents"]} == {"done"}
    assert all(d["chunks"] >= 1 and d["title"] for d in body["documents"])
    page = client.get("/docs/documents?offset=2&limit=3", headers=AUTH).json()
    assert [d["id"] for d in page["documents"]] == [d["id"] for d in body["documents"][2:5]]


def test_insert_runs_as_a_job_then_delete(fresh, client_for):
    client = client_for([f"w={fresh('lightrag')}"], "--api-key", API_KEY)
    posted = client.post("/w/documents", json={"documents": [
        "Brann Tolle keeps bees on the cliffs of Oskel.",
        {"id": "notes/harbour.md", "text": "The harbour master of Port Amsel is Cato Wren.", "metadata": {"title": "Harbour"}},
    ]}, headers=AUTH)
    assert posted.status_code == 202
    job = posted.json()
    assert job["status"] in ("queued", "running", "done") and job["documents"] == 2 and job["workspace"] == "w"
    job = wait_for(client, job["id"])
    assert job["status"] == "done", job
    assert sorted(job["result"]["inserted"])[1] == "notes/harbour.md" and job["progress"]["total"] >= 1
    listed = {d["id"]: d for d in client.get("/w/documents", headers=AUTH).json()["documents"]}
    assert listed["notes/harbour.md"]["status"] == "done" and listed["notes/harbour.md"]["title"] == "Harbour"
    hits = client.post("/w/query", json={"query": "Who is the harbour master of Port Amsel?", "mode": "naive", "k": 1}, headers=AUTH).json()["hits"]
    assert hits[0]["provenance"]["document_ids"] == ["notes/harbour.md"]
    deleted = client.delete("/w/documents/notes/harbour.md", headers=AUTH)  # an id with a slash
    assert deleted.status_code == 200 and deleted.json()["deleted"] == ["notes/harbour.md"]
    assert "notes/harbour.md" not in {d["id"] for d in client.get("/w/documents", headers=AUTH).json()["documents"]}
    again = client.delete("/w/documents/notes/harbour.md", headers=AUTH)
    assert again.status_code == 404 and "GET /w/documents" in again.json()["error"]["message"]


def test_a_bad_document_refuses_the_insert_and_queues_nothing(fresh, client_for):
    client = client_for([f"w={fresh('naive')}"], "--api-key", API_KEY)
    refused = client.post("/w/documents", json={"documents": ["fine", {"id": "x", "text": "   "}]}, headers=AUTH)
    assert refused.status_code == 400 and "has no text" in refused.json()["error"]["message"]
    assert client.get("/w/documents", headers=AUTH).json()["total"] == 8


def test_unknown_job_and_workspace_are_404(client):
    assert client.get("/jobs/nope", headers=AUTH).status_code == 404
    missing = client.post("/elsewhere/query", json={"query": "x"}, headers=AUTH)
    assert missing.status_code == 404 and "GET /workspaces lists them" in missing.json()["error"]["message"]


def test_openapi_schema_names_the_request_and_response_models(client):
    schema = client.get("/openapi.json").json()
    models = set(schema["components"]["schemas"])
    assert {"QueryRequest", "QueryResponse", "AnswerRequest", "AnswerResponse", "InsertRequest", "JobView",
            "DocumentList", "DeleteResponse", "WorkspaceList", "Hit", "ChatCompletion", "ModelListing", "Citation",
            "OllamaTags", "OllamaChatAnswer", "OllamaGenerateAnswer"} <= models
    assert "/{ws}/query" in schema["paths"] and "/v1/chat/completions" in schema["paths"] and "/api/chat" in schema["paths"]


def test_workspace_counts_follow_writes(fresh, client_for):
    client = client_for([f"w={fresh('lightrag')}"], "--api-key", API_KEY)

    def counts() -> dict:
        return client.get("/workspaces", headers=AUTH).json()["workspaces"][0]["counts"]

    before = counts()
    job = client.post("/w/documents", json={"documents": [{"id": "bees", "text": "Brann Tolle keeps bees on Oskel."}]}, headers=AUTH).json()
    assert wait_for(client, job["id"])["status"] == "done"
    after = counts()
    assert after["documents"] == before["documents"] + 1 and after["entities"] > before["entities"]
    client.delete("/w/documents/bees", headers=AUTH)
    assert counts() == before


def test_the_mode_reported_is_the_one_that_ran(client):
    assert client.post("/light/query", json={"query": "x"}, headers=AUTH).json()["mode"] == "hybrid"  # the default
    assert client.post("/docs/query", json={"query": "x"}, headers=AUTH).json()["mode"] is None  # one mode
    assert client.post("/docs/answer", json={"query": "x"}, headers=AUTH).json()["mode"] is None
    assert client.post("/light/answer", json={"query": "x", "mode": "global"}, headers=AUTH).json()["mode"] == "global"
