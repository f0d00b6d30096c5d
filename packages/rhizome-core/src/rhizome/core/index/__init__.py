"""The index layer: what every method's index shares, so that a method package is only its
algorithm — :mod:`~rhizome.core.index.base`, ``BaseIndex``, ``ModeInfo``, batches and stats;
:mod:`~rhizome.core.index.config`, one validated configuration per method;
:mod:`~rhizome.core.index.stages`, resumable stages, results committed as they are produced;
:mod:`~rhizome.core.index.hierarchy`, groups in levels and their bottom-up summaries;
:mod:`~rhizome.core.index.writers`, one group's summary, by the chat model or offline;
:mod:`~rhizome.core.index.heap`, full garbage collections deferred while an index writes;
:mod:`~rhizome.core.index.entity_index`. Import from the modules: this package loads none of
them.
"""
