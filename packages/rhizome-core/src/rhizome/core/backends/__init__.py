"""The storage backends behind :class:`~rhizome.core.storage.IndexStore`: a directory with
SQLite (:mod:`~rhizome.core.backends.sqlite`) and a PostgreSQL schema with pgvector
(:mod:`~rhizome.core.backends.postgres`, ``rhizome-core[postgres]``)."""
