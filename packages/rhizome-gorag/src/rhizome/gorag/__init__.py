"""rhizome.gorag — GORAG (Wang et al. 2025): a dynamic few-shot text classifier on a
keyword–label graph with TF-IDF edge weights, Steiner-tree candidate retrieval and online
indexing across rounds. Runs with a chat model or fully offline.

The names below are imported on first use (PEP 562), so that loading a submodule such as
``rhizome.gorag.cli`` — which ``rhizome --help`` does — does not load scikit-learn, scipy and
the classifier. ``from rhizome.gorag import GORAGClassifier`` works as always.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rhizome.core.lazy import lazy_exports

if TYPE_CHECKING:
    from rhizome.gorag.classifier import GORAGClassifier
    from rhizome.gorag.config import GORAGConfig
    from rhizome.gorag.results import (
        Classification,
        ClassificationError,
        LabelInfo,
        RoundReport,
        SteinerTreeInfo,
    )
    from rhizome.gorag.steiner import SteinerResult, SteinerSolver, steiner_tree
    from rhizome.gorag.text import correlation_score, normalize_keyword, tokenize

_EXPORTS = {
    "Classification": "rhizome.gorag.results",
    "ClassificationError": "rhizome.gorag.results",
    "GORAGClassifier": "rhizome.gorag.classifier",
    "GORAGConfig": "rhizome.gorag.config",
    "LabelInfo": "rhizome.gorag.results",
    "RoundReport": "rhizome.gorag.results",
    "SteinerTreeInfo": "rhizome.gorag.results",
    "SteinerResult": "rhizome.gorag.steiner",
    "SteinerSolver": "rhizome.gorag.steiner",
    "steiner_tree": "rhizome.gorag.steiner",
    "correlation_score": "rhizome.gorag.text",
    "normalize_keyword": "rhizome.gorag.text",
    "tokenize": "rhizome.gorag.text",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

__all__ = [
    "Classification",
    "ClassificationError",
    "GORAGClassifier",
    "GORAGConfig",
    "LabelInfo",
    "RoundReport",
    "SteinerResult",
    "SteinerSolver",
    "SteinerTreeInfo",
    "correlation_score",
    "normalize_keyword",
    "steiner_tree",
    "tokenize",
]
