"""The GORAG classifier: a keyword–label graph grown round by round, Steiner-tree candidate
retrieval, and a label chosen by a model or, offline, by the graph itself.

Paper: Wang, Li, Teng, Chen, "GORAG: Graph-based Online RAG for Dynamic Few-shot Text
Classification" (2025). Every place where the paper is silent is resolved as the project's
spec recommends; docs/gorag.md lists each choice.

This module is the public class; it composes the package's parts and holds the state and the
lock. The parts: ``keywords`` (what a text yields: keywords, label descriptions), ``graph`` (the
keyword–label graph and its weights), ``candidates`` (the Steiner tree and the candidate
labels), ``choice`` (one label: the model's answer or the graph's choice), ``persistence``
(``classifier.json``) and ``results`` (what the classifier reports).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel

from rhizome.core.aio import gather_limited, run_sync
from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.index import resolve_llm
from rhizome.gorag import candidates as _candidates
from rhizome.gorag import choice as _choice
from rhizome.gorag import graph as _graph
from rhizome.gorag import keywords as _keywords
from rhizome.gorag import persistence as _persistence
from rhizome.gorag.graph import LABEL_EDGE_MODES, label_node
from rhizome.gorag.keywords import KeywordFunction
from rhizome.gorag.results import Classification, LabelInfo, RoundReport, SteinerTreeInfo
from rhizome.gorag.steiner import STEINER_METHODS, SteinerSolver
from rhizome.gorag.text import TermStats, display_name, normalize_keyword, tokenize


class GORAGClassifier:
    """A dynamic few-shot text classifier (GORAG).

    Call :meth:`fit_round` once per round with that round's labelled texts (their labels are
    the round's new labels); :meth:`classify` returns a label among all labels seen so far.

    Parameters
    ----------
    llm:
        A chat model (spec string such as ``"ollama:qwen2.5:7b-instruct"``, one of Rhizome's
        models, or a LangChain / LlamaIndex chat model). ``None`` runs fully offline.
    keyword_source:
        ``"llm"`` (the paper: the model extracts keywords), ``"tfidf"`` (offline: the text's
        top content n-grams by TF-IDF over the texts seen so far — the authors' code offers the
        same as ``--ke tfidf``), a function ``text -> list[str]`` (sync or async, e.g. YAKE),
        or ``"auto"``: ``"llm"`` when a model is given, else ``"tfidf"``.
    label_choice:
        ``"model"`` (the paper, Eq. 13: the model picks one candidate), ``"graph"`` (offline:
        the candidate with the least total shortest-path cost from the query's keywords), or
        ``"auto"``: ``"model"`` when a model is given.
    steiner:
        ``"mehlhorn"`` (default; the 2-approximation the paper's text cites) or ``"mst_prune"``
        (Algorithm 2 as printed: the subtree of the global MST that spans the terminals).
    label_edge_mode:
        Weight of the edges between a round's new labels and the older ones (Eq. 8):
        ``"printed"`` = (m(y_n) + m(y_o)) / 4 as printed (default), ``"mean"`` = / 2, the
        "weighted average" of the prose. m(y) is the mean weight of y's keyword edges (1 if none).
    label_names:
        Labels are meaningful names (WOS: yes; Reuters: numbers). When true, a query keyword
        equal to a label's name maps to that label node (spec §9 #2) and labels get descriptions.
    describe_labels:
        With a model and label names, have the model describe each new label from its name and
        up to ``description_examples`` examples (Eq. 12; spec §9 #7) and index the description's
        keywords as a pseudo-document of the label (spec §9 #6).
    name_keywords:
        Without a model description, use the label name itself as the label's description
        (its keywords join the graph like a description's). Our offline stand-in.
    online:
        Online indexing (Eq. 14): after a query is classified, its keywords that the graph
        lacks are added under the predicted label and the query joins the IDF corpus. Paper
        default: on. Each call may override it.
    max_keywords:
        Keywords kept per text (spec §9 #1: at most 20).
    max_ngram:
        Longest offline keyword, in words (the authors' TF-IDF extractor uses 1–3-grams).
    epsilon:
        CS is clipped to ``[0, 1 - epsilon]`` so weights stay in ``[epsilon, 1]`` (spec §9 #4).
    max_text_tokens, example_tokens, description_examples:
        Prompt budgets (our choice; the paper gives none): the query text in the
        classification prompt, each example in the description prompt, and how many examples.
    constrain_labels:
        Send the known labels as a JSON-schema ``enum`` with the classification request, so a
        server with constrained decoding (Ollama) can only answer a known label. Answers are
        checked either way.
    """

    def __init__(
        self,
        llm: Any = None,
        *,
        keyword_source: Literal["auto", "llm", "tfidf"] | KeywordFunction = "auto",
        label_choice: Literal["auto", "model", "graph"] = "auto",
        steiner: Literal["mehlhorn", "mst_prune"] = "mehlhorn",
        label_edge_mode: Literal["printed", "mean"] = "printed",
        label_names: bool = True,
        describe_labels: bool = True,
        name_keywords: bool = True,
        online: bool = True,
        max_keywords: int = 20,
        max_ngram: int = 3,
        epsilon: float = 1e-3,
        max_text_tokens: int = 1000,
        example_tokens: int = 100,
        description_examples: int = 2,
        constrain_labels: bool = True,
    ) -> None:
        self.llm = resolve_llm(llm)
        if callable(keyword_source):
            self._keyword_function: KeywordFunction | None = keyword_source
            self.keyword_source = "function"
        elif keyword_source in ("auto", "llm", "tfidf"):
            self._keyword_function = None
            self.keyword_source = (
                ("llm" if self.llm is not None else "tfidf") if keyword_source == "auto" else keyword_source
            )
        else:
            raise ConfigurationError(
                f"keyword_source must be 'auto', 'llm', 'tfidf' or a function, got {keyword_source!r}"
            )
        if label_choice not in ("auto", "model", "graph"):
            raise ConfigurationError(f"label_choice must be 'auto', 'model' or 'graph', got {label_choice!r}")
        self.label_choice = ("model" if self.llm is not None else "graph") if label_choice == "auto" else label_choice
        if self.llm is None and (self.keyword_source == "llm" or self.label_choice == "model"):
            raise ConfigurationError(
                "keyword_source='llm' and label_choice='model' need a chat model: pass llm=... "
                "(e.g. 'ollama:qwen2.5:7b-instruct'), or use 'tfidf' / 'graph' to run offline"
            )
        if steiner not in STEINER_METHODS:
            raise ConfigurationError(f"steiner must be one of {', '.join(STEINER_METHODS)}, got {steiner!r}")
        if label_edge_mode not in LABEL_EDGE_MODES:
            raise ConfigurationError(f"label_edge_mode must be 'printed' or 'mean', got {label_edge_mode!r}")
        for name, value, low in (
            ("max_keywords", max_keywords, 1),
            ("max_ngram", max_ngram, 1),
            ("max_text_tokens", max_text_tokens, 1),
            ("example_tokens", example_tokens, 1),
            ("description_examples", description_examples, 0),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ConfigurationError(f"{name} must be an integer of at least {low}, got {value!r}")
        if not 0 < epsilon < 1:
            raise ConfigurationError(f"epsilon must be between 0 and 1, got {epsilon!r}")
        self.steiner = steiner
        self.label_edge_mode = label_edge_mode
        self.label_names = label_names
        self.describe_labels = describe_labels
        self.name_keywords = name_keywords
        self.online = online
        self.max_keywords = max_keywords
        self.max_ngram = max_ngram
        self.epsilon = epsilon
        self.max_text_tokens = max_text_tokens
        self.example_tokens = example_tokens
        self.description_examples = description_examples
        self.constrain_labels = constrain_labels

        self.graph = nx.Graph()
        self.labels: dict[str, LabelInfo] = {}
        self.round = 0
        self.stats = TermStats(max_ngram)
        self._names: dict[str, str] = {}
        self._lock = threading.RLock()
        self._solver: SteinerSolver | None = None
        self._choice_schema: tuple[tuple[str, ...], type[BaseModel]] | None = None

    # -- parameters ------------------------------------------------------------------------------
    def parameters(self) -> dict[str, Any]:
        """Constructor parameters (as resolved), for persistence and reports."""
        return {
            "keyword_source": self.keyword_source,
            "label_choice": self.label_choice,
            "steiner": self.steiner,
            "label_edge_mode": self.label_edge_mode,
            "label_names": self.label_names,
            "describe_labels": self.describe_labels,
            "name_keywords": self.name_keywords,
            "online": self.online,
            "max_keywords": self.max_keywords,
            "max_ngram": self.max_ngram,
            "epsilon": self.epsilon,
            "max_text_tokens": self.max_text_tokens,
            "example_tokens": self.example_tokens,
            "description_examples": self.description_examples,
            "constrain_labels": self.constrain_labels,
        }

    def __repr__(self) -> str:
        return (
            f"GORAGClassifier(labels={len(self.labels)}, round={self.round}, nodes={self.graph.number_of_nodes()}, "
            f"edges={self.graph.number_of_edges()}, llm={getattr(self.llm, 'name', None)!r})"
        )

    def stats_summary(self) -> dict[str, int]:
        """Graph and corpus sizes."""
        with self._lock:
            keywords = sum(1 for _, kind in self.graph.nodes(data="kind") if kind == "keyword")
            return {
                "round": self.round,
                "labels": len(self.labels),
                "keywords": keywords,
                "nodes": self.graph.number_of_nodes(),
                "edges": self.graph.number_of_edges(),
                "texts": self.stats.n_texts,
            }

    # -- keywords --------------------------------------------------------------------------------
    def _tfidf_keywords(self, tokens: Sequence[str], *, virtual: bool) -> list[str]:
        return _keywords.tfidf_keywords(
            self.stats, tokens, max_ngram=self.max_ngram, max_keywords=self.max_keywords, virtual=virtual
        )

    async def _model_keywords(self, text: str) -> list[str]:
        return await _keywords.model_keywords(
            text,
            function=self._keyword_function,
            llm=self.llm,
            max_keywords=self.max_keywords,
            max_text_tokens=self.max_text_tokens,
        )

    @property
    def _model_extracts(self) -> bool:
        return self.keyword_source in ("llm", "function")

    async def akeywords(self, text: str) -> list[str]:
        """The keywords GORAG would extract from ``text`` now (normalised)."""
        _check_text(text)
        if self._model_extracts:
            return await self._model_keywords(text)
        with self._lock:
            return self._tfidf_keywords(tokenize(text), virtual=True)

    def keywords(self, text: str) -> list[str]:
        return run_sync(self.akeywords(text))

    # -- building rounds -------------------------------------------------------------------------
    async def afit_round(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        *,
        new_labels: Sequence[str] = (),
        descriptions: Mapping[str, str] | None = None,
    ) -> RoundReport:
        """Add one round: its labelled ``texts`` (with ``labels``, one per text) and its new
        labels (those of ``labels`` plus ``new_labels``, which may have no text — zero-shot).

        A label already known may get more texts; only labels new in this round are connected
        to the older ones by label–label edges (Eqs. 7–8). ``descriptions`` overrides the
        description of any new label (else the model writes one, or offline the name is used).
        """
        texts, labels = list(texts), list(labels)
        if len(texts) != len(labels):
            raise InvalidInputError(f"got {len(texts)} texts and {len(labels)} labels; give one label per text")
        for text in texts:
            _check_text(text)
        round_labels = list(dict.fromkeys([*labels, *new_labels]))
        for label in round_labels:
            _check_label(label)
        if not round_labels:
            raise InvalidInputError("a round needs at least one label: pass labelled texts or new_labels")
        descriptions = dict(descriptions or {})
        unknown = set(descriptions) - set(round_labels) - set(self.labels)
        if unknown:
            raise InvalidInputError(f"descriptions given for labels that are not in this round: {sorted(unknown)}")
        new = [y for y in round_labels if y not in self.labels]

        # model work first, outside the lock: descriptions, then keywords of texts and descriptions
        to_describe = [y for y in new if y not in descriptions]
        if self.llm is not None and self.describe_labels and self.label_names and to_describe:
            examples = {y: [t for t, lab in zip(texts, labels) if lab == y][: self.description_examples] for y in to_describe}
            written = await asyncio.gather(
                *(
                    _keywords.describe_label(self.llm, y, examples[y], example_tokens=self.example_tokens)
                    for y in to_describe
                )
            )
            descriptions.update(zip(to_describe, written))
        elif self.label_names and self.name_keywords:
            for y in to_describe:
                descriptions[y] = display_name(y)
        desc_items = [(descriptions[y], y) for y in new if descriptions.get(y)]
        documents = [*zip(texts, labels), *desc_items]
        model_keywords: list[list[str]] | None = None
        if self._model_extracts:
            model_keywords = list(await asyncio.gather(*(self._model_keywords(t) for t, _ in documents)))

        with self._lock:
            self.round += 1
            old = list(self.labels)
            for y in new:
                self.labels[y] = LabelInfo(name=y, round=self.round, description=descriptions.get(y))
                self.graph.add_node(label_node(y), kind="label", round=self.round, name=y)
                if self.label_names:
                    self._names.setdefault(normalize_keyword(y), y)
            for y in descriptions:
                if y in self.labels and y not in new:
                    self.labels[y].description = descriptions[y]
            for y in labels:
                self.labels[y].n_texts += 1
            tokens = [tokenize(t) for t, _ in documents]
            positions = [self.stats.add_text(tok) for tok in tokens]
            if model_keywords is None:
                model_keywords = [self._tfidf_keywords(tok, virtual=False) for tok in tokens]
            for position, keywords in zip(positions, model_keywords):
                self.stats.add_yielded(position, keywords)
            occurrences = 0
            empty: list[int] = []
            edges_before = self.graph.number_of_edges()

            def is_label_name(v: str) -> bool:
                # a label's name: the label node itself stands for it
                return self.label_names and v in self._names

            for i, ((_, label), tok, position, keywords) in enumerate(zip(documents, tokens, positions, model_keywords)):
                if not keywords and i < len(texts):
                    empty.append(i)
                linked = _graph.add_text_keywords(
                    self.graph,
                    self.stats,
                    position=position,
                    length=len(tok),
                    keywords=keywords,
                    label=label,
                    skip=is_label_name,
                    epsilon=self.epsilon,
                    round=self.round,
                )
                occurrences += len(linked)
            keyword_edges = self.graph.number_of_edges() - edges_before
            label_edges = (
                _graph.add_label_edges(self.graph, new, old, mode=self.label_edge_mode, epsilon=self.epsilon)
                if old
                else 0
            )
            self._solver = None
            self._choice_schema = None
            return RoundReport(
                round=self.round,
                new_labels=new,
                texts=len(texts),
                keywords=occurrences,
                keyword_edges=keyword_edges,
                label_edges=label_edges,
                empty_extractions=empty,
                nodes=self.graph.number_of_nodes(),
                edges=self.graph.number_of_edges(),
            )

    def fit_round(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        *,
        new_labels: Sequence[str] = (),
        descriptions: Mapping[str, str] | None = None,
    ) -> RoundReport:
        return run_sync(self.afit_round(texts, labels, new_labels=new_labels, descriptions=descriptions))

    # -- retrieval -------------------------------------------------------------------------------
    def _solver_now(self) -> SteinerSolver:
        if self._solver is None:
            self._solver = SteinerSolver(
                self.graph, method=self.steiner, keep=[label_node(y) for y in self.labels]
            )
        return self._solver

    def _terminal(self, v: str) -> str | None:
        return _graph.terminal(self.graph, v, self._names if self.label_names else None)

    def _retrieve(self, keywords: list[str]) -> dict[str, Any]:
        """Terminals, Steiner tree, candidate labels and their graph costs (caller holds the lock)."""
        return _candidates.retrieve(keywords, labels=list(self.labels), terminal=self._terminal, solver=self._solver_now)

    async def aretrieve_candidates(self, text: str) -> dict[str, Any]:
        """Keywords, terminals, Steiner tree and candidate labels of ``text``, without choosing."""
        _check_text(text)
        self._check_ready()
        keywords = await self.akeywords(text)
        with self._lock:
            retrieved = self._retrieve(keywords)
        retrieved["keywords"] = keywords
        return retrieved

    # -- classification --------------------------------------------------------------------------
    def _check_ready(self) -> None:
        if not self.labels:
            raise ConfigurationError("the classifier has no labels yet; call fit_round(texts, labels) first")

    def _schema(self) -> type[BaseModel]:
        """The answer schema of the classification request, rebuilt when the labels change."""
        labels = tuple(self.labels)
        if self._choice_schema is None or self._choice_schema[0] != labels:
            self._choice_schema = (labels, _choice.choice_schema(labels, constrain=self.constrain_labels))
        return self._choice_schema[1]

    def match_label(self, answer: str) -> str | None:
        """The known label a model answer names (case, spacing, quotes and ``_``/``-`` vs space
        ignored), or ``None``."""
        return _choice.match_label(self.labels, answer)

    async def _aclassify(self, text: str, online: bool, keywords: list[str] | None = None) -> Classification:
        if keywords is None and self._model_extracts:
            keywords = await self._model_keywords(text)
        tokens = tokenize(text)
        with self._lock:
            if keywords is None:
                keywords = self._tfidf_keywords(tokens, virtual=True)
            retrieved = self._retrieve(keywords)
            round_ = self.round
            graph_label = _choice.graph_choice(self.graph, retrieved, tokens, list(self.labels))
        candidates: list[str] = retrieved["candidates"]
        label, chosen_by = graph_label, "graph"
        hallucinated, answer, strict = False, None, None
        if self.label_choice == "model":
            matched, answer = await _choice.model_choice(
                self.llm,
                self.labels,
                text,
                keywords,
                candidates,
                schema=self._schema(),
                max_text_tokens=self.max_text_tokens,
            )
            strict = answer in candidates
            if matched is None:
                hallucinated = True
            else:
                label, chosen_by = matched, "model"
        indexed: list[str] = []
        with self._lock:
            if online and not hallucinated:
                indexed = self._index_online(tokens, keywords, label)
            evidence = _graph.evidence(self.graph, retrieved["terminals"], label)
        tree = SteinerTreeInfo(
            terminals=retrieved["terminals"],
            edges=[(str(u), str(v), float(w)) for u, v, w in retrieved["edges"]],
            cost=float(sum(w for _, _, w in retrieved["edges"])),
            method=self.steiner,
        )
        return Classification(
            label=label,
            candidates=candidates,
            keywords=keywords,
            evidence=evidence,
            tree=tree,
            new_keywords=retrieved["new_keywords"],
            indexed=indexed,
            costs=retrieved["costs"],
            unreachable=retrieved["unreachable"],
            chosen_by=chosen_by,
            fallback=retrieved["fallback"],
            hallucinated=hallucinated,
            model_answer=answer,
            strict_match=strict,
            round=round_,
        )

    def _index_online(self, tokens: list[str], keywords: list[str], label: str) -> list[str]:
        """Eq. 14: the query joins ``T``; each of its keywords the graph lacks becomes a node
        linked to the predicted label, weighted by Eq. 5 with the query as a text of that label.
        Keywords already in the graph get no new edge (caller holds the lock)."""
        position = self.stats.add_text(tokens)
        self.stats.add_yielded(position, keywords)
        return _graph.add_text_keywords(
            self.graph,
            self.stats,
            position=position,
            length=len(tokens),
            keywords=keywords,
            label=label,
            skip=lambda v: self._terminal(v) is not None,
            epsilon=self.epsilon,
            round=self.round,
        )

    async def aclassify(self, text: str, *, online: bool | None = None) -> Classification:
        """Classify ``text`` among every label seen so far; with online indexing (default: the
        constructor's ``online``), index its unseen keywords under the predicted label."""
        _check_text(text)
        self._check_ready()
        return await self._aclassify(text, self.online if online is None else online)

    def classify(self, text: str, *, online: bool | None = None) -> Classification:
        return run_sync(self.aclassify(text, online=online))

    async def abatch(
        self, texts: Sequence[str], *, online: bool | None = None, max_concurrency: int = 4
    ) -> list[Classification]:
        """Classify many texts, results in order. With online indexing, texts are classified one
        after another in the given order (spec §9 #14: sequential), though model keyword
        extraction runs ahead concurrently; without it, whole classifications run concurrently."""
        texts = list(texts)
        for text in texts:
            _check_text(text)
        self._check_ready()
        online = self.online if online is None else online
        if not online:
            return await gather_limited([lambda t=t: self._aclassify(t, False) for t in texts], max_concurrency)
        keywords: list[list[str] | None] = [None] * len(texts)
        if self._model_extracts:
            keywords = list(
                await gather_limited([lambda t=t: self._model_keywords(t) for t in texts], max_concurrency)
            )
        return [await self._aclassify(t, True, k) for t, k in zip(texts, keywords)]

    def batch(self, texts: Sequence[str], *, online: bool | None = None, max_concurrency: int = 4) -> list[Classification]:
        return run_sync(self.abatch(texts, online=online, max_concurrency=max_concurrency))

    # -- persistence -----------------------------------------------------------------------------
    def persist(self, path: str | Path) -> Path:
        """Write the classifier to the directory ``path`` as one JSON file (``classifier.json``),
        atomically: a crash leaves the previous version intact. Models are not stored; pass them
        again to :meth:`load`."""
        return _persistence.save(self, path)

    @classmethod
    def load(
        cls,
        path: str | Path,
        llm: Any = None,
        *,
        keyword_source: Literal["llm", "tfidf"] | KeywordFunction | None = None,
        **overrides: Any,
    ) -> GORAGClassifier:
        """Open a classifier written by :meth:`persist`. Pass the chat model again when it was
        built with one; ``keyword_source`` and other parameters may be overridden (e.g.
        ``online=False``)."""
        return _persistence.load(cls, path, llm, keyword_source=keyword_source, **overrides)


def _check_text(text: Any) -> None:
    if not isinstance(text, str):
        raise InvalidInputError(f"texts must be strings, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError("cannot classify or index an empty text; drop empty lines first")


def _check_label(label: Any) -> None:
    if not isinstance(label, str) or not label.strip():
        raise InvalidInputError(f"labels must be non-empty strings, got {label!r}")


__all__ = [
    "Classification",
    "GORAGClassifier",
    "LabelInfo",
    "RoundReport",
    "SteinerTreeInfo",
]
