"""``rhizome classify``: train a GORAG classifier on labelled TSV files (one per round) and
label the lines of a TSV file. Registered under the ``rhizome.commands`` entry points."""

from __future__ import annotations

import argparse
import codecs
import sys
from pathlib import Path
from typing import Any

from rhizome.core.errors import ConfigurationError, IndexNotFoundError, InvalidInputError

# Only argparse and the kernel's light CLI helpers at module level: `rhizome --help` loads this
# module (the `rhizome.commands` entry point), so the classifier, scikit-learn and the models are
# imported inside cmd_classify.
from rhizome.tools.cli import as_json, choose_models, is_ollama, model_flags


def read_tsv(path: str | Path, *, labelled: bool | None = None) -> list[tuple[str | None, str | bytes]]:
    """Lines of ``label<TAB>text`` (or bare ``text`` when ``labelled`` is false or the line has
    no tab). Returns ``(label or None, text)`` pairs.

    Labelled (training) files must be clean: a bad line is an error naming it; their blank
    lines are skipped. In a file to classify every line is a row, so row ``i`` is line
    ``i + 1`` of the file: a line that is not UTF-8 is kept as its raw bytes and a blank line
    or an empty text as ``""``, and the classifier reports each as a per-line error and
    classifies the rest.

    The file is UTF-8 (a leading byte-order mark is dropped, as ``utf-8-sig`` does). A file
    in UTF-16 or UTF-32, or any file holding NUL bytes (binary), is refused as a whole with
    :class:`~rhizome.tools.loaders.UnreadableFileError`, the document loader's error for a
    file that is not text."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path} is not a file; give a TSV file with one `label<TAB>text` per line")
    data = path.read_bytes()
    _refuse_not_utf8_text(path, data)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    lines = data.split(b"\n")
    if lines[-1] == b"":  # the newline that ends the last line (or an empty file)
        lines.pop()
    rows: list[tuple[str | None, str | bytes]] = []
    for number, raw in enumerate(lines, 1):
        raw = raw.rstrip(b"\r")
        if labelled and not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if labelled:
                raise InvalidInputError(
                    f"{path}:{number}: not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8"
                ) from None
            label_part, tab, text_part = raw.partition(b"\t")
            label = label_part.decode("utf-8", "replace").strip() if tab and labelled is not False else None
            rows.append((label, text_part if label is not None else raw))
            continue
        if "\t" in line and labelled is not False:
            label, text = line.split("\t", 1)
            if labelled and (not label.strip() or not text.strip()):
                raise InvalidInputError(f"{path}:{number}: empty label or text in `label<TAB>text`")
            rows.append((label.strip() or None, text))
        elif labelled:
            raise InvalidInputError(f"{path}:{number}: expected `label<TAB>text`, found no tab")
        else:
            rows.append((None, line))
    return rows


_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),  # before UTF-16: FF FE 00 00 starts with FF FE
    (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _refuse_not_utf8_text(path: Path, data: bytes) -> None:
    """Refuse a whole file that is UTF-16/UTF-32 text or binary: read line by line as UTF-8
    it would give texts full of NULs (or nothing but per-line errors)."""
    from rhizome.tools.loaders import UnreadableFileError

    for bom, encoding in _WIDE_BOMS:
        if data.startswith(bom):
            raise UnreadableFileError(
                f"{path} is {encoding} text (it starts with a {encoding} byte-order mark), not UTF-8; "
                f"re-encode it as UTF-8 (e.g. `iconv -f {encoding} -t UTF-8 {path} > {path.stem}.utf8{path.suffix}`)"
            )
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise UnreadableFileError(
            f"{path} holds NUL bytes (first on line {line}), so it is binary or UTF-16/UTF-32 text, not UTF-8; "
            "re-encode it as UTF-8 (e.g. `iconv -f UTF-16 -t UTF-8`), or give the TSV text file"
        )


def _threshold(value: str) -> float | str:
    if value.lower() in ("none", "all"):
        return "none"
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1] or 'none', got {value!r}") from None
    if not 0 <= number <= 1:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1] or 'none', got {value!r}")
    return number


def _bound(value: str) -> int | str:
    """A positive count, or 'none' (no bound)."""
    if value.strip().lower() == "none":
        return "none"
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number or 'none', got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number or 'none', got {value!r}")
    return number


# flag → constructor parameter, for the classifier's knobs
KNOBS = (
    "label_choice",
    "candidates",
    "max_candidates",
    "candidate_coverage",
    "index_threshold",
    "online_mode",
    "max_pending",
    "online_weight",
    "lexical_weight",
    "dense_weight",
    "graph_weight",
    "temperature",
    "name_weight",
    "name_match_weight",
    "nearest_example_weight",
    "split_names",
    "lexical_background",
    "stem_words",
    "nearest_labels",
    "link_threshold",
    "link_keywords",
    "keyword_source",
    "steiner",
    "label_edge_mode",
    "label_names",
    "describe_labels",
    "name_keywords",
    "max_keywords",
    "max_ngram",
    "epsilon",
    "max_text_tokens",
    "example_tokens",
    "description_examples",
    "constrain_labels",
)


def cmd_classify(args: argparse.Namespace) -> int:
    from rhizome.core.store.targets import check_output_files
    from rhizome.gorag.classifier import GORAGClassifier
    from rhizome.gorag.persistence import STATE_FILE, check_target
    from rhizome.tools.cli import make_cli_embedder

    if not args.train and not args.classifier:
        raise ConfigurationError("nothing to classify with: pass --train FILE (one per round) and/or --classifier DIR")
    if args.classifier:
        _check_saved_classifier(args.classifier)
    # every path written is checked before the work: a refused one would fail only after it
    if args.save:
        check_target(args.save)
        same = args.classifier is not None and Path(args.classifier).resolve() == Path(args.save).resolve()
        if (Path(args.save) / STATE_FILE).exists() and not same and not args.force:
            raise InvalidInputError(f"{args.save} holds a saved classifier; choose another --save, or pass --force to replace it")
    if args.out:
        check_output_files([args.out], replace=args.force, what="the predictions")
    # every file is read (and a bad one refused) before any model is asked or round is fit
    rounds = [(train, read_tsv(train, labelled=True)) for train in args.train or []]
    rows = read_tsv(args.input)
    if args.offline and is_ollama(args.embed):
        raise ConfigurationError(f"--offline uses no model server, but --embed {args.embed} is served by Ollama; drop one of them")
    if args.as_published and args.classifier:
        raise ConfigurationError("--as-published builds a new classifier the paper's way; it cannot change a saved one "
                                 "(--classifier): drop one of them")
    embed_spec = args.embed  # offline too: an embedder that runs here (sentence-transformers, hashing) helps the scorer
    if not args.embed:
        args.embed = "hashing:384"  # the classifier needs no embedder; don't ask Ollama for one
    models = choose_models(args, want_llm=True, fall_back=False)
    embedder = make_cli_embedder(embed_spec, args) if embed_spec else None
    options: dict[str, Any] = {k: getattr(args, k) for k in KNOBS if getattr(args, k, None) is not None}
    for knob in ("index_threshold", "max_pending"):
        if options.get(knob) == "none":
            options[knob] = None
    if args.classifier:
        if models.llm is None:
            options.setdefault("keyword_source", "tfidf")
        classifier = GORAGClassifier.load(
            args.classifier, models.llm, **({"embedder": embedder} if embedder is not None else {}), **options
        )
    elif args.as_published:
        classifier = GORAGClassifier.as_published(models.llm, embedder=embedder, **options)
    else:
        classifier = GORAGClassifier(models.llm, embedder=embedder, **options)
    for train, labelled in rounds:
        # read_tsv(labelled=True) gives every line a label; fit_round decodes bytes (refusing what is not UTF-8)
        report = classifier.fit_round([t for _, t in labelled], [lab for lab, _ in labelled])  # type: ignore[misc]
        _note(args, f"round {report.round} from {train}: {len(report.new_labels)} new labels, "
                    f"{report.texts} texts, graph {report.nodes} nodes / {report.edges} edges")
    results = classifier.batch([t for _, t in rows], online=False if args.no_online else None)  # else the classifier's own
    lines = []
    errors = guesses = 0
    for number, ((gold, text), result) in enumerate(zip(rows, results), 1):  # row i is line i + 1
        shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
        if result.label is None:  # a ClassificationError: this line only
            errors += 1
            _note(args, f"{args.input}:{number}: {result.error}")
            if args.json:
                lines.append(as_json({"gold": gold, "line": number, "error": result.error}) + "\n")
            else:
                lines.append(f"ERROR\t{shown}\n")
            continue
        guessed = result.fallback == "no_terminals"  # nothing of the text is in the graph
        if guessed:
            guesses += 1
            _note(args, f"{args.input}:{number}: no keyword of this text is in the graph; its label is a guess")
        if args.json:
            record = {"gold": gold, **result.model_dump()} if gold is not None else result.model_dump()
            lines.append(as_json(record) + "\n")
        else:
            lines.append(f"{'?' if guessed else ''}{result.label}\t{shown}\n")
    if args.out:
        Path(args.out).write_text("".join(lines), encoding="utf-8")
    else:
        sys.stdout.write("".join(lines))
    scored = [(g, r) for (g, _), r in zip(rows, results) if g is not None and r.label is not None]
    if scored:
        correct = sum(1 for g, r in scored if g == r.label and not r.hallucinated)
        _note(args, f"accuracy {correct / len(scored):.4f} over {len(scored)} labelled lines")
    if errors:
        _note(args, f"{errors} of {len(rows)} texts could not be classified (see above); the others were")
    if guesses:
        _note(args, f"{guesses} of {len(rows)} labels are guesses (marked '?' before the label; the JSON says "
                    "fallback: no_terminals): those texts share no keyword with the graph")
    if args.save:
        classifier.persist(args.save)
        _note(args, f"saved the classifier to {args.save}")
    return 1 if errors and errors == len(rows) else 0


def _check_saved_classifier(directory: str) -> None:
    """Refuse a ``--classifier`` that holds no saved classifier, saying what is there."""
    from rhizome.gorag.persistence import STATE_FILE

    path = Path(directory)
    todo = ("give the directory a `rhizome classify ... --save DIR` wrote, or drop --classifier and "
            "train a new classifier with --train FILE (add --save DIR to keep it)")
    if not path.exists():
        raise IndexNotFoundError(f"--classifier {directory}: no such directory, so no saved classifier; {todo}")
    if not path.is_dir():
        raise IndexNotFoundError(f"--classifier {directory} is a file, not a saved classifier's directory; {todo}")
    if not (path / STATE_FILE).is_file():
        raise IndexNotFoundError(f"--classifier {directory} holds no saved classifier (no {STATE_FILE} in it); {todo}")


def _note(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        print(text, file=sys.stderr)


def register(subparsers: Any) -> None:
    """Add ``classify`` to the ``rhizome`` command line."""
    p = subparsers.add_parser(
        "classify",
        help="label texts with a GORAG classifier trained on few labelled texts per round",
        description="Train (or load) a GORAG classifier and label each line of INPUT. TSV lines are "
        "`label<TAB>text`; in INPUT the label is optional and, when present, is scored.",
    )
    p.add_argument("input", help="TSV file to classify: `text` or `label<TAB>text` per line")
    p.add_argument("--train", action="append", help="labelled TSV file for one round; repeat for several rounds, in order")
    p.add_argument("--classifier", help="directory of a saved classifier to start from")
    p.add_argument("--save", help="directory to save the classifier to afterwards")
    p.add_argument("--steiner", choices=["mehlhorn", "mst_prune"], help="Steiner tree algorithm (default mehlhorn)")
    p.add_argument("--no-online", action="store_true", help="do not index the classified texts (default: online indexing on)")
    p.add_argument("--as-published", action="store_true",
                   help="the paper's behaviour: Steiner candidates only, every text indexed online")
    p.add_argument("--label-choice", choices=["auto", "model", "score", "graph"],
                   help="who picks the label (default auto: the model with --llm, else the scorer)")
    p.add_argument("--candidates", choices=["scored", "steiner"], help="candidate labels (default scored)")
    p.add_argument("--max-candidates", type=int, help="at most this many candidates (default 12)")
    p.add_argument("--candidate-coverage", type=float, help="stop adding candidates at this probability mass (default 0.995; 0.99 with --embed)")
    p.add_argument("--index-threshold", type=_threshold,
                   help="index a text online only at this confidence or more; 'none' indexes all (default 0.5)")
    p.add_argument("--online-mode", choices=["deferred", "sequential", "revisit"],
                   help="deferred (default): indexed texts join after the batch, order-free; sequential: at once (the paper); "
                        "revisit: deferred, then the batch's texts below the threshold are classified again after its confident ones joined")
    p.add_argument("--max-pending", type=_bound,
                   help="with deferred indexing, the waiting texts also join once this many wait; 'none': only at the end (default 5000)")
    p.add_argument("--online-weight", type=float, help="weight of an indexed text in its label's profile (default 0.5)")
    p.add_argument("--name-weight", type=float,
                   help="weight of a label's name against its examples (default 1: as one text, or with split names as the examples' centroid)")
    p.add_argument("--name-match-weight", type=float,
                   help="scorer weight of the label's whole name found in the text (for the candidates: the share of its words) (default 0.25)")
    p.add_argument("--nearest-example-weight", type=float,
                   help="scorer weight of the text's cosine with the label's nearest labelled text, in the choice only (default 1; 0 with --embed)")
    p.add_argument("--split-names", action=argparse.BooleanOptionalAction, default=None,
                   help="score a label's name apart from its examples (default: on with --embed, off without)")
    p.add_argument("--lexical-background", action=argparse.BooleanOptionalAction, default=None,
                   help="cut the candidates with each label's TF-IDF score standardised against its score on other labels' texts (default: off with --embed, on without)")
    p.add_argument("--stem-words", action=argparse.BooleanOptionalAction, default=None,
                   help="read the TF-IDF vectors in English word stems, so 'depressive' meets 'depression' (default: off with --embed, on without)")
    p.add_argument("--lexical-weight", type=float, help="scorer weight of TF-IDF similarity (default 1; 1.5 with --embed)")
    p.add_argument("--dense-weight", type=float, help="scorer weight of embedding similarity (default 0.5; needs --embed)")
    p.add_argument("--graph-weight", type=float, help="scorer weight of the keyword graph (default 0.5; 0.25 with --embed)")
    p.add_argument("--temperature", type=float, help="softmax temperature of the scorer (default 0.05; 0.08 with --embed)")
    p.add_argument("--nearest-labels", type=int,
                   help="best-scored labels that join the Steiner labels in the pool the candidates are cut from (default: --max-candidates)")
    p.add_argument("--link-threshold", type=float,
                   help="with --embed, link a query keyword the graph lacks to its most similar graph keyword at this cosine or more (default 0.8)")
    p.add_argument("--link-keywords", type=int, help="with --embed, at most this many query keywords are linked so (default 8)")
    p.add_argument("--keyword-source", choices=["auto", "llm", "tfidf"],
                   help="who picks a text's keywords (default auto: the model with --llm, else TF-IDF)")
    p.add_argument("--label-edge-mode", choices=["printed", "mean"],
                   help="weight of the edges between new and older labels: the paper's formula as printed (default) or its prose's mean")
    p.add_argument("--label-names", action=argparse.BooleanOptionalAction, default=None,
                   help="labels are meaningful names: a keyword equal to a name maps to the label, labels get descriptions (default on)")
    p.add_argument("--describe-labels", action=argparse.BooleanOptionalAction, default=None,
                   help="with --llm and label names, the model describes each new label (default on)")
    p.add_argument("--name-keywords", action=argparse.BooleanOptionalAction, default=None,
                   help="without a model description, a label's name stands for its description (default on)")
    p.add_argument("--max-keywords", type=int, help="keywords kept per text (default 20)")
    p.add_argument("--max-ngram", type=int, help="longest offline keyword, in words (default 3)")
    p.add_argument("--epsilon", type=float, help="smallest edge weight of the keyword graph (default 0.001)")
    p.add_argument("--max-text-tokens", type=int, help="tokens of the text in the classification prompt (default 1000)")
    p.add_argument("--example-tokens", type=int, help="tokens of each example in the label-description prompt (default 100)")
    p.add_argument("--description-examples", type=int, help="examples in the label-description prompt (default 2)")
    p.add_argument("--constrain-labels", action=argparse.BooleanOptionalAction, default=None,
                   help="send the known labels as a JSON-schema enum with the classification request (default on)")
    p.add_argument("--json", action="store_true", help="one JSON record per line (label, candidates, tree, keywords)")
    p.add_argument("--out", help="write the predictions here instead of standard output")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out file, or a classifier saved in --save other than the --classifier one")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress notes on standard error")
    model_flags(p)
    p.set_defaults(func=cmd_classify)


__all__ = ["cmd_classify", "read_tsv", "register"]
