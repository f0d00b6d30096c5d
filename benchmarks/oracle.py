"""One extraction for every system: the oracle of the peers suite.

Comparing indexing costs is only fair when every system builds the same graph. A generic fake
model cannot promise that: each system asks in its own format, packs passages differently and
parses differently, so the same fake named 942 entities for Rhizome-LightRAG and about 2,100 for
the peers. The oracle instead decides the extraction of every passage once, up front, and then
answers each system's extraction prompt by finding the passages in the prompt and writing their
extraction in that system's output format:

| system | prompt recognised by | answer |
|---|---|---|
| Rhizome (LightRAG, GraphRAG) | the ``ExtractionOutput`` / ``KeywordExtractionOutput`` JSON schema, numbered ``[n]`` passages | JSON: entities and relations, each naming its passage number |
| lightrag-hku 1.5.7 | ``---Input Text---`` fence | ``entity<|#|>...`` / ``relation<|#|>...`` rows, ``<|COMPLETE|>`` |
| nano-graphrag 0.0.8.2 | ``-Real Data-`` ... ``Text:`` | ``("entity"<|>...)`` / ``("relationship"<|>...)`` records joined by ``##`` |

The extraction (:func:`offline_facts`) is Rhizome's rule-based :class:`OfflineExtractor` (names,
sentence co-occurrence) shaped like a model's answer: at most :data:`ENTITIES` entities per
passage (first mentioned first), at most :data:`RELATIONS` relations among them (most shared
sentences first), each with a one-sentence description (the first sentence that mentions it)
and one spelling per name across the corpus. A passage in which the rules find no name gets its
title line as its one entity (a model names at least the subject of a passage; Rhizome's
extractor would otherwise reject the empty answer and the insert would extract its batch again). The caps are the size of a real model's answer
on these passages (issue 12: about 10 entities and 8 relations a passage).

Every other call gets the same kind of answer whatever the system: gleaning rounds find nothing
new (nano-graphrag's "continue?" gets NO), description summaries are the distinct notes joined
and cut to :data:`SUMMARY_TOKENS` tokens, Rhizome's entity-resolution checks confirm no pair
(the peers have none). Reports, map and keyword calls get each side's generic fake answer
(:class:`~rhizome.core.models.fake.SchemaResponder` for Rhizome, :func:`benchmarks.peers.peer_answer`
for the peers); they do not shape the graph.
"""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

ENTITIES = 10
RELATIONS = 8
SUMMARY_TOKENS = 200
KEYWORDS = "mentioned together"
"""The keywords of every relation (co-occurrence says no more than that)."""

_SPACES = re.compile(r"\s+")
_TYPES = {"PERSON": "person", "ORGANIZATION": "organization", "LOCATION": "geo", "GEO": "geo", "EVENT": "event"}


def squash(text: str) -> str:
    """Whitespace runs collapsed, ends trimmed: the key that finds a passage in a prompt."""
    return _SPACES.sub(" ", text).strip()


def _key(text: str) -> str:
    """:func:`squash` of the HTML-unescaped text: lightrag-hku unescapes entities such as
    ``&amp;`` in the text it stores and prompts with (ten hotpotqa passages hold some)."""
    return squash(html.unescape(text))


@dataclass(frozen=True)
class Facts:
    """The extraction of one passage."""

    entities: tuple[tuple[str, str, str], ...]
    """``(name, type, description)``; type is lower case (``person``, ``geo``... or ``other``)."""
    relations: tuple[tuple[str, str, str, float], ...]
    """``(source name, target name, description, strength)``."""


