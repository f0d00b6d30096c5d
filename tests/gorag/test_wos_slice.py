"""A small slice of the real WOS data (../shared/data/gorag-wos): two rounds, 1-shot, offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from rhizome.gorag import GORAGClassifier

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "gorag-wos" / "wos_1_shot"


def read(path: Path, limit: int | None = None) -> list[tuple[str, str]]:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if "\t" in line:
                label, text = line.rstrip("\n").split("\t", 1)
                rows.append((label, text))
            if limit and len(rows) >= limit:
                break
    return rows


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared WOS data is not available")
def test_wos_two_rounds_offline():
    clf = GORAGClassifier()
    train1 = read(DATA / "n1" / "train.txt")
    clf.fit_round([t for _, t in train1], [lab for lab, _ in train1])
    tests = read(DATA / "n1" / "test.txt", limit=120)
    results = clf.batch([t for _, t in tests], online=False)
    labels = set(clf.labels)
    assert all(r.label in labels for r in results)
    accuracy = sum(r.label == gold for r, (gold, _) in zip(results, tests)) / len(tests)
    assert accuracy > 3 / len(labels)  # well above chance (1/32)
    train2 = read(DATA / "n2" / "train.txt")
    report = clf.fit_round([t for _, t in train2], [lab for lab, _ in train2])
    assert report.round == 2 and len(report.new_labels) == 53
    assert report.label_edges == 53 * 32
    result = clf.classify(tests[0][1])
    assert result.label in clf.labels and len(clf.labels) == 85
