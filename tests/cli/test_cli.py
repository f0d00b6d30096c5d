"""The `rhizome` command line, end to end: offline, against a loopback Ollama stub, and errors."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from ollama_stub import OllamaStub, closed_port_url
from run_folders import run_folders

from rhizome.core.store.storage import method_registry
from rhizome.rag.cli import main, sample_corpus
from rhizome.tools.testing import index_class as load_method


@pytest.fixture(autouse=True)
def _temporary_folders_in_tmp_path(tmp_path, monkeypatch):
    """`rhizome demo` without --out makes a new folder per run under the temporary directory:
    here, the test's own (it left hundreds in /tmp)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_then_query_offline(tmp_path, capsys):
    out_dir = tmp_path / "idx"
    code, out, _ = run(capsys, "index", str(sample_corpus()), "--out", str(out_dir), "--offline", "-q")
    assert code == 0
    code, out, _ = run(capsys, "index", str(sample_corpus()), "--out", str(out_dir), "--offline")
    assert code == 0 and "0 new, 0 changed, 8 unchanged" in out  # a re-run finds nothing new
    code, out, _ = run(capsys, "query", str(out_dir), "Who led the closure of the Mire Banks?", "--json", "-k", "2")
    assert code == 0
    payload = json.loads(out)
    assert len(payload["hits"]) == 2
    top = payload["hits"][0]
    assert top["provenance"]["document_ids"] == ["07-mire-fisheries.md"]
    assert top["provenance"]["spans"][0]["start"] == 0
    code, out, _ = run(capsys, "query", str(out_dir), "Who led the closure of the Mire Banks?", "--answer", "--offline")
    assert code == 0 and "Agnes Brodd" in out and "extractive" in out
    # --score-threshold: the hits scoring below it are left out, and the notes say so
    threshold = (payload["hits"][0]["score"] + payload["hits"][1]["score"]) / 2
    code, out, _ = run(capsys, "query", str(out_dir), "Who led the closure of the Mire Banks?", "--json", "-k", "2",
                       "--score-threshold", str(threshold))
    kept = json.loads(out)
    assert code == 0 and [h["id"] for h in kept["hits"]] == [top["id"]] and "left out" in " ".join(kept["notes"])
    code, _, err = run(capsys, "query", str(out_dir), "Who led the closure of the Mire Banks?", "--score-threshold", "1")
    assert code == 1 and "no hits" in err and "score_threshold" in err
    code, _, err = run(capsys, "query", str(out_dir), "Mire Banks", "--score-threshold", "7")
    assert code == 2 and "between 0 and 1" in err


def test_a_damaged_chunk_is_left_out_of_a_query_and_index_stores_it_again(tmp_path, capsys):
    """Defect: a chunk text changed outside Rhizome failed every query that reached it, and
    indexing the unchanged files again skipped its document, so nothing could store it again."""
    import shutil
    import sqlite3

    docs = tmp_path / "docs"
    shutil.copytree(sample_corpus(), docs)
    out_dir = tmp_path / "idx"
    assert run(capsys, "index", str(docs), "--out", str(out_dir), "--method", "lightrag", "--offline", "-q")[0] == 0
    with sqlite3.connect(out_dir / "records.sqlite") as db:
        db.execute("UPDATE chunks SET text = CAST(X'4F736B656CFF' AS TEXT) WHERE document_id = '04-oskel-lighthouse.md'")
    code, out, err = run(capsys, "query", str(out_dir), "Who was the first keeper of the Oskel lighthouse?", "-k", "3", "--offline")
    assert code == 0 and out.startswith("[1] ") and "Traceback" not in err
    assert "note: left out 1 passage whose stored text is damaged: chunk 04-oskel-lighthouse.md:0" in out
    assert f"from {docs / '04-oskel-lighthouse.md'}" in out and "IndexDamageWarning" not in err  # said once, as a note
    assert run(capsys, "check", str(out_dir))[0] == 1
    code, out, _ = run(capsys, "index", str(docs), "--out", str(out_dir), "--offline", "--sync")
    assert code == 0 and "0 new, 0 changed, 7 unchanged, 1 stored again (their stored text was damaged), 0 removed" in out
    assert run(capsys, "check", str(out_dir))[0] == 0
    code, out, _ = run(capsys, "query", str(out_dir), "Who was the first keeper of the Oskel lighthouse?", "-k", "3", "--offline")
    assert code == 0 and "left out" not in out and "04-oskel-lighthouse" in out


