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
import copy
import functools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel

from rhizome.core.aio import gather_limited, run_sync
from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.core.index.base import resolve_embedder, resolve_llm
from rhizome.core.index.config import build_config
from rhizome.core.store.cache import ModelCache, with_cache
from rhizome.gorag import candidates as _candidates
from rhizome.gorag import choice as _choice
from rhizome.gorag import graph as _graph
from rhizome.gorag import keywords as _keywords
from rhizome.gorag import linking as _linking
from rhizome.gorag import persistence as _persistence
from rhizome.gorag import scoring as _scoring
from rhizome.gorag.config import GORAGConfig
from rhizome.gorag.graph import label_node
from rhizome.gorag.keywords import KeywordFunction
from rhizome.gorag.results import (
    Classification,
    ClassificationError,
    LabelInfo,
    RoundReport,
    SteinerTreeInfo,
)
from rhizome.gorag.steiner import SteinerSolver
from rhizome.gorag.text import (
    TermStats,
    display_name,
    is_content_token,
    name_keyword,
    text_key,
    tokenize,
)


@dataclass
class _Round:
    """What a round adds, with every model and embedder answer it needs (see
    :meth:`GORAGClassifier.afit_round`)."""

    texts: list[str]
    labels: list[str]
    new: list[str]
    descriptions: dict[str, str]
    redescribed: list[str]
    documents: list[tuple[str, str]]
    """The labelled texts, then the descriptions of the labels described in this round."""
    tokens: list[list[str]]
    doc_keywords: list[list[str]]
    name_texts: dict[str, str]
    names: set[str]
    """The name keys of the labels, old and new."""
    targets: list[str] = field(default_factory=list)
    """Keywords the linker does not know yet (link targets)."""
    text_vectors: Any = None
    name_vectors: Any = None
    target_vectors: Any = None

    def is_label_name(self, keyword: str, label_names: bool) -> bool:
        """A label's name: the label node itself stands for it."""
        return label_names and keyword in self.names


