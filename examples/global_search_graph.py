"""Your own LangGraph graph with Rhizome nodes, on MessagesState: a thematic question goes
through GraphRAG's global search as parallel branches — one per batch of community reports,
sent with `Send` — whose points are reduced by score under a token budget, then answered with
citations.

    uv run python examples/global_search_graph.py "What are the main themes of the islands' history?"

Offline here (rule-based extraction and points, extractive answer); build the index with
llm="ollama:..." for model-written reports and map steps, and give make_answer_node a chat
model to let it write the answer (its tokens stream with stream_mode="messages").
"""

from __future__ import annotations

import sys

from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph_rhizome import create_global_search_graph, make_answer_node

from rhizome.graphrag import GraphRAGIndex
from rhizome.rag.cli import sample_corpus
from rhizome.tools import load_path


def build(index: GraphRAGIndex):
    # offline_batch=2: two reports per map branch, so the small sample corpus gives several
    search = index.as_retriever(mode="global", dynamic=False, level=1, offline_batch=2)
    graph = StateGraph(MessagesState)
    graph.add_node("global_search", create_global_search_graph(search, k=6, max_tokens=400))
    graph.add_node("answer", make_answer_node())
    graph.add_edge(START, "global_search")
    graph.add_edge("global_search", "answer")
    graph.add_edge("answer", END)
    return graph.compile()


def main() -> None:
    question = sys.argv[1] if len(sys.argv) > 1 else "What are the main themes of the islands' history?"
    index = GraphRAGIndex()
    index.insert(load_path(sample_corpus()))
    app = build(index)
    branches = 0
    for _namespace, update in app.stream({"messages": [("user", question)]}, stream_mode="updates", subgraphs=True):
        for node, value in update.items():
            if node == "plan":
                print(f"plan: {len(value['plan']['batches'])} batches of community reports")
            elif node == "map":
                branches += 1
                print(f"map branch done: {len(value['points'][0]['hits'])} points")
            elif node == "reduce":
                print(f"reduce: kept {len(value['documents'])} points within the budget")
            elif node == "answer":
                print(f"answer: {value['messages'][-1].text}")
    print(f"{branches} map branches ran")
    index.close()


if __name__ == "__main__":
    main()
