"""Entity resolution beyond exact names: a shared service of the methods that merge entities.

GraphRAG and LightRAG merge only *identical* names (LightRAG's reference code: the same
upper-cased name), so "IBM", "I.B.M." and "International Business Machines" become three nodes —
a frequent complaint about the reference implementations. Here a new name joins an entity when
one of these holds, in this order:

1. **Same surface form** (case-insensitive, the kernel's :func:`entity_key`) as a name seen
   before: it is that entity, whatever the type (the paper's rule).
2. **Same normalised name** (:func:`normalise_name`: accents, case, punctuation, possessive "'s",
   dotted letters, a leading "the" and a trailing company suffix removed) and compatible types.
3. **Acronym** (:func:`is_acronym`) equal to the initials of the other name (:func:`initials`),
   with compatible types — a candidate.
4. **Embedding similarity** of the two names at or above ``threshold`` with compatible types — a
   candidate.

Candidates (3 and 4) are confirmed by the chat model when one is given and ``confirm`` is on
(one call per ``pairs_per_call`` pairs); offline they are accepted. Types are compatible when
equal (with a few synonyms such as GEO/LOCATION) or when either is empty or a catch-all type.
Resolution never merges two entities that are already stored: a new name joins at most one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import Field

from rhizome.core.extraction.schema import Numbers, clean_name, entity_key, normalise_type
from rhizome.core.models.lenient import LenientModel

_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_INNER_DOT = re.compile(r"(?<=\w)\.(?=\w)")
_POSSESSIVE = re.compile(r"['’]s\b")
SUFFIXES = frozenset(["inc", "incorporated", "corp", "corporation", "co", "ltd", "limited", "llc", "plc", "gmbh", "ag", "sa"])
CONNECTORS = frozenset(["of", "the", "and", "for", "de", "la", "le", "du", "der", "von", "van", "in", "on", "at", "&"])
CATCH_ALL_TYPES = frozenset({"", "UNKNOWN", "NOUN_PHRASE", "OTHER", "MISC"})
TYPE_SYNONYMS = {
    "GEO": "LOCATION",
    "PLACE": "LOCATION",
    "GPE": "LOCATION",
    "COUNTRY": "LOCATION",
    "CITY": "LOCATION",
    "ORG": "ORGANIZATION",
    "ORGANISATION": "ORGANIZATION",
    "COMPANY": "ORGANIZATION",
    "INSTITUTION": "ORGANIZATION",
    "PER": "PERSON",
    "PEOPLE": "PERSON",
}


def normalise_name(name: str) -> str:
    """The comparison form of a name (see the module docstring)."""
    text = unicodedata.normalize("NFKD", clean_name(name))
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = _POSSESSIVE.sub("", text)
    text = _INNER_DOT.sub("", text).replace("&", " and ")
    words = [w.casefold() for w in _WORDS.findall(text)]
    merged: list[str] = []
    letters_run = False  # "j r r tolkien" → "jrr tolkien"
    for word in words:
        if len(word) == 1 and word.isalpha():
            if letters_run:
                merged[-1] += word
            else:
                merged.append(word)
            letters_run = True
        else:
            merged.append(word)
            letters_run = False
    if len(merged) > 1 and merged[0] == "the":
        merged = merged[1:]
    while len(merged) > 1 and merged[-1] in SUFFIXES:
        merged = merged[:-1]
    return " ".join(merged)


def is_acronym(name: str) -> bool:
    """``IBM``, ``I.B.M.``, ``U.S.``: 2-8 letters, all upper case, one token or dotted."""
    text = clean_name(name)
    letters = [c for c in text if c.isalpha()]
    if not 2 <= len(letters) <= 8 or not all(c.isupper() for c in letters):
        return False
    stripped = text.replace(".", "").replace(" ", "") if "." in text else text
    return " " not in stripped and all(c.isalnum() for c in stripped)


def initials(name: str) -> str:
    """Lower-case initials of a name of two or more words, connectors skipped
    ("Massachusetts Institute of Technology" → "mit"); empty for shorter names."""
    text = unicodedata.normalize("NFKD", clean_name(name))
    text = "".join(c for c in text if not unicodedata.combining(c))
    words = [w for w in _WORDS.findall(_POSSESSIVE.sub("", text)) if w.casefold() not in CONNECTORS]
    while len(words) > 1 and words[-1].casefold() in SUFFIXES:
        words = words[:-1]
    if len(words) < 2:
        return ""
    return "".join(w[0] for w in words).casefold()


def acronym_key(name: str) -> str:
    """The letters of an acronym in lower case (``"I.B.M."`` → ``"ibm"``), else empty."""
    return "".join(c for c in clean_name(name) if c.isalnum()).casefold() if is_acronym(name) else ""


def canonical_type(value: str) -> str:
    value = normalise_type(value)
    return TYPE_SYNONYMS.get(value, value)


def types_compatible(a: str, b: str) -> bool:
    a, b = canonical_type(a), canonical_type(b)
    return a == b or a in CATCH_ALL_TYPES or b in CATCH_ALL_TYPES


RESOLUTION_SYSTEM = "You decide whether two names refer to the same real-world entity. Answer with JSON only."

_RESOLUTION = """For each numbered pair below, say whether both names refer to the same
real-world entity (the same person, organisation, place, event or thing). Spelling variants,
abbreviations and full names of one entity are the same; related but different entities (a
company and its founder, a city and its football club) are not.