class GORAGClassifier:
    """A dynamic few-shot text classifier (GORAG).

    Call :meth:`fit_round` once per round with that round's labelled texts (their labels are
    the round's new labels); :meth:`classify` returns a label among all labels seen so far.

    ``llm`` is a chat model (spec string such as ``"ollama:qwen2.5:7b-instruct"``, one of
    Rhizome's models, or a LangChain / LlamaIndex chat model); ``None`` runs fully offline.
    ``embedder`` is an embedder (spec string such as ``"sentence-transformers:all-MiniLM-L6-v2"``,
    one of Rhizome's embedders, or a LangChain / LlamaIndex embedding model), or ``None``: with
    one, the scorer adds text–label embedding similarity and query keywords the graph lacks are
    linked to its keywords by embedding similarity. Every other setting is a field of
    :class:`~rhizome.gorag.config.GORAGConfig`, given as ``config=`` or as keywords.
    """

    def __init__(self, llm: Any = None, *, embedder: Any = None, config: GORAGConfig | Mapping[str, Any] | None = None, **settings: Any) -> None:
        self.llm = resolve_llm(llm)
        self.embedder = resolve_embedder(embedder) if embedder is not None else None
        c = build_config(GORAGConfig, dict(config) if isinstance(config, Mapping) else config, settings)
        with_embedder = self.embedder is not None

        def preset(name: str) -> Any:
            return c.preset(name, with_embedder)

        if callable(c.keyword_source):
            self._keyword_function: KeywordFunction | None = c.keyword_source
            self.keyword_source = "function"
        else:
            self._keyword_function = None
            self.keyword_source = ("llm" if self.llm is not None else "tfidf") if c.keyword_source == "auto" else c.keyword_source
        self.label_choice = ("model" if self.llm is not None else "score") if c.label_choice == "auto" else c.label_choice
        self._label_choice_asked = c.label_choice  # "auto" is resolved again when a saved classifier gets a model
        if self.llm is None and (self.keyword_source == "llm" or self.label_choice == "model"):
            raise ConfigurationError(
                "keyword_source='llm' and label_choice='model' need a chat model: pass llm=... "
                "(e.g. 'ollama:qwen2.5:7b-instruct'), or use 'tfidf' / 'graph' to run offline"
            )
        self.steiner = c.steiner
        self.label_edge_mode = c.label_edge_mode
        self.label_names = c.label_names
        self.describe_labels = c.describe_labels
        self.name_keywords = c.name_keywords
        self.online = c.online
        self.max_keywords = c.max_keywords
        self.max_ngram = c.max_ngram
        self.epsilon = c.epsilon
        self.max_text_tokens = c.max_text_tokens
        self.example_tokens = c.example_tokens
        self.description_examples = c.description_examples
        self.constrain_labels = c.constrain_labels
        self.candidates = c.candidates
        self.index_threshold = c.index_threshold
        self.online_weight = c.online_weight
        self.online_mode = c.online_mode
        self.max_pending = c.max_pending
        self.link_threshold = c.link_threshold
        self.link_keywords = c.link_keywords
        self.max_candidates = preset("max_candidates")
        self.candidate_coverage = float(preset("candidate_coverage"))
        self.nearest_labels = self.max_candidates if c.nearest_labels is None else c.nearest_labels
        self._pending: list[tuple[list[str], list[str], str, Any]] = []

        self.graph = nx.Graph()
        self.labels: dict[str, LabelInfo] = {}
        self.round = 0
        self.stats = TermStats(c.max_ngram)
        self._names: dict[str, str] = {}
        self._lock = threading.RLock()
        self._round_cache: ModelCache | None = None
        """The answers of a round that has not succeeded yet (see :meth:`afit_round`)."""
        self._solver: SteinerSolver | None = None
        self._choice_schema: tuple[tuple[str, ...], type[BaseModel]] | None = None
        self.scorer = _scoring.LabelScorer(
            _scoring.LexicalSpace(self.stats, stem=bool(preset("stem_words"))),
            _scoring.Weights(
                lexical=float(preset("lexical_weight")),
                dense=float(preset("dense_weight")),
                graph=float(preset("graph_weight")),
                temperature=float(preset("temperature")),
                name_weight=float(c.name_weight),
                name_match=float(preset("name_match_weight")),
                nearest_example=float(preset("nearest_example_weight")),
                split_names=bool(preset("split_names")),
                background=bool(preset("lexical_background")),
            ),
        )
        self.members: dict[str, list[tuple[int, float, bool]]] = {}
        """Per label, the texts of ``T`` in its profile: (position, weight, whether labelled —
        the others were indexed online)."""
        self.self_indexed: dict[str, list[tuple[str, float, list[str]]]] = {}
        """Online-indexed texts (by a digest of their tokens): the label they were indexed
        under, their weight in its profiles and the keyword nodes they linked to it. When such a
        text is classified again, its candidates are cut without them (leave-one-out)."""
        self.linker = _linking.KeywordLinker()

    @classmethod
    def as_published(cls, llm: Any = None, **overrides: Any) -> GORAGClassifier:
        """The paper's behaviour: candidates are the Steiner tree's labels alone, every
        classified text is indexed online, and the label is the model's choice (offline: the
        graph's choice among the Steiner candidates). Other parameters may be overridden."""
        settings: dict[str, Any] = {
            "candidates": "steiner",
            "index_threshold": None,
            "online_mode": "sequential",
            "label_choice": "model" if llm is not None else "graph",
            "lexical_background": False,
        }
        settings.update(overrides)
        return cls(llm, **settings)
    # -- parameters ------------------------------------------------------------------------------
    def parameters(self) -> dict[str, Any]:
        """Constructor parameters (as resolved), for persistence and reports; ``label_choice_asked``
        is the ``label_choice`` given (``"auto"`` picks again when the classifier is loaded)."""
        return {
            "keyword_source": self.keyword_source,
            "label_choice": self.label_choice,
            "label_choice_asked": self._label_choice_asked,
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
            "candidates": self.candidates,
            "max_candidates": self.max_candidates,
            "candidate_coverage": self.candidate_coverage,
            "nearest_labels": self.nearest_labels,
            "index_threshold": self.index_threshold,
            "online_weight": self.online_weight,
            "online_mode": self.online_mode,
            "max_pending": self.max_pending,
            "lexical_weight": self.scorer.weights.lexical,
            "dense_weight": self.scorer.weights.dense,
            "graph_weight": self.scorer.weights.graph,
            "temperature": self.scorer.weights.temperature,
            "name_weight": self.scorer.weights.name_weight,
            "name_match_weight": self.scorer.weights.name_match,
            "nearest_example_weight": self.scorer.weights.nearest_example,
            "split_names": self.scorer.weights.split_names,
            "lexical_background": self.scorer.weights.background,
            "stem_words": self.scorer.space.stem,
            "link_threshold": self.link_threshold,
            "link_keywords": self.link_keywords,
        }

    def __repr__(self) -> str:
        return (
            f"GORAGClassifier(labels={len(self.labels)}, round={self.round}, nodes={self.graph.number_of_nodes()}, "
            f"edges={self.graph.number_of_edges()}, llm={getattr(self.llm, 'name', None)!r}, "
            f"embedder={getattr(self.embedder, 'name', None)!r})"
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

    async def _model_keywords(self, text: str, llm: Any = None) -> list[str]:
        return await _keywords.model_keywords(
            text,
            function=self._keyword_function,
            llm=llm or self.llm,
            max_keywords=self.max_keywords,
            max_text_tokens=self.max_text_tokens,
        )

    @property
    def _model_extracts(self) -> bool:
        return self.keyword_source in ("llm", "function")

    async def akeywords(self, text: str) -> list[str]:
        """The keywords GORAG would extract from ``text`` now (normalised)."""
        text = _check_text(text)
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
        A description given for a label of an earlier round replaces its description and works
        as a new label's does: the model is shown it, the scorer reads it with the name, and its
        keywords join the graph as a pseudo-document of the label (those of the description it
        replaces stay: the graph never loses an edge). One equal to the label's description
        changes nothing.

        A round is all or nothing: every model and embedder call it needs is made before it
        changes the classifier, so one that fails (a model server error, an answer that stays
        invalid) raises and leaves the classifier as it was, but for the texts waiting for
        online indexing, which join first. Run again, it pays only for the chat answers it did
        not get: they are kept in the round's cache until a round succeeds.
        """
        texts, labels = list(texts), list(labels)
        if len(texts) != len(labels):
            raise InvalidInputError(f"got {len(texts)} texts and {len(labels)} labels; give one label per text")
        texts = [_check_text(text) for text in texts]
        if isinstance(new_labels, str):  # a string is a sequence of letters, not of labels
            raise InvalidInputError(f"new_labels takes a list of labels, got the string {new_labels!r}; write [{new_labels!r}]")
        round_labels = list(dict.fromkeys([*labels, *new_labels]))
        for label in round_labels:
            _check_label(label)
        if not round_labels:
            raise InvalidInputError("a round needs at least one label: pass labelled texts or new_labels")
        given = dict(descriptions or {})
        unknown = set(given) - set(round_labels) - set(self.labels)
        if unknown:
            raise InvalidInputError(f"descriptions given for labels that are not in this round: {sorted(unknown)}")
        self.flush_online()
        prepared = await self._prepare_round(texts, labels, [y for y in round_labels if y not in self.labels], given)
        # no model or embedder is called below: a round that failed above left the classifier as
        # it was (the waiting texts aside, flushed first), and the same round can simply run again
        self._round_cache = None  # the round's answers are in the graph now
        with self._lock:
            return self._apply_round(prepared)

    async def _prepare_round(self, texts: list[str], labels: list[str], new: list[str], descriptions: dict[str, str]) -> _Round:
        """Every model and embedder call of a round, before anything changes: descriptions,
        keywords of texts and descriptions, then the embeddings of texts, names and keywords
        (link targets). A model without a cache answers the round through one in memory, kept
        until a round succeeds: the same round run again after a failure pays only for what it
        did not get."""
        self._round_cache = self._round_cache or ModelCache()
        llm = with_cache(self.llm, self._round_cache)
        to_describe = [y for y in new if y not in descriptions]
        if llm is not None and self.describe_labels and self.label_names and to_describe:
            examples = {y: [t for t, lab in zip(texts, labels) if lab == y][: self.description_examples] for y in to_describe}
            written = await asyncio.gather(
                *(
                    _keywords.describe_label(llm, y, examples[y], example_tokens=self.example_tokens)
                    for y in to_describe
                )
            )
            descriptions.update(zip(to_describe, written))
        elif self.label_names and self.name_keywords:
            for y in to_describe:
                if name_keyword(y):  # a number says nothing of its label's texts
                    descriptions[y] = display_name(y)
        # labels of earlier rounds given another description get it as a new label does
        redescribed = [y for y in descriptions if y in self.labels and descriptions[y] != self.labels[y].description]
        described = [*new, *redescribed]
        documents = [*zip(texts, labels), *[(descriptions[y], y) for y in described if descriptions.get(y)]]
        tokens = [tokenize(t) for t, _ in documents]
        if self._model_extracts:
            doc_keywords = list(await asyncio.gather(*(self._model_keywords(t, llm) for t, _ in documents)))
        else:
            with self._lock:
                doc_keywords = _keywords.joining_tfidf_keywords(
                    self.stats, tokens, max_ngram=self.max_ngram, max_keywords=self.max_keywords
                )
        prepared = _Round(
            texts, labels, new, descriptions, redescribed, documents, tokens, doc_keywords,
            name_texts={y: _name_text(y, descriptions.get(y)) for y in described},
            names=set(self._names) | {key for y in new if (key := name_keyword(y))},
        )
        known_targets = set(self.linker.names)
        prepared.targets = list(
            dict.fromkeys(v for keywords in doc_keywords for v in keywords if v not in known_targets and not prepared.is_label_name(v, self.label_names))
        )
        if self.embedder is not None:
            prepared.text_vectors = await self.embedder.aembed(texts) if texts else None
            prepared.name_vectors = await self.embedder.aembed(list(prepared.name_texts.values())) if prepared.name_texts else None
            if self.link_keywords and prepared.targets:
                prepared.target_vectors = await self.embedder.aembed(prepared.targets)
        return prepared

    def _apply_round(self, r: _Round) -> RoundReport:
        """Add a prepared round to the graph, the labels and the scorer (caller holds the lock)."""
        self.round += 1
        old = list(self.labels)
        for y in r.new:
            self.labels[y] = LabelInfo(name=y, round=self.round, description=r.descriptions.get(y))
            self.graph.add_node(label_node(y), kind="label", round=self.round, name=y)
            if self.label_names and (key := name_keyword(y)):
                self._names.setdefault(key, y)
        for y in r.redescribed:
            self.labels[y].description = r.descriptions[y]
        for y in r.labels:
            self.labels[y].n_texts += 1
        positions = [self.stats.add_text(tok) for tok in r.tokens]
        for position, keywords in zip(positions, r.doc_keywords):
            self.stats.add_yielded(position, keywords)
        occurrences = 0
        empty: list[int] = []
        edges_before = self.graph.number_of_edges()
        for i, ((_, label), tok, position, keywords) in enumerate(zip(r.documents, r.tokens, positions, r.doc_keywords)):
            if not keywords and i < len(r.texts):
                empty.append(i)
            linked = _graph.add_text_keywords(
                self.graph,
                self.stats,
                position=position,
                length=len(tok),
                keywords=keywords,
                label=label,
                skip=functools.partial(r.is_label_name, label_names=self.label_names),
                epsilon=self.epsilon,
                round=self.round,
            )
            occurrences += len(linked)
        keyword_edges = self.graph.number_of_edges() - edges_before
        label_edges = (
            _graph.add_label_edges(self.graph, r.new, old, mode=self.label_edge_mode, epsilon=self.epsilon)
            if old
            else 0
        )
        self._solver = None
        self._choice_schema = None
        # the scorer: members, name vectors, dense sums; the lexical profiles are rebuilt
        # with this round's IDF
        for i, (_, label) in enumerate(r.documents[: len(r.texts)]):
            self.members.setdefault(label, []).append((positions[i], 1.0, True))
            self.scorer.add(label, None, None if r.text_vectors is None else r.text_vectors[i])
        for k, y in enumerate(r.name_texts):
            self.scorer.set_name(y, None, None if r.name_vectors is None else r.name_vectors[k])
            self.labels[y].name_text = r.name_texts[y]
        self._rebuild_lexical()
        if r.target_vectors is not None:
            self.linker.add(r.targets, r.target_vectors)
        return RoundReport(
            round=self.round,
            new_labels=r.new,
            texts=len(r.texts),
            keywords=occurrences,
            keyword_edges=keyword_edges,
            label_edges=label_edges,
            empty_extractions=empty,
            nodes=self.graph.number_of_nodes(),
            edges=self.graph.number_of_edges(),
        )

    def _rebuild_lexical(self, upto: int | None = None) -> None:
        """Freeze the IDF of ``T`` as it is now (or of its first ``upto`` texts) and recompute
        every label's lexical profile (its texts and its name) with it (caller holds the lock)."""
        space = self.scorer.space
        space.refresh(upto)
        for y, info in self.labels.items():
            total = None
            weight = 0.0
            vectors, examples = [], []
            for position, w, labelled in self.members.get(y, []):
                vec = space.vector(self.stats.texts[position].split())
                vectors.append(vec)
                if labelled:
                    examples.append(vec)
                total = w * vec if total is None else total + w * vec
                weight += w
            if total is None:
                total = self.scorer.ensure(y).lex_sum * 0
            self.scorer.set_lexical(y, total, weight, vectors, examples)
            name = tokenize(display_name(y))
            self.scorer.set_name_terms(y, [t for t in name if is_content_token(t)], name)
            self.scorer.set_name(y, space.vector(tokenize(info.name_text or _name_text(y, info.description))), None)

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

    def _retrieve(self, keywords: list[str], extra_terminals: Sequence[str] = ()) -> dict[str, Any]:
        """Terminals, Steiner tree, candidate labels and their graph costs (caller holds the lock)."""
        return _candidates.retrieve(
            keywords,
            labels=list(self.labels),
            terminal=self._terminal,
            solver=self._solver_now,
            extra_terminals=extra_terminals,
        )

    async def _query_vectors(self, text: str, keywords: list[str]) -> tuple[Any, list[str]]:
        """With an embedder: the text's vector, and the keywords (not in the graph) whose
        vectors were looked up for embedding links."""
        if self.embedder is None:
            return None, []
        vector = (await self.embedder.aembed([text]))[0]
        if not self.link_keywords or not self.linker.names:
            return vector, []
        with self._lock:
            lacking = [v for v in keywords if self._terminal(v) is None][: self.link_keywords]
        todo = self.linker.missing(lacking)
        if todo:
            self.linker.remember(todo, await self.embedder.aembed(todo))
        return vector, lacking

    def _evidence(
        self, tokens: list[str], keywords: list[str], vector: Any, linkable: list[str]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Retrieval and scores of one text (caller holds the lock): the Steiner tree over the
        keywords' terminals (exact, by their parts, by embedding), the graph component over
        those and the graph keywords found anywhere in the text, and every label's probability."""
        labels = list(self.labels)
        if self.candidates == "steiner":
            retrieved = self._retrieve(keywords)
            linked: dict[str, float] = {}
        else:
            linked = {}
            for v in keywords:
                if self._terminal(v) is None:
                    for node, strength in _linking.part_terminals(self.graph, v).items():
                        linked[node] = max(linked.get(node, 0.0), strength)
            if linkable and self.embedder is not None:
                for node, strength in self.linker.link(
                    linkable, self.link_threshold, lambda v: _graph.keyword_node(v) in self.graph
                ).items():
                    linked[node] = max(linked.get(node, 0.0), strength)
            retrieved = self._retrieve(keywords, extra_terminals=list(linked))
        # every terminal of the tree (exact and linked keywords) and every graph keyword found
        # in the text counts fully (strength 1) in the graph score; the link strengths decide
        # only whether a link is made (part share, cosine threshold)
        exact, _ = _candidates.split_keywords(keywords, self._terminal)
        terminals: dict[str, float] = dict.fromkeys(retrieved["terminals"], 1.0)
        for node in _linking.vocabulary_terminals(self.graph, tokens, self.max_ngram):
            terminals[node] = 1.0
        links = {t: _graph.label_links(self.graph, t) for t in terminals}
        graph_scores = _scoring.graph_strength(terminals, links, len(labels))
        lex = self.scorer.space.vector(tokens)
        components = self.scorer.components(labels, lex, vector, graph_scores, tokens)
        probs = self.scorer.probabilities(components)
        cut_probs = self.scorer.cut_probabilities(components)
        scored = {
            "labels": labels,
            "probabilities": probs,
            "components": components,
            "linked": sorted(t for t in terminals if t not in exact),
        }
        if self.candidates == "scored":
            retrieved["steiner_candidates"] = list(retrieved["candidates"])
            retrieved["candidates"] = self._offer(retrieved["candidates"], probs, cut_probs, labels)
            seen = self.self_indexed.get(text_key(tokens))
            if seen:
                retrieved["candidates"] = self._cut_unseen(seen, tokens, lex, vector, terminals, links, labels, probs, retrieved)
        return retrieved, scored

    def _cut_unseen(
        self,
        seen: list[tuple[str, float, list[str]]],
        tokens: list[str],
        lex: Any,
        vector: Any,
        terminals: Mapping[str, float],
        links: dict[str, dict[str, float]],
        labels: list[str],
        probs: Any,
        retrieved: dict[str, Any],
    ) -> list[str]:
        """The candidates of a text this classifier indexed online before (caller holds the
        lock): its label stays the one its full evidence gives, but the other candidates are
        cut from its probabilities without its own copy (leave-one-out: its pseudo-label and
        the keyword edges it made), so an earlier, possibly wrong, label does not shut out the
        others."""
        exclude: dict[str, float] = {}
        links = dict(links)
        for label, weight, nodes in seen:
            exclude[label] = exclude.get(label, 0.0) + weight
            for node in nodes:
                if label in links.get(node, {}):
                    links[node] = {y: w for y, w in links[node].items() if y != label}
        graph_scores = _scoring.graph_strength(terminals, links, len(labels))
        loo = self.scorer.cut_probabilities(self.scorer.components(labels, lex, vector, graph_scores, tokens, exclude))
        return self._offer(retrieved["steiner_candidates"], probs, loo, labels)

    def _offer(self, steiner: list[str], probs: Any, cut_probs: Any, labels: list[str]) -> list[str]:
        """The candidates cut from ``cut_probs`` (:meth:`_cut`), with the label ``probs`` ranks
        first among them (the scorer's choice is always a candidate), most probable by
        ``probs`` first."""
        candidates = self._cut(steiner, cut_probs, labels)
        best = labels[max(range(len(labels)), key=lambda k: (probs[k], -k))]
        if best not in candidates:
            candidates = [best, *candidates[: self.max_candidates - 1]]
        index = {y: k for k, y in enumerate(labels)}
        return sorted(candidates, key=lambda y: (-probs[index[y]], index[y]))

    def _cut(self, steiner: list[str], probs: Any, labels: list[str]) -> list[str]:
        """The candidates: the Steiner labels and the ``nearest_labels`` most probable ones
        (at least the most probable: the scorer's own choice is always a candidate), most
        probable first, until they hold ``candidate_coverage`` of the probability or number
        ``max_candidates`` (a coverage of 1 keeps the whole pool up to the cap, even when the
        first labels' probabilities already sum to 1.0 in floating point)."""
        index = {y: k for k, y in enumerate(labels)}
        ranked = sorted(range(len(labels)), key=lambda k: (-probs[k], k))
        pool = dict.fromkeys([labels[k] for k in ranked[: max(1, self.nearest_labels)]])
        pool.update(dict.fromkeys(steiner))
        ordered = sorted(pool, key=lambda y: (-probs[index[y]], index[y]))
        out: list[str] = []
        mass = 0.0
        for y in ordered:
            if len(out) >= self.max_candidates or (out and self.candidate_coverage < 1.0 and mass >= self.candidate_coverage):
                break
            out.append(y)
            mass += float(probs[index[y]])
        return out

    async def aretrieve_candidates(self, text: str) -> dict[str, Any]:
        """Keywords, terminals, Steiner tree, candidate labels and their probabilities for
        ``text``, without choosing."""
        text = _check_text(text)
        self._check_ready()
        keywords = await self.akeywords(text)
        vector, linkable = await self._query_vectors(text, keywords)
        with self._lock:
            retrieved, scored = self._evidence(tokenize(text), keywords, vector, linkable)
        retrieved["keywords"] = keywords
        probs = dict(zip(scored["labels"], scored["probabilities"]))
        retrieved["scores"] = {y: float(probs[y]) for y in retrieved["candidates"]}
        retrieved["linked"] = scored["linked"]
        return retrieved

    # -- classification --------------------------------------------------------------------------
    def _check_ready(self) -> None:
        if not self.labels:
            raise ConfigurationError("the classifier has no labels yet; call fit_round(texts, labels) first")

    def _schema(self, labels: tuple[str, ...] | None = None) -> type[BaseModel]:
        """The answer schema of the classification request (``labels``: the allowed answers,
        default all labels), rebuilt when they change."""
        labels = tuple(self.labels) if labels is None else labels
        if self._choice_schema is None or self._choice_schema[0] != labels:
            self._choice_schema = (labels, _choice.choice_schema(labels, constrain=self.constrain_labels))
        return self._choice_schema[1]

    def match_label(self, answer: str) -> str | None:
        """The known label a model answer names (case, spacing, quotes and ``_``/``-`` vs space
        ignored), or ``None``."""
        return _choice.match_label(self.labels, answer)

    async def _aclassify(
        self,
        text: str,
        online: bool,
        keywords: list[str] | None = None,
        threshold: Any = "default",
        batch: _BatchWrites | None = None,
    ) -> Classification:
        if keywords is None and self._model_extracts:
            keywords = await self._model_keywords(text)
        tokens = tokenize(text)
        if keywords is None:
            with self._lock:
                keywords = self._tfidf_keywords(tokens, virtual=True)
        vector, linkable = await self._query_vectors(text, keywords)
        with self._lock:
            retrieved, scored = self._evidence(tokens, keywords, vector, linkable)
            round_ = self.round
            graph_label = (
                _choice.graph_choice(self.graph, retrieved, tokens, list(self.labels))
                if self.label_choice == "graph"
                else None
            )
        labels, probs = scored["labels"], scored["probabilities"]
        probability = {y: float(p) for y, p in zip(labels, probs)}
        candidates: list[str] = retrieved["candidates"]
        best = max(labels, key=lambda y: (probability[y], -labels.index(y)))
        if graph_label is not None:
            label, chosen_by = graph_label, "graph"
        else:
            label, chosen_by = best, "score"
        hallucinated, answer, strict, valid = False, None, None, None
        if self.label_choice == "model":
            allowed = candidates if self.candidates == "scored" else list(self.labels)
            matched, answer = await _choice.model_choice(
                self.llm,
                self.labels,
                text,
                keywords,
                candidates,
                scores={y: probability[y] for y in candidates} if self.candidates == "scored" else None,
                schema=self._schema(tuple(allowed)),
                max_text_tokens=self.max_text_tokens,
            )
            strict = answer in candidates
            valid = matched is not None and matched in allowed
            if matched is None:
                hallucinated = True
                label = candidates[0] if candidates else best
            elif not valid:
                label = candidates[0] if candidates else best
            else:
                label, chosen_by = matched, "model"
        confidence = probability[label]
        if threshold == "default":
            threshold = self.index_threshold
        index_it = online and not hallucinated and (threshold is None or confidence >= threshold)
        indexed, evidence = self._take_online(tokens, keywords, label, vector, retrieved["terminals"], index_it, batch)
        tree = SteinerTreeInfo(
            terminals=retrieved["terminals"],
            edges=[(str(u), str(v), float(w)) for u, v, w in retrieved["edges"]],
            cost=float(sum(w for _, _, w in retrieved["edges"])),
            method=self.steiner,
        )
        return Classification(
            label=label,
            candidates=candidates,
            scores={y: probability[y] for y in candidates},
            confidence=confidence,
            keywords=keywords,
            evidence=evidence,
            linked=[t[len(_graph.KW) :] if t.startswith(_graph.KW) else t for t in scored["linked"]],
            tree=tree,
            new_keywords=retrieved["new_keywords"],
            indexed=indexed,
            online_indexed=index_it,
            costs=retrieved["costs"],
            unreachable=retrieved["unreachable"],
            chosen_by=chosen_by,
            fallback=retrieved["fallback"],
            hallucinated=hallucinated,
            model_answer=answer,
            strict_match=strict,
            valid_answer=valid,
            round=round_,
        )

    def _take_online(
        self, tokens: list[str], keywords: list[str], label: str, vector: Any, terminals: list[str], index_it: bool, batch: _BatchWrites | None
    ) -> tuple[list[str], Any]:
        """Online indexing of a classified text (``index_it``): it waits (deferred modes) or
        joins now (sequential); the waiting texts join once ``max_pending`` wait. Returns the
        keywords indexed now and the evidence of ``label`` among the ``terminals``."""
        indexed: list[str] = []
        with self._lock:
            if index_it and self.online_mode != "sequential":
                (self._pending if batch is None else batch.pending).append((tokens, list(keywords), label, vector))
            elif index_it:
                if batch is not None:
                    batch.save(self)
                indexed = self._index_online(tokens, keywords, label, vector)
            evidence = _graph.evidence(self.graph, terminals, label)
            waiting = len(self._pending) + (0 if batch is None else len(batch.pending))
            if self.max_pending is not None and waiting >= self.max_pending:
                if batch is not None:
                    batch.save(self)
                    self._pending.extend(batch.pending)
                    batch.pending.clear()
                self.flush_online()
        return indexed, evidence

    def flush_online(self) -> int:
        """Index the texts that deferred online indexing holds (``online_mode="deferred"`` or
        ``"revisit"``), all together: every one joins ``T`` first, then each one's keywords that
        the graph lacked before the flush are linked to its label (Eq. 14, the IDF of all of
        them) and it joins its label's profiles. The result does not depend on the order the
        texts were classified in. Returns how many texts were indexed."""
        with self._lock:
            pending = sorted(self._pending, key=lambda item: (item[2], " ".join(item[0]), item[1]))
            self._pending = []
            if not pending:
                return 0
            existed = set(self.graph.nodes)
            positions = []
            for tokens, keywords, _, _ in pending:
                position = self.stats.add_text(tokens)
                self.stats.add_yielded(position, keywords)
                positions.append(position)

            def known(v: str) -> bool:
                node = self._terminal(v)
                return node is not None and node in existed

            for (tokens, keywords, label, vector), position in zip(pending, positions):
                self._join(position, tokens, keywords, label, vector, known)
            self._solver = None
            return len(pending)

    def _join(
        self, position: int, tokens: list[str], keywords: list[str], label: str, vector: Any, skip: Any
    ) -> list[str]:
        """A text already in ``T`` at ``position`` joins ``label``: its profiles (with weight
        ``online_weight``) and, for its keywords not ``skip``-ped, new keyword nodes linked to
        the label (Eq. 14); it is remembered as self-indexed. Returns the keywords linked."""
        if self.online_weight > 0:
            self.members.setdefault(label, []).append((position, self.online_weight, False))
            self.scorer.add(label, self.scorer.space.vector(tokens), vector, self.online_weight)
        linked = _graph.add_text_keywords(
            self.graph,
            self.stats,
            position=position,
            length=len(tokens),
            keywords=keywords,
            label=label,
            skip=skip,
            epsilon=self.epsilon,
            round=self.round,
        )
        self.self_indexed.setdefault(text_key(tokens), []).append(
            (label, self.online_weight, [_graph.keyword_node(v) for v in linked])
        )
        return linked

    def _index_online(self, tokens: list[str], keywords: list[str], label: str, vector: Any = None) -> list[str]:
        """Eq. 14: the query joins ``T``; each of its keywords the graph lacks becomes a node
        linked to the predicted label, weighted by Eq. 5 with the query as a text of that label.
        Keywords already in the graph get no new edge. The text also joins the label's profiles
        with weight ``online_weight`` (caller holds the lock)."""
        position = self.stats.add_text(tokens)
        self.stats.add_yielded(position, keywords)
        return self._join(position, tokens, keywords, label, vector, lambda v: self._terminal(v) is not None)

    def _learned(self) -> tuple[Any, ...]:
        """What classifying with online indexing changes: the graph, ``T``, the scorer, the
        profiles' members, the self-indexed texts and the texts waiting to be indexed."""
        return (self.graph, self.stats, self.scorer, self.members, self.self_indexed, self._pending)

    def _restore(self, learned: tuple[Any, ...]) -> None:
        """Put back what :meth:`_learned` gave (a copy of it; caller holds the lock)."""
        self.graph, self.stats, self.scorer, self.members, self.self_indexed, self._pending = learned
        self._solver = None

    async def aclassify(
        self, text: str | bytes, *, online: bool | None = None, index_threshold: Any = "default"
    ) -> Classification:
        """Classify ``text`` among every label seen so far. With online indexing (default: the
        constructor's ``online``) and a confidence of at least ``index_threshold`` (default:
        the constructor's; ``None``: always), the text joins the graph and its label's
        profiles. ``bytes`` are read as UTF-8."""
        text = _check_text(text)
        self._check_ready()
        if index_threshold != "default":
            _check_threshold(index_threshold)  # one given per call is checked as the constructor's is
        return await self._aclassify(text, self.online if online is None else online, threshold=index_threshold)

    def classify(
        self, text: str | bytes, *, online: bool | None = None, index_threshold: Any = "default"
    ) -> Classification:
        return run_sync(self.aclassify(text, online=online, index_threshold=index_threshold))

    async def abatch(
        self,
        texts: Sequence[str | bytes],
        *,
        online: bool | None = None,
        index_threshold: Any = "default",
        max_concurrency: int = 4,
    ) -> list[Classification | ClassificationError]:
        """Classify many texts, results in order. A text that cannot be classified (empty, not
        a string, bytes that are not UTF-8) gets a :class:`ClassificationError` in its place;
        the others are classified. With online indexing, texts are classified one after
        another in the given order (sequential), though model keyword extraction
        runs ahead concurrently; without it, whole classifications run concurrently. With
        ``online_mode="revisit"``, the texts below the indexing threshold are then classified a
        second time, concurrently, after the texts taken for indexing have joined.

        A batch is all or nothing: when a call fails part-way (a model server error, a
        cancellation), it raises and leaves the classifier as it was before the batch, so the
        same texts run again give the classifier that one uninterrupted run gives. The texts it
        takes for deferred indexing join the waiting ones only when it succeeds; a batch that
        changes the classifier before it ends (sequential indexing, ``max_pending`` reached, a
        revisit's flush) first keeps a copy of it to go back to. Another call that indexes texts
        while such a batch runs is undone with it when the batch fails."""
        self._check_ready()
        if index_threshold != "default":
            _check_threshold(index_threshold)
        items: list[str | ClassificationError] = []
        for i, text in enumerate(texts):
            try:
                items.append(_check_text(text))
            except InvalidInputError as exc:
                items.append(ClassificationError(index=i, error=str(exc)))
        good = [i for i, item in enumerate(items) if isinstance(item, str)]
        good_texts = [item for item in items if isinstance(item, str)]
        online = self.online if online is None else online
        if not online:
            done = await gather_limited(
                [functools.partial(self._aclassify, t, False) for t in good_texts], max_concurrency
            )
        else:
            keywords: list[list[str] | None] = [None] * len(good_texts)
            if self._model_extracts:
                keywords = list(
                    await gather_limited([functools.partial(self._model_keywords, t) for t in good_texts], max_concurrency)
                )
            batch = _BatchWrites()
            try:
                done = [
                    await self._aclassify(t, True, k, threshold=index_threshold, batch=batch)
                    for t, k in zip(good_texts, keywords)
                ]
                if self.online_mode == "revisit":
                    done = await self._revisit(good_texts, keywords, done, batch, max_concurrency)
            except BaseException:
                with self._lock:
                    batch.undo(self)
                raise
            with self._lock:
                self._pending.extend(batch.pending)
        out: list[Classification | ClassificationError] = list(items)  # type: ignore[arg-type]
        for i, result in zip(good, done):
            out[i] = result
        return out

    async def _revisit(
        self,
        texts: list[str],
        keywords: list[list[str] | None],
        done: list[Classification],
        batch: _BatchWrites,
        max_concurrency: int,
    ) -> list[Classification]:
        """``online_mode="revisit"``: the batch's texts taken for indexing join now (with any
        others waiting), and the texts it did not take are classified again, without indexing.
        The classifier's state before the flush is kept in ``batch`` to go back to."""
        unsure = [i for i, result in enumerate(done) if not result.online_indexed]
        if not unsure or len(unsure) == len(done):  # nothing to revisit, or nothing to revisit with
            return done
        with self._lock:
            batch.save(self)
            self._pending.extend(batch.pending)
            batch.pending.clear()
            self.flush_online()
        again = await gather_limited(
            [functools.partial(self._aclassify, texts[i], False, keywords[i]) for i in unsure], max_concurrency
        )
        done = list(done)
        for i, result in zip(unsure, again):
            done[i] = result.model_copy(update={"revisited": True})
        return done

    def batch(
        self,
        texts: Sequence[str | bytes],
        *,
        online: bool | None = None,
        index_threshold: Any = "default",
        max_concurrency: int = 4,
    ) -> list[Classification | ClassificationError]:
        return run_sync(
            self.abatch(texts, online=online, index_threshold=index_threshold, max_concurrency=max_concurrency)
        )

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


class _BatchWrites:
    """What an online batch holds back until it succeeds: the texts it took for deferred
    indexing, and a copy of the classifier's learned state, made before the batch first
    changes it, to go back to when it fails."""

    def __init__(self) -> None:
        self.pending: list[tuple[list[str], list[str], str, Any]] = []
        self.saved: tuple[Any, ...] | None = None

    def save(self, classifier: GORAGClassifier) -> None:
        """Copy the classifier's learned state, unless this batch has copied it already."""
        if self.saved is None:
            self.saved = copy.deepcopy(classifier._learned())

    def undo(self, classifier: GORAGClassifier) -> None:
        """Leave the classifier as the batch found it."""
        self.pending.clear()
        if self.saved is not None:
            classifier._restore(self.saved)
            self.saved = None


def _name_text(label: str, description: str | None) -> str:
    """What stands for a label's name in the scorer: the name, and its description when it
    says more than the name."""
    name = display_name(label)
    return f"{name}. {description}" if description and description.strip() != name else name


def _check_threshold(threshold: Any) -> None:
    """``index_threshold``: a probability in [0, 1], or ``None`` (index every text)."""
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1):
        raise ConfigurationError(f"index_threshold must be a probability in [0, 1] or None (index every text), got {threshold!r}")


def _check_text(text: Any) -> str:
    """The text to classify: a non-empty string (bytes are decoded as UTF-8)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"cannot decode the text as UTF-8 ({exc.reason} at byte {exc.start}); re-encode it as UTF-8"
            ) from None
    if not isinstance(text, str):
        raise InvalidInputError(f"texts must be strings, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError("cannot classify or index an empty text; drop empty lines first")
    return text


def _check_label(label: Any) -> None:
    if not isinstance(label, str) or not label.strip():
        raise InvalidInputError(f"labels must be non-empty strings, got {label!r}")
    if any(c in label for c in "\t\r\n"):  # a label is one field of one line of the TSV files
        raise InvalidInputError(f"labels cannot hold a tab or a line break, got {label!r}")


__all__ = [
    "Classification",
    "ClassificationError",
    "GORAGClassifier",
    "LabelInfo",
    "RoundReport",
    "SteinerTreeInfo",
]
