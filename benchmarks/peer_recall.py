"""The peers' passage recall on musique-dev, fed what Rhizome is fed: the GPT-3.5 OpenIE triples
of HippoRAG (``data.musique_openie()``) as the extraction and all-MiniLM-L6-v2 (through
``make_embedder("sentence-transformers:all-MiniLM-L6-v2")``, normalised vectors) as the embedder.

| system | index | query |
|---|---|---|
| lightrag-hku 1.5.7 | ``ainsert`` of every passage, one chunk each | ``aquery_data`` in modes local, global, hybrid, mix |
| nano-graphrag 0.0.8.2 | ``ainsert`` of every passage, one chunk each | ``aquery`` local, ``only_need_context`` |

Extraction. No model runs: a stand-in model answers each chunk's extraction prompt with that
passage's OpenIE record, read with Rhizome's own importer (:func:`import_openie`, so the entity
and triple set is exactly the one Rhizome indexes), written in the peer's delimited format: one
entity row per entity (type ``Other`` — lightrag-hku's parser reads ``<|#|>entity<|#|>`` as a
record separator; description = the name, as OpenIE gives none and Rhizome embeds the name alone) and one relation row per triple (keywords = the predicate, description
= ``"subject predicate object"``). Gleaning prompts get nothing new, nano-graphrag's "continue?"
gets NO, description-summary prompts get the descriptions joined, and nano-graphrag's community
reports get :func:`benchmarks.peers.peer_answer`'s generic report (its local context lists
reports, but they play no part in which text units it picks or their order).

Queries. No model answers queries either. lightrag-hku gets its keywords explicitly (QueryParam
``hl_keywords`` / ``ll_keywords``) from Rhizome's offline rules
(:func:`rhizome.lightrag.query.offline_query_keywords`); nano-graphrag's local mode needs no
keywords (it embeds the question). Every other query setting is the peer's default (lightrag-hku:
top_k 40, chunk_top_k 20, 30k-token context; nano-graphrag: top_k 20, 4k tokens of text units);
lightrag-hku's reranker is off (none is configured, so this only silences its warning).

Ranking. The passages in the order the peer's context lists its text units, de-duplicated:
lightrag-hku's ``data.chunks`` (the "Document Chunks" of its context, checked against the
context string on the first question of each mode), nano-graphrag's ``-----Sources-----`` rows.
Each text unit is mapped back to its passage by its text. Recall@k as in the harness
(:func:`benchmarks.metrics.recall_at`).

Run (each peer in its own subprocess). The full corpus took 1 h 46 min on 2 cores shared with
other jobs, 89 min of it lightrag-hku's indexing: its default JSON / nano-vectordb / GraphML
storages rewrite their whole files as documents complete, and its pace fell from about 26 to 13
passages a minute as they grew::

    RHIZOME_SHARED_DATA=DATA_DIR .venv-bench/bin/python -m benchmarks.peer_recall
    .venv-bench/bin/python -m benchmarks.peer_recall --passages 200   # the questions whose gold is inside
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import data, metrics

EMBEDDER = "sentence-transformers:all-MiniLM-L6-v2"
PEERS: dict[str, list[str]] = {
    "lightrag-hku": ["local", "global", "hybrid", "mix"],
    "nano-graphrag": ["local"],
}
SYSTEMS = [f"{peer}:{mode}" for peer, modes in PEERS.items() for mode in modes]
VERSIONS = {"lightrag-hku": "1.5.7", "nano-graphrag": "0.0.8.2"}
RESULT = Path(__file__).resolve().parent / "results" / "peer-recall-musique.json"
CHUNK_TOKENS = 4096
"""Chunk size given to both peers: above the longest musique passage (439 tokens), so each passage
is exactly one chunk (checked after indexing)."""

LIGHTRAG_TYPE = "Other"
"""The entity type in lightrag-hku's rows: the type its prompt prescribes when none applies (a
type spelled ``entity`` would read as a record separator, ``<|#|>entity<|#|>``, to its parser)."""
NANO_TYPE = "other"

