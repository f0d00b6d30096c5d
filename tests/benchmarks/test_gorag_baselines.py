"""The GORAG benchmark's name-rule baseline on a tiny hand-made case (no data needed)."""

from __future__ import annotations

import numpy as np

from benchmarks.gorag import name_rule, named_labels, tfidf_nearest

LABELS = ["machine_learning", "learning", "alzheimer's_disease", "attention", "cancer"]


def test_a_name_occurs_as_whole_words_case_and_punctuation_ignored():
    assert named_labels("New Machine-Learning methods", LABELS) == ["machine_learning", "learning"]
    assert named_labels("Patients with Alzheimer's disease", LABELS) == ["alzheimer's_disease"]
    assert named_labels("attentional bias and cancers", LABELS) == []  # whole words only
    assert named_labels("learning machines", LABELS) == ["learning"]  # the words in order, side by side


def test_the_longest_named_label_wins_then_the_fallback_decides():
    def fallback(train, labels, tests):  # prefers the labels late in the list
        return np.tile(np.linspace(0.0, 0.5, len(labels)), (len(tests), 1))

    scores_of = name_rule(fallback)
    tests = ["machine learning for cancer", "nothing named here", "attention and cancer"]
    scores = scores_of([], LABELS, tests)
    assert [LABELS[k] for k in scores.argmax(axis=1)] == [
        "machine_learning",  # longer than "cancer" and "learning"
        "cancer",  # nothing named: the fallback's best
        "attention",  # "attention" (9 characters) beats "cancer" (6)
    ]
    # names of the same length: the fallback's higher score decides
    pair = ["cancer", "asthma"]
    assert pair[name_rule(fallback)([], pair, ["asthma or cancer"]).argmax()] == "asthma"


def test_with_tfidf_the_rule_overrides_the_nearest_example():
    train = [("genetics", "genes and heredity of traits"), ("cancer", "tumour growth in patients")]
    labels = ["genetics", "cancer"]
    tests = ["tumour growth studied through genetics", "tumour growth in patients"]
    assert [labels[k] for k in tfidf_nearest(train, labels, tests).argmax(axis=1)] == ["cancer", "cancer"]
    assert [labels[k] for k in name_rule(tfidf_nearest)(train, labels, tests).argmax(axis=1)] == ["genetics", "cancer"]


def test_a_full_run_writes_its_own_docs_section(tmp_path, monkeypatch):
    # a run over every test text of both shots writes the section named after its options, not
    # after the configuration it ran last (the loop over configurations once shadowed the name)
    from benchmarks import gorag

    topics = {"astronomy": "stars galaxies telescope orbit", "cooking": "recipe oven flour butter",
              "chess": "opening gambit endgame rook", "rowing": "boat oar crew regatta"}
    rounds = [{"train": [(y, f"{words} {y}")], "test": [(y, f"the {words}")]} for y, words in topics.items()]
    monkeypatch.setattr(gorag, "load", lambda shots, limit: rounds)
    (tmp_path / "gorag-wos").mkdir()  # the run checks that the data is there before it starts
    monkeypatch.setattr(gorag.data, "data_dir", lambda: tmp_path)
    written = []
    import benchmarks.__main__ as cli

    monkeypatch.setattr(cli, "write_section", lambda key, title, body: written.append((key, title)))
    gorag.main(["--shots", "1", "5", "--shuffles", "1", "--no-published", "--write-docs",
                "--out", str(tmp_path / "run.json")])
    assert written == [("gorag-none-1-5shot-all", "GORAG on gorag-wos (TF-IDF only, 1, 5-shot, every test text)")]
    # each round's passes are kept one test file at a time: the round's own file first, its
    # one label new, then the re-tests of the earlier files
    import json

    saved = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    round3 = saved["shots"]["1"]["gorag_tfidf"]["rounds"][2]
    assert round3["new_labels"] == 1
    assert [row["file"] for row in round3["files"]] == [3, 1, 2]
    assert all(row["texts"] == 1 for row in round3["files"])
    first = round3["files"][0]
    assert first["candidate_recall"] == 1.0 and first["new_label_share"] > 0
    assert round3["candidate_recall"] == sum(row["candidate_recall"] for row in round3["files"]) / 3
    assert "| 3 (1) | 3 | first | 1 |" in gorag.tables(saved)
    # another online mode gets its own section, and its rows say which mode they ran
    written.clear()
    gorag.main(["--shots", "1", "--shuffles", "0", "--no-published", "--write-docs", "--online-mode", "revisit",
                "--out", str(tmp_path / "revisit.json")])
    assert written == [("gorag-none-1shot-all-revisit",
                        "GORAG on gorag-wos (TF-IDF only, 1-shot, every test text, online_mode revisit)")]
    revisit = gorag.tables(json.loads((tmp_path / "revisit.json").read_text(encoding="utf-8")))
    assert '| GORAG, TF-IDF only, `online_mode="revisit"` | 1 |' in revisit and "(default)" not in revisit


def test_the_wide_dev_stream_adds_the_five_shot_texts_the_one_shot_file_leaves_unlabelled(tmp_path, monkeypatch):
    from benchmarks import gorag

    for r in range(1, gorag.ROUNDS + 1):
        five = [f"y{r}\tfive shot text {r}.{i}" for i in range(5)]
        files = {("wos_5_shot", "train"): five, ("wos_5_shot", "dev"): [f"y{r}\tdev text {r}"],
                 ("wos_1_shot", "train"): five[:1], ("wos_1_shot", "dev"): five[1:2]}
        for (shots, split), lines in files.items():
            path = tmp_path / "gorag-wos" / shots / f"n{r}" / f"{split}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(gorag.data, "data_dir", lambda: tmp_path)
    plain, wide = gorag.load_dev_stream(1), gorag.load_dev_stream(1, wide=True)
    assert [r["train"] for r in wide] == [r["train"] for r in plain] == [[(f"y{r}", f"five shot text {r}.0")] for r in range(1, 5)]
    assert [r["test"] for r in plain] == [[(f"y{r}", f"dev text {r}")] for r in range(1, 5)]
    # the four 5-shot train texts the 1-shot file does not label (its dev text among them), then the dev text
    assert wide[2]["test"] == [("y3", f"five shot text 3.{i}") for i in range(1, 5)] + [("y3", "dev text 3")]
    assert gorag.load_dev_stream(5, wide=True) == gorag.load_dev_stream(5)  # at 5-shot every train text is labelled
