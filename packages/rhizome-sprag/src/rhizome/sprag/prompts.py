"""Prompts and answer schemas of the spRAG package, written for this project.

AutoContext asks the chat model, once per document, for the document's title (when it has
none) and a one-sentence summary of the whole document, from its beginning; with section
summaries on, once per section for the section's title and summary.
"""

from __future__ import annotations

from pydantic import Field

from rhizome.core.models.lenient import LenientModel

CONTEXT_SYSTEM = "You describe documents for a search index, briefly and faithfully. Answer with JSON only."


class ContextAnswer(LenientModel):
    """Answer of both calls."""

    title: str = Field("", description="the title")
    summary: str = Field("", description="one sentence on what the text is and what it covers")


_DOCUMENT = """Here is {part} of a document{named}.

Reply with:
- "title": {title_rule}
- "summary": one sentence of at most {words} words that says what kind of document this is
  and what the whole document covers, so that a reader of any single passage knows where it
  comes from.
Write in {language}. Answer as {{"title": "...", "summary": "..."}}.

Document:
{text}"""

_SECTION = """Here is {part} of one section of the document "{document}".

Reply with:
- "title": {title_rule}
- "summary": one sentence of at most {words} words on what this section covers.
Write in {language}. Answer as {{"title": "...", "summary": "..."}}.

Section:
{text}"""


def _rule(title: str, what: str) -> str:
    return f'"{title}", as given' if title else f"a short title for the {what}, as a reader would name it"


def document_prompt(text: str, *, title: str, words: int, language: str, cut: bool) -> str:
    return _DOCUMENT.format(
        part="the beginning" if cut else "the whole text", named=f' titled "{title}"' if title else "",
        title_rule=_rule(title, "document"), words=words, language=language, text=text,
    )


def section_prompt(text: str, *, title: str, document: str, words: int, language: str, cut: bool) -> str:
    return _SECTION.format(
        part="the beginning" if cut else "the text", document=document, title_rule=_rule(title, "section"),
        words=words, language=language, text=text,
    )


__all__ = ["CONTEXT_SYSTEM", "ContextAnswer", "document_prompt", "section_prompt"]
