"""Issue 20: the calibrated scorer, keyword linking, scored candidates, confidence-gated online
indexing, per-item batch errors, the embedder path and the model path over the Ollama wire."""

from __future__ import annotations

import json
import math
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from rhizome.core.errors import ConfigurationError
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.gorag import ClassificationError, GORAGClassifier, scoring
from rhizome.gorag.linking import KeywordLinker, part_terminals, vocabulary_terminals
from rhizome.gorag.scoring import Weights, graph_strength
from rhizome.gorag.text import content_ngrams, tokenize, word_stem
from tests.gorag.conftest import (
    QUERIES,
    ROUND1,
    ROUND2,
    failing_model,
    learned_state,
    scripted_model,
    split,
    stub_round_answer,
)


def two_rounds(clf: GORAGClassifier) -> GORAGClassifier:
    clf.fit_round(*split(ROUND1))
    clf.fit_round(*split(ROUND2))
    return clf


def test_graph_strength_weighs_by_specificity_worked_example():
    # 4 labels; "heart" is linked to A only (weight 0.2), "cell" to A and B (0.5 and 0.7)
    links = {"kw:heart": {"A": 0.2}, "kw:cell": {"A": 0.5, "B": 0.7}}
    got = graph_strength({"kw:heart": 1.0, "kw:cell": 0.5}, links, 4)
    spec_heart = math.log(1 + 4 / 1) / math.log(5)  # = 1
    spec_cell = math.log(1 + 4 / 2) / math.log(5)
    total = 1.0 * spec_heart + 0.5 * spec_cell
    assert got["A"] == pytest.approx((1.0 * spec_heart * 0.8 + 0.5 * spec_cell * 0.5) / total)
    assert got["B"] == pytest.approx(0.5 * spec_cell * 0.3 / total)
    assert graph_strength({}, links, 4) == {}
    assert graph_strength({"kw:none": 1.0}, links, 4) == {}


def test_vocabulary_and_part_links():
    g = nx.Graph()
    for v in ("wave equation", "soliton", "heart"):
        g.add_node(f"kw:{v}", kind="keyword")
    tokens = ["a", "soliton", "solves", "the", "nonlinear", "wave", "equation"]
    assert vocabulary_terminals(g, tokens, 3) == {"kw:soliton": 1.0, "kw:wave equation": 1.0}
    assert part_terminals(g, "nonlinear wave equation") == {"kw:wave equation": pytest.approx(2 / 3)}
    assert part_terminals(g, "heart soliton") == {"kw:heart": 0.5, "kw:soliton": 0.5}
    assert part_terminals(g, "kidney") == {}


