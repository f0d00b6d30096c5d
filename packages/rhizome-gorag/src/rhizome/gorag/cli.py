"""``rhizome classify``: train a GORAG classifier on labelled TSV files (one per round) and
label the lines of a TSV file. Registered under the ``rhizome.commands`` entry points."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# Only argparse and the kernel's light CLI helpers at module level: `rhizome --help` loads this
# module (the `rhizome.commands` entry point), so the classifier, scikit-learn and the models are
# imported inside cmd_classify.
from rhizome.core.cli import choose_models, model_flags
from rhizome.core.errors import ConfigurationError, InvalidInputError


def read_tsv(path: str | Path, *, labelled: bool | None = None) -> list[tuple[str | None, str]]:
    """Lines of ``label<TAB>text`` (or bare ``text`` when ``labelled`` is false or the line has
    no tab); blank lines are skipped. Returns ``(label or None, text)`` pairs."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path} is not a file; give a TSV file with one `label<TAB>text` per line")
    rows: list[tuple[str | None, str]] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            if "\t" in line and labelled is not False:
                label, text = line.split("\t", 1)
                if not label.strip() or not text.strip():
                    raise InvalidInputError(f"{path}:{number}: empty label or text in `label<TAB>text`")
                rows.append((label.strip(), text))
            elif labelled:
                raise InvalidInputError(f"{path}:{number}: expected `label<TAB>text`, found no tab")
            else:
                rows.append((None, line))
    return rows


def cmd_classify(args: argparse.Namespace) -> int:
    from rhizome.gorag.classifier import GORAGClassifier

    if not args.train and not args.classifier:
        raise ConfigurationError("nothing to classify with: pass --train FILE (one per round) and/or --classifier DIR")
    if not args.embed:
        args.embed = "hashing:384"  # the classifier needs no embedder; don't ask Ollama for one
    models = choose_models(args, want_llm=True, fall_back=False)
    options: dict[str, Any] = {"steiner": args.steiner}
    if args.classifier and (Path(args.classifier) / "classifier.json").exists():
        classifier = GORAGClassifier.load(
            args.classifier, models.llm, **({"keyword_source": "tfidf"} if models.llm is None else {}), **options
        )
    else:
        classifier = GORAGClassifier(models.llm, **options)
    for train in args.train or []:
        rows = read_tsv(train, labelled=True)
        report = classifier.fit_round([t for _, t in rows], [lab for lab, _ in rows])
        _note(args, f"round {report.round} from {train}: {len(report.new_labels)} new labels, "
                    f"{report.texts} texts, graph {report.nodes} nodes / {report.edges} edges")
    rows = read_tsv(args.input)
    results = classifier.batch([t for _, t in rows], online=not args.no_online)
    lines = []
    for (gold, text), result in zip(rows, results):
        if args.json:
            record = {"gold": gold, **result.model_dump()} if gold is not None else result.model_dump()
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            lines.append(f"{result.label}\t{text}\n")
    if args.out:
        Path(args.out).write_text("".join(lines), encoding="utf-8")
    else:
        sys.stdout.write("".join(lines))
    scored = [(g, r) for (g, _), r in zip(rows, results) if g is not None]
    if scored:
        correct = sum(1 for g, r in scored if g == r.label and not r.hallucinated)
        _note(args, f"accuracy {correct / len(scored):.4f} over {len(scored)} labelled lines")
    if args.save:
        classifier.persist(args.save)
        _note(args, f"saved the classifier to {args.save}")
    return 0


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
    p.add_argument("--steiner", choices=["mehlhorn", "mst_prune"], default="mehlhorn", help="Steiner tree algorithm (default mehlhorn)")
    p.add_argument("--no-online", action="store_true", help="do not index the classified texts (paper default: online indexing on)")
    p.add_argument("--json", action="store_true", help="one JSON record per line (label, candidates, tree, keywords)")
    p.add_argument("--out", help="write the predictions here instead of standard output")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress notes on standard error")
    model_flags(p)
    p.set_defaults(func=cmd_classify)


__all__ = ["cmd_classify", "read_tsv", "register"]
