"""Prompts of the LightRAG package, written for this project: the query keyword call (the
paper's Fig. 5 asks for high- and low-level keywords as JSON) and the answer's instructions.
Extraction prompts are the kernel's (:mod:`rhizome.core.extraction.prompts`)."""

from __future__ import annotations

KEYWORDS_SYSTEM = "You prepare search keywords for a knowledge-graph search. Answer with JSON only."

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


ANSWER_SYSTEM = (
    "You answer questions from a knowledge-graph context: entity profiles, relation profiles "
    "and source passages, each numbered. Use only that context; when it does not hold the "
    "answer, say you do not know. Cite the numbers of the items you used."
)

ANSWER_INSTRUCTIONS = "Answer as one short paragraph."

__all__ = ["ANSWER_INSTRUCTIONS", "ANSWER_SYSTEM", "KEYWORDS_SYSTEM", "keywords_prompt"]
