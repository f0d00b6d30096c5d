"""Rhizome's tools: what is built on the kernel but is not part of it, standing beside
``rhizome.core`` as langchain-tests stands beside langchain-core —
:mod:`~rhizome.tools.testing`, the conformance kit; :mod:`~rhizome.tools.faults`, fault
injection; :mod:`~rhizome.tools.integrity`, check and repair of an index;
:mod:`~rhizome.tools.export`, tables, parquet, JSON lines and GraphML of what an index holds;
:mod:`~rhizome.tools.loaders`, files on disk to documents; :mod:`~rhizome.tools.cli`, what every
``rhizome`` subcommand shares. The kernel never imports this package; methods, integrations, the
command line and tests may. ``load_path`` and ``load_files``, which ``rhizome.core`` used to
export, are exported here (imported on first use).
"""

from __future__ import annotations

from rhizome.core.lazy import lazy_exports

_EXPORTS = {
    "load_files": "rhizome.tools.loaders",
    "load_path": "rhizome.tools.loaders",
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

__all__ = [
    "load_path",
]
