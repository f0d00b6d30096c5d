"""How the nodes read and write a graph's state, in both shapes a user's graph may have.

- A plain ``TypedDict`` state: the question is ``state[query_key]``; results go to keys of their
  own (hits as JSON dicts under ``documents``, an ``answer`` string, a ``label``).
- ``MessagesState`` (or any state with ``messages``): when ``state[query_key]`` is absent the
  question is the last human message, and a node records its work as messages — an assistant
  message calling a tool named after the node, then the tool message with the result (text as
  content, Documents or a dict as artifact) — exactly as if an agent had called a tool, so any
  chat model reads the history, and later nodes find the results in the artifacts.

Keys a state does not declare are dropped by LangGraph, so a node may write both (a state that
extends ``MessagesState`` with ``documents`` receives both).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_rhizome.retrievers import document_to_hit, hit_to_document
from langchain_rhizome.tools import format_hits
from rhizome.core.errors import InvalidInputError
from rhizome.core.types import Hit


def this_turn(messages: Sequence[BaseMessage]) -> tuple[HumanMessage | None, list[BaseMessage]]:
    """The last human message and the messages after it."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return messages[i], list(messages[i + 1 :])  # type: ignore[return-value]
    return None, list(messages)


def read_text(state: Mapping[str, Any], key: str, node: str) -> tuple[str, bool]:
    """The text a node works on and whether it came from the messages: ``state[key]`` when it
    is a non-empty string, else the last human message of ``state["messages"]``."""
    value = state.get(key)
    if isinstance(value, str) and value.strip():
        return value, False
    human, _ = this_turn(state.get("messages") or [])
    if human is not None and human.text.strip():
        return human.text, True
    raise InvalidInputError(
        f"the {node} node needs a non-empty string in state[{key!r}] or a human message in "
        f"state['messages']; got {value!r}"
    )


def hits_from(values: Sequence[Any]) -> list[Hit]:
    """Hits from what a state or an artifact holds: hits, Documents, or the JSON dicts of
    either (a message history stored with ``messages_to_dict`` keeps artifacts as dicts)."""
    out = []
    for value in values:
        if isinstance(value, Hit):
            out.append(value)
        elif isinstance(value, Document):
            out.append(document_to_hit(value))
        elif isinstance(value, Mapping) and "page_content" in value:  # a Document as JSON (messages_to_dict)
            out.append(document_to_hit(Document.model_validate(value)))
        else:
            out.append(Hit.model_validate(value))
    return out


def read_hits(state: Mapping[str, Any], key: str, from_messages: bool) -> list[Hit]:
    """The hits of this question: for a question from the messages, the Documents in the
    artifacts of the tool messages since the last human message (every tool call of this turn,
    in order); else ``state[key]``."""
    if not from_messages:
        return hits_from(state.get(key) or [])
    _, turn = this_turn(state.get("messages") or [])
    found: list[Hit] = []
    for message in turn:
        artifact = getattr(message, "artifact", None)
        if isinstance(message, ToolMessage) and isinstance(artifact, list):
            found += hits_from([d for d in artifact if isinstance(d, Document | Hit | dict)])
    return found


def tool_exchange(name: str, args: dict[str, Any], content: str, artifact: Any) -> list[BaseMessage]:
    """A node's work as messages: the call of a tool ``name`` with ``args`` and its result."""
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    return [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]),
        ToolMessage(content=content, artifact=artifact, tool_call_id=call_id, name=name),
    ]


def write_hits(hits: Sequence[Hit], key: str, from_messages: bool, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The update that stores ``hits``: JSON dicts under ``key``, and in a messages state also
    a tool exchange whose artifact holds them as Documents."""
    update: dict[str, Any] = {key: [hit.model_dump(mode="json") for hit in hits]}
    if from_messages:
        update["messages"] = tool_exchange(name, args, format_hits(list(hits)), [hit_to_document(h) for h in hits])
    return update


__all__ = ["hits_from", "read_hits", "read_text", "this_turn", "tool_exchange", "write_hits"]
