"""Security by default: loopback only unless a key is set, writes always need the key, a
workspace is a name (never a path), bodies are limited, CORS is off unless asked, and errors
show no path or traceback."""

from __future__ import annotations

import pytest
from server_support import API_KEY, AUTH, open_app, serve_args

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.server.settings import ServerSettings, is_loopback

WRITES = [("POST", "/w/documents", {"documents": ["A new text."]}), ("DELETE", "/w/documents/01-vell-islands.md", None)]


@pytest.fixture
def keyless(fresh, client_for):
    return client_for([f"w={fresh('naive')}"])


@pytest.fixture
def keyed(fresh, client_for):
    return client_for([f"w={fresh('naive')}"], "--api-key", API_KEY)


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_a_server_without_a_key_refuses_every_write_and_says_how_to_set_one(keyless, method, path, body):
    answer = keyless.request(method, path, json=body)
    assert answer.status_code == 401
    assert "--api-key" in answer.json()["error"]["message"] and "RHIZOME_API_KEY" in answer.json()["error"]["message"]
    assert answer.headers["www-authenticate"] == "Bearer"
    assert keyless.get("/w/documents").json()["total"] == 8  # nothing written; reads are open on loopback


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"}, {"Authorization": API_KEY}])
def test_a_write_without_the_right_key_is_401(keyed, method, path, body, headers):
    assert keyed.request(method, path, json=body, headers=headers).status_code == 401
    assert keyed.get("/w/documents", headers=AUTH).json()["total"] == 8


def test_the_key_opens_writes_either_header(keyed):
    assert keyed.delete("/w/documents/01-vell-islands.md", headers={"X-API-Key": API_KEY}).status_code == 200
    assert keyed.delete("/w/documents/02-port-amsel.md", headers=AUTH).status_code == 200


@pytest.mark.parametrize("path", ["/workspaces", "/w/documents", "/v1/models", "/api/tags", "/jobs/x"])
def test_with_a_key_set_every_read_but_health_needs_it(keyed, path):
    assert keyed.get(path).status_code == 401
    assert keyed.get("/health").status_code == 200


def test_a_read_only_server_refuses_writes_even_with_the_key(built, client_for):
    client = client_for([f"w={built('naive')}"], "--api-key", API_KEY, "--read-only")
    answer = client.post("/w/documents", json={"documents": ["x"]}, headers=AUTH)
    assert answer.status_code == 403 and "--read-only" in answer.json()["error"]["message"]
    assert client.post("/w/query", json={"query": "harbour"}, headers=AUTH).status_code == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.org"])
def test_a_non_loopback_bind_without_a_key_refuses_to_start(host):
    assert not is_loopback(host)
    with pytest.raises(ConfigurationError, match="refusing to listen on .*--api-key"):
        ServerSettings(host=host).check()
    assert ServerSettings(host=host, api_key=API_KEY).check().host == host


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_needs_no_key(host):
    assert ServerSettings(host=host).check().api_key is None


def test_rhizome_serve_refuses_before_opening_anything(built, capsys, monkeypatch):
    from rhizome.rag.cli import main

    monkeypatch.delenv("RHIZOME_API_KEY", raising=False)
    assert main(["serve", str(built("naive")), "--host", "0.0.0.0", "--offline"]) == 2
    assert "refusing to listen on 0.0.0.0" in capsys.readouterr().err
    assert main(["serve", str(built("naive")), "--api-key", " ", "--offline"]) == 2
    assert "the API key is empty" in capsys.readouterr().err


def test_the_key_comes_from_the_environment_too(monkeypatch):
    from rhizome.server.command import settings_from

    monkeypatch.setenv("RHIZOME_API_KEY", "from-env")
    assert settings_from(serve_args("--host", "0.0.0.0")).api_key == "from-env"
    assert settings_from(serve_args("--api-key", "flag")).api_key == "flag"


@pytest.mark.parametrize("path", ["/%2E%2E/query", "/%2E%2E%2Fw/query", "/..%2Fw/query", "/%2Ftmp%2Fw/query", "/w%2F..%2Fw/query", "/W/query", "/.w/query"])
def test_a_workspace_is_a_name_never_a_path(keyed, path):
    assert keyed.post(path, json={"query": "harbour"}, headers=AUTH).status_code == 404


@pytest.mark.parametrize("name", ["../w", "/w", "w/", "..", "", "W"])
def test_only_a_configured_name_finds_a_workspace(keyed, name):
    from rhizome.server.errors import WorkspaceNotFoundError

    with pytest.raises(WorkspaceNotFoundError):
        keyed.app.state.server.workspaces.get(name)


