"""Prompts of the LLM extractor, written for this project.

They are short and literal on purpose: small local models follow a few plain rules better than a
long essay, and the JSON shape itself is enforced by the schema passed to the model (Ollama's
``format``), so the prompt only has to say what belongs in each field.

Passages are numbered, so several short chunks can share one call (see
:class:`~rhizome.core.extraction.llm.LLMExtractor`'s ``pack_tokens``); every item names the
passages it comes from, and provenance stays per chunk.
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
- "passages": the numbers of the passages an entity or relation comes from.
- If the passages name nothing worth listing, return empty lists."""

_KEYWORD_RULE = """
- "content_keywords": for each passage, its number and 2-5 phrases naming its main topics."""

_EXTRACT = """Extract entities and relations from the numbered passages below.

{rules}{keyword_rule}

{passages}

Reply with one JSON object with the keys {keys}."""

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
    passages: Sequence[tuple[str | None, str]],
    entity_types: Sequence[str],
    language: str = "English",
    *,
    keywords: bool = False,
) -> str:
    """The first extraction call for passages ``(title, text)``; with ``keywords`` it also asks
    for each passage's content keywords."""
    return _EXTRACT.format(
        rules=_rules(entity_types, language),
        keyword_rule=_KEYWORD_RULE if keywords else "",
        passages=format_passages(passages),
        keys='"entities", "relations" and "content_keywords"' if keywords else '"entities" and "relations"',
    )


def gleaning_prompt(
    passages: Sequence[tuple[str | None, str]],
    entity_types: Sequence[str],
    found_entities: Sequence[str],
    found_pairs: Sequence[tuple[str, str]],
    language: str = "English",
) -> str:
    """A follow-up call asking only for what earlier calls missed. Instead of replaying the
    earlier answers it lists what was found as bare names and name pairs, which is all the
    model needs to tell what is missing."""
    entities = "; ".join(found_entities) or "(none)"
    relations = "; ".join(f"{a} - {b}" for a, b in found_pairs) or "(none)"
    return _GLEAN.format(
        entities=entities,
        relations=relations,
        rules=_rules(entity_types, language),
        passages=format_passages(passages),
    )


__all__ = ["EXTRACTION_SYSTEM", "extraction_prompt", "format_passages", "gleaning_prompt"]
