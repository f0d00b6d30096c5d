"""The storage backends behind :class:`~rhizome.core.store.storage.IndexStore`: a directory with
SQLite (:mod:`~rhizome.core.store.backends.sqlite`) and a PostgreSQL schema with pgvector
(:mod:`~rhizome.core.store.backends.postgres`, ``rhizome-core[postgres]``)."""
