"""Peers side by side: the same passages, the same instant counting fake model, the same hashing
embeddings, measured in one run (one subprocess per system, so peak memory is that system's).

| pair | ours | peer |
|---|---|---|
| LightRAG | rhizome-lightrag (hybrid queries) | lightrag-hku 1.5.7 (hybrid, context only) |
| GraphRAG | rhizome-graphrag (global queries) | nano-graphrag 0.0.8.2 (global, context only) |
| naive | rhizome naive VectorIndex | llama-index VectorStoreIndex and BM25Retriever |

The fake model answers every prompt instantly with a valid answer in the format its caller
expects — JSON for us, each peer's delimited records for the peers — naming the same number of
entities (4) and relations (4) taken from the passage, so the graphs are alike in size. Calls
and tokens are counted the same way on both sides: every request, its prompt (system prompt,
history and user prompt) and its completion measured with tiktoken ``cl100k_base``. With an
instant model, wall time is the system's own time.

Both peers use tiktoken's ``o200k_base``, which cannot be downloaded here: they run with
``cl100k_base`` in its place (see :func:`offline_tiktoken`).

Microsoft GraphRAG's fast method is not run: its noun-phrase extractor needs NLTK/TextBlob
corpora that are downloaded at run time, which this machine cannot do.
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks import data
from rhizome.core.embeddings import HashingEmbedder
from rhizome.core.text import count_tokens

QUERIES = 10
ENTITIES = 4
RELATIONS = 4
SYSTEMS = ["rhizome-lightrag", "lightrag-hku", "rhizome-graphrag", "nano-graphrag", "rhizome-naive", "llama-index-vector", "llama-index-bm25"]
PAIRS = [("rhizome-lightrag", "lightrag-hku"), ("rhizome-graphrag", "nano-graphrag"), ("rhizome-naive", "llama-index-vector"), ("rhizome-naive", "llama-index-bm25")]


class Counter:
    def __init__(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = 0

    def add(self, prompt_texts: list[str], answer: str) -> str:
        self.calls += 1
        self.prompt_tokens += sum(count_tokens(t) for t in prompt_texts if t)
        self.completion_tokens += count_tokens(answer)
        return answer

    async def complete(self, prompt: str, system_prompt: str | None = None, history_messages: list | None = None, **kwargs: Any) -> str:
        """The model function both peers call: answers in the peer's format, counts the call."""
        texts = [system_prompt or "", *[m.get("content", "") for m in history_messages or []], prompt]
        return self.add(texts, peer_answer(prompt, system_prompt))

    def snapshot(self) -> dict[str, int]:
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


def _names(text: str) -> list[str]:
    words = [w.strip(".,;:()[]\"'") for w in text.split()]
    names = list(dict.fromkeys(w for w in words if len(w) > 2 and w[:1].isupper() and w[1:].islower()))
    return names or ["Item", "Thing"]


def _passage(prompt: str) -> str:
    fenced = re.findall(r"```\n?(.*?)```", prompt, flags=re.S)
    if fenced:
        return max(fenced, key=len)
    match = re.search(r"Text:\s*(.*?)\n#{6,}", prompt, flags=re.S)
    return match.group(1) if match else prompt[-2000:]


def peer_answer(prompt: str, system: str | None) -> str:
    """What an obliging model would answer to each peer prompt, in that peer's format."""
    everything = f"{system or ''}\n{prompt}"
    if "high_level_keywords" in everything:  # lightrag-hku query keywords
        names = _names(prompt)
        return json.dumps({"high_level_keywords": names[:2], "low_level_keywords": names[2:5] or names[:1]})
    if "---Input Text---" in prompt:  # lightrag-hku extraction
        names = _names(_passage(prompt))
        rows = [f"entity<|#|>{n}<|#|>Other<|#|>{n} appears in the text." for n in names[:ENTITIES]]
        pairs = list(zip(names, names[1:]))[:RELATIONS]
        rows += [f"relation<|#|>{a}<|#|>{b}<|#|>related<|#|>{a} relates to {b}." for a, b in pairs]
        return "\n".join(rows) + "\n<|COMPLETE|>"
    if "Based on the last extraction task" in prompt:  # lightrag-hku gleaning: nothing new
        return "<|COMPLETE|>"
    if "-Real Data-" in prompt and "Entity_types:" in prompt:  # nano-graphrag extraction
        names = _names(_passage(prompt))
        rows = [f'("entity"<|>"{n.upper()}"<|>"geo"<|>"{n} appears in the text.")' for n in names[:ENTITIES]]
        pairs = list(zip(names, names[1:]))[:RELATIONS]
        rows += [f'("relationship"<|>"{a.upper()}"<|>"{b.upper()}"<|>"{a} relates to {b}."<|>5)' for a, b in pairs]
        return "##".join(rows) + "<|COMPLETE|>"
    if "MANY entities were missed" in prompt:
        return "<|COMPLETE|>"
    if "Answer YES | NO" in prompt:
        return "NO"
    if "IMPACT SEVERITY RATING" in everything:  # nano-graphrag community report
        names = _names(prompt)
        return json.dumps({"title": " and ".join(names[:2]), "summary": f"{names[0]} and related entities.", "rating": 5.0,
                           "rating_explanation": "moderate", "findings": [{"summary": n, "explanation": f"{n} is part of it."} for n in names[:3]]})
    if '"points"' in everything:  # nano-graphrag global map
        return json.dumps({"points": [{"description": "A relevant point.", "score": 5}, {"description": "Another point.", "score": 3}]})
    return "A short answer."