def test_demo_runs_offline_when_ollama_is_down(capsys, tmp_path):
    code, out, _ = run(capsys, "demo", "-q")
    assert code == 0
    assert "not reachable" in out and "ollama serve" in out and "Running offline" in out
    (made,) = tmp_path.glob("rhizome-demo-*")  # a new folder per run, and the demo says where
    assert f"The indexes are in {made}, a new temporary folder" in out
    for expected in ("Piet Hale", "Agnes Brodd", "Salt Exchange"):
        assert expected in out
    methods = sorted(method_registry())
    for method in methods:  # every installed method is built, and answers in every mode
        assert re.search(rf"  {method:<10} \d+ chunks", out), method
        for mode in load_method(method).modes:
            assert f"  {method}/{mode} " in out or (method == "naive" and "  naive " in out)
    assert "graphrag: " in out and "communities in" in out and "most connected:" in out  # what the graph holds
    commands = [line.strip() for line in out.splitlines() if line.strip().startswith("uv run rhizome")]
    assert commands and all("--offline" in c for c in commands if " query " in c or " index " in c)
    for command in commands[:-1]:  # the printed commands work as printed (the last needs the user's folder)
        argv = shlex.split(command)[3:]
        if "export" in argv:
            argv[argv.index("--out") + 1] = str(Path(argv[1]).parent / "g.graphml")
        assert run(capsys, *argv)[0] == 0, command


def test_demo_uses_ollama_when_it_is_running(capsys, monkeypatch):
    from rhizome.core.models.fake import SchemaResponder

    responder = SchemaResponder()

    def reply(body):  # structured steps (query keywords, fact filters) get JSON; answers get text
        return responder(body["messages"], body["format"]) if body.get("format") else "Piet Hale kept the light [1]."

    with OllamaStub(models=["qwen2.5:7b-instruct", "nomic-embed-text:latest"], embed_dimension=16) as stub:
        stub.reply_fn = reply
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, out, _ = run(capsys, "demo", "-q", "--no-cache")
    assert code == 0, out
    methods = sorted(method_registry())
    answers = [line for line in out.splitlines() if line.endswith("Piet Hale kept the light [1].")]
    assert len(answers) == 3 * len(methods)  # each method's default mode, in the model's words
    streamed = [c for c in stub.calls("/api/chat") if c["stream"]]
    assert len(streamed) == 3 * len(methods) and all("format" not in c for c in streamed)
    assert streamed[0]["options"]["num_ctx"] >= 2048
    assert stub.calls("/api/embed") and "mode: embedder ollama:nomic-embed-text" in out
    assert "--offline" not in out


def test_model_settings_come_from_flags_then_rhizome_variables(capsys, monkeypatch):
    with OllamaStub(models=["qwen2.5:7b-instruct", "nomic-embed-text:latest"], embed_dimension=16) as stub:
        stub.reply_fn = lambda body: {"answer": "ok", "citations": [1]}
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        monkeypatch.setenv("RHIZOME_NUM_CTX", "2048")
        monkeypatch.setenv("RHIZOME_KEEP_ALIVE", "3m")
        code, out, _ = run(capsys, "demo", "-q", "--method", "naive", "--no-cache", "--num-ctx", "4096", "--max-retries", "0", "--concurrency", "1", "--timeout", "30")
        assert code == 0, out
        chats = stub.calls("/api/chat")
        assert {c["options"]["num_ctx"] for c in chats} == {4096} and {c["keep_alive"] for c in chats} == {"3m"}
        monkeypatch.setenv("RHIZOME_TIMEOUT", "soon")
        code, _, err = run(capsys, "demo", "-q", "--method", "naive", "--no-cache")
    assert code == 2 and "RHIZOME_TIMEOUT='soon'" in err and "--timeout" in err
    code, _, err = run(capsys, "demo", "-q", "--num-ctx", "0")
    assert code == 2 and "--num-ctx must be positive" in err


def test_a_slow_ollama_is_waited_for_and_reported_as_slow(capsys, monkeypatch):
    with OllamaStub(models=["qwen2.5:7b-instruct", "nomic-embed-text:latest"], embed_dimension=16) as stub:
        stub.reply_fn = lambda body: {"answer": "Piet Hale kept the light.", "citations": [1]}
        stub.tags_delay = 2.5  # longer than the old 2 s check, well within the read timeout
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, out, _ = run(capsys, "demo", "-q", "--method", "naive", "--no-cache")
        assert code == 0 and "Piet Hale kept the light." in out and "Running offline" not in out
        code, out, _ = run(capsys, "demo", "-q", "--method", "naive", "--timeout", "1")
    assert code == 0 and "running at" in out and "but did not list its models within 1 s" in out
    assert "Running offline" in out  # the demo still runs, and says why it went offline


def test_demo_falls_back_when_models_are_not_pulled(capsys, monkeypatch):
    with OllamaStub(models=["something-else"]) as stub:
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, out, _ = run(capsys, "demo", "-q")
    assert code == 0
    assert "ollama pull nomic-embed-text" in out and "ollama pull qwen2.5:7b-instruct" in out
    assert "Agnes Brodd" in out


def test_index_without_ollama_says_what_to_do(tmp_path, capsys):
    code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "i"))
    assert code == 2
    assert "ollama serve" in err and "--offline" in err
    assert not (tmp_path / "i").exists()


