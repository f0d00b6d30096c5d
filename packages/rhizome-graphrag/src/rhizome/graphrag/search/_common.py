"""What the searches share: argument checks, query vectors, provenance, offline relevance."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rhizome.core.aio import run_sync
from rhizome.core.embeddings import hashed_features
from rhizome.core.errors import ConfigurationError, IndexMismatchError, InvalidInputError
from rhizome.core.types import Chunk, Hit, Provenance

MAX_PROVENANCE_CHUNKS = 20
"""Most chunks cited by one entity, relation or report hit (the best-supported first)."""


def check_k(k: Any, default: int) -> int:
    if k is None:
        return default
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidInputError(f"k must be a positive integer, got {k!r}")
    return k


def check_prop(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigurationError(f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


def check_positive(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")
    return value


def check_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("the query must be a non-empty string")
    return query


async def query_vector(index: Any, query: str) -> np.ndarray | None:
    """The query's embedding, or ``None`` when the index holds no vectors yet."""
    known = index.store.manifest.embedding_dimension
    if known is None:
        return None
    vector = await index.embedder.aembed_query([query])
    if vector.shape[1] != known:
        raise IndexMismatchError(
            f"the index holds {known}-dimensional vectors but {index.embedder.name} gives "
            f"{vector.shape[1]}; query with the embedder the index was built with"
        )
    return vector


def search_collection(index: Any, name: str, vector: np.ndarray | None, k: int) -> list[tuple[str, float]]:
    if vector is None or k < 1:
        return []
    if not index.store.has_collection(name):
        return []
    return index.store.collection(name, vector.shape[1]).search(vector, k)[0]


def provenance(chunks: dict[str, Chunk], chunk_ids: Iterable[str], limit: int = MAX_PROVENANCE_CHUNKS) -> Provenance:
    """Merged provenance of the (at most ``limit``) stored chunks among ``chunk_ids``."""
    out = Provenance()
    n = 0
    for cid in chunk_ids:
        chunk = chunks.get(cid)
        if chunk is None:
            continue
        out = out.merge(chunk.provenance())
        n += 1
        if n >= limit:
            break
    return out


def content_words(text: str) -> set[str]:
    """Normalised content words (no stopwords), the unit of offline relevance."""
    return {f for f in hashed_features(text) if " " not in f}


def coverage(query_words: set[str], text: str) -> float:
    """Share of the query's content words that occur in ``text`` (0..1)."""
    if not query_words:
        return 0.0
    return len(query_words & content_words(text)) / len(query_words)


class SyncRetrieve:
    """The sync wrapper every search shares."""

    def retrieve(self, query: str, k: int | None = None) -> list[Hit]:
        return run_sync(self.aretrieve(query, k))  # type: ignore[attr-defined]


def usage_of(llm: Any) -> dict[str, int]:
    if llm is None or not hasattr(llm, "usage"):
        return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    u = llm.usage
    return {"calls": u.calls, "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens}


def usage_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before}


def dedupe(hits: Sequence[Hit]) -> list[Hit]:
    seen: set[str] = set()
    out = []
    for hit in hits:
        key = f"{hit.kind}:{hit.id}"
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out
