"""ArchRAG's prompts and the JSON shapes the model fills in, written for this project: the
paper's facts (a JSON community report; key points with 0–100 importance scores; a merge of the
points ranked by importance), our words. The model layer validates each answer against its
schema and retries with the error shown."""

from __future__ import annotations

from pydantic import Field

from rhizome.core.models.lenient import LenientModel, TextList, clamped


class KeyPoint(LenientModel):
    description: str = Field(description="one key point that helps answer the question")
    score: clamped(0, 100) = Field(description="importance for the answer, 0 (no help) to 100")  # type: ignore[valid-type]
    sources: TextList = Field(default_factory=list, description="numbers of the rows the point rests on")


class FilterOutput(LenientModel):
    points: list[KeyPoint] = Field(description="the key points; empty when the data does not help")


REPORT_SYSTEM = (
    "You describe groups of related things found in a document collection, for a search index. "
    "You use only the data given, and you answer with JSON only."
)

REPORT_PROMPT = """The data below describes one community of a knowledge graph: its member {members}{children_note}.
Write a report that tells a reader what this community is about.

Fields:
- "title": a short, specific name that mentions its most important members;
- "summary": a few sentences on who or what the members are and how they are connected;
- "rating": 0 to 10, how important this community is within the collection;
- "rating_explanation": one sentence on the rating;
- "findings": five to ten insights, each a one-line "summary" and an "explanation" grounded in the data.
Write in {language}; claim nothing the data does not support. Keep the report within about {max_tokens} tokens.

Data:
{context}

Reply with one JSON object with the keys "title", "summary", "rating", "rating_explanation" and "findings"."""

CHILDREN_NOTE = ", summarised first by the reports of the communities one layer down that it groups"

FILTER_SYSTEM = (
    "You help answer a question from numbered rows of data about entities, their relations and "
    "the communities they form. You use only those rows, you say when they do not help, and "
    "you answer with JSON only."
)

FILTER_PROMPT = """Question: {question}

Data ({what}):
{rows}

List the key points in these rows that help answer the question. For each point give:
- "description": the point in one or two sentences;
- "score": how important it is for the answer, an integer from 0 to 100 (0: it does not help; a point you
  cannot back with the rows, or "I don't know", scores 0);
- "sources": the numbers of the rows it rests on.
Return an empty list when nothing here helps. Reply with one JSON object with the key "points"."""

MERGE_SYSTEM = (
    "You write the answer to a question from reports by several analysts, each a key point with "
    "an importance score, the most important first. Some may be wrong or off the question."
)

MERGE_INSTRUCTIONS = """Combine what the analysts' reports above say into one answer ({response_type}). Prefer
the more important reports, merge what overlaps, leave out what does not bear on the question, and
cite the numbers of the reports you used. If the reports do not answer the question, say so and
answer from what you know, marked as such."""

__all__ = [
    "CHILDREN_NOTE",
    "FILTER_PROMPT",
    "FILTER_SYSTEM",
    "MERGE_INSTRUCTIONS",
    "MERGE_SYSTEM",
    "REPORT_PROMPT",
    "REPORT_SYSTEM",
    "FilterOutput",
    "KeyPoint",
]