def test_embedding_link_takes_the_most_similar_keyword_above_the_threshold():
    linker = KeywordLinker()
    linker.add(["heart", "star"], np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    linker.remember(["cardiac", "recipe"], np.array([[0.96, 0.28], [0.6, 0.8]], dtype=np.float32))
    found = linker.link(["cardiac", "recipe", "uncached"], 0.9, lambda v: True)
    assert found == {"kw:heart": pytest.approx(0.96)}
    assert linker.link(["cardiac"], 0.99, lambda v: True) == {}
    assert linker.link(["cardiac"], 0.9, lambda v: v != "heart") == {}


def test_probabilities_are_a_distribution_and_candidates_cut_by_coverage():
    # without the components only the choice reads (the nearest example, the whole name), the
    # candidates are cut from the very probabilities the result reports (as long as the lexical
    # background is idle: the toy labels share no word as written, but word stems would join
    # cardiology's "need" and cooking's "needs")
    same = {"nearest_example_weight": 0.0, "name_match_weight": 0.0, "stem_words": False}
    clf = two_rounds(GORAGClassifier(online=False, **same))
    wide = two_rounds(GORAGClassifier(online=False, max_candidates=10, candidate_coverage=1.0, **same))
    for gold, text in QUERIES:
        full = wide.classify(text)
        assert sorted(full.candidates) == sorted(clf.labels)
        assert sum(full.scores.values()) == pytest.approx(1.0)
        cut = clf.classify(text)
        assert cut.label == gold == full.label
        kept = list(full.scores)
        mass = 0.0
        expected = []
        for y in kept:  # the rule: most probable first, until the coverage or the most candidates
            if len(expected) >= clf.max_candidates or (expected and mass >= clf.candidate_coverage):
                break
            expected.append(y)
            mass += full.scores[y]
        assert cut.candidates == expected


def test_linked_keywords_reach_the_graph_when_the_top_keywords_do_not():
    # the query's own keywords are unknown to the graph, but its text contains graph keywords
    kws = {ROUND1[0][1]: ["heart", "arrhythmia"], ROUND1[2][1]: ["telescope", "galaxy"], "q": ["zebra"]}
    clf = GORAGClassifier(keyword_source=lambda t: kws.get(t, ["zebra"]), name_keywords=False)
    clf.fit_round([ROUND1[0][1], ROUND1[2][1]], ["cardiology", "astronomy"])
    result = clf.classify("zebra heart arrhythmia", online=False)
    assert result.tree.terminals == []  # the paper's terminals: none
    assert set(result.linked) >= {"heart", "arrhythmia"}
    assert result.label == "cardiology"


def test_online_indexing_only_above_the_threshold():
    texts = [t for _, t in QUERIES]
    never = two_rounds(GORAGClassifier(index_threshold=1.0))
    size = never.stats_summary()
    results = never.batch(texts)
    assert not any(r.online_indexed or r.indexed for r in results)
    assert never.stats_summary() == size
    always = two_rounds(GORAGClassifier(index_threshold=None))
    assert all(r.online_indexed for r in always.batch(texts))
    assert always.stats_summary() == size  # deferred: nothing joins before the flush
    assert always.flush_online() == 3 and always.flush_online() == 0
    assert always.stats_summary()["texts"] == size["texts"] + 3
    assert sum(w for _, w, _ in always.members["cooking"]) == pytest.approx(2 + 0.5)  # online_weight
    gated = two_rounds(GORAGClassifier(index_threshold=0.5))
    for r in gated.batch(texts):
        assert r.online_indexed == (r.confidence >= 0.5)
    # per call
    per_call = two_rounds(GORAGClassifier(index_threshold=1.0, online_mode="sequential"))
    assert per_call.classify(texts[0], index_threshold=None).online_indexed
    assert per_call.stats_summary()["texts"] == size["texts"] + 1


def test_deferred_texts_also_join_once_max_pending_wait(tmp_path):
    # a classifier asked one text at a time (a Runnable, a graph node) never reaches a round's
    # end: the waiting texts join when max_pending of them wait, and no more pile up
    texts = [t for _, t in QUERIES]
    bounded = two_rounds(GORAGClassifier(index_threshold=None, max_pending=2))
    size = bounded.stats_summary()["texts"]
    bounded.classify(texts[0])
    assert bounded.stats_summary()["texts"] == size  # one waits
    bounded.classify(texts[1])
    assert bounded.stats_summary()["texts"] == size + 2 and bounded.flush_online() == 0
    bounded.classify(texts[2])
    assert bounded.flush_online() == 1
    unbounded = two_rounds(GORAGClassifier(index_threshold=None, max_pending=None))
    for text in texts:
        unbounded.classify(text)
    assert unbounded.stats_summary()["texts"] == size and unbounded.flush_online() == len(texts)
    # the same texts joined together either way
    joined = two_rounds(GORAGClassifier(index_threshold=None, max_pending=len(texts)))
    for text in texts:
        joined.classify(text)
    assert joined.stats_summary() == unbounded.stats_summary()
    joined.persist(tmp_path / "c")
    assert GORAGClassifier.load(tmp_path / "c").max_pending == len(texts)


def test_deferred_online_indexing_does_not_depend_on_the_order():
    more = [
        "An arrhythmia of the heart seen in cardiology.",
        "A telescope image of a star and its planet.",
        "Roast the vegetables in the oven with garlic.",
        "Galaxies and a supernova in the night sky.",
    ] + [t for _, t in QUERIES]
    a = two_rounds(GORAGClassifier(index_threshold=0.0))
    b = two_rounds(GORAGClassifier(index_threshold=0.0))
    first = {t: r.label for t, r in zip(more, a.batch(more))}
    second = {t: r.label for t, r in zip(more[::-1], b.batch(more[::-1]))}
    assert first == second
    a.fit_round(["Fossils in sedimentary rock layers."], ["geology"])  # a round starts: the queue joins
    b.flush_online()
    b.fit_round(["Fossils in sedimentary rock layers."], ["geology"])
    assert a.stats_summary() == b.stats_summary()
    assert {frozenset((u, v)): d["weight"] for u, v, d in a.graph.edges(data=True)} == pytest.approx(
        {frozenset((u, v)): d["weight"] for u, v, d in b.graph.edges(data=True)}
    )
    for _, text in QUERIES:
        assert a.classify(text, online=False).scores == pytest.approx(b.classify(text, online=False).scores)


REVISIT_BATCH = [
    "Telescopes watched the exoplanet transit its star.",
    "A star dims when an exoplanet crosses it, telescopes show.",
    "The exoplanet atmosphere.",  # only a word no labelled text has: unsure on the first pass
    "Bake the bread in the oven with yeast.",
    "Exoplanet transit photometry.",
]


def test_revisit_classifies_a_batchs_unsure_texts_again_once_its_confident_ones_joined():
    deferred = two_rounds(GORAGClassifier())
    first = deferred.batch(REVISIT_BATCH)
    unsure = [i for i, r in enumerate(first) if not r.online_indexed]
    assert unsure == [2, 4] and all(first[i].label != "astronomy" for i in unsure)
    revisit = two_rounds(GORAGClassifier(online_mode="revisit"))
    second = revisit.batch(REVISIT_BATCH)
    for i, (one, two) in enumerate(zip(first, second)):
        if i in unsure:  # the confident exoplanet texts are now astronomy's examples
            assert two.revisited and not two.online_indexed and two.label == "astronomy"
            assert two.confidence > one.confidence
        else:
            assert two.model_dump() == one.model_dump()
    # the batch flushed its confident texts; the revisited ones are not indexed
    assert revisit.flush_online() == 0 and deferred.flush_online() == len(REVISIT_BATCH) - len(unsure)
    assert learned_state(revisit) == learned_state(deferred)
    # the same texts in another order get the same results
    backwards = two_rounds(GORAGClassifier(online_mode="revisit"))
    again = backwards.batch(REVISIT_BATCH[::-1])[::-1]
    assert [r.model_dump() for r in again] == [r.model_dump() for r in second]
    # single calls and a batch with nothing indexed are deferred
    alone = two_rounds(GORAGClassifier(online_mode="revisit"))
    assert not any(alone.classify(t).revisited for t in REVISIT_BATCH)
    assert not any(r.revisited for r in alone.batch(REVISIT_BATCH, index_threshold=1.0))


def test_a_batch_that_fails_while_revisiting_leaves_the_classifier_as_it_was():
    from rhizome.core.errors import ModelServerError

    whole = two_rounds(GORAGClassifier(scripted_model(), online_mode="revisit"))
    expected = whole.batch(REVISIT_BATCH)
    revisited = sum(r.revisited for r in expected)
    assert revisited == 2  # the first pass asks the model five times, the revisit twice more
    llm, calls = failing_model(fail_on=len(REVISIT_BATCH) + revisited)
    clf = two_rounds(GORAGClassifier(llm, online_mode="revisit"))
    before = learned_state(clf)
    with pytest.raises(ModelServerError):
        clf.batch(REVISIT_BATCH)
    assert calls["classify"] == len(REVISIT_BATCH) + revisited  # it failed on the revisit's last text
    assert learned_state(clf) == before  # the flush of its confident texts is undone too
    assert [r.model_dump() for r in clf.batch(REVISIT_BATCH)] == [r.model_dump() for r in expected]
    assert learned_state(clf) == learned_state(whole)


def test_as_published_keeps_the_papers_behaviour():
    clf = two_rounds(GORAGClassifier.as_published())
    assert (clf.candidates, clf.index_threshold, clf.label_choice, clf.online_mode) == ("steiner", None, "graph", "sequential")
    result = clf.classify(QUERIES[0][1])
    assert result.chosen_by == "graph" and result.online_indexed
    assert set(result.candidates) <= set(clf.labels)


def test_batch_gives_per_item_errors_and_classifies_the_rest():
    clf = two_rounds(GORAGClassifier())
    texts = [QUERIES[0][1], "   ", b"\xff\xfe not utf-8", 42, QUERIES[1][1].encode("utf-8")]
    results = clf.batch(texts)
    assert [type(r).__name__ for r in results] == [
        "Classification", "ClassificationError", "ClassificationError", "ClassificationError", "Classification",
    ]
    assert results[0].label == "cardiology" and results[4].label == "astronomy"
    assert isinstance(results[1], ClassificationError) and results[1].index == 1 and "empty" in results[1].error
    assert "UTF-8" in results[2].error and "strings" in results[3].error
    assert results[2].label is None


def test_embedder_path_scores_and_survives_persistence(tmp_path):
    clf = two_rounds(GORAGClassifier(embedder=HashingEmbedder(64)))
    assert clf.linker.names  # keywords of the labelled texts, embedded for links
    for gold, text in QUERIES:
        assert clf.classify(text, online=False).label == gold
    clf.classify(QUERIES[0][1])
    clf.persist(tmp_path / "c")
    with pytest.raises(ConfigurationError, match="embedder"):
        GORAGClassifier.load(tmp_path / "c")
    loaded = GORAGClassifier.load(tmp_path / "c", embedder=HashingEmbedder(64))
    for _, text in QUERIES:
        assert loaded.classify(text, online=False).scores == pytest.approx(clf.classify(text, online=False).scores)
    without = GORAGClassifier.load(tmp_path / "c", dense_weight=0.0)
    assert without.classify(QUERIES[2][1], online=False).label == "cooking"


def test_split_names_scores_the_name_apart_from_the_examples():
    clf = two_rounds(GORAGClassifier(online=False, split_names=True, name_weight=0.5, name_match_weight=0.0))
    labels = list(clf.labels)
    text = "The cardiology ward treats arrhythmia."
    tokens = tokenize(text)
    lex = clf.scorer.space.vector(tokens)
    got = clf.scorer.components(labels, lex, None, {}, tokens)["lexical"]
    for k, y in enumerate(labels):
        profile = clf.scorer.profiles[y]
        centroid = profile.lex_sum / profile.weight
        centroid = centroid / np.sqrt(centroid.multiply(centroid).sum())
        expected = (lex @ centroid.T).toarray()[0, 0] + 0.5 * (lex @ profile.name_lex.T).toarray()[0, 0]
        assert got[k] == pytest.approx(expected)
    # folded in (the default offline): one cosine with the profile that holds the name
    joint = two_rounds(GORAGClassifier(online=False))
    assert joint.scorer.components(labels, lex, None, {}, tokens)["lexical"] != pytest.approx(got)


def test_name_match_is_the_whole_name_and_name_words_the_share_of_its_words():
    clf = GORAGClassifier(online=False, name_match_weight=0.5)
    clf.fit_round(["Waves break on the beach.", "Stars shine."], ["ocean_waves_and_tides", "astronomy"])
    labels = list(clf.labels)

    def name_scores(text):
        tokens = tokenize(text)
        got = clf.scorer.components(labels, clf.scorer.space.vector(tokens), None, {}, tokens)
        return [round(v, 6) for v in got["name_match"]], [round(v, 6) for v in got["name_words"]]

    # "ocean waves tides": two of its three words — a share for the cut, nothing for the choice
    assert name_scores("Tides and the moon; waves at night.") == ([0.0, 0.0], [round(2 / 3, 6), 0.0])
    # every word, not as a phrase: 1 in both
    assert name_scores("Tides, waves and the open ocean.") == ([1.0, 0.0], [1.0, 0.0])
    # the whole name as a phrase adds 1 to both
    assert name_scores("Ocean waves and tides, seen in astronomy.") == ([2.0, 2.0], [2.0, 2.0])
    off = GORAGClassifier(online=False, name_match_weight=0.0)  # weight 0: neither is computed
    off.fit_round(["Waves break on the beach.", "Stars shine."], ["ocean_waves_and_tides", "astronomy"])
    tokens = tokenize("Ocean waves and tides.")
    got = off.scorer.components(labels, off.scorer.space.vector(tokens), None, {}, tokens)
    assert not {"name_match", "name_words"} & set(got)


def test_a_text_naming_several_labels_weighs_each_name_by_its_specificity():
    clf = GORAGClassifier(online=False)
    clf.fit_round(
        ["Cancer screening in clinics.", "Lymphoma and cancer of the blood.", "Cancer drugs, cancer trials.",
         "Sprains and strains of the ankle."],
        ["cancer", "lymphoma", "cancer", "sprains_and_strains"],
    )
    labels = list(clf.labels)
    space = clf.scorer.space

    def match(text):
        tokens = tokenize(text)
        return dict(zip(labels, clf.scorer.components(labels, space.vector(tokens), None, {}, tokens)["name_match"]))

    # one name: the whole-name evidence as it is
    assert match("A lymphoma study.")["lymphoma"] == 2.0
    assert match("A cancer study.")["cancer"] == 2.0
    # two: the rarer name keeps it, the commoner one is scaled by the ratio of their phrase IDFs
    both = match("Lymphoma is a cancer; sprains and strains are not.")
    assert both["lymphoma"] == 2.0
    assert both["cancer"] == pytest.approx(2.0 * space.idf("cancer") / space.idf("lymphoma"))
    assert both["cancer"] < 2.0
    # a name with a stop word inside is counted by a scan of the texts, frozen with the IDF
    assert both["sprains_and_strains"] == pytest.approx(2.0 * space.phrase_idf("sprains and strains") / space.idf("lymphoma"))
    frozen = space.phrase_idf("sprains and strains")
    clf.stats.add_text(tokenize("More sprains and strains."))
    assert space.phrase_idf("sprains and strains") == frozen
    space.refresh()
    assert space.phrase_idf("sprains and strains") < frozen


def test_defaults_depend_on_the_embedder_and_survive_persistence(tmp_path):
    offline = GORAGClassifier()
    assert (offline.max_candidates, offline.candidate_coverage, offline.nearest_labels) == (12, 0.995, 12)
    # the folded-in profile, with the name-word share and the lexical background
    assert offline.scorer.weights == Weights(temperature=0.05, name_match=0.25, nearest_example=1.0, background=True)
    assert GORAGClassifier(max_candidates=3).nearest_labels == 3
    assert GORAGClassifier(max_candidates=3, nearest_labels=20).nearest_labels == 20
    dense = GORAGClassifier(embedder=HashingEmbedder(64))
    assert (dense.max_candidates, dense.candidate_coverage) == (12, 0.99)
    assert dense.scorer.weights == Weights(lexical=1.5, dense=0.5, graph=0.25, temperature=0.08, name_match=0.25, split_names=True)
    mixed = GORAGClassifier(embedder=HashingEmbedder(64), split_names=False, temperature=0.02, max_candidates=5)
    assert (mixed.scorer.weights.split_names, mixed.scorer.weights.temperature, mixed.max_candidates) == (False, 0.02, 5)
    clf = two_rounds(GORAGClassifier(embedder=HashingEmbedder(64)))
    clf.persist(tmp_path / "c")
    loaded = GORAGClassifier.load(tmp_path / "c", embedder=HashingEmbedder(64))
    assert loaded.scorer.weights == clf.scorer.weights
    for _, text in QUERIES:
        assert loaded.classify(text, online=False).scores == pytest.approx(clf.classify(text, online=False).scores)
    # a file written before split names, the name-word share and the nearest example: loaded as
    # it was built
    state = tmp_path / "c" / "classifier.json"
    data = json.loads(state.read_text())
    for knob in ("split_names", "name_match_weight", "nearest_example_weight"):
        del data["parameters"][knob]
    state.write_text(json.dumps(data))
    old = GORAGClassifier.load(tmp_path / "c", embedder=HashingEmbedder(64))
    assert (old.scorer.weights.split_names, old.scorer.weights.name_match, old.scorer.weights.nearest_example) == (
        False, 0.0, 0.0)


def test_nearest_example_is_the_cosine_with_the_labels_closest_labelled_text():
    clf = two_rounds(GORAGClassifier(index_threshold=None))
    labels = list(clf.labels)
    text = QUERIES[0][1]
    tokens = tokenize(text)
    lex = clf.scorer.space.vector(tokens)
    got = clf.scorer.components(labels, lex, None, {}, tokens)["nearest_example"]
    for k, y in enumerate(labels):
        examples = [t for lab, t in ROUND1 + ROUND2 if lab == y]
        cosines = [(lex @ clf.scorer.space.vector(tokenize(t)).T).toarray()[0, 0] for t in examples]
        assert got[k] == pytest.approx(max(cosines))
    # a text indexed online joins its label's profile, but it is no example: the component stays
    clf.classify(text)
    clf.flush_online()
    assert clf.members[clf.classify(text, online=False).label][-1][2] is False
    again = clf.scorer.components(labels, clf.scorer.space.vector(tokens), None, {}, tokens)
    assert again["nearest_example"] == pytest.approx(got)


def test_the_cut_reads_the_name_word_share_and_not_the_nearest_example():
    clf = two_rounds(GORAGClassifier(online=False, lexical_background=False))
    labels = list(clf.labels)
    tokens = tokenize(QUERIES[1][1])
    components = clf.scorer.components(labels, clf.scorer.space.vector(tokens), None, {}, tokens)
    assert {"nearest_example", "name_match", "name_words"} <= set(components)
    cut = {k: v for k, v in components.items() if k not in ("nearest_example", "name_match")}
    cut["name_match"] = components["name_words"]  # weighed as the name match is
    choice = {k: v for k, v in components.items() if k != "name_words"}
    plain = GORAGClassifier(online=False, lexical_background=False, nearest_example_weight=0.0).scorer
    plain.weights = clf.scorer.weights.__class__(**{**vars(clf.scorer.weights), "nearest_example": 0.0})
    assert clf.scorer.cut_probabilities(components) == pytest.approx(plain.probabilities(cut))
    assert clf.scorer.probabilities(components) == pytest.approx(
        clf.scorer.probabilities(choice, {k: k for k in choice}))


def test_leaving_a_text_out_of_its_label_scores_as_if_it_had_never_joined():
    for split_names in (False, True):
        clf = two_rounds(GORAGClassifier(embedder=HashingEmbedder(64), online=False, split_names=split_names))
        labels = list(clf.labels)
        text = QUERIES[0][1]
        tokens = tokenize(text)
        lex = clf.scorer.space.vector(tokens)
        dense = clf.embedder.embed([text])[0]
        before = clf.scorer.components(labels, lex, dense, {}, tokens)
        clf.scorer.add("astronomy", lex, dense, 0.5)
        joined = clf.scorer.components(labels, lex, dense, {}, tokens)
        left_out = clf.scorer.components(labels, lex, dense, {}, tokens, {"astronomy": 0.5})
        k = labels.index("astronomy")
        assert joined["lexical"][k] > before["lexical"][k] and joined["dense"][k] > before["dense"][k]
        for name in ("lexical", "dense"):
            assert left_out[name] == pytest.approx(before[name])


def test_a_text_indexed_online_keeps_its_label_but_not_as_its_only_candidate(tmp_path):
    # a sharp scorer, so that the copy's weight shows: no name match (the text names its gold
    # label, which no pseudo-label outweighs), no nearest example (the gold label's example is
    # near it), a low temperature
    clf = two_rounds(GORAGClassifier(online=False, online_weight=5.0, name_match_weight=0.0,
                                     nearest_example_weight=0.0, temperature=0.02))
    gold, text = QUERIES[0]
    assert clf.classify(text).label == gold
    tokens = tokenize(text)
    clf._index_online(tokens, clf.keywords(text), "astronomy", None)  # a wrong pseudo-label, heavily weighted
    again = clf.classify(text)
    assert again.label == "astronomy" and again.candidates[0] == "astronomy"  # its full evidence: its own copy
    assert gold in again.candidates  # the candidates are cut as if it had not joined
    clf.persist(tmp_path / "c")
    assert GORAGClassifier.load(tmp_path / "c").classify(text).candidates == again.candidates
    clf.self_indexed.clear()  # without the leave-one-out the copy shuts the others out
    assert clf.classify(text).candidates == ["astronomy"]


def test_knobs_are_checked():
    for bad in (
        {"candidates": "all"},
        {"max_candidates": 0},
        {"candidate_coverage": 1.5},
        {"index_threshold": 2},
        {"temperature": 0},
        {"name_weight": -1},
        {"name_match_weight": -0.5},
        {"label_choice": "vote"},
        {"max_pending": 0},
        {"max_pending": 2.5},
    ):
        with pytest.raises(ConfigurationError):
            GORAGClassifier(**bad)


def test_model_path_over_the_ollama_wire(monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ollama_stub import OllamaStub

    from rhizome.core.models.ollama import OllamaChatModel

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    def reply(body: dict) -> dict:
        return stub_round_answer(body) or {"label": "astronomy"}  # the model always says astronomy

    with OllamaStub(models=["qwen2.5:7b"]) as stub:
        stub.reply_fn = reply
        llm = OllamaChatModel("qwen2.5:7b", host=stub.url, retry_backoff=0.0)
        clf = two_rounds(GORAGClassifier(llm, online=False, max_candidates=1))
        good = clf.classify(QUERIES[1][1])
        assert good.label == "astronomy" and good.chosen_by == "model" and good.valid_answer
        call = stub.calls("/api/chat")[-1]
        assert call["format"]["properties"]["label"]["enum"] == good.candidates  # only the candidates
        assert "(score " in call["messages"][-1]["content"]
        # a cooking text: the scorer is sure, astronomy is not a candidate, the answer is refused
        bad = clf.classify(QUERIES[2][1])
        assert bad.candidates == ["cooking"] and bad.label == "cooking"
        assert bad.valid_answer is False and bad.chosen_by == "score" and bad.model_answer == "astronomy"


def test_offline_cut_keeps_one_label_for_a_text_that_names_it_and_up_to_the_cap_for_a_vague_one():
    names = ["solar_energy", "water_pollution", "machine_learning", "heart_disease", "remote_sensing",
             "child_abuse", "gene_expression", "bridge_design", "crop_yield", "ocean_tides", "stock_markets",
             "bird_migration", "volcanic_eruptions", "tax_policy", "music_theory"]
    texts = [f"A report on {y.replace('_', ' ')}: measured {y[:4]}ian and {y[-4:]}ward trends." for y in names]
    clf = GORAGClassifier(online=False)
    clf.fit_round(texts, names)
    named = clf.classify("Rooftop panels turn solar energy into electricity.")
    assert named.label == "solar_energy" and named.candidates == ["solar_energy"]
    vague = clf.classify("Rooftop panels turn sunlight into electricity.")  # no word of any label's texts
    assert len(vague.candidates) == clf.max_candidates == 12
    assert vague.confidence < 0.5  # too unsure to be indexed online



# a corpus whose labels share words, so every label has a background: one broad label with
# many texts on one theme, two with a single example
PHYSICS = [f"The experiment measured the {w} of particles in the collider detector." for w in
           ("decay", "spin", "mass", "charge", "scattering", "mixing", "lifetime", "production")]
BROAD = [("physics", t) for t in PHYSICS] + [
    ("optics", "Laser light passes through a thin lens; refraction bends rays at the glass surface of the prism."),
    ("linguistics", "Grammar rules of ancient languages shape modern syntax and the experiment of vocabulary and light."),
]
BROAD_QUERIES = ["An experiment on refraction in a prism.", "The detector measured light from the laser.",
                 "Syntax of languages in the collider experiment."]


def _raw_and_background(clf: GORAGClassifier, tokens: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plain lexical scores of ``tokens``, and each label's mean and sd over the stored
    texts of the other labels, computed here from the scorer's own plain scores."""
    labels = list(clf.labels)
    score = lambda toks: _components(clf, toks)["lexical"]  # noqa: E731
    rows = [(k, score(clf.stats.texts[p].split())) for k, y in enumerate(labels) for p, _, _ in clf.members[y]]
    mean = np.array([np.mean([s[k] for owner, s in rows if owner != k]) for k in range(len(labels))])
    sd = np.array([np.std([s[k] for owner, s in rows if owner != k]) for k in range(len(labels))])
    return score(tokens), mean, sd


def _standardised(raw: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    typical = np.median(sd)
    return (raw - mean) / np.maximum(sd, 0.1 * typical) * typical


def _components(clf: GORAGClassifier, tokens: list[str]) -> dict[str, np.ndarray]:
    return clf.scorer.components(list(clf.labels), clf.scorer.space.vector(tokens), None, {}, tokens)


def _background_lexical(clf: GORAGClassifier, text: str) -> np.ndarray:
    standardised = clf.scorer.standardised(_components(clf, tokenize(text)))
    assert standardised is not None
    return standardised["lexical"]


def test_lexical_background_standardises_each_label_against_the_other_labels_texts():
    clf = GORAGClassifier(online=False)
    clf.fit_round(*split(BROAD))
    assert clf.scorer.weights.background
    off = GORAGClassifier(online=False, lexical_background=False)
    off.fit_round(*split(BROAD))
    assert off.scorer.standardised(_components(off, tokenize(BROAD_QUERIES[0]))) is None
    for text in BROAD_QUERIES:
        raw, mean, sd = _raw_and_background(clf, tokenize(text))
        got = _background_lexical(clf, text)
        assert got == pytest.approx(_standardised(raw, mean, sd))
        assert not np.allclose(got, raw)
        # the plain components are the same with the background on or off
        assert raw == pytest.approx(_components(off, tokenize(text))["lexical"])
    # the broad label's centroid meets the other labels' texts with a higher cosine than a
    # single example does (the bias); standardised, every label's mean over them is 0
    labels = list(clf.labels)
    _, mean, _ = _raw_and_background(clf, tokenize(BROAD_QUERIES[0]))
    assert mean[labels.index("physics")] > mean[labels.index("optics")]
    for k, y in enumerate(labels):
        others = [_background_lexical(clf, t)[k] for label, t in BROAD if label != y]
        assert np.mean(others) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("split_names", [False, True])
def test_lexical_background_kept_between_queries_equals_one_computed_afresh(split_names, monkeypatch):
    # sequential online indexing: each indexed text is scored against every label and changes
    # one label's column; the background must stay what scoring every stored text gives
    monkeypatch.setattr(scoring, "_SCORE_BLOCK", 3)  # several blocks of stored texts
    clf = GORAGClassifier(online_mode="sequential", split_names=split_names)
    clf.fit_round(*split(BROAD[:6] + BROAD[8:]))
    queries = BROAD_QUERIES + [text for _, text in BROAD[6:8]] + ["Light and syntax in the prism of grammar."]
    for round_, text in enumerate(queries):
        if round_ == 3:  # a new round: a new label and a new IDF
            clf.fit_round(["Proteins fold in the cell; the experiment measured enzyme kinetics."], ["biology"])
        assert clf.classify(text, index_threshold=None).online_indexed
        got = _background_lexical(clf, BROAD_QUERIES[0])
        raw, mean, sd = _raw_and_background(clf, tokenize(BROAD_QUERIES[0]))
        assert got == pytest.approx(_standardised(raw, mean, sd))


def test_lexical_background_changes_the_candidates_only():
    on = GORAGClassifier(online=False, max_candidates=2, candidate_coverage=0.9)
    off = GORAGClassifier(online=False, max_candidates=2, candidate_coverage=0.9, lexical_background=False)
    for clf in (on, off):
        clf.fit_round(*split(BROAD))
    differed = 0
    for text in [*BROAD_QUERIES, *(t for _, t in BROAD)]:
        a, b = on.classify(text), off.classify(text)
        # the label, its confidence and every label's probability are the plain scorer's
        assert (a.label, a.confidence) == (b.label, pytest.approx(b.confidence))
        shared = set(a.candidates) & set(b.candidates)
        assert {y: a.scores[y] for y in shared} == pytest.approx({y: b.scores[y] for y in shared})
        # the choice is always a candidate, and the candidates are listed most probable first
        assert a.label == a.candidates[0]
        assert [a.scores[y] for y in a.candidates] == sorted(a.scores.values(), reverse=True)
        # the rest are cut from the standardised probabilities
        comps = on.scorer.components(list(on.labels), on.scorer.space.vector(tokenize(text)), None, {}, tokenize(text))
        std = on.scorer.cut_probabilities(comps)
        assert std == pytest.approx(on.scorer.probabilities({**on.scorer.standardised(comps)}, scoring.CUT))
        assert set(a.candidates) <= {a.label, *on._cut([], std, list(on.labels))}
        differed += a.candidates != b.candidates
    assert differed  # the corpus is built so that the background moves some cut


def test_lexical_background_leaves_labels_that_share_no_word_as_they_are():
    # no label's score varies over the other labels' texts: nothing to standardise against (as
    # written: word stems would join cardiology's "need" and cooking's "needs")
    on = two_rounds(GORAGClassifier(online=False, stem_words=False))
    off = two_rounds(GORAGClassifier(online=False, lexical_background=False, stem_words=False))
    for _, text in QUERIES:
        standardised = on.scorer.standardised(_components(on, tokenize(text)))
        if standardised is not None:
            assert standardised["lexical"] == pytest.approx(_components(off, tokenize(text))["lexical"])
        assert on.classify(text).candidates == off.classify(text).candidates


def test_lexical_background_follows_online_indexing_and_persistence(tmp_path):
    clf = GORAGClassifier()
    clf.fit_round(*split(BROAD))
    before = _background_lexical(clf, BROAD_QUERIES[0])
    for text in BROAD_QUERIES:
        clf.classify(text, index_threshold=None)
    assert clf.flush_online() == len(BROAD_QUERIES)
    after = _background_lexical(clf, BROAD_QUERIES[0])
    assert not np.allclose(before, after)  # the indexed texts joined the labels' backgrounds
    raw, mean, sd = _raw_and_background(clf, tokenize(BROAD_QUERIES[0]))
    assert after == pytest.approx(_standardised(raw, mean, sd))
    clf.persist(tmp_path / "c")
    loaded = GORAGClassifier.load(tmp_path / "c")
    assert loaded.scorer.weights.background
    for text in BROAD_QUERIES:
        got, want = loaded.classify(text, online=False), clf.classify(text, online=False)
        assert (got.candidates, got.scores) == (want.candidates, pytest.approx(want.scores))
    # a file written before the background existed: loaded as it was built
    state = tmp_path / "c" / "classifier.json"
    data = json.loads(state.read_text())
    del data["parameters"]["lexical_background"]
    state.write_text(json.dumps(data))
    assert not GORAGClassifier.load(tmp_path / "c").scorer.weights.background
    assert not GORAGClassifier.as_published().scorer.weights.background
    assert not GORAGClassifier(embedder=HashingEmbedder(64)).scorer.weights.background


def test_saved_members_say_whether_they_are_labelled_and_older_files_are_read(tmp_path):
    clf = two_rounds(GORAGClassifier(index_threshold=None))
    clf.batch([t for _, t in QUERIES])
    clf.persist(tmp_path / "c")
    flags = {y: [labelled for _, _, labelled in m] for y, m in clf.members.items()}
    assert sum(not f for fs in flags.values() for f in fs) == len(QUERIES)  # the indexed texts
    loaded = GORAGClassifier.load(tmp_path / "c")
    assert loaded.members == clf.members
    # a file written before members carried the flag: a text indexed online under its label is
    # not labelled, every other is
    state = tmp_path / "c" / "classifier.json"
    data = json.loads(state.read_text())
    data["members"] = {y: [[p, w] for p, w, _ in m] for y, m in data["members"].items()}
    state.write_text(json.dumps(data))
    old = GORAGClassifier.load(tmp_path / "c")
    assert {y: [labelled for _, _, labelled in m] for y, m in old.members.items()} == flags
    for _, text in QUERIES:
        assert old.classify(text, online=False).scores == pytest.approx(loaded.classify(text, online=False).scores)


def test_word_stems_do_not_depend_on_pystemmer_being_installed(monkeypatch):
    # snowballstemmer hands out PyStemmer's C build when that is installed (benchmarks/setup.sh
    # pulls it in), whose older Snowball release stems "emergency" to "emerg": a classifier
    # saved in one environment would meet other terms in another
    import snowballstemmer

    from rhizome.gorag import text

    class Other:
        def stemWord(self, word: str) -> str:
            return word[:3]

    monkeypatch.setattr(snowballstemmer, "stemmer", lambda language: Other())
    text._english_stemmer.cache_clear()
    text.word_stem.cache_clear()
    try:
        assert [word_stem(w) for w in ("emergency", "added", "internal")] == ["emergenc", "add", "internal"]
    finally:
        text._english_stemmer.cache_clear()
        text.word_stem.cache_clear()


def test_word_stems_join_forms_of_a_word_in_the_lexical_space_only():
    assert [word_stem(w) for w in ("depression", "depressive", "disorders", "disorder")] == [
        "depress", "depress", "disord", "disord"]
    # which tokens are content is decided on the words as written: "findings" is one, though
    # its stem "find" is a stop word; "of" is not, so it still parts the n-grams
    assert content_ngrams(tokenize("Findings of depressive disorders."), 2, word_stem) == Counter(
        {"find": 1, "depress": 1, "disord": 1, "depress disord": 1})
    texts = ["Depression in older adults.", "Depressive symptoms of students.", "Bridges carry loads."]
    stemmed = GORAGClassifier(online=False)
    written = GORAGClassifier(online=False, stem_words=False)
    for clf in (stemmed, written):
        clf.fit_round(texts, ["depression", "depression", "bridges"])
    assert stemmed.parameters()["stem_words"] and not written.parameters()["stem_words"]

    def cosine(clf, a, b):
        space = clf.scorer.space
        return (space.vector(tokenize(a)) @ space.vector(tokenize(b)).T).toarray()[0, 0]

    assert cosine(stemmed, "depressive", "depression") == pytest.approx(1.0)
    assert cosine(written, "depressive", "depression") == 0.0
    # the stems' document frequencies are counted as texts join T (the texts and the label
    # names), frozen at each refresh
    space = stemmed.scorer.space
    texts_of_t = stemmed.stats.texts

    def counted(upto):
        return sum((content_ngrams(padded.split(), 2, word_stem) for padded in texts_of_t[:upto]), Counter())

    assert (space.n, space.df) == (len(texts_of_t), counted(len(texts_of_t)))
    assert space.df["depress"] == 3  # two texts and the name "depression"
    stemmed.stats.add_text(tokenize("A depressed economy."))
    assert space.df["depress"] == 3
    space.refresh()
    assert (space.n, space.df["depress"]) == (len(texts_of_t), 4)
    space.refresh(upto=2)  # an earlier IDF, as a saved classifier holds: counted again
    assert (space.n, space.df) == (2, counted(2))
    space.refresh()
    assert space.df == counted(len(texts_of_t))
    # the name's phrase IDF (for its specificity) is of the name as written
    written_df = sum(" depression " in padded for padded in texts_of_t)
    assert space.phrase_idf("depression") == pytest.approx(math.log((1 + len(texts_of_t)) / (1 + written_df)) + 1)
    assert written_df < space.df["depress"]


def test_stems_are_on_without_an_embedder_and_older_files_load_without(tmp_path):
    assert GORAGClassifier().scorer.space.stem
    assert not GORAGClassifier(embedder=HashingEmbedder(64)).scorer.space.stem
    assert GORAGClassifier(embedder=HashingEmbedder(64), stem_words=True).scorer.space.stem
    clf = two_rounds(GORAGClassifier())
    clf.persist(tmp_path / "c")
    assert GORAGClassifier.load(tmp_path / "c").scorer.space.stem
    state = tmp_path / "c" / "classifier.json"
    data = json.loads(state.read_text())
    del data["parameters"]["stem_words"]
    state.write_text(json.dumps(data))
    old = GORAGClassifier.load(tmp_path / "c")
    assert not old.scorer.space.stem
    built_so = two_rounds(GORAGClassifier(stem_words=False))
    for _, text in QUERIES:
        assert old.classify(text, online=False).scores == pytest.approx(built_so.classify(text, online=False).scores)


def test_a_coverage_of_one_keeps_the_whole_pool_up_to_the_cap():
    clf = two_rounds(GORAGClassifier(online=False, candidate_coverage=1.0, max_candidates=10))
    labels = list(clf.labels)
    # the first label's probability already sums to 1.0 in floating point
    assert clf._cut([], np.array([1.0, 1e-30, 0.0]), labels) == labels
    assert clf._cut([], np.array([1.0, 1e-30, 0.0]), labels) == clf._cut([], np.array([0.5, 0.3, 0.2]), labels)
    for _, text in QUERIES:
        assert sorted(clf.classify(text).candidates) == sorted(labels)
