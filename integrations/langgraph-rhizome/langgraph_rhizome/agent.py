"""``create_rag_agent``: a tool-calling agent over Rhizome indexes, on LangChain v1's agent API.

The graph is :func:`langchain.agents.create_agent` (the agent API of LangChain and LangGraph
v1; LangGraph's ``create_react_agent`` is deprecated): a model node and a tools node in a loop,
with one steerable tool per index (:func:`langchain_rhizome.create_index_tool`: query, mode,
``k``). What this module adds:

- the system prompt tells the model which index and mode suit each kind of question (global
  and thematic, specific, multi-hop), from the indexes' own mode descriptions;
- :class:`CitationsMiddleware` records, after the final answer, the hits it cites
  (``state["citations"]``: id, documents, sources — plain JSON);
- with ``classifier`` and a model, :class:`RouteHintMiddleware` adds the classifier's route to
  the system prompt of each model call;
- with ``llm=None`` the model is :class:`~langgraph_rhizome.offline.RouterChatModel`: the same
  graph, run by the offline router without any model.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime
from typing_extensions import NotRequired

from langchain_rhizome.tools import create_index_tool
from langgraph_rhizome.models import tool_calling_model
from langgraph_rhizome.offline import RouterChatModel
from langgraph_rhizome.router import QuestionRouter, named_indexes
from langgraph_rhizome.state import hits_from, this_turn
from rhizome.core.aio import run_sync

KIND_HELP = {
    "specific": "specific questions (facts about named things)",
    "multi-hop": "multi-hop questions (an answer reached through another thing, or a comparison)",
    "global": "global questions (themes, trends and summaries across the documents)",
}


def agent_prompt(router: QuestionRouter) -> str:
    """The default system prompt: which tool and mode suit each kind of question, and how to
    cite."""
    lines = ["You answer questions from the documents your tools search. Choose the tool and its mode by the kind of question:"]
    for kind, help_text in KIND_HELP.items():
        route = router.route_label(kind)
        lines.append(f"- {help_text}: {route.tool}" + (f" with mode={route.mode}" if route.mode else ""))
    lines += [
        "Search before you answer. When the passages do not answer the question, search again — another "
        "mode, another tool or other words — or search for each part of a question that has several.",
        "Answer only from the passages the tools return, and cite every passage you use by its id in "
        "square brackets, like [doc-7:0]. If they do not answer the question, say that you do not know.",
    ]
    return "\n".join(lines)


class RagAgentState(AgentState):
    """The agent's state: its messages, and the hits the last answer cites."""

    citations: NotRequired[list[dict[str, Any]]]


_BRACKETS = re.compile(r"\[([^\[\]]+)\]")


