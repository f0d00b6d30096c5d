"""The four protocols the integrations adapt. A method implements them once and gets LangChain,
LlamaIndex and LangGraph support without framework code of its own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np
from pydantic import BaseModel

from rhizome.core.types import Document, Hit

M = TypeVar("M", bound=BaseModel)


class Completion(BaseModel):
    """The text of one model answer and what it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


@runtime_checkable
class ChatModel(Protocol):
    """A chat model. ``a*`` methods do the work; the others wrap them."""

    name: str

    async def acomplete(self, prompt: str, *, system: str | None = None) -> Completion: ...

    async def acomplete_json(
        self, prompt: str, schema: type[M], *, system: str | None = None
    ) -> M: ...

    def complete(self, prompt: str, *, system: str | None = None) -> Completion: ...

    def complete_json(self, prompt: str, schema: type[M], *, system: str | None = None) -> M: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    name: str

    @property
    def dimension(self) -> int: ...

    async def aembed(self, texts: Sequence[str]) -> np.ndarray: ...

    async def aembed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of search queries (models may embed queries differently from documents)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class Retriever(Protocol):
    """Returns the ``k`` best hits for a query (``k=None`` means the retriever's default)."""

    async def aretrieve(self, query: str, k: int | None = None) -> list[Hit]: ...

    def retrieve(self, query: str, k: int | None = None) -> list[Hit]: ...


@runtime_checkable
class Index(Protocol):
    """A persistent, updatable index of documents built by one method."""

    method: ClassVar[str]

    async def ainsert(self, documents: Sequence[Document]) -> Any: ...

    def insert(self, documents: Sequence[Document]) -> Any: ...

    async def adelete(self, document_ids: Sequence[str]) -> Any: ...

    def delete(self, document_ids: Sequence[str]) -> Any: ...

    def persist(self, path: str | Path | None = None) -> Path: ...

    @classmethod
    def load(cls, path: str | Path, **models: Any) -> Index: ...

    def as_retriever(self, **kwargs: Any) -> Retriever: ...


__all__ = ["ChatModel", "Completion", "Embedder", "Index", "Retriever"]
