"""The ``rhizome`` command line: index a corpus, query an index, run the demo.

Models come from flags or the environment: ``--embed`` / ``RHIZOME_EMBED`` and ``--llm`` /
``RHIZOME_LLM`` take specs such as ``ollama:nomic-embed-text``; ``--offline`` uses the offline
steps only; ``OLLAMA_HOST`` points at the Ollama server, ``--base-url`` / ``RHIZOME_BASE_URL`` at
the OpenAI-compatible server of ``openai:MODEL`` specs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rhizome.core.errors import (
    ConfigurationError,
    IndexDamageWarning,
    InvalidInputError,
    RhizomeError,
)
from rhizome.rag.demo import sample_corpus  # noqa: F401  (examples and tests import it from here)

# Only what argparse needs at module level, so that `rhizome --help` loads no models, numpy or
# method packages: the kernel and the methods are imported inside the commands.
from rhizome.tools.cli import (
    OFFLINE_EMBED,
    Models,
    as_json,
    check_model_flags,
    choose_models,
    index_embedder,
    make_cli_embedder,
    model_flags,
    open_index,
    plural,
)

if TYPE_CHECKING:
    from rhizome.core.retrieval.answer import Answer
    from rhizome.core.types import Hit

def _shown(location: Any) -> str:
    from rhizome.core.store.storage import shown  # here: `--help` imports no storage code

    return shown(location)


def _index_class(method: str) -> Any:
    from rhizome.core.store.storage import method_registry

    registry = method_registry()
    if method not in registry:
        raise ConfigurationError(
            f"unknown method {method!r}; installed methods: {', '.join(sorted(registry)) or 'none'}"
        )
    return registry[method].load()


def _open_or_create(
    method: str | None, out: Any, args: argparse.Namespace, *, fall_back: bool = False, want_llm: bool | None = None
) -> tuple[Any, Models]:
    """The index in ``out`` (created when there is none) and the models it runs with;
    ``method`` ``None``: the existing index's own, else naive.

    Reopening an index takes the models it was built with unless a flag says otherwise:
    ``--llm`` replaces the chat model, ``--offline`` drops it (the index then uses its offline
    steps, or says which flag it needs); an embedder other than the index's — ``--embed``,
    ``RHIZOME_EMBED`` or ``--offline``'s hashing embedder — is an error, never ignored.
    ``want_llm``: ask for a chat model even if the method does not use one (the demo answers)."""
    from rhizome.core.store.storage import has_index, is_url, read_manifest

    if is_url(out) and not getattr(args, "cache", None):
        args.cache_in_index = True  # the database's own cache, shared by every writer and Ray worker
    manifest = read_manifest(out) if has_index(out) else None
    method = method or (manifest.method if manifest is not None else "naive")
    cls = _index_class(method)
    forced = want_llm is not None
    want_llm = getattr(cls, "uses_llm", False) if want_llm is None else want_llm
    if manifest is not None:
        if manifest.method != method:
            raise ConfigurationError(f"{_shown(out)} holds a {manifest.method!r} index; choose another --out for {method!r}")
        asked = OFFLINE_EMBED if args.offline else (args.embed or os.environ.get("RHIZOME_EMBED"))
        flag = "--offline uses" if args.offline else "--embed asks for" if args.embed else "RHIZOME_EMBED asks for"
        args.embed = index_embedder(out, manifest, asked, flag)
        if not (args.offline or args.llm or os.environ.get("RHIZOME_LLM")):
            args.llm = manifest.models.get("llm")  # built offline: stays offline unless a flag says
            want_llm = want_llm and (args.llm is not None or forced)
    models = choose_models(args, want_llm=want_llm, fall_back=fall_back, embedder_of_index=manifest is not None)
    kwargs: dict[str, Any] = {"path": out, "progress": not args.quiet, "llm": models.llm}
    if getattr(args, "no_cache", False):
        kwargs["cache"] = False
    for name in ("chunk_size", "chunk_overlap", "memory_gb"):
        if getattr(args, name, None) is not None:
            kwargs[name] = getattr(args, name)
    if getattr(args, "workers", None) is not None:
        from rhizome.core.extraction.parallel import RayWorkers

        hosts = tuple(h.strip() for h in (args.ollama_hosts or "").split(",") if h.strip())
        kwargs["workers"] = RayWorkers(workers=args.workers, address=args.ray_address, hosts=hosts)
    elif getattr(args, "ray_address", None) or getattr(args, "ollama_hosts", None):
        raise ConfigurationError("--ray-address and --ollama-hosts go with --workers N (extraction over Ray)")
    return cls(make_cli_embedder(models.embed_spec, args), **kwargs), models


def cmd_index(args: argparse.Namespace) -> int:
    from rhizome.core.documents import coerce_documents
    from rhizome.core.index.base import DeleteReport, InsertReport
    from rhizome.core.store.storage import as_location
    from rhizome.tools.loaders import load_files, no_documents

    started = time.monotonic()
    loaded = load_files(args.path, text_field=args.text_field, id_field=args.id_field, id_prefix=args.id_prefix)
    if not loaded.documents and not args.sync:
        raise InvalidInputError(no_documents(args.path, loaded))
    if args.workers is not None and args.workers < 1:
        raise ConfigurationError(f"--workers must be at least 1, got {args.workers}")
    documents = coerce_documents(loaded.documents)  # bad input is refused before anything is written
    index, models = _open_or_create(args.method, as_location(args.out), args)  # no --method: the index's own
    try:
        if not args.replace:
            _refuse_clashes(index, documents, args)
        removed = _remove_stale(index, Path(args.path), loaded) if args.sync else DeleteReport()
        report = index.insert(documents, fallback=args.fallback) if documents else InsertReport()
        if index.store.keeps_arrays:
            index.prepare_queries()  # kept in the directory: the first query of each reader reads them
        totals = {"documents": index.store.count("documents"), "chunks": len(index), **index.graph_contents().summary()}
    finally:
        index.close()
    how = "offline" if models.llm is None else f"model {models.llm.name}"
    if args.workers:
        how += f", extraction on {plural(args.workers, 'Ray worker')}"
    _say(args, f"indexed {args.path} into {_shown(args.out)} ({index.method}; embedder {models.embed_spec}, {how})")
    unread = _print_loaded(args, loaded)
    _print_summary(args, report, removed, totals, time.monotonic() - started)
    if report.fallback:
        print(f"{plural(len(report.fallback), 'document')} extracted offline after the model's answers stayed invalid "
              f"(delete and index again to ask the model): {', '.join(report.fallback)}", file=sys.stderr)
    done = len(report.inserted) + len(report.replaced) + len(report.skipped)
    if not (report.failed or report.unfinished or unread):
        _say(args, f"{plural(done, 'document')} done, none failed")
        return 0
    if report.failed:
        print(f"{plural(done, 'document')} done, {len(report.failed)} failed (not stored; the rest is):", file=sys.stderr)
        for doc_id, reason in report.failed.items():
            print(f"  {doc_id}: {reason}", file=sys.stderr)
    else:
        print(f"{plural(done, 'document')} done, none failed", file=sys.stderr)
    for unfinished in (removed.unfinished, report.unfinished):
        if unfinished:
            print(f"the whole-index work after the change did not finish ({unfinished}); the documents are "
                  "stored and searchable, with what that work built before", file=sys.stderr)
    if report.failed or report.unfinished or removed.unfinished:
        print("run the same command again to retry only what failed (see --max-retries, --timeout); "
              f"`uv run rhizome status {args.out}` lists it", file=sys.stderr)
    return 1


def _refuse_clashes(index: Any, documents: list[Any], args: argparse.Namespace) -> None:
    """Ids are paths relative to the folder indexed, so two folders (or two files) with the same
    file names give the same ids. A document whose id is stored with another ``source`` (or
    none: a document inserted from Python) is a clash: refused before anything is written,
    naming each clash, unless ``--replace`` says to replace it."""
    stored = index.store.documents_metadata(d.id for d in documents)
    clashes = [(d.id, stored[d.id].get("source"), d.metadata.get("source")) for d in documents
               if d.id in stored and stored[d.id].get("source") != d.metadata.get("source")]
    if not clashes:
        return
    given = Path(args.path).resolve()
    name = (given if given.is_dir() else given.parent).name or "NAME"
    shown = 20  # a moved folder of thousands of files: the first ones say enough
    lines = "\n".join(f"  {doc_id}: stored from {old or 'no file (inserted from Python)'}, now from {new}"
                      for doc_id, old, new in clashes[:shown])
    if len(clashes) > shown:
        lines += f"\n  … and {len(clashes) - shown} more"
    raise InvalidInputError(
        f"{plural(len(clashes), 'document')} of {args.path} {'has' if len(clashes) == 1 else 'have'} the id of a "
        f"document {_shown(args.out)} holds from another file, which indexing would replace:\n{lines}\n"
        f"Nothing was written. To keep both, index {args.path} under its own ids with --id-prefix "
        f"(e.g. --id-prefix {name}: its ids become {name}/...); to replace the stored documents on purpose "
        "(the files moved, say), add --replace"
    )


def _remove_stale(index: Any, folder: Path, loaded: Any) -> Any:
    """``--sync``: delete the stored documents that came from a file under ``folder`` (their
    ``source``) and that the files no longer give — the file was removed, or a page or row of
    it — through the method's own delete. Documents of a file that could not be read now are
    kept, and documents from elsewhere are never touched."""
    from rhizome.core.index.base import DeleteReport

    root = folder.resolve()
    present = {d.id for d in loaded.documents}
    unreadable = {str(Path(f).resolve()) for f in loaded.unreadable}
    stored = index.store.documents_metadata(index.store.document_ids())
    stale = []
    for doc_id, metadata in stored.items():
        source = metadata.get("source")
        if doc_id in present or not isinstance(source, str) or source in unreadable:
            continue
        path = Path(source)
        if path == root or root in path.parents:
            stale.append(doc_id)
    return index.delete(stale) if stale else DeleteReport()


def _print_summary(args: argparse.Namespace, report: Any, removed: Any, totals: dict[str, int], seconds: float) -> None:
    """The counts of an index run: documents, chunks, what the graph holds, the models' work, time."""
    stats: dict[str, int] = {}
    for part in (removed.stats, report.stats):
        for key, value in part.items():
            if isinstance(value, int):
                stats[key] = stats.get(key, 0) + value
    parts = [f"{len(report.inserted)} new", f"{len(report.replaced) - len(report.restored)} changed", f"{len(report.skipped)} unchanged"]
    if report.restored:
        parts.append(f"{len(report.restored)} stored again (their stored text was damaged)")
    if args.sync:
        parts.append(f"{len(removed.deleted)} removed")
    parts.append(f"{len(report.failed)} failed")
    _say(args, f"  documents: {', '.join(parts)}; {totals['documents']} in the index")
    _say(args, f"  chunks: {report.chunks:,} written ({plural(report.tokens, 'token')}); {totals['chunks']:,} in the index")
    if line := _graph_line(totals):
        _say(args, f"  {line}")
    _say(args, f"  models: {plural(stats.get('model_calls', 0), 'chat call')} ({stats.get('prompt_tokens', 0):,} prompt + "
               f"{stats.get('completion_tokens', 0):,} completion tokens), {plural(stats.get('embedded_texts', 0), 'text')} embedded, "
               f"{plural(stats.get('cache_hits', 0), 'answer')} from the cache")
    _say(args, f"  time: {seconds:.1f} s")