def test_index_with_a_missing_model(tmp_path, capsys, monkeypatch):
    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "i"), "--embed", "ollama:bge-m3")
    assert code == 2 and "ollama pull bge-m3" in err


def test_query_errors(tmp_path, capsys):
    code, _, err = run(capsys, "query", str(tmp_path / "none"), "q")
    assert code == 2 and "no Rhizome index" in err
    run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "i"), "--offline", "-q")
    code, _, err = run(capsys, "query", str(tmp_path / "i"), "q", "--mode", "global")
    assert code == 2 and "unknown mode 'global'" in err
    code, _, err = run(capsys, "index", str(tmp_path / "missing-dir"), "--out", str(tmp_path / "j"), "--offline")
    assert code == 2 and "does not exist" in err


def test_index_json_and_jsonl_files(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.json").write_text(json.dumps([{"title": "A", "context": "Alpha text about owls."}]))
    (tmp_path / "docs" / "b.jsonl").write_text(json.dumps({"id": "b1", "text": "Beta text about otters."}) + "\n")
    code, out, _ = run(capsys, "index", str(tmp_path / "docs"), "--out", str(tmp_path / "i"), "--offline")
    assert code == 0 and "documents: 2 new" in out
    code, out, _ = run(capsys, "query", str(tmp_path / "i"), "otters", "--json", "-k", "1")
    assert json.loads(out)["hits"][0]["provenance"]["document_ids"] == ["b1"]


def test_json_output_is_strict_json_when_an_old_index_holds_nan(tmp_path, capsys):
    """Defect: an index written before metadata was checked on input may hold NaN, which
    `--json` printed as the bare NaN no strict JSON reader accepts."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Alpha text about owls.", encoding="utf-8")
    assert run(capsys, "index", str(tmp_path / "docs"), "--out", str(tmp_path / "i"), "--offline", "-q")[0] == 0
    import sqlite3

    with sqlite3.connect(tmp_path / "i" / "records.sqlite") as raw:  # as an older Rhizome stored it
        raw.execute("UPDATE documents SET metadata = json_set(metadata, '$.rating', 'x')")
        raw.execute("UPDATE documents SET metadata = replace(metadata, '\"x\"', 'NaN')")

    def strict(text: str):
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the output"))

    code, out, _ = run(capsys, "query", str(tmp_path / "i"), "owls", "--json", "-k", "1", "--offline")
    hit = strict(out)["hits"][0]
    assert code == 0 and hit["metadata"]["rating"] is None


def test_console_script_runs_the_offline_demo(tmp_path):
    script = Path(sys.executable).parent / "rhizome"
    if not script.exists():
        pytest.skip("the rhizome console script is not installed in this environment")
    env = {"PATH": str(Path(sys.executable).parent), "OLLAMA_HOST": closed_port_url(), "HOME": str(tmp_path), **run_folders()}
    result = subprocess.run([str(script), "demo", "--offline", "--out", str(tmp_path / "demo")], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Salt Exchange" in result.stdout
    assert (tmp_path / "demo" / "naive" / "manifest.json").exists() and (tmp_path / "demo" / "graphrag" / "manifest.json").exists()


def test_query_offline_ignores_the_chat_model_the_index_was_built_with(tmp_path, capsys):
    out_dir = tmp_path / "i"
    run(capsys, "index", str(sample_corpus()), "--out", str(out_dir), "--offline", "-q")
    manifest = json.loads((out_dir / "manifest.json").read_text())
    manifest["models"]["llm"] = "ollama:qwen2.5:7b-instruct"  # as if built with Ollama
    (out_dir / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = run(capsys, "query", str(out_dir), "Who kept the Oskel light?")
    assert code == 2 and "--offline" in err and "ollama serve" in err
    code, out, _ = run(capsys, "query", str(out_dir), "Who kept the Oskel light?", "--offline", "--json")
    assert code == 0 and json.loads(out)["hits"]


@pytest.mark.parametrize("method,mode", [("graphrag", "global"), ("graphrag", "local"), ("lightrag", "hybrid")])
def test_graph_methods_index_query_and_answer_offline(tmp_path, capsys, method, mode):
    out_dir = tmp_path / method
    code, out, err = run(capsys, "index", str(sample_corpus()), "--method", method, "--out", str(out_dir), "--offline", "-q")
    assert code == 0, err
    code, out, err = run(capsys, "query", str(out_dir), "Who was the first keeper of the Oskel lighthouse?", "--mode", mode, "--answer", "--offline", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["hits"] and payload["answer"]["text"]
    cited_docs = {d for h in payload["hits"] for d in h["provenance"]["document_ids"]}
    assert cited_docs <= {p.name for p in sample_corpus().iterdir()}


def _docs(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    names = ["Mira Holt sails the Tarn ferry.", "Osric Vane keeps the Gull Island light.", "Petra Lind chairs the Salt Guild."]
    for i, text in enumerate(names[:n]):
        (folder / f"d{i}.txt").write_text(text, encoding="utf-8")
    return folder


def test_reopening_an_index_honours_offline_and_refuses_another_embedder(tmp_path, capsys, monkeypatch):
    """Defect: `rhizome index --offline` on an existing index ignored the flag (the chat model
    it was built with was rebuilt from the manifest)."""
    from rhizome.core.models.fake import SchemaResponder

    responder = SchemaResponder()
    out = tmp_path / "i"
    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        stub.reply_fn = lambda body: responder([{"role": "user", "content": body["messages"][-1]["content"]}], body.get("format"))
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, _, err = run(capsys, "index", str(_docs(tmp_path, 2)), "--method", "lightrag", "--out", str(out),
                           "--embed", "hashing:384", "--llm", "ollama:qwen2.5:7b-instruct", "--no-cache", "-q")
        assert code == 0, err
        built_with_model = len(stub.calls("/api/chat"))
    assert built_with_model > 0
    # the server is gone: --offline must not reach for it, and says which flag new documents need
    code, _, err = run(capsys, "index", str(_docs(tmp_path, 3)), "--method", "lightrag", "--out", str(out), "--offline", "-q")
    assert code == 2 and "--llm" in err and "not reachable" not in err
    code, _, err = run(capsys, "index", str(_docs(tmp_path, 3)), "--method", "lightrag", "--out", str(out), "--embed", "hashing:256", "-q")
    assert code == 2 and "built with the embedder 'hashing:384'" in err


def test_a_first_run_that_stored_no_vector_takes_another_embedder(tmp_path, capsys, monkeypatch):
    """Defect: a first `rhizome index` whose embedder failed left an index bound to that
    embedder, and the flag its error advised (another --embed) was refused."""
    out = tmp_path / "i"
    with OllamaStub(models=["nomic-embed-text"]) as stub:  # the server cannot embed: the first run stops
        stub.embed_fn = lambda text: []
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, _, err = run(capsys, "index", str(_docs(tmp_path, 2)), "--out", str(out), "--embed", "ollama:nomic-embed-text", "-q")
    assert code != 0 and (out / "manifest.json").exists()
    code, _, err = run(capsys, "index", str(_docs(tmp_path, 2)), "--out", str(out), "--embed", "hashing:384", "-q")
    assert code == 0, err
    assert json.loads((out / "manifest.json").read_text())["models"]["embedder"] == "hashing:384"
    code, printed, _ = run(capsys, "docs", "list", str(out))
    assert code == 0 and "2 documents: 2 done" in printed
    # with vectors stored, another embedder is refused again
    code, _, err = run(capsys, "index", str(_docs(tmp_path, 2)), "--out", str(out), "--embed", "hashing:256", "-q")
    assert code == 2 and "built with the embedder 'hashing:384'" in err


def test_an_embedder_flag_names_the_same_model_or_is_refused_by_index_and_query(tmp_path, capsys):
    """Defects: `--embed hashing` was refused on a `hashing:384` index (the same embedder), and
    `rhizome query --embed OTHER` was silently ignored."""
    out = tmp_path / "i"
    assert run(capsys, "index", str(_docs(tmp_path, 2)), "--out", str(out), "--offline", "-q")[0] == 0
    assert run(capsys, "index", str(_docs(tmp_path, 2)), "--out", str(out), "--embed", "hashing", "-q")[0] == 0
    assert run(capsys, "query", str(out), "d0", "-k", "1", "--embed", "hashing")[0] == 0
    code, _, err = run(capsys, "query", str(out), "d0", "-k", "1", "--embed", "hashing:128")
    assert code == 2 and "built with the embedder 'hashing:384', but --embed asks for 'hashing:128'" in err


def test_status_describes_an_index(tmp_path, capsys):
    out = tmp_path / "g"
    assert run(capsys, "index", str(_docs(tmp_path, 3)), "--method", "graphrag", "--out", str(out), "--offline", "-q")[0] == 0
    code, printed, _ = run(capsys, "status", str(out))
    assert code == 0
    assert "method: graphrag" in printed and "documents: 3; chunks: 3" in printed
    assert "modes: local (default), global, drift, naive" in printed  # what to pass as --mode
    assert re.search(r"graph: \d+ entities, \d+ relations, \d+ communit(y|ies) in \d+ levels?", printed)
    assert "settings (GraphRAGConfig):" in printed and "gleaning = 1" in printed and "max_gleanings" in printed
    assert "extraction = offline" in printed and "unfinished" not in printed


def test_index_goes_on_past_a_document_the_model_cannot_answer(tmp_path, capsys, monkeypatch):
    from rhizome.core.extraction.prompts import EXTRACTION_SYSTEM
    from rhizome.core.models.fake import SchemaResponder

    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Alice Brown founded the Acme Company in Paris.", encoding="utf-8")
    (corpus / "b.txt").write_text("Zed Quill sailed the Blue Ketch to Oslo.", encoding="utf-8")
    (corpus / "c.txt").write_text("The Acme Company hired Carl Dunn in Paris.", encoding="utf-8")
    out_dir = str(tmp_path / "idx")
    responder = SchemaResponder()
    poisoned = {"on": True}

    def reply(body):
        messages = body.get("messages") or []  # the stub hands a request without a body as {}
        if poisoned["on"] and any("Zed Quill" in m["content"] for m in messages):
            return "I would rather not."
        return responder(messages, body.get("format"))

    flags = ["--method", "graphrag", "--embed", "hashing:64", "--llm", "ollama:qwen2.5:7b-instruct", "--no-cache", "-q"]
    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        stub.reply_fn = reply
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, _, err = run(capsys, "index", str(corpus), "--out", out_dir, *flags, "--max-retries", "1")
        assert code == 1
        assert "2 documents done, 1 failed" in err and "b.txt: ModelOutputError" in err and "run the same command again" in err
        code, out, _ = run(capsys, "status", out_dir)
        assert code == 0 and "not stored: 1 failed" in out and "b.txt: failed — ModelOutputError" in out
        poisoned["on"] = False
        before = len(stub.calls("/api/chat"))
        code, _, err = run(capsys, "index", str(corpus), "--out", out_dir, *flags)
        assert code == 0, err
        calls = stub.calls("/api/chat")
    code, out, _ = run(capsys, "status", out_dir)
    assert "not stored" not in out and "documents: 3" in out
    extracted = [[str(b) for b in part if b.get("messages") and b["messages"][0]["content"] == EXTRACTION_SYSTEM]
                 for part in (calls[:before], calls[before:])]
    assert any("Acme" in b for b in extracted[0])
    assert extracted[1] and all("Zed Quill" in b and "Acme" not in b for b in extracted[1])  # only b is extracted again


def test_a_document_the_model_cannot_answer_is_retried_varied_then_extracted_offline(tmp_path, capsys, monkeypatch):
    from rhizome.core.models.base import VARIED_TEMPERATURE
    from rhizome.core.models.fake import SchemaResponder

    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Alice Brown founded the Acme Company in Paris.", encoding="utf-8")
    (corpus / "b.txt").write_text("Zed Quill sailed the Blue Ketch to Oslo.", encoding="utf-8")
    responder = SchemaResponder()

    def reply(body):
        messages = body.get("messages") or []
        if any("Zed Quill" in m["content"] for m in messages):
            return "I would rather not."
        return responder(messages, body.get("format"))

    flags = ["--method", "lightrag", "--embed", "hashing:64", "--llm", "ollama:qwen2.5:7b-instruct", "--no-cache", "-q"]
    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        stub.reply_fn = reply
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, _, err = run(capsys, "index", str(corpus), "--out", str(tmp_path / "idx"), *flags, "--max-retries", "0", "--fallback", "offline")
        asked = [b["options"] for b in stub.calls("/api/chat") if any("Zed Quill" in m["content"] for m in b.get("messages") or [])]
    assert code == 0, err
    assert "1 document extracted offline after the model's answers stayed invalid" in err and "b.txt" in err
    assert asked[0]["seed"] == 42 and asked[0]["temperature"] == 0.0  # as configured first,
    assert asked[-1]["seed"] != 42 and asked[-1]["temperature"] == VARIED_TEMPERATURE  # then varied
    code, out, _ = run(capsys, "status", str(tmp_path / "idx"))
    assert code == 0 and "not stored" not in out and "documents: 2" in out
    code, out, err = run(capsys, "query", str(tmp_path / "idx"), "Zed Quill", "--mode", "naive", "-k", "1", "--offline")
    assert code == 0 and "b.txt" in out, err


def test_query_prints_the_answer_as_the_model_streams_it(tmp_path, capsys, monkeypatch):
    run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "i"), "--offline", "-q")
    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        stub.default_reply = "Agnes Brodd drew the map [2]."
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, out, _ = run(capsys, "query", str(tmp_path / "i"), "Who drew the map?", "--answer", "--llm", "ollama:qwen2.5:7b-instruct", "--no-cache")
    assert code == 0 and "answer (written by the model): Agnes Brodd drew the map [2]." in out
    assert stub.calls("/api/chat")[-1]["stream"] is True


def test_index_stores_the_documents_when_the_whole_index_work_fails(tmp_path, capsys, monkeypatch):
    from rhizome.core.models.fake import SchemaResponder
    from rhizome.graphrag.prompts import REPORT_SYSTEM

    responder = SchemaResponder()
    poisoned = {"on": True}

    def reply(body):
        if poisoned["on"] and body["messages"][0]["content"] == REPORT_SYSTEM:
            return "No report today."
        return responder(body["messages"], body.get("format"))

    out_dir = str(tmp_path / "idx")
    flags = ["--method", "graphrag", "--embed", "hashing:64", "--llm", "ollama:qwen2.5:7b-instruct", "--no-cache", "-q", "--max-retries", "0"]
    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        stub.reply_fn = reply
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, _, err = run(capsys, "index", str(_docs(tmp_path, 3)), "--out", out_dir, *flags)
        assert code == 1
        assert "3 documents done, none failed" in err and "whole-index work after the change did not finish (ModelOutputError" in err
        code, out, _ = run(capsys, "status", out_dir)
        assert "documents: 3" in out and "unfinished:" in out
        poisoned["on"] = False
        code, _, err = run(capsys, "index", str(_docs(tmp_path, 3)), "--out", out_dir, *flags)
        assert code == 0, err
    code, out, _ = run(capsys, "status", out_dir)
    assert "unfinished" not in out


def test_a_file_where_a_folder_is_due_is_a_typed_error(tmp_path, capsys):
    from rhizome.core.errors import InvalidInputError
    from rhizome.core.naive import VectorIndex

    afile = tmp_path / "afile"
    afile.write_text("hi", encoding="utf-8")
    code, out, err = run(capsys, "index", str(sample_corpus()), "--out", str(afile), "--offline", "-q")
    assert code == 2 and f"cannot create an index at {afile}: {afile} is a file" in err
    code, out, err = run(capsys, "demo", "--offline", "--method", "naive", "--out", str(afile))
    assert code == 2 and f"{afile} is a file, and an index is a directory" in err
    with pytest.raises(InvalidInputError, match="is a file"):
        VectorIndex(path=afile)
    assert afile.read_text(encoding="utf-8") == "hi"
    run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "g"), "--method", "graphrag", "--offline", "-q")
    (tmp_path / "adir").mkdir()
    code, out, err = run(capsys, "export", str(tmp_path / "g"), "--out", str(tmp_path / "adir"))
    assert code == 2 and "adir is a folder; name the file to write" in err


def test_a_malformed_ollama_host_is_a_typed_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "::::")
    for module in ("ollama", "rhizome.core.models.ollama"):  # the ollama package reads OLLAMA_HOST when imported
        monkeypatch.delitem(sys.modules, module, raising=False)
    code, out, err = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "i"), "-q")
    assert code == 2 and "OLLAMA_HOST='::::' is not an address" in err and "HOST:PORT" in err


def test_a_reader_that_stops_reading_ends_the_command_quietly(tmp_path, capsys):
    script = Path(sys.executable).parent / "rhizome"
    if not script.exists():
        pytest.skip("the rhizome console script is not installed in this environment")
    run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "i"), "--offline", "-q")
    env = {"PATH": str(Path(sys.executable).parent), "OLLAMA_HOST": closed_port_url(), "HOME": str(tmp_path), **run_folders()}
    for argv in (["status", str(tmp_path / "i")], ["docs", "list", str(tmp_path / "i")],
                 ["query", str(tmp_path / "i"), "lighthouse", "--offline"]):
        read, write = os.pipe()
        os.close(read)  # `| head` that has already stopped reading
        try:
            result = subprocess.run([str(script), *argv], stdout=write, stderr=subprocess.PIPE, env=env, timeout=120)
        finally:
            os.close(write)
        assert (result.returncode, result.stderr) == (141, b""), argv


def test_offline_hashing_vectors_never_enter_the_model_call_cache(tmp_path, capsys, monkeypatch):
    """The per-user cache keeps model answers worth keeping: an offline index (hashing vectors,
    cheaper to compute than to look up) leaves it empty and the summary counts no answer from it."""
    from rhizome.core import HashingEmbedder
    from rhizome.core.store.cache import ModelCache

    monkeypatch.setenv("RHIZOME_CACHE_DIR", str(tmp_path / "cache"))
    code, out, _ = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "idx"), "--offline")
    assert code == 0 and "0 answers from the cache" in out
    code, out, _ = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "again"), "--offline")
    assert code == 0 and "0 answers from the cache" in out
    cache_file = tmp_path / "cache" / "model-calls.sqlite"
    assert not cache_file.exists() or len(ModelCache(cache_file)) == 0
    assert HashingEmbedder(cache=ModelCache(tmp_path / "own.sqlite")).cache is None  # given one, it keeps none


def test_index_into_an_existing_index_takes_its_method(tmp_path, capsys):
    """Updating an index needs no --method: the index's own is used (it said "choose another
    --out for 'naive'"); a different method asked for is still refused."""
    out_dir = tmp_path / "idx"
    code, _, _ = run(capsys, "index", str(sample_corpus()), "--out", str(out_dir), "--method", "lightrag", "--offline", "-q")
    assert code == 0
    code, out, _ = run(capsys, "index", str(sample_corpus()), "--out", str(out_dir), "--offline")
    assert code == 0 and "(lightrag;" in out and "8 unchanged" in out
    code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(out_dir), "--method", "naive", "--offline")
    assert code == 2 and "holds a 'lightrag' index" in err


