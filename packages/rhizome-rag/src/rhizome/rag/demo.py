"""``rhizome demo``: the sample corpus indexed with every installed method, what each graph
holds, and the same questions answered side by side, per method and mode, with citations.

The graphs are built with the offline extractor, so the whole demo takes seconds per method;
the embedder is Ollama's when it runs (else the offline hashing embedder), and with a chat
model each method's default mode answers in the model's words, the other modes extractively.
Only the standard library is imported here at module level (``rhizome --help`` stays light).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

QUESTIONS = [
    "Who was the first keeper of the Oskel lighthouse, and who drew the map that led to it?",
    "Which Speaker led the closure of the Mire Banks, and when did they reopen?",
    "Which building houses the Vell Islands Museum?",
]


def sample_corpus() -> Path:
    """The folder of the demo's documents (eight short pages about the fictional Vell Islands)."""
    return Path(str(resources.files("rhizome.rag") / "sample_corpus"))


def short(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def cites(hits: list[Any]) -> str:
    """The documents hits cite, as ``[a, b]`` (file names without their suffix)."""
    names = dict.fromkeys(Path(d.split("#", 1)[0]).stem for h in hits for d in h.provenance.document_ids)
    return f"[{', '.join(names)}]" if names else "[no citation]"


def stream(pieces: Iterator[str], prefix: str) -> None:
    """Print a model's answer piece by piece as it is written."""
    print(prefix, end="", flush=True)
    for piece in pieces:
        print(piece, end="", flush=True)
    print()


def describe(method: str, contents: Any) -> list[str]:
    """What a method's graph holds, in a few lines: counts, the most connected entities, the
    strongest relations and the largest top-level communities."""
    if not contents.entities and not contents.communities:
        return [f"{method}: passages and their vectors only (no graph)"]
    from rhizome.tools.cli import plural

    if not contents.entities:  # a tree of summaries over the passages (RAPTOR)
        counts = contents.summary()
        lines = [f"{method}: {plural(counts['communities'], 'summary node')} in {plural(counts['levels'], 'level')} above the passages"]
        for c in sorted(contents.communities, key=lambda c: (-c.level, -len(c.entity_ids), c.id))[:2]:
            lines.append(f"  level {c.level} ({len(c.entity_ids)} passages): {short(c.summary or c.title, 80)}")
        return lines
    counts = contents.summary()
    lines = [f"{method}: {plural(counts['entities'], 'entity', 'entities')}, {plural(counts['relations'], 'relation')}"
             + (f", {plural(counts['communities'], 'community', 'communities')} in {plural(counts['levels'], 'level')}" if counts["communities"] else "")]
    names = {e.id: e.name for e in contents.entities}
    degree = contents.degrees()
    hubs = sorted(contents.entities, key=lambda e: (-degree.get(e.id, 0), e.name))[:5]
    lines.append("  most connected: " + ", ".join(f"{e.name} ({degree.get(e.id, 0)})" for e in hubs))
    strongest = sorted(contents.relations, key=lambda r: (-r.weight, r.id))[:3]
    for r in strongest:
        link = f" —{r.predicate}→ " if r.predicate else " — "
        lines.append(f"  relation: {names.get(r.source, r.source)}{link}{names.get(r.target, r.target)} (weight {r.weight:g})")
    top = [c for c in contents.communities if c.level == min(contents.levels())]
    for c in sorted(top, key=lambda c: (-len(c.entity_ids), c.id))[:2]:
        lines.append(f"  community: {short(c.title or ', '.join(names.get(e, e) for e in c.entity_ids[:4]), 80)} "
                     f"({len(c.entity_ids)} entities)")
    return lines


def run(out: Path, methods: list[str], make_embedder: Callable[[], Any], llm: Any, registry: dict[str, Any], *, cache: bool = True) -> dict[str, Path]:
    """Build, describe and query one index per method under ``out`` (``cache``: whether the
    indexes cache model calls beside the models' own cache); returns their folders."""
    from rhizome.tools.loaders import load_path

    documents = load_path(sample_corpus())
    built: dict[str, Any] = {}
    print(f"Indexing {len(documents)} documents into {out}/<method> (graphs by the offline extractor):")
    for method in methods:
        started = time.monotonic()
        cls = registry[method].load()
        size = cls.config_class.model_fields.get("chunk_size")
        settings = {"chunk_size": 200, "chunk_overlap": 20} if size is not None and size.default > 200 else {}
        index = cls(make_embedder(), path=out / method, cache=cache, **settings)
        report = index.insert(documents)
        counts = index.graph_contents().summary()
        graph = f"; {counts['entities']} entities, {counts['relations']} relations" if counts["entities"] else ""
        new = len(report.inserted) + len(report.replaced)
        print(f"  {method:<10} {len(index)} chunks{graph} ({new} new documents, {time.monotonic() - started:.1f} s)")
        built[method] = index
    try:
        print("\nWhat the graphs hold:")
        for method, index in built.items():
            for line in describe(method, index.graph_contents()):
                print(f"  {line}")
        answerers = {m: type(index)(index.embedder, llm=llm, path=index.path, cache=cache) for m, index in built.items()} if llm is not None else {}
        try:
            for number, question in enumerate(QUESTIONS, 1):
                print(f"\nQ{number}: {question}")
                for method, index in built.items():
                    modes = list(index.modes) or [None]
                    for mode in modes:
                        label = f"{method}/{mode}" if mode and len(modes) > 1 else method
                        if mode == modes[0] and method in answerers:
                            hits = answerers[method].as_retriever(k=3, mode=mode).retrieve(question)
                            stream(answerers[method].answer(question, mode=mode, k=3, stream=True), f"  {label:<16} {cites(hits)} ")
                            continue
                        found = index.answer(question, mode=mode, k=3)
                        print(f"  {label:<16} {short(found.text, 100)} {cites(found.citations)}")
        finally:
            for answerer in answerers.values():
                answerer.close()
    finally:
        for index in built.values():
            index.close()
    return {m: out / m for m in built}


__all__ = ["QUESTIONS", "describe", "run", "sample_corpus"]