def _graph_line(totals: Mapping[str, int]) -> str | None:
    """What an index's graph holds, in one line (``None``: no graph, only chunks)."""
    if totals["entities"] or totals["relations"]:
        communities = (f", {plural(totals['communities'], 'community', 'communities')} in {plural(totals['levels'], 'level')}"
                       if totals["communities"] else "")
        return f"graph: {plural(totals['entities'], 'entity', 'entities')}, {plural(totals['relations'], 'relation')}{communities}"
    if totals["communities"]:  # a tree of summaries over the chunks (RAPTOR)
        return f"tree: {plural(totals['communities'], 'summary node')} in {plural(totals['levels'], 'level')} above the chunks"
    return None


def _print_loaded(args: argparse.Namespace, loaded: Any) -> int:
    """What reading the files found, beside the documents: files not read (on standard error,
    with the reason), files of other types, and the warnings. Returns how many were not read."""
    from rhizome.tools.loaders import describe_files, printable

    others = f", {len(loaded.unsupported)} of other types left out ({describe_files(loaded.unsupported)})" if loaded.unsupported else ""
    _say(args, f"  files: {loaded.files} read{others}")
    for file, messages in loaded.warnings.items():
        for message in messages:
            print(f"warning: {printable(file)}: {message}", file=sys.stderr)
    for file, reason in loaded.unreadable.items():
        print(f"not read: {printable(file)}: {reason}", file=sys.stderr)
    n = len(loaded.unreadable)
    if n:
        print(f"{plural(n, 'file')} could not be read and {'is' if n == 1 else 'are'} not in the index; fix them (or "
              "install what the message names) and run the same command again", file=sys.stderr)
    return n