HASHING = HashingEmbedder()


def offline_tiktoken() -> None:
    """Both peers ask tiktoken for ``o200k_base`` (the gpt-4o encoding), which tiktoken downloads
    on first use and no package ships; this machine cannot download it. In the peer subprocess
    we hand them ``cl100k_base`` instead. It changes only their internal token arithmetic
    (chunking and truncation budgets; every hotpotqa passage stays one chunk either way); every
    count in the tables comes from our own counter, identical for all systems."""
    import tiktoken

    from rhizome.core.text import get_encoding

    cl100k = get_encoding()
    get, for_model = tiktoken.get_encoding, tiktoken.encoding_for_model
    tiktoken.get_encoding = lambda name: cl100k if name == "o200k_base" else get(name)
    tiktoken.encoding_for_model = lambda model: cl100k if model.startswith(("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4")) else for_model(model)


async def _embed(texts: list[str]) -> Any:
    """The same hashing vectors for every system, as the numpy array both peers expect."""
    return await HASHING.aembed(list(texts))


async def run_ours(method: str, mode: str | None, docs: list, questions: list) -> dict[str, Any]:
    from benchmarks.systems import build_index
    from rhizome.core.models.counting import CountingChatModel
    from rhizome.core.models.fake import FakeChatModel, SchemaResponder

    llm = CountingChatModel(FakeChatModel(SchemaResponder(max_items=ENTITIES)))
    index = build_index(method, HashingEmbedder(), llm=llm if method != "naive" else None, cache=False)
    start = time.perf_counter()
    await index.ainsert(docs)
    index_s = time.perf_counter() - start
    indexing = llm.usage.snapshot()
    llm.reset()
    retriever = index.as_retriever(k=5, mode=mode)
    t0 = time.perf_counter()
    for q in questions:
        await retriever.aretrieve(q.question)
    query_s = (time.perf_counter() - t0) / len(questions)
    index.close()
    return {"index_seconds": index_s, "index": indexing, "query_seconds": query_s, "query": llm.usage.snapshot()}


async def _timed(counter: Counter, insert: Any, query: Any, questions: list) -> dict[str, Any]:
    """Index with ``insert()``, then run ``query(question)`` for each question; the time and the
    counted calls of both phases."""
    start = time.perf_counter()
    await insert()
    index_s = time.perf_counter() - start
    indexing = counter.snapshot()
    counter.__init__()
    start = time.perf_counter()
    for q in questions:
        await query(q.question)
    query_s = (time.perf_counter() - start) / len(questions)
    return {"index_seconds": index_s, "index": indexing, "query_seconds": query_s, "query": counter.snapshot()}


async def run_lightrag_hku(docs: list, questions: list) -> dict[str, Any]:
    offline_tiktoken()
    from lightrag import LightRAG, QueryParam
    from lightrag.utils import EmbeddingFunc

    counter = Counter()

    with tempfile.TemporaryDirectory() as work:
        rag = LightRAG(working_dir=work, llm_model_func=counter.complete, embedding_func=EmbeddingFunc(embedding_dim=384, max_token_size=8192, func=_embed))
        await rag.initialize_storages()
        result = await _timed(
            counter,
            lambda: rag.ainsert([d.text for d in docs], ids=[d.id for d in docs]),
            lambda question: rag.aquery(question, param=QueryParam(mode="hybrid", only_need_context=True)),
            questions,
        )
        await rag.finalize_storages()
    return result


async def run_nano_graphrag(docs: list, questions: list) -> dict[str, Any]:
    offline_tiktoken()
    from nano_graphrag import GraphRAG, QueryParam
    from nano_graphrag._utils import wrap_embedding_func_with_attrs

    counter = Counter()
    embed = wrap_embedding_func_with_attrs(embedding_dim=384, max_token_size=8192)(_embed)

    with tempfile.TemporaryDirectory() as work:
        rag = GraphRAG(working_dir=work, best_model_func=counter.complete, cheap_model_func=counter.complete, embedding_func=embed, enable_llm_cache=False)
        return await _timed(
            counter,
            lambda: rag.ainsert([d.text for d in docs]),
            lambda question: rag.aquery(question, param=QueryParam(mode="global", only_need_context=True)),
            questions,
        )