def test_an_oversized_body_is_413_announced_or_streamed(fresh, client_for):
    client = client_for([f"w={fresh('naive')}"], "--api-key", API_KEY, max_body=4096)
    big = {"documents": ["word " * 2000]}
    answer = client.post("/w/documents", json=big, headers=AUTH)
    assert answer.status_code == 413 and "--max-body" in answer.json()["error"]["message"]

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(10):
            yield b" " * 1000

    streamed = client.post("/w/documents", content=chunks(), headers={**AUTH, "Content-Type": "application/json"})
    assert streamed.status_code == 413
    ollama = client.post("/api/chat", json={"model": "rhizome/w", "messages": [{"role": "user", "content": "x" * 5000}]}, headers=AUTH)
    assert ollama.status_code == 413 and isinstance(ollama.json()["error"], str)  # in Ollama's shape under /api
    assert client.get("/w/documents", headers=AUTH).json()["total"] == 8


def test_cors_is_off_unless_an_origin_is_given(built, client_for):
    preflight = {"Origin": "http://page.example", "Access-Control-Request-Method": "POST"}
    off = client_for([f"w={built('naive')}"])
    assert "access-control-allow-origin" not in off.options("/w/query", headers=preflight).headers
    assert "access-control-allow-origin" not in off.get("/health", headers={"Origin": "http://page.example"}).headers
    on = client_for([f"w={built('naive')}"], "--cors", "http://page.example")
    assert on.options("/w/query", headers=preflight).headers["access-control-allow-origin"] == "http://page.example"
    other = {**preflight, "Origin": "http://elsewhere.example"}
    assert "access-control-allow-origin" not in on.options("/w/query", headers=other).headers


def test_errors_show_no_path_and_no_traceback(built, client_for, monkeypatch):
    location = built("naive")
    client = client_for([f"w={location}"], "--api-key", API_KEY, raise_server_exceptions=False)
    index = client.app.state.server.workspaces.get("w").index

    def typed(*args, **kwargs):
        raise InvalidInputError(f"{location} holds something odd; fix {location}/records.sqlite")

    monkeypatch.setattr(index, "as_retriever", typed)
    answer = client.post("/w/query", json={"query": "harbour"}, headers=AUTH)
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert str(location) not in message and "<workspace w> holds something odd" in message

    def crash(*args, **kwargs):
        raise RuntimeError(f"SELECT * FROM chunks failed in {location}")

    monkeypatch.setattr(index, "as_retriever", crash)
    answer = client.post("/w/query", json={"query": "harbour"}, headers=AUTH)
    assert answer.status_code == 500
    assert answer.json()["error"]["message"] == "the server failed to handle this request; its log has the details"
    assert "SELECT" not in answer.text and "Traceback" not in answer.text and str(location) not in answer.text


def test_settings_are_checked(built):
    with pytest.raises(ConfigurationError, match="--port"):
        ServerSettings(port=70000).check()
    with pytest.raises(ConfigurationError, match="--max-body"):
        ServerSettings(max_body=10).check()
    with pytest.raises(ConfigurationError, match="refusing"):
        open_app([str(built("naive"))], host="0.0.0.0")


@pytest.mark.parametrize(("error", "status"), [
    ("ModelUnavailableError", 503), ("ModelTimeoutError", 504), ("ModelServerError", 502), ("IndexLockedError", 409),
    ("IndexCorruptError", 500), ("IndexWriteError", 500),
])
def test_typed_errors_map_to_statuses(built, client_for, monkeypatch, error, status):
    import os

    import rhizome.core.errors as kinds

    location = built("naive")
    client = client_for([f"w={location}"], raise_server_exceptions=False)
    index = client.app.state.server.workspaces.get("w").index
    host = os.environ["OLLAMA_HOST"]

    def fail(*args, **kwargs):
        raise getattr(kinds, error)(f"Ollama at {host} failed; see {location}/records.sqlite")

    monkeypatch.setattr(index, "as_retriever", fail)
    answer = client.post("/w/query", json={"query": "harbour"})
    assert answer.status_code == status
    message = answer.json()["error"]["message"]
    assert str(location) not in message and host not in message
    if status == 500:  # storage errors name files: the client gets the generic message
        assert message == "the server failed to handle this request; its log has the details"
    else:
        assert message == "Ollama at the model server failed; see <workspace w>/records.sqlite"


@pytest.mark.parametrize(("host", "allowed"), [
    ("127.0.0.1:8080", True), ("localhost", True), ("LOCALHOST:80", True), ("[::1]:8080", True), ("127.0.0.2", True),
    ("evil.example", False), ("evil.example:8080", False), ("10.0.0.5", False), ("", False), ("localhost.evil.example", False),
])
def test_a_loopback_server_answers_only_loopback_host_names(keyed, host, allowed):
    """DNS rebinding: a page of another site pointed at 127.0.0.1 carries its own host name."""
    answer = keyed.get("/health", headers={"Host": host})
    assert answer.status_code == (200 if allowed else 400)
    if not allowed:
        assert "loopback host name" in answer.json()["error"]["message"]


def test_a_server_on_another_address_answers_any_host_name(built, client_for):
    client = client_for([f"w={built('naive')}"], "--api-key", API_KEY, host="0.0.0.0")
    assert client.get("/health", headers={"Host": "rag.example"}).status_code == 200
