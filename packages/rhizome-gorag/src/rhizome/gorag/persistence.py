"""A classifier on disk: a directory with one ``classifier.json`` — format name and version,
parameters, labels, the graph's nodes and edges, and the texts of ``T`` — written atomically
(temporary file, fsync, rename). Models are not stored: they are passed again on load."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rhizome.core.errors import (
    ConfigurationError,
    IndexFormatError,
    IndexNotFoundError,
    InvalidInputError,
)
from rhizome.core.store.storage import file_in_the_way
from rhizome.core.store.targets import check_output_folder
from rhizome.gorag.results import LabelInfo
from rhizome.gorag.text import TermStats, name_keyword, text_key

if TYPE_CHECKING:
    from rhizome.gorag.classifier import GORAGClassifier

FORMAT = "rhizome-gorag-classifier"
FORMAT_VERSION = 2
STATE_FILE = "classifier.json"


def check_target(path: str | Path) -> Path:
    """The directory ``path`` a classifier can be saved to, or :class:`InvalidInputError` when
    it (or the nearest existing folder above it) is a file, or it is or lies in an index
    directory (:func:`rhizome.core.store.targets.check_output_folder`): checked before any work
    is done."""
    if (blocker := file_in_the_way(path)) is not None:
        raise InvalidInputError(
            f"cannot save the classifier to {path}: {blocker} is a file, not a directory; "
            "give the path of a directory (a missing one is created)"
        )
    return check_output_folder(path, what="the classifier")  # never inside an index directory


def save(classifier: GORAGClassifier, path: str | Path) -> Path:
    """Write ``classifier`` to the directory ``path`` (see :meth:`GORAGClassifier.persist`)."""
    directory = check_target(path)
    directory.mkdir(parents=True, exist_ok=True)
    classifier.flush_online()
    with classifier._lock:
        payload = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "rhizome_gorag_version": _version(),
            "saved": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "models": {
                "llm": getattr(classifier.llm, "name", None),
                "embedder": getattr(classifier.embedder, "name", None),
            },
            "parameters": classifier.parameters(),
            "round": classifier.round,
            "labels": [info.model_dump() for info in classifier.labels.values()],
            "nodes": [[n, d] for n, d in classifier.graph.nodes(data=True)],
            "edges": [[u, v, d] for u, v, d in classifier.graph.edges(data=True)],
            "corpus": classifier.stats.to_json(),
            "members": {y: [[p, w, labelled] for p, w, labelled in m] for y, m in classifier.members.items()},
            "dense": {
                y: {
                    "sum": None if p.dense_sum is None else p.dense_sum.tolist(),
                    "name": None if p.name_dense is None else p.name_dense.tolist(),
                }
                for y, p in classifier.scorer.profiles.items()
                if p.dense_sum is not None or p.name_dense is not None
            },
            "linker": classifier.linker.to_json(),
            "self_indexed": {key: [[y, w, nodes] for y, w, nodes in seen] for key, seen in classifier.self_indexed.items()},
            "idf_texts": classifier.scorer.space.n,
            "stats": classifier.stats_summary(),
        }
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    target = directory / STATE_FILE
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)
    return directory


def load(
    cls: type[GORAGClassifier],
    path: str | Path,
    llm: Any = None,
    *,
    keyword_source: Any = None,
    **overrides: Any,
) -> GORAGClassifier:
    """Open a classifier written by :func:`save` as an instance of ``cls`` (see
    :meth:`GORAGClassifier.load`). A classifier built with an embedder needs an embedder of
    the same name again (``embedder=...``), or ``dense_weight=0`` to score without one."""
    target = Path(path) / STATE_FILE
    if not target.exists():
        raise IndexNotFoundError(
            f"no GORAG classifier at {path} (missing {STATE_FILE}); build one with "
            "GORAGClassifier().fit_round(texts, labels) and save it with persist(path)"
        )
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"cannot read {target}: {exc}; the file is damaged, rebuild the classifier") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise IndexFormatError(f"{target} is not a GORAG classifier file")
    if data.get("format_version") != FORMAT_VERSION:
        raise IndexFormatError(
            f"{target} uses GORAG classifier format {data.get('format_version')}, this version reads "
            f"{FORMAT_VERSION}; rebuild it, or install the rhizome-gorag version that wrote it"
        )
    try:
        params = dict(data["parameters"])
        models = dict(data.get("models") or {})
        stored_source = params.pop("keyword_source")
        stored_choice = params.pop("label_choice")
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{target} lacks its parameters or models ({exc!r}); the file is damaged, rebuild the classifier") from exc
    # files written before these knobs existed scored the name inside the profile
    params.setdefault("name_match_weight", 0.0)
    params.setdefault("nearest_example_weight", 0.0)
    params.setdefault("split_names", False)
    params.setdefault("lexical_background", False)
    params.setdefault("stem_words", False)
    built_embedder = models.get("embedder")
    embedder = overrides.pop("embedder", None)
    built_with = models.get("llm")
    if keyword_source is None:
        if stored_source == "function":
            raise ConfigurationError(
                f"{path} was built with a custom keyword function; pass it again as keyword_source=..."
            )
        if stored_source == "llm" and llm is None:
            raise ConfigurationError(
                f"{path} was built with keywords from the model {built_with}; pass llm=... (the same "
                "model for consistent keywords), or keyword_source='tfidf' to query it offline"
            )
        keyword_source = stored_source
    asked_choice = params.pop("label_choice_asked", None)  # absent from files written before it
    if "label_choice" not in overrides:
        if asked_choice == "auto":  # who chooses follows the model given now
            overrides["label_choice"] = "auto"
        else:
            overrides["label_choice"] = stored_choice if (stored_choice != "model" or llm is not None) else "score"
    params.update(overrides)
    try:
        classifier = cls(llm, embedder=embedder, keyword_source=keyword_source, **params)
        given = getattr(classifier.embedder, "name", None)
        if built_embedder and given != built_embedder and classifier.scorer.weights.dense > 0:
            raise ConfigurationError(
                f"{path} was built with the embedder {built_embedder}; pass embedder=... (the same model), "
                "or dense_weight=0 to classify without embeddings"
            )
        if given and not built_embedder:
            raise ConfigurationError(
                f"{path} was built without an embedder; its labels have no embedding profile. "
                "Load it without embedder=..., or rebuild it with one"
            )
        _restore(classifier, data, same_embedder=given == built_embedder)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ConfigurationError):
            raise
        raise IndexFormatError(f"{target} is damaged ({exc!r}); rebuild the classifier") from exc
    return classifier


def _restore(classifier: GORAGClassifier, data: dict[str, Any], *, same_embedder: bool) -> None:
    """Give a classifier built with the stored parameters the stored state: round, labels,
    graph, corpus statistics, profiles, and (with the embedder it was built with) the label
    embeddings and the keyword linker."""
    classifier.round = int(data["round"])
    for info in data["labels"]:
        label = LabelInfo.model_validate(info)
        classifier.labels[label.name] = label
        if classifier.label_names and (key := name_keyword(label.name)):
            classifier._names.setdefault(key, label.name)
    classifier.graph.add_nodes_from((n, d) for n, d in data["nodes"])
    classifier.graph.add_edges_from((u, v, d) for u, v, d in data["edges"])
    classifier.stats = TermStats.from_json(data["corpus"])
    classifier.scorer.space.stats = classifier.stats
    embedded = same_embedder and bool((data.get("models") or {}).get("embedder"))
    for y, dense in data["dense"].items():
        if embedded:
            if dense["sum"] is not None:
                classifier.scorer.add(y, None, np.asarray(dense["sum"]))
            if dense["name"] is not None:
                classifier.scorer.set_name(y, None, np.asarray(dense["name"]))
    if same_embedder:
        classifier.linker.load_json(data.get("linker", {}))
    for key, seen in data.get("self_indexed", {}).items():  # absent from files written before
        classifier.self_indexed[key] = [(str(y), float(w), [str(n) for n in nodes]) for y, w, nodes in seen]
    for y, members in data["members"].items():
        classifier.members[y] = [_member(classifier, y, *entry) for entry in members]
    classifier._rebuild_lexical(upto=int(data.get("idf_texts", classifier.stats.n_texts)))


def _member(classifier: GORAGClassifier, label: str, position: Any, weight: Any, *labelled: Any) -> tuple[int, float, bool]:
    """A profile member as stored: ``[position, weight, labelled]``. Files written before
    members said whether they are labelled hold ``[position, weight]``: such a text is labelled
    unless it was indexed online under ``label``."""
    position = int(position)
    if labelled:
        return position, float(weight), bool(labelled[0])
    key = text_key(classifier.stats.texts[position].split())
    return position, float(weight), all(y != label for y, _, _ in classifier.self_indexed.get(key, ()))


def _version() -> str:
    try:
        return importlib.metadata.version("rhizome-gorag")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return "0"


__all__ = ["FORMAT", "FORMAT_VERSION", "STATE_FILE", "check_target", "load", "save"]
