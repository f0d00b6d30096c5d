"""The GORAG classifier end to end: offline and with a scripted model, online indexing,
fallbacks, hallucinations, persistence and input errors."""

from __future__ import annotations

import json

import pytest

from rhizome.core.errors import (
    ConfigurationError,
    IndexFormatError,
    IndexNotFoundError,
    InvalidInputError,
)
from rhizome.gorag import ClassificationError, GORAGClassifier
from tests.gorag.conftest import (
    QUERIES,
    ROUND1,
    ROUND2,
    FlakyEmbedder,
    classifier_state,
    failing_model,
    learned_state,
    scripted_model,
    split,
)


def two_rounds(clf: GORAGClassifier) -> GORAGClassifier:
    clf.fit_round(*split(ROUND1))
    clf.fit_round(*split(ROUND2))
    return clf


@pytest.mark.parametrize("steiner", ["mehlhorn", "mst_prune"])
def test_offline_classifier_end_to_end(steiner):
    clf = two_rounds(GORAGClassifier(steiner=steiner))
    assert clf.keyword_source == "tfidf" and clf.label_choice == "score"
    for gold, text in QUERIES:
        result = clf.classify(text, online=False)
        assert result.label == gold
        assert result.label == result.candidates[0]
        assert result.chosen_by == "score" and result.round == 2
        assert result.confidence == result.scores[gold] and 0.0 < result.confidence <= 1.0
        assert list(result.scores) == result.candidates
        assert sorted(result.scores.values(), reverse=True) == list(result.scores.values())
        assert result.evidence, "the label should be backed by query keywords"
        assert result.tree.method == steiner
        assert all(t.startswith(("kw:", "label:")) for t in result.tree.terminals)
        json.dumps(result.model_dump())  # JSON-serialisable


def test_label_name_in_query_is_a_terminal():
    clf = two_rounds(GORAGClassifier())
    result = clf.classify("Notes on astronomy for beginners", online=False)
    assert "label:astronomy" in result.tree.terminals
    assert result.label == "astronomy"


def test_a_label_named_by_a_number_is_not_named_by_every_text_that_holds_the_number(tmp_path):
    """Defect: with label names on, a label named "1990" (or "2") was the graph node of the
    keyword "1990" in any text, so every text mentioning the year was tied to it."""
    from rhizome.gorag.text import tokenize

    texts = {
        "The heart pumps blood through arteries.": "1990",
        "Telescopes observe distant galaxies, stars and planets.": "2",
        "Water molecules form hydrogen bonds.": "h2o",
    }

    def keywords(text):  # a model would keep the numbers: its words of 4+ letters and numbers
        return ["zebra"] if "zebra" in text else [w for w in tokenize(text) if len(w) > 3 or any(map(str.isdigit, w))]

    clf = GORAGClassifier(keyword_source=keywords)
    clf.fit_round(list(texts), list(texts.values()))
    assert "kw:1990" not in clf.graph and clf.labels["1990"].description is None  # no name to describe it
    query = "In 1990 the telescope observed distant galaxies."
    result = clf.classify(query, online=False)
    assert "label:1990" not in result.tree.terminals and result.label == "2"
    assert "label:h2o" in clf.classify("Where h2o boils.", online=False).tree.terminals  # a name with a letter
    clf.persist(tmp_path / "c")
    loaded = GORAGClassifier.load(tmp_path / "c", keyword_source=keywords)
    assert loaded.classify(query, online=False).tree.terminals == result.tree.terminals
    # the graph's offline choice, when no keyword is a node, does not read the number as the name
    graph = GORAGClassifier(keyword_source=keywords, label_choice="graph", candidates="steiner")
    graph.fit_round(list(texts), list(texts.values()))
    zebra = graph.classify("A zebra seen in 1990.", online=False)
    assert zebra.fallback == "no_terminals" and zebra.label == "2"  # the label with most keyword edges