_SPACES = re.compile(r"\s+")


def squash(text: str) -> str:
    """Whitespace runs collapsed, ends trimmed: the key that maps a peer's text unit to a passage."""
    return _SPACES.sub(" ", text).strip()


def _unit_key(text: str) -> str:
    # nano-graphrag's CSV cells lose surrounding quotes and apostrophes; key passages the same way
    return squash(text).strip("'").strip('"').strip()


# -- the corpus and its triples ----------------------------------------------------------------
def corpus(passages: int | None) -> tuple[list[Any], list[data.Question]]:
    """The first ``passages`` musique passages (all by default) and the questions whose gold
    passages are all among them, in file order."""
    documents, questions = data.musique()
    docs = documents[:passages] if passages else list(documents)
    ids = {d.id for d in docs}
    return docs, [q for q in questions if q.supporting and set(q.supporting) <= ids]


@dataclass(frozen=True)
class Facts:
    """One passage's OpenIE record as Rhizome imports it: entity display names and triples."""

    entities: tuple[str, ...]
    triples: tuple[tuple[str, str, str, str], ...]
    """``(subject, predicate, object, description)``."""


def passage_facts(docs: list[Any]) -> dict[str, Facts]:
    """Passage id -> its OpenIE entities and triples, through Rhizome's importer (matched by text;
    the same skips, de-duplication and added subject/object entities as Rhizome's index)."""
    from rhizome.core.extraction import import_openie
    from rhizome.core.types import Chunk

    chunks = [
        Chunk(id=d.id, document_id=d.id, text=d.text, index=0, start=0, end=len(d.text), n_tokens=0)
        for d in docs
    ]
    logging.getLogger("rhizome.core.extraction.openie").setLevel(
        logging.ERROR
    )  # a slice leaves most passages unmatched
    out: dict[str, Facts] = {}
    for extraction in import_openie(data.musique_openie(), chunks):
        if not extraction.metadata.get("matched_chunk"):
            continue
        names = {e.id: e.name for e in extraction.entities}
        triples = tuple(
            (names[r.source], r.predicate, names[r.target], r.description)
            for r in extraction.relations
        )
        out[extraction.chunk_id] = Facts(tuple(names.values()), triples)
    missing = [d.id for d in docs if d.id not in out]
    if missing:
        raise SystemExit(f"no OpenIE record for {len(missing)} passages, e.g. {missing[:3]}")
    return out


# -- the stand-in model ------------------------------------------------------------------------
_LIGHTRAG_INPUT = re.compile(r"---Input Text---\n```\n(.*?)\n```", re.S)
_NANO_INPUT = re.compile(r"-Real Data-.*?\nText: (.*?)\n#{6,}\nOutput:", re.S)
_LIGHTRAG_DESCRIPTIONS = re.compile(r"Description List:\s*```\n(.*?)\n```", re.S)
_NANO_DESCRIPTIONS = re.compile(r"Description List: (.*?)\n#{6,}", re.S)