def offline_facts(docs: Sequence[Any], entities: int = ENTITIES, relations: int = RELATIONS) -> dict[str, Facts]:
    """Passage id -> its extraction (see the module docstring). ``docs`` have ``id`` and ``text``."""
    from rhizome.core.extraction import OfflineExtractor
    from rhizome.core.text import count_tokens
    from rhizome.core.types import Chunk

    chunks = [Chunk(id=d.id, document_id=d.id, text=d.text, index=0, start=0, end=len(d.text), n_tokens=count_tokens(d.text)) for d in docs]
    records = OfflineExtractor(window="sentence", per_document=True, max_description_sentences=1).extract(chunks)
    titles = {}
    for d in docs:  # hotpotqa passages open with their title line
        title, _, text = d.text.strip().partition("\n")
        if title.strip():
            titles[d.id] = (squash(title), squash(text.split(". ")[0]) or squash(title))
    spelling: dict[str, str] = {}
    out: dict[str, Facts] = {}
    for record in records:
        kept = record.entities[:entities]
        for e in kept:
            spelling.setdefault(e.id, e.name)
        if not kept and record.chunk_id in titles:  # a model names at least the passage's subject
            title, text = titles[record.chunk_id]
            out[record.chunk_id] = Facts(((spelling.setdefault(title.casefold(), title), "other", text),), ())
            continue
        keys = {e.id for e in kept}
        pairs = [r for r in record.relations if r.source in keys and r.target in keys]
        pairs = sorted(enumerate(pairs), key=lambda item: (-item[1].weight, item[0]))[:relations]
        out[record.chunk_id] = Facts(
            tuple((spelling[e.id], _TYPES.get(e.type, "other"), _first(e.descriptions) or spelling[e.id]) for e in kept),
            tuple(
                (spelling[r.source], spelling[r.target], _first(r.descriptions) or f"{spelling[r.source]} and {spelling[r.target]}", float(min(10.0, r.weight)))
                for _, r in sorted(pairs, key=lambda item: item[0])
            ),
        )
    return out


def _first(descriptions: Sequence[str]) -> str:
    return squash(descriptions[0]) if descriptions else ""


def graph_size(facts: dict[str, Facts]) -> dict[str, int]:
    """The graph the oracle's extraction makes when merged by case-insensitive name: distinct
    entities and distinct undirected name pairs, and what the passages list in total."""
    names = {n.casefold() for f in facts.values() for n, _, _ in f.entities}
    pairs = {tuple(sorted((s.casefold(), t.casefold()))) for f in facts.values() for s, t, _, _ in f.relations}
    return {
        "entities": len(names),
        "relations": len(pairs),
        "entity_mentions": sum(len(f.entities) for f in facts.values()),
        "relation_mentions": sum(len(f.relations) for f in facts.values()),
    }


def summary(notes: Sequence[str]) -> str:
    """The oracle's description summary: the distinct notes joined, cut to :data:`SUMMARY_TOKENS`."""
    from rhizome.core.text import truncate_tokens

    distinct = list(dict.fromkeys(squash(n) for n in notes if n and n.strip()))
    return truncate_tokens(" ".join(distinct), SUMMARY_TOKENS)


# prompt formats ---------------------------------------------------------------------------
_RHIZOME_PASSAGE = re.compile(r'^\[(\d+)\](?: Title: [^\n]*)?\n"""\n(.*?)\n"""', re.S | re.M)
_RHIZOME_NOTES = re.compile(r"\nNotes:\n(.*?)\n\nWrite one description", re.S)
_LIGHTRAG_INPUT = re.compile(r"---Input Text---\n```\n(.*?)\n```", re.S)
_LIGHTRAG_DESCRIPTIONS = re.compile(r"Description List:\s*```\n(.*?)\n```", re.S)
_NANO_INPUT = re.compile(r"-Real Data-.*?\nText: (.*?)\n#{6,}\nOutput:", re.S)
_NANO_DESCRIPTIONS = re.compile(r"Description List: (.*?)\n#{6,}", re.S)


