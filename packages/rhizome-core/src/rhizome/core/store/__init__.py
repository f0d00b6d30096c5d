"""The store layer: where an index's data lives and how it is read and written —
:mod:`~rhizome.core.store.storage`, the storage protocol every method writes through:
``IndexStore``, the manifest, ``load_index``; :mod:`~rhizome.core.store.backends`, its backends,
a directory with SQLite or a PostgreSQL schema with pgvector;
:mod:`~rhizome.core.store.records`, typed record tables, a method's records without SQL;
:mod:`~rhizome.core.store.vectors`, the faiss vector store with stable string ids;
:mod:`~rhizome.core.store.cache`, the content-addressed SQLite cache of model calls. Import from
the modules: this package loads none of them.
"""