def test_online_indexing_adds_only_unseen_keywords():
    kws = {
        **{t: ["heart", "artery"] for _, t in ROUND1[:2]},
        **{t: ["telescope", "star"] for _, t in ROUND1[2:]},
        "query": ["heart", "valve", "star", "astronomy"],
    }
    clf = GORAGClassifier(keyword_source=lambda t: kws.get(t, []), index_threshold=None, online_mode="sequential")
    clf.fit_round(*split(ROUND1))
    before_edges = {frozenset(e) for e in clf.graph.edges}
    n_texts = clf.stats.n_texts
    heart_edges = dict(clf.graph["kw:heart"])
    result = clf.classify("query")
    assert result.new_keywords == ["valve"]
    assert result.indexed == ["valve"]
    assert clf.stats.n_texts == n_texts + 1
    after = {frozenset(e) for e in clf.graph.edges}
    assert after - before_edges == {frozenset(("kw:valve", f"label:{result.label}"))}
    assert dict(clf.graph["kw:heart"]) == heart_edges  # existing keywords gain no edge
    # "astronomy" is a label name: a terminal, never indexed as a keyword
    assert "kw:astronomy" not in clf.graph
    # the same query again: nothing is new any more
    again = clf.classify("query")
    assert again.indexed == [] and again.new_keywords == []
    # online=False never changes the graph
    snapshot = clf.stats_summary()
    clf.classify("query", online=False)
    assert clf.stats_summary() == snapshot


def test_fallbacks_for_zero_and_one_terminal():
    kws = {ROUND1[0][1]: ["heart"], ROUND1[2][1]: ["star"], "none": ["zebra"], "one": ["heart", "zebra"]}
    clf = GORAGClassifier(keyword_source=lambda t: kws[t], name_keywords=False, candidates="steiner", label_choice="graph")
    clf.fit_round([ROUND1[0][1], ROUND1[2][1]], ["cardiology", "astronomy"])
    none = clf.classify("none", online=False)
    assert none.fallback == "no_terminals"
    assert sorted(none.candidates) == ["astronomy", "cardiology"]
    assert none.label in ("astronomy", "cardiology")
    one = clf.classify("one", online=False)
    assert one.candidates == ["cardiology"] and one.label == "cardiology"
    assert one.evidence == ["heart"]
    assert one.tree.edges and one.tree.cost > 0


def test_disconnected_round_one_graph_unions_components():
    kws = {ROUND1[0][1]: ["heart"], ROUND1[2][1]: ["star"], "q": ["heart", "star"]}
    clf = GORAGClassifier(keyword_source=lambda t: kws[t], name_keywords=False, candidates="steiner")
    clf.fit_round([ROUND1[0][1], ROUND1[2][1]], ["cardiology", "astronomy"])
    result = clf.classify("q", online=False)
    assert sorted(result.candidates) == ["astronomy", "cardiology"]
    assert result.unreachable == {"astronomy": 1, "cardiology": 1}


def test_model_path_uses_prompts_and_descriptions(model):
    clf = two_rounds(GORAGClassifier(model))
    assert clf.keyword_source == "llm" and clf.label_choice == "model"
    assert clf.labels["cooking"].description == "Texts about cooking and its typical subjects."
    result = clf.classify(QUERIES[0][1])
    assert result.chosen_by == "model" and result.label in clf.labels
    assert result.label == result.candidates[0] and result.strict_match is True
    classify_prompts = [m[-1]["content"] for m in model.requests if "Candidate labels" in m[-1]["content"]]
    assert classify_prompts and "Texts about" in classify_prompts[-1]


def test_hallucinated_answer_is_reported_and_not_indexed():
    model = scripted_model(choose=lambda prompt: "banana bread")
    clf = two_rounds(GORAGClassifier(model))
    size = clf.stats_summary()
    result = clf.classify(QUERIES[2][1])
    assert result.hallucinated is True
    assert result.model_answer == "banana bread"
    assert result.label == result.candidates[0] and result.chosen_by == "score"
    assert result.valid_answer is False
    assert result.indexed == [] and not result.online_indexed and clf.stats_summary() == size


def test_answer_outside_the_scored_candidates_is_rejected():
    model = scripted_model(choose=lambda prompt: "  'ASTRONOMY' ")
    clf = two_rounds(GORAGClassifier(model, max_candidates=1))
    result = clf.classify(QUERIES[2][1], online=False)
    assert result.candidates == ["cooking"]
    assert result.label == "cooking" and result.chosen_by == "score"
    assert result.valid_answer is False and not result.hallucinated
    # the candidates are the only answers the schema allows
    request = [m for m in model.requests if "Candidate labels" in m[-1]["content"]][-1]
    assert "- cooking (score " in request[-1]["content"] and "- astronomy" not in request[-1]["content"]


