"""Resumable stages: expensive results committed as they are produced, keyed by their input.

A stage is a named step whose results are worth keeping — a description summary, a community
report, a cluster summary, a per-document context. :func:`arun_stage` takes jobs keyed by a
digest of everything their result depends on (the input text, the model, the settings); a digest
the index already holds is answered from the ``stage_results`` table without a model call, and
new results are committed as they arrive: results arriving within :data:`COMMIT_EVERY` seconds of
the last commit join the next one, and whatever is left is committed when the stage ends, fails
or is cancelled. So an interrupted build loses only the calls in flight (a killed process, also
the results of its last fraction of a second), and a re-run — or a rebuild after an insert that
left an input unchanged — pays for nothing twice. :func:`prune_stage` drops the results no
longer in use.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

from rhizome.core.aio import gather_or_cancel
from rhizome.core.errors import fails_alone
from rhizome.core.progress import Phase, phase
from rhizome.core.store.records import batches

COMMIT_EVERY = 0.25
"""Seconds within which arriving results share a commit: a real model takes a second or more a
call, so its results are committed within a quarter of a second of arriving, mostly one by one;
the offline writers produce thousands a second, and one transaction each cost more than
writing them."""

Job = tuple[str, Callable[[], Awaitable[Any]]]
"""``(digest, make the result)``: the result must be JSON-serialisable."""
K = TypeVar("K", bound=Hashable)


def digest(*parts: Any) -> str:
    """A stable digest of JSON-serialisable ``parts``."""
    blob = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def stored_results(store: Any, stage: str, digests: Iterable[str]) -> dict[str, Any]:
    """Results of ``stage`` already held, by digest (in the index, or in the memory of a
    read-only store)."""
    digests = list(digests)
    out: dict[str, Any] = {d: store.memo[(stage, d)] for d in digests if (stage, d) in store.memo}
    for part in batches(list(dict.fromkeys(digests))):
        marks = ",".join("?" * len(part))
        for key, value in store.query(f"SELECT digest, value FROM stage_results WHERE stage = ? AND digest IN ({marks})", [stage, *part]):
            out[key] = json.loads(value)
    return out


async def arun_stage(store: Any, stage: str, jobs: Mapping[K, Job], *, label: str | None = None) -> tuple[dict[K, Any], int]:
    """Results of ``jobs`` (``{key: (digest, factory)}``) by key, and how many were computed now
    (shown as the progress phase ``label``, default the stage's name).

    Held digests are reused; jobs sharing a digest run once; new results are committed as they
    arrive (see the module docstring; a read-only store keeps them in its memory). A job whose
    model answer failed after its retries (:func:`~rhizome.core.errors.fails_alone`) lets the
    others finish and commit, then the first such failure is raised, so the next run pays only
    for the failed jobs; any other error cancels the jobs still running at once, and the results
    already made are committed before it propagates."""
    held = stored_results(store, stage, (d for d, _ in jobs.values()))
    todo: dict[str, Callable[[], Awaitable[Any]]] = {}
    for d, factory in jobs.values():
        if d not in held:
            todo.setdefault(d, factory)

    failed: list[BaseException] = []
    pending: list[tuple[str, Any]] = []
    last_commit = time.monotonic()

    def commit() -> None:
        nonlocal last_commit
        if pending:
            rows = [(stage, d, json.dumps(value, ensure_ascii=False)) for d, value in pending]
            with store.transaction() as db:
                db.upsert("stage_results", ("stage", "digest", "value"), ("stage", "digest"), rows)
            pending.clear()
        last_commit = time.monotonic()

    async def one(d: str, factory: Callable[[], Awaitable[Any]], step: Phase) -> None:
        try:
            value = await factory()
        except Exception as exc:
            if not fails_alone(exc):
                raise
            failed.append(exc)
            return
        finally:
            step.advance()
        held[d] = value
        if store.readonly:
            store.memo[(stage, d)] = value
            return
        pending.append((d, value))
        if time.monotonic() - last_commit >= COMMIT_EVERY:
            commit()

    with phase(label or stage, len(todo), "result") as step:
        try:
            await gather_or_cancel([one(d, f, step) for d, f in todo.items()])
        finally:
            commit()
    if failed:
        raise failed[0]
    return {key: held[d] for key, (d, _) in jobs.items()}, len(todo)


def prune_stage(db: Any, stage: str, keep: Iterable[str]) -> None:
    """Inside a transaction: drop the results of ``stage`` whose digest is not in ``keep``."""
    kept = set(keep)
    stale = [d for (d,) in db.execute("SELECT digest FROM stage_results WHERE stage = ?", (stage,)) if d not in kept]
    for part in batches(stale):
        db.execute(f"DELETE FROM stage_results WHERE stage = ? AND digest IN ({','.join('?' * len(part))})", [stage, *part])


__all__ = ["COMMIT_EVERY", "Job", "arun_stage", "digest", "prune_stage", "stored_results"]
