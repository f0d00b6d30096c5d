"""A small slice of the real WOS data (../shared/data/gorag-wos): two rounds, 1-shot, offline."""

from __future__ import annotations

import pytest

from benchmarks import data
from rhizome.gorag import GORAGClassifier

try:
    data.data_dir()
    HAVE_DATA = True
except FileNotFoundError:
    HAVE_DATA = False


@pytest.mark.skipif(not HAVE_DATA, reason="the shared WOS data is not available")
def test_wos_two_rounds_offline():
    clf = GORAGClassifier()
    round1 = data.wos_round(1, 1)
    clf.fit_round([t for _, t in round1["train"]], [lab for lab, _ in round1["train"]])
    tests = round1["test"][:120]
    results = clf.batch([t for _, t in tests], online=False)
    labels = set(clf.labels)
    assert all(r.label in labels for r in results)
    accuracy = sum(r.label == gold for r, (gold, _) in zip(results, tests)) / len(tests)
    assert accuracy > 3 / len(labels)  # well above chance (1/32)
    train2 = data.wos_round(1, 2)["train"]
    report = clf.fit_round([t for _, t in train2], [lab for lab, _ in train2])
    assert report.round == 2 and len(report.new_labels) == 53
    assert report.label_edges == 53 * 32