def test_known_label_outside_candidates_is_accepted_as_published():
    model = scripted_model(choose=lambda prompt: "  'ASTRONOMY' ")
    clf = two_rounds(GORAGClassifier.as_published(model))
    assert clf.candidates == "steiner" and clf.index_threshold is None and clf.label_choice == "model"
    result = clf.classify(QUERIES[2][1], online=False)
    assert result.label == "astronomy" and not result.hallucinated
    assert result.strict_match is False and result.valid_answer is True


def test_constrained_schema_lists_known_labels(model):
    clf = two_rounds(GORAGClassifier(model))
    schema = clf._schema().model_json_schema()
    assert schema["properties"]["label"]["enum"] == ["cardiology", "astronomy", "cooking"]


def test_batch_online_is_sequential_and_matches_single_calls(model):
    a = two_rounds(GORAGClassifier(scripted_model()))
    b = two_rounds(GORAGClassifier(scripted_model()))
    texts = [t for _, t in QUERIES]
    batch = a.batch(texts)
    single = [b.classify(t) for t in texts]
    assert [r.model_dump() for r in batch] == [r.model_dump() for r in single]
    assert a.stats_summary() == b.stats_summary()


async def test_async_api(model):
    clf = GORAGClassifier(model)
    await clf.afit_round(*split(ROUND1))
    result = await clf.aclassify(QUERIES[1][1])
    assert result.label in clf.labels
    results = await clf.abatch([t for _, t in QUERIES], online=False)
    assert len(results) == 3


def test_persist_and_load_round_trip(tmp_path):
    clf = two_rounds(GORAGClassifier(steiner="mst_prune"))
    clf.classify(QUERIES[0][1])  # grow the graph online
    clf.persist(tmp_path / "clf")
    loaded = GORAGClassifier.load(tmp_path / "clf")
    assert loaded.stats_summary() == clf.stats_summary()
    assert loaded.steiner == "mst_prune" and loaded.round == 2
    assert {frozenset((u, v)): d for u, v, d in loaded.graph.edges(data=True)} == {
        frozenset((u, v)): d for u, v, d in clf.graph.edges(data=True)
    }
    for _, text in QUERIES:
        assert loaded.classify(text, online=False) == clf.classify(text, online=False)
    # overriding a parameter on load
    assert GORAGClassifier.load(tmp_path / "clf", online=False).online is False


def test_load_errors(tmp_path, model):
    with pytest.raises(IndexNotFoundError):
        GORAGClassifier.load(tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "classifier.json").write_text("{not json")
    with pytest.raises(IndexFormatError):
        GORAGClassifier.load(bad)
    clf = two_rounds(GORAGClassifier(model))
    clf.persist(tmp_path / "llm")
    with pytest.raises(ConfigurationError, match="llm="):
        GORAGClassifier.load(tmp_path / "llm")
    offline = GORAGClassifier.load(tmp_path / "llm", keyword_source="tfidf")
    assert offline.label_choice == "score" and offline.classify(QUERIES[0][1]).label in offline.labels
    data = json.loads((tmp_path / "llm" / "classifier.json").read_text())
    data["format_version"] = 99
    (tmp_path / "llm" / "classifier.json").write_text(json.dumps(data))
    with pytest.raises(IndexFormatError, match="format 99"):
        GORAGClassifier.load(tmp_path / "llm", model)


def test_input_errors():
    clf = GORAGClassifier()
    with pytest.raises(ConfigurationError, match="fit_round"):
        clf.classify("anything")
    with pytest.raises(InvalidInputError):
        clf.fit_round(["a text"], [])
    with pytest.raises(InvalidInputError):
        clf.fit_round(["  "], ["x"])
    with pytest.raises(InvalidInputError):
        clf.fit_round(["a text"], [""])
    with pytest.raises(InvalidInputError):
        clf.fit_round([], [])
    clf.fit_round(*split(ROUND1))
    with pytest.raises(InvalidInputError):
        clf.classify("")
    with pytest.raises(ConfigurationError):
        GORAGClassifier(label_choice="model")
    with pytest.raises(ConfigurationError):
        GORAGClassifier(steiner="kou")
    with pytest.raises(ConfigurationError):
        GORAGClassifier(max_keywords=0)


