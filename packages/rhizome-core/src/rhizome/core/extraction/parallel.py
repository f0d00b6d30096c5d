"""Extraction fanned out over Ray: ``rhizome index --workers N`` (``workers=`` of any index).

Every method extracts through ``self.extractor.aextract(chunks)``. With ``workers``, the index
wraps its extractor in a :class:`DistributedExtractor`, which cuts the chunks into the units
the extractor would send to its model anyway — the packs of
:class:`~rhizome.core.extraction.llm.LLMExtractor`, or single chunks for an extractor that
declares ``independent_chunks`` (HippoRAG's OpenIE) — and runs groups of them as Ray tasks, at
most ``workers`` at a time. Each task gets a copy of the extractor and its chat model (pointed
at the next of ``hosts``, when several Ollama servers are given) and returns the records of its
units; the records come back in input order, so the index is the same, row for row, as one
built in a single process.

The copies keep the model-call cache of the index: a cache file (in the index directory, or
``$RHIZOME_CACHE_DIR``) is opened by path — every worker on this machine, or on a cluster that
shares the filesystem — and a PostgreSQL index's cache is a table every worker reaches through
the database URL. Each answer is committed as a worker gets it, so a run that is interrupted
resumes paying only for what was never answered; the documents themselves are committed by the
process that runs the insert, batch by batch, as without workers.

Extractors whose records depend on the whole batch (the offline extractor's corpus weights) and
imported OpenIE files make no model calls; they run in this process. Local mode (no
``address``) starts Ray in this process with ``workers`` CPUs (``ray.init``); ``address``
joins a running cluster (``ray://host:10001`` or ``auto``), whose nodes must have the same
Rhizome packages installed. Needs ``rhizome-core[ray]``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rhizome.core.aio import gather_or_cancel, run_sync
from rhizome.core.errors import ConfigurationError
from rhizome.core.progress import phase
from rhizome.core.types import Chunk

START_ATTEMPTS = 2
"""Times a local Ray is started before its start-up error is raised."""
TASKS_PER_WORKER = 4
"""Tasks an extraction is cut into per worker: small enough to balance the workers and to lose
little when one is interrupted, large enough that Ray's per-task cost stays small."""


def _ray() -> Any:
    # workers run the Rhizome installed where they start (this interpreter, in local mode): Ray's
    # `uv run` hook would package the working directory and start every worker through uv
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError:
        raise ConfigurationError(
            "--workers / workers= fans extraction out over Ray, which is not installed: pip install "
            "'rhizome-core[ray]' (or 'rhizome-rag[ray]'), or run without workers"
        ) from None
    return ray


@dataclass(frozen=True)
class RayWorkers:
    """Where extraction runs: ``workers`` Ray tasks at a time, on a local Ray started in this
    process (``address=None``) or on a cluster; ``hosts``: Ollama servers the tasks take turns
    on (empty: the chat model's own)."""

    workers: int = 2
    address: str | None = None
    hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ConfigurationError(f"workers must be a positive number of Ray workers, got {self.workers!r}")
        object.__setattr__(self, "hosts", tuple(h for h in self.hosts if h.strip()))

    def start(self) -> Any:
        """Ray, started (local mode) or joined (``address``) on first use. A local Ray whose
        node does not come up in time (Ray gives it 30 s, which a busy machine can exceed) is
        started once more before the error reaches the caller."""
        ray = _ray()
        if ray.is_initialized():
            return ray
        if self.address:
            ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
            return ray
        for attempt in range(START_ATTEMPTS):
            try:
                ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
                return ray
            except Exception as exc:  # Ray raises a bare Exception when its node times out
                ray.shutdown()
                if attempt + 1 == START_ATTEMPTS:
                    raise ConfigurationError(
                        f"a local Ray with {self.workers} workers did not start ({exc}); the machine may be "
                        "too busy: try again, use fewer --workers, or join a running cluster with --ray-address"
                    ) from exc
                logging.getLogger(__name__).warning("local Ray did not start (%s); starting it again", exc)
        return ray

    def distribute(self, extractor: Any) -> DistributedExtractor:
        return DistributedExtractor(extractor, self)


def as_workers(value: Any) -> RayWorkers | None:
    """``workers=`` as given to an index: ``None`` (extract here), a number of local Ray
    workers, or a :class:`RayWorkers`."""
    if value is None or isinstance(value, RayWorkers):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return RayWorkers(workers=value)
    raise ConfigurationError(f"workers must be a number of Ray workers or a RayWorkers, got {type(value).__name__}")


