"""Prompts of the LLM extractor, written for this project.

They are short and literal on purpose: small local models follow a few plain rules better than a
long essay, and the JSON shape itself is enforced by the schema passed to the model (Ollama's
``format``), so the prompt only has to say what belongs in each field.
"""

from __future__ import annotations

from collections.abc import Sequence

EXTRACTION_SYSTEM = (
    "You build knowledge graphs from text. You read a passage and list the entities it mentions "
    "and the relations between them. You answer with JSON only, and you never invent facts "
    "that the passage does not state."
)

_RULES = """Rules:
- An entity is a specific, named or clearly identifiable thing of one of these types: {types}.
- "name": write it as it appears in the text. Use the same name every time you mention it.
- "type": pick one of the types above, in upper case.
- "description": one or two sentences, in {language}, saying what the passage tells about it.
- A relation links two entities from your list that the passage connects. "source" and "target"
  must be names from your entities list.
- "description": one sentence, in {language}, on how they are connected.
- "keywords": one to three short phrases naming the kind of connection.
- "strength": an integer from 1 (loose link) to 10 (very close link).
- If the passage names nothing worth listing, return empty lists."""

_EXTRACT = """Read the passage below and extract its entities and relations.

{rules}

Passage:
\"\"\"
{text}
\"\"\"

Reply with one JSON object with the keys "entities" and "relations"."""

_GLEAN = """Another reader already extracted entities and relations from the passage below, but
probably missed some. Find only what is missing.

Already found entities:
{entities}

Already found relations:
{relations}

{rules}
- Do not repeat anything from the "already found" lists. A new relation may connect an entity
  that was already found to a new one, or two entities that were already found.

Passage:
\"\"\"
{text}
\"\"\"

Reply with one JSON object with the keys "entities" and "relations", holding only the new items
(empty lists if nothing was missed)."""


def _rules(entity_types: Sequence[str], language: str) -> str:
    types = ", ".join(t.upper() for t in entity_types) if entity_types else "any kind"
    return _RULES.format(types=types, language=language)


def extraction_prompt(text: str, entity_types: Sequence[str], language: str = "English") -> str:
    """The first-pass prompt for one chunk."""
    return _EXTRACT.format(rules=_rules(entity_types, language), text=text)


def gleaning_prompt(
    text: str,
    entity_types: Sequence[str],
    found_entities: Sequence[str],
    found_relations: Sequence[tuple[str, str]],
    language: str = "English",
) -> str:
    """A follow-up prompt asking only for what earlier passes missed. It lists what was found
    as bare names and name pairs, one per line; the earlier JSON answers are not included."""
    entities = "\n".join(f"- {name}" for name in found_entities) or "- (none)"
    relations = "\n".join(f"- {a} -- {b}" for a, b in found_relations) or "- (none)"
    return _GLEAN.format(
        entities=entities,
        relations=relations,
        rules=_rules(entity_types, language),
        text=text,
    )


__all__ = ["EXTRACTION_SYSTEM", "extraction_prompt", "gleaning_prompt"]