def test_zero_shot_labels_and_given_descriptions():
    clf = GORAGClassifier()
    clf.fit_round([], [], new_labels=["astronomy", "cardiology"], descriptions={"cardiology": "heart disease and arteries"})
    assert clf.labels["cardiology"].description == "heart disease and arteries"
    assert clf.classify("a study of heart disease", online=False).label == "cardiology"
    assert clf.classify("astronomy of distant galaxies", online=False).label == "astronomy"


@pytest.mark.parametrize("with_texts", [False, True], ids=["label-not-in-the-round", "label-with-more-texts"])
def test_a_description_given_in_a_later_round_works_as_in_the_labels_own_round(with_texts):
    """Defect: a description given for a label of an earlier round was stored and shown to the
    model, but the graph never got its keywords (nor, for a label without texts in the round,
    the scorer its words)."""
    description = "Comets, nebulae and quasars."
    early = GORAGClassifier()
    early.fit_round(*split(ROUND1), descriptions={"astronomy": description})
    early.fit_round(*split(ROUND2))
    late = GORAGClassifier()
    late.fit_round(*split(ROUND1))
    texts, labels = split(ROUND2)
    if with_texts:
        texts, labels = [*texts, "Stars seen through a telescope."], [*labels, "astronomy"]
    late.fit_round(texts, labels, descriptions={"astronomy": description})
    for clf in (early, late):
        info = clf.labels["astronomy"]
        assert info.round == 1 and info.description == description
        assert info.name_text == f"astronomy. {description}"  # what the scorer reads as the name
        assert all(clf.graph.has_edge(f"kw:{w}", "label:astronomy") for w in ("comets", "nebulae", "quasars"))
        result = clf.classify("Quasars behind the nebulae.", online=False)
        assert result.label == "astronomy" and {"quasars", "nebulae"} <= set(result.evidence)
    size = late.stats_summary()
    late.fit_round([], [], new_labels=["cooking"], descriptions={"astronomy": description})  # the same again
    assert late.stats_summary() == {**size, "round": 3}


def test_offline_choice_is_the_candidate_most_tied_to_the_query_keywords():
    import asyncio

    clf = two_rounds(GORAGClassifier(online=False, label_choice="graph", candidates="steiner"))
    checked = 0
    for _, text in QUERIES:
        retrieved = asyncio.run(clf.aretrieve_candidates(text))
        if not retrieved["costs"]:
            continue

        def strength(label: str, retrieved=retrieved) -> float:
            node = f"label:{label}"
            return sum(1.0 - clf.graph[t][node]["weight"] for t in retrieved["terminals"] if clf.graph.has_edge(t, node))

        result = clf.classify(text)
        assert result.label in retrieved["candidates"]
        assert strength(result.label) == pytest.approx(max(strength(y) for y in retrieved["candidates"]))
        checked += 1
    assert checked >= 2


def test_the_scorers_label_is_a_candidate_even_with_no_nearest_labels():
    """With ``nearest_labels=0`` the pool is the Steiner labels, and the scorer's best label
    joins it: the label returned offline is always one of the candidates."""
    star = ROUND1[2][1]
    query = f"{star} Tonight again."
    kws = {ROUND1[0][1]: ["heart"], star: ["star"], query: ["heart"]}  # the query's one keyword is cardiology's
    clf = GORAGClassifier(keyword_source=lambda t: kws[t], name_keywords=False, nearest_labels=0)
    clf.fit_round([ROUND1[0][1], star], ["cardiology", "astronomy"])
    result = clf.classify(query, online=False)
    assert result.tree.terminals == ["kw:heart"]  # the tree reaches cardiology alone
    assert result.label == "astronomy" and result.label in result.candidates
    assert result.candidates == sorted(result.scores, key=result.scores.get, reverse=True)


