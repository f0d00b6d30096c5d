"""The settings of a GORAG classifier, each with its default and where the default comes from.

``GORAGClassifier(llm, embedder=..., config=GORAGConfig(...))``, or the same settings as
keywords (``GORAGClassifier(llm, max_candidates=8)``). A setting left ``None`` takes the preset
of the classifier's kind, chosen on the gorag-wos dev split: :data:`OFFLINE_DEFAULTS` without an
embedder, :data:`EMBEDDER_DEFAULTS` with one (docs/gorag.md, "Scoring").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict


def _number(value: Any) -> Any:
    """A real number: ``True`` and ``False`` are refused, not read as 1 and 0."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not a truth value")
    return value


Count = Annotated[int, Strict()]
"""A whole number (a string or a truth value is refused)."""
Number = Annotated[float, BeforeValidator(_number)]

OFFLINE_DEFAULTS: dict[str, Any] = {
    "max_candidates": 12,
    "candidate_coverage": 0.995,
    "lexical_weight": 1.0,
    "dense_weight": 0.25,
    "graph_weight": 0.5,
    "temperature": 0.05,
    "name_match_weight": 0.25,
    "nearest_example_weight": 1.0,
    "split_names": False,
    "lexical_background": True,
    "stem_words": True,
}
"""The scorer and cut defaults without an embedder (set on the gorag-wos dev split): the
name-word share sharpens the probabilities of texts that name their label, so the 0.995
coverage keeps one or two labels for them and the cap of 12 only bounds the unsure texts; the
candidates are cut with the lexical score standardised against each label's background, so
labels that gathered many online-indexed texts do not crowd the newer labels out of them. The
choice also weighs the text's nearest labelled example, and the lexical space reads word stems
(docs/gorag.md, "Scoring")."""

EMBEDDER_DEFAULTS: dict[str, Any] = {
    "max_candidates": 12,
    "candidate_coverage": 0.99,
    "lexical_weight": 1.5,
    "dense_weight": 0.5,
    "graph_weight": 0.25,
    "temperature": 0.08,
    "name_match_weight": 0.25,
    "nearest_example_weight": 0.0,
    "split_names": True,
    "lexical_background": False,
    "stem_words": False,
}
"""The defaults with an embedder (set on the gorag-wos dev split with all-MiniLM-L6-v2): the
name scored apart from the examples, the name-word share, and a temperature at which the
0.99 coverage keeps more labels when the scores are close. The nearest labelled example, which
helps without an embedder, did not change the dev accuracy with one, so it is off; word stems,
which help without one, cost dev accuracy and candidate recall at 1-shot with one, so they are
off too (the embeddings already read "depressive" near "depression")."""