def test_with_ollama_down_the_advice_is_one_that_can_work(tmp_path, capsys, monkeypatch):
    """Defect: every "not reachable" error advised "or pass --offline", also where --offline
    cannot help (an index built with Ollama's embedder is searched and updated with it) and in
    Python, which has no such flag; `query --answer` on an offline index claimed the index
    "queries" the default chat model."""
    from rhizome.core import OllamaEmbedder
    from rhizome.core.errors import ModelUnavailableError

    built = tmp_path / "ollama-built"
    with OllamaStub(models=["nomic-embed-text:latest"], embed_dimension=16) as stub:
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(built), "--embed", "ollama:nomic-embed-text", "--no-cache", "-q")
        assert code == 0, err
    monkeypatch.setenv("OLLAMA_HOST", closed_port_url())
    for argv in (["query", str(built), "Who kept the light?"],
                 ["index", str(sample_corpus()), "--out", str(built), "-q"],
                 ["docs", "delete", str(built), "01-vell-islands.md"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "not reachable" in err and "built with ollama:nomic-embed-text" in err, argv
        assert "--offline" not in err, argv
    code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "new"), "--embed", "ollama:nomic-embed-text", "-q")
    assert code == 2 and "or pass --offline" in err  # a new index can be built offline
    offline_built = tmp_path / "offline-built"
    assert run(capsys, "index", str(sample_corpus()), "--out", str(offline_built), "--offline", "-q")[0] == 0
    code, _, err = run(capsys, "query", str(offline_built), "Who kept the light?", "--answer")
    assert code == 2 and "--answer writes with ollama:" in err and "the default chat model" in err and "queries" not in err
    with pytest.raises(ModelUnavailableError) as raised:
        OllamaEmbedder("nomic-embed-text").embed(["a text"])
    assert "ollama serve" in str(raised.value) and "--offline" not in str(raised.value)