class Oracle:
    """Answers every system's prompts from one extraction per passage (module docstring).

    ``fallback_rhizome(messages, json_schema)`` and ``fallback_peer(prompt, system_prompt)``
    answer what is not extraction, summary or resolution."""

    def __init__(self, docs: Sequence[Any], facts: dict[str, Facts], *, fallback_rhizome: Callable[..., Any], fallback_peer: Callable[..., str]) -> None:
        self.by_text = {_key(d.text): facts[d.id] for d in docs}
        self.fallback_rhizome = fallback_rhizome
        self.fallback_peer = fallback_peer
        self.calls: dict[str, int] = {}
        self.passages_answered = 0
        self.unmatched: list[str] = []

    def _count(self, kind: str) -> None:
        self.calls[kind] = self.calls.get(kind, 0) + 1

    def facts(self, passage: str) -> Facts:
        found = self.by_text.get(_key(passage))
        if found is None:
            self.unmatched.append(passage[:80])
            return Facts((), ())
        self.passages_answered += 1
        return found

    # Rhizome: a FakeChatModel responder ------------------------------------------------------
    def rhizome(self, messages: list[dict[str, str]], json_schema: dict[str, Any] | None) -> Any:
        prompt = messages[-1]["content"]
        title = (json_schema or {}).get("title", "")
        if title in ("ExtractionOutput", "KeywordExtractionOutput"):
            if prompt.startswith("Some entities and relations"):  # gleaning: nothing was missed
                self._count("gleaning")
                return {"entities": [], "relations": []}
            self._count("extraction")
            answer: dict[str, Any] = {"entities": [], "relations": []}
            keywords = []
            for number, text in _RHIZOME_PASSAGE.findall(prompt):
                n = int(number)
                facts = self.facts(text)
                answer["entities"] += [{"name": name, "type": kind.upper(), "description": d, "passages": [n]} for name, kind, d in facts.entities]
                answer["relations"] += [
                    {"source": s, "target": t, "description": d, "keywords": [KEYWORDS], "strength": w, "passages": [n]} for s, t, d, w in facts.relations
                ]
                keywords.append({"passage": n, "keywords": [squash(text.split("\n", 1)[0])[:80]]})
            if title == "KeywordExtractionOutput":
                answer["content_keywords"] = keywords
            return answer
        if title == "_Summary":
            self._count("summary")
            match = _RHIZOME_NOTES.search(prompt)
            notes = [line[2:] for line in match.group(1).splitlines() if line.startswith("- ")] if match else []
            return {"summary": summary(notes)}
        if title == "SamePairs":
            self._count("resolution")
            return {"same": []}
        self._count("other")
        return self.fallback_rhizome(messages, json_schema)

    # lightrag-hku ----------------------------------------------------------------------------
    def lightrag_hku(self, prompt: str, system_prompt: str | None = None) -> str:
        if "Based on the last extraction task" in prompt:
            self._count("gleaning")
            return "<|COMPLETE|>"
        match = _LIGHTRAG_INPUT.search(prompt)
        if match:
            self._count("extraction")
            facts, d = self.facts(match.group(1)), "<|#|>"
            rows = [f"entity{d}{name}{d}{kind}{d}{desc}" for name, kind, desc in facts.entities]
            rows += [f"relation{d}{s}{d}{t}{d}{KEYWORDS}{d}{desc}" for s, t, desc, _ in facts.relations]
            return "\n".join([*rows, "<|COMPLETE|>"])
        match = _LIGHTRAG_DESCRIPTIONS.search(prompt)
        if match:
            self._count("summary")
            notes = []
            for line in match.group(1).splitlines():
                try:
                    notes.append(str(json.loads(line).get("Description", "")))
                except (json.JSONDecodeError, AttributeError):
                    notes.append(line)
            return summary(notes)
        self._count("other")
        return self.fallback_peer(prompt, system_prompt)

    # nano-graphrag ---------------------------------------------------------------------------
    def nano_graphrag(self, prompt: str, system_prompt: str | None = None) -> str:
        match = _NANO_INPUT.search(prompt)
        if match:
            self._count("extraction")
            facts, d = self.facts(match.group(1)), "<|>"
            rows = [f'("entity"{d}"{name}"{d}"{kind}"{d}"{desc}")' for name, kind, desc in facts.entities]
            rows += [f'("relationship"{d}"{s}"{d}"{t}"{d}"{desc}"{d}{w:g})' for s, t, desc, w in facts.relations]
            return "##".join(rows) + "<|COMPLETE|>"
        if "MANY entities were missed" in prompt:
            self._count("gleaning")
            return "<|COMPLETE|>"
        if "Answer YES | NO" in prompt:
            self._count("gleaning")
            return "NO"
        match = _NANO_DESCRIPTIONS.search(prompt)
        if match:
            self._count("summary")
            try:
                notes = [str(n) for n in ast.literal_eval(match.group(1).strip())]
            except (ValueError, SyntaxError):
                notes = [match.group(1)]
            return summary(notes)
        self._count("other")
        return self.fallback_peer(prompt, system_prompt)


__all__ = ["ENTITIES", "RELATIONS", "SUMMARY_TOKENS", "Facts", "Oracle", "graph_size", "offline_facts", "squash", "summary"]
