"""rhizome.gorag — GORAG (Wang et al. 2025): a dynamic few-shot text classifier on a
keyword–label graph with TF-IDF edge weights, Steiner-tree candidate retrieval and online
indexing across rounds. Runs with a chat model or fully offline."""

from rhizome.gorag.classifier import (
    Classification,
    GORAGClassifier,
    LabelInfo,
    RoundReport,
    SteinerTreeInfo,
)
from rhizome.gorag.steiner import SteinerResult, SteinerSolver, steiner_tree
from rhizome.gorag.text import correlation_score, normalize_keyword, tokenize

__all__ = [
    "Classification",
    "GORAGClassifier",
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