class TripleModel:
    """Answers each peer's prompts without a model: extraction prompts with the passage's OpenIE
    record in the peer's format, everything else briefly. Counts calls by kind."""

    def __init__(self, docs: list[Any], facts: dict[str, Facts]) -> None:
        self.by_text = {squash(d.text): facts[d.id] for d in docs}
        self.calls: dict[str, int] = {}
        self.unmatched: list[str] = []

    def _count(self, kind: str) -> None:
        self.calls[kind] = self.calls.get(kind, 0) + 1

    def _facts(self, passage: str) -> Facts | None:
        found = self.by_text.get(squash(passage))
        if found is None:
            self.unmatched.append(passage[:80])
        return found

    async def lightrag(
        self,
        prompt: str,
        system_prompt: str | None = None,
        history_messages: list | None = None,
        **_: Any,
    ) -> str:
        if "Based on the last extraction task" in prompt:
            self._count("gleaning")
            return "<|COMPLETE|>"
        match = _LIGHTRAG_INPUT.search(prompt)
        if match:
            self._count("extraction")
            facts = self._facts(match.group(1))
            if facts is None:
                return "<|COMPLETE|>"
            d = "<|#|>"
            rows = [f"entity{d}{name}{d}{LIGHTRAG_TYPE}{d}{name}" for name in facts.entities]
            rows += [f"relation{d}{s}{d}{o}{d}{p}{d}{desc}" for s, p, o, desc in facts.triples]
            return "\n".join([*rows, "<|COMPLETE|>"])
        match = _LIGHTRAG_DESCRIPTIONS.search(prompt)
        if match:
            self._count("summary")
            parts = []
            for line in match.group(1).splitlines():
                try:
                    parts.append(str(json.loads(line).get("Description", "")))
                except (json.JSONDecodeError, AttributeError):
                    parts.append(line)
            return " ".join(dict.fromkeys(p.strip() for p in parts if p.strip()))
        self._count("other")
        from benchmarks.peers import peer_answer

        return peer_answer(prompt, system_prompt)

    async def nano(
        self,
        prompt: str,
        system_prompt: str | None = None,
        history_messages: list | None = None,
        **_: Any,
    ) -> str:
        match = _NANO_INPUT.search(prompt)
        if match:
            self._count("extraction")
            facts = self._facts(match.group(1))
            if facts is None:
                return "<|COMPLETE|>"
            d = "<|>"
            rows = [f'("entity"{d}"{name}"{d}"{NANO_TYPE}"{d}"{name}")' for name in facts.entities]
            rows += [
                f'("relationship"{d}"{s}"{d}"{o}"{d}"{desc}"{d}1)'
                for s, _p, o, desc in facts.triples
            ]
            return "##".join(rows) + "<|COMPLETE|>"
        if "MANY entities were missed" in prompt:
            self._count("gleaning")
            return "<|COMPLETE|>"
        if "Answer YES | NO" in prompt:
            self._count("gleaning")
            return "NO"
        match = _NANO_DESCRIPTIONS.search(prompt)
        if match:
            self._count("summary")
            return match.group(1).strip()
        from benchmarks.peers import peer_answer

        self._count(
            "community_report"
            if "IMPACT SEVERITY RATING" in f"{system_prompt or ''}{prompt}"
            else "other"
        )
        return peer_answer(prompt, system_prompt)


class MiniLM:
    """Rhizome's all-MiniLM-L6-v2 embedder as the async ``texts -> ndarray`` both peers call."""

    def __init__(self) -> None:
        from rhizome.core.models.registry import make_embedder

        self.embedder = make_embedder(EMBEDDER)
        self.texts = 0

    async def __call__(self, texts: list[str], **_: Any) -> Any:
        texts = list(texts)
        self.texts += len(texts)
        return await self.embedder.aembed(texts)


def as_function(call: Any) -> Any:
    """``call`` behind a plain function: both peers deep-copy their config (``dataclasses.asdict``),
    which would copy a bound method's object (model, counters) but keeps a function as it is."""

    async def function(*args: Any, **kwargs: Any) -> Any:
        return await call(*args, **kwargs)

    return function


# -- ranking -----------------------------------------------------------------------------------
class PassageMap:
    """Text unit -> passage id, by text."""

    def __init__(self, docs: list[Any]) -> None:
        self.by_key = {_unit_key(d.text): d.id for d in docs}
        self.unmapped = 0

    def __call__(self, text: str) -> str | None:
        found = self.by_key.get(_unit_key(text))
        if found is None:
            self.unmapped += 1
        return found

    def rank(self, texts: list[str]) -> list[str]:
        return list(dict.fromkeys(p for p in (self(t) for t in texts) if p is not None))


_LIGHTRAG_CHUNKS = re.compile(r"Document Chunks \(.*?\):\n\n```json\n(.*?)\n```", re.S)