def cited_hits(state: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The hits the final answer of this turn cites by id, as JSON (``None`` while the model is
    still calling tools)."""
    _, turn = this_turn(state.get("messages") or [])
    if not turn or not isinstance(turn[-1], AIMessage) or turn[-1].tool_calls:
        return None
    found: dict[str, tuple[str, Any]] = {}
    for message in turn:
        if isinstance(message, ToolMessage) and isinstance(message.artifact, list):
            for hit in hits_from(message.artifact):
                found.setdefault(hit.id, (message.name or "", hit))
    wanted = [part.strip() for group in _BRACKETS.findall(turn[-1].text) for part in re.split(r"[,;]", group)]
    out = []
    for hit_id in dict.fromkeys(w for w in wanted if w in found):
        tool, hit = found[hit_id]
        out.append({"id": hit.id, "tool": tool, "document_ids": hit.provenance.document_ids, "sources": hit.provenance.sources})
    return out


class CitationsMiddleware(AgentMiddleware[RagAgentState]):
    """After the final answer of a turn, ``state["citations"]``: the retrieved hits it cites."""

    state_schema = RagAgentState

    def after_model(self, state: RagAgentState, runtime: Runtime) -> dict[str, Any] | None:
        citations = cited_hits(state)
        return None if citations is None else {"citations": citations}

    async def aafter_model(self, state: RagAgentState, runtime: Runtime) -> dict[str, Any] | None:
        return self.after_model(state, runtime)


class RouteHintMiddleware(AgentMiddleware):
    """Adds the router's choice for the question of this turn to the system prompt of each
    model call (used when a classifier is given along with a model)."""

    def __init__(self, router: QuestionRouter) -> None:
        super().__init__()
        self.router = router

    def _hinted(self, request: ModelRequest, route: Any) -> ModelRequest:
        target = f"{route.tool}" + (f" with mode={route.mode}" if route.mode else "")
        hint = f"The question classifier labels this question {route.label!r}: start with {target}."
        base = request.system_message.text if request.system_message else ""
        return request.override(system_message=SystemMessage(content=f"{base}\n\n{hint}".strip()))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        human, _ = this_turn(request.messages)
        if human is None:
            return handler(request)
        return handler(self._hinted(request, run_sync(self.router.aroute(human.text))))

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        human, _ = this_turn(request.messages)
        if human is None:
            return await handler(request)
        return await handler(self._hinted(request, await self.router.aroute(human.text)))


def create_rag_agent(
    llm: Any,
    indexes: Mapping[str, Any] | Sequence[Any] | Any,
    classifier: Any = None,
    checkpointer: Any = None,
    *,
    routes: Mapping[str, str] | None = None,
    k: int = 5,
    max_k: int = 20,
    system_prompt: str | None = None,
    middleware: Sequence[AgentMiddleware] = (),
    name: str = "rag_agent",
    **options: Any,
) -> Any:
    """An agent that answers questions from Rhizome indexes, citing the passages it used.

    Parameters
    ----------
    llm:
        A LangChain chat model with tool calling (``ChatOllama``, ``ChatOpenAI``, ...), or
        ``"ollama:MODEL"`` (``ChatOllama`` with the options of Rhizome's Ollama models), or
        ``None`` to run the offline router (:class:`~langgraph_rhizome.offline.RouterChatModel`)
        — no model at all.
    indexes:
        ``{"name": index}`` (each becomes the tool ``name``), or a list of indexes of distinct
        methods (tools ``search_<method>``). Any Rhizome index: its modes become the tool's
        ``mode`` enum.
    classifier:
        A question classifier with ``aclassify`` (e.g. a GORAG classifier trained on labelled
        questions); its labels are routed as :class:`~langgraph_rhizome.router.QuestionRouter`
        says. Without a model it decides every route; with one, its route is a hint in the
        system prompt. ``None``: the offline router uses rules.
    checkpointer:
        A LangGraph checkpointer (``InMemorySaver``, SQLite, Postgres): conversations resume by
        ``config={"configurable": {"thread_id": ...}}``.
    routes, k, max_k:
        Router routes (label → ``"tool"`` / ``"tool:mode"``); the tools' default and largest ``k``.
    system_prompt, middleware, name, **options:
        Passed on to :func:`langchain.agents.create_agent` (default prompt:
        :func:`agent_prompt`; ``middleware`` runs after this module's).

    The state is ``messages`` and ``citations`` (see :class:`RagAgentState`); tool results
    carry their hits as Documents in the tool messages' artifacts.
    """
    named = named_indexes(indexes)
    router = QuestionRouter(named, classifier=classifier, routes=routes, k=k)
    tools = [create_index_tool(index, tool, k=k, max_k=max_k) for tool, index in named.items()]
    stack: list[AgentMiddleware[Any, Any]] = [CitationsMiddleware()]
    if llm is None:
        model: Any = RouterChatModel(router=router)
    else:
        model = tool_calling_model(llm)
        if classifier is not None:
            stack.append(RouteHintMiddleware(router))
    return create_agent(
        model,
        tools,
        system_prompt=system_prompt or agent_prompt(router),
        middleware=[*stack, *middleware],
        checkpointer=checkpointer,
        name=name,
        **options,
    )


__all__ = [
    "CitationsMiddleware",
    "RagAgentState",
    "RouteHintMiddleware",
    "agent_prompt",
    "cited_hits",
    "create_rag_agent",
]
