"""The router model ``rhizome/agent`` through the official ``openai`` and ``ollama`` clients
against a real uvicorn on a free loopback port: each question goes through the LangGraph agent
(here its offline router), which picks the workspace and mode by the question's kind, and the
answer carries the passages it cites."""

from __future__ import annotations

import pytest
from server_support import API_KEY, AUTH, RunningServer, open_app

SPECIFIC = "Who drew the first map of the islands?"
GLOBAL = "What are the main themes across the documents?"
MULTI_HOP = "Which trade affects the fisheries that the Moot regulates?"


def test_openai_client_sees_the_agent_and_it_routes_each_question_by_its_kind(running):
    from openai import OpenAI

    client = OpenAI(base_url=f"{running.url}/v1", api_key=API_KEY, max_retries=0)
    assert [m.id for m in client.models.list()][-1] == "rhizome/agent"
    routes = {}
    for question in (SPECIFIC, GLOBAL, MULTI_HOP):
        completion = client.chat.completions.create(model="rhizome/agent", messages=[{"role": "user", "content": question}])
        route = completion.model_extra["routes"]
        assert len(route) == 1 and route[0]["query"] == question
        routes[question] = (route[0]["workspace"], route[0]["mode"])
        text = completion.choices[0].message.content
        assert text and "Sources:\n- " in text
        citations = completion.model_extra["citations"]
        assert citations and all(c["document_ids"] for c in citations)
        assert all(f"[{c['id']}]" in text for c in citations)  # each cited passage is named in the answer
    # the naive index suits specific questions only; LightRAG's modes say global suits global
    # questions and hybrid multi-hop ones first (describe_modes)
    assert routes == {SPECIFIC: ("docs", None), GLOBAL: ("light", "global"), MULTI_HOP: ("light", "hybrid")}
    first = client.chat.completions.create(model="rhizome/agent", messages=[{"role": "user", "content": SPECIFIC}])
    assert first.model_extra["citations"][0]["document_ids"] == ["03-ilse-varn.md"]


def test_the_agent_streams_and_keeps_the_last_user_turn_as_the_question(running):
    from openai import OpenAI

    client = OpenAI(base_url=f"{running.url}/v1", api_key=API_KEY, max_retries=0)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": GLOBAL},
                {"role": "assistant", "content": "Trade and the sea."}, {"role": "user", "content": SPECIFIC}]
    chunks = list(client.chat.completions.create(model="rhizome/agent", messages=messages, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "Sources:\n- Ilse Varn" in text
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].model_extra["routes"][0]["workspace"] == "docs"


def test_ollama_client_chats_and_generates_with_the_agent(running):
    import ollama

    client = ollama.Client(host=running.url, headers={"Authorization": f"Bearer {API_KEY}"})
    listed = {m.model: m.details.family for m in client.list().models}
    assert listed["rhizome/agent"] == "agent" and listed["rhizome/light:global"] == "lightrag"
    reply = client.chat(model="rhizome/agent", messages=[{"role": "user", "content": SPECIFIC}], stream=False)
    assert reply.done and "Sources:\n- Ilse Varn" in reply.message.content
    pieces = list(client.chat(model="rhizome/agent", messages=[{"role": "user", "content": GLOBAL}], stream=True))
    assert pieces[-1].done and "Sources:" in "".join(p.message.content for p in pieces)
    generated = client.generate(model="rhizome/agent", prompt=SPECIFIC, stream=False)
    assert "Ilse Varn" in generated.response


def test_the_agent_refuses_a_filter_and_an_agent_workspace_name(running, built):
    import httpx

    answer = httpx.post(f"{running.url}/v1/chat/completions", headers=AUTH, json={
        "model": "rhizome/agent", "messages": [{"role": "user", "content": SPECIFIC}], "filter": {"title": "x"}})
    assert answer.status_code == 400 and "takes no filter" in answer.json()["error"]["message"]
    from rhizome.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="agent"):
        open_app([f"agent={built('naive')}"])


def test_with_a_chat_model_the_model_calls_the_workspace_tools(built, monkeypatch):
    """``--llm ollama:MODEL``: the agent's model (here the Ollama stub) is given one tool per
    workspace, with the modes as an enum; it calls one, then answers citing a passage by id."""
    import re

    from ollama_stub import OllamaStub, StubToolCalls
    from openai import OpenAI

    def reply(body):
        results = [m for m in body["messages"] if m.get("role") == "tool"]
        if not results:
            return StubToolCalls([("light", {"query": "first map of the islands", "mode": "local", "k": 2})])
        first = re.search(r"\[([^\]]+)\]", results[0]["content"]).group(1)
        return f"Ilse Varn drew the first map [{first}]."

    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        stub.reply_fn = reply
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        app = open_app([f"docs={built('naive')}", f"light={built('lightrag')}"], "--api-key", API_KEY, "--llm", "ollama:qwen2.5:7b-instruct")
        with RunningServer(app) as server:
            client = OpenAI(base_url=f"{server.url}/v1", api_key=API_KEY, max_retries=0)
            completion = client.chat.completions.create(model="rhizome/agent", messages=[{"role": "user", "content": SPECIFIC}])
            chunks = list(client.chat.completions.create(model="rhizome/agent", messages=[{"role": "user", "content": SPECIFIC}], stream=True))
        tools = {t["function"]["name"]: t["function"]["parameters"] for t in stub.calls("/api/chat")[0]["tools"]}
    assert set(tools) == {"docs", "light"} and "local" in tools["light"]["properties"]["mode"]["enum"]
    assert completion.model_extra["routes"] == [{"workspace": "light", "mode": "local", "query": "first map of the islands"}]
    text = completion.choices[0].message.content
    assert text.startswith("Ilse Varn drew the first map [") and "\n\nSources:\n- " in text
    assert len(completion.model_extra["citations"]) == 1
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == text and chunks[-1].model_extra["routes"] == completion.model_extra["routes"]
