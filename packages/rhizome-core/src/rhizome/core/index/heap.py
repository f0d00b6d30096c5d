"""Full garbage collections deferred while an index writes.

A build holds millions of long-lived objects (records, graphs, lookups). CPython's cyclic
collector walks every tracked object in a full collection, and runs one each time the objects
that survived into its oldest generation grew by a quarter: a build whose heap grows to n objects
pays about log(n) walks of a growing heap, a cost that grows faster than the corpus (a fifth of
the CPU of a 10k-document ArchRAG build, 16 of 78 s). While an index writes (insert, delete,
refresh, rebuild), :func:`full_collections_deferred` keeps the young generations collected as
usual — cyclic garbage made and dropped within a step is still freed, and reference counting
frees everything else at once — and leaves the oldest generation to the first full collection
after the write. The collector's thresholds are process-wide: nested and concurrent writers
share one deferral, and the thresholds found before the first are restored after the last.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_NEVER = 1 << 30
"""A threshold of young-generation collections that an index write does not reach."""

_lock = threading.Lock()
_writers = 0
_saved: tuple[int, int, int] = gc.get_threshold()


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    """Run the body with no automatic full collection (young generations as usual)."""
    global _writers, _saved
    with _lock:
        if _writers == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], _NEVER)
        _writers += 1
    try:
        yield
    finally:
        with _lock:
            _writers -= 1
            if _writers == 0:
                gc.set_threshold(*_saved)


__all__ = ["full_collections_deferred"]
