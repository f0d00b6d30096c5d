"""Prompts of the LightRAG package, written for this project.

The paper's extraction prompt (Fig. 3) asks, per chunk, for entities (name, type, description),
relations (source, target, description, strength and high-level keywords) and the chunk's
content keywords; its query prompt (Fig. 5) asks for high- and low-level keywords as JSON. These
prompts ask for the same fields, in JSON checked against a schema, and are kept short: small
local models follow a few literal rules better than long examples, and every token of fixed
prompt is paid again on every call.

Several short passages can share one extraction call. Each passage is numbered and every item
the model returns names the passages it comes from, so provenance stays per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence

EXTRACTION_SYSTEM = (
    "You turn text into a knowledge graph. You list the entities the passages mention and the "
    "relations the passages state between them. Answer with JSON only and never add facts "
    "that the passages do not contain."
)

_RULES = """Rules:
- Entities: specific named things of these types: {types}. "name" as written in the text,
  spelled the same way every time; "type" one of the types; "description" one or two sentences
  in {language} on what the passages say about it.
- Relations: pairs of listed entities that the passages clearly connect. "description" says how,
  in one sentence; "keywords" are 1-3 short phrases naming the overall theme of the link (e.g.
  "rivalry", "founding", "trade policy"); "strength" is 1 (loose) to 10 (tight).
- "passages": the numbers of the passages an entity or relation comes from."""

_KEYWORD_RULE = """- "content_keywords": for each passage, its number and 2-5 phrases naming its main topics."""

_EXTRACT = """Extract entities and relations from the numbered passages below.

{rules}
{keyword_rule}

{passages}

Reply with one JSON object with the keys "entities", "relations" and "content_keywords"."""

_GLEAN = """Some entities and relations in the numbered passages below were missed. Already found:
Entities: {entities}
Relations: {relations}

{rules}
- List only new items; repeat nothing from "Already found". Empty lists if nothing was missed.

{passages}

Reply with one JSON object with the keys "entities" and "relations"."""


def format_passages(passages: Sequence[tuple[str | None, str]]) -> str:
    """Numbered passages ``[1] Title: ...`` followed by the text in triple quotes."""
    blocks = []
    for number, (title, text) in enumerate(passages, start=1):
        head = f"[{number}]" + (f" Title: {title}" if title else "")
        blocks.append(f'{head}\n"""\n{text.strip()}\n"""')
    return "\n\n".join(blocks)


def _rules(entity_types: Sequence[str], language: str) -> str:
    types = ", ".join(entity_types) if entity_types else "any kind"
    return _RULES.format(types=types, language=language)


def extraction_prompt(
    passages: Sequence[tuple[str | None, str]], entity_types: Sequence[str], language: str = "English"
) -> str:
    """The first extraction call for one pack of passages ``(title, text)``."""
    return _EXTRACT.format(
        rules=_rules(entity_types, language),
        keyword_rule=_KEYWORD_RULE,
        passages=format_passages(passages),
    )


def gleaning_prompt(
    passages: Sequence[tuple[str | None, str]],
    entity_types: Sequence[str],
    found_entities: Sequence[str],
    found_pairs: Sequence[tuple[str, str]],
    language: str = "English",
) -> str:
    """The gleaning call (the paper's one extra round). Instead of replaying the first answer,
    it lists what was found as bare names and name pairs, which is all the model needs to tell
    what is missing."""
    entities = "; ".join(found_entities) or "(none)"
    relations = "; ".join(f"{a} - {b}" for a, b in found_pairs) or "(none)"
    return _GLEAN.format(
        entities=entities,
        relations=relations,
        rules=_rules(entity_types, language),
        passages=format_passages(passages),
    )


KEYWORDS_SYSTEM = (
    "You prepare search keywords for a knowledge-graph search. Answer with JSON only."
)

_KEYWORDS = """Give two lists of search keywords for the question below.
- "low_level_keywords": the specific things it names or asks about: people, places,
  organisations, works, dates, technical terms, concrete details.
- "high_level_keywords": the broad themes and concepts behind it (e.g. "economic impact",
  "family relations", "film production").
Use words from the question where possible; 1-6 keywords per list.

Question: {query}"""


def keywords_prompt(query: str) -> str:
    """The one model call a query costs: low- and high-level keywords (paper Fig. 5)."""
    return _KEYWORDS.format(query=query.strip())


RESOLUTION_SYSTEM = (
    "You decide whether two names refer to the same real-world entity. Answer with JSON only."
)

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


ANSWER_SYSTEM = (
    "You answer questions from a knowledge-graph context: entity profiles, relation profiles "
    "and source passages, each numbered. Use only that context; when it does not hold the "
    "answer, say you do not know. Cite the numbers of the items you used."
)


def answer_prompt(question: str, context: str, response_type: str) -> str:
    return (
        f"{context}\n\nQuestion: {question}\n\nAnswer as {response_type}. Reply as JSON with the "
        "answer and the numbers of the context items you used."
    )


__all__ = [
    "ANSWER_SYSTEM",
    "EXTRACTION_SYSTEM",
    "KEYWORDS_SYSTEM",
    "RESOLUTION_SYSTEM",
    "answer_prompt",
    "extraction_prompt",
    "format_passages",
    "gleaning_prompt",
    "keywords_prompt",
    "resolution_prompt",
]
