"""A chat model that needs no model: the offline router drives the agent graph.

:class:`RouterChatModel` is a LangChain chat model, so the agent graph of
:func:`~langgraph_rhizome.agent.create_rag_agent` is the same with it as with ChatOllama. Its
turns are deterministic:

1. a new question (the last message is a human one): one tool call, to the index and mode the
   :class:`~langgraph_rhizome.router.QuestionRouter` chooses;
2. after the tools answered: an extractive answer — the retrieved sentence that best covers the
   question (:func:`rhizome.core.retrieval.answer.aanswer` without a model) — citing the hit it comes from
   as ``[hit id]``, as the agent's prompt asks a model to.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict

from langgraph_rhizome.router import QuestionRouter
from langgraph_rhizome.state import hits_from, this_turn
from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError
from rhizome.core.retrieval.answer import aanswer


class RouterChatModel(BaseChatModel):
    """The offline stand-in for a tool-calling chat model (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    router: QuestionRouter
    """Chooses the tool and mode of each question."""

    @property
    def _llm_type(self) -> str:
        return "rhizome-router"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Runnable:
        names = [getattr(t, "name", None) or (t.get("name") if isinstance(t, dict) else None) for t in tools]
        missing = [name for name in self.router.indexes if name not in names]
        if missing:
            raise ConfigurationError(f"the router routes to {missing}, which are not among the agent's tools {names}")
        return self.bind(**kwargs)

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        human, turn = this_turn(messages)
        if human is None:
            raise ConfigurationError("the offline router answers questions: the conversation has no human message")
        question = human.text
        results = [m for m in turn if isinstance(m, ToolMessage)]
        if not results:
            route = await self.router.aroute(question)
            call = {"name": route.tool, "args": route.arguments(question), "id": f"call_{uuid.uuid4().hex[:24]}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call], response_metadata={"route": route.model_dump()})
        else:
            hits = hits_from([d for m in results if isinstance(m.artifact, list) for d in m.artifact])
            found = await aanswer(question, hits, None)
            cites = "".join(f" [{hit.id}]" for hit in found.citations)
            message = AIMessage(content=" ".join(found.text.split()) + cites)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return run_sync(self._agenerate(messages, stop, None, **kwargs))


__all__ = ["RouterChatModel"]