def lightrag_context_units(context: str) -> list[str]:
    """The chunk texts of a lightrag-hku context string, in order (its "Document Chunks" JSON lines)."""
    match = _LIGHTRAG_CHUNKS.search(context or "")
    if not match:
        return []
    return [json.loads(line)["content"] for line in match.group(1).splitlines() if line.strip()]


def nano_context_units(context: str | None) -> list[str]:
    """The text units of a nano-graphrag local context, in order: the rows of its Sources CSV
    (a ``"id",<TAB>"content"`` header, then ``i,<TAB>"content"`` rows numbered from 0; a content
    spans lines)."""
    if not context or "-----Sources-----" not in context:
        return []
    section = context.split("-----Sources-----", 1)[1]
    section = section.split("```csv\n", 1)[1].rsplit("\n```", 1)[0]
    units, i = [], 0
    start = section.find(f'\n{i},\t"')
    while start != -1:
        begin = start + len(f'\n{i},\t"')
        nxt = section.find(f'\n{i + 1},\t"', begin)
        units.append(section[begin : nxt if nxt != -1 else len(section)].rstrip().removesuffix('"'))
        i, start = i + 1, nxt
    return units


def score(
    ranked: list[list[str]], questions: list[data.Question], ms: list[float]
) -> dict[str, Any]:
    r5 = [metrics.recall_at(r, q.supporting, 5) for r, q in zip(ranked, questions)]
    r2 = [metrics.recall_at(r, q.supporting, 2) for r, q in zip(ranked, questions)]
    return {
        "recall@2": sum(r2) / len(r2) if r2 else 0.0,
        "recall@5": sum(r5) / len(r5) if r5 else 0.0,
        "per_question_recall@5": r5,
        "p50_query_ms": statistics.median(ms) if ms else 0.0,
        "mean_passages_ranked": sum(len(r) for r in ranked) / len(ranked) if ranked else 0.0,
        "no_passage_queries": sum(1 for r in ranked if not r),
        "ranked": ranked,
    }


# -- the peers ---------------------------------------------------------------------------------
def _quiet() -> None:
    for name in (
        "lightrag",
        "nano-graphrag",
        "nano_graphrag",
        "nano-vectordb",
        "sentence_transformers",
        "httpx",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)


