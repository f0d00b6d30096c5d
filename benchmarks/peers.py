"""Peers side by side: the same passages, the same extraction, the same instant counting fake
model, the same hashing embeddings, measured in one run (one subprocess per system, so peak
memory is that system's).

| pair | ours | peer |
|---|---|---|
| LightRAG | rhizome-lightrag (hybrid queries) | lightrag-hku 1.5.7 (hybrid, context only) |
| GraphRAG | rhizome-graphrag (global queries) | nano-graphrag 0.0.8.2 (global, context only) |
| naive | rhizome naive VectorIndex | llama-index VectorStoreIndex and BM25Retriever |

Extraction: every system's extraction prompts are answered by one oracle
(:mod:`benchmarks.oracle`), which fixes the entities and relations of every passage before the
run and writes them in the format each system asks for, so every graph is built from the same
extraction; each system's entity and relation counts after indexing are reported beside its
costs. Calls and tokens are counted the same way on both sides: every request, its prompt
(system prompt, history and user prompt) and its completion measured with tiktoken
``cl100k_base``. With an instant model, wall time is the system's own time.

Non-model CPU: ``time.process_time`` of the indexing call, less the process time spent inside
the fake chat model (answering and counting tokens) and inside the hashing embedder. The fake
model and the embedder never yield to the event loop, so the time inside them is theirs alone.
Libraries imported on first use inside the indexing call (Leiden's) are imported before the
clock starts (:data:`WARM`).

Both peers use tiktoken's ``o200k_base``, which cannot be downloaded here: they run with
``cl100k_base`` in its place (see :func:`offline_tiktoken`). Model-response caches are off on
every side (Rhizome ``cache=False``, lightrag-hku ``enable_llm_cache=False``, nano-graphrag
``enable_llm_cache=False``).

Microsoft GraphRAG's fast method is not run: its noun-phrase extractor needs NLTK/TextBlob
corpora that are downloaded at run time, which this machine cannot do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks import data
from benchmarks.oracle import Oracle, graph_size, offline_facts
from benchmarks.render import PEER_SYSTEMS as SYSTEMS
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.text import count_tokens

QUERIES = 10


class Counter:
    """The model function both peers call: ``answer(prompt, system_prompt)`` in the peer's
    format; counts calls and tokens, and the process time spent here (``cpu``)."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer or peer_answer
        self.cpu = 0.0
        self.reset()

    def reset(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = 0

    async def complete(self, prompt: str, system_prompt: str | None = None, history_messages: list | None = None, **kwargs: Any) -> str:
        start = time.process_time()
        texts = [system_prompt or "", *[m.get("content", "") for m in history_messages or []], prompt]
        answer = self.answer(prompt, system_prompt)
        self.calls += 1
        self.prompt_tokens += sum(count_tokens(t) for t in texts if t)
        self.completion_tokens += count_tokens(answer)
        self.cpu += time.process_time() - start
        return answer

    def snapshot(self) -> dict[str, int]:
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


def _names(text: str) -> list[str]:
    words = [w.strip(".,;:()[]\"'") for w in text.split()]
    names = list(dict.fromkeys(w for w in words if len(w) > 2 and w[:1].isupper() and w[1:].islower()))
    return names or ["Item", "Thing"]


def peer_answer(prompt: str, system: str | None) -> str:
    """What an obliging model would answer to the peers' prompts that are not extraction
    (query keywords, community reports, map calls), in that peer's format."""
    everything = f"{system or ''}\n{prompt}"
    if "high_level_keywords" in everything:  # lightrag-hku query keywords
        names = _names(prompt)
        return json.dumps({"high_level_keywords": names[:2], "low_level_keywords": names[2:5] or names[:1]})
    if "IMPACT SEVERITY RATING" in everything:  # nano-graphrag community report
        names = _names(prompt)
        return json.dumps({"title": " and ".join(names[:2]), "summary": f"{names[0]} and related entities.", "rating": 5.0,
                           "rating_explanation": "moderate", "findings": [{"summary": n, "explanation": f"{n} is part of it."} for n in names[:3]]})
    if '"points"' in everything:  # nano-graphrag global map
        return json.dumps({"points": [{"description": "A relevant point.", "score": 5}, {"description": "Another point.", "score": 3}]})
    return "A short answer."


class TimedHashing(HashingEmbedder):
    """The hashing embedder, keeping the process time it spends embedding (``cpu``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cpu = 0.0

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        start = time.process_time()
        try:
            return await super()._aembed_batch(texts)
        finally:
            self.cpu += time.process_time() - start


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


def _peer_embed(embedder: TimedHashing) -> Any:
    async def embed(texts: list[str]) -> Any:
        """The same hashing vectors for every system, as the numpy array both peers expect."""
        return await embedder.aembed(list(texts))

    return embed


WARM = {"rhizome": ["igraph", "leidenalg"], "nano-graphrag": ["graspologic.partition", "graspologic.utils"]}
"""Libraries a system imports on first use inside its indexing call (Leiden, for both GraphRAGs):
imported before the clock starts, so the CPU figures are the build's, not a fresh process's
one-off import (graspologic's import alone takes about 7 CPU-seconds here); the time is kept as
``warm_import_cpu_seconds``."""


def warm(system: str) -> float:
    """Import ``WARM[system]`` (those installed); the CPU seconds it took."""
    import importlib

    start = time.process_time()
    for name in WARM.get(system, ()):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    return time.process_time() - start


async def _timed(model_cpu: Any, insert: Any, query: Any, questions: list, counter: Any) -> dict[str, Any]:
    """Index with ``insert()``, then run ``query(question)`` for each question: wall time, CPU
    (all and less ``model_cpu()``, the fake model's and embedder's) and the counted calls of
    both phases."""
    model0, cpu0, start = model_cpu(), time.process_time(), time.perf_counter()
    await insert()
    index_s, cpu = time.perf_counter() - start, time.process_time() - cpu0
    model = model_cpu() - model0
    indexing = counter.snapshot()
    counter.reset()
    start = time.perf_counter()
    for q in questions:
        await query(q.question)
    query_s = (time.perf_counter() - start) / len(questions)
    return {"index_seconds": index_s, "index_cpu_seconds": cpu, "index_model_cpu_seconds": model, "index_nonmodel_cpu_seconds": cpu - model,
            "index": indexing, "query_seconds": query_s, "query": counter.snapshot()}


class _Usage:
    """A Rhizome counting model's usage with the peers' ``snapshot``/``reset``."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def snapshot(self) -> dict[str, int]:
        return self.llm.usage.snapshot() if self.llm is not None else {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}

    def reset(self) -> None:
        if self.llm is not None:
            self.llm.reset()


async def run_ours(method: str, mode: str | None, docs: list, questions: list, oracle: Oracle) -> dict[str, Any]:
    from benchmarks.systems import build_index
    from rhizome.core.models.counting import CountingChatModel
    from rhizome.core.models.fake import FakeChatModel

    class Clocked(CountingChatModel):
        cpu = 0.0

        async def _achat(self, messages: Any, json_schema: Any) -> Any:
            start = time.process_time()
            try:
                return await super()._achat(messages, json_schema)
            finally:
                self.cpu += time.process_time() - start

    warmed = warm("rhizome")
    embedder = TimedHashing()
    llm = Clocked(FakeChatModel(oracle.rhizome)) if method != "naive" else None
    index = build_index(method, embedder, llm=llm, cache=False)
    result = await _timed(
        lambda: embedder.cpu + (llm.cpu if llm is not None else 0.0),
        lambda: index.ainsert(docs),
        index.as_retriever(k=5, mode=mode).aretrieve,
        questions,
        _Usage(llm),
    )
    result["warm_import_cpu_seconds"] = warmed
    if method != "naive":
        result["graph"] = {"entities": index.entity_table.count(), "relations": index.relation_table.count()}
        if method == "graphrag":
            result["graph"]["communities"] = len(index.graph().communities)
    index.close()
    return result


async def run_lightrag_hku(docs: list, questions: list, oracle: Oracle) -> dict[str, Any]:
    offline_tiktoken()
    from lightrag import LightRAG, QueryParam
    from lightrag.utils import EmbeddingFunc

    counter, embedder = Counter(oracle.lightrag_hku), TimedHashing()

    with tempfile.TemporaryDirectory() as work:
        rag = LightRAG(working_dir=work, llm_model_func=counter.complete, embedding_func=EmbeddingFunc(embedding_dim=384, max_token_size=8192, func=_peer_embed(embedder)),
                       enable_llm_cache=False, enable_llm_cache_for_entity_extract=False)
        await rag.initialize_storages()
        result = await _timed(
            lambda: counter.cpu + embedder.cpu,
            lambda: rag.ainsert([d.text for d in docs], ids=[d.id for d in docs]),
            lambda question: rag.aquery(question, param=QueryParam(mode="hybrid", only_need_context=True)),
            questions,
            counter,
        )
        graph = await rag.chunk_entity_relation_graph._get_graph()
        result["graph"] = {"entities": graph.number_of_nodes(), "relations": graph.number_of_edges()}
        await rag.finalize_storages()
    return result


async def run_nano_graphrag(docs: list, questions: list, oracle: Oracle) -> dict[str, Any]:
    offline_tiktoken()
    from nano_graphrag import GraphRAG, QueryParam
    from nano_graphrag._utils import wrap_embedding_func_with_attrs

    warmed = warm("nano-graphrag")
    counter, embedder = Counter(oracle.nano_graphrag), TimedHashing()
    embed = wrap_embedding_func_with_attrs(embedding_dim=384, max_token_size=8192)(_peer_embed(embedder))

    with tempfile.TemporaryDirectory() as work:
        rag = GraphRAG(working_dir=work, best_model_func=counter.complete, cheap_model_func=counter.complete, embedding_func=embed, enable_llm_cache=False)
        result = await _timed(
            lambda: counter.cpu + embedder.cpu,
            lambda: rag.ainsert([d.text for d in docs]),
            lambda question: rag.aquery(question, param=QueryParam(mode="global", only_need_context=True)),
            questions,
            counter,
        )
        graph = rag.chunk_entity_relation_graph._graph
        result["graph"] = {"entities": graph.number_of_nodes(), "relations": graph.number_of_edges(),
                           "communities": len(await rag.community_reports.all_keys())}
        result["warm_import_cpu_seconds"] = warmed
    return result


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
    start, cpu = time.perf_counter(), time.process_time()
    if kind == "vector":
        index = VectorStoreIndex.from_documents(li_docs, transformations=[splitter])
        retriever = index.as_retriever(similarity_top_k=5)
    else:
        from llama_index.retrievers.bm25 import BM25Retriever

        retriever = BM25Retriever.from_defaults(nodes=splitter.get_nodes_from_documents(li_docs), similarity_top_k=5)
    index_s, cpu = time.perf_counter() - start, time.process_time() - cpu
    t0 = time.perf_counter()
    for q in questions:
        await retriever.aretrieve(q.question)
    query_s = (time.perf_counter() - t0) / len(questions)
    zero = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    return {"index_seconds": index_s, "index_cpu_seconds": cpu, "index": zero, "query_seconds": query_s, "query": zero}


HASHING = HashingEmbedder()


async def run_one(system: str, passages: int) -> dict[str, Any]:
    from rhizome.core.models.fake import SchemaResponder

    documents, questions = data.hotpotqa()
    docs, questions = documents[:passages], questions[:QUERIES]
    facts = offline_facts(docs)
    oracle = Oracle(docs, facts, fallback_rhizome=SchemaResponder(), fallback_peer=peer_answer)
    runners = {
        "rhizome-lightrag": lambda: run_ours("lightrag", "hybrid", docs, questions, oracle),
        "rhizome-graphrag": lambda: run_ours("graphrag", "global", docs, questions, oracle),
        "rhizome-naive": lambda: run_ours("naive", None, docs, questions, oracle),
        "lightrag-hku": lambda: run_lightrag_hku(docs, questions, oracle),
        "nano-graphrag": lambda: run_nano_graphrag(docs, questions, oracle),
        "llama-index-vector": lambda: run_llama_index("vector", docs, questions),
        "llama-index-bm25": lambda: run_llama_index("bm25", docs, questions),
    }
    result = await runners[system]()
    corpus_tokens = sum(count_tokens(d.text) for d in docs)
    result.update(system=system, passages=len(docs), corpus_tokens=corpus_tokens, peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
    if oracle.calls:
        result["oracle"] = {"calls": dict(oracle.calls), "passages_answered": oracle.passages_answered, "unmatched_passages": len(oracle.unmatched)}
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
    documents, _ = data.hotpotqa()
    return {"suite": "peers", "passages": passages, "queries": QUERIES, "oracle_graph": graph_size(offline_facts(documents[:passages])), "rows": rows}


def merge(saved: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new``'s rows put into ``saved`` (same settings), replacing the rows of the same systems."""
    if {k: v for k, v in saved.items() if k != "rows"} != {k: v for k, v in new.items() if k != "rows"}:
        raise SystemExit("--systems: this run's settings differ from the saved peers results; run every system instead")
    ran = {r["system"] for r in new["rows"]}
    return {**saved, "rows": [r for r in saved["rows"] if r["system"] not in ran] + new["rows"]}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run_one(sys.argv[1], int(sys.argv[2])))))