{pairs}

Reply with one JSON object: "same" is the list of the numbers of the pairs that are the same."""


def resolution_prompt(pairs: Sequence[tuple[str, str, str, str]]) -> str:
    """``pairs``: ``(name a, note a, name b, note b)``, notes being a type and a short
    description."""
    lines = [f"{i}. {a} ({na}) | {b} ({nb})" for i, (a, na, b, nb) in enumerate(pairs, start=1)]
    return _RESOLUTION.format(pairs="\n".join(lines))


class SamePairs(LenientModel):
    same: Numbers = Field(description="numbers of the pairs that name the same entity")


@dataclass
class NameItem:
    """One distinct new name to resolve: its key, display name, type and a description."""

    key: str
    name: str
    type: str = ""
    description: str = ""

    @property
    def norm(self) -> str:
        return normalise_name(self.name)


@dataclass
class Known:
    """A stored entity a new name may join."""

    id: str
    name: str
    type: str
    description: str = ""


@dataclass
class Lookup:
    """How the resolver sees the stored entities (the index provides these; tests may pass
    empty ones). Each returns stored entities matching the given keys."""

    by_key: Callable[[list[str]], dict[str, str]] = lambda keys: {}
    """Surface-form key → entity id, for names seen before."""
    by_norm: Callable[[list[str]], dict[str, list[Known]]] = lambda norms: {}
    by_initials: Callable[[list[str]], dict[str, list[Known]]] = lambda keys: {}
    """Acronym letters → stored entities whose (some) name has those initials."""
    by_acronym: Callable[[list[str]], dict[str, list[Known]]] = lambda keys: {}
    """Initials → stored entities whose (some) name is that acronym."""
    by_vector: Callable[[np.ndarray, int], list[list[tuple[Known, float]]]] = lambda vectors, k: [[] for _ in range(len(vectors))]


@dataclass
class Resolution:
    """The outcome: new key → entity id, and which rule merged what (for reports and tests)."""

    mapping: dict[str, str] = field(default_factory=dict)
    merges: list[tuple[str, str, str]] = field(default_factory=list)
    """``(new key, entity id, rule)`` for every name that joined another one."""
    rejected: list[tuple[str, str]] = field(default_factory=list)
    """Candidate pairs the model said are different."""
    calls: int = 0


class EntityResolver:
    """Maps new names to entities (see the module docstring).

    Parameters
    ----------
    threshold:
        Cosine similarity of two names' embeddings from which they are a candidate pair. 0.9 is
        conservative: with the offline hashing embedder only near-identical word sets reach it.
    acronyms:
        Whether acronym/initials matches are candidates.
    llm:
        A chat model to confirm candidate pairs, or ``None``.
    confirm:
        Ask the model about candidates (when there is one); otherwise candidates merge.
    pairs_per_call:
        Candidate pairs per confirmation call.
    neighbours:
        Stored names compared with each new name by embedding.
    """

    def __init__(
        self,
        *,
        threshold: float = 0.9,
        acronyms: bool = True,
        llm: Any = None,
        confirm: bool = True,
        pairs_per_call: int = 20,
        neighbours: int = 3,
    ) -> None:
        self.threshold = threshold
        self.acronyms = acronyms
        self.llm = llm
        self.confirm = confirm
        self.pairs_per_call = max(1, pairs_per_call)
        self.neighbours = max(1, neighbours)

    async def aresolve(
        self, items: Sequence[NameItem], lookup: Lookup | None = None, vectors: np.ndarray | None = None
    ) -> Resolution:
        """Resolve ``items`` (distinct keys, first-seen order). ``vectors``: their name embeddings
        (row per item), or ``None`` to skip the embedding rule."""
        lookup = lookup or Lookup()
        items = list(items)
        result = Resolution()
        n = len(items)
        parent = list(range(n))
        anchor: dict[int, str] = {}  # root → stored entity id

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        def union(i: int, j: int) -> bool:
            ri, rj = find(i), find(j)
            if ri == rj:
                return True
            ai, aj = anchor.get(ri), anchor.get(rj)
            if ai is not None and aj is not None and ai != aj:
                return False  # never merge two stored entities
            if rj < ri:
                ri, rj = rj, ri
                ai, aj = aj, ai
            parent[rj] = ri
            if ai is None and aj is not None:
                anchor[ri] = aj
            anchor.pop(rj, None)
            return True

        def attach(i: int, entity_id: str) -> bool:
            root = find(i)
            held = anchor.get(root)
            if held is not None and held != entity_id:
                return False
            anchor[root] = entity_id
            return True

        rule: dict[str, str] = {}
        # 1. surface forms seen before
        known_keys = lookup.by_key([it.key for it in items]) if items else {}
        fixed = set()
        for i, it in enumerate(items):
            if it.key in known_keys:
                attach(i, known_keys[it.key])
                fixed.add(i)
        # 2. normalised names, among new names and against stored ones
        norms = [it.norm for it in items]
        by_norm: dict[str, list[int]] = {}
        for i, norm in enumerate(norms):
            if norm:
                by_norm.setdefault(norm, []).append(i)
        stored_norm = lookup.by_norm([n_ for n_ in by_norm if any(i not in fixed for i in by_norm[n_])]) if by_norm else {}
        for norm, members in by_norm.items():
            for a_pos, i in enumerate(members):
                for j in members[:a_pos]:
                    if types_compatible(items[i].type, items[j].type) and union(j, i):
                        rule.setdefault(items[i].key, "normalised")
                        break
            for i in members:
                if i in fixed or anchor.get(find(i)) is not None:
                    continue
                for known in stored_norm.get(norm, []):
                    if types_compatible(items[i].type, known.type) and attach(i, known.id):
                        rule.setdefault(items[i].key, "normalised")
                        break
        # 3./4. candidates
        candidates: list[tuple[int, int | Known, str]] = []
        free = [i for i in range(n) if i not in fixed and anchor.get(find(i)) is None]
        if self.acronyms and free:
            acro = {i: acronym_key(items[i].name) for i in free}
            inits = {i: initials(items[i].name) for i in free}
            by_inits: dict[str, list[int]] = {}
            for i, value in inits.items():
                if value:
                    by_inits.setdefault(value, []).append(i)
            for i, letters in acro.items():
                for j in by_inits.get(letters, []) if letters else []:
                    if i != j and types_compatible(items[i].type, items[j].type):
                        candidates.append((i, j, "acronym"))
            stored_inits = lookup.by_initials(sorted({v for v in acro.values() if v}))
            for i, letters in acro.items():
                for known in stored_inits.get(letters, []) if letters else []:
                    if types_compatible(items[i].type, known.type):
                        candidates.append((i, known, "acronym"))
            stored_acro = lookup.by_acronym(sorted({v for v in inits.values() if v}))
            for i, value in inits.items():
                for known in stored_acro.get(value, []) if value else []:
                    if types_compatible(items[i].type, known.type):
                        candidates.append((i, known, "acronym"))
        if vectors is not None and free and len(vectors):
            sub = np.asarray(vectors, dtype=np.float32)[free]
            for pos, hits in zip(free, lookup.by_vector(sub, self.neighbours)):
                for known, score in hits:
                    if score >= self.threshold and types_compatible(items[pos].type, known.type):
                        candidates.append((pos, known, "embedding"))
            for start in range(0, len(free), 1024):
                block = sub[start : start + 1024] @ sub.T
                for row, sims in enumerate(block):
                    i = free[start + row]
                    for col in np.nonzero(sims >= self.threshold)[0]:
                        j = free[int(col)]
                        if j < i and norms[i] != norms[j] and types_compatible(items[i].type, items[j].type):
                            candidates.append((i, j, "embedding"))
        # dedupe candidates, keep first rule
        seen: set[tuple[int, str]] = set()
        unique: list[tuple[int, int | Known, str]] = []
        for i, other, how in candidates:
            tag = (i, other.id if isinstance(other, Known) else f"#{other}")
            if tag not in seen:
                seen.add(tag)
                unique.append((i, other, how))
        accepted = await self._confirm(items, unique, result)
        for i, other, how in accepted:
            ok = attach(i, other.id) if isinstance(other, Known) else union(other, i)
            if ok:
                rule.setdefault(items[i].key, how)
        # canonical ids
        for i, it in enumerate(items):
            root = find(i)
            target = anchor.get(root) or items[root].key
            result.mapping[it.key] = target
            if target != it.key:
                result.merges.append((it.key, target, rule.get(it.key) or rule.get(items[root].key, "normalised")))
        return result

    async def _confirm(
        self, items: list[NameItem], candidates: list[tuple[int, int | Known, str]], result: Resolution
    ) -> list[tuple[int, int | Known, str]]:
        if not candidates or self.llm is None or not self.confirm:
            return candidates
        accepted = []
        for start in range(0, len(candidates), self.pairs_per_call):
            part = candidates[start : start + self.pairs_per_call]
            pairs = []
            for i, other, _ in part:
                a = items[i]
                b = other if isinstance(other, Known) else items[other]
                pairs.append((a.name, _note(a.type, a.description), b.name, _note(b.type, b.description)))
            answer = await self.llm.acomplete_json(resolution_prompt(pairs), SamePairs, system=RESOLUTION_SYSTEM)
            result.calls += 1
            same = set(answer.same)
            for number, candidate in enumerate(part, start=1):
                if number in same:
                    accepted.append(candidate)
                else:
                    other = candidate[1]
                    result.rejected.append((items[candidate[0]].key, other.id if isinstance(other, Known) else items[other].key))
        return accepted


def _note(type_: str, description: str) -> str:
    text = " ".join(description.split())
    if len(text) > 160:
        text = text[:157] + "..."
    return f"{type_ or 'unknown type'}; {text}" if text else (type_ or "unknown type")


async def resolve_names(
    names: Sequence[tuple[str, str]] | Sequence[tuple[str, str, str]],
    *,
    embedder: Any = None,
    resolver: EntityResolver | None = None,
) -> dict[str, str]:
    """Group a list of ``(name, type[, description])`` without any index: the name → the name
    of the first member of its group. Handy to check the rules on a labelled set."""
    resolver = resolver or EntityResolver()
    items: list[NameItem] = []
    display: dict[str, str] = {}
    for entry in names:
        name, type_ = entry[0], entry[1]
        description = entry[2] if len(entry) > 2 else ""
        key = entity_key(name)
        if key and key not in display:
            display[key] = clean_name(name)
            items.append(NameItem(key, clean_name(name), type_, description))
    vectors = await embedder.aembed([it.name for it in items]) if embedder is not None and items else None
    outcome = await resolver.aresolve(items, None, vectors)
    return {entry[0]: display[outcome.mapping[entity_key(entry[0])]] for entry in names if entity_key(entry[0])}


__all__ = [
    "EntityResolver",
    "Known",
    "Lookup",
    "NameItem",
    "Resolution",
    "SamePairs",
    "acronym_key",
    "canonical_type",
    "initials",
    "is_acronym",
    "normalise_name",
    "resolution_prompt",
    "resolve_names",
    "types_compatible",
]
