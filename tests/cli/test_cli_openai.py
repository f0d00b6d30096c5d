"""The `rhizome` command line on an OpenAI-compatible server (a loopback stub of vLLM's API):
an index built and queried through it, LightRAG extracting through it, `rhizome status`, and
the errors when the server is down or lacks the model."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openai_stub import OpenAIStub, closed_port_url

from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.models.fake import SchemaResponder
from rhizome.core.store.storage import read_manifest
from rhizome.rag.cli import main, sample_corpus

CHAT, EMBED = "Qwen/Qwen2.5-7B-Instruct", "BAAI/bge-small-en-v1.5"


@pytest.fixture(autouse=True)
def _no_server_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RHIZOME_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "RHIZOME_OPENAI_API_KEY", "RHIZOME_LLM",
                "RHIZOME_EMBED", "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def responder_for(stub: OpenAIStub) -> None:
    """Structured steps get schema-shaped JSON (from the schema sent as response_format), answers text."""
    responder = SchemaResponder()

    def reply(body: dict[str, Any]) -> Any:
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if schema:
            return responder([{"role": "user", "content": body["messages"][-1]["content"]}], schema)
        return "Agnes Brodd led the closure [1]."

    stub.reply_fn = reply


def test_an_index_is_built_and_queried_through_an_openai_compatible_server(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "idx"
    lexical = HashingEmbedder(256)  # the server's vectors: lexical, so the right passage is found
    with OpenAIStub(models=[CHAT, EMBED]) as stub:
        responder_for(stub)
        stub.embed_fn = lambda text: lexical.embed([text])[0].tolist()
        code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(out),
                           "--embed", f"openai:{EMBED}", "--base-url", stub.url, "--no-cache", "-q")
        assert code == 0, err
        assert read_manifest(out).models["embedder"] == f"openai:{EMBED}"
        indexed = len(stub.calls("/v1/embeddings"))
        assert indexed > 0 and all(b["model"] == EMBED for b in stub.calls("/v1/embeddings"))

        # reopened with the embedder it records; the server from the environment this time
        monkeypatch.setenv("RHIZOME_BASE_URL", stub.base_url)
        code, printed, err = run(capsys, "query", str(out), "Who led the closure of the Mire Banks?", "--answer",
                                 "--llm", f"openai:{CHAT}", "--json", "-k", "2", "--no-cache")
        assert code == 0, err
        payload = json.loads(printed)
        assert payload["hits"][0]["provenance"]["document_ids"] == ["07-mire-fisheries.md"]
        assert "Agnes Brodd" in json.dumps(payload)
        assert len(stub.calls("/v1/embeddings")) == indexed + 1  # the query, embedded as the passages were
        chats = stub.calls("/v1/chat/completions")
        assert chats and all(c["model"] == CHAT for c in chats)
        assert stub.calls("/v1/models")  # the server was checked, and its window read

        code, printed, _ = run(capsys, "status")
        assert code == 0 and f"OpenAI-compatible server at {stub.base_url}: 2 models" in printed
        assert f"{CHAT} (8,192 tokens)" in printed


def test_lightrag_extracts_through_an_openai_compatible_server(tmp_path, capsys) -> None:
    out = tmp_path / "lr"
    with OpenAIStub(models=[CHAT]) as stub:
        responder_for(stub)
        code, _, err = run(capsys, "index", str(sample_corpus()), "--method", "lightrag", "--out", str(out),
                           "--embed", "hashing:384", "--llm", f"openai:{CHAT}", "--base-url", stub.base_url, "--no-cache", "-q")
        assert code == 0, err
        structured = [c for c in stub.calls("/v1/chat/completions") if c.get("response_format")]
        assert structured and all(c["response_format"]["type"] == "json_schema" for c in structured)
    code, printed, err = run(capsys, "status", str(out))
    assert code == 0, err
    assert f"chat model: openai:{CHAT}" in printed
    entities = int(re.search(r"graph: (\d+) entities", printed).group(1))  # type: ignore[union-attr]
    assert entities > 0  # what the model named went into the graph


def test_a_server_that_is_down_or_lacks_the_model_is_a_clear_error(tmp_path, capsys) -> None:
    code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "a"), "--method", "lightrag", "--llm", f"openai:{CHAT}",
                       "--embed", "hashing", "--base-url", closed_port_url(), "-q")
    assert code == 2 and "no OpenAI-compatible server is reachable" in err and "--base-url" in err
    with OpenAIStub(models=["other"]) as stub:
        code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "b"), "--embed", f"openai:{EMBED}",
                           "--base-url", stub.base_url, "-q")
        assert code == 2 and f"serves no model '{EMBED}'" in err and "it serves: other" in err
        assert not stub.calls("/v1/embeddings")  # refused before any work
        code, printed, _ = run(capsys, "status", "--base-url", closed_port_url())
    assert code == 0 and "no OpenAI-compatible server is reachable" in printed
    code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "c"), "--offline", "--embed", f"openai:{EMBED}", "-q")
    assert code == 2 and "--offline" in err


def test_the_demo_runs_offline_when_the_server_is_down(capsys, tmp_path, monkeypatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, out, _ = run(capsys, "demo", "-q", "--method", "naive", "--llm", f"openai:{CHAT}", "--embed", f"openai:{EMBED}",
                       "--base-url", closed_port_url())
    assert code == 0 and "no OpenAI-compatible server is reachable" in out and "Running offline" in out
    assert "Agnes Brodd" in out


def test_model_flags_and_variables_reach_the_openai_models(monkeypatch) -> None:
    import argparse

    from rhizome.tools.cli import make_cli_chat_model, make_cli_embedder, model_flags

    parser = argparse.ArgumentParser()
    model_flags(parser)
    monkeypatch.setenv("RHIZOME_BASE_URL", "gpu-box:8000")
    args = parser.parse_args(["--no-cache", "--num-ctx", "4096", "--timeout", "30", "--max-retries", "0", "--concurrency", "1"])
    llm = make_cli_chat_model(f"openai:{CHAT}", args)
    assert (llm.base_url, llm.context_window, llm.timeout, llm.transport_retries, llm.max_retries, llm.max_concurrency) == (
        "http://gpu-box:8000/v1", 4096, 30.0, 0, 0, 1)
    embedder = make_cli_embedder(f"openai:{EMBED}", parser.parse_args(["--no-cache", "--base-url", "http://other:1234/v1"]))
    assert embedder.base_url == "http://other:1234/v1" and embedder.name == f"openai:{EMBED}"
