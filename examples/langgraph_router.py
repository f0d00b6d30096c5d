"""A LangGraph pipeline: classify the question with GORAG, route it to the index of its topic,
retrieve there, and answer from the retrieved passages, citing them.

    uv run python examples/langgraph_router.py "Who led the closure of the Mire Banks?"

Everything runs offline (rule-based classifier and extractive answers); give the classifier a
chat model (llm="ollama:...") to let a model choose the label, and the answer node one
(make_answer_node("ollama:qwen2.5:7b-instruct")) to let it write, streaming.
"""

from __future__ import annotations

import sys
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph_rhizome import (
    make_answer_node,
    make_classify_node,
    make_retrieve_node,
    route_by_label,
)

from rhizome.core import Document, VectorIndex
from rhizome.gorag import GORAGClassifier
from rhizome.lightrag import LightRAGIndex
from rhizome.rag.cli import sample_corpus
from rhizome.tools import load_path

TOPICS = {
    "people-and-places": ["01-vell-islands.md", "02-port-amsel.md", "03-ilse-varn.md", "06-the-moot.md"],
    "sea-and-work": ["04-oskel-lighthouse.md", "05-kelp-trade.md", "07-mire-fisheries.md", "08-wildlife.md"],
}


class State(TypedDict, total=False):
    text: str
    question: str
    label: str
    classification: dict[str, Any]
    documents: list[dict[str, Any]]
    answer: str
    citations: list[str]


def build() -> Any:
    corpus = {d.id: d for d in load_path(sample_corpus())}
    # one index per topic: a LightRAG graph for people and places, plain vectors for the rest
    people = LightRAGIndex()
    people.insert([corpus[i] for i in TOPICS["people-and-places"]])
    sea = VectorIndex(chunk_size=200, chunk_overlap=20)
    sea.insert([corpus[i] for i in TOPICS["sea-and-work"]])

    # the classifier learns the two topics from the documents themselves (one round)
    classifier = GORAGClassifier(online=False)
    examples: list[Document] = [corpus[i] for ids in TOPICS.values() for i in ids]
    labels = [topic for topic, ids in TOPICS.items() for _ in ids]
    classifier.fit_round([d.text for d in examples], labels)

    graph = StateGraph(State)
    graph.add_node("classify", make_classify_node(classifier))
    graph.add_node("people", make_retrieve_node(people, k=2, name="people"))
    graph.add_node("sea", make_retrieve_node(sea, k=2, name="sea"))
    graph.add_node("answer", make_answer_node())  # extractive without a model
    graph.add_edge(START, "classify")
    graph.add_conditional_edges(
        "classify", route_by_label({"people-and-places": "people", "sea-and-work": "sea"}, default="sea")
    )
    graph.add_edge("people", "answer")
    graph.add_edge("sea", "answer")
    graph.add_edge("answer", END)
    return graph.compile()


def main() -> None:
    question = sys.argv[1] if len(sys.argv) > 1 else "Who led the closure of the Mire Banks?"
    app = build()
    state = app.invoke({"text": question, "question": question})
    print(f"label: {state['label']}")
    for doc in state["documents"]:
        print(f"  retrieved: {doc.get('id')} score={doc.get('score'):.3f}")
    print(f"answer: {state['answer']}")
    print(f"cites: {', '.join(state['citations'])}")


if __name__ == "__main__":
    main()
