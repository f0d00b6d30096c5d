"""Deterministic fake models for tests, benchmarks and examples.

They implement the same primitives as real models, so everything above them — validation,
retries, cache, concurrency limits, usage counters — runs exactly as it does against Ollama.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from rhizome.core.models.base import BaseChatModel, BaseEmbedder, Message
from rhizome.core.protocols import Completion
from rhizome.core.text import count_tokens

Responder = Callable[[list[Message], "dict[str, Any] | None"], "str | dict[str, Any] | list[Any]"]


class FakeChatModel(BaseChatModel):
    """Answers from a script or a function, optionally sleeping to imitate model latency.

    ``responses``: a list of answers used in order (the last one repeats), or a callable
    ``(messages, json_schema) -> answer``. Dicts and lists are sent as JSON text.
    ``delay``: seconds each call sleeps (a real ``asyncio.sleep``, so concurrency is real).
    Every request is kept in ``requests`` for assertions.
    """

    def __init__(
        self,
        responses: Sequence[str | dict[str, Any] | list[Any]] | Responder = ("ok",),
        *,
        delay: float = 0.0,
        name: str = "fake:chat",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, **kwargs)
        self._responses = responses
        self._index = 0
        self.delay = delay
        self.requests: list[list[Message]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def _achat(self, messages: list[Message], json_schema: dict[str, Any] | None) -> Completion:
        self.requests.append([dict(m) for m in messages])
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if callable(self._responses):
                answer = self._responses(messages, json_schema)
            else:
                answers = list(self._responses)
                answer = answers[min(self._index, len(answers) - 1)]
                self._index += 1
        finally:
            self.in_flight -= 1
        text = answer if isinstance(answer, str) else json.dumps(answer)
        prompt_tokens = sum(count_tokens(m["content"]) for m in messages)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=count_tokens(text))


class FakeEmbedder(BaseEmbedder):
    """Pseudo-random unit vectors seeded by a hash of each text: equal texts, equal vectors;
    otherwise unrelated. Use :class:`rhizome.core.embeddings.HashingEmbedder` when similarity
    must mean something."""

    def __init__(self, dimension: int = 32, *, delay: float = 0.0, name: str = "fake:embed", **kwargs: Any) -> None:
        super().__init__(name, dimension=dimension, **kwargs)
        self.delay = delay

    async def _aembed_batch(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        if self.delay:
            await asyncio.sleep(self.delay)
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            out.append(np.random.default_rng(seed).standard_normal(self._dimension or 32).tolist())
        return out


__all__ = ["FakeChatModel", "FakeEmbedder"]