def test_messages_count_and_name_what_is_there(tmp_path, capsys):
    """Defects: "1 documents done"; a GraphML refusal for spRAG that spoke of RAPTOR's tree."""
    one = tmp_path / "one"
    one.mkdir()
    (one / "a.txt").write_text("Piet Hale kept the Oskel light for forty-one years.", encoding="utf-8")
    code, out, _ = run(capsys, "index", str(one), "--out", str(tmp_path / "s"), "--method", "sprag", "--offline")
    assert code == 0 and "1 document done, none failed" in out
    code, _, err = run(capsys, "export", str(tmp_path / "s"), "--format", "graphml", "--out", str(tmp_path / "s.graphml"))
    assert code == 2 and "passages only" in err and "summary nodes" not in err and "RAPTOR" not in err
    code, out, _ = run(capsys, "index", str(one), "--out", str(tmp_path / "g"), "--method", "graphrag", "--offline")
    assert code == 0 and "1 community in 1 level\n" in out
    code, out, _ = run(capsys, "export", str(tmp_path / "g"), "--format", "graphml", "--out", str(tmp_path / "g.graphml"))
    assert code == 0 and out.endswith("communities at 1 level as the node attribute community_0\n")  # not "community_1..."
    assert run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "r"), "--method", "raptor", "--offline", "-q")[0] == 0
    code, _, err = run(capsys, "export", str(tmp_path / "r"), "--format", "graphml", "--out", str(tmp_path / "r.graphml"))
    assert code == 2 and "a tree of summary nodes" in err


