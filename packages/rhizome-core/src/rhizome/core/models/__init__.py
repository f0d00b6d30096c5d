"""Chat models and embedders: the shared base classes, Ollama, adapters for LangChain and
LlamaIndex models, fakes for tests, and specs such as ``ollama:MODEL``.

The embedders that need no model server are in :mod:`~rhizome.core.models.embeddings`.
"""
