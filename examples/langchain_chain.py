"""A Rhizome index as the retriever of an ordinary LangChain (LCEL) chain.

    uv run python examples/langchain_chain.py "Who drew the first map that showed the Teeth?"

With Ollama running (and `pip install langchain-ollama`), ChatOllama writes the answer; without
it, a small extractive step stands in for the model so the chain still runs end to end.
"""

from __future__ import annotations

import sys

from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from langchain_rhizome import RhizomeRetriever
from rhizome.core import HashingEmbedder, VectorIndex, check_ollama
from rhizome.core.retrieval.answer import answer
from rhizome.core.types import Hit
from rhizome.rag.cli import sample_corpus
from rhizome.tools import load_path


def chat_model():
    status = check_ollama()
    if status.reachable and status.has_model("qwen2.5:7b-instruct"):
        try:
            from langchain_ollama import ChatOllama

            return ChatOllama(model="qwen2.5:7b-instruct", temperature=0, num_ctx=8192) | StrOutputParser()
        except ImportError:
            print("(pip install langchain-ollama to let the model write the answer)")
    # offline stand-in: pick the best sentence from the retrieved context
    def extractive(prompt_value) -> str:
        messages = prompt_value.to_messages()
        question = messages[-1].content.rsplit("Question:", 1)[-1].strip()
        passages = messages[-1].content.split("Question:", 1)[0]
        hits = [Hit(id=str(i), text=p, score=1.0) for i, p in enumerate(passages.split("\n\n")) if p.strip()]
        return answer(question, hits).text

    return RunnableLambda(extractive)


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(f"[{d.metadata.get('title', d.id)}] {d.page_content}" for d in docs)


def main() -> None:
    question = sys.argv[1] if len(sys.argv) > 1 else "Who drew the first map that showed the Teeth?"
    index = VectorIndex(HashingEmbedder(), chunk_size=200, chunk_overlap=20)
    index.insert(load_path(sample_corpus()))
    retriever = RhizomeRetriever.from_index(index, k=3)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context only."), ("human", "{context}\n\nQuestion: {question}")]
    )
    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | chat_model()
    print(chain.invoke(question))
    for doc in retriever.invoke(question, k=2):
        print(f"  source: {doc.metadata['title']} score={doc.metadata['score']:.3f} spans={doc.metadata['spans']}")


if __name__ == "__main__":
    main()