def test_contradicting_model_settings_are_refused_not_dropped(tmp_path, capsys, monkeypatch):
    """Defects: --offline --llm X dropped --llm; RHIZOME_TIMEOUT=soon was ignored with
    --offline; RHIZOME_EMBED was ignored by query while --embed was checked."""
    out_dir = tmp_path / "idx"
    assert run(capsys, "index", str(sample_corpus()), "--out", str(out_dir), "--offline", "-q")[0] == 0
    code, _, err = run(capsys, "query", str(out_dir), "Who kept the light?", "--offline", "--llm", "ollama:qwen2.5:7b-instruct")
    assert code == 2 and "cannot go with --llm" in err
    code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(out_dir), "--offline", "--embed", "ollama:nomic-embed-text")
    assert code == 2 and "cannot go with --embed" in err
    monkeypatch.setenv("RHIZOME_TIMEOUT", "soon")
    code, _, err = run(capsys, "query", str(out_dir), "Who kept the light?", "--offline")
    assert code == 2 and "RHIZOME_TIMEOUT='soon'" in err
    monkeypatch.delenv("RHIZOME_TIMEOUT")
    monkeypatch.setenv("RHIZOME_EMBED", "hashing:64")
    code, _, err = run(capsys, "query", str(out_dir), "Who kept the light?")
    assert code == 2 and "RHIZOME_EMBED asks for 'hashing:64'" in err and "unset RHIZOME_EMBED" in err  # no flag to drop
    code, _, err = run(capsys, "index", str(sample_corpus()), "--out", str(out_dir))  # index names the variable too
    assert code == 2 and "RHIZOME_EMBED asks for 'hashing:64'" in err and "unset RHIZOME_EMBED" in err
    monkeypatch.setenv("RHIZOME_EMBED", "hashing:384")  # the index's own: fine
    assert run(capsys, "query", str(out_dir), "Who kept the light?")[0] == 0