def _print_hits(hits: list[Hit]) -> None:
    for rank, hit in enumerate(hits, 1):
        label = hit.metadata.get("title") or ", ".join(hit.provenance.document_ids) or hit.id
        spans = ", ".join(f"{s.start}-{s.end}" for s in hit.provenance.spans)
        print(f"[{rank}] {hit.score:.3f}  {label}  ({hit.kind} {hit.id}{'; chars ' + spans if spans else ''})")
        text = " ".join(hit.text.split())
        print(f"    {text[:300]}{'…' if len(text) > 300 else ''}")


def _print_stream(pieces: Iterator[str]) -> None:
    """Print a model's answer piece by piece as it is written."""
    print("answer (written by the model): ", end="", flush=True)
    for piece in pieces:
        print(piece, end="", flush=True)
    print()


def _print_answer(answer: Answer) -> None:
    how = "extractive, no model" if answer.extractive else "written by the model"
    print(f"answer ({how}): {' '.join(answer.text.split())}")
    for hit in answer.citations:
        label = hit.metadata.get("title") or ", ".join(hit.provenance.document_ids) or hit.id
        print(f"  cites: {label} [{hit.id}]")


RERANKERS = ("llm", "llm:listwise", "llm:pointwise", "cross-encoder:MODEL")
"""What ``--rerank`` takes."""


def _rerank_kind(spec: str | None) -> tuple[str, str] | None:
    """``--rerank``'s kind (``llm`` or ``cross-encoder``) and its argument, checked before the
    index is opened."""
    if spec is None:
        return None
    kind, _, rest = spec.partition(":")
    if kind == "llm" and rest in ("", "listwise", "pointwise"):
        return kind, rest or "listwise"
    if kind == "cross-encoder" and rest:
        return kind, rest
    raise ConfigurationError(f"--rerank takes {', '.join(RERANKERS)}, got {spec!r}")