def test_a_round_run_again_after_a_failure_pays_only_for_what_it_did_not_get():
    """Defect: one answer that stayed invalid failed fit_round, and running the round again
    asked the model for every description and keyword list again."""
    from rhizome.core.errors import ModelOutputError
    from rhizome.gorag import prompts

    healthy = scripted_model()
    broken = {"on": True}

    def respond(messages, schema):  # the description of one label stays invalid while broken
        asked = messages[:2]  # the system prompt and the question (a retry adds its own messages)
        if broken["on"] and asked[0]["content"] == prompts.DESCRIBE_SYSTEM and '"astronomy"' in asked[1]["content"]:
            return "I cannot help with that."
        return healthy._responses(asked, schema)

    llm = type(healthy)(respond)
    clf = GORAGClassifier(llm)
    with pytest.raises(ModelOutputError):
        clf.fit_round(*split(ROUND1))
    broken["on"] = False
    clf.fit_round(*split(ROUND1))
    described = [m[1]["content"] for m in llm.requests if m[0]["content"] == prompts.DESCRIBE_SYSTEM]
    assert clf.round == 1 and sum('"cardiology"' in d for d in described) == 1  # its valid answer was kept
    assert llm.cache is None  # the caller's model is left as given


BATCH = [
    QUERIES[0][1],
    "  ",  # a bad input: a per-item error, never a failure of the batch
    QUERIES[1][1],
    QUERIES[2][1],
    "Stars and galaxies seen through a telescope at night.",
    "Garlic and herbs season the roasted vegetables.",
]


@pytest.mark.parametrize(
    "options",
    [{}, {"max_pending": 2}, {"online_mode": "sequential"}],
    ids=["deferred", "deferred-flush-midway", "sequential"],
)
def test_a_batch_that_meets_a_model_failure_leaves_the_classifier_as_it_was(options):
    """Defect: texts classified before a model server failure stayed indexed (or waiting to
    be), so the same batch run again after the server recovered indexed them twice."""
    from rhizome.core.errors import ModelServerError

    settings = {"index_threshold": None, **options}
    whole = two_rounds(GORAGClassifier(scripted_model(), **settings))
    llm, calls = failing_model(fail_on=5)  # the fourth good text of the batch: three went before
    clf = two_rounds(GORAGClassifier(llm, **settings))
    for c in (whole, clf):
        c.classify("A telescope on a mountain.")  # one text indexed or waiting before the batch
    before = learned_state(clf)
    with pytest.raises(ModelServerError):
        clf.batch(BATCH)
    assert calls["classify"] == 5
    assert learned_state(clf) == before  # nothing of the failed batch stayed
    again = clf.batch(BATCH)  # the server is back
    assert isinstance(again[1], ClassificationError) and again[1].index == 1
    assert [r.model_dump() for r in again] == [r.model_dump() for r in whole.batch(BATCH)]
    clf.flush_online()
    whole.flush_online()
    assert learned_state(clf) == learned_state(whole)


def test_a_failed_batch_keeps_the_answers_a_failed_round_is_waiting_for():
    """The round cache (the answers of a round that has not succeeded yet) is no part of what
    a failed batch puts back: the round run again still pays only for what it did not get."""
    from rhizome.core.errors import ModelOutputError, ModelServerError
    from rhizome.gorag import prompts

    healthy = scripted_model()
    broken = {"describe": True, "classify": True}

    def respond(messages, schema):
        asked = messages[:2]
        if broken["describe"] and asked[0]["content"] == prompts.DESCRIBE_SYSTEM and '"geology"' in asked[1]["content"]:
            return "I cannot help with that."
        if broken["classify"] and asked[0]["content"] == prompts.CLASSIFY_SYSTEM:
            raise ModelServerError("the model server answered 503 after its retries")
        return healthy._responses(asked, schema)

    llm = type(healthy)(respond)
    clf = two_rounds(GORAGClassifier(llm, index_threshold=None))
    round3 = (["Sediment settles where rivers slow.", "Volcanoes erupt lava."], ["geology", "volcanology"])
    with pytest.raises(ModelOutputError):
        clf.fit_round(*round3)
    cache = clf._round_cache
    assert cache is not None and len(cache) > 0
    before = learned_state(clf)
    with pytest.raises(ModelServerError):
        clf.batch([t for _, t in QUERIES])
    assert clf._round_cache is cache and learned_state(clf) == before
    broken.update(describe=False, classify=False)
    asked = len(llm.requests)
    clf.fit_round(*round3)
    described = [m[1]["content"] for m in llm.requests[asked:] if m[0]["content"] == prompts.DESCRIBE_SYSTEM]
    assert clf.round == 3 and clf._round_cache is None
    assert described and all('"geology"' in d for d in described)  # volcanology's answer was kept