class GORAGConfig(BaseModel):
    """Settings of a :class:`~rhizome.gorag.classifier.GORAGClassifier`."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_default=True)

    keyword_source: Literal["auto", "llm", "tfidf"] | Callable[[str], Any] = "auto"
    """``"llm"`` (the paper: the model extracts keywords), ``"tfidf"`` (offline: the text's top
    content n-grams by TF-IDF over the texts seen so far — the authors' code offers the same as
    ``--ke tfidf``), a function ``text -> list[str]`` (sync or async, e.g. YAKE), or
    ``"auto"``: ``"llm"`` when a model is given, else ``"tfidf"``."""

    label_choice: Literal["auto", "model", "score", "graph"] = "auto"
    """``"model"`` (the paper, Eq. 13: the model picks one of the scored candidates), ``"score"``
    (offline: the label of highest calibrated probability), ``"graph"`` (the earlier offline
    stand-in for the model: among the Steiner candidates, the largest sum of correlation scores
    of the query's terminals linked to it), or ``"auto"``: ``"model"`` when a model is given,
    else ``"score"``."""

    candidates: Literal["scored", "steiner"] = "scored"
    """``"scored"``: the Steiner-tree labels together with the nearest labels by the scorer,
    ranked by probability and cut at ``candidate_coverage`` probability mass or
    ``max_candidates`` labels. ``"steiner"``: the paper's candidates, the labels of the Steiner
    tree alone (no top-k, no threshold)."""

    max_candidates: Count | None = Field(None, ge=1)
    """At most this many candidates (``None``: 12, with or without an embedder)."""

    candidate_coverage: Number | None = Field(None, ge=0.0, le=1.0)
    """Fewer candidates when the first ones already hold this share of the probability
    (``None``: 0.995 without an embedder, 0.99 with one: the texts whose label is clear reach it
    within a label or two, so the cap only bounds the unsure texts)."""

    nearest_labels: Count | None = Field(None, ge=0)
    """The best-scored labels (at least the best one, the scorer's choice) that join the Steiner
    labels in the pool the candidates are cut from (``None``: as many as ``max_candidates``, so
    the cap alone bounds them)."""

    index_threshold: Number | None = Field(0.5, ge=0.0, le=1.0)
    """Online indexing takes a text only when the probability of its label is at least this;
    ``None`` indexes every classified text, as the paper does."""

    online_mode: Literal["deferred", "sequential", "revisit"] = "deferred"
    """``"deferred"``: texts taken for online indexing wait and join the graph and the profiles
    together at the next ``fit_round``, ``flush_online`` or ``persist``, so a round's
    classifications do not depend on the order of its texts. ``"sequential"``: each joins at
    once and may change the next one's result (the paper). ``"revisit"``: deferred, and a
    ``batch`` takes a second pass: once the texts it took for indexing have joined, the others
    are classified again with the batch's confident texts as pseudo-labelled examples, and their
    second result is returned (``revisited``; not indexed) (docs/gorag.md, "Revisiting a
    batch"). Single ``classify`` calls are deferred."""

    max_pending: Count | None = Field(5000, ge=1)
    """With deferred indexing, the waiting texts also join once this many wait (more than a WOS
    round's texts; ``None``: no bound), so a classifier only ever asked one text at a time — a
    LangChain Runnable, a LangGraph node — still learns from them."""

    online_weight: Number = Field(0.5, ge=0.0)
    """The weight of an online-indexed text in its label's profiles (a labelled text weighs 1)."""

    lexical_weight: Number | None = Field(None, ge=0.0)
    """The scorer's weight of the TF-IDF similarity (``None``: 1 without an embedder, 1.5 with one)."""

    dense_weight: Number | None = Field(None, ge=0.0)
    """The scorer's weight of the embedding similarity (``None``: 0.25 / 0.5)."""

    graph_weight: Number | None = Field(None, ge=0.0)
    """The scorer's weight of the keyword graph's evidence (``None``: 0.5 / 0.25)."""

    temperature: Number | None = Field(None, gt=0.0)
    """The softmax temperature of the label probabilities (``None``: 0.05 / 0.08)."""

    name_weight: Number = Field(1.0, ge=0.0)
    """How much a label's name (and description) counts: with ``split_names``, its cosine's
    weight against the examples'; else as how many texts."""

    name_match_weight: Number | None = Field(None, ge=0.0)
    """The weight of the label's whole name found in the text (for the candidates: the share of
    its words) (``None``: 0.25)."""

    nearest_example_weight: Number | None = Field(None, ge=0.0)
    """The weight, in the label's probability (not in the candidate cut), of the text's cosine
    with the label's nearest labelled text (``None``: 1 without an embedder, 0 with one)."""

    split_names: bool | None = None
    """Score a label's name apart from its examples (the cosine with the examples' centroid plus
    ``name_weight`` times the cosine with the name) instead of folding the name into the profile
    as one more text (``None``: on with an embedder, off without)."""

    lexical_background: bool | None = None
    """Cut the candidates with each label's lexical score standardised against its background:
    the mean and standard deviation of its score over the stored texts of the other labels (a
    label whose profile gathered many online-indexed texts otherwise outranks a new label with
    one example for texts of neither). Only the candidates change. ``None``: on without an
    embedder, off with one."""

    stem_words: bool | None = None
    """Read the lexical space in Snowball English word stems, so "depressive" in a text meets
    "depression" in an example; keywords, the graph and the name match read the words as
    written (``None``: on without an embedder, off with one)."""

    link_threshold: Number = Field(0.8, ge=-1.0, le=1.0)
    """With an embedder, a query keyword the graph lacks is linked to the most similar keyword
    from the labelled texts when the cosine is at least this."""

    link_keywords: Count = Field(8, ge=0)
    """With an embedder, at most this many query keywords are linked so."""

    steiner: Literal["mehlhorn", "mst_prune"] = "mehlhorn"
    """``"mehlhorn"`` (the 2-approximation the paper's text cites) or ``"mst_prune"`` (Algorithm
    2 as printed: the subtree of the global MST that spans the terminals)."""

    label_edge_mode: Literal["printed", "mean"] = "printed"
    """Weight of the edges between a round's new labels and the older ones (Eq. 8):
    ``"printed"`` = (m(y_n) + m(y_o)) / 4 as printed, ``"mean"`` = / 2, the "weighted average"
    of the prose; m(y) is the mean weight of y's keyword edges (1 if none)."""

    label_names: bool = True
    """Labels are meaningful names (WOS: yes; Reuters: numbers). When true, a query keyword equal
    to a label's name maps to that label node (docs/gorag.md, "node ids") and labels get descriptions. A name
    without a letter (``2``, ``1990``) is no name of its label."""

    describe_labels: bool = True
    """With a model and label names, have the model describe each new label from its name and up
    to ``description_examples`` examples (Eq. 12) and index the description's keywords as a
    pseudo-document of the label."""

    name_keywords: bool = True
    """Without a model description, use the label name itself as the label's description (its
    keywords join the graph like a description's): our offline stand-in."""

    online: bool = True
    """Online indexing (Eq. 14): after a query is classified, its keywords that the graph lacks
    are added under the predicted label and the query joins the IDF corpus (the paper: on).
    Each call may override it."""

    max_keywords: Count = Field(20, ge=1)
    """Keywords kept per text (at most 20; docs/gorag.md, "keyword format")."""

    max_ngram: Count = Field(3, ge=1)
    """Longest offline keyword, in words (the authors' TF-IDF extractor uses 1–3-grams)."""

    epsilon: Number = Field(1e-3, gt=0.0, lt=1.0)
    """CS is clipped to ``[0, 1 - epsilon]`` so weights stay in ``[epsilon, 1]`` (docs/gorag.md, "CS out of range")."""

    max_text_tokens: Count = Field(1000, ge=1)
    """The query text's budget in the classification prompt (our choice; the paper gives none)."""

    example_tokens: Count = Field(100, ge=1)
    """Each example's budget in the description prompt."""

    description_examples: Count = Field(2, ge=0)
    """How many examples the description prompt shows."""

    constrain_labels: bool = True
    """Send the known labels as a JSON-schema ``enum`` with the classification request, so a
    server with constrained decoding (Ollama) can only answer a known label. Answers are checked
    either way."""

    def preset(self, name: str, with_embedder: bool) -> Any:
        """The setting ``name``, or its preset for a classifier with or without an embedder
        when it is ``None``."""
        value = getattr(self, name)
        return (EMBEDDER_DEFAULTS if with_embedder else OFFLINE_DEFAULTS)[name] if value is None else value


__all__ = ["EMBEDDER_DEFAULTS", "OFFLINE_DEFAULTS", "GORAGConfig"]
