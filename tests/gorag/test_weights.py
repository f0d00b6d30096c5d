"""Edge weights against the paper's formulas (Eqs. 4, 5, 7-8) on a hand-computed example."""

from __future__ import annotations

import math

import pytest

from rhizome.gorag import GORAGClassifier, correlation_score, normalize_keyword, tokenize

KEYWORDS = {
    "neural network training with neural network pruning": ["Neural Network", "pruning"],
    "circuit voltage and current in a circuit": ["circuit", "voltage"],
    "deep network models": ["network"],
    "transistor circuit design": ["circuit", "transistor"],
}


def keywords_of(text: str) -> list[str]:
    return KEYWORDS[text]


def weight(clf: GORAGClassifier, keyword: str, label: str) -> float:
    return clf.graph[f"kw:{keyword}"][f"label:{label}"]["weight"]


@pytest.fixture
def clf() -> GORAGClassifier:
    c = GORAGClassifier(keyword_source=keywords_of, label_names=False)
    c.fit_round(
        [
            "neural network training with neural network pruning",
            "circuit voltage and current in a circuit",
            "deep network models",
        ],
        ["ml", "ee", "ml"],
    )
    return c


def test_tokens_and_normalisation():
    assert tokenize("Machine_Learning, (3+1)-D") == ["machine", "learning", "3", "1", "d"]
    assert normalize_keyword("  Signal-Flow  Graph! ") == "signal flow graph"


def test_round_one_weights_by_hand(clf):
    # |T| = 3. Eq. 4: CS = count/|t| * ln(|T| / (1 + df)); Eq. 5: w = mean(1 - CS)
    # t1 has 7 tokens and holds "neural network" twice
    assert weight(clf, "neural network", "ml") == pytest.approx(1 - 2 / 7 * math.log(3 / 2))  # 0.884153
    assert weight(clf, "pruning", "ml") == pytest.approx(1 - 1 / 7 * math.log(3 / 2))  # 0.942076
    assert weight(clf, "circuit", "ee") == pytest.approx(1 - 2 / 7 * math.log(3 / 2))  # 0.884153
    assert weight(clf, "voltage", "ee") == pytest.approx(1 - 1 / 7 * math.log(3 / 2))  # 0.942076
    # "network" is in t1 and t3: df = 2, ln(3/3) = 0, CS = 0, weight 1
    assert weight(clf, "network", "ml") == pytest.approx(1.0)
    # round 1 has no label-label edges
    assert not clf.graph.has_edge("label:ml", "label:ee")


def test_round_two_weights_and_label_edges_by_hand(clf):
    report = clf.fit_round(["transistor circuit design"], ["hw"])
    assert report.round == 2 and report.new_labels == ["hw"] and report.label_edges == 2
    # |T| = 4; circuit is in t2 and t4
    w_circuit = 1 - 1 / 3 * math.log(4 / 3)
    w_transistor = 1 - 1 / 3 * math.log(4 / 2)
    assert weight(clf, "circuit", "hw") == pytest.approx(w_circuit)  # 0.904106
    assert weight(clf, "transistor", "hw") == pytest.approx(w_transistor)  # 0.768951
    # the round-1 edge of "circuit" keeps its frozen weight
    assert weight(clf, "circuit", "ee") == pytest.approx(1 - 2 / 7 * math.log(3 / 2))
    m_hw = (w_circuit + w_transistor) / 2
    m_ml = (1 - 2 / 7 * math.log(1.5) + 1 - 1 / 7 * math.log(1.5) + 1.0) / 3
    m_ee = (1 - 2 / 7 * math.log(1.5) + 1 - 1 / 7 * math.log(1.5)) / 2
    # Eq. 8 as printed: (m(y_n) + m(y_o)) / 4
    assert clf.graph["label:hw"]["label:ml"]["weight"] == pytest.approx((m_hw + m_ml) / 4)  # 0.444651
    assert clf.graph["label:hw"]["label:ee"]["weight"] == pytest.approx((m_hw + m_ee) / 4)  # 0.437411
    assert not clf.graph.has_edge("label:ml", "label:ee")  # no edges among labels of one round


def test_mean_label_edge_mode():
    c = GORAGClassifier(keyword_source=keywords_of, label_names=False, label_edge_mode="mean")
    c.fit_round(["circuit voltage and current in a circuit"], ["ee"])
    c.fit_round(["transistor circuit design"], ["hw"])
    m_ee = (weight(c, "circuit", "ee") + weight(c, "voltage", "ee")) / 2
    m_hw = (weight(c, "circuit", "hw") + weight(c, "transistor", "hw")) / 2
    assert c.graph["label:hw"]["label:ee"]["weight"] == pytest.approx((m_ee + m_hw) / 2)


def test_edge_weight_is_the_mean_over_texts_of_the_label():
    texts = ["alpha beta gamma", "alpha delta", "omega psi", "zeta eta theta iota"]
    kws = {texts[0]: ["alpha"], texts[1]: ["alpha"], texts[2]: ["omega"], texts[3]: ["zeta"]}
    c = GORAGClassifier(keyword_source=lambda t: kws[t], label_names=False)
    c.fit_round(texts, ["a", "a", "b", "c"])
    # |T| = 4, df(alpha) = 2: CS = 1/3 ln(4/3) and 1/2 ln(4/3)
    expected = ((1 - math.log(4 / 3) / 3) + (1 - math.log(4 / 3) / 2)) / 2
    edge = c.graph["kw:alpha"]["label:a"]
    assert edge["weight"] == pytest.approx(expected)
    assert edge["n"] == 2 and edge["cost_sum"] == pytest.approx(2 * expected)


def test_correlation_score_is_clipped():
    # a one-word text in a large corpus: raw CS = ln(1000/2) = 6.2 -> clipped to 1 - epsilon
    assert correlation_score(1, 1, 1000, 1, 1e-3) == pytest.approx(1 - 1e-3)
    # a keyword in every text: log < 0 -> 0
    assert correlation_score(1, 10, 5, 5, 1e-3) == 0.0


def test_paraphrased_keyword_counts_once_in_df():
    # a keyword the text does not contain still counts that text in df ("contains or yielded")
    texts = ["cats and dogs", "fish tanks"]
    kws = {texts[0]: ["pets"], texts[1]: ["aquarium"]}
    c = GORAGClassifier(keyword_source=lambda t: kws[t], label_names=False)
    c.fit_round(texts, ["a", "b"])
    assert c.stats.df("pets") == 1
    # count is at least 1: CS = 1/3 * ln(2/2) = 0
    assert weight(c, "pets", "a") == pytest.approx(1.0)


@pytest.mark.parametrize("stats_ngram", [3, 2], ids=["same-n", "longer-keywords-than-T-counts"])
def test_a_rounds_offline_keywords_are_read_before_its_texts_join(stats_ngram):
    """fit_round takes its texts' TF-IDF keywords before it changes anything: they are the
    ones the texts would get once all of them joined T."""
    from rhizome.gorag.keywords import joining_tfidf_keywords, tfidf_keywords
    from rhizome.gorag.text import TermStats

    stats = TermStats(stats_ngram)
    for text in ["deep network models", "circuit voltage and current in a circuit"]:
        stats.add_text(tokenize(text))
    joining = [tokenize(t) for t in ["neural network training with neural network pruning",
                                     "transistor circuit design for neural network chips", "deep deep models"]]
    before = joining_tfidf_keywords(stats, joining, max_ngram=3, max_keywords=5)
    for tokens in joining:
        stats.add_text(tokens)
    assert before == [tfidf_keywords(stats, t, max_ngram=3, max_keywords=5, virtual=False) for t in joining]
