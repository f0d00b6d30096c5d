"""Smoke tests of the benchmark harness on tiny slices of the real data (the full runs live in
benchmarks/ and docs/benchmarks.md, not in the test suite)."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import data, harness, metrics
from benchmarks.__main__ import main
from benchmarks.systems import System, systems
from rhizome.core import Document, HashingEmbedder
from rhizome.core.types import Hit, Provenance

try:
    data.data_dir()
    HAVE_DATA = True
except FileNotFoundError:
    HAVE_DATA = False
needs_data = pytest.mark.skipif(not HAVE_DATA, reason="../shared/data is not beside the project")


def hit(doc_ids: list[str], text: str = "t", kind: str = "chunk") -> Hit:
    return Hit(id="h", text=text, score=1.0, kind=kind, provenance=Provenance(document_ids=doc_ids))


def test_recall_counts_passages_in_citation_order():
    ranked = metrics.ranked_documents([hit(["A", "B"]), hit(["B"]), hit(["C"])])
    assert ranked == ["A", "B", "C"]
    # every hit puts all the passages it cites at its rank, whatever its kind: a community
    # report ranked first pushes the chunks behind it
    mixed = [hit(["X", "Y", "Z"], kind="community"), hit(["C"]), hit(["Y"], kind="entity"), hit(["A"])]
    assert metrics.ranked_documents(mixed) == ["X", "Y", "Z", "C", "A"]
    assert metrics.recall_at(metrics.ranked_documents(mixed), ["C", "A"], 2) == 0.0
    assert metrics.recall_at(ranked, ["B", "C"], 2) == 0.5
    assert metrics.recall_at(ranked, ["B", "C"], 5) == 1.0
    assert metrics.recall_at(ranked, [], 5) == 0.0


def test_paired_counts_against_the_baseline():
    assert metrics.paired_counts([1.0, 0.5, 0.0, 1.0, 0.5], [0.5, 0.5, 1.0, 1.0, 0.0]) == {"wins": 2, "losses": 1, "ties": 2}


def test_bootstrap_interval_is_seeded_and_contains_the_mean():
    values = [(i * 37 % 101) / 100 for i in range(30)]
    low, high = metrics.bootstrap_ci(values)
    assert low < sum(values) / len(values) < high and low >= 0.0 and high <= 1.0
    assert metrics.bootstrap_ci(values) == (low, high)  # fixed seed: the same interval every run
    assert metrics.bootstrap_ci(values, seed=1) != (low, high)
    assert metrics.bootstrap_ci([0.5] * 7) == (0.5, 0.5)


def test_answer_coverage_and_budget():
    context = metrics.budgeted_context([hit(["A"], "Basal cell carcinoma is common. " * 50)], 20)
    assert metrics.answer_coverage(context, "Basal cell carcinoma (BCC) is the most common") == pytest.approx(4 / 5)  # "most" is a stopword
    assert metrics.answer_coverage("anything", "the of a") == 0.0


def test_every_installed_method_is_a_system():
    names = [s.name for s in systems()]
    assert "naive" in names


@needs_data
def test_loaders_read_the_shared_data():
    docs, questions = data.hotpotqa()
    assert len(docs) == 994 and len(questions) == 100
    assert all(q.supporting for q in questions)
    assert {d.id for d in docs} >= set(questions[0].supporting)
    _, medical = data.medical()
    assert {"Fact Retrieval", "Complex Reasoning"} <= {q.type for q in medical}
    assert data.wos_round(1, 2)["test"] == []  # not published: an empty split, not an error


@needs_data
async def test_retrieval_and_cost_suites_on_a_slice():
    result = await harness.retrieval([System("naive", None)], "hashing", limit=5)
    row = result["rows"][0]
    assert row["system"] == "naive" and row["baseline"] and 0.0 <= row["recall@2"] <= row["recall@5"] <= 1.0
    assert row["vs_dense"]["recall@5"] == {"wins": 0, "losses": 0, "ties": 5} and row["p50_x_dense"] == 1.0
    assert row["recall@5_ci"][0] <= row["recall@5"] <= row["recall@5_ci"][1]
    assert row["query_p50_ms"] <= row["query_p95_ms"]
    table = harness.retrieval_table(result)
    assert "| naive (dense baseline) |" in table
    assert "`uv run python -m benchmarks retrieval --embed hashing --methods naive --limit 5`" in table
    cost = await harness.cost([System("naive", None)], passages=10, queries=2)
    assert cost["rows"][0]["index_calls_per_1k"] == 0  # naive RAG never calls a chat model


@needs_data
async def test_a_retrieval_run_keeps_its_indexes_and_reports_both_halves(tmp_path):
    first = await harness.retrieval([System("naive", None)], "hashing", limit=6, folder=tmp_path)
    again = await harness.retrieval([System("naive", None)], "hashing", limit=6, folder=tmp_path)
    assert (tmp_path / "naive" / "manifest.json").exists()
    assert first["rows"][0]["index_seconds"] > 0 and again["rows"][0]["index_seconds"] is None  # reopened, not built
    assert first["rows"][0]["ranked"] == again["rows"][0]["ranked"]
    halves = first["rows"][0]["halves"]
    assert halves["A"]["questions"] + halves["B"]["questions"] == 6
    assert {harness.half(q) for q in "abcdefgh"} == {"A", "B"}
    assert "| reused |" in harness.retrieval_table(again) and "half A · half B" in harness.retrieval_table(again)


async def test_a_variant_runs_with_its_retriever_options_under_its_own_name():
    asked = []

    class Index:
        def as_retriever(self, **options):
            asked.append(options)

            class Retriever:
                async def aretrieve(self, query):
                    return [hit(["d1"])]

            return Retriever()

    variant = System("hipporag", "v2", (("chains", True),), "with chains of facts")
    assert variant.name == "hipporag:v2 (with chains of facts)" and System("naive", None).name == "naive"
    questions = [data.Question(id="q", question="Where?", answer="")]
    results, ms = await harness._retrieve_all(Index(), variant, questions, 10)
    assert asked == [{"k": 10, "mode": "v2", "chains": True}] and len(results) == len(ms) == 1


def test_hipporag_walk_latency_on_a_small_synthetic_graph():
    from benchmarks import hipporag

    result, table = hipporag.latency([500])
    assert [r["version"] for r in result["rows"]] == ["v2", "v1"]
    assert result["rows"][0]["nodes"] == 550 and result["rows"][1]["nodes"] == 500  # passages are nodes in v2 only
    assert "| 500 | v2 |" in table


def test_scale_one_in_process():
    result = harness.scale_one("naive", 50, queries=5)
    assert result["size"] == 50 and result["chunks_per_second"] > 0
    assert set(result["latency_ms"]["naive"]) == {"p50", "p95"}
    assert result["index_cpu_seconds"] > 0 and "note" not in result and "warm_up_cpu_seconds" not in result
    warmed = harness.scale_one("naive", 50, queries=5, warm_up=True)  # a throwaway index first, its CPU apart
    assert warmed["warm_up_cpu_seconds"] > 0 and warmed["size"] == 50
    row = {**warmed, "method": "naive"}
    assert f"(warm-up apart: {warmed['warm_up_cpu_seconds']})" in harness.scale_table({"rows": [row]})


def test_scale_one_on_disk_builds_in_a_folder_it_removes(tmp_path, monkeypatch):
    built, build = [], harness.build_index

    def spy(*args, **kwargs):
        index = build(*args, **kwargs)
        built.append(sorted(p.name for p in kwargs["path"].iterdir()))  # the records file is there
        return index

    monkeypatch.setattr(harness, "build_index", spy)
    result = harness.scale_one("naive", 50, queries=2, on_disk=str(tmp_path / "indexes"))
    assert result["store"] == "disk" and set(result["latency_ms"]) == {"naive"} and built and built[0]
    assert result["corpus"] == "heaps" and result["disk_mb"] >= 0 and result["open_seconds"] > 0  # opened again to a first answer
    assert "on disk (MB)" in harness.scale_table({"rows": [result]})
    assert list((tmp_path / "indexes").iterdir()) == []  # the index folder went with the run
    budgeted = harness.scale_one("naive", 20, queries=0, on_disk=str(tmp_path / "indexes"), memory_gb=16, corpus="places")
    assert (budgeted["memory_gb"], budgeted["corpus"]) == (16, "places") and "open_seconds" not in budgeted
    monkeypatch.undo()
    assert harness.scale_one("naive", 20, queries=0)["store"] == "memory"


def test_scale_one_reports_the_build_before_the_queries_and_bounds_them():
    import json

    emitted: list[str] = []
    result = harness.scale_one("naive", 50, queries=5, query_seconds=0.0, emit=lambda row: emitted.append(json.dumps(row)))
    built = json.loads(emitted[0])  # what the row said before any query ran
    assert built["latency_ms"] == {} and "did not finish" in built["note"] and built["index_cpu_seconds"] > 0
    assert result["note"] == "naive: 1 of 5 queries (stopped after 0 s)" and set(result["latency_ms"]) == {"naive"}
    # a process killed in its query phase still gives its build row
    assert harness._last_row(emitted[0] + "\n")["index_cpu_seconds"] == built["index_cpu_seconds"]
    assert harness._last_row(b"") is None


def test_heaps_corpus_grows_its_vocabulary_as_a_power_of_the_corpus():
    from rhizome.core.extraction.offline import OfflineExtractor
    from rhizome.core.types import Chunk

    def distinct(docs: list[dict[str, str]]) -> tuple[int, list[int]]:
        chunks = [Chunk(id=d["id"], document_id=d["id"], text=d["text"], index=0, start=0, end=len(d["text"]), n_tokens=40) for d in docs]
        counts: dict[str, int] = {}
        for extraction in OfflineExtractor().extract(chunks):
            for entity in extraction.entities:
                counts[entity.name] = counts.get(entity.name, 0) + 1
        return len(counts), sorted(counts.values(), reverse=True)

    # 250 and 2,000 documents (the offline extraction is most of the test's time): exponent
    # 0.69, 89 % of the vocabulary seen (500 and 4,000: 0.67 and 93 %)
    small, large = harness.synthetic_documents(250), harness.synthetic_documents(2000)
    assert harness.synthetic_documents(250) == small  # deterministic
    (a, _), (b, freq_b) = distinct(small), distinct(large)
    exponent = math.log(b / a) / math.log(8)
    assert 0.45 < exponent < 0.8, exponent  # Heaps-like: more names with more text, sublinearly
    assert b <= harness.heaps_vocabulary(2000) and b > 0.6 * harness.heaps_vocabulary(2000)
    assert freq_b[0] > 10 * freq_b[len(freq_b) // 2]  # Zipfian: a head of frequent names, a long tail
    # the first corpus, for the rows published before it: a fixed list of places, uniform
    places = harness.synthetic_documents(2000, corpus="places")
    assert distinct(places)[0] < b / 3
    assert len({harness.entity_name(r) for r in range(20000)}) == 20000
    with pytest.raises(ValueError, match="heaps, places"):
        harness.synthetic_documents(5, corpus="zipf")


def test_scale_growth_is_the_exponent_between_the_smallest_and_largest_size():
    rows = [{"method": "a", "size": 1000, "index_cpu_seconds": 2.0}, {"method": "a", "size": 100000, "index_cpu_seconds": 200.0},
            {"method": "a", "size": 10000, "index_cpu_seconds": 30.0}, {"method": "b", "size": 1000, "index_cpu_seconds": 1.0}]
    growth = harness.scale_growth({"rows": rows})
    assert set(growth) == {"a"} and growth["a"][:2] == (1000, 100000) and abs(growth["a"][2] - 1.0) < 1e-9
    rows = [{**r, "index_seconds": 1, "chunks_per_second": 1, "latency_ms": {}, "peak_rss_mb": 1} for r in rows]
    assert "| a | 1,000 → 100,000 | 1.00 |" in harness.scale_table({"rows": rows})


@needs_data
def test_command_line_writes_results(tmp_path, monkeypatch, capsys):
    import benchmarks.__main__ as cli

    monkeypatch.setattr(cli, "RESULTS", tmp_path)
    assert main(["retrieval", "--methods", "naive", "--limit", "3"]) == 0
    saved = json.loads((tmp_path / "retrieval-hashing.json").read_text())
    assert saved["questions"] == 3 and saved["data"] == "hotpotqa-100"
    assert "| system | R@2 | ΔR@2 vs dense (95% CI) | W/L R@2 | R@5 |" in capsys.readouterr().out


def test_a_proxy_budget_is_its_own_table(tmp_path, monkeypatch, capsys):
    import benchmarks.__main__ as cli

    text = " ".join(f"Patient {i} took aspirin for a headache and recovered in {i} days." for i in range(200))
    questions = [data.Question(f"q{i}", "What did the patient take for a headache?", "aspirin headache", "Fact Retrieval") for i in range(3)]
    monkeypatch.setattr(data, "medical", lambda: ([Document(id="Medical-0", text=text)], questions))
    monkeypatch.setattr(cli, "RESULTS", tmp_path)
    assert main(["proxy", "--methods", "naive", "--budget", "40"]) == 0
    saved = json.loads((tmp_path / "proxy-hashing-40.json").read_text())
    assert saved["budget_tokens"] == 40 and saved["rows"][0]["all"] == 1.0
    assert not (tmp_path / "proxy-hashing.json").exists()  # the default budget's table is left alone
    assert "context budget 40 tokens" in capsys.readouterr().out


@needs_data
def test_command_line_runs_musique(tmp_path, monkeypatch, capsys):
    import benchmarks.__main__ as cli

    monkeypatch.setattr(cli, "RESULTS", tmp_path)
    assert main(["retrieval", "--data", "musique", "--limit", "3", "--methods", "naive"]) == 0
    saved = json.loads((tmp_path / "retrieval-musique-hashing.json").read_text())
    assert saved["data"] == "musique-dev" and saved["questions"] == 3
    assert saved["openie"] == data.musique_openie().name  # the graph methods would import its triples
    _, questions = data.musique()
    assert set(saved["rows"][0]["ranked"]) == {q.id for q in questions[:3]}
    assert "--data musique" in capsys.readouterr().out


@needs_data
async def test_imported_openie_reaches_every_graph_method(tmp_path, monkeypatch):
    docs, questions = data.hotpotqa()
    docs, questions = docs[:30], [q for q in questions if set(q.supporting) <= {d.id for d in docs[:30]}][:2] or questions[:1]
    monkeypatch.setattr(data, "hotpotqa", lambda: (docs, questions))
    openie = {
        "docs": [
            {
                "idx": i,
                "passage": d.text,
                "extracted_entities": [d.id, "Topic"],
                "extracted_triples": [[d.id, "is about", "Topic"]],
            }
            for i, d in enumerate(docs)
        ]
    }
    path = tmp_path / "openie.json"
    path.write_text(json.dumps(openie))
    selected = [s for s in systems() if s.method in ("graphrag", "lightrag")]
    result = await harness.retrieval(selected, "hashing", openie=str(path))
    assert result["extraction"] == "imported OpenIE"
    rows = {r["system"]: r for r in result["rows"]}
    assert {name.split(":")[0] for name in rows} == {"naive", "graphrag", "lightrag"}
    assert rows["naive"]["baseline"] and not rows["lightrag:mix"]["baseline"]  # the dense baseline runs unasked
    wlt = rows["lightrag:mix"]["vs_dense"]["recall@5"]
    assert sum(wlt.values()) == len(questions)


def test_add_merges_one_methods_rows_into_a_saved_table(tmp_path):
    from benchmarks.__main__ import merge_rows

    saved = tmp_path / "proxy-hashing.json"
    settings = {"suite": "proxy", "embedder": "hashing", "questions": 10}
    rows = [{"system": "naive", "all": 0.5}, {"system": "hipporag:v2", "all": 0.1}, {"system": "lightrag:local", "all": 0.4}]
    saved.write_text(json.dumps({**settings, "rows": rows}))
    new = {**settings, "rows": [{"system": "hipporag:v2", "all": 0.6}, {"system": "hipporag:v2 (walk ranks all)", "all": 0.7}]}
    merged = merge_rows(saved, new)
    assert [r["system"] for r in merged["rows"]] == ["naive", "hipporag:v2", "hipporag:v2 (walk ranks all)", "lightrag:local"]
    assert merged["rows"][1]["all"] == 0.6 and "rerun" not in merged
    scale = {"suite": "scale", "rows": [{"method": "naive", "size": 1000}, {"method": "raptor", "size": 1000}]}
    saved.write_text(json.dumps(scale))
    assert merge_rows(saved, {"suite": "scale", "rows": [{"method": "raptor", "size": 2000}]})["rows"] == [
        {"method": "naive", "size": 1000}, {"method": "raptor", "size": 2000}]
    with pytest.raises(SystemExit, match="settings differ"):  # another run's settings: not merged
        merge_rows(saved, {"suite": "scale", "questions": 5, "rows": []})
    assert merge_rows(tmp_path / "none.json", new) == new


def test_a_retrieval_run_of_one_method_joins_the_saved_table(tmp_path, monkeypatch, capsys):
    import benchmarks.__main__ as cli

    monkeypatch.setattr(cli, "RESULTS", tmp_path)
    monkeypatch.setattr(data, "hotpotqa", lambda: _tiny_hotpotqa())
    assert main(["retrieval", "--methods", "naive", "sprag"]) == 0
    full = json.loads((tmp_path / "retrieval-hashing.json").read_text())
    capsys.readouterr()
    # without --add, a run of fewer methods may not drop the other methods' saved rows; it is
    # refused before anything runs (dense retrieval, which every retrieval run measures, aside)
    held = {**full, "rows": [*full["rows"], {**full["rows"][-1], "system": "lightrag:local"}]}
    (tmp_path / "retrieval-hashing.json").write_text(json.dumps(held))
    with monkeypatch.context() as m:
        m.setattr(cli.harness, "retrieval", None)
        with pytest.raises(SystemExit, match="holds results of lightrag, which this run does not make; pass --add"):
            main(["retrieval", "--methods", "sprag"])
    assert json.loads((tmp_path / "retrieval-hashing.json").read_text()) == held
    (tmp_path / "retrieval-hashing.json").write_text(json.dumps(full))
    assert main(["retrieval", "--methods", "sprag", "--add"]) == 0
    merged = json.loads((tmp_path / "retrieval-hashing.json").read_text())
    assert [r["system"] for r in merged["rows"]] == [r["system"] for r in full["rows"]]  # in place, naive first
    assert merged["command"] == full["command"]
    assert merged["rerun"] == ["uv run python -m benchmarks retrieval --embed hashing --methods sprag"]
    assert "; rows re-run with `uv run python -m benchmarks retrieval --embed hashing --methods sprag`" in capsys.readouterr().out


def _tiny_hotpotqa():
    docs = [Document(id=t, text=f"{t} is a town where {w} grow beside the river.", metadata={"title": t})
            for t, w in [("Arlen", "apples"), ("Brix", "pears"), ("Colm", "plums"), ("Dunmore", "figs")]]
    questions = [data.Question("q1", "Where do pears grow?", "Brix", supporting=("Brix",)),
                 data.Question("q2", "Which town has plums?", "Colm", supporting=("Colm",))]
    return docs, questions


def test_sections_written_side_by_side_are_all_kept(tmp_path, monkeypatch):
    import threading

    import benchmarks.__main__ as cli

    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n" + "x\n" * 20000 + "<!-- harness:end -->\n", encoding="utf-8")
    monkeypatch.setattr(cli, "DOCS", docs)
    writers = [threading.Thread(target=lambda i=i: [cli.write_section(f"s{i}-{j}", f"S{i}", "body") for j in range(10)])
               for i in range(6)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    text = docs.read_text(encoding="utf-8")
    assert all(f"<!-- /harness:s{i}-{j} -->" in text for i in range(6) for j in range(10))
    assert text.rstrip().endswith("<!-- harness:end -->") and not list(tmp_path.glob(".*.tmp"))


@needs_data
async def test_latency_times_each_call_with_and_without_the_model(tmp_path):
    from benchmarks import latency

    result = await latency.measure("hotpotqa", "hashing", tmp_path, [])
    (row,) = result["rows"]
    assert row["system"] == "naive" and row["p50_x_naive"] == row["p50_x_naive_model_excluded"] == 1.0
    assert row["p50_ms"] > 0 and row["p50_ms_model_excluded"] > 0
    assert "model excluded" in latency.table(result)
    remembering = latency.Remembering(HashingEmbedder())
    first = await remembering.aembed_query(["a question"])
    remembering.replay = True
    assert await remembering.aembed_query(["a question"]) is first and remembering.name == HashingEmbedder().name
