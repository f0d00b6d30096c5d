"""Searching and answering a workspace off the event loop, for the REST routes and the chat
endpoints alike.

A streamed answer comes in three parts: the search's hits, the answer's pieces as the chat
model writes them (the kernel's ``astream_answer``; without a chat model the extractive answer
is one piece) and the end. The answer's own retrieval runs the search again: with the model-call
cache on (the default) the second search costs no model call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from rhizome.core.retrieval.conversation import Turn, astandalone, split_last_question
from rhizome.server.offload import in_thread, stream_in_thread
from rhizome.server.schemas import AnswerResponse, QueryResponse
from rhizome.server.workspaces import Workspace


@dataclass(frozen=True)
class Ask:
    """One question to a workspace: the mode, ``k``, the metadata filter and the score threshold."""

    query: str
    mode: str | None = None
    k: int = 4
    filter: dict[str, Any] | None = None
    score_threshold: float | None = None

    def options(self) -> dict[str, Any]:
        return {"mode": self.mode, "k": self.k, "filter": self.filter, "score_threshold": self.score_threshold}


async def standalone(workspace: Workspace, turns: Sequence[Turn]) -> str:
    """The conversation's last question made to stand on its own, with the workspace's chat
    model (offline: joined to the user's previous question); a first question as it is."""
    split_last_question(turns)  # no question: a 4xx before any model call
    index = workspace.index
    return await in_thread(lambda: astandalone(turns, getattr(index, "llm", None)))


async def search(workspace: Workspace, ask: Ask) -> Any:
    """The :class:`~rhizome.core.retrieval.contract.Retrieval` of the question: hits, stats, notes."""
    index = workspace.index
    options = {"k": ask.k, "mode": ask.mode, "filter": ask.filter, "score_threshold": ask.score_threshold}
    return await in_thread(lambda: index.as_retriever(**options).asearch(ask.query, context=False))


async def answer(workspace: Workspace, ask: Ask) -> Any:
    """The index's :class:`~rhizome.core.retrieval.answer.Answer`: text and the hits it cites."""
    index = workspace.index
    return await in_thread(lambda: index.aanswer(ask.query, **ask.options()))


async def query(workspace: Workspace, ask: Ask) -> QueryResponse:
    """``POST /{ws}/query``'s response (the MCP ``search`` tool's too): the hits, the stats,
    the notes and the mode that ran."""
    found = await search(workspace, ask)
    return QueryResponse(workspace=workspace.name, mode=workspace.index.check_mode(ask.mode), hits=found.hits,
                         stats=found.stats, notes=found.notes)


async def answered(workspace: Workspace, ask: Ask) -> AnswerResponse:
    """``POST /{ws}/answer``'s whole response (the MCP ``answer`` tool's too): the answer and
    the hits it cites."""
    result = await answer(workspace, ask)
    return AnswerResponse(workspace=workspace.name, mode=workspace.index.check_mode(ask.mode), answer=result.text,
                          extractive=result.extractive, citations=result.citations)


async def answer_pieces(workspace: Workspace, ask: Ask) -> AsyncIterator[str]:
    """The answer's pieces as they are written."""
    index = workspace.index
    async for piece in stream_in_thread(lambda: index.astream_answer(ask.query, **ask.options())):
        yield piece


def label(hit: Any) -> str:
    """How a hit is named in a list of sources: its title, else its documents, else its id."""
    return str(hit.metadata.get("title") or ", ".join(hit.provenance.document_ids) or hit.id)


def sources_text(hits: list[Any]) -> str:
    """A "Sources" list for the end of an answer's text, one line per source (a document cited
    through several hits once); empty without hits. The lines are not numbered: an answer's
    inline ``[n]`` count the context its prompt numbered, which may hold more than these."""
    lines = []
    for hit in hits:
        documents = ", ".join(hit.provenance.document_ids)
        where = f" ({documents})" if documents and documents != label(hit) else ""
        lines.append(f"- {label(hit)}{where}")
    return "\n\nSources:\n" + "\n".join(dict.fromkeys(lines)) if lines else ""


def citation(hit: Any) -> dict[str, Any]:
    """A hit as the chat endpoints hand it over beside the text: id, score, label, provenance
    and metadata, without the passage's text."""
    return {"id": hit.id, "title": label(hit), "score": hit.score, "kind": hit.kind,
            "document_ids": list(hit.provenance.document_ids), "chunk_ids": list(hit.provenance.chunk_ids),
            "sources": list(hit.provenance.sources), "metadata": hit.metadata}