def _reranker(kind: tuple[str, str] | None, index: Any, args: argparse.Namespace) -> Any:
    """The reranker of ``--rerank``: the chat model of the query (``--llm``, the index's own,
    else ``RHIZOME_LLM`` or the default) judging the candidates, or a cross-encoder."""
    if kind is None:
        return None
    if kind[0] == "cross-encoder":
        from rhizome.core.retrieval.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(kind[1])
    if index.llm is None:
        raise ConfigurationError(f"--rerank {args.rerank} asks a chat model, and --offline runs without one; drop --offline "
                                 "(--llm picks the model) or rerank with --rerank cross-encoder:MODEL")
    from rhizome.core.retrieval.llm_rerank import LLMReranker

    return LLMReranker(index.llm, method=kind[1])


def cmd_query(args: argparse.Namespace) -> int:
    warnings.filterwarnings("ignore", category=IndexDamageWarning)  # the search's notes say it, printed below
    rerank = _rerank_kind(args.rerank)
    if args.rerank_candidates is not None and rerank is None:
        raise ConfigurationError("--rerank-candidates sets how many hits --rerank judges; give --rerank too")
    index = open_index(args.index, args, answer=args.answer or (rerank is not None and rerank[0] == "llm"))
    wanted = _filter_arg(args.filter)
    options: dict[str, Any] = {"mode": args.mode, "filter": wanted, "score_threshold": args.score_threshold}
    try:
        if rerank is not None:
            options.update(reranker=_reranker(rerank, index, args), rerank_candidates=args.rerank_candidates)
        found = index.as_retriever(k=args.k, **options).search(args.question, context=False)
        hits = found.hits
        if hits and args.answer and not args.json and index.llm is not None:
            _print_hits(hits)  # then the answer as the model writes it
            _print_notes(found.notes)
            _print_stream(index.answer(args.question, k=args.k, stream=True, **options))
            return 0
        # the method's own answering step (GraphRAG's reduce, LightRAG's context answer)
        result = index.answer(args.question, k=args.k, **options) if args.answer and hits else None
    finally:
        index.close()
    if args.json:
        payload: dict[str, Any] = {"question": args.question, "hits": [h.model_dump() for h in hits], "notes": found.notes}
        if result is not None:
            payload["answer"] = result.model_dump()
        print(as_json(payload, indent=2))
    elif hits:
        _print_hits(hits)
        _print_notes(found.notes)
        if result is not None:
            _print_answer(result)
    if not hits:
        why = "; ".join(found.notes) or "the search found nothing"
        print(f"no hits: {why}", file=sys.stderr)
        return 1
    return 0


_FILTER_SIGNS = {">=": "$gte", "<=": "$lte", "!=": "$ne", ">": "$gt", "<": "$lt", "=": "$eq"}
"""The comparisons ``--filter`` writes between a field and a value, and their operators."""


def _filter_arg(values: list[str] | None) -> dict[str, Any] | None:
    """The metadata filter of ``--filter`` flags: ``FIELD=VALUE`` (a field given twice may hold
    either value), ``FIELD!=VALUE``, ``FIELD>VALUE`` (``>=``, ``<``, ``<=``: numbers compare as
    numbers, other text as text), or a JSON object in the filter grammar
    (:mod:`rhizome.core.retrieval.filters`); all flags must hold."""
    if not values:
        return None
    parts: list[dict[str, Any]] = []
    equal: dict[str, list[str]] = {}
    for value in values:
        if value.lstrip().startswith("{"):
            try:
                parts.append(json.loads(value))
            except ValueError as exc:
                raise InvalidInputError(f"--filter {value!r} is not a JSON object ({exc})") from exc
            continue
        at = min((i for i in (value.find(c) for c in "<>!=") if i >= 0), default=-1)
        sign = next((s for s in _FILTER_SIGNS if value.startswith(s, at)), None) if at > 0 else None
        if sign is None or not value[:at].strip():
            raise InvalidInputError(f"--filter takes FIELD=VALUE, FIELD!=VALUE, FIELD>VALUE (>=, <, <=) or a JSON object "
                                    f"such as '{{\"year\": {{\"$gt\": 1900}}}}', got {value!r}")
        field, text = value[:at].strip(), value[at + len(sign):]
        if sign == "=":
            equal.setdefault(field, []).append(text)
        else:
            parts.append({field: {_FILTER_SIGNS[sign]: text}})
    parts += [{field: texts[0] if len(texts) == 1 else {"$in": texts}} for field, texts in equal.items()]
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"note: {note}")


