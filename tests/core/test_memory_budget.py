"""The memory budget (``memory_gb=``, ``RHIZOME_MEMORY_GB``, ``rhizome index --memory-gb``): a
step that would not fit stops before it allocates or stores anything, with a typed error that
says what to do, and what was committed before stays."""

from __future__ import annotations

import json

import pytest

from rhizome.core import HashingEmbedder, MemoryBudgetError, VectorIndex, memory
from rhizome.core.errors import ConfigurationError
from rhizome.core.graph.leiden import WeightedEdges, hierarchical_leiden

DOCS = [{"id": f"d{i}", "text": f"Harbour {i} has a ferry to Tarn Island and a lighthouse near Holt Bay."} for i in range(40)]


@pytest.fixture
def held(monkeypatch):
    """What the process holds, as the budget sees it: set by the test (0 to start)."""
    state = {"bytes": 0}
    monkeypatch.setattr(memory, "resident_bytes", lambda: state["bytes"])
    return state


def test_the_budget_comes_from_the_setting_else_the_environment(monkeypatch):
    monkeypatch.delenv(memory.ENVIRONMENT, raising=False)
    assert memory.budget_bytes(None) is None
    assert memory.budget_bytes(2) == 2 * memory.GB
    monkeypatch.setenv(memory.ENVIRONMENT, "0.5")
    assert memory.budget_bytes(None) == memory.GB // 2
    assert memory.budget_bytes(3) == 3 * memory.GB  # the setting wins
    for bad in ("lots", "-1", "0"):
        monkeypatch.setenv(memory.ENVIRONMENT, bad)
        with pytest.raises(ConfigurationError, match=memory.ENVIRONMENT):
            memory.budget_bytes(None)
    with pytest.raises(ConfigurationError, match="memory_gb"):
        VectorIndex(HashingEmbedder(), memory_gb=0)


def test_require_compares_what_the_process_holds_plus_the_step_with_the_budget(held):
    memory.require("anything", 10**12, "-")  # no budget in force: nothing to check
    with memory.budget_scope(1000):
        memory.require("a small step", 600, "-")
        held["bytes"] = 500
        assert memory.fits(500) and not memory.fits(501)
        with pytest.raises(MemoryBudgetError, match="a big step needs about .* budget of") as caught:
            memory.require("a big step", 600, "do less")
        assert (caught.value.needed, caught.value.held, caught.value.budget) == (600, 500, 1000)
        assert "do less" in str(caught.value) and isinstance(caught.value, MemoryError)
    assert memory.current() is None


def test_an_index_in_memory_over_its_budget_stops_and_says_to_use_a_directory(held):
    index = VectorIndex(HashingEmbedder(), memory_gb=0.00008)  # about 86 kB: 8 chunks' vectors fit (twice over in memory), 32 more do not
    index.insert(DOCS[:8])
    with pytest.raises(MemoryBudgetError, match=r"path=") as caught:
        index.insert(DOCS)
    assert caught.value.step == "adding 32 vectors to the collection 'chunks'"
    assert index.store.count("documents") == 8 and len(index) == 8  # what was stored before stays, the batch is not half-written
    pending = {s.id: s for s in index.store.statuses() if s.status == "pending"}  # the next insert retries them, saying why
    assert sorted(pending) == sorted(d["id"] for d in DOCS[8:]) and "memory budget" in (pending["d8"].error or "")
    assert [h.id for h in index.as_retriever(k=1).retrieve("Harbour 3")]


def test_a_directory_index_resumes_under_a_larger_budget_and_keeps_no_budget_in_its_manifest(tmp_path, held, monkeypatch):
    monkeypatch.delenv(memory.ENVIRONMENT, raising=False)
    held["bytes"] = int(0.5 * memory.GB)
    index = VectorIndex(HashingEmbedder(), path=tmp_path / "idx", memory_gb=0.5)  # already full
    with pytest.raises(MemoryBudgetError, match="embedding 40 chunks needs about 60.0 kB"):
        index.insert(DOCS)
    assert index.store.count("documents") == 0
    index.close()
    assert "memory_gb" not in json.loads((tmp_path / "idx" / "manifest.json").read_text())["config"]
    again = VectorIndex(HashingEmbedder(), path=tmp_path / "idx", memory_gb=4)  # another budget: no configuration clash
    assert again.config.memory_gb == 4
    report = again.insert(DOCS)
    assert len(report.inserted) == len(DOCS) and len(again) == len(DOCS)
    again.close()
    monkeypatch.setenv(memory.ENVIRONMENT, "0.25")
    reopened = VectorIndex(path=tmp_path / "idx")
    assert reopened.config.memory_gb is None and reopened.memory_budget == memory.GB // 4
    held["bytes"] = memory.GB // 4 - 10_000  # one more chunk's vector fits, the collection's 40 do not
    with pytest.raises(MemoryBudgetError, match="loading the vector collection 'chunks'.*postgresql://"):
        reopened.insert([{"id": "late", "text": "Mira Holt runs the Tarn Harbour ferry."}])
    reopened.close()


def test_clustering_a_graph_over_the_budget_stops_before_igraph_gets_it(held):
    edges = [(f"n{i}", f"n{(i * 7 + 1) % 300}", 1.0) for i in range(300)]
    graph = WeightedEdges.from_edges(edges)
    hierarchical_leiden(graph, max_cluster_size=10, seed=1)  # no budget in force
    with memory.budget_scope(300 * memory.EDGE_BYTES), pytest.raises(MemoryBudgetError, match="clustering a graph of 300 nodes"):
        hierarchical_leiden(graph, max_cluster_size=10, seed=1)


def test_rhizome_index_takes_a_memory_budget(tmp_path, capsys):
    from rhizome.rag.cli import main, sample_corpus

    code = main(["index", str(sample_corpus()), "--out", str(tmp_path / "n"), "--offline", "--no-cache", "--memory-gb", "0.001", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "MemoryBudget" not in err and "memory budget of 1.0 MB" in err and "--memory-gb" in err
    assert main(["index", str(sample_corpus()), "--out", str(tmp_path / "n"), "--offline", "--no-cache", "--memory-gb", "16", "-q"]) == 0


def test_a_build_that_outgrew_its_budget_between_checked_steps_stops_at_the_next_batch(held):
    """Defect: what a method holds as Python objects is estimated nowhere, so a build that grew
    past its budget that way went on until the OOM killer; each batch now starts with a check."""
    index = VectorIndex(HashingEmbedder(), memory_gb=1, batch_size=10)
    index.insert(DOCS[:10])
    held["bytes"] = memory.GB + 1  # grown past the budget by what no step estimated
    with pytest.raises(MemoryBudgetError, match=r"before inserting a batch of 10 documents this process holds 1.00 GB, more than") as caught:
        index.insert(DOCS)
    assert caught.value.needed == 0 and index.store.count("documents") == 10  # stopped before the batch, the first stays
    held["bytes"] = 0
    assert len(index.insert(DOCS).inserted) == 30