@pytest.mark.parametrize("flag", ["--purge-cache", "--keep-cache", None])
def test_docs_delete_forgets_what_the_model_said_about_the_documents_unless_kept(tmp_path, capsys, monkeypatch, flag):
    from rhizome.core.models.fake import SchemaResponder

    docs = tmp_path / "docs"
    docs.mkdir()
    # the longer passage: the fake takes its names from the longest passage of a prompt
    (docs / "canary.txt").write_text("Zorvexa Quintrell rowed from Brasklund to Mirvenholt, where Zorvexa sold charts.", encoding="utf-8")
    (docs / "ferry.txt").write_text("Captain Mira Holt runs the Tarn Harbour ferry to Gull Island.", encoding="utf-8")
    cache = tmp_path / "calls.sqlite"

    def cached() -> bytes:  # the file and its write-ahead log
        return b"".join(p.read_bytes() for p in tmp_path.glob("calls.sqlite*"))

    responder = SchemaResponder()
    with OllamaStub(models=["qwen2.5:7b-instruct", "nomic-embed-text:latest"], embed_dimension=16) as stub:
        stub.reply_fn = lambda body: responder(body["messages"], body["format"])
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        flags = ["--llm", "ollama:qwen2.5:7b-instruct", "--embed", "ollama:nomic-embed-text", "--cache", str(cache)]
        assert run(capsys, "index", str(docs), "--out", str(tmp_path / "i"), "--method", "lightrag", "-q", *flags)[0] == 0
        assert b"Zorvexa" in cached()
        code, out, _ = run(capsys, "docs", "delete", str(tmp_path / "i"), "canary.txt", "-q", *flags, *([flag] if flag else []))
    assert code == 0, out
    kept = flag == "--keep-cache"
    assert (b"Zorvexa" in cached()) == kept
    assert ("model-call cache entr" in out) == (not kept)


