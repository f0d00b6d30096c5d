"""The chat endpoints through httpx against the app: OpenAI's and Ollama's shapes, model names,
streaming framing and citations."""

from __future__ import annotations

import json

import pytest
from server_support import API_KEY, AUTH

QUESTION = "Who drew the first map of the islands?"


@pytest.fixture
def client(built, client_for):
    return client_for([f"docs={built('naive')}", f"light={built('lightrag')}"], "--api-key", API_KEY)


def chat(model: str, *, stream: bool = False, **extra) -> dict:
    return {"model": model, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"},
                                         {"role": "assistant", "content": "Hi."}, {"role": "user", "content": QUESTION}],
            "stream": stream, **extra}


def test_v1_models_lists_each_workspace_and_mode(client):
    ids = [m["id"] for m in client.get("/v1/models", headers=AUTH).json()["data"]]
    assert ids[0] == "rhizome/docs" and "rhizome/light" in ids and "rhizome/light:global" in ids
    assert "rhizome/docs:None" not in ids


def test_chat_completion_answers_the_last_user_message_with_sources(client):
    body = client.post("/v1/chat/completions", json=chat("rhizome/light:local", k=3), headers=AUTH).json()
    assert body["object"] == "chat.completion" and body["model"] == "rhizome/light:local"
    text = body["choices"][0]["message"]["content"]
    assert body["choices"][0]["finish_reason"] == "stop"
    assert "\n\nSources:\n- Ilse Varn, cartographer (03-ilse-varn.md)" in text
    assert body["citations"][0]["document_ids"] == ["03-ilse-varn.md"] and "text" not in body["citations"][0]


def test_chat_completion_content_parts_and_extra_fields(client):
    request = {"model": "rhizome/docs", "messages": [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}],
               "temperature": 0.2, "filter": {"title": "Ilse Varn, cartographer"}}
    body = client.post("/v1/chat/completions", json=request, headers=AUTH).json()
    assert {d for c in body["citations"] for d in c["document_ids"]} == {"03-ilse-varn.md"}


def test_chat_completion_streams_openai_chunks_then_done(client):
    with client.stream("POST", "/v1/chat/completions", json=chat("rhizome/light", stream=True), headers=AUTH) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in answer.read().decode().split("\n\n") if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"} and len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert "Sources:\n- " in text
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and chunks[-1]["citations"]


@pytest.mark.parametrize("model", ["light", "rhizome/nowhere", "rhizome/light:nope", "rhizome/../light", "rhizome/"])
def test_an_unknown_model_is_404_listing_the_models(client, model):
    answer = client.post("/v1/chat/completions", json=chat(model), headers=AUTH)
    assert answer.status_code == 404
    assert "rhizome/light:local" in answer.json()["error"]["message"]


def test_a_chat_without_a_user_message_is_400(client):
    answer = client.post("/v1/chat/completions", json={"model": "rhizome/docs", "messages": [{"role": "system", "content": "x"}]}, headers=AUTH)
    assert answer.status_code == 400 and "user message" in answer.json()["error"]["message"]


def test_ollama_tags_list_the_same_models(client):
    models = client.get("/api/tags", headers=AUTH).json()["models"]
    openai_ids = [m["id"] for m in client.get("/v1/models", headers=AUTH).json()["data"]]
    assert [m["name"] for m in models] == openai_ids
    assert models[-2]["details"]["family"] == "lightrag" and models[-1]["details"]["family"] == "agent"  # rhizome/agent last
    assert client.get("/api/version", headers=AUTH).json()["version"]


def test_ollama_chat_streams_ndjson_by_default(client):
    with client.stream("POST", "/api/chat", json={k: v for k, v in chat("rhizome/light:hybrid").items() if k != "stream"}, headers=AUTH) as answer:
        assert answer.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in answer.read().decode().splitlines()]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert lines[-1]["done_reason"] == "stop" and lines[-1]["citations"]
    assert "Sources:" in "".join(line["message"]["content"] for line in lines)


def test_ollama_chat_and_generate_whole(client):
    body = client.post("/api/chat", json=chat("rhizome/docs:latest"), headers=AUTH).json()
    assert body["done"] is True and body["message"]["role"] == "assistant" and "Sources:" in body["message"]["content"]
    body = client.post("/api/generate", json={"model": "rhizome/docs", "prompt": QUESTION, "stream": False, "options": {"k": 1}}, headers=AUTH).json()
    assert body["done"] is True and body["response"].endswith("Sources:\n- Ilse Varn, cartographer (03-ilse-varn.md)")
    assert len(body["citations"]) == 1


def test_ollama_generate_streams(client):
    with client.stream("POST", "/api/generate", json={"model": "rhizome/docs", "prompt": QUESTION}, headers=AUTH) as answer:
        lines = [json.loads(line) for line in answer.read().decode().splitlines()]
    assert lines[-1]["done"] and "Sources:" in "".join(line["response"] for line in lines)


def test_ollama_errors_are_ollama_shaped(client):
    answer = client.post("/api/chat", json=chat("rhizome/nowhere"), headers=AUTH)
    assert answer.status_code == 404 and isinstance(answer.json()["error"], str)
    assert client.post("/api/generate", json={"model": "rhizome/docs"}, headers=AUTH).status_code == 422


def test_sources_name_each_document_once():
    from rhizome.core.types import Hit, Provenance
    from rhizome.server.answering import sources_text

    def hit(i: str, doc: str, title: str | None) -> Hit:
        return Hit(id=i, text="t", score=1.0, provenance=Provenance(document_ids=[doc]), metadata={"title": title} if title else {})

    shown = sources_text([hit("a:0", "a.md", "Alpha"), hit("b:0", "b.md", None), hit("a:1", "a.md", "Alpha")])
    assert shown == "\n\nSources:\n- Alpha (a.md)\n- b.md"
    assert sources_text([]) == ""


def test_an_empty_workspace_answers_that_it_found_nothing(tmp_path, client_for):
    from rhizome.core import HashingEmbedder, VectorIndex

    VectorIndex(HashingEmbedder(), path=tmp_path / "empty").close()
    client = client_for([str(tmp_path / "empty")])
    found = client.post("/empty/query", json={"query": "anything"}).json()
    assert found["hits"] == [] and "holds no documents" in found["notes"][0]
    reply = client.post("/v1/chat/completions", json=chat("rhizome/empty")).json()
    assert reply["choices"][0]["message"]["content"] == "No relevant passages were found." and reply["citations"] == []
