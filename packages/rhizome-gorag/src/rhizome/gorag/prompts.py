"""Prompts of GORAG's three model steps, in our own words.

The paper gives only the extraction instruction and leaves the description and classification
prompts open; each prompt here asks for JSON that matches a pydantic schema, which the
kernel validates (and retries on failure).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class KeywordList(BaseModel):
    keywords: list[str] = Field(description="keywords or short key phrases, most telling first")


class LabelDescription(BaseModel):
    description: str = Field(description="two or three sentences describing the category")


class LabelChoice(BaseModel):
    label: str = Field(description="one label, spelled exactly as listed")


EXTRACT_SYSTEM = "You pick out the keywords of texts for a search index. You answer in JSON."

EXTRACT = """Give at most {max_keywords} keywords or short key phrases (one to three words each) \
that tell what the text below is about: its subject, methods, named things and technical terms. \
Copy them as they appear in the text where you can.

Text:
{text}

Answer with JSON: {{"keywords": ["...", "..."]}}"""

DESCRIBE_SYSTEM = "You write short, factual descriptions of document categories. You answer in JSON."

DESCRIBE = """A text classifier has a category named "{name}". In two or three sentences, say what \
kind of texts belong to it: the topics, terms and methods they typically mention.{examples}

Answer with JSON: {{"description": "..."}}"""

DESCRIBE_EXAMPLES = "\n\nExamples of texts in this category (shortened):\n{examples}"

CLASSIFY_SYSTEM = (
    "You classify texts. You choose exactly one label from the list you are given and answer in JSON."
)

CLASSIFY = """Text:
{text}

Keywords of the text: {keywords}

Candidate labels (a score is a classifier's estimate that the label is right; use it as a hint):
{candidates}

Which one of the candidate labels fits the text best? Answer with JSON: {{"label": "..."}}, \
writing the label exactly as it appears in the list."""


__all__ = [
    "CLASSIFY",
    "CLASSIFY_SYSTEM",
    "DESCRIBE",
    "DESCRIBE_EXAMPLES",
    "DESCRIBE_SYSTEM",
    "EXTRACT",
    "EXTRACT_SYSTEM",
    "KeywordList",
    "LabelChoice",
    "LabelDescription",
]
