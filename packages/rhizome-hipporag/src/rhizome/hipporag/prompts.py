"""Prompts and answer schemas of the HippoRAG package, written for this project.

HippoRAG's OpenIE is two calls per passage: the named entities first, then the
subject–predicate–object triples among them (the NER call anchors the triples to the
passage's names). At query time HippoRAG 1 asks for the question's named entities, and
HippoRAG 2's "recognition memory" asks the model which of the facts retrieved for a question
actually bear on it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated

from pydantic import BeforeValidator, Field

from rhizome.core.models.lenient import LenientModel, TextList


def _triples_only(value: object) -> object:
    """Keep the three-part lists of strings of a list; drop the rest (an answer's malformed
    triples are skipped, and counted again on import, not fatal)."""
    if not isinstance(value, list):
        return value
    return [t for t in value if isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) for x in t)]


TripleList = Annotated[list[list[str]], BeforeValidator(_triples_only)]


class _Strict(LenientModel):
    """Answer schemas: every field is required (an empty list is an answer; ``{}``, or a list
    under another key, fails validation and is asked again), other keys are ignored."""


class NamedEntities(_Strict):
    """Answer of the NER calls (passage and query)."""

    named_entities: TextList = Field(description="the named entities, as written")


class Triples(_Strict):
    """Answer of the triple call: ``[subject, predicate, object]`` lists."""

    triples: TripleList = Field(description="[subject, predicate, object] triples")


class KeptFacts(_Strict):
    """Answer of the recognition-memory call: the facts kept, copied from the candidates."""

    facts: TripleList = Field(description="the kept [subject, predicate, object] facts")


OPENIE_SYSTEM = "You turn passages into knowledge-graph facts. Answer with JSON only."

_NER = """List the named entities of the passage below: people, places, organisations, works,
events, dates, numbers and other specific names, each written as in the text, each once.
Answer as {{"named_entities": [...]}}.

Passage:
{passage}"""

_TRIPLES = """Write the facts the passage below states as [subject, predicate, object] triples.
- Each triple should use at least one, preferably two, of the listed named entities as its
  subject or object.
- Replace pronouns by the names they stand for, so that every triple reads on its own.
- Keep predicates short (a verb phrase such as "was born in", "directed", "is part of").
Answer as {{"triples": [["subject", "predicate", "object"], ...]}}.

Passage:
{passage}

Named entities: {entities}"""

QUERY_SYSTEM = "You prepare a question for a knowledge-graph search. Answer with JSON only."

_QUERY_NER = """List the named entities of the question below that a search needs to answer
it (people, places, organisations, works, dates and other specific names), each as written.
Answer as {{"named_entities": [...]}}.

Question: {query}"""

FILTER_SYSTEM = "You judge which retrieved facts help answer a question. Answer with JSON only."

_FILTER = """Question: {query}

Candidate facts, as [subject, predicate, object]:
{facts}

Keep the facts that help answer the question, at most {keep}, best first, copied exactly from
the candidates; keep none when none helps. Answer as {{"facts": [[...], ...]}}."""


def ner_prompt(passage: str) -> str:
    return _NER.format(passage=passage.strip())


def triples_prompt(passage: str, entities: Sequence[str]) -> str:
    return _TRIPLES.format(passage=passage.strip(), entities=json.dumps(list(entities), ensure_ascii=False))


def query_ner_prompt(query: str) -> str:
    return _QUERY_NER.format(query=query.strip())


def filter_prompt(query: str, facts: Sequence[Sequence[str]], keep: int) -> str:
    listed = "\n".join(json.dumps(list(f), ensure_ascii=False) for f in facts)
    return _FILTER.format(query=query.strip(), facts=listed, keep=keep)


__all__ = [
    "FILTER_SYSTEM",
    "OPENIE_SYSTEM",
    "QUERY_SYSTEM",
    "KeptFacts",
    "NamedEntities",
    "Triples",
    "filter_prompt",
    "ner_prompt",
    "query_ner_prompt",
    "triples_prompt",
]
