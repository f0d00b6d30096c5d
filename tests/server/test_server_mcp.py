"""The MCP tools through the official SDK's own client: over stdio against a ``rhizome mcp``
subprocess, and over streamable HTTP against ``/mcp`` of a real uvicorn on a free loopback
port. Writes exist only with the opt-in flag, and over HTTP need the API key too."""

from __future__ import annotations

import sys
from typing import Any

import httpx
import pytest
from run_folders import run_folders
from server_support import API_KEY, AUTH, RunningServer, open_app

QUESTION = "Who drew the first map of the islands?"
READS = {"list_workspaces", "search", "answer", "graph_neighbourhood"}


def stdio_params(*argv: str) -> Any:
    """``rhizome mcp ARGV`` as the SDK starts it (in an environment of its own), with the test
    run's bytecode and temporary folders (tests/conftest.py): it reads the modules this run
    compiled instead of compiling them again (and writing them beside the sources)."""
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "rhizome.rag.cli", "mcp", *argv, "--offline", "--no-cache"], env=run_folders())


def http_client(url: str, key: str | None = API_KEY) -> Any:
    """An SDK client of ``url``/mcp, sending ``key`` as the server's clients do."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60)))


async def rest_call(method: str, url: str, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.request(method, url, **kwargs)


async def tool_names(client: Any) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def test_stdio_lists_searches_and_answers_with_provenance(built):
    from mcp import Client

    async with Client(stdio_params(f"docs={built('naive')}", f"light={built('lightrag')}")) as client:
        assert await tool_names(client) == READS
        listed = (await client.call_tool("list_workspaces", {})).structured_content
        assert [(w["name"], w["method"]) for w in listed["workspaces"]] == [("docs", "naive"), ("light", "lightrag")]
        found = await client.call_tool("search", {"workspace": "light", "query": QUESTION, "mode": "local", "k": 2})
        assert not found.is_error
        hits = found.structured_content["hits"]
        assert len(hits) == 2 and hits[0]["provenance"]["document_ids"] == ["03-ilse-varn.md"]
        assert {"score", "kind", "metadata"} <= set(hits[0]) and found.structured_content["mode"] == "local"
        cut = max(hit["score"] for hit in hits) + 1e-9  # a hair above the best relevance (hits are in the mode's order)
        none = await client.call_tool("search", {"workspace": "light", "query": QUESTION, "mode": "local", "k": 2,
                                                 "score_threshold": cut})
        assert not none.is_error and none.structured_content["hits"] == []
        assert any("score_threshold" in note for note in none.structured_content["notes"])
        out_of_range = await client.call_tool("search", {"workspace": "light", "query": QUESTION, "score_threshold": 1.5})
        assert out_of_range.is_error
        answered = await client.call_tool("answer", {"workspace": "docs", "query": QUESTION, "k": 1})
        assert answered.structured_content["extractive"] is True
        assert answered.structured_content["citations"][0]["provenance"]["document_ids"] == ["03-ilse-varn.md"]
        around = await client.call_tool("graph_neighbourhood", {"workspace": "light", "entity": "Ilse Varn", "limit": 5})
        assert not around.is_error, around.content
        graph = around.structured_content
        assert graph["entity"]["name"].lower() == "ilse varn" and 1 < len(graph["nodes"]) <= 5 and graph["edges"]
        flat = await client.call_tool("graph_neighbourhood", {"workspace": "docs", "entity": "Ilse Varn"})
        assert flat.is_error and "LightRAG" in flat.content[0].text  # a naive index keeps no graph: it names the methods that do


async def test_stdio_tool_errors_say_what_to_do_and_show_no_path(built):
    from mcp import Client

    location = str(built("naive"))
    async with Client(stdio_params(location)) as client:
        unknown = await client.call_tool("search", {"workspace": "nowhere", "query": QUESTION})
        assert unknown.is_error and "no workspace 'nowhere'" in unknown.content[0].text
        bad_mode = await client.call_tool("search", {"workspace": "naive", "query": QUESTION, "mode": "sideways"})
        assert bad_mode.is_error and "mode" in bad_mode.content[0].text
        bad_k = await client.call_tool("search", {"workspace": "naive", "query": QUESTION, "k": 0})
        assert bad_k.is_error
        for result in (unknown, bad_mode):
            assert location not in result.content[0].text


async def test_stdio_writes_only_with_the_flag(fresh):
    from mcp import Client

    index = fresh("naive", "w")
    async with Client(stdio_params(str(index))) as client:
        assert "insert_documents" not in await tool_names(client)
        refused = await client.call_tool("insert_documents", {"workspace": "w", "documents": ["A new text."]})
        assert refused.is_error
    async with Client(stdio_params(str(index), "--allow-writes")) as client:
        assert {"insert_documents", "delete_document"} <= await tool_names(client)
        text = "The tide at Oskel turns twice a day; Piet Hale logs it."
        job = await client.call_tool("insert_documents", {"workspace": "w", "documents": [{"id": "tides.md", "text": text}]})
        assert job.structured_content["status"] == "done" and job.structured_content["result"]["inserted"] == ["tides.md"]
        hits = (await client.call_tool("search", {"workspace": "w", "query": "tide at Oskel", "k": 1})).structured_content["hits"]
        assert hits[0]["provenance"]["document_ids"] == ["tides.md"]
        deleted = await client.call_tool("delete_document", {"workspace": "w", "document_id": "tides.md"})
        assert deleted.structured_content["deleted"] == ["tides.md"]
        missing = await client.call_tool("delete_document", {"workspace": "w", "document_id": "tides.md"})
        assert missing.is_error and "holds no document 'tides.md'" in missing.content[0].text


async def test_http_tools_behind_the_key(built):
    app = open_app([f"docs={built('naive')}"], "--api-key", API_KEY)
    with RunningServer(app) as server:
        async with http_client(server.url) as client:
            assert await tool_names(client) == READS
            found = (await client.call_tool("search", {"workspace": "docs", "query": QUESTION, "k": 3})).structured_content
            rest = (await rest_call("POST", f"{server.url}/docs/query", json={"query": QUESTION, "k": 3}, headers=AUTH)).json()
            assert [h["id"] for h in found["hits"]] == [h["id"] for h in rest["hits"]]  # the same call as the REST route
            assert [h["score"] for h in found["hits"]] == pytest.approx([h["score"] for h in rest["hits"]])
        unauthorised = await rest_call("POST", f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                  headers={"Accept": "application/json, text/event-stream"})
        assert unauthorised.status_code == 401 and "API key" in unauthorised.json()["error"]["message"]
        with pytest.raises(Exception):  # noqa: B017 - the SDK raises its transport's error for the 401
            async with http_client(server.url, key="wrong") as client:
                await client.list_tools()


async def test_http_writes_need_the_flag_and_the_key(fresh):
    keyless = open_app([f"w={fresh('naive')}"], "--mcp-writes")
    with RunningServer(keyless) as server:
        async with http_client(server.url, key=None) as client:
            assert "insert_documents" in await tool_names(client)
            refused = await client.call_tool("insert_documents", {"workspace": "w", "documents": ["A new text."]})
            assert refused.is_error and "--api-key" in refused.content[0].text
            assert (await client.call_tool("delete_document", {"workspace": "w", "document_id": "01-vell-islands.md"})).is_error
        assert (await rest_call("GET", f"{server.url}/w/documents")).json()["total"] == 8  # nothing written
    keyed = open_app([f"w={fresh('naive', 'w2')}"], "--mcp-writes", "--api-key", API_KEY)
    with RunningServer(keyed) as server:
        async with http_client(server.url) as client:
            job = await client.call_tool("insert_documents", {"workspace": "w", "documents": ["The tide at Oskel turns twice a day."]})
            assert job.structured_content["status"] == "done"
            deleted = await client.call_tool("delete_document", {"workspace": "w", "document_id": "01-vell-islands.md"})
            assert deleted.structured_content["deleted"] == ["01-vell-islands.md"]
        assert (await rest_call("GET", f"{server.url}/w/documents", headers=AUTH)).json()["total"] == 8  # one in, one out
    plain = open_app([f"w={fresh('naive', 'w3')}"], "--api-key", API_KEY)
    with RunningServer(plain) as server:
        async with http_client(server.url) as client:
            assert "insert_documents" not in await tool_names(client)


def test_making_the_app_leaves_the_process_logging_alone(built, monkeypatch):
    """The SDK's server configures the root logger when it is made (INFO, a rich handler, when
    the root has no handler yet): the app undoes it, so a process that embeds the server keeps
    its own logging."""
    import logging

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # a process that configured nothing (pytest's own handlers aside)
    monkeypatch.setattr(root, "level", logging.WARNING)
    app = open_app([f"docs={built('naive')}"])
    try:
        assert (root.handlers, root.level) == ([], logging.WARNING)
    finally:
        app.state.server.workspaces.close()


def test_a_browser_page_allowed_by_cors_may_send_the_mcp_headers(built, client_for):
    client = client_for([f"w={built('naive')}"], "--cors", "http://page.example")
    preflight = {"Origin": "http://page.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type,mcp-protocol-version"}
    answer = client.options("/mcp", headers=preflight)
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "http://page.example"
    assert "mcp-protocol-version" in answer.headers["access-control-allow-headers"].lower()