async def run_lightrag(
    docs: list[Any], questions: list[data.Question], facts: dict[str, Facts], show: int | None
) -> dict[str, Any]:
    from benchmarks.peers import offline_tiktoken

    offline_tiktoken()
    from lightrag import LightRAG, QueryParam
    from lightrag.utils import EmbeddingFunc

    from rhizome.lightrag.query import offline_query_keywords

    _quiet()
    model, embed, passage = TripleModel(docs, facts), MiniLM(), PassageMap(docs)
    out: dict[str, Any] = {"modes": {}}
    with tempfile.TemporaryDirectory() as work:
        rag = LightRAG(
            working_dir=work,
            llm_model_func=as_function(model.lightrag),
            embedding_func=EmbeddingFunc(
                embedding_dim=384, max_token_size=8192, func=as_function(embed)
            ),
            chunk_token_size=CHUNK_TOKENS,
            entity_extraction_use_json=False,
            enable_llm_cache=False,
            enable_llm_cache_for_entity_extract=False,
        )
        await rag.initialize_storages()
        _quiet()
        start = time.perf_counter()
        await rag.ainsert([d.text for d in docs], ids=[d.id for d in docs])
        out["index_seconds"] = time.perf_counter() - start
        graph = rag.chunk_entity_relation_graph
        nx_graph = await graph._get_graph() if hasattr(graph, "_get_graph") else None
        chunk_docs: dict[str, int] = {}
        for value in dict(rag.text_chunks._data).values():
            if isinstance(value, dict) and "full_doc_id" in value:
                chunk_docs[value["full_doc_id"]] = chunk_docs.get(value["full_doc_id"], 0) + 1
        out["index"] = {
            "chunks": sum(chunk_docs.values()),
            "passages_with_one_chunk": sum(1 for n in chunk_docs.values() if n == 1),
            "nodes": nx_graph.number_of_nodes() if nx_graph is not None else None,
            "edges": nx_graph.number_of_edges() if nx_graph is not None else None,
            "texts_embedded": embed.texts,
            "model_calls": dict(model.calls),
            "unmatched_extraction_prompts": len(model.unmatched),
        }
        print(
            f"lightrag-hku: indexed {len(docs)} passages in {out['index_seconds']:.0f} s: {out['index']}",
            file=sys.stderr,
        )
        keywords = {q.id: offline_query_keywords(q.question) for q in questions}
        for mode in PEERS["lightrag-hku"]:
            ranked, ms = [], []
            check: dict[str, Any] = {}
            for qi, q in enumerate(questions):
                t0 = time.perf_counter()
                kw = offline_query_keywords(q.question)
                param = QueryParam(
                    mode=mode,
                    hl_keywords=kw.high_level_keywords,
                    ll_keywords=kw.low_level_keywords,
                    enable_rerank=False,
                )
                result = await rag.aquery_data(q.question, param=param)
                ms.append((time.perf_counter() - t0) * 1000)
                units = [c["content"] for c in (result.get("data") or {}).get("chunks", [])]
                ranked.append(passage.rank(units))
                if qi == 0 or qi == show:
                    # the same query through the context-string API: are the passages the same, in the same order?
                    param = QueryParam(
                        mode=mode,
                        hl_keywords=kw.high_level_keywords,
                        ll_keywords=kw.low_level_keywords,
                        enable_rerank=False,
                        only_need_context=True,
                    )
                    context = await rag.aquery(q.question, param=param)
                    context_ranked = passage.rank(
                        lightrag_context_units(context if isinstance(context, str) else "")
                    )
                    if qi == 0:
                        check = {
                            "question": q.id,
                            "data_api_equals_context": context_ranked == ranked[-1],
                            "passages": len(context_ranked),
                        }
                    if qi == show:
                        _show(
                            f"lightrag-hku:{mode}",
                            q,
                            context if isinstance(context, str) else "",
                            ranked[-1],
                            docs,
                        )
            out["modes"][mode] = score(ranked, questions, ms) | {"context_check": check}
            print(
                f"lightrag-hku:{mode}: R@2 {out['modes'][mode]['recall@2']:.3f} R@5 {out['modes'][mode]['recall@5']:.3f} {check}",
                file=sys.stderr,
            )
        out["keywords"] = {
            qid: {"high_level": k.high_level_keywords, "low_level": k.low_level_keywords}
            for qid, k in keywords.items()
        }
        out["unmapped_text_units"] = passage.unmapped
        await rag.finalize_storages()
    return out


