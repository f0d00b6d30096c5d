"""Small in-test implementations of Rhizome's Retriever and Index protocols, used to check that
the framework integrations depend on the protocols only, plus a shared corpus."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from rhizome.core.aio import run_sync
from rhizome.core.types import Document, Hit, Provenance, Span

CORPUS = [
    Document(
        id="doc-bees",
        text="Honey bees pollinate crops and live in hives ruled by a single queen.",
        metadata={"title": "Bees", "source": "notes/bees.md"},
    ),
    Document(
        id="doc-ants",
        text="Ants build colonies underground; a queen ant lays the eggs for the colony.",
        metadata={"title": "Ants", "source": "notes/ants.md"},
    ),
    Document(
        id="doc-wasps",
        text="Wasps build paper nests and a queen wasp founds each new nest in spring.",
        metadata={"title": "Wasps", "source": "notes/wasps.md"},
    ),
    Document(
        id="doc-rivers",
        text="Rivers carry sediment to the sea and shape valleys over millions of years.",
        metadata={"title": "Rivers"},
    ),
    Document(
        id="doc-volcano",
        text="Volcanoes erupt molten rock; lava cools into basalt on the slopes.",
        metadata={"title": "Volcanoes", "source": "https://example.org/volcano"},
    ),
]

QUERY = "Which insects have a queen in their colony?"

_WORD = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class ToyRetriever:
    """Scores every document by word overlap with the query; always returns ``min(k, n)`` hits,
    one per document, with full provenance."""

    def __init__(self, documents: Sequence[Document], k: int = 4) -> None:
        self.documents = list(documents)
        self.k = k
        self.calls: list[tuple[str, int | None]] = []

    async def aretrieve(self, query: str, k: int | None = None) -> list[Hit]:
        self.calls.append((query, k))
        k = self.k if k is None else k
        q = _words(query)
        scored = []
        for position, doc in enumerate(self.documents):
            overlap = len(q & _words(doc.text)) / (len(q) or 1)
            scored.append((overlap, -position, doc))
        scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
        hits = []
        for score, _, doc in scored[:k]:
            chunk_id = f"{doc.id}-c0"
            source = doc.metadata.get("source")
            hits.append(
                Hit(
                    id=chunk_id,
                    text=doc.text,
                    score=round(score, 6),
                    kind="chunk",
                    provenance=Provenance(
                        document_ids=[doc.id],
                        chunk_ids=[chunk_id],
                        spans=[
                            Span(document_id=doc.id, chunk_id=chunk_id, start=0, end=len(doc.text))
                        ],
                        sources=[source] if source else [],
                    ),
                    metadata={"title": doc.metadata.get("title", "")},
                )
            )
        return hits

    def retrieve(self, query: str, k: int | None = None) -> list[Hit]:
        return run_sync(self.aretrieve(query, k))


class ModelUsingRetriever:
    """Like a method whose retrieval calls an LLM (LightRAG keyword extraction, GraphRAG map
    steps): asks ``model`` to rewrite the query, then searches with the rewritten query."""

    def __init__(self, model: Any, inner: Any) -> None:
        self.model = model
        self.inner = inner

    async def aretrieve(self, query: str, k: int | None = None) -> list[Hit]:
        rewritten = await self.model.acomplete(f"Rewrite this search query: {query}")
        return await self.inner.aretrieve(f"{query} {rewritten.text}", k)

    def retrieve(self, query: str, k: int | None = None) -> list[Hit]:
        return run_sync(self.aretrieve(query, k))


class ToyIndex:
    """A minimal Index: documents in memory, persisted as one JSON file."""

    method: ClassVar[str] = "toy"

    def __init__(self, documents: Sequence[Document] = ()) -> None:
        self.documents: dict[str, Document] = {d.id: d for d in documents}

    async def ainsert(self, documents: Sequence[Document]) -> int:
        for doc in documents:
            self.documents[doc.id] = doc
        return len(documents)

    def insert(self, documents: Sequence[Document]) -> int:
        return run_sync(self.ainsert(documents))

    async def adelete(self, document_ids: Sequence[str]) -> int:
        return sum(self.documents.pop(i, None) is not None for i in document_ids)

    def delete(self, document_ids: Sequence[str]) -> int:
        return run_sync(self.adelete(document_ids))

    def persist(self, path: str | Path | None = None) -> Path:
        target = Path(path or ".")
        target.mkdir(parents=True, exist_ok=True)
        payload = [d.model_dump() for d in self.documents.values()]
        (target / "toy.json").write_text(json.dumps(payload), encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path, **models: Any) -> ToyIndex:
        raw = json.loads((Path(path) / "toy.json").read_text(encoding="utf-8"))
        return cls([Document.model_validate(d) for d in raw])

    def as_retriever(self, **kwargs: Any) -> ToyRetriever:
        return ToyRetriever(list(self.documents.values()), **kwargs)