def units_of(extractor: Any, chunks: Sequence[Chunk]) -> list[list[Chunk]] | None:
    """The pieces of work ``extractor`` would do for ``chunks`` on its own — its packs, or one
    chunk each when it says its chunks are independent — or ``None`` when its records depend on
    the whole batch."""
    packs = getattr(extractor, "packs", None)
    if callable(packs) and callable(getattr(extractor, "aextract_pack", None)):
        return [list(p) for p in packs(chunks)]
    if getattr(extractor, "independent_chunks", False):
        return [[c] for c in chunks]
    return None


def _model_of(extractor: Any) -> tuple[str, Any] | None:
    for name in ("model", "llm"):
        model = getattr(extractor, name, None)
        if model is not None and hasattr(model, "usage"):
            return name, model
    return None


class DistributedExtractor:
    """An extractor whose model calls run as Ray tasks (see the module docstring); every other
    attribute is the wrapped extractor's."""

    def __init__(self, inner: Any, workers: RayWorkers) -> None:
        self.inner = inner
        self.workers = workers
        self.spec = getattr(inner, "spec", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _copies(self) -> list[Any]:
        """The extractor as the tasks get it: one copy per Ollama host (or one)."""
        base = copy.copy(self.inner)
        if hasattr(base, "progress"):
            base.progress = None  # a callback of this process
        found = _model_of(base)
        if not self.workers.hosts:
            return [base]
        if found is None or not callable(getattr(found[1], "on_host", None)):
            raise ConfigurationError(
                f"Ollama hosts were given, but {type(self.inner).__name__} does not extract with an Ollama chat model"
            )
        copies = []
        for host in self.workers.hosts:
            twin = copy.copy(base)
            setattr(twin, found[0], found[1].on_host(host))
            copies.append(twin)
        return copies

    async def aextract(self, chunks: Sequence[Chunk]) -> list[Any]:
        """One record per chunk, in input order, as the wrapped extractor gives them."""
        from rhizome.core.extraction.schema import check_chunks
        from rhizome.core.models.base import record_usage

        chunks = check_chunks(chunks)
        units = units_of(self.inner, chunks)
        if units is None or not units:
            return await self.inner.aextract(chunks)
        ray = self.workers.start()
        size = max(1, math.ceil(len(units) / (self.workers.workers * TASKS_PER_WORKER)))
        groups = [units[i : i + size] for i in range(0, len(units), size)]
        shipped = [ray.put(c) for c in self._copies()]
        remote = _remote()
        limit = asyncio.Semaphore(self.workers.workers)
        found = _model_of(self.inner)

        async def one(i: int, group: list[list[Chunk]], step: Any) -> list[Any]:
            async with limit:
                ref = remote.remote(shipped[i % len(shipped)], group)
                try:
                    records, usage = await ref
                except asyncio.CancelledError:
                    ray.cancel(ref)
                    raise
                except ray.exceptions.RayTaskError as exc:  # the worker's own error, typed as raised there
                    raise exc.cause from None
            if found is not None:
                record_usage(found[1], usage)
            step.advance(sum(len(u) for u in group))
            return records

        label = f"extracting entities ({self.workers.workers} Ray worker{'s' if self.workers.workers > 1 else ''})"
        with phase(label, len(chunks), "chunk") as step:
            parts = await gather_or_cancel([one(i, g, step) for i, g in enumerate(groups)])
        return [record for part in parts for record in part]

    def extract(self, chunks: Sequence[Chunk]) -> list[Any]:
        return run_sync(self.aextract(chunks))

    def __repr__(self) -> str:
        return f"DistributedExtractor({self.inner!r}, workers={self.workers.workers})"


def extract_units(extractor: Any, units: list[list[Chunk]]) -> tuple[list[Any], dict[str, int]]:
    """What one Ray task runs: the records of ``units`` (in order) and the chat work it cost."""
    from rhizome.core.models.base import usage_scope

    async def run() -> tuple[list[Any], dict[str, int]]:
        with usage_scope() as usage:
            if callable(getattr(extractor, "aextract_pack", None)):
                parts = await gather_or_cancel([extractor.aextract_pack(u) for u in units])
                records = [r for part in parts for r in part]
            else:
                records = await extractor.aextract([c for u in units for c in u])
        return records, usage.chat.snapshot()

    return run_sync(run())


@functools.cache
def _remote() -> Any:
    """:func:`extract_units` as a Ray task (one CPU each, so local mode runs ``workers`` at once)."""
    return _ray().remote(num_cpus=1)(extract_units)


__all__ = ["DistributedExtractor", "RayWorkers", "TASKS_PER_WORKER", "as_workers", "extract_units", "units_of"]
