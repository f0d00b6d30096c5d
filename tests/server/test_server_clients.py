"""The official ``openai`` and ``ollama`` Python clients against a real uvicorn on a free
loopback port, offline and with a chat model (the Ollama stub) that streams its answer."""

from __future__ import annotations

import httpx
import pytest
from ollama_stub import OllamaStub
from server_support import API_KEY, RunningServer, open_app

QUESTION = "Who drew the first map of the islands?"


def test_openai_client_lists_models_and_chats(running):
    from openai import OpenAI

    client = OpenAI(base_url=f"{running.url}/v1", api_key=API_KEY, max_retries=0)
    ids = [m.id for m in client.models.list()]
    assert "rhizome/docs" in ids and "rhizome/light:local" in ids
    completion = client.chat.completions.create(model="rhizome/light:local", messages=[{"role": "user", "content": QUESTION}])
    assert "Sources:\n- Ilse Varn, cartographer" in completion.choices[0].message.content
    assert completion.model_extra["citations"][0]["document_ids"] == ["03-ilse-varn.md"]
    stream = client.chat.completions.create(model="rhizome/docs", messages=[{"role": "user", "content": QUESTION}], stream=True,
                                            extra_body={"k": 2})
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)
    sources = text.split("Sources:\n")[1].splitlines()
    assert len(sources) == 2 and all(line.startswith("- ") for line in sources)


def test_openai_client_sees_typed_errors(running):
    from openai import AuthenticationError, NotFoundError, OpenAI

    client = OpenAI(base_url=f"{running.url}/v1", api_key=API_KEY, max_retries=0)
    with pytest.raises(NotFoundError, match="no model 'rhizome/nowhere'"):
        client.chat.completions.create(model="rhizome/nowhere", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(AuthenticationError):
        OpenAI(base_url=f"{running.url}/v1", api_key="wrong", max_retries=0).models.list()


def test_ollama_client_lists_chats_and_generates(running):
    import ollama

    client = ollama.Client(host=running.url, headers={"Authorization": f"Bearer {API_KEY}"})
    names = [m.model for m in client.list().models]
    assert "rhizome/light:hybrid" in names
    reply = client.chat(model="rhizome/light", messages=[{"role": "user", "content": QUESTION}])
    assert reply.done and "Sources:" in reply.message.content
    pieces = list(client.chat(model="rhizome/docs", messages=[{"role": "user", "content": QUESTION}], stream=True))
    assert pieces[-1].done and "Sources:" in "".join(p.message.content for p in pieces)
    generated = client.generate(model="rhizome/docs", prompt=QUESTION, options={"k": 1})  # type: ignore[arg-type]
    assert generated.response.endswith("(03-ilse-varn.md)")
    with pytest.raises(ollama.ResponseError, match="no model"):
        client.chat(model="rhizome/nowhere", messages=[{"role": "user", "content": QUESTION}])


def test_a_chat_model_streams_its_answer_piece_by_piece(built, monkeypatch):
    """With a chat model, the answer comes as the model writes it: several pieces, the REST
    stream's ``done`` holding their text."""
    from openai import OpenAI

    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        said = "Ilse Varn drew the first map of the islands in 1702 [1]."
        # a whole answer is asked for as JSON (text and the numbers cited), a stream as text
        stub.reply_fn = lambda body: {"answer": said, "citations": [1]} if body.get("format") else said
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        app = open_app([f"docs={built('naive')}"], "--api-key", API_KEY, "--llm", "ollama:qwen2.5:7b-instruct")
        with RunningServer(app) as server:
            described = httpx.get(f"{server.url}/workspaces", headers={"Authorization": f"Bearer {API_KEY}"}).json()
            assert described["workspaces"][0]["models"]["llm"] == "ollama:qwen2.5:7b-instruct"
            client = OpenAI(base_url=f"{server.url}/v1", api_key=API_KEY, max_retries=0)
            stream = client.chat.completions.create(model="rhizome/docs", messages=[{"role": "user", "content": QUESTION}], stream=True)
            pieces = [chunk.choices[0].delta.content for chunk in stream if chunk.choices[0].delta.content]
            assert len(pieces) > 5  # word by word, then the sources
            assert "".join(pieces).startswith("Ilse Varn drew the first map of the islands in 1702 [1].\n\nSources:\n- ")
            whole = client.chat.completions.create(model="rhizome/docs", messages=[{"role": "user", "content": QUESTION}])
            assert whole.choices[0].message.content.startswith("Ilse Varn drew the first map")
            assert whole.model_extra["citations"][0]["document_ids"] == ["03-ilse-varn.md"]


def test_a_follow_up_is_made_to_stand_on_its_own_before_it_is_searched(built, monkeypatch):
    """Defect: a workspace model searched for the last user message alone, so "when did she
    draw it?" after a question about Ilse Varn found nothing about her. With a chat model the
    model rewrites the follow-up (Ollama's client here); offline, the previous question is
    searched for with it."""
    import ollama

    follow_up = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "Ilse Varn did."},
                 {"role": "user", "content": "When was that?"}]
    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        def reply(body):
            if body.get("format"):
                return {"answer": "In 1702 [1].", "citations": [1]}
            return "When did Ilse Varn draw the first map of the islands?" if "Last question:" in body["messages"][-1]["content"] else "x"

        stub.reply_fn = reply
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        app = open_app([f"docs={built('naive')}"], "--api-key", API_KEY, "--llm", "ollama:qwen2.5:7b-instruct")
        with RunningServer(app) as server:
            client = ollama.Client(host=server.url, headers={"Authorization": f"Bearer {API_KEY}"})
            said = client.chat(model="rhizome/docs", messages=follow_up, stream=False)
            rewrite = stub.calls("/api/chat")[0]["messages"][-1]["content"]
            assert "User: Who drew the first map of the islands?\nAssistant: Ilse Varn did." in rewrite
            answer_prompt = stub.calls("/api/chat")[-1]["messages"][-1]["content"]
            assert "Question: When did Ilse Varn draw the first map of the islands?" in answer_prompt
            assert said.message.content.startswith("In 1702 [1].\n\nSources:\n- Ilse Varn, cartographer (03-ilse-varn.md)")
    with RunningServer(open_app([f"docs={built('naive')}"], "--api-key", API_KEY)) as server:
        client = ollama.Client(host=server.url, headers={"Authorization": f"Bearer {API_KEY}"})
        said = client.chat(model="rhizome/docs", messages=follow_up, stream=False, options={"k": 1})
        assert said.message.content.endswith("Sources:\n- Ilse Varn, cartographer (03-ilse-varn.md)")