def cmd_demo(args: argparse.Namespace) -> int:
    import shlex

    from rhizome.core.store.storage import method_registry
    from rhizome.rag import demo

    print("Rhizome demo: a small corpus about the (fictional) Vell Islands, indexed with every installed method,\n"
          "what each graph holds, and the same questions answered side by side.\n")
    registry = method_registry()
    methods = args.method or sorted(registry, key=lambda m: (m != "naive", m))  # the baseline first
    unknown = [m for m in methods if m not in registry]
    if unknown:
        raise ConfigurationError(f"unknown method {', '.join(unknown)}; installed methods: {', '.join(sorted(registry))}")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="rhizome-demo-"))
    models = choose_models(args, want_llm=True, fall_back=True)  # a model writes the answers when there is one
    for notice in models.notices:
        print(f"note: {notice}")
    offline = models.embed_spec == OFFLINE_EMBED and models.llm is None
    print("mode: " + ("offline (hashing embedder, extractive answers)" if offline else
                      f"embedder {models.embed_spec}, answers by {models.llm.name if models.llm else 'extraction (no chat model)'}") + "\n")
    folders = demo.run(out, methods, lambda: make_cli_embedder(models.embed_spec, args), models.llm, registry, cache=not args.no_cache)
    flag = " --offline" if offline else ""
    if not args.out:  # each run makes a new folder: say so, and how to choose one
        print(f"\nThe indexes are in {out}, a new temporary folder kept for the commands below (delete it when "
              "done; --out DIR chooses the folder).")
    print("\nNext, with these indexes (or your own folder):")
    graph = next((m for m in ("graphrag", "lightrag", "hipporag") if m in folders), None)
    if "graphrag" in folders:
        print(f"  uv run rhizome query {shlex.quote(str(folders['graphrag']))} \"What are the main themes?\" --mode global --answer{flag}")
    for method in ("lightrag", "naive"):
        if method in folders:
            print(f"  uv run rhizome query {shlex.quote(str(folders[method]))} \"Who drew the first map of the islands?\" -k 3 "
                  f"--filter title=\"Ilse Varn, cartographer\"{flag}")
            break
    if graph:
        print(f"  uv run rhizome export {shlex.quote(str(folders[graph]))} --format graphml --out vell-{graph}.graphml")
    first = next(iter(folders.values()), None)
    if first is not None:
        print(f"  uv run rhizome docs list {shlex.quote(str(first))}")
    print(f"  uv run rhizome index ./my-docs --method {graph or 'naive'} --out ./my-index{flag}   # your own files")
    return 0




def cmd_status(args: argparse.Namespace) -> int:
    from rhizome.core.models.ollama import check_ollama
    from rhizome.core.store.storage import as_location, method_registry

    if args.index:
        return _index_status(as_location(args.index))
    status = check_ollama()
    if status.reachable:
        print(f"Ollama at {status.host}: {plural(len(status.models), 'model')}: {', '.join(status.models) or '-'}")
    elif status.slow:
        print(status.error)
    else:
        print(f"Ollama is not reachable at {status.host} ({status.error}); start it with `ollama serve`")
    if base_url := args.base_url or os.environ.get("RHIZOME_BASE_URL") or os.environ.get("OPENAI_BASE_URL"):
        _openai_status(base_url)
    print(f"methods: {', '.join(sorted(method_registry()))}")
    return 0


def _openai_status(base_url: str) -> None:
    """Print what the OpenAI-compatible server at ``base_url`` serves (with each model's
    context window where it says), or why it cannot be used."""
    from rhizome.core.models.openai_compat import check_openai_server

    server = check_openai_server(base_url)
    if not server.reachable:
        print(f"no OpenAI-compatible server is reachable at {server.base_url} ({server.error})")
        return
    listed = [f"{m} ({server.windows[m]:,} tokens)" if m in server.windows else m for m in server.models]
    print(f"OpenAI-compatible server at {server.base_url}: {plural(len(listed), 'model')}: {', '.join(listed) or '-'}")


