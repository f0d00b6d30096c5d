"""LightRAG benchmark (issue: rhizome-lightrag).

1. Cost with a counting fake model: model calls and prompt/completion tokens per indexed 1k
   corpus tokens and per query, on hotpotqa-100 (all 994 passages), our packed extraction and
   the paper's one-call-per-chunk setting side by side.
2. Indexing time excluding the model (and the embedder) on all 994 passages and on growing
   slices, to show linear growth.
3. Inserting one document into an index of about 1,000: its calls, tokens and time, against
   the cost of extracting that document alone.
4. Query latency excluding the model (offline keywords) at about 10k and 100k entities
   (synthetic corpus).
5. Quality offline (rule-based extraction, HashingEmbedder): hotpotqa-100 passage Recall@2/@5
   per mode, and the medical answer-content proxy per mode under a 2,000-token context.

    uv run python -m benchmarks.lightrag            # full run
    uv run python -m benchmarks.lightrag --quick    # small sizes, a smoke test

:func:`lightrag_hku_cost` is the hook the benchmark harness can call to measure lightrag-hku
with the same counting fake model when that package is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data, metrics
from rhizome.core import Document, FakeChatModel, HashingEmbedder, VectorIndex
from rhizome.core.extraction import LLMExtractor, OfflineExtractor
from rhizome.core.models.counting import CountingChatModel
from rhizome.core.text import count_tokens
from rhizome.lightrag import LightRAGIndex

RESULTS = Path(__file__).parent / "results"
MODES = ("hybrid", "local", "global", "mix", "naive")

ANCHOR = {
    "system": "lightrag-hku 1.5.7, defaults, instant counting fake model",
    "corpus": "hotpotqa-100, 994 passages, 131k tokens",
    "calls_per_chunk": 2,
    "fixed_prompt_tokens_per_call": [1750, 2100],
    "prompt_tokens_per_1k_corpus_tokens": [25000, 38000],
    "own_cpu_seconds_994_passages": 360,
    "growth": "superlinear",
}


# -- data ------------------------------------------------------------------------------------
def medical_sample(limit: int) -> tuple[list[Document], list[data.Question]]:
    """The medical corpus and ``limit`` questions spread evenly over the question file."""
    documents, questions = data.medical()
    step = max(1, len(questions) // limit)
    return documents, questions[::step][:limit]


# -- the counting fake model -----------------------------------------------------------------
_PASSAGE = re.compile(r'\[(\d+)\][^\n]*\n"""\n(.*?)\n"""', re.DOTALL)


class ExtractionResponder:
    """Valid answers to every LightRAG request, built from the prompt: per passage up to eight
    names (the kernel's rule-based finder), a relation between neighbouring names, two topic
    keywords; keyword JSON for queries; a one-line summary. Completion sizes are therefore in
    the range a real model writes."""

    def __init__(self) -> None:
        self.finder = OfflineExtractor()

    def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> Any:
        prompt = messages[-1]["content"]
        props = set((schema or {}).get("properties", {}))
        if "high_level_keywords" in props:
            names = [m[0] for m in self.finder.find_mentions(prompt.rsplit("Question:", 1)[-1])]
            return {"high_level_keywords": ["background", "relationship"], "low_level_keywords": names[:4] or ["topic"]}
        if "summary" in props:
            return {"summary": prompt.split("\n", 1)[0][:200]}
        if "same" in props:
            return {"same": []}
        if "entities" in props:
            gleaning = "content_keywords" not in props
            entities, relations, topics = [], [], []
            for number, text in _PASSAGE.findall(prompt):
                names = list(dict.fromkeys(m[0] for m in self.finder.find_mentions(text)))[:8]
                if gleaning:
                    names = names[8:9]
                n = int(number)
                entities += [{"name": x, "type": "ORGANIZATION", "description": f"{x} is mentioned in passage {n}.", "passages": [n]} for x in names]
                relations += [
                    {"source": a, "target": b, "description": f"{a} is connected to {b}.", "keywords": ["association"], "strength": 5, "passages": [n]}
                    for a, b in zip(names, names[1:])
                ]
                topics.append({"passage": n, "keywords": ["history", "people"]})
            out: dict[str, Any] = {"entities": entities, "relations": relations}
            if not gleaning:
                out["content_keywords"] = topics
            return out
        return {"answer": "unknown", "citations": []}


class TimedCountingModel(CountingChatModel):
    """Counts calls and tokens (tiktoken) and the seconds spent inside the model."""

    def __init__(self, inner: Any, **kwargs: Any) -> None:
        super().__init__(inner, **kwargs)
        self.seconds = 0.0

    async def _achat(self, messages, json_schema):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return await super()._achat(messages, json_schema)
        finally:
            self.seconds += time.perf_counter() - start


class TimedEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0

    async def _aembed_batch(self, texts):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return await super()._aembed_batch(texts)
        finally:
            self.seconds += time.perf_counter() - start


def counting_model() -> TimedCountingModel:
    return TimedCountingModel(FakeChatModel(ExtractionResponder()), max_concurrency=16)


# -- 1./2. cost and indexing time --------------------------------------------------------------
async def build(documents: list[Document], *, pack_tokens: int = 1200, path: Path | None = None) -> tuple[LightRAGIndex, dict[str, Any]]:
    model, embedder = counting_model(), TimedEmbedder()
    index = LightRAGIndex(embedder, llm=model, pack_tokens=pack_tokens, path=path, allow_empty=True, cache=False)
    start = time.perf_counter()
    report = await index.ainsert(documents)
    wall = time.perf_counter() - start
    corpus_tokens = sum(count_tokens(d.text) for d in documents)
    usage = model.usage.snapshot()
    per_1k = 1000 / max(1, corpus_tokens)
    return index, {
        "documents": len(documents),
        "chunks": report.chunks,
        "corpus_tokens": corpus_tokens,
        "entities": index.entity_table.count(),
        "relations": index.relation_table.count(),
        "calls": usage["calls"],
        "calls_per_1k": round(usage["calls"] * per_1k, 3),
        "prompt_tokens_per_1k": round(usage["prompt_tokens"] * per_1k),
        "completion_tokens_per_1k": round(usage["completion_tokens"] * per_1k),
        "calls_per_chunk": round(usage["calls"] / max(1, report.chunks), 3),
        "wall_seconds": round(wall, 2),
        "model_seconds": round(model.seconds, 2),
        "embedder_seconds": round(embedder.seconds, 2),
        "seconds_excluding_model": round(wall - model.seconds, 2),
        "seconds_excluding_model_and_embedder": round(wall - model.seconds - embedder.seconds, 2),
    }


async def query_cost(index: LightRAGIndex, questions: list[data.Question]) -> dict[str, Any]:
    model = index.llm
    out = {}
    for mode in MODES:
        model.reset()
        retriever = index.as_retriever(k=5, mode=mode)
        for q in questions:
            await retriever.aretrieve(q.question)
        usage = model.usage.snapshot()
        out[mode] = {
            "calls_per_query": round(usage["calls"] / len(questions), 2),
            "prompt_tokens_per_query": round(usage["prompt_tokens"] / len(questions)),
            "completion_tokens_per_query": round(usage["completion_tokens"] / len(questions)),
        }
    return out


async def growth(documents: list[Document], sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        index, row = await build(documents[:size])
        index.close()
        row["ms_per_document_excluding_model"] = round(1000 * row["seconds_excluding_model"] / size, 2)
        rows.append({k: row[k] for k in ("documents", "corpus_tokens", "entities", "relations", "seconds_excluding_model", "seconds_excluding_model_and_embedder", "ms_per_document_excluding_model")})
        print(f"growth: {rows[-1]}")
    return rows


async def single_insert(documents: list[Document]) -> dict[str, Any]:
    """One document into a file-backed index of the others."""
    with tempfile.TemporaryDirectory() as tmp:
        index, _ = await build(documents[:-1], path=Path(tmp) / "idx")
        model = index.llm
        model.reset()
        model.seconds = 0.0
        new = documents[-1]
        start = time.perf_counter()
        report = await index.ainsert(new)
        wall = time.perf_counter() - start
        usage = model.usage.snapshot()
        stats = dict(report.stats)
        index.close()
    alone = counting_model()
    chunks = LightRAGIndex().chunker.chunk(new)
    await LLMExtractor(alone, **{**LightRAGIndex().config.llm_extractor_options(), "allow_empty": True}).aextract(chunks)
    return {
        "index_documents": len(documents) - 1,
        "document_tokens": count_tokens(new.text),
        "calls": usage["calls"],
        "prompt_tokens": usage["prompt_tokens"],
        "extraction_alone_calls": alone.usage.calls,
        "extraction_alone_prompt_tokens": alone.usage.prompt_tokens,
        "seconds_excluding_model": round(wall - model.seconds, 3),
        "plan": stats,
    }


# -- 4. query latency at scale -----------------------------------------------------------------
_SYLLABLES = ["ka", "lo", "mi", "ra", "ven", "dor", "sil", "tam", "bre", "qui", "zan", "fel", "gor", "hal", "ist", "jor", "lum", "nar", "pel", "rus"]


def synthetic_name(rng: random.Random) -> str:
    return " ".join("".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize() for _ in range(2))


def synthetic_corpus(n_entities: int, seed: int = 5) -> list[Document]:
    """Documents of three sentences, each naming two entities from a vocabulary of
    ``n_entities`` names (every name used at least once)."""
    rng = random.Random(seed)
    names = list(dict.fromkeys(synthetic_name(rng) for _ in range(int(n_entities * 1.2))))[:n_entities]
    verbs = ["met", "funded", "painted", "visited", "studied", "married", "founded", "rebuilt"]
    order = names[:]
    rng.shuffle(order)
    docs = []
    for i in range(0, len(order), 6):
        group = order[i : i + 6] if len(order[i : i + 6]) == 6 else order[i:] + rng.sample(names, 6 - len(order[i:]))
        sentences = [f"{group[j]} {rng.choice(verbs)} {group[j + 1]} in the {rng.choice(['spring', 'winter', 'harbour', 'valley'])}." for j in range(0, 6, 2)]
        docs.append(Document(id=f"syn{i}", text=" ".join(sentences)))
    return docs


async def latency(n_entities: int, queries: int = 100) -> dict[str, Any]:
    documents = synthetic_corpus(n_entities)
    index = LightRAGIndex(HashingEmbedder(), batch_size=2048)
    start = time.perf_counter()
    await index.ainsert(documents)
    index_s = time.perf_counter() - start
    rng = random.Random(11)
    out: dict[str, Any] = {"entities": index.entity_table.count(), "relations": index.relation_table.count(), "documents": len(documents), "index_seconds": round(index_s, 1)}
    for mode in MODES:
        retriever = index.as_retriever(k=10, mode=mode)
        times = []
        for _ in range(queries):
            doc = rng.choice(documents)
            question = f"Who did {doc.text.split(' ')[0]} {doc.text.split(' ')[1]} meet?"
            t0 = time.perf_counter()
            await retriever.aretrieve(question)
            times.append((time.perf_counter() - t0) * 1000)
        out[mode] = {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(float(np.percentile(times, 95)), 2)}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    index.close()
    print(f"latency: {out}")
    return out


# -- 5. quality offline ------------------------------------------------------------------------
async def recall(documents: list[Document], questions: list[data.Question]) -> dict[str, Any]:
    index = LightRAGIndex(HashingEmbedder())
    start = time.perf_counter()
    await index.ainsert(documents)
    build_s = time.perf_counter() - start
    naive = VectorIndex(HashingEmbedder())
    await naive.ainsert(documents)
    rows = {}
    for name, retriever in [*((m, index.as_retriever(k=10, mode=m)) for m in MODES), ("naive baseline (VectorIndex)", naive.as_retriever(k=10))]:
        r2, r5 = [], []
        for q in questions:
            # the harness's ranking: passages of chunk hits first, then passages cited by the
            # entity and relation hits
            ranked = metrics.ranked_documents(await retriever.aretrieve(q.question))
            r2.append(metrics.recall_at(ranked, q.supporting, 2))
            r5.append(metrics.recall_at(ranked, q.supporting, 5))
        rows[name] = {"recall@2": round(statistics.fmean(r2), 3), "recall@5": round(statistics.fmean(r5), 3)}
    out = {"offline_index_seconds": round(build_s, 1), "entities": index.entity_table.count(), "relations": index.relation_table.count(), "rows": rows}
    index.close()
    naive.close()
    print(f"recall: {out}")
    return out


async def proxy(limit: int, budget: int = 2000) -> dict[str, Any]:
    documents, questions = medical_sample(limit)
    index = LightRAGIndex(HashingEmbedder())
    await index.ainsert(documents)
    naive = VectorIndex(HashingEmbedder())
    await naive.ainsert(documents)
    rows = {}
    for name, retriever in [*((m, index.as_retriever(k=30, mode=m)) for m in MODES), ("naive baseline (VectorIndex)", naive.as_retriever(k=30))]:
        by_type: dict[str, list[float]] = {}
        for q in questions:
            context = metrics.budgeted_context(await retriever.aretrieve(q.question), budget)
            score = metrics.answer_coverage(context, q.answer)
            by_type.setdefault(q.type, []).append(score)
            by_type.setdefault("all", []).append(score)
        rows[name] = {t: round(statistics.fmean(v), 3) for t, v in by_type.items()}
    out = {"questions": len(questions), "budget_tokens": budget, "chunks": len(index), "entities": index.entity_table.count(), "rows": rows}
    index.close()
    naive.close()
    print(f"proxy: {out}")
    return out


# -- the hook for the harness --------------------------------------------------------------------
async def lightrag_hku_cost(documents: list[Document], working_dir: str | Path, *, queries: list[str] = ()) -> dict[str, Any]:
    """Index ``documents`` with lightrag-hku (its defaults) and an instant counting fake model;
    returns calls and prompt/completion tokens (tiktoken cl100k_base, as ours) per 1k corpus
    tokens and per query, and its wall time. Raises ``ImportError`` when lightrag-hku is not
    installed. Written against lightrag-hku 1.5.x; not run here (it is not installed)."""
    from lightrag import LightRAG, QueryParam  # type: ignore[import-not-found]
    from lightrag.utils import EmbeddingFunc  # type: ignore[import-not-found]

    counts = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    embedder = HashingEmbedder()

    async def llm(prompt: str, system_prompt: str | None = None, history_messages: list | None = None, keyword_extraction: bool = False, **_: Any) -> str:
        messages = [system_prompt or "", *(m.get("content", "") for m in history_messages or []), prompt]
        if keyword_extraction or "high_level_keywords" in prompt[-2000:]:
            text = json.dumps({"high_level_keywords": ["background"], "low_level_keywords": ["topic"]})
        else:
            names = list(dict.fromkeys(m[0] for m in OfflineExtractor().find_mentions(prompt[-3000:])))[:8]
            lines = [f"entity<|#|>{n}<|#|>organization<|#|>{n} is mentioned in the text." for n in names]
            lines += [f"relation<|#|>{a}<|#|>{b}<|#|>association<|#|>{a} is connected to {b}." for a, b in zip(names, names[1:])]
            text = "\n".join([*lines, "<|COMPLETE|>"])
        counts["calls"] += 1
        counts["prompt_tokens"] += sum(count_tokens(m) for m in messages)
        counts["completion_tokens"] += count_tokens(text)
        return text

    async def embed(texts: list[str]) -> np.ndarray:
        return await embedder.aembed(texts)

    rag = LightRAG(
        working_dir=str(working_dir),
        llm_model_func=llm,
        embedding_func=EmbeddingFunc(embedding_dim=embedder.dimension, max_token_size=8192, func=embed),
    )
    await rag.initialize_storages()
    try:
        from lightrag.kg.shared_storage import initialize_pipeline_status  # type: ignore[import-not-found]

        await initialize_pipeline_status()
    except ImportError:
        pass
    corpus_tokens = sum(count_tokens(d.text) for d in documents)
    start = time.perf_counter()
    await rag.ainsert([d.text for d in documents], ids=[d.id for d in documents])
    wall = time.perf_counter() - start
    indexing = dict(counts)
    for key in counts:
        counts[key] = 0
    for q in queries:
        await rag.aquery(q, param=QueryParam(mode="hybrid", only_need_context=True))
    await rag.finalize_storages()
    per_1k = 1000 / max(1, corpus_tokens)
    n = max(1, len(queries))
    return {
        "documents": len(documents),
        "corpus_tokens": corpus_tokens,
        "calls_per_1k": round(indexing["calls"] * per_1k, 3),
        "prompt_tokens_per_1k": round(indexing["prompt_tokens"] * per_1k),
        "completion_tokens_per_1k": round(indexing["completion_tokens"] * per_1k),
        "wall_seconds": round(wall, 2),
        "query_calls": round(counts["calls"] / n, 2),
        "query_prompt_tokens": round(counts["prompt_tokens"] / n),
    }


# -- main --------------------------------------------------------------------------------------
async def main(quick: bool) -> dict[str, Any]:
    documents, questions = data.hotpotqa()
    if quick:
        documents, questions = documents[:120], questions[:10]
    result: dict[str, Any] = {"anchor_lightrag_hku": ANCHOR}
    (await build(documents[:20]))[0].close()  # warm-up: tokenizer, schemas, imports
    index, packed = await build(documents)
    packed["queries"] = await query_cost(index, questions[:20])
    index.close()
    print(f"cost (packed): {packed}")
    _, paper = await build(documents, pack_tokens=0)
    print(f"cost (one call per chunk): {paper}")
    result["cost"] = {"packed": packed, "one_call_per_chunk": paper}
    sizes = [len(documents) // 8, len(documents) // 4, len(documents) // 2, len(documents)]
    result["growth"] = await growth(documents, sizes)
    result["single_insert"] = await single_insert(documents)
    print(f"single insert: {result['single_insert']}")
    result["latency"] = [await latency(n) for n in ((2_000,) if quick else (10_000, 100_000))]
    result["recall"] = await recall(documents, questions)
    result["proxy"] = await proxy(20 if quick else 200)
    return result


def markdown(result: dict[str, Any]) -> str:
    packed, paper = result["cost"]["packed"], result["cost"]["one_call_per_chunk"]
    lines = [
        "| setting | calls / chunk | calls / 1k tok | prompt tok / 1k | completion tok / 1k | s excl. model | s excl. model and embedder |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in (("packed (default)", packed), ("one call per chunk (paper)", paper)):
        lines.append(
            f"| {name} | {row['calls_per_chunk']} | {row['calls_per_1k']} | {row['prompt_tokens_per_1k']:,} | "
            f"{row['completion_tokens_per_1k']:,} | {row['seconds_excluding_model']} | {row['seconds_excluding_model_and_embedder']} |"
        )
    lines += ["", "| mode | calls / query | prompt tok / query | completion tok / query |", "|---|---|---|---|"]
    for mode, row in packed["queries"].items():
        lines.append(f"| {mode} | {row['calls_per_query']} | {row['prompt_tokens_per_query']} | {row['completion_tokens_per_query']} |")
    lines += ["", "| documents | corpus tokens | entities | relations | s excl. model | ms / document |", "|---|---|---|---|---|---|"]
    for row in result["growth"]:
        lines.append(f"| {row['documents']} | {row['corpus_tokens']:,} | {row['entities']:,} | {row['relations']:,} | {row['seconds_excluding_model']} | {row['ms_per_document_excluding_model']} |")
    single = result["single_insert"]
    lines += ["", f"single insert into {single['index_documents']} documents: {single['calls']} calls / {single['prompt_tokens']} prompt tokens "
              f"(extraction alone: {single['extraction_alone_calls']} / {single['extraction_alone_prompt_tokens']}), "
              f"{single['seconds_excluding_model']} s excluding the model; plan {single['plan']}"]
    lines += ["", "| entities | relations | index s | " + " | ".join(f"{m} p50 / p95 ms" for m in MODES) + " |", "|---|---|---|" + "---|" * len(MODES)]
    for row in result["latency"]:
        lines.append(f"| {row['entities']:,} | {row['relations']:,} | {row['index_seconds']} | " + " | ".join(f"{row[m]['p50_ms']} / {row[m]['p95_ms']}" for m in MODES) + " |")
    lines += ["", "| system | Recall@2 | Recall@5 |", "|---|---|---|"]
    for name, row in result["recall"]["rows"].items():
        lines.append(f"| {name} | {row['recall@2']} | {row['recall@5']} |")
    proxy_rows = result["proxy"]["rows"]
    types = sorted({t for row in proxy_rows.values() for t in row if t != "all"})
    lines += ["", "| system | " + " | ".join(types) + " | all |", "|---|" + "---|" * (len(types) + 1)]
    for name, row in proxy_rows.items():
        lines.append(f"| {name} | " + " | ".join(str(row.get(t, "")) for t in types) + f" | {row['all']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    outcome = asyncio.run(main(args.quick))
    RESULTS.mkdir(exist_ok=True)
    name = "lightrag-quick.json" if args.quick else "lightrag.json"
    (RESULTS / name).write_text(json.dumps(outcome, indent=2), encoding="utf-8")
    print(markdown(outcome))
