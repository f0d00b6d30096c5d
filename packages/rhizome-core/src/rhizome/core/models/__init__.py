"""Chat models and embedders: the shared base classes, Ollama, adapters for LangChain and
LlamaIndex models, fakes for tests, and specs such as ``ollama:MODEL``."""
