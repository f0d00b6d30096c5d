"""The label scorer: a calibrated probability over all known labels for one text, from these
kinds of evidence (docs/gorag.md, "Scoring"):

- ``lexical`` — cosine between the text's TF-IDF vector (content 1–2-grams, sublinear tf) and
  each label's profile: the mean of its texts' unit vectors plus ``name_weight`` times the
  unit vector of its name (and description);
- ``dense`` — with an embedder, the same with embeddings: the text's vector against the
  normalised mean of the label's text vectors and its name's vector (the name counts as
  ``name_weight`` texts);
- ``graph`` — GORAG's keyword–label graph: the correlation scores (1 − edge weight) of the
  text's terminals linked to the label, each weighted by its specificity (a keyword linked to
  few labels says more), as a share of the text's total terminal specificity;
- ``name_match`` — whether the text holds the label's whole name: 1 when every content word of
  the name occurs in it, plus 1 when the name occurs as a phrase (WOS labels are the papers' own
  keywords, so the name is often in the text). When the text holds several labels' names, each
  one's is scaled by the name's specificity — its IDF as a phrase in ``T`` — over that of the
  most specific of them: a text on lymphoma names "cancer" too, and "cancer" occurs in many
  texts of other labels;
- ``nearest_example`` — the cosine of the text's lexical vector with the label's nearest
  *labelled* text (online-indexed texts are not examples): the averaged profile hides a text
  that resembles one example closely and the others not at all.

Two sets of components are read: the label's probability (its choice and confidence) from all
of the above; the probabilities the candidates are cut from (:meth:`LabelScorer.cut_probabilities`)
without ``nearest_example`` and with ``name_words`` in ``name_match``'s place — the *share* of
the name's content words in the text, plus 1 for the name as a phrase. A label one of whose name
words occurs in the text is worth offering; it is not worth choosing over one whose examples
the text resembles (a two-word name such as ``machine_learning`` shares a word with many texts).

With ``split_names`` the name is not folded into the profiles: ``lexical`` (and ``dense``) is
the cosine with the label's examples alone (the unit mean of their unit vectors) plus
``name_weight`` times the cosine with the name's vector. A label's one or five examples then
cannot outweigh its name, and its name cannot dilute them (docs/gorag.md, "Scoring").

With ``background``, :meth:`LabelScorer.standardised` gives the components with each label's
``lexical`` score standardised against its own background: the mean and standard deviation of
its lexical score over the stored texts of *other* labels (their labelled texts and the texts
indexed online under them). A profile built from many texts is a centroid with a higher cosine
with any text of the domain than one example has, so plain scores rank the labels that gathered
online texts above a new label with one example for texts of neither. The standardised score is
``(lexical − mean) / sd``, times the median ``sd`` over the labels, so the component keeps its
usual scale. The classifier cuts its candidates from the standardised probabilities and keeps
the plain ones for its choice and confidence (docs/gorag.md, "Scoring").

The combined score ``s(y) = Σ weight_c · component_c(y)`` (``name_words`` weighs
``name_match``'s weight) becomes a probability by a softmax
with ``temperature``; the defaults were set on the gorag-wos *dev* split (one held-out text per
label), never on its test texts. Profiles are sums, so adding a text is order-free; the
IDF of the lexical space is frozen at each round (:meth:`LexicalSpace.refresh`), so queries
classified within a round all see the same weights.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from rhizome.gorag.text import TermStats, content_ngrams, word_stem

DIM = 1 << 20
"""Hashed feature space of the lexical vectors (collisions are negligible at this size)."""

_SCORE_BLOCK = 4096
"""Stored texts scored at once for the lexical background."""


def _norm(row: sparse.csr_matrix) -> float:
    return float(np.sqrt(row.multiply(row).sum())) if row.nnz else 0.0


def _feature(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) & (DIM - 1)


class LexicalSpace:
    """TF-IDF vectors of token lists, with the IDF of ``T`` as of the last :meth:`refresh`:
    ``ln((1 + N) / (1 + df)) + 1`` (a term unseen then gets the largest IDF). The terms are
    content 1–2-grams; with ``stem``, of word stems (:func:`~rhizome.gorag.text.word_stem`), so
    a text on "depressive symptoms" and a label's example on "depression" share a term. Their
    document frequencies are counted here, each text once as it joins ``T``."""

    def __init__(self, stats: TermStats, max_ngram: int = 2, stem: bool = False) -> None:
        self.stats = stats
        self.max_ngram = min(max_ngram, stats.max_ngram)
        self.stem = stem
        self.n = 0
        """The texts of ``T`` the IDF is of (its first ``n``)."""
        self.df: Counter[str] = Counter()
        self._phrases: dict[str, float] = {}

    def _grams(self, tokens: Sequence[str]) -> Counter[str]:
        return content_ngrams(tokens, self.max_ngram, word_stem if self.stem else None)

    def refresh(self, upto: int | None = None) -> None:
        """Freeze the IDF of ``T`` now, or of its first ``upto`` texts: the texts joined since
        the last refresh are counted (all of them again for an earlier ``upto``, a saved
        classifier's)."""
        self._phrases = {}
        upto = self.stats.n_texts if upto is None else min(upto, self.stats.n_texts)
        if upto < self.n:
            self.df, self.n = Counter(), 0
        for padded in self.stats.texts[self.n : upto]:
            self.df.update(self._grams(padded.split()).keys())
        self.n = upto

    def idf(self, term: str) -> float:
        return math.log((1 + self.n) / (1 + self.df.get(term, 0))) + 1.0

    def phrase_idf(self, phrase: str) -> float:
        """The IDF of a phrase as written (normalised tokens joined by spaces) over the same
        texts: a term of the space from the frozen counts (when they are of words as written),
        another phrase (a stop word inside, a long name) by scanning those texts once."""
        if not self.stem and self.stats.is_ngram_key(phrase) and phrase.count(" ") < self.max_ngram:
            return self.idf(phrase)
        if phrase not in self._phrases:
            needle = f" {phrase} "
            df = sum(needle in padded for padded in self.stats.texts[: self.n])
            self._phrases[phrase] = math.log((1 + self.n) / (1 + df)) + 1.0
        return self._phrases[phrase]

    def vector(self, tokens: Sequence[str]) -> sparse.csr_matrix:
        """The unit TF-IDF row vector (1 × DIM) of ``tokens``; all zero when none is content."""
        weights: dict[int, float] = {}
        for gram, count in self._grams(tokens).items():
            j = _feature(gram)
            weights[j] = weights.get(j, 0.0) + (1.0 + math.log(count)) * self.idf(gram)
        if not weights:
            return sparse.csr_matrix((1, DIM), dtype=np.float64)
        cols = np.fromiter(weights.keys(), dtype=np.int64, count=len(weights))
        vals = np.fromiter(weights.values(), dtype=np.float64, count=len(weights))
        order = np.argsort(cols)
        cols, vals = cols[order], vals[order]
        vals /= np.linalg.norm(vals)
        return sparse.csr_matrix((vals, cols, [0, len(cols)]), shape=(1, DIM))


@dataclass
class Profile:
    """What the scorer keeps per label: sums of unit vectors of its texts (and their total
    weight) and the unit vectors of its name."""

    lex_sum: sparse.csr_matrix
    weight: float = 0.0
    name_lex: sparse.csr_matrix | None = None
    dense_sum: np.ndarray | None = None
    name_dense: np.ndarray | None = None
    name_terms: frozenset[str] = frozenset()
    name_phrase: str = ""
    examples: list[sparse.csr_matrix] = field(default_factory=list)
    """The unit lexical vectors of its labelled texts (for ``nearest_example``)."""
    texts: list[sparse.csr_matrix] = field(default_factory=list)
    """The unit lexical vectors of its texts, kept only with ``background`` (which reads them
    as the other labels' background)."""


@dataclass
class _Rows:
    """One label's rows of the scorer's stacked matrices."""

    lex: sparse.csr_matrix
    name: sparse.csr_matrix
    scored: sparse.csr_matrix
    """The row the background scores stored texts with (``lex``, plus the name with
    ``split_names``)."""
    dense: np.ndarray | None
    name_dense: np.ndarray | None


@dataclass
class _StoredScores:
    """What the background needs of the lexical scores of the stored texts (rows of ``x``, text
    ``i`` of label ``labels[owners[i]]``) against each of ``labels``: per label, the sum of the
    scores and of their squares over every stored text (``sums[0]``, ``sums[1]``) and over the
    label's own texts (``sums[2]``, ``sums[3]``)."""

    labels: list[str]
    owners: np.ndarray
    x: sparse.csr_matrix
    sums: np.ndarray


@dataclass
class Weights:
    """How the components combine (see the module docstring)."""

    lexical: float = 1.0
    dense: float = 0.25
    graph: float = 0.5
    temperature: float = 0.02
    name_weight: float = 1.0
    name_match: float = 0.0
    nearest_example: float = 0.0
    split_names: bool = False
    background: bool = False


CHOICE = {"lexical": "lexical", "dense": "dense", "graph": "graph", "name_match": "name_match",
          "nearest_example": "nearest_example"}
"""The components a label's probability is made of, each with the weight it takes."""
CUT = {"lexical": "lexical", "dense": "dense", "graph": "graph", "name_words": "name_match"}
"""The components the candidates are cut from, each with the weight it takes."""


@dataclass
class LabelScorer:
    """Label profiles and the combined, calibrated score of a text against them."""

    space: LexicalSpace
    weights: Weights = field(default_factory=Weights)
    profiles: dict[str, Profile] = field(default_factory=dict)
    _lex_matrix: sparse.csr_matrix | None = None
    _dense_matrix: np.ndarray | None = None
    _name_lex_matrix: sparse.csr_matrix | None = None
    _name_dense_matrix: np.ndarray | None = None
    _term_index: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    _examples: tuple[sparse.csr_matrix, np.ndarray] | None = None
    """The labelled texts' unit vectors (DIM × texts) and the label index of each."""
    _order: list[str] = field(default_factory=list)
    _background: tuple[np.ndarray, np.ndarray] | None = None
    _rows: dict[str, _Rows] = field(default_factory=dict)
    _scores: _StoredScores | None = None
    _changed: set[str] = field(default_factory=set)
    _added: list[tuple[str, sparse.csr_matrix]] = field(default_factory=list)

    def ensure(self, label: str) -> Profile:
        if label not in self.profiles:
            self.profiles[label] = Profile(lex_sum=sparse.csr_matrix((1, DIM), dtype=np.float64))
            self._dirty(label)
        return self.profiles[label]

    def _dirty(self, label: str) -> None:
        """``label``'s profile changed: its rows are computed again, and the stacked matrices
        and the background at the next query."""
        self._rows.pop(label, None)
        self._changed.add(label)
        self._lex_matrix = None
        self._dense_matrix = None
        self._name_lex_matrix = None
        self._name_dense_matrix = None
        self._term_index = {}
        self._examples = None
        self._background = None

    def set_name(self, label: str, lex: sparse.csr_matrix | None, dense: np.ndarray | None) -> None:
        """The unit vectors of the label's name (and description); ``None`` keeps what is there."""
        profile = self.ensure(label)
        if lex is not None:
            profile.name_lex = lex if lex.nnz else None
        if dense is not None:
            profile.name_dense = np.asarray(dense, dtype=np.float64)
        self._dirty(label)

    def set_name_terms(self, label: str, terms: Collection[str], phrase: Sequence[str] = ()) -> None:
        """The distinct content words of the label's name and its tokens in order (for the
        ``name_match`` component)."""
        profile = self.ensure(label)
        profile.name_terms = frozenset(terms)
        profile.name_phrase = f" {' '.join(phrase)} " if phrase else ""
        self._dirty(label)

    def set_lexical(
        self,
        label: str,
        lex_sum: sparse.csr_matrix,
        weight: float,
        texts: Sequence[sparse.csr_matrix] = (),
        examples: Sequence[sparse.csr_matrix] = (),
    ) -> None:
        """Replace the label's lexical sum, its texts' unit vectors and those of its labelled
        texts among them (after the IDF changed)."""
        profile = self.ensure(label)
        profile.lex_sum, profile.weight = lex_sum, weight
        profile.texts = list(texts) if self.weights.background else []
        profile.examples = list(examples) if self.weights.nearest_example else []
        self._scores = None  # the label's stored texts were replaced: score them all again
        self._dirty(label)

    def add(self, label: str, lex: sparse.csr_matrix | None, dense: np.ndarray | None, weight: float = 1.0) -> None:
        """Add one text of ``label`` (unit vectors) with ``weight`` (1 for a labelled text)."""
        profile = self.ensure(label)
        if lex is not None:
            profile.lex_sum = profile.lex_sum + weight * lex
            profile.weight += weight
            if self.weights.background:
                profile.texts.append(lex)
                self._added.append((label, lex))
        if dense is not None:
            dense = np.asarray(dense, dtype=np.float64)
            profile.dense_sum = weight * dense if profile.dense_sum is None else profile.dense_sum + weight * dense
        self._dirty(label)

    def _lex_row(self, p: Profile, lex_sum: sparse.csr_matrix, weight: float) -> sparse.csr_matrix:
        """A label's unit lexical profile: its examples' unit mean, with the name folded in
        unless names are scored apart."""
        w = 0.0 if self.weights.split_names else self.weights.name_weight
        row = lex_sum / weight if weight > 1e-9 else lex_sum * 0
        norm = _norm(row)
        row = row / norm if norm else row
        if p.name_lex is not None and w:
            row = row + w * p.name_lex
        norm = _norm(row)
        return row / norm if norm else row

    def _dense_row(self, p: Profile, dense_sum: np.ndarray | None) -> np.ndarray | None:
        """The same with embeddings (``None`` when the label has none)."""
        w = 0.0 if self.weights.split_names else self.weights.name_weight
        if dense_sum is None and (p.name_dense is None or not w):
            return None
        vec = np.zeros_like(p.name_dense) if dense_sum is None else np.asarray(dense_sum, dtype=np.float64).copy()
        if p.name_dense is not None and w:
            vec = vec + w * p.name_dense
        n = np.linalg.norm(vec)
        return vec / n if n > 1e-9 else None

    def _label_rows(self, label: str) -> _Rows:
        """The label's rows of the stacked matrices, kept until its profile changes."""
        rows = self._rows.get(label)
        if rows is None:
            p = self.ensure(label)
            lex = self._lex_row(p, p.lex_sum, p.weight)
            name = p.name_lex if p.name_lex is not None else sparse.csr_matrix((1, DIM), dtype=np.float64)
            # what the background scores a stored text with: the lexical component of this label
            scored = lex + self.weights.name_weight * name if self.weights.split_names else lex
            rows = self._rows[label] = _Rows(lex, name, scored, self._dense_row(p, p.dense_sum), p.name_dense)
        return rows

    def _matrices(self, labels: Sequence[str]) -> tuple[sparse.csr_matrix, np.ndarray | None]:
        if self._lex_matrix is not None and self._order == list(labels):
            return self._lex_matrix, self._dense_matrix
        rows = [self._label_rows(y) for y in labels]
        self._term_index = {}
        for k, y in enumerate(labels):
            terms = self.profiles[y].name_terms
            for term in terms:
                self._term_index.setdefault(term, []).append((k, 1.0 / len(terms)))
        # stored transposed (DIM × labels, CSR), so a query row multiplies it without conversion
        self._lex_matrix = (
            sparse.vstack([r.lex for r in rows], format="csr").T.tocsr() if rows else sparse.csr_matrix((DIM, 0))
        )
        self._name_lex_matrix = (
            sparse.vstack([r.name for r in rows], format="csr").T.tocsr() if rows else sparse.csr_matrix((DIM, 0))
        )
        self._dense_matrix = self._name_dense_matrix = None
        if any(r.dense is not None or r.name_dense is not None for r in rows):
            dim = next(v.shape[0] for r in rows for v in (r.dense, r.name_dense) if v is not None)
            self._dense_matrix = np.vstack([r.dense if r.dense is not None else np.zeros(dim) for r in rows])
            self._name_dense_matrix = np.vstack(
                [np.asarray(r.name_dense, dtype=np.float64) if r.name_dense is not None else np.zeros(dim) for r in rows]
            )
        if self.weights.nearest_example:
            owners = [k for k, y in enumerate(labels) for _ in self.profiles[y].examples]
            examples = [v for y in labels for v in self.profiles[y].examples]
            self._examples = (
                sparse.vstack(examples, format="csr").T.tocsr() if examples else sparse.csr_matrix((DIM, 0)),
                np.asarray(owners, dtype=np.int64),
            )
        self._order = list(labels)
        if self.weights.background:
            self._background = self._background_of(labels)
        return self._lex_matrix, self._dense_matrix

    def _stored_scores(self, labels: Sequence[str]) -> _StoredScores:
        """The sums of the stored texts' scores for every label. Kept between queries: a text
        added since is scored against every label, a label whose profile changed against every
        stored text; only replaced texts (a new IDF) or another order of labels score everything
        again."""
        known = self._scores
        changed, added = self._changed, self._added
        self._changed, self._added = set(), []
        labels = list(labels)
        every = list(range(len(labels)))
        if known is None or known.labels != labels[: len(known.labels)]:
            owners = np.asarray([k for k, y in enumerate(labels) for _ in self.profiles[y].texts], dtype=np.int64)
            texts = [v for y in labels for v in self.profiles[y].texts]
            x = sparse.vstack(texts, format="csr") if texts else sparse.csr_matrix((0, DIM), dtype=np.float64)
            return _StoredScores(labels, owners, x, self._score_sums(x, owners, labels, every))
        sums = np.hstack([known.sums, np.zeros((4, len(labels) - len(known.labels)))])
        redo = [k for k, y in enumerate(labels) if y in changed or k >= len(known.labels)]
        if redo:
            sums[:, redo] = self._score_sums(known.x, known.owners, labels, redo)
        x, owners = known.x, known.owners
        if added:
            index = {y: k for k, y in enumerate(labels)}
            new = sparse.vstack([v for _, v in added], format="csr")
            new_owners = np.asarray([index[y] for y, _ in added], dtype=np.int64)
            sums += self._score_sums(new, new_owners, labels, every)
            x = sparse.vstack([x, new], format="csr")
            owners = np.concatenate([owners, new_owners])
        return _StoredScores(labels, owners, x, sums)

    def _score_sums(self, x: sparse.csr_matrix, owners: np.ndarray, labels: Sequence[str], columns: list[int]) -> np.ndarray:
        """The four sums of :class:`_StoredScores` of the texts ``x`` (of labels ``owners``)
        for ``labels[k]``, ``k`` in ``columns``; scored a block of texts at a time, so no
        texts × labels matrix is held whole."""
        sums = np.zeros((4, len(columns)))
        if not columns or not x.shape[0]:
            return sums
        if len(columns) == len(labels) and not self.weights.split_names and self._order == list(labels):
            scored = self._lex_matrix  # the same rows, stacked by _matrices for this query already
        else:
            scored = sparse.vstack([self._label_rows(labels[k]).scored for k in columns], format="csr").T.tocsr()
        position = np.full(len(labels), -1)
        position[columns] = np.arange(len(columns))
        for start in range(0, x.shape[0], _SCORE_BLOCK):
            scores = np.asarray((x[start : start + _SCORE_BLOCK] @ scored).todense())
            sums[0] += scores.sum(axis=0)
            sums[1] += np.square(scores).sum(axis=0)
            mine = position[owners[start : start + _SCORE_BLOCK]]
            rows = np.nonzero(mine >= 0)[0]
            own = scores[rows, mine[rows]]  # each text's score for its own label, where scored
            sums[2] += np.bincount(mine[rows], weights=own, minlength=len(columns))
            sums[3] += np.bincount(mine[rows], weights=np.square(own), minlength=len(columns))
        return sums

    def _background_of(self, labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Per label, the mean of its lexical score over the stored texts of the other labels
        and the factor ``median sd / sd`` that standardises it (``None`` with fewer than two
        labels' texts). A label's sd is floored at a tenth of the median, so a label that shares
        almost no term with any other's texts does not get an unbounded scale."""
        stored = self._scores = self._stored_scores(labels)
        owner = stored.owners
        if len(np.unique(owner)) < 2:
            return None
        total, total_sq, own, own_sq = stored.sums
        others = len(owner) - np.bincount(owner, minlength=len(labels))
        mean = (total - own) / others
        var = (total_sq - own_sq) / others - np.square(mean)
        sd = np.sqrt(np.maximum(var, 0.0))
        typical = float(np.median(sd))
        if typical <= 0:
            return None
        return mean, typical / np.maximum(sd, 0.1 * typical)

    def components(
        self,
        labels: Sequence[str],
        lex: sparse.csr_matrix,
        dense: np.ndarray | None,
        graph: Mapping[str, float],
        terms: Collection[str] = (),
        exclude: Mapping[str, float] | None = None,
    ) -> dict[str, np.ndarray]:
        """Each component's score of every label (arrays in ``labels`` order); ``terms`` are
        the text's tokens (for ``name_match`` and ``name_words``). ``exclude`` maps labels
        whose profiles hold this very text (online-indexed) onto its weight there: those labels
        are scored without it (leave-one-out), so a text's own pseudo-label is no evidence for
        it."""
        lex_m, dense_m = self._matrices(labels)
        split = self.weights.split_names
        w = self.weights.name_weight
        lexical = np.asarray((lex @ lex_m).todense()).ravel()
        if split and self._name_lex_matrix is not None:
            lexical = lexical + w * np.asarray((lex @ self._name_lex_matrix).todense()).ravel()
        out = {"lexical": lexical}
        raw = vector = None
        if dense is not None and dense_m is not None:
            raw = np.asarray(dense, dtype=np.float64)
            n = np.linalg.norm(raw) if split else 0.0
            vector = raw / n if n else raw  # unit only when names are split
            out["dense"] = dense_m @ vector
            if split and self._name_dense_matrix is not None:
                out["dense"] = out["dense"] + w * (self._name_dense_matrix @ vector)
        for y, weight in (exclude or {}).items():
            if y not in self.profiles or weight <= 0:
                continue
            k = self._order.index(y)
            p = self.profiles[y]
            row = self._lex_row(p, p.lex_sum - weight * lex, p.weight - weight)
            out["lexical"][k] = (lex @ row.T).toarray()[0, 0] + (
                w * (lex @ p.name_lex.T).toarray()[0, 0] if split and p.name_lex is not None else 0.0
            )
            if raw is not None and vector is not None and p.dense_sum is not None:
                left = p.dense_sum - weight * raw if p.weight - weight > 1e-9 else None
                drow = self._dense_row(p, left)
                out["dense"][k] = (0.0 if drow is None else float(drow @ vector)) + (
                    w * float(p.name_dense @ vector) if split and p.name_dense is not None else 0.0
                )
        out["graph"] = np.array([graph.get(y, 0.0) for y in labels])
        if self.weights.name_match:
            share = np.zeros(len(labels))
            for term in set(terms):
                for k, part in self._term_index.get(term, ()):
                    share[k] += part
            padded = f" {' '.join(terms)} "
            phrase = np.array([
                bool(p.name_phrase) and share[k] > 0 and p.name_phrase in padded
                for k, p in enumerate(self.profiles[y] for y in labels)
            ], dtype=np.float64)
            out["name_words"] = share + phrase
            out["name_match"] = self._specific((share > 1.0 - 1e-9) + phrase, labels)
        if self.weights.nearest_example and self._examples is not None:
            x, owners = self._examples
            nearest = np.zeros(len(labels))
            np.maximum.at(nearest, owners, np.asarray((lex @ x).todense()).ravel())
            out["nearest_example"] = nearest
        return out

    def _specific(self, match: np.ndarray, labels: Sequence[str]) -> np.ndarray:
        """``match`` with each named label's value scaled by its name's phrase IDF over the
        largest among the named labels (unchanged when the text names one label or none)."""
        named = np.nonzero(match > 0)[0]
        if len(named) < 2:
            return match
        spec = np.array([self.space.phrase_idf(self.profiles[labels[int(k)]].name_phrase.strip()) for k in named])
        out = match.copy()
        out[named] *= spec / spec.max()
        return out

    def standardised(self, components: Mapping[str, np.ndarray]) -> dict[str, np.ndarray] | None:
        """``components`` with the lexical score standardised against each label's background
        (``None`` when ``background`` is off or there is no background yet). Call after
        :meth:`components` for the same labels."""
        if self._background is None:
            return None
        mean, scale = self._background
        return {**components, "lexical": (components["lexical"] - mean) * scale}

    def cut_probabilities(self, components: Mapping[str, np.ndarray]) -> np.ndarray:
        """The probabilities candidates are cut from: the :data:`CUT` components, with the
        lexical one :meth:`standardised` when there is a background."""
        return self.probabilities(self.standardised(components) or components, CUT)

    def probabilities(self, components: Mapping[str, np.ndarray], use: Mapping[str, str] = CHOICE) -> np.ndarray:
        """Softmax of the weighted sum of the components ``use`` names (each weighted by the
        weight it maps to), at the calibrated temperature."""
        w = self.weights
        total = sum(getattr(w, use[name]) * values for name, values in components.items() if name in use)
        z = np.asarray(total, dtype=np.float64) / w.temperature
        z = z - z.max()
        e = np.exp(z)
        return e / e.sum()


def graph_strength(
    terminals: Mapping[str, float],
    links: Mapping[str, Mapping[str, float]],
    n_labels: int,
) -> dict[str, float]:
    """The graph component: for each label, ``Σ_t s_t · spec(t) · (1 − w(t, y))`` over the
    terminals ``t`` linked to it, divided by ``Σ_t s_t · spec(t)``; ``s_t`` is how strongly the
    text holds ``t`` (1 for an exact match, the cosine for an embedding link), ``links[t]`` maps
    the labels ``t`` is linked to onto the edge weight, and
    ``spec(t) = ln(1 + L / labels(t)) / ln(1 + L)`` is 1 for a keyword of one label and falls
    towards 0 for a keyword of every label."""
    if not terminals or n_labels < 1:
        return {}
    base = math.log(1 + n_labels)
    scores: dict[str, float] = {}
    total = 0.0
    for t, strength in terminals.items():
        linked = links.get(t, {})
        if not linked:
            continue
        spec = math.log(1 + n_labels / len(linked)) / base if base else 1.0
        total += strength * spec
        for y, weight in linked.items():
            scores[y] = scores.get(y, 0.0) + strength * spec * (1.0 - weight)
    if total <= 0:
        return {}
    return {y: v / total for y, v in scores.items()}


__all__ = ["CHOICE", "CUT", "DIM", "LabelScorer", "LexicalSpace", "Profile", "Weights", "graph_strength"]