async def run_nano(
    docs: list[Any], questions: list[data.Question], facts: dict[str, Facts], show: int | None
) -> dict[str, Any]:
    from benchmarks.peers import offline_tiktoken

    offline_tiktoken()
    from nano_graphrag import GraphRAG, QueryParam
    from nano_graphrag._utils import wrap_embedding_func_with_attrs

    _quiet()
    model, embed, passage = TripleModel(docs, facts), MiniLM(), PassageMap(docs)
    out: dict[str, Any] = {"modes": {}}
    with tempfile.TemporaryDirectory() as work:
        rag = GraphRAG(
            working_dir=work,
            best_model_func=as_function(model.nano),
            cheap_model_func=as_function(model.nano),
            embedding_func=wrap_embedding_func_with_attrs(embedding_dim=384, max_token_size=8192)(
                as_function(embed)
            ),
            chunk_token_size=CHUNK_TOKENS,
            enable_llm_cache=False,
        )
        start = time.perf_counter()
        await rag.ainsert([d.text for d in docs])
        out["index_seconds"] = time.perf_counter() - start
        stored = rag.text_chunks._data
        nx_graph = rag.chunk_entity_relation_graph._graph
        per_doc: dict[str, int] = {}
        for value in stored.values():
            per_doc[value["full_doc_id"]] = per_doc.get(value["full_doc_id"], 0) + 1
        out["index"] = {
            "chunks": len(stored),
            "passages_with_one_chunk": sum(1 for n in per_doc.values() if n == 1),
            "nodes": nx_graph.number_of_nodes(),
            "edges": nx_graph.number_of_edges(),
            "communities": len(rag.community_reports._data),
            "texts_embedded": embed.texts,
            "model_calls": dict(model.calls),
            "unmatched_extraction_prompts": len(model.unmatched),
        }
        print(
            f"nano-graphrag: indexed {len(docs)} passages in {out['index_seconds']:.0f} s: {out['index']}",
            file=sys.stderr,
        )
        ranked, ms = [], []
        for qi, q in enumerate(questions):
            t0 = time.perf_counter()
            context = await rag.aquery(
                q.question, param=QueryParam(mode="local", only_need_context=True)
            )
            ms.append((time.perf_counter() - t0) * 1000)
            units = nano_context_units(context)
            ranked.append(passage.rank(units))
            if qi == show:
                _show("nano-graphrag:local", q, context or "", ranked[-1], docs)
        out["modes"]["local"] = score(ranked, questions, ms)
        out["unmapped_text_units"] = passage.unmapped
        print(
            f"nano-graphrag:local: R@2 {out['modes']['local']['recall@2']:.3f} R@5 {out['modes']['local']['recall@5']:.3f}",
            file=sys.stderr,
        )
    return out


def _show(system: str, q: data.Question, context: str, ranked: list[str], docs: list[Any]) -> None:
    titles = {d.id: d.text.split("\n", 1)[0] for d in docs}
    print(f"\n=== {system} | {q.id}: {q.question}\n gold: {list(q.supporting)}", file=sys.stderr)
    for i, pid in enumerate(ranked[:10], 1):
        print(
            f" {i:2d}. {pid}{' *' if pid in q.supporting else '  '} {titles.get(pid, '?')}",
            file=sys.stderr,
        )
    print(f" context: {len(context)} chars; first 1500:\n{context[:1500]}\n ...", file=sys.stderr)


async def run_worker(peer: str, passages: int | None, show: int | None) -> dict[str, Any]:
    docs, questions = corpus(passages)
    facts = passage_facts(docs)
    runner = run_lightrag if peer == "lightrag-hku" else run_nano
    result = await runner(docs, questions, facts, show)
    result.update(
        peer=peer,
        version=VERSIONS[peer],
        passages=len(docs),
        questions=[q.id for q in questions],
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    )
    return result


