"""Deterministic fake models for tests, benchmarks and examples.

They implement the same primitives as real models, so everything above them — validation,
retries, cache, concurrency limits, usage counters — runs exactly as it does against Ollama.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterator, Sequence
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
    otherwise unrelated. Use :class:`rhizome.core.models.embeddings.HashingEmbedder` when similarity
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




class SchemaResponder:
    """A responder for :class:`FakeChatModel` that answers any JSON-schema request with a valid,
    deterministic instance built from the prompt: strings are phrases taken from the prompt's
    capitalised words (so extracted "entities" are real names of the text), arrays hold up to
    ``max_items`` items, numbers sit inside their bounds, enums take their first value. Text
    requests get the first sentence of the prompt. Used to cost every method with one fake model.
    """

    def __init__(self, max_items: int = 4) -> None:
        self.max_items = max_items

    def __call__(self, messages: list[Message], json_schema: dict[str, Any] | None) -> Any:
        prompt = messages[-1]["content"]
        if json_schema is None:
            return prompt.split(".")[0][:200]
        # names come from the quoted passage when the prompt fences one in triple quotes or
        # backticks, else from its longest block: the text, not the instructions
        fenced = [part for i, part in enumerate(re.split(r'"""|```', prompt)) if i % 2 == 1]
        block = max(fenced or prompt.split("\n\n"), key=len)
        words = [w.strip(".,;:()[]\"'") for w in block.split()]
        names = list(dict.fromkeys(w for w in words if len(w) > 2 and w[:1].isupper() and w[1:].islower()))
        # the names are taken in turn within this answer only: one responder may serve several
        # requests at once (a stub server's threads), so nothing of a call is kept on it
        return self._value(json_schema, json_schema.get("$defs", {}), "", itertools.cycle(names or ["Item"]))

    def _value(self, schema: dict[str, Any], defs: dict[str, Any], key: str, names: Iterator[str]) -> Any:
        if "$ref" in schema:
            return self._value(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, key, names)
        for combo in ("anyOf", "oneOf", "allOf"):
            if combo in schema:
                options = [s for s in schema[combo] if s.get("type") != "null"] or schema[combo]
                return self._value(options[0], defs, key, names)
        if "enum" in schema:
            return schema["enum"][0]
        if "const" in schema:
            return schema["const"]
        kind = schema.get("type", "string")
        if kind == "object":
            props = schema.get("properties", {})
            return {k: self._value(v, defs, k, names) for k, v in props.items()}
        if kind == "array":
            n = max(schema.get("minItems", 0), min(self.max_items, schema.get("maxItems", self.max_items)))
            return [self._value(schema.get("items", {}), defs, key, names) for _ in range(n)]
        if kind in ("integer", "number"):
            low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
            high = schema.get("maximum", schema.get("exclusiveMaximum", low + 10))
            value = (low + high) / 2
            return int(value) if kind == "integer" else float(value)
        if kind == "boolean":
            return True
        if any(part in key for part in ("description", "summary", "answer", "explanation", "text")):
            return f"{next(names)} relates to {next(names)} in the text."
        return next(names)


__all__ = ["FakeChatModel", "FakeEmbedder", "SchemaResponder"]
