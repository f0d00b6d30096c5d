"""HippoRAG's OpenIE with a chat model: named entities first, then triples that use them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rhizome.core.aio import gather_or_cancel, run_sync
from rhizome.core.extraction.llm import has_real_text
from rhizome.core.extraction.openie import import_openie
from rhizome.core.extraction.schema import Extraction, check_chunks
from rhizome.core.progress import phase
from rhizome.core.store.cache import built_from
from rhizome.core.types import Chunk
from rhizome.hipporag.prompts import (
    OPENIE_SYSTEM,
    NamedEntities,
    Triples,
    ner_prompt,
    triples_prompt,
)


class ModelOpenIE:
    """Extracts each chunk with two JSON calls (named entities, then triples conditioned on
    them) and turns the answers into records exactly as imported HippoRAG OpenIE files are
    (:func:`~rhizome.core.extraction.openie.import_openie`), so the three ways of extracting
    feed the index the same shape. Chunks without a letter or digit cost no call."""

    spec = "llm"
    independent_chunks = True
    """Each chunk's record depends on that chunk alone (so chunks can be extracted anywhere, in
    any grouping: see :mod:`rhizome.core.extraction.parallel`)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    async def _one(self, chunk: Chunk) -> dict[str, Any]:
        entities: list[str] = []
        triples: list[list[str]] = []
        if has_real_text(chunk.text):
            with built_from([chunk.document_id]):  # the answers are about this chunk's document alone
                entities = (await self.llm.acomplete_json(ner_prompt(chunk.text), NamedEntities, system=OPENIE_SYSTEM)).named_entities
                triples = (await self.llm.acomplete_json(triples_prompt(chunk.text, entities), Triples, system=OPENIE_SYSTEM)).triples
        return {"idx": chunk.id, "extracted_entities": entities, "extracted_triples": triples}

    async def aextract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        """One record per chunk, in input order (the first failing chunk cancels the others)."""
        chunks = check_chunks(chunks)
        with phase("extracting triples (OpenIE)", len(chunks), "chunk") as step:

            async def one(chunk: Chunk) -> dict[str, Any]:
                found = await self._one(chunk)
                step.advance()
                return found

            docs = await gather_or_cancel([one(c) for c in chunks])
        records = import_openie({"docs": docs})
        for record in records:
            record.metadata["extractor"] = "hipporag-openie"
        return records

    def extract(self, chunks: Sequence[Chunk]) -> list[Extraction]:
        return run_sync(self.aextract(chunks))

    def __repr__(self) -> str:
        return f"ModelOpenIE(llm={getattr(self.llm, 'name', self.llm)!r})"


__all__ = ["ModelOpenIE"]
