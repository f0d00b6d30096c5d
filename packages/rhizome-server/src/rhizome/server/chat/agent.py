"""The router model ``rhizome/agent``: each question goes through the LangGraph agent of
:func:`langgraph_rhizome.create_rag_agent` over every index workspace, which sends it to the
workspace and mode that suit it, and answers citing the passages it used.

Without a chat model (the server's ``--llm`` not given, or ``--offline``) the agent runs on its
offline question router (:class:`~langgraph_rhizome.RouterChatModel`): the question's kind
(specific, multi-hop, global) picks the workspace and mode by what each mode says it suits,
and the answer is the retrieved sentence that best covers the question. With ``--llm
ollama:MODEL`` the model itself calls the workspaces' search tools (it must call tools), told
which mode suits which kind of question.

The agent is built on first use (it loads LangChain and LangGraph, which the rest of the server
does not need) and runs synchronously in a worker thread: a LangChain chat model keeps its async
HTTP client bound to the first event loop it ran on, and the server's worker threads run each
call on a loop of its own, so the agent's second answer would find that loop closed. A streamed answer comes as the
model writes it (the offline router writes it in one piece).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rhizome.core.errors import ConfigurationError, InvalidInputError
from rhizome.server.chat.messages import Message, text_of
from rhizome.server.offload import call_in_thread, items_in_thread

AGENT_MODEL = "rhizome/agent"


@dataclass
class AgentAnswer:
    """What the agent said, the hits it cites, and where it searched (workspace and mode)."""

    text: str
    citations: list[Any]
    routes: list[dict[str, Any]] = field(default_factory=list)


class RouterAgent:
    """The agent over a server's index workspaces (see the module docstring)."""

    def __init__(self, workspaces: Any, llm: str | None = None) -> None:
        self.workspaces = workspaces
        self.llm = llm
        self._graph: Any = None
        self._tools: dict[str, str] = {}
        self._lock = threading.Lock()

    def available(self) -> bool:
        return len(list(self.workspaces)) > 0

    def graph(self) -> Any:
        """The compiled agent graph, built once."""
        with self._lock:
            if self._graph is None:
                from langgraph_rhizome import create_rag_agent

                from langchain_rhizome.tools import tool_name

                tools: dict[str, str] = {}
                for space in self.workspaces:
                    name = tool_name(space.name)
                    if name in tools:
                        raise ConfigurationError(f"workspaces {tools[name]!r} and {space.name!r} make the same agent tool "
                                                 f"name {name!r}; rename one (NAME=PATH) to use {AGENT_MODEL}")
                    tools[name] = space.name
                self._graph = create_rag_agent(self.llm, {name: self.workspaces.get(ws).index for name, ws in tools.items()})
                self._tools = tools
            return self._graph

    def start(self, messages: Sequence[Message], filter: dict[str, Any] | None = None) -> tuple[Any, list[Any]]:
        """The graph and the conversation of a request (a bad request is refused here, before
        any answer is streamed)."""
        if filter:
            raise InvalidInputError(f"{AGENT_MODEL} chooses where to search itself and takes no filter; "
                                    "ask a workspace's model (rhizome/<workspace>) to filter")
        history = conversation(messages)
        return self.graph(), history

    async def ask(self, messages: Sequence[Message], filter: dict[str, Any] | None = None) -> AgentAnswer:
        """The agent's answer to the conversation's last user message (earlier user and
        assistant turns go along; system messages are the agent's own)."""
        graph, history = self.start(messages, filter)
        state = await call_in_thread(lambda: graph.invoke({"messages": history}))
        return self.answer_of(state)

    async def pieces(self, graph: Any, history: list[Any]) -> AsyncIterator[str | AgentAnswer]:
        """The text of the agent's answer as its model writes it (a message that calls tools
        is not shown), then the whole :class:`AgentAnswer` (as :meth:`ask` gives it)."""
        from langchain_core.messages import AIMessage, AIMessageChunk

        state: dict[str, Any] | None = None
        async for mode, data in items_in_thread(lambda: graph.stream({"messages": history}, stream_mode=["messages", "values"])):
            if mode == "values":
                state = data
                continue
            message = data[0]
            calls = getattr(message, "tool_call_chunks", None) or getattr(message, "tool_calls", None)
            if isinstance(message, AIMessage | AIMessageChunk) and not calls and message.text:
                yield message.text
        if state is None:
            raise RuntimeError("the agent's graph ended without a state")
        yield self.answer_of(state)

    def answer_of(self, state: dict[str, Any]) -> AgentAnswer:
        from langchain_core.messages import AIMessage, ToolMessage
        from langgraph_rhizome.state import hits_from, this_turn

        _, turn = this_turn(state["messages"])
        found = {hit.id: hit for m in turn if isinstance(m, ToolMessage) and isinstance(m.artifact, list) for hit in hits_from(m.artifact)}
        citations = [found[c["id"]] for c in state.get("citations") or [] if c["id"] in found]
        routes = [{"workspace": self._tools.get(call["name"], call["name"]), "mode": call["args"].get("mode"), "query": call["args"].get("query")}
                  for m in turn if isinstance(m, AIMessage) for call in m.tool_calls]
        final = turn[-1] if turn and isinstance(turn[-1], AIMessage) else None
        return AgentAnswer(final.text if final is not None else "", citations, routes)


def agent_of(request: Any) -> RouterAgent:
    """The app's agent (a 404 on a server without an index workspace)."""
    from rhizome.server.errors import ModelNameError

    agent: RouterAgent = request.app.state.agent
    if not agent.available():
        raise ModelNameError(f"{AGENT_MODEL} searches index workspaces, and this server has none")
    return agent


def conversation(messages: Sequence[Message]) -> list[Any]:
    """The chat's user and assistant turns as LangChain messages, ending with a user message."""
    from langchain_core.messages import AIMessage, HumanMessage

    turns: list[Any] = []
    for message in messages:
        text = text_of(message)
        if message.role == "user" and text.strip():
            turns.append(HumanMessage(content=text))
        elif message.role == "assistant" and text.strip():
            turns.append(AIMessage(content=text))
    while turns and not isinstance(turns[-1], HumanMessage):
        turns.pop()
    if not turns:
        raise InvalidInputError("the request holds no user message with text; the last user message is the question")
    return turns


__all__ = ["AGENT_MODEL", "AgentAnswer", "RouterAgent", "agent_of", "conversation"]