def _index_status(path: Any) -> int:
    """What an index directory holds: method, models, counts, unfinished work and settings."""
    from rhizome.core.index.config import describe
    from rhizome.core.store.storage import IndexStore, method_registry, read_manifest

    manifest = read_manifest(path)
    print(f"index: {_shown(str(path))}")
    print(f"method: {manifest.method} (format {manifest.format_version}, written by rhizome-core {manifest.rhizome_version}, updated {manifest.updated})")
    print(f"embedder: {manifest.models.get('embedder')} ({manifest.embedding_dimension or '?'} dimensions); chat model: {manifest.models.get('llm') or 'none'}")
    store = IndexStore.open(path, readonly=True)
    try:
        pending = store.get_meta("pending_change", False)
        statuses = store.statuses()
        print(f"documents: {store.count('documents')}; chunks: {store.count('chunks')}")
    finally:
        store.close()
    unfinished = [s for s in statuses if s.status != "done"]
    if unfinished:
        counts = {name: sum(1 for s in unfinished if s.status == name) for name in ("failed", "processing", "pending")}
        print("not stored: " + ", ".join(f"{n} {name}" for name, n in counts.items() if n) +
              " (run `rhizome index` on the same files again to retry them)")
        for entry in unfinished:
            print(f"  {entry.id}: {entry.status}{' — ' + entry.error if entry.error else ''} ({entry.updated})")
    if pending:
        print("unfinished: an insert or delete was interrupted, or a model failed, before its whole-index work was done; "
              "run `rhizome index` again to finish it")
    registry = method_registry()
    if manifest.method not in registry:
        print(f"settings (install rhizome-{manifest.method} for their descriptions): {json.dumps(manifest.config)}")
        return 0
    from rhizome.core.store.storage import load_index

    index = load_index(path, readonly=True, offline=True)
    try:
        modes = list(index.modes)
        print("modes: " + (", ".join(f"{m} (default)" if i == 0 else m for i, m in enumerate(modes)) or "one (no mode to choose)"))
        if line := _graph_line(index.graph_contents().summary()):
            print(line)
    finally:
        index.close()
    config_class = registry[manifest.method].load().config_class
    print(f"settings ({config_class.__name__}):")
    for name, value, doc in describe(config_class.model_validate(manifest.config)):
        text = ", ".join(value) if isinstance(value, tuple) else value
        print(f"  {name} = {text}")
        if doc:
            print(f"      {doc}")
    return 0


def cmd_docs_list(args: argparse.Namespace) -> int:
    from rhizome.core.store.storage import IndexStore, read_manifest

    read_manifest(args.index)
    store = IndexStore.open(args.index, readonly=True)
    try:
        statuses = store.statuses()
        metadata = store.documents_metadata(s.id for s in statuses)
        chunks = store.chunk_counts()
    finally:
        store.close()
    rows: list[dict[str, Any]] = [{"id": s.id, "status": s.status, "chunks": chunks.get(s.id, 0), "title": metadata.get(s.id, {}).get("title"),
             "source": metadata.get(s.id, {}).get("source"), "updated": s.updated, "error": s.error} for s in statuses]
    if args.json:
        print(as_json(rows, indent=2))
        return 0
    if not rows:
        print(f"{args.index} holds no documents; add some with `uv run rhizome index FOLDER --out {args.index}`")
        return 0
    width = min(max(len(r["id"]) for r in rows), 60)
    for r in rows:
        where = r["title"] or r["source"] or ""
        error = f" — {r['error']}" if r["error"] else ""
        print(f"{r['id']:<{width}}  {r['status']:<10} {plural(r['chunks'], 'chunk'):>10}  {where}{error}")
    counts = {status: sum(1 for r in rows if r["status"] == status) for status in dict.fromkeys(r["status"] for r in rows)}
    print(f"{plural(len(rows), 'document')}: " + ", ".join(f"{n} {status}" for status, n in counts.items()))
    return 0


def cmd_docs_delete(args: argparse.Namespace) -> int:
    from rhizome.core.store.storage import as_location, read_manifest

    path = as_location(args.index)
    index, _ = _open_or_create(read_manifest(path).method, path, args)
    try:
        report = index.delete(args.ids, purge_cache=not args.keep_cache)
        left = index.store.count("documents")
    finally:
        index.close()
    if report.deleted:
        print(f"deleted {plural(len(report.deleted), 'document')} ({plural(report.chunks, 'chunk')}) and what only "
              f"{'it' if len(report.deleted) == 1 else 'they'} supported; {left} left")
        if not args.keep_cache:
            print(f"removed {plural(report.forgotten, 'model-call cache entry', 'model-call cache entries')} built from them or from the whole index")
    if report.unfinished:
        print(f"the whole-index work after the delete did not finish ({report.unfinished}); nothing of the deleted "
              "documents is searchable; run `uv run rhizome index` or this command again to finish it", file=sys.stderr)
    if report.missing:
        from rhizome.tools.loaders import printable

        missing = ", ".join(printable(i) for i in report.missing)
        print(f"not in the index: {missing} (`uv run rhizome docs list {args.index}` lists the ids)", file=sys.stderr)
    return 1 if report.missing or report.unfinished else 0


def cmd_export(args: argparse.Namespace) -> int:
    from rhizome.core.store.storage import as_location, is_url, load_index
    from rhizome.tools import export

    source = as_location(args.index)
    if is_url(source):
        from rhizome.core.store.backends.postgres import parse_url

        name = parse_url(source)[1]
    else:
        name = Path(source).resolve().name
    out = Path(args.out) if args.out else Path(f"{name}.graphml" if args.format == "graphml" else f"{name}-{args.format}")
    export.writable(export.targets(args.format, out), replace=args.force)  # before the index is read
    index = load_index(source, readonly=True, offline=True)
    try:
        tables = export.export_tables(index)
    finally:
        index.close()
    if args.format == "graphml":
        graph = export.to_graph(tables)
        export.write_graphml(graph, out, replace=args.force)
        levels = graph.graph["levels"]
        attributes = "the node attribute community_0" if levels == 1 else f"the node attributes community_0 to community_{levels - 1}"
        print(f"wrote {out}: {plural(graph.number_of_nodes(), 'entity', 'entities')}, {plural(graph.number_of_edges(), 'relation')}, "
              + (f"communities at {plural(levels, 'level')} as {attributes}" if levels else "no communities"))
    else:
        written = (export.write_parquet if args.format == "parquet" else export.write_jsonl)(tables, out, replace=args.force)
        print(f"wrote {plural(len(written), 'table')} to {out}/: " + ", ".join(f"{t} {plural(len(tables[t]), 'row')}" for t in written))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from rhizome.tools.integrity import check_index

    return _print_check(check_index(args.index))


