"""Counting what a chat model is asked, whatever the model.

:class:`CountingChatModel` wraps any chat model and counts every request that reaches it —
retries included — with its prompt and completion tokens measured by tiktoken (``cl100k_base``)
on the message texts. Counts are therefore comparable across models, fakes included, and across
projects that use the same tokenizer: the benchmark harness wraps a fake model with it to get
exact call and token counts without a model server.
"""

from __future__ import annotations

from typing import Any

from rhizome.core.models.base import BaseChatModel, M, Message
from rhizome.core.models.budget import context_window
from rhizome.core.protocols import Completion
from rhizome.core.text import count_tokens


class CountingChatModel(BaseChatModel):
    """Counts calls and tokens of ``inner`` in ``usage`` (and per-call in ``log`` when
    ``keep_log``). JSON validation and retries run here, so each retry is counted as a call.

    For one of our models the wrapped primitive is called directly (its own cache is
    bypassed: every request counts); any other chat model is called through its public
    ``acomplete``.
    """

    def __init__(self, inner: Any, *, keep_log: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("max_concurrency", getattr(inner, "max_concurrency", 4))
        kwargs.setdefault("max_retries", getattr(inner, "max_retries", 2))
        kwargs.setdefault("context_window", context_window(inner))
        super().__init__(getattr(inner, "name", type(inner).__name__), **kwargs)
        self.inner = inner
        self.keep_log = keep_log
        self.log: list[dict[str, int]] = []

    def cache_identity(self) -> dict[str, Any]:
        identity = getattr(self.inner, "cache_identity", None)
        return identity() if callable(identity) else {"name": self.name}

    async def _achat(self, messages: list[Message], json_schema: dict[str, Any] | None) -> Completion:
        if isinstance(self.inner, BaseChatModel):
            answer = await self.inner._achat(messages, json_schema)
            text = answer.text
        else:
            system = "\n".join(m["content"] for m in messages if m["role"] == "system") or None
            turns = [f"{m['role']}: {m['content']}" if len(messages) > 2 else m["content"] for m in messages if m["role"] != "system"]
            text = (await self.inner.acomplete("\n\n".join(turns), system=system)).text
        prompt_tokens = sum(count_tokens(m["content"]) for m in messages)
        completion_tokens = count_tokens(text)
        if self.keep_log:
            self.log.append({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens})
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    async def acomplete_json(self, prompt: str, schema: type[M], *, system: str | None = None) -> M:
        return await super().acomplete_json(prompt, schema, system=system)

    def reset(self) -> None:
        self.usage.__init__()  # type: ignore[misc]
        self.log.clear()


__all__ = ["CountingChatModel"]
