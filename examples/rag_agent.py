"""An agent over one corpus indexed with two methods: GraphRAG (local and global search) and
HippoRAG (multi-hop). Each question goes to the index and mode that suit it, the answer cites
the passages, and the conversation lives in a checkpointed thread.

    uv run python examples/rag_agent.py                          # offline router, no model
    uv run python examples/rag_agent.py --model ollama:qwen2.5:7b-instruct

Without --model the offline question router drives the agent (rules choose index and mode; the
answer is the retrieved sentence that best covers the question). With a model — any `ollama:`
model that calls tools, or any LangChain chat model in code — the model chooses, and may call
several tools before it answers.
"""

from __future__ import annotations

import argparse

from langgraph.checkpoint.memory import InMemorySaver
from langgraph_rhizome import create_rag_agent

from rhizome.graphrag import GraphRAGIndex
from rhizome.hipporag import HippoRAGIndex
from rhizome.rag.cli import sample_corpus
from rhizome.tools import load_path

QUESTIONS = [
    "Who led the closure of the Mire Banks?",
    "What are the main themes of the islands' history?",
    "Which lighthouse was paid for by the assembly that meets in Port Amsel?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="e.g. ollama:qwen2.5:7b-instruct (default: the offline router)")
    args = parser.parse_args()

    documents = load_path(sample_corpus())
    graph, memory = GraphRAGIndex(), HippoRAGIndex()  # offline extraction, hashing embedder
    graph.insert(documents)
    memory.insert(documents)

    agent = create_rag_agent(args.model, {"islands_graph": graph, "islands_memory": memory}, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "islands"}}
    for question in QUESTIONS:
        print(f"\nQ: {question}")
        for update in agent.stream({"messages": [("user", question)]}, thread, stream_mode="updates"):
            for node, value in update.items():
                for message in (value or {}).get("messages", []):
                    for call in getattr(message, "tool_calls", None) or []:
                        print(f"  [{node}] calls {call['name']} mode={call['args'].get('mode')} k={call['args'].get('k')}")
                    if message.type == "tool":
                        print(f"  [{node}] {message.name} returned {len(message.artifact or [])} passages")
        state = agent.get_state(thread).values
        print(f"A: {state['messages'][-1].text}")
        for citation in state.get("citations", []):
            print(f"  cites {citation['id']} from {citation['tool']} (documents {', '.join(citation['document_ids'])})")
    turns = sum(1 for m in agent.get_state(thread).values["messages"] if m.type == "human")
    print(f"\nthread 'islands' holds {turns} questions")
    graph.close()
    memory.close()


if __name__ == "__main__":
    main()
