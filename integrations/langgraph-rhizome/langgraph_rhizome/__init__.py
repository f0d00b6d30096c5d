"""langgraph_rhizome — Rhizome's methods composed in LangGraph graphs.

- nodes for your own graphs, in a ``TypedDict`` state or ``MessagesState``: retrieve, classify
  (GORAG) with :func:`route_by_label`, answer (cited, streamed), and global search as a
  map-reduce graph with one branch per batch of communities;
- :func:`create_rag_agent`: a tool-calling agent over several indexes (LangChain v1's
  ``create_agent``), on Ollama or any chat model with tool calling, or run by the offline
  question router with no model at all.
"""

from langchain_rhizome.tools import create_index_tool
from langgraph_rhizome.agent import (
    CitationsMiddleware,
    RagAgentState,
    RouteHintMiddleware,
    create_rag_agent,
)
from langgraph_rhizome.mapreduce import GlobalSearchState, create_global_search_graph
from langgraph_rhizome.nodes import (
    AnswerState,
    ClassifyState,
    RetrieveState,
    make_answer_node,
    make_classify_node,
    make_retrieve_node,
    route_by_label,
)
from langgraph_rhizome.offline import RouterChatModel
from langgraph_rhizome.router import QuestionRouter, Route, question_kind

__all__ = [
    "AnswerState",
    "CitationsMiddleware",
    "ClassifyState",
    "GlobalSearchState",
    "QuestionRouter",
    "RagAgentState",
    "RetrieveState",
    "Route",
    "RouteHintMiddleware",
    "RouterChatModel",
    "create_global_search_graph",
    "create_index_tool",
    "create_rag_agent",
    "make_answer_node",
    "make_classify_node",
    "make_retrieve_node",
    "question_kind",
    "route_by_label",
]