ROUND2_MORE = {"new_labels": ["geology"], "descriptions": {"cardiology": "Hearts, arteries and blood pressure."}}
"""Round 2 also adds a label without texts and describes a label of round 1 again."""


@pytest.mark.parametrize("error", ["ModelServerError", "ModelUnavailableError"])
@pytest.mark.parametrize("fail_on", [1, 2, 3], ids=["texts", "names", "link-targets"])
def test_a_round_whose_embedder_fails_changes_nothing(fail_on, error):
    """Defect: fit_round embedded the round's keywords (the targets of embedding links) after
    it had applied the round, so an embedder failure there raised with the round applied, and
    the same round run again added it a second time."""
    from rhizome.core import errors

    error = getattr(errors, error)
    embedder = FlakyEmbedder()
    clf, whole = GORAGClassifier(embedder=embedder), GORAGClassifier(embedder=FlakyEmbedder())
    for c in (clf, whole):
        c.fit_round(*split(ROUND1))
        c.classify(QUERIES[1][1])  # indexed online: the failed round meets a grown classifier
        c.flush_online()
    before = classifier_state(clf)
    embedder.fail(fail_on, error)
    with pytest.raises(error):
        clf.fit_round(*split(ROUND2), **ROUND2_MORE)
    assert classifier_state(clf) == before
    report = clf.fit_round(*split(ROUND2), **ROUND2_MORE)  # the embedder is back
    calls = whole.embedder.calls
    assert report == whole.fit_round(*split(ROUND2), **ROUND2_MORE)
    assert whole.embedder.calls - calls == 3  # the texts, the names, the keywords: each may fail
    assert classifier_state(clf) == classifier_state(whole)
    assert clf.labels["cardiology"].description == ROUND2_MORE["descriptions"]["cardiology"]
    assert [r.model_dump() for r in clf.batch([t for _, t in QUERIES])] == [
        r.model_dump() for r in whole.batch([t for _, t in QUERIES])
    ]


def test_a_round_whose_embedder_fails_last_keeps_the_answers_it_paid_for():
    """With a chat model the round's answers (descriptions, keyword lists) are kept for the
    round run again when the embedder fails after them, as when the model itself fails."""
    from rhizome.core.errors import ModelServerError

    embedder, llm = FlakyEmbedder(), scripted_model()
    clf = GORAGClassifier(llm, embedder=embedder)
    whole = GORAGClassifier(scripted_model(), embedder=FlakyEmbedder())
    before = classifier_state(clf)
    embedder.fail(3)  # the round's keywords, the last call of the round
    with pytest.raises(ModelServerError):
        clf.fit_round(*split(ROUND1))
    assert classifier_state(clf) == before and clf._round_cache is not None
    asked = len(llm.requests)
    clf.fit_round(*split(ROUND1))
    assert len(llm.requests) == asked  # every answer came from the round's cache
    whole.fit_round(*split(ROUND1))
    assert classifier_state(clf) == classifier_state(whole) and clf._round_cache is None


@pytest.mark.parametrize("mode", ["deferred", "sequential"])
def test_classifying_with_an_embedder_that_fails_changes_nothing(mode):
    """classify and batch make their embedder calls before they index (a batch that indexes
    as it goes undoes what it did): a failure leaves the classifier as it was."""
    from rhizome.core.errors import ModelServerError

    embedder = FlakyEmbedder()
    clf = GORAGClassifier(embedder=embedder, online_mode=mode, index_threshold=None)
    clf.fit_round(*split(ROUND1))
    clf.classify(QUERIES[0][1])
    before = classifier_state(clf)
    embedder.fail(2)  # the text's keywords, after its own vector
    with pytest.raises(ModelServerError):
        clf.classify(QUERIES[1][1])
    assert classifier_state(clf) == before
    embedder.fail(3)  # the second text's vector, the first text taken (sequential: indexed)
    with pytest.raises(ModelServerError):
        clf.batch([QUERIES[1][1], QUERIES[2][1]])
    assert embedder.calls == embedder._fail_at and classifier_state(clf) == before
