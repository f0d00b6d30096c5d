"""Extraction on Ray (rhizome.core.extraction.parallel): the same index as one process, row for row, on
SQLite and on PostgreSQL; an interrupted run resumes through the shared cache; the CLI spreads
the work over two Ollama servers. One local Ray for the module (it takes seconds to start)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from rhizome.core.errors import ConfigurationError, ModelUnavailableError
from rhizome.core.extraction.parallel import DistributedExtractor, RayWorkers, as_workers
from rhizome.tools.testing import CORPUS, FailingChatModel, IndexConformance

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ollama_stub import OllamaStub  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")  # one worker starts Ray, once


@pytest.fixture(scope="module")
def ray_local():
    ray = RayWorkers(workers=2).start()
    yield ray
    ray.shutdown()


def build(method: str, *, workers: Any, path: Any = None, llm: Any = None, **options: Any) -> Any:
    return IndexConformance().build(method, path=path, llm=llm or FailingChatModel(), workers=workers, batch_size=4, **options)


@pytest.mark.parametrize("method", ["graphrag", "hipporag"])
def test_a_ray_build_equals_a_single_process_build(method, ray_local, tmp_path):
    alone = build(method, workers=None, path=tmp_path / "alone", cache=False)
    spread = build(method, workers=2, path=tmp_path / "spread", cache=False)
    assert isinstance(spread.extractor, DistributedExtractor)
    assert spread.store.contents() == alone.store.contents()
    assert spread.llm.usage.calls == alone.llm.usage.calls > 0  # the workers' calls are counted here
    alone.close()
    spread.close()


def test_on_postgres_the_workers_share_the_cache_in_the_database_and_a_killed_run_resumes(ray_local, postgres, monkeypatch):
    from rhizome.core.store.backends.postgres import PostgresCache

    monkeypatch.delenv("RHIZOME_CACHE_DIR")  # the index's own cache: the database table
    clean = build("graphrag", workers=None, path=postgres.url(), cache=False)
    price = clean.llm.usage.calls
    url = postgres.url()
    # each task gets the model as it is when the batch starts: the second batch's copies have
    # counted the first batch's calls already, so they fail at once, in the workers
    failing = FailingChatModel(fail_after=price // 4)
    with pytest.raises(ModelUnavailableError):  # raised in a worker, typed here
        build("graphrag", workers=2, path=url, llm=failing)
    answered = len(PostgresCache(url))
    assert answered > 0  # what the workers were paid for before the failure is kept
    healthy = FailingChatModel()
    resumed = IndexConformance().build("graphrag", path=url, llm=healthy, workers=2, batch_size=4, documents=[])
    resumed.insert(CORPUS)
    assert resumed.store.contents() == clean.store.contents()
    assert healthy.usage.calls <= price - answered, "an answer in the shared cache was paid again"
    clean.close()
    resumed.close()


def test_the_cli_spreads_extraction_over_two_ollama_servers(ray_local, corpus_folder, tmp_path, monkeypatch):
    from rhizome.core.models.fake import SchemaResponder
    from rhizome.rag.cli import main

    folder = corpus_folder
    responder = SchemaResponder()
    models = ["qwen2.5:7b", "nomic-embed-text"]
    with OllamaStub(models=models, embed_dimension=32) as first, OllamaStub(models=models, embed_dimension=32) as second:
        for stub in (first, second):
            stub.reply_fn = lambda body: responder(body["messages"], body["format"]) if body.get("format") else "ok"
        monkeypatch.setenv("OLLAMA_HOST", first.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        flags = ["--method", "graphrag", "--llm", "ollama:qwen2.5:7b", "--embed", "ollama:nomic-embed-text", "--no-cache", "-q"]
        assert main(["index", str(folder), "--out", str(tmp_path / "alone"), *flags]) == 0
        alone = len(first.calls("/api/chat"))
        assert main(["index", str(folder), "--out", str(tmp_path / "spread"), *flags,
                     "--workers", "2", "--ollama-hosts", f"{first.url},{second.url}"]) == 0
        spread = (len(first.calls("/api/chat")) - alone, len(second.calls("/api/chat")))
    assert sum(spread) == alone and min(spread) > 0, spread
    from rhizome.core.store.storage import load_index

    indexes = [load_index(tmp_path / name, offline=True) for name in ("alone", "spread")]
    assert indexes[0].store.contents() == indexes[1].store.contents()
    for index in indexes:
        index.close()


def test_workers_must_be_positive_and_ray_must_be_installed(monkeypatch):
    with pytest.raises(ConfigurationError, match="positive"):
        as_workers(0)
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigurationError, match=r"rhizome-core\[ray\]"):
        RayWorkers(workers=1).start()
