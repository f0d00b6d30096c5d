"""The question a chat's last turn asks, made to stand on its own for retrieval.

"Who founded it?" after "Tell me about the Salt Guild" finds nothing about the guild when it is
searched for alone. :func:`astandalone` turns a conversation into the query to search with:

- a conversation with one user question: that question, unchanged (no model call);
- with a chat model: the model rewrites the last question so that it names what it refers to,
  from the conversation before it (one call, through the model's cache and retries; the
  conversation packed newest turn first into the model's window, the oldest turns left out
  when it does not all fit). An empty rewrite falls back to the question;
- without one: the user's previous question, then the last one, as one query, so that the
  topic the conversation was on is searched for too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rhizome.core.errors import InvalidInputError
from rhizome.core.models.budget import fit
from rhizome.core.retrieval.contract import pack

Turn = tuple[str, str]
"""One message of a conversation: ``(role, text)``, the role ``"user"``, ``"assistant"`` or ``"system"``."""

HISTORY_TOKENS = 1500
"""Tokens of the conversation before the last question that a rewrite prompt carries at most."""
REWRITE_REPLY_TOKENS = 200
"""Room kept for the rewritten question."""

REWRITE_SYSTEM = "You make the last question of a conversation understandable without the conversation."
REWRITE_INSTRUCTIONS = (
    "Write the last question again so that it can be understood on its own: replace every word "
    "that points back into the conversation (it, she, they, that, there, the same...) with what "
    "it stands for there. Change nothing else; if it already stands on its own, write it as it "
    "is. Reply with the question alone."
)
_SPEAKERS = {"user": "User", "assistant": "Assistant"}


def _prompt(history: str, question: str) -> str:
    return f"Conversation:\n{history}\n\nLast question: {question}\n\n{REWRITE_INSTRUCTIONS}"


def split_last_question(turns: Sequence[Turn]) -> tuple[str, list[Turn]]:
    """The last user turn with text, and the user and assistant turns before it."""
    for at in range(len(turns) - 1, -1, -1):
        role, text = turns[at]
        if role == "user" and text.strip():
            return text, [(r, t) for r, t in turns[:at] if r in _SPEAKERS and t.strip()]
    raise InvalidInputError("the conversation holds no user message with text; its last user message is the question")


async def astandalone(turns: Sequence[Turn], llm: Any = None, *, max_history_tokens: int = HISTORY_TOKENS) -> str:
    """The query that retrieves what the conversation's last question asks (see the module
    docstring). ``llm``: a kernel chat model, or ``None`` to stay offline."""
    question, before = split_last_question(turns)
    if not any(role == "user" for role, _ in before):
        return question
    if llm is None:
        previous = next(text for role, text in reversed(before) if role == "user")
        return f"{previous.strip()}\n{question.strip()}"
    budget = fit(llm, max_history_tokens, reply_tokens=REWRITE_REPLY_TOKENS, fixed=[REWRITE_SYSTEM, _prompt("", question)])
    packed = pack(list(reversed(before)), budget, lambda turn: f"{_SPEAKERS[turn[0]]}: {turn[1].strip()}", overhead=1)
    history = "\n".join(text for _, text in reversed(packed))
    if not history:
        return question
    rewritten = (await llm.acomplete(_prompt(history, question), system=REWRITE_SYSTEM)).text.strip().strip('"').strip()
    return rewritten or question


__all__ = ["HISTORY_TOKENS", "Turn", "astandalone", "split_last_question"]
