"""AutoContext: a header of document context for every chunk, used for embedding only.

Each document gets a title (its ``title`` metadata; else the chat model's; offline its first
line when that reads as a title, else its id) and a one-sentence summary (the model's, from the
document's first ``context_input_tokens`` tokens; offline its lead sentences after a title
line). With ``section_summaries`` each section (the text under a Markdown heading, in parts of
at most ``section_max_tokens`` tokens of whole chunks) gets a title and summary the same way. A
chunk is embedded as ``header + "\\n\\n" + text``, the header leaving out what the chunk itself
says (a title it begins with, a summary it contains); the stored chunk, and every hit, keeps
the clean text. Model answers are a resumable stage: each is committed when it arrives, keyed
by a digest of its prompt's inputs, so an interrupted insert pays for nothing twice.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import partial
from typing import Any

from pydantic import BaseModel, Field

from rhizome.core.errors import PromptTooLongError
from rhizome.core.index.stages import arun_stage, digest
from rhizome.core.models.budget import fit
from rhizome.core.text import trimmed_sentences, truncate_tokens
from rhizome.core.types import Chunk, Document
from rhizome.sprag.config import SpRAGConfig
from rhizome.sprag.prompts import CONTEXT_SYSTEM, ContextAnswer, document_prompt, section_prompt

STAGE = "sprag_context"
PROMPT_VERSION = 1
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_WORD = re.compile(r"\w+")


class SectionContext(BaseModel):
    """A section: chunks ``[start, end)`` of its document, with its title and summary."""

    start: int
    end: int
    title: str = ""
    summary: str = ""


class DocumentContext(BaseModel):
    """What AutoContext knows about one document (one record per document)."""

    id: str
    title: str
    summary: str = ""
    sections: list[SectionContext] = Field(default_factory=list)

    def header(self, chunk: Chunk) -> str:
        """The header embedded with ``chunk``: the document line, then its section's, each
        without the title the chunk begins with or the summary it contains. A header carries
        what the chunk lacks: repeated, the title and the offline summary (the document's lead
        sentences) would weigh the chunk's opening twice in its vector (every one-chunk
        passage)."""
        words = _words(chunk.text)
        lines = [_line("Document", self.title, self.summary, words)]
        for section in self.sections:
            if section.start <= chunk.index < section.end:
                lines.append(_line("Section", section.title, section.summary, words))
        return "\n".join(line for line in lines if line)


def _words(text: str) -> str:
    """``text`` as lower-case words joined by single spaces (what "the chunk says" compares)."""
    return " ".join(_WORD.findall(text.lower()))


def _line(label: str, title: str, summary: str, chunk_words: str) -> str:
    if title and chunk_words.startswith(_words(title)):
        title = ""
    if summary and _words(summary) in chunk_words:
        summary = ""
    if not (title or summary):
        return ""
    return f"{label}: {title}" + (f" — {summary}" if summary and title else summary)


def embedding_text(header: str, chunk: Chunk) -> str:
    """What is embedded for a chunk: its header, a blank line, its text."""
    return f"{header}\n\n{chunk.text}" if header else chunk.text


# -- offline -------------------------------------------------------------------------------------
def lead(text: str, sentences: int, max_tokens: int, title: str = "") -> str:
    """The first ``sentences`` sentences of ``text`` (Markdown headings and a first line that
    is ``title`` skipped), cut to ``max_tokens`` tokens: the offline summary."""
    text = text[: 40 * max_tokens * sentences]  # the lead is all we read: no need to split a long document
    first, _, rest = text.lstrip().partition("\n")
    if title and rest and _words(first) == _words(title):
        text = rest  # a title line has no full stop: the sentence split would join it to the first sentence
    picked = [text[s:e] for s, e in trimmed_sentences(text) if not text[s:e].startswith("#")][:sentences]
    return truncate_tokens(" ".join(" ".join(p.split()) for p in picked), max_tokens)


def offline_title(document: Document) -> str:
    """The document's first line when it reads as a title (at most 12 words, more text after
    it), else its id."""
    lines = [line.strip() for line in document.text.strip().splitlines()]
    first = lines[0].lstrip("#").strip() if lines else ""
    if first and len(lines) > 1 and len(first.split()) <= 12 and len(first) <= 100:
        return first
    return document.id


def sections_of(document: Document, chunks: list[Chunk], max_tokens: int) -> list[tuple[int, int, str]]:
    """``(first chunk, end chunk, heading)`` of each section: consecutive chunks under the same
    Markdown heading (the last one at or before a chunk's start), in parts of at most
    ``max_tokens`` tokens (a chunk longer than that is a part alone)."""
    found = [(m.start(), m.group(1).strip()) for m in _HEADING.finditer(document.text)]
    starts = [pos for pos, _ in found]
    out: list[tuple[int, int, str]] = []
    current, size = None, 0
    for chunk in chunks:
        at = bisect_right(starts, chunk.start) - 1
        heading = found[at][1] if at >= 0 else ""
        if out and heading == current and size + chunk.n_tokens <= max_tokens:
            out[-1] = (out[-1][0], chunk.index + 1, heading)
            size += chunk.n_tokens
        else:
            out.append((chunk.index, chunk.index + 1, heading))
            current, size = heading, chunk.n_tokens
    return out


# -- building ------------------------------------------------------------------------------------
async def document_contexts(index: Any, batch: list[tuple[Document, list[Chunk]]], stats: dict[str, Any]) -> list[DocumentContext]:
    """The :class:`DocumentContext` of each document of ``batch`` (see the module docstring)."""
    config: SpRAGConfig = index.config
    given = {doc.id: doc.title or "" for doc, _ in batch}
    contexts = {doc.id: DocumentContext(id=doc.id, title=given[doc.id] or offline_title(doc)) for doc, _ in batch}
    if not config.auto_context:
        return list(contexts.values())
    asker = _Asker(index)
    jobs = {}
    for doc, _ in batch:
        if config.document_summary:
            contexts[doc.id].summary = lead(doc.text, config.lead_sentences, config.summary_max_tokens, contexts[doc.id].title)
        if index.llm is not None and (config.document_summary or (config.generated_title and not given[doc.id])):
            jobs[doc.id] = asker.job(partial(document_prompt, title=given[doc.id]), doc.text, given[doc.id])
    for doc_id, answer in (await asker.run(jobs, stats, "AutoContext titles and summaries of documents")).items():
        if config.generated_title and not given[doc_id] and answer.title.strip():
            contexts[doc_id].title = " ".join(answer.title.split())
        if config.document_summary and answer.summary.strip():
            contexts[doc_id].summary = asker.clean(answer.summary)
    if config.section_summaries:
        jobs = {}
        for doc, chunks in batch:
            context = contexts[doc.id]
            for i, (start, end, heading) in enumerate(sections_of(doc, chunks, config.section_max_tokens)):
                text = doc.text[chunks[start].start : chunks[end - 1].end]
                summary = lead(text, config.lead_sentences, config.summary_max_tokens, heading)
                context.sections.append(SectionContext(start=start, end=end, title=heading, summary=summary))
                if index.llm is not None:
                    prompt = partial(section_prompt, title=heading, document=context.title)
                    jobs[f"{doc.id}\x1f{i}"] = asker.job(prompt, text, heading, context.title)
        for key, answer in (await asker.run(jobs, stats, "AutoContext summaries of sections")).items():
            doc_id, number = key.split("\x1f")
            section = contexts[doc_id].sections[int(number)]
            if not section.title and answer.title.strip():
                section.title = " ".join(answer.title.split())
            if answer.summary.strip():
                section.summary = asker.clean(answer.summary)
        stats["sections"] = stats.get("sections", 0) + sum(len(c.sections) for c in contexts.values())
    return [contexts[doc.id] for doc, _ in batch]


class _Asker:
    """The model calls of AutoContext: each prompt fitted to the model's window, each answer a
    job of the resumable stage."""

    def __init__(self, index: Any) -> None:
        self.llm = index.llm
        self.store = index.store
        self.config: SpRAGConfig = index.config
        self.words = max(8, self.config.summary_max_tokens * 3 // 4)

    def job(self, prompt: Any, text: str, *inputs: str) -> tuple[str, Any]:
        """``prompt(text, *, words, language, cut)`` over as much of ``text`` as fits."""
        options = {"words": self.words, "language": self.config.language}
        empty = prompt("", cut=False, **options)
        budget = fit(self.llm, self.config.context_input_tokens, reply_tokens=self.config.summary_max_tokens + 64, fixed=[CONTEXT_SYSTEM, empty])
        if budget < 32:
            raise PromptTooLongError(
                f"the context window of {self.llm.name} leaves no room for the text to describe; raise --num-ctx "
                "(RHIZOME_NUM_CTX, num_ctx=)"
            )
        excerpt = truncate_tokens(text, budget)
        message = prompt(excerpt, cut=excerpt != text, **options)

        async def call() -> dict[str, str]:
            return (await self.llm.acomplete_json(message, ContextAnswer, system=CONTEXT_SYSTEM)).model_dump()

        return digest(STAGE, PROMPT_VERSION, self.llm.name, message, *inputs), call

    async def run(self, jobs: dict[str, tuple[str, Any]], stats: dict[str, Any], label: str) -> dict[str, ContextAnswer]:
        if not jobs:
            return {}
        answers, written = await arun_stage(self.store, STAGE, jobs, label=label)
        stats["contexts_written"] = stats.get("contexts_written", 0) + written
        return {key: ContextAnswer.model_validate(value) for key, value in answers.items()}

    def clean(self, summary: str) -> str:
        return truncate_tokens(" ".join(summary.split()), self.config.summary_max_tokens)


__all__ = ["DocumentContext", "SectionContext", "document_contexts", "embedding_text", "lead", "offline_title", "sections_of"]
