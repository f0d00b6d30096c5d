"""Prompts of the GraphRAG index, written for this project (the paper's facts, our words).

Each one asks for JSON matching a schema of :mod:`rhizome.graphrag.schemas`; the model layer
validates the answer and retries with the error shown, so the prompts only explain what each
field should hold.
"""

from __future__ import annotations

REPORT_SYSTEM = (
    "You are an analyst writing briefings about groups of related entities in a document "
    "collection. You use only the data you are given, you keep every claim traceable to it, "
    "and you answer with JSON only."
)

REPORT_PROMPT = """Below are the entities and relationships of one community of a knowledge graph{children_note}.
Write a report about this community for a reader who needs to understand what it is about and why it matters.

Fields:
- "title": a short, specific name for the community that mentions its most important entities.
- "summary": a few sentences on the overall structure: who or what the entities are and how they connect.
- "rating": a number from 0 to 10 for how significant or impactful the community is.
- "rating_explanation": one sentence on why you chose that rating.
- "findings": five to ten insights; each has a one-line "summary" and an "explanation" paragraph
  that cites the data it rests on. Write in {language}. Do not state anything the data does not support.

Data:
{context}

Reply with one JSON object with the keys "title", "summary", "rating", "rating_explanation" and "findings"."""

CHILDREN_NOTE = (
    " (its sub-communities are described by the reports in the data, because the raw data is "
    "too long)"
)

RATE_SYSTEM = (
    "You decide whether a community report can help answer a question. You answer with JSON only."
)

RATE_PROMPT = """Question: {question}

Community report:
{report}

How useful is this report, or the more detailed communities inside it, for answering the question?
Give "rating" as an integer: 0 = unrelated, 1 = barely related, 3 = clearly related, 5 = essential.
Reply with one JSON object with the key "rating"."""

MAP_SYSTEM = (
    "You extract the key points that help answer a question from community reports. You use "
    "only the reports, and you answer with JSON only."
)

MAP_PROMPT = """Question: {question}

Community reports (each starts with its id):
{reports}

List the key points in these reports that help answer the question. For each point give:
- "description": the point in one or two sentences, in {language};
- "score": how important it is for a complete answer, from 0 (useless) to 100 (crucial);
- "reports": the ids of the reports it comes from.
If the reports do not help, return an empty list. At most {max_points} points.
Reply with one JSON object with the key "points"."""

REDUCE_SYSTEM = (
    "You write answers from numbered key points gathered from community reports. You use only "
    "those points and say plainly when they do not contain the answer."
)

REDUCE_INSTRUCTIONS = """Write the answer in {language} ({response_type}) from the key points above (each
with its importance), most important first. Merge overlapping points, keep what matters most and
cite the numbers of the points you used."""

LOCAL_SYSTEM = (
    "You answer questions from a data context of reports, entities, relationships and source "
    "passages, each with a number. You use only that context and cite the numbers you used."
)

LOCAL_INSTRUCTIONS = """Write the answer in {language} ({response_type}), citing the numbers of the items you
used. If the context does not contain the answer, say so."""

DRIFT_SYSTEM = (
    "You explore a knowledge base step by step. From the context you are given you write what "
    "it says about a question and which narrower questions should be looked up next. You "
    "answer with JSON only."
)

DRIFT_PRIMER_PROMPT = """Question: {question}

Community reports:
{context}

Fields:
- "answer": what these reports say about the question, in {language} (empty if nothing);
- "follow_ups": up to {n_followups} specific questions about named entities in the reports whose
  answers would complete the picture;
- "score": how well these reports answer the question, from 0 to 100.
Reply with one JSON object with the keys "answer", "follow_ups" and "score"."""

DRIFT_FOLLOWUP_PROMPT = """Overall question: {question}
Current sub-question: {sub_question}

Context found for the sub-question:
{context}

Fields:
- "answer": what the context says about the sub-question, in {language} (empty if nothing);
- "follow_ups": up to {n_followups} further specific questions, only if they are still needed;
- "score": how well the context answers the sub-question, from 0 to 100.
Reply with one JSON object with the keys "answer", "follow_ups" and "score"."""

__all__ = [
    "CHILDREN_NOTE",
    "DRIFT_FOLLOWUP_PROMPT",
    "DRIFT_PRIMER_PROMPT",
    "DRIFT_SYSTEM",
    "LOCAL_INSTRUCTIONS",
    "LOCAL_SYSTEM",
    "MAP_PROMPT",
    "MAP_SYSTEM",
    "RATE_PROMPT",
    "RATE_SYSTEM",
    "REDUCE_INSTRUCTIONS",
    "REDUCE_SYSTEM",
    "REPORT_PROMPT",
    "REPORT_SYSTEM",
]
