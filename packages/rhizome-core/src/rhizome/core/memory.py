"""A memory budget that index builds respect.

An index's budget is ``memory_gb`` in its config, else the environment variable
``RHIZOME_MEMORY_GB``, else none. While an index writes (insert, delete, refresh, rebuild) the
budget is in force (:func:`budget_scope`, a context variable, so the steps a write runs in other
threads with ``asyncio.to_thread`` see it too). A step that would take much memory estimates
what it needs before it runs and calls :func:`require`: when what the process holds now plus
the estimate exceeds the budget, it raises :class:`~rhizome.core.errors.MemoryBudgetError`
saying what to do, before anything is allocated or stored, rather than leaving the process to
the kernel's OOM killer. A step with a cheaper way of working (a vector collection kept out of
core) asks :func:`fits` first and takes that way instead. What is not estimated (the records and
graphs a method holds as Python objects while it builds) can still take a process past its
budget between the checked steps; each batch of an insert starts with a checkpoint
(``require(step, 0, fix)``), so such a build stops at the next batch, not at the OOM killer.

The estimates are deliberately simple (bytes per vector, per edge, per record) and err high;
what the process already holds is read from ``/proc/self/statm`` (the resident set now), or,
where that file does not exist, taken as nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import os

from rhizome.core.aio import scoped
from rhizome.core.environment import positive_number
from rhizome.core.errors import MemoryBudgetError

ENVIRONMENT = "RHIZOME_MEMORY_GB"
GB = 1 << 30

_budget: contextvars.ContextVar[int | None] = contextvars.ContextVar("rhizome_memory_budget", default=None)

VECTOR_OVERHEAD = 96
"""Bytes held per vector besides its floats: its string id, the id maps' entries."""
EDGE_BYTES = 200
"""Bytes per edge while a graph is clustered: the edge arrays, igraph's copy and the edge list
handed to it."""


def budget_bytes(memory_gb: float | None = None) -> int | None:
    """The budget in bytes: ``memory_gb`` when given, else ``RHIZOME_MEMORY_GB``, else ``None``
    (no budget)."""
    if memory_gb is None:
        memory_gb = positive_number(ENVIRONMENT, "gigabytes (e.g. 8 or 0.5)", float)
        if memory_gb is None:
            return None
    return int(memory_gb * GB)


def resident_bytes() -> int:
    """The resident set of this process now (0 where ``/proc`` is missing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def current() -> int | None:
    """The budget in force here (``None``: none)."""
    return _budget.get()


def budget_scope(limit: int | None) -> contextlib.AbstractContextManager[int | None]:
    """Run the body with ``limit`` bytes as the budget (``None``: no budget)."""
    return scoped(_budget, limit)


def gigabytes(n: float) -> str:
    """``n`` bytes for a person: in GB, or in MB or kB when smaller than a tenth of a GB."""
    if n >= GB / 10:
        return f"{n / GB:.2f} GB"
    return f"{n / (1 << 20):.1f} MB" if n >= 1 << 20 else f"{n / 1024:.1f} kB"


def fits(needed: int) -> bool:
    """Whether ``needed`` more bytes fit the budget in force (always, without one)."""
    limit = _budget.get()
    return limit is None or resident_bytes() + needed <= limit


def require(step: str, needed: int, fix: str) -> None:
    """Raise :class:`MemoryBudgetError` when ``step``, needing about ``needed`` more bytes, would
    take the process past the budget in force; ``fix`` says what to do besides raising it.
    ``needed`` 0: a checkpoint, raising when the process has already outgrown the budget
    (what the steps before held as Python objects, which no estimate covers)."""
    limit = _budget.get()
    if limit is None:
        return
    held = resident_bytes()
    if held + needed > limit:
        what = (f"{step} needs about {gigabytes(needed)} on top of the {gigabytes(held)} this process holds" if needed
                else f"before {step} this process holds {gigabytes(held)}")
        raise MemoryBudgetError(
            f"{what}, more than the memory budget of {gigabytes(limit)} (memory_gb=, rhizome index --memory-gb, "
            f"or {ENVIRONMENT}); {fix}, "
            "or raise the budget if the machine has the memory. Nothing stored was lost: the batches committed "
            "before stay, and inserting the same documents again goes on from there",
            step=step, needed=needed, held=held, budget=limit,
        )


def vector_bytes(n: int, dimension: int) -> int:
    """What ``n`` vectors of ``dimension`` floats take in a collection held in memory."""
    return n * (4 * dimension + VECTOR_OVERHEAD)


__all__ = [
    "GB",
    "MemoryBudgetError",
    "EDGE_BYTES",
    "ENVIRONMENT",
    "budget_bytes",
    "budget_scope",
    "current",
    "fits",
    "require",
    "resident_bytes",
    "vector_bytes",
]
