"""Model-free extraction: noun-phrase-like names and their co-occurrence, in the spirit of
GraphRAG's "fast" indexing method.

Everything here is regular expressions and small word lists, so it is deterministic, needs no
download and runs anywhere. It is tuned for English and is noisier than a model: treat its graph
as a cheap scaffold (communities, keyword routing, tests), not as curated knowledge.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError
from rhizome.core.extraction.llm import Progress
from rhizome.core.extraction.schema import (
    Extraction,
    check_chunks,
    clean_name,
    entity_key,
    new_entity,
    new_relation,
)
from rhizome.core.progress import phase
from rhizome.core.text import ABBREVIATIONS, trimmed_sentences
from rhizome.core.types import Chunk

Window = Literal["chunk", "sentence"]

COOCCURRENCE = "cooccurrence"
"""``Relation.metadata["kind"]`` of relations that only say two entities appear together."""


NOUN_PHRASE = "NOUN_PHRASE"

# --------------------------------------------------------------------------------------------
# word lists (lower case)
# --------------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


STOPWORDS = frozenset(
    _words(
        """
    a an the and or but nor so yet for of in on at to from by with without within into onto over
    under above below between among through during before after since until till about against
    across along around behind beyond despite except inside outside near off out up down upon via
    per than as if then else when whenever while where wherever whereas whether because although
    though unless once
    i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves one ones
    this that these those who whom whose which what whatever whoever
    is am are was were be been being have has had having do does did doing done will would shall
    should can could may might must ought need
    not no yes all any both each every either neither few many much more most other others
    another some such own same several
    very too also just only even still already again ever never always often sometimes usually
    here there now today yesterday tomorrow tonight however therefore thus hence meanwhile
    moreover furthermore indeed instead otherwise perhaps maybe nevertheless nonetheless later
    soon first second third next finally lastly overall meanwhile accordingly besides
    said says say according like unlike how why
    additionally specifically notably importantly similarly consequently conversely likewise
    namely generally typically currently recently clearly ultimately initially subsequently
    table tables figure figures fig appendix section chapter equation eq page example
    mr mrs ms
    """
    )
)
"""Function words, pronouns, sentence openers and document-structure words ("Table", "Figure").
They end candidate phrases and are trimmed from the edges of capitalised runs ("In Paris" →
"Paris")."""

CONNECTORS = frozenset(
    {
        "of",
        "de",
        "du",
        "da",
        "del",
        "della",
        "der",
        "den",
        "van",
        "von",
        "la",
        "le",
        "the",
        "for",
        "&",
    }
)
"""Lower-case words allowed inside a capitalised name ("Bank of England", "Ludwig van
Beethoven"), at most two in a row and only between capitalised words."""

CALENDAR = frozenset(
    _words(
        """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday"""
    )
)
"""Runs made only of these are dates, not entities."""

HONORIFICS = frozenset(
    {"mr", "mrs", "ms", "mx", "miss", "dr", "prof", "professor", "sir", "dame", "rev"}
)
"""Removed from the front of a name, which is then typed PERSON ("Dr. Ada Lovelace" →
"Ada Lovelace")."""

PERSON_TITLES = frozenset(
    _words(
        """king queen prince princess emperor empress president senator governor mayor judge captain
    general colonel lieutenant sergeant admiral pope bishop cardinal saint lord lady duke duchess
    count countess baron chancellor"""
    )
)
"""Kept as part of the name, and type it PERSON ("Queen Victoria")."""


ORG_LAST = frozenset(
    _words(
        """inc corp corporation company co ltd llc plc gmbh ag sa university institute institution
    foundation agency association bank group ministry department council committee commission
    party society college school academy laboratory laboratories labs lab museum hospital
    church army navy federation union club team press office bureau authority board trust
    fund organization organisation alliance consortium network studios records"""
    )
)
ORG_HEAD = frozenset(
    _words(
        """university institute bank ministry department museum college school academy church
    bureau office board house"""
    )
)
"""An organisation when followed by "of" ("University of Oxford")."""

LOC_LAST = frozenset(
    _words(
        """city town village river mountain mountains lake ocean sea island islands valley county
    province street avenue road boulevard bay desert forest coast peninsula canyon strait gulf
    falls harbor harbour square district region republic kingdom states territory
    continent hills plateau"""
    )
)
LOC_FIRST = frozenset({"mount", "lake", "fort", "cape", "isle", "gulf", "port"})

EVENT_LAST = frozenset(
    _words(
        """war battle revolution olympics championship championships cup summit conference festival
    election elections crisis massacre treaty expedition"""
    )
)

CONCEPT_LAST = frozenset(
    _words(
        """theory theorem principle hypothesis paradox conjecture algorithm equation effect
    syndrome"""
    )
)

_COMMON_SUFFIXES = (
    "ing",
    "ed",
    "ers",
    "ies",
    "tion",
    "tions",
    "ment",
    "ments",
    "ness",
    "ists",
)
_ROMAN = re.compile(r"^(?:[IVXLC]+|\d+)$")

# --------------------------------------------------------------------------------------------
# sentences and tokens
# --------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+(?:['’\-]\w+)*|&")
_INITIAL_GAP = re.compile(r"^\.\s*$")
_POSSESSIVE = ("'s", "’s")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text`` with whitespace trimmed, Markdown headings left out (a title
    is no statement about the entities it names; see :func:`rhizome.core.text.trimmed_sentences`)."""
    return trimmed_sentences(text, headings=False)


@dataclass
class _Token:
    text: str
    start: int
    end: int

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def possessive(self) -> bool:
        return self.text.endswith(_POSSESSIVE)

    @property
    def bare(self) -> str:
        return self.text[:-2] if self.possessive else self.text

    @property
    def is_acronym(self) -> bool:
        letters = [c for c in self.bare if c.isalpha()]
        return len(letters) >= 2 and all(c.isupper() for c in letters)

    @property
    def is_capitalised(self) -> bool:
        return self.text[:1].isalpha() and self.text[:1].isupper()


@dataclass
class _Mention:
    key: str
    display: str
    type: str
    kind: str
    """``"name"`` (capitalised run), ``"acronym"`` or ``"phrase"`` (lower-case noun phrase)."""
    sentence: int


@dataclass
class _Vocabulary:
    """Batch-wide evidence used to judge sentence-initial capitals."""

    lower: set[str] = field(default_factory=set)
    mid_caps: set[str] = field(default_factory=set)


# --------------------------------------------------------------------------------------------
# the extractor
# --------------------------------------------------------------------------------------------


class OfflineExtractor:
    """Extracts names and co-occurrence relations with rules only (no model, no downloads).

    Entities
        Runs of capitalised words on one line, which may contain up to two lower-case
        connectors between capitalised words ("Bank of England") and initials with full stops
        ("J. R. R. Tolkien"), plus acronyms ("NASA"). Function words and document-structure
        words ("Table", "Figure") are trimmed from the ends of a run; runs longer than
        ``max_phrase_words`` words are dropped (they are usually headings or titles); a
        possessive ends a run ("Google's" → "Google"). A capitalised word that opens a sentence
        or a line is dropped when the batch suggests it is an ordinary word: it is a function
        word, or it also occurs in lower case, or (alone in its run) it has a common-word ending
        such as "-ing" or "-tion" — unless it also appears capitalised elsewhere in a sentence.
        With ``common_phrases=True`` runs of 2 to ``max_phrase_words`` lower-case content words
        between function words and punctuation are added too ("graph neural network"); they are
        much noisier, and carry ``metadata["salience"] = 0.5`` instead of 1.0.

    Types
        Given only when a cue word makes it plain: an honorific or title (PERSON), a last word
        such as "University" or "Inc", or "University of …" (ORGANIZATION), "City", "River",
        "Mount …" (LOCATION), "War", "Olympics" (EVENT), "Theory", "Algorithm" (CONCEPT);
        everything else is ``NOUN_PHRASE``. Within one call the most frequent cue type of a name
        applies to all its mentions.

    Descriptions
        Extractive: the distinct sentences of the chunk that mention the entity (at most
        ``max_description_sentences``), joined by a space.

    Relations
        Two entities co-occur when they appear in the same chunk (``window="chunk"``, as in
        GraphRAG's fast method) or the same sentence (``window="sentence"``). Each chunk gives
        one undirected relation per co-occurring pair, ``weight`` = the number of co-occurrences
        in that chunk (1 with the chunk window, the number of shared sentences with the sentence
        window), ``metadata["kind"] = "cooccurrence"`` and a description made of the shared
        sentences, if any. ``metadata["pmi"]`` and ``metadata["npmi"]`` hold PMI-style weights
        over all chunks of the call (see :func:`pmi_values`);
        merging recomputes them over the merged graph, and ``weight`` stays the count, so it
        adds up across chunks.

    Parameters
    ----------
    min_frequency:
        Mentions across all chunks of one call below which a name is dropped (GraphRAG prunes
        its noun graph with a minimum node frequency of 2 after extraction; 1 keeps everything).
    max_phrase_words:
        Longest name or phrase, in words (connectors and initials count).
    window:
        ``"chunk"`` or ``"sentence"``: the span within which two names are related.
    common_phrases:
        Also extract lower-case noun-phrase-like runs (lower weight, noisy).
    max_description_sentences:
        Sentences kept per entity and per relation in each chunk.
    per_document:
        Judge the chunks of each document on their own (the evidence about sentence-initial
        capitals comes from the texts of one call): a document's records then do not depend on
        which other documents share its insert batch.
    progress:
        Called as ``progress(done, total)`` after each chunk.
    """

    spec = "offline"

    def __init__(
        self,
        min_frequency: int = 1,
        max_phrase_words: int = 4,
        window: Window = "chunk",
        *,
        common_phrases: bool = False,
        max_description_sentences: int = 3,
        per_document: bool = False,
        progress: Progress | None = None,
    ) -> None:
        if min_frequency < 1:
            raise ConfigurationError(f"min_frequency must be at least 1, got {min_frequency}")
        if max_phrase_words < 1:
            raise ConfigurationError(f"max_phrase_words must be at least 1, got {max_phrase_words}")
        if window not in ("chunk", "sentence"):
            raise ConfigurationError(f"window must be 'chunk' or 'sentence', got {window!r}")
        if max_description_sentences < 0:
            raise ConfigurationError("max_description_sentences cannot be negative")
        self.min_frequency = min_frequency
        self.max_phrase_words = max_phrase_words
        self.window: Window = window
        self.common_phrases = common_phrases
        self.max_description_sentences = max_description_sentences
        self.per_document = per_document
        self.progress = progress

    # -- public API ------------------------------------------------------------------------------
    async def aextract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """Extract every chunk; results are in input order. (The work is CPU-bound and quick, so
        it runs inline; the coroutine exists for interface parity with the LLM extractor.)"""
        chunks = check_chunks(chunks)
        groups: dict[str, list[Chunk]] = defaultdict(list)
        for chunk in chunks:
            groups[chunk.document_id if self.per_document else ""].append(chunk)
        found: dict[str, Extraction] = {}
        with phase("extracting entities (offline)", len(chunks), "chunk") as step:
            for group in groups.values():
                found.update((e.chunk_id, e) for e in self._extract(group))
                step.advance(len(group))
        return [found[c.id] for c in chunks]

    def extract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """Synchronous :meth:`aextract`."""
        return run_sync(self.aextract(chunks))

    def find_mentions(self, text: str) -> list[tuple[str, str, str]]:
        """The ``(display name, type, kind)`` of each name mention in one text, in order —
        handy for checking the rules on a sentence."""
        tokenised = _sentence_tokens(text, split_sentences(text))
        vocab = self._vocabulary([tokenised])
        return [(m.display, m.type, m.kind) for m in self._mentions(text, tokenised, vocab)]

    # -- implementation --------------------------------------------------------------------------
    def _extract(self, chunks: list[Chunk]) -> list[Extraction]:
        # every chunk is split and tokenised once: the vocabulary pass and the mention pass share it
        spans = [split_sentences(c.text) for c in chunks]
        tokenised = [_sentence_tokens(c.text, sentences) for c, sentences in zip(chunks, spans)]
        vocab = self._vocabulary(tokenised)
        per_chunk: list[tuple[Chunk, list[tuple[int, int]], list[_Mention]]] = []
        frequency: Counter[str] = Counter()
        cue_types: dict[str, Counter[str]] = defaultdict(Counter)
        for chunk, sentences, tokens in zip(chunks, spans, tokenised):
            mentions = self._mentions(chunk.text, tokens, vocab)
            per_chunk.append((chunk, sentences, mentions))
            for m in mentions:
                frequency[m.key] += 1
                if m.type != NOUN_PHRASE:
                    cue_types[m.key][m.type] += 1
        keep = {k for k, n in frequency.items() if n >= self.min_frequency}
        resolved = {k: _most_common(c) for k, c in cue_types.items()}

        results: list[Extraction] = []
        total = len(per_chunk)
        for done, (chunk, sentences, mentions) in enumerate(per_chunk, start=1):
            results.append(
                self._chunk_extraction(
                    chunk, sentences, [m for m in mentions if m.key in keep], resolved
                )
            )
            if self.progress is not None:
                self.progress(done, total)

        # PMI-style weights over this call's chunks, stamped on the raw relations
        cited: dict[str, set[str]] = defaultdict(set)
        pairs: dict[str, tuple[str, str, float]] = {}
        for extraction in results:
            for entity in extraction.entities:
                cited[entity.id].add(extraction.chunk_id)
            for relation in extraction.relations:
                held = pairs.get(relation.id)
                summed = relation.weight + (held[2] if held else 0.0)
                pairs[relation.id] = (relation.source, relation.target, summed)
        n_chunks = len({c.id for c in chunks})
        weights = pmi_values({k: len(v) for k, v in cited.items()}, n_chunks, pairs)
        for extraction in results:
            for relation in extraction.relations:
                pmi, npmi = weights[relation.id]
                relation.metadata["pmi"] = pmi
                relation.metadata["npmi"] = npmi
        return results

    def _chunk_extraction(
        self,
        chunk: Chunk,
        sentences: list[tuple[int, int]],
        mentions: list[_Mention],
        resolved: dict[str, str],
    ) -> Extraction:
        text = chunk.text
        limit = self.max_description_sentences

        def sentence_text(i: int) -> str:
            start, end = sentences[i]
            return clean_name(text[start:end])

        first: dict[str, _Mention] = {}
        where: dict[str, list[int]] = defaultdict(list)
        for m in mentions:
            first.setdefault(m.key, m)
            if m.sentence not in where[m.key]:
                where[m.key].append(m.sentence)

        entities = []
        for key, m in first.items():
            picked = list(dict.fromkeys(sentence_text(i) for i in where[key][:limit]))
            entity = new_entity(
                m.display,
                chunk.id,
                type=resolved.get(key, m.type),
                description=" ".join(picked),
                kind=m.kind,
                salience=0.5 if m.kind == "phrase" else 1.0,
            )
            entity.descriptions = picked
            entities.append(entity)

        keys = list(first)
        pairs: dict[tuple[str, str], list[int]] = {}
        if self.window == "chunk":
            for i, a in enumerate(keys):
                for b in keys[i + 1 :]:
                    shared = sorted(set(where[a]) & set(where[b]))
                    pairs[(a, b)] = shared
        else:
            by_sentence: dict[int, list[str]] = defaultdict(list)
            for m in mentions:
                if m.key not in by_sentence[m.sentence]:
                    by_sentence[m.sentence].append(m.key)
            for s in sorted(by_sentence):
                present = by_sentence[s]
                for i, a in enumerate(present):
                    for b in present[i + 1 :]:
                        pair = (a, b) if (b, a) not in pairs else (b, a)
                        pairs.setdefault(pair, []).append(s)

        relations = []
        for (a, b), shared in pairs.items():
            picked = list(dict.fromkeys(sentence_text(i) for i in shared[:limit]))
            weight = 1.0 if self.window == "chunk" else float(len(shared))
            relation = new_relation(
                a,
                b,
                chunk.id,
                description=" ".join(picked),
                weight=weight,
                directed=False,
                kind=COOCCURRENCE,
                window=self.window,
            )
            relation.descriptions = picked
            relations.append(relation)
        return Extraction(
            chunk_id=chunk.id,
            entities=entities,
            relations=relations,
            metadata={"extractor": "offline", "window": self.window},
        )

    # -- mentions --------------------------------------------------------------------------------
    def _vocabulary(self, tokenised: Sequence[list[tuple[list[_Token], set[int]]]]) -> _Vocabulary:
        """The lower-case words and the capitalised words not opening a sentence, over the
        sentence tokens of every text (see :func:`_sentence_tokens`)."""
        vocab = _Vocabulary()
        for sentences in tokenised:
            for tokens, initial in sentences:
                for i, tok in enumerate(tokens):
                    if tok.text.islower():
                        vocab.lower.add(tok.text)
                    elif i not in initial and tok.is_capitalised:
                        vocab.mid_caps.add(tok.text)
        return vocab

    def _mentions(
        self, text: str, sentences: list[tuple[list[_Token], set[int]]], vocab: _Vocabulary
    ) -> list[_Mention]:
        mentions: list[_Mention] = []
        for s_index, (tokens, initial) in enumerate(sentences):
            if not tokens:
                continue
            found: list[tuple[int, _Mention]] = []
            heading = len(tokens) >= 3 and all(
                t.is_acronym for t in tokens if any(c.isalpha() for c in t.text)
            )
            if not heading:
                for run in _capitalised_runs(text, tokens):
                    mention = self._name(text, tokens, run, initial, s_index, vocab)
                    if mention is not None:
                        found.append((run[0], mention))
            if self.common_phrases:
                for run in self._lower_runs(text, tokens):
                    words = [tokens[i].text for i in run]
                    display = " ".join(words)
                    found.append(
                        (
                            run[0],
                            _Mention(entity_key(display), display, NOUN_PHRASE, "phrase", s_index),
                        )
                    )
            found.sort(key=lambda pair: pair[0])
            mentions.extend(m for _, m in found)
        return mentions

    def _name(
        self,
        text: str,
        tokens: list[_Token],
        run: list[int],
        initial: set[int],
        s_index: int,
        vocab: _Vocabulary,
    ) -> _Mention | None:
        run = list(run)
        person = False
        # honorifics are dropped and make the name a person
        while run and tokens[run[0]].bare.lower() in HONORIFICS:
            person = True
            run.pop(0)
        # trim function words and connectors from both ends
        while run and _is_edge_word(tokens[run[0]]):
            run.pop(0)
        while run and _is_edge_word(tokens[run[-1]]):
            run.pop()
        # a capitalised word that only opens a sentence or a line is probably an ordinary word
        while (
            run
            and run[0] in initial
            and not person
            and _looks_ordinary(tokens[run[0]], len(run), vocab)
        ):
            run.pop(0)
            while run and _is_edge_word(tokens[run[0]]):
                run.pop(0)
        if not run or len(run) > self.max_phrase_words:
            return None
        words = [tokens[i] for i in run]
        if all(w.lower in CALENDAR for w in words):
            return None
        if not any(len(w.bare) >= 2 and (w.is_capitalised or w.is_acronym) for w in words):
            return None
        display = clean_name(text[words[0].start : words[-1].start + len(words[-1].bare)])
        key = entity_key(display)
        if not key:
            return None
        kind = "acronym" if len(words) == 1 and words[0].is_acronym else "name"
        return _Mention(key, display, "PERSON" if person else _cue_type(words), kind, s_index)

    def _lower_runs(self, text: str, tokens: list[_Token]) -> list[list[int]]:
        runs: list[list[int]] = []
        current: list[int] = []
        for i, tok in enumerate(tokens):
            content = (
                tok.text.isalpha()
                and tok.text.islower()
                and len(tok.text) >= 3
                and tok.text not in STOPWORDS
                and not tok.text.endswith("ly")
            )
            joined = bool(current) and text[tokens[current[-1]].end : tok.start].isspace()
            if content and (not current or joined):
                current.append(i)
                continue
            if 2 <= len(current) <= self.max_phrase_words:
                runs.append(current)
            current = [i] if content else []
        if 2 <= len(current) <= self.max_phrase_words:
            runs.append(current)
        return runs


def _sentence_tokens(text: str, sentences: list[tuple[int, int]]) -> list[tuple[list[_Token], set[int]]]:
    """:func:`_tokens` of each sentence span of ``text``, in order."""
    return [_tokens(text, start, end) for start, end in sentences]


def _tokens(text: str, start: int, end: int) -> tuple[list[_Token], set[int]]:
    """The tokens of ``text[start:end]`` and the indices of those that open the sentence or a
    line (where capitals say nothing about names)."""
    tokens = [_Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text, start, end)]
    initial = {0} if tokens else set()
    for i in range(1, len(tokens)):
        if "\n" in text[tokens[i - 1].end : tokens[i].start]:
            initial.add(i)
    return tokens, initial


def _capitalised_runs(text: str, tokens: list[_Token]) -> list[list[int]]:
    """Index runs of name-like tokens joined by plain spaces (or by the full stop of an
    initial or honorific), with up to two connectors between capitalised words."""
    runs: list[list[int]] = []
    current: list[int] = []
    pending: list[int] = []

    def close() -> None:
        nonlocal current, pending
        if current:
            runs.append(current)
        current, pending = [], []

    for i, tok in enumerate(tokens):
        previous = tokens[(pending or current)[-1]] if (pending or current) else None
        joined = previous is not None and _joins(text, previous, tok)
        if tok.is_capitalised or tok.is_acronym:
            if current and joined:
                current.extend(pending)
                current.append(i)
                pending = []
            else:
                close()
                current = [i]
            if tok.possessive:
                close()
        elif current and joined and (tok.lower in CONNECTORS) and len(pending) < 2:
            pending.append(i)
        else:
            close()
    close()
    return runs


def _joins(text: str, previous: _Token, token: _Token) -> bool:
    gap = text[previous.end : token.start]
    if gap == " " or (gap and gap.isspace() and "\n" not in gap):
        return True
    short = len(previous.text) == 1 and previous.text.isupper()
    return bool(_INITIAL_GAP.match(gap)) and (short or previous.lower in ABBREVIATIONS)


def _is_edge_word(tok: _Token) -> bool:
    if tok.is_acronym:
        return False
    return tok.lower in STOPWORDS or tok.lower in CONNECTORS


def _looks_ordinary(tok: _Token, run_length: int, vocab: _Vocabulary) -> bool:
    if tok.is_acronym or tok.text in vocab.mid_caps:
        return False
    lower = tok.bare.lower()
    if lower in STOPWORDS or lower in vocab.lower:
        return True
    if run_length != 1:
        return False
    # "ly" only on longer words: "Additionally" is an adverb, "Italy" and "Emily" are names
    return lower.endswith(_COMMON_SUFFIXES) or (lower.endswith("ly") and len(lower) >= 7)


def _cue_type(words: list[_Token]) -> str:
    lowered = [w.bare.lower() for w in words]
    core = list(lowered)
    while len(core) > 1 and _ROMAN.match(words[len(core) - 1].bare):
        core.pop()  # "World War II" → look at "war"
    last, head = core[-1], lowered[0]
    if head in PERSON_TITLES and len(words) > 1:
        return "PERSON"
    if last in ORG_LAST or any(
        w in ORG_HEAD and nxt == "of" for w, nxt in zip(lowered, lowered[1:])
    ):
        return "ORGANIZATION"
    if last in LOC_LAST or (head in LOC_FIRST and len(words) > 1):
        return "LOCATION"
    if last in EVENT_LAST and len(words) > 1:
        return "EVENT"
    if last in CONCEPT_LAST and len(words) > 1:
        return "CONCEPT"
    return NOUN_PHRASE


def _most_common(counter: Counter[str]) -> str:
    return counter.most_common(1)[0][0]


def pmi_values(
    frequency: Mapping[str, int],
    n_chunks: int,
    pairs: Mapping[str, tuple[str, str, float]],
) -> dict[str, tuple[float, float]]:
    """PMI-style weights of co-occurrence pairs, as ``{relation id: (pmi, npmi)}``: ``frequency``
    maps entity ids to the number of chunks citing them (``f``), ``n_chunks`` is the number of
    distinct chunks (``N``), ``pairs`` maps relation ids to ``(source, target, count)`` (``w``);
    ``F`` and ``W`` are the sums of ``f`` and of ``w``.

    ``pmi`` is the frequency-weighted variant GraphRAG's fast method puts on its noun graph
    (multiplying by the joint probability damps the inflated PMI of pairs seen once)::

        pmi(x, y) = p(x, y) * log2(p(x, y) / (p(x) * p(y)))   with p(x) = f(x) / F, p(x, y) = w / W

    ``npmi`` is the classic normalised PMI over chunks, in [-1, 1] (1: the two always appear
    together; 0: independent; negative: they avoid each other)::

        npmi(x, y) = log2(q(x, y) / (q(x) * q(y))) / -log2(q(x, y))   with q(x) = f(x) / N,
                     q(x, y) = min(w, f(x), f(y)) / N                  (1.0 when q(x, y) = 1)

    (With a sentence window ``w`` counts sentences, hence the cap at the entity frequencies.)"""
    freq = {k: max(1, v) for k, v in frequency.items()}
    for source, target, _ in pairs.values():
        freq.setdefault(source, 1)
        freq.setdefault(target, 1)
    total_f = float(sum(freq.values()))
    total_w = float(sum(max(w, 0.0) for _, _, w in pairs.values()))
    n = float(max(1, n_chunks))
    out: dict[str, tuple[float, float]] = {}
    for rid, (source, target, weight) in pairs.items():
        if total_w <= 0 or weight <= 0:
            out[rid] = (0.0, 0.0)
            continue
        f_x, f_y = freq[source], freq[target]
        p_xy = weight / total_w
        pmi = p_xy * math.log2(p_xy / ((f_x / total_f) * (f_y / total_f)))
        q_xy = min(weight, f_x, f_y) / n
        npmi = 1.0
        if q_xy < 1.0:
            npmi = math.log2(q_xy / ((f_x / n) * (f_y / n))) / -math.log2(q_xy)
        out[rid] = (pmi, max(-1.0, min(1.0, npmi)))
    return out


__all__ = ["COOCCURRENCE", "NOUN_PHRASE", "STOPWORDS", "OfflineExtractor", "Window", "pmi_values", "split_sentences"]