async def run_llama_index(kind: str, docs: list, questions: list) -> dict[str, Any]:
    from llama_index.core import Document as LIDocument
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.node_parser import SentenceSplitter

    class Hashing(BaseEmbedding):
        def _get_query_embedding(self, query):
            return HASHING.embed([query])[0].tolist()

        def _get_text_embedding(self, text):
            return HASHING.embed([text])[0].tolist()

        def _get_text_embeddings(self, texts):
            return HASHING.embed(texts).tolist()

        async def _aget_query_embedding(self, query):
            return (await HASHING.aembed([query]))[0].tolist()

    Settings.embed_model = Hashing()
    Settings.llm = None
    li_docs = [LIDocument(text=d.text, id_=d.id) for d in docs]
    splitter = SentenceSplitter(chunk_size=1200, chunk_overlap=100)
    start = time.perf_counter()
    if kind == "vector":
        index = VectorStoreIndex.from_documents(li_docs, transformations=[splitter])
        retriever = index.as_retriever(similarity_top_k=5)
    else:
        from llama_index.retrievers.bm25 import BM25Retriever

        retriever = BM25Retriever.from_defaults(nodes=splitter.get_nodes_from_documents(li_docs), similarity_top_k=5)
    index_s = time.perf_counter() - start
    t0 = time.perf_counter()
    for q in questions:
        await retriever.aretrieve(q.question)
    query_s = (time.perf_counter() - t0) / len(questions)
    zero = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    return {"index_seconds": index_s, "index": zero, "query_seconds": query_s, "query": zero}


async def run_one(system: str, passages: int) -> dict[str, Any]:
    documents, questions = data.hotpotqa()
    docs, questions = documents[:passages], questions[:QUERIES]
    runners = {
        "rhizome-lightrag": lambda: run_ours("lightrag", "hybrid", docs, questions),
        "rhizome-graphrag": lambda: run_ours("graphrag", "global", docs, questions),
        "rhizome-naive": lambda: run_ours("naive", None, docs, questions),
        "lightrag-hku": lambda: run_lightrag_hku(docs, questions),
        "nano-graphrag": lambda: run_nano_graphrag(docs, questions),
        "llama-index-vector": lambda: run_llama_index("vector", docs, questions),
        "llama-index-bm25": lambda: run_llama_index("bm25", docs, questions),
    }
    result = await runners[system]()
    corpus_tokens = sum(count_tokens(d.text) for d in docs)
    result.update(system=system, passages=len(docs), corpus_tokens=corpus_tokens, peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
    return result


def run(passages: int, systems: list[str] | None = None, timeout: float = 3600) -> dict[str, Any]:
    rows = []
    for system in systems or SYSTEMS:
        cmd = [sys.executable, "-m", "benchmarks.peers", system, str(passages)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            if out.returncode == 0:
                rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            else:
                rows.append({"system": system, "error": (out.stderr.strip().splitlines() or ["failed"])[-1][:300]})
        except subprocess.TimeoutExpired:
            rows.append({"system": system, "error": f"did not finish within {timeout:.0f} s"})
        print(f"peers: {rows[-1]}", file=sys.stderr)
    return {"suite": "peers", "passages": passages, "queries": QUERIES, "rows": rows}


def table(result: dict[str, Any]) -> str:
    by = {r["system"]: r for r in result["rows"]}
    lines = [
        f"hotpotqa-100, first {result['passages']} passages, {result['queries']} queries; instant counting fake model; hashing embeddings.",
        "",
        "| system | index calls / 1k tok | index prompt tok / 1k | index time (s) | calls / query | prompt tok / query | query time (ms) | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in SYSTEMS:
        r = by.get(name)
        if r is None:
            continue
        if "error" in r:
            lines.append(f"| {name} | not run: {r['error']} | | | | | | |")
            continue
        per_1k = 1000 / max(1, r["corpus_tokens"])
        lines.append(
            f"| {name} | {r['index']['calls'] * per_1k:.2f} | {r['index']['prompt_tokens'] * per_1k:,.0f} | {r['index_seconds']:.1f} | "
            f"{r['query']['calls'] / result['queries']:.1f} | {r['query']['prompt_tokens'] / result['queries']:,.0f} | {r['query_seconds'] * 1000:.1f} | {r['peak_rss_mb']} |"
        )
    lines += ["", "Ratios, peer / ours (above 1: the peer spends more):", "", "| ours | peer | index prompt tokens | index time | query prompt tokens | query time | peak RSS |", "|---|---|---|---|---|---|---|"]
    for ours, peer in PAIRS:
        a, b = by.get(ours), by.get(peer)
        if not a or not b or "error" in a or "error" in b:
            continue

        def ratio(x: float, y: float) -> str:
            return f"{y / x:.1f}×" if x else ("–" if not y else "∞")

        lines.append(
            f"| {ours} | {peer} | {ratio(a['index']['prompt_tokens'], b['index']['prompt_tokens'])} | {ratio(a['index_seconds'], b['index_seconds'])} | "
            f"{ratio(a['query']['prompt_tokens'], b['query']['prompt_tokens'])} | {ratio(a['query_seconds'], b['query_seconds'])} | {ratio(a['peak_rss_mb'], b['peak_rss_mb'])} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run_one(sys.argv[1], int(sys.argv[2])))))