def test_query_reranks_with_the_chat_model_or_says_what_is_missing(tmp_path, capsys, monkeypatch):
    run(capsys, "index", str(sample_corpus()), "--out", str(tmp_path / "i"), "--offline", "-q")
    question = "Who led the closure of the Mire Banks?"
    code, out, _ = run(capsys, "query", str(tmp_path / "i"), question, "--json", "-k", "4")
    plain = [h["id"] for h in json.loads(out)["hits"]]
    with OllamaStub(models=["qwen2.5:7b-instruct"]) as stub:
        def reverse(body):  # the model puts the passages in the opposite order
            n = len(re.findall(r"^\[\d+\]", body["messages"][-1]["content"], re.M))
            return {"ranking": list(range(n, 0, -1))} if "ranking" in json.dumps(body.get("format")) else {
                "grades": [{"passage": i, "grade": i} for i in range(1, n + 1)]}

        stub.reply_fn = reverse
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        for kind in ("llm", "llm:pointwise"):
            code, out, _ = run(capsys, "query", str(tmp_path / "i"), question, "--json", "-k", "2", "--rerank", kind,
                               "--rerank-candidates", "4", "--llm", "ollama:qwen2.5:7b-instruct", "--no-cache")
            hits = json.loads(out)["hits"]
            assert code == 0 and [h["id"] for h in hits] == plain[::-1][:2], kind
            assert all("retrieval_score" in h["metadata"] for h in hits)
        assert len(stub.calls("/api/chat")) == 2
    code, _, err = run(capsys, "query", str(tmp_path / "i"), question, "--rerank", "llm", "--offline")
    assert code == 2 and "--rerank llm asks a chat model" in err
    code, _, err = run(capsys, "query", str(tmp_path / "i"), question, "--rerank", "magic")
    assert code == 2 and "--rerank takes llm" in err
    code, _, err = run(capsys, "query", str(tmp_path / "i"), question, "--rerank-candidates", "9")
    assert code == 2 and "give --rerank too" in err
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as where it is not installed
    code, _, err = run(capsys, "query", str(tmp_path / "i"), question, "--rerank", "cross-encoder:some/model", "--offline")
    assert code == 2 and "pip install torch==2.13.0 sentence-transformers" in err
