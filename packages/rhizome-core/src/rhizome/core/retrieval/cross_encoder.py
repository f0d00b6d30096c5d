"""A cross-encoder as a reranker: :class:`CrossEncoderReranker` reads the query and each
candidate passage together and scores the pair.

It runs a sentence-transformers ``CrossEncoder`` (optional: sentence-transformers and PyTorch are
not dependencies of Rhizome; they are imported on first use, and their absence is a
:class:`~rhizome.core.errors.ConfigurationError` saying what to install), or any object with a
``predict(pairs)`` method taking ``(query, passage)`` pairs and returning one score per pair —
a loaded ``CrossEncoder`` of your own, or another library's model with that method. Prediction
runs in a worker thread, ``batch_size`` pairs per ``predict`` call, so a search's event loop is
not held. A one-label ms-marco style model's scores come out of sentence-transformers through a
sigmoid, in ``[0, 1]``, which spRAG reads as relevance.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np

from rhizome.core.errors import ConfigurationError, ModelOutputError

INSTALL = "pip install torch==2.13.0 sentence-transformers"
"""What to install for :class:`CrossEncoderReranker` to load a model by name (docs/models.md says
why PyTorch is not in the lock file)."""


class CrossEncoderReranker:
    """A :class:`~rhizome.core.retrieval.rerank.Reranker` over a cross-encoder:
    ``index.as_retriever(reranker=CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2"))``.

    Parameters
    ----------
    model:
        A model name or directory that sentence-transformers' ``CrossEncoder`` loads (on the first
        call; a name not on disk is downloaded by sentence-transformers), or an object with
        ``predict(pairs)``.
    batch_size:
        Pairs per ``predict`` call.
    device:
        Where a model loaded by name runs (default ``"cpu"``).
    """

    def __init__(self, model: Any, *, batch_size: int = 32, device: str | None = None) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ConfigurationError(f"CrossEncoderReranker's batch_size must be a positive integer, got {batch_size!r}")
        if not isinstance(model, str) and not callable(getattr(model, "predict", None)):
            raise ConfigurationError(
                f"CrossEncoderReranker takes a model name or directory, or an object with predict(pairs), not a {type(model).__name__}"
            )
        self.name = model if isinstance(model, str) else type(model).__name__
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None if isinstance(model, str) else model
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.name!r})"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError as exc:
                    raise ConfigurationError(
                        f"CrossEncoderReranker({self.name!r}) needs sentence-transformers and PyTorch: run `{INSTALL}` "
                        "(docs/models.md), or pass an object with predict(pairs), or use another reranker "
                        "(rhizome.core.retrieval.llm_rerank.LLMReranker asks a chat model)"
                    ) from exc
                self._model = CrossEncoder(self.name, device=self.device or "cpu")
            return self._model

    def predict(self, query: str, texts: list[str]) -> np.ndarray:
        """The scores of ``texts`` against ``query``, one per text (in the calling thread)."""
        model = self._load()
        pairs = [(query, text) for text in texts]
        parts = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start:start + self.batch_size]
            try:
                scores = np.asarray(model.predict(batch), dtype=float)
            except (TypeError, ValueError) as exc:
                raise ModelOutputError(f"the cross-encoder {self.name} returned scores that are not numbers ({exc})") from exc
            if scores.ndim == 2 and scores.shape[1] == 1:
                scores = scores[:, 0]
            if scores.shape != (len(batch),):
                raise ModelOutputError(
                    f"the cross-encoder {self.name} returned scores of shape {scores.shape} for {len(batch)} pairs; a "
                    "reranker needs one score per pair (a model with one output label, such as the ms-marco cross-encoders)"
                )
            parts.append(scores)
        return np.concatenate(parts) if parts else np.zeros(0)

    async def __call__(self, query: str, texts: list[str]) -> list[float]:
        """The :class:`Reranker` call: :meth:`predict` in a worker thread."""
        return (await asyncio.to_thread(self.predict, query, list(texts))).tolist()


__all__ = ["CrossEncoderReranker", "INSTALL"]
