"""What the GORAG classifier knows and reports: a label's record, the retrieved Steiner tree,
one classification and one round's report. Plain pydantic models, JSON-ready."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class LabelInfo(BaseModel):
    """One label: the round that added it, its description (model-written, given, or the label
    name offline) and how many labelled texts it came with."""

    name: str
    round: int
    description: str | None = None
    n_texts: int = 0
    name_text: str | None = None
    """What the scorer reads as the label's name: the name and its description."""


class SteinerTreeInfo(BaseModel):
    """The retrieved subgraph: the query's terminals (``kw:...`` / ``label:...`` node ids), the
    tree's edges ``(u, v, weight)`` and their total weight."""

    terminals: list[str] = Field(default_factory=list)
    edges: list[tuple[str, str, float]] = Field(default_factory=list)
    cost: float = 0.0
    method: str = "mehlhorn"


class Classification(BaseModel):
    """What :meth:`GORAGClassifier.classify` returns. ``label`` is always a known label."""

    label: str
    candidates: list[str]
    """The candidate labels, most probable first (``candidates="steiner"``: the labels of the
    Steiner tree or the fallback's, best graph cost first)."""
    scores: dict[str, float] = Field(default_factory=dict)
    """Per candidate: the scorer's calibrated probability."""
    confidence: float = 0.0
    """The scorer's probability of ``label``; online indexing takes the text only when it
    reaches ``index_threshold``."""
    keywords: list[str]
    """The query's keywords, normalised."""
    evidence: list[str]
    """Query keywords of the graph that are linked to ``label`` by an edge, strongest first."""
    linked: list[str] = Field(default_factory=list)
    """Graph keywords the text was linked to beyond its own keywords (by vocabulary, parts or
    embedding similarity)."""
    tree: SteinerTreeInfo
    new_keywords: list[str] = Field(default_factory=list)
    """Query keywords the graph did not have (``V_notexist``)."""
    indexed: list[str] = Field(default_factory=list)
    """Keywords added to the graph under ``label`` by online indexing."""
    online_indexed: bool = False
    """Whether online indexing took the text (graph, corpus and the label's profiles; with
    ``online_mode="deferred"`` or ``"revisit"`` at the next ``flush_online``/``fit_round`` —
    with ``"revisit"`` a batch flushes its own — and ``indexed`` stays empty)."""
    revisited: bool = False
    """With ``online_mode="revisit"``: the text fell below the indexing threshold, and this is
    its second classification in the batch, after the batch's confident texts joined."""
    costs: dict[str, float] = Field(default_factory=dict)
    """Per candidate: total shortest-path cost from the terminals that reach it."""
    unreachable: dict[str, int] = Field(default_factory=dict)
    """Per candidate: terminals with no path to it (another component)."""
    chosen_by: Literal["model", "score", "graph"] = "score"
    fallback: Literal["no_terminals", "nearest_label"] | None = None
    hallucinated: bool = False
    """The model answered something that is not a known label (then ``label`` is the best
    candidate and nothing is indexed)."""
    model_answer: str | None = None
    strict_match: bool | None = None
    """Whether the model's answer was, character for character, one of the candidates."""
    valid_answer: bool | None = None
    """Whether the model's answer named one of the candidates (with ``candidates="scored"``)
    or a known label (``"steiner"``); when not, ``label`` is the best candidate."""
    round: int = 0


class ClassificationError(BaseModel):
    """In a batch, the place of a text that could not be classified (empty, not a string,
    not UTF-8): its position and what to do about it. The other texts are classified."""

    index: int
    error: str
    label: None = None


class RoundReport(BaseModel):
    """What :meth:`GORAGClassifier.fit_round` did."""

    round: int
    new_labels: list[str]
    texts: int
    keywords: int
    """Keyword occurrences turned into edges."""
    keyword_edges: int
    label_edges: int
    empty_extractions: list[int] = Field(default_factory=list)
    """Positions of texts that yielded no keyword (they add nothing to the graph)."""
    nodes: int
    edges: int


__all__ = ["Classification", "ClassificationError", "LabelInfo", "RoundReport", "SteinerTreeInfo"]