# -- the driver --------------------------------------------------------------------------------
def command(args: argparse.Namespace) -> str:
    parts = [
        "RHIZOME_SHARED_DATA=DATA_DIR",
        ".venv-bench/bin/python -m benchmarks.peer_recall",
    ]
    if args.passages:
        parts.append(f"--passages {args.passages}")
    if args.peers != list(PEERS):
        parts.append(f"--peers {' '.join(args.peers)}")
    if args.show is not None:
        parts.append(f"--show {args.show}")
    if args.out:
        parts.append(f"--out {args.out}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> dict[str, Any]:
    docs, questions = corpus(args.passages)
    workers: dict[str, Any] = {}
    for peer in args.peers:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
            path = handle.name
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.peer_recall",
            "--worker",
            peer,
            "--result-file",
            path,
        ]
        if args.passages:
            cmd += ["--passages", str(args.passages)]
        if args.show is not None:
            cmd += ["--show", str(args.show)]
        print(f"peer-recall: {' '.join(cmd)}", file=sys.stderr)
        done = subprocess.run(cmd, stdout=sys.stderr, timeout=args.timeout)
        if done.returncode != 0:
            workers[peer] = {"error": f"worker exited with {done.returncode}"}
        else:
            workers[peer] = json.loads(Path(path).read_text(encoding="utf-8"))
        os.unlink(path)
    systems: dict[str, Any] = {}
    for peer, modes in PEERS.items():
        worker = workers.get(peer)
        if worker is None:
            continue
        for mode in modes:
            name = f"{peer}:{mode}"
            if "error" in worker:
                systems[name] = {"error": worker["error"]}
                continue
            row = dict(worker["modes"][mode])
            row.pop("ranked", None)
            systems[name] = {
                "recall@2": round(row["recall@2"], 4),
                "recall@5": round(row["recall@5"], 4),
                "per_question_recall@5": [round(x, 4) for x in row["per_question_recall@5"]],
                "index_seconds": round(worker["index_seconds"], 1),
                "p50_query_ms": round(row["p50_query_ms"], 1),
                "mean_passages_ranked": round(row["mean_passages_ranked"], 1),
                "no_passage_queries": row["no_passage_queries"],
                **({"context_check": row["context_check"]} if row.get("context_check") else {}),
            }
    result = {
        "suite": "peer-recall",
        "dataset": "musique-dev",
        "passages": len(docs),
        "questions": [q.id for q in questions],
        "command": command(args),
        "extraction": f"imported OpenIE ({data.musique_openie().name}), fed through a stand-in model in each peer's record format",
        "embedder": EMBEDDER,
        "keywords": "lightrag-hku: rhizome.lightrag.query.offline_query_keywords as hl_keywords / ll_keywords; nano-graphrag local: none (embeds the question)",
        "ranking": "passages in the order the peer's context lists its text units, de-duplicated",
        "versions": VERSIONS,
        "systems": systems,
        "index": {
            peer: {k: w.get(k) for k in ("index", "peak_rss_mb", "unmapped_text_units")}
            for peer, w in workers.items()
            if "error" not in w
        },
        "ranked": {
            f"{peer}:{mode}": w["modes"][mode]["ranked"]
            for peer, w in workers.items()
            if "error" not in w
            for mode in w["modes"]
        },
        "query_keywords": workers.get("lightrag-hku", {}).get("keywords"),
    }
    result["table"] = table(result)
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        f"musique-dev, {result['passages']} passages, {len(result['questions'])} questions; GPT-3.5 OpenIE triples; all-MiniLM-L6-v2.",
        "",
        "| system | Recall@2 | Recall@5 | index time (s) | query p50 (ms) | passages ranked / query |",
        "|---|---|---|---|---|---|",
    ]
    for name in SYSTEMS:
        row = result["systems"].get(name)
        if row is None:
            continue
        if "error" in row:
            lines.append(f"| {name} | not run: {row['error']} | | | | |")
            continue
        lines.append(
            f"| {name} | {row['recall@2']:.3f} | {row['recall@5']:.3f} | {row['index_seconds']:.0f} | {row['p50_query_ms']:.0f} | {row['mean_passages_ranked']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.peer_recall", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--passages",
        type=int,
        help="only the first N passages, and the questions whose gold is among them",
    )
    parser.add_argument("--peers", nargs="+", choices=list(PEERS), default=list(PEERS))
    parser.add_argument(
        "--show", type=int, help="print the context and ranking of question number N (0-based)"
    )
    parser.add_argument(
        "--out",
        help=f"where to save the JSON (default: {RESULT.relative_to(RESULT.parents[2])} for a full run, nowhere for a slice)",
    )
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per peer")
    parser.add_argument("--worker", choices=list(PEERS), help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        result = asyncio.run(run_worker(args.worker, args.passages, args.show))
        Path(args.result_file).write_text(json.dumps(result), encoding="utf-8")
        return
    result = run(args)
    print(result["table"])
    out = args.out or (None if args.passages or args.peers != list(PEERS) else str(RESULT))
    if out:
        Path(out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"saved {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