def cmd_repair(args: argparse.Namespace) -> int:
    from rhizome.tools.integrity import repair_index

    return _print_check(repair_index(args.index))


def _print_check(found: Any) -> int:
    for line in found.repaired:
        print(f"repaired: {line}")
    for line in found.problems:
        print(f"problem: {line}")
    for line in found.warnings:
        print(f"warning: {line}")
    if found.ok:
        warned = f" ({plural(len(found.warnings), 'warning')})" if found.warnings else ""
        print(f"{found.path}: no problems{warned}")
        return 0
    print(f"{found.path}: {plural(len(found.problems), 'problem')}", file=sys.stderr)
    return 1


def _say(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(text)


def _index_parser(p: argparse.ArgumentParser) -> None:
    """The flags of ``rhizome index``."""
    p.add_argument("path", help="a file or folder: .txt, .md, .html, .pdf, .docx, .csv/.tsv, .jsonl/.json (one document per row)")
    p.add_argument("--method", help="indexing method (default: an existing index's own, else naive)")
    p.add_argument("--out", required=True,
                   help="index directory, or postgresql://user@host/db?schema=NAME (needs rhizome-rag[postgres]); "
                        "an existing index is updated with its own method and models")
    p.add_argument("--chunk-size", type=int, help="tokens per chunk (method default)")
    p.add_argument("--chunk-overlap", type=int, help="tokens shared by neighbouring chunks (method default)")
    p.add_argument("--memory-gb", type=float, metavar="GB",
                   help="memory budget of the build: a step that would not fit works out of core where it can, else stops "
                        "with what to do before it allocates anything (default: RHIZOME_MEMORY_GB, else none)")
    p.add_argument("--sync", action="store_true",
                   help="make the index match the folder: add new files, re-index changed ones, delete the documents of removed files")
    p.add_argument("--text-field", help="the column (CSV) or field (JSON) holding a row's text; several separated by commas, the first a row has "
                        "(tables that differ: notes,text) (default: text, content, context, page_content or body)")
    p.add_argument("--id-field", help="the column or field holding a row's id (default: id when present, else FILE#ROW)")
    p.add_argument("--id-prefix", metavar="PREFIX",
                   help="put PREFIX/ before every id of this run (ids are paths relative to the folder: two folders "
                        "with the same file names need different prefixes to share an index)")
    p.add_argument("--replace", action="store_true",
                   help="replace stored documents whose id this run gives to a file other than the one they came from "
                        "(refused without it)")
    p.add_argument("--fallback", choices=["offline"],
                   help="a document whose model answers stay invalid (after a retry with varied sampling) is extracted "
                        "offline instead of failing; the summary lists such documents")
    p.add_argument("--workers", type=int, metavar="N",
                   help="extract on N Ray workers (local Ray in this process unless --ray-address; needs rhizome-rag[ray]); "
                        "the index is the same as without")
    p.add_argument("--ray-address", help="join a running Ray cluster (ray://HOST:10001, or auto) instead of a local one")
    p.add_argument("--ollama-hosts", metavar="URL,URL",
                   help="Ollama servers the Ray workers take turns on (default: OLLAMA_HOST)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    model_flags(p)
    p.set_defaults(func=cmd_index)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rhizome", description="Graph-based RAG indexes on local models.")
    sub = parser.add_subparsers(dest="command", required=True)
    _index_parser(sub.add_parser("index", help="index a file or directory of documents"))

    p = sub.add_parser("query", help="retrieve from an index (and optionally answer)")
    p.add_argument("index", help="index directory or postgresql:// URL")
    p.add_argument("question")
    p.add_argument("-k", type=int, default=4, help="number of hits (default 4)")
    p.add_argument("--mode", help="retrieval mode, for methods that have several")
    p.add_argument("--filter", action="append", metavar="FIELD=VALUE",
                   help="only documents whose metadata matches: FIELD=VALUE, FIELD!=VALUE, FIELD>VALUE (>=, <, <=), "
                        "or a JSON object such as '{\"$or\": [{\"year\": {\"$gt\": 1900}}, {\"tags\": \"salt\"}]}' "
                        "(repeat: a field twice with = matches either value, everything else all must hold)")
    p.add_argument("--score-threshold", type=float, metavar="S",
                   help="leave out hits scoring below S (0-1; a hit's score is the query's cosine to the nearest passage it "
                        "cites, the same in every mode): fewer than -k hits may come back")
    p.add_argument("--rerank", metavar="KIND",
                   help="rerank the candidates: llm (the --llm chat model ranks them in one prompt; llm:pointwise grades "
                        "each 0-10), or cross-encoder:MODEL (sentence-transformers, installed separately)")
    p.add_argument("--rerank-candidates", type=int, metavar="N",
                   help="hits the search fetches for --rerank to choose -k from (default 20, never fewer than -k)")
    p.add_argument("--answer", action="store_true", help="also write an answer (model, or extractive with --offline)")
    p.add_argument("--json", action="store_true", help="print JSON")
    model_flags(p)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("demo", help="index the sample corpus with every installed method and answer questions side by side")
    p.add_argument("--out", help="folder for the indexes, one per method (default: a new temporary folder)")
    p.add_argument("--method", action="append", help="only this method (repeat for several; default: every installed one)")
    p.add_argument("-q", "--quiet", action="store_true", help="accepted for symmetry: the demo prints no progress bars")
    model_flags(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("status", help="show whether Ollama (and an OpenAI-compatible server) is reachable and which methods are installed, or describe an index")
    p.add_argument("index", nargs="?", help="an index (directory or postgresql:// URL): its method, models, counts and settings")
    p.add_argument("--base-url", help="also report the OpenAI-compatible server at this URL (env RHIZOME_BASE_URL, OPENAI_BASE_URL)")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("docs", help="list or delete the documents of an index (`rhizome docs IDX` lists them)")
    docs = p.add_subparsers(dest="docs_command", required=True)
    q = docs.add_parser("list", help="every document: id, status, chunks, title or source")
    q.add_argument("index", help="an index directory or postgresql:// URL")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=cmd_docs_list)
    q = docs.add_parser("delete", help="delete documents and whatever only they supported (the method's own delete)")
    q.add_argument("index", help="an index directory or postgresql:// URL")
    q.add_argument("ids", nargs="+", metavar="ID", help="document ids (see `rhizome docs list`)")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    purge = q.add_mutually_exclusive_group()
    purge.add_argument("--purge-cache", dest="keep_cache", action="store_false",
                       help="also remove the model answers cached about them, and those of whole-index work and queries "
                            "(the default; give the --cache the documents were indexed with)")
    purge.add_argument("--keep-cache", dest="keep_cache", action="store_true",
                       help="keep the model-call cache as it is (a re-index of the same text costs nothing; the cache keeps "
                            "what the model said about the deleted documents)")
    model_flags(q)
    q.set_defaults(func=cmd_docs_delete, keep_cache=False)

    p = sub.add_parser("export", help="write an index's documents, chunks, entities, relations and communities for other tools")
    p.add_argument("index", help="an index directory or postgresql:// URL")
    p.add_argument("--format", choices=("graphml", "parquet", "jsonl"), default="graphml",
                   help="graphml: the entity graph (Gephi, networkx); parquet or jsonl: one file per table (default graphml)")
    p.add_argument("--out", help="file (graphml) or folder (parquet, jsonl); default INDEX.graphml or INDEX-FORMAT/ here")
    p.add_argument("--force", action="store_true", help="replace files the export would write that exist already")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("check", help="verify an index directory: records, checksums, vectors, snapshots (exit 1 on problems)")
    p.add_argument("index", help="an index directory or postgresql:// URL")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("repair", help="rebuild an index's manifest and vector snapshots from its records (deletes no record)")
    p.add_argument("index", help="an index directory or postgresql:// URL")
    p.set_defaults(func=cmd_repair)

    # method packages add their own subcommands (e.g. `rhizome classify` from rhizome-gorag)
    # through the `rhizome.commands` entry points: each names a function register(subparsers)
    # that adds a parser whose `func(args) -> int` does the work
    for entry in importlib.metadata.entry_points(group="rhizome.commands"):
        entry.load()(sub)
    return parser


def _default_subcommands(argv: list[str]) -> list[str]:
    """``rhizome docs IDX`` reads as ``rhizome docs list IDX``: listing is what a bare group
    command is expected to do (as ``git remote`` or ``docker image`` do)."""
    if len(argv) >= 2 and argv[0] == "docs" and not argv[1].startswith("-") and argv[1] not in ("list", "delete"):
        return ["docs", "list", *argv[1:]]
    return argv


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(_default_subcommands(sys.argv[1:] if argv is None else list(argv)))
    try:
        check_model_flags(args)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader gone away is noticed here, not when the interpreter exits
        return code
    except BrokenPipeError:
        # the reader stopped reading (`rhizome docs list IDX | head`): stop quietly, as CLIs do
        with contextlib.suppress(AttributeError, OSError, ValueError):  # stdout may not be a file
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 141  # 128 + SIGPIPE, what a shell reports for a program a closed pipe stopped
    except RhizomeError as exc:
        print(f"rhizome: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rhizome: interrupted; finished batches are saved, run the same command again to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
