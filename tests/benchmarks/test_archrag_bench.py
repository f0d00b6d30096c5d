"""The ArchRAG benchmark's C-HNSW part on a small synthetic tree (the numbers go to
docs/benchmarks.md from the full run; here only that the part runs and what it reports)."""

from __future__ import annotations


def test_chnsw_part_reports_build_time_recall_and_distances(monkeypatch):
    from benchmarks import archrag

    monkeypatch.setattr(archrag, "QUERIES", 10)
    monkeypatch.setattr(archrag, "EFS", [10, 40])
    assert archrag.layer_sizes(1000) == [1000, 285, 81]
    result, table = archrag.chnsw([600], "tree")
    row = result["rows"][0]
    assert row["sizes"] == [600, 171, 48] and [r["ef"] for r in row["runs"]] == [10, 40]
    wide = row["runs"][1]
    assert wide["recall_at_5"]["chnsw"] >= 0.9 and 0 < wide["distances_per_query"]["chnsw"] <= row["nodes"]
    assert set(wide["batch_query_ms"]) == {"chnsw", "faiss_hnsw_per_layer", "brute_force"}
    assert "--data tree --sizes 600" in table and table.count("| 600 |") == 2
