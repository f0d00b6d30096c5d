"""Shared pieces of the LangGraph tests: the sample corpus indexed with two methods (built once),
and a scripted tool-calling chat model."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field

from rhizome.graphrag import GraphRAGIndex
from rhizome.hipporag import HippoRAGIndex
from rhizome.rag.cli import sample_corpus
from rhizome.tools import load_path

SPECIFIC = "Who led the closure of the Mire Banks?"
GLOBAL = "What are the main themes of the islands' history?"
MULTI_HOP = "Which lighthouse was paid for by the assembly that meets in Port Amsel?"


@pytest.fixture(scope="session")
def islands() -> dict[str, Any]:
    """The sample corpus as a GraphRAG index and a HippoRAG index (offline, hashing embedder)."""
    documents = load_path(sample_corpus())
    graph, memory = GraphRAGIndex(), HippoRAGIndex()
    graph.insert(documents)
    memory.insert(documents)
    yield {"islands_graph": graph, "islands_memory": memory}
    graph.close()
    memory.close()


class ScriptedChatModel(FakeMessagesListChatModel):
    """Answers with ``responses`` in turn (tool calls included) and keeps what it was sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def tool_call(name: str, call_id: str = "call-1", **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])
