"""Prompts that fit the model's context window.

A chat model may say how many tokens it sees at once (``context_window``: Ollama's ``num_ctx``,
a LlamaIndex LLM's ``metadata.context_window``; ``None`` when unknown). Whatever packs context
into a prompt asks :func:`fit` how much it may pack, given the fixed text around the context and
the tokens it expects back; :class:`~rhizome.core.models.base.BaseChatModel` refuses, with
:class:`~rhizome.core.errors.PromptTooLongError`, any request that would still not fit.

Tokens are counted with tiktoken's ``cl100k_base`` (:func:`~rhizome.core.text.count_tokens`),
not the model's own tokenizer, so counts are multiplied by :data:`TOKEN_MARGIN`, and each
message is charged :data:`MESSAGE_TOKENS` for the chat template around it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rhizome.core.text import count_tokens

TOKEN_MARGIN = 1.25
"""Room for tokenizers that split text finer than ``cl100k_base`` (a model's own tokenizer is
not available offline to count with): a smaller vocabulary cuts words into more pieces. A
chosen margin, not a measured one; see docs/models.md."""

MESSAGE_TOKENS = 8
"""Chat-template tokens charged per message (role markers, separators)."""

MIN_REPLY_TOKENS = 256
"""Room every request keeps for its answer at the least; builders reserve what they expect."""


def context_window(llm: Any) -> int | None:
    """The tokens ``llm`` sees at once (prompt and answer), or ``None`` when it does not say."""
    window = getattr(llm, "context_window", None)
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None


def prompt_tokens(messages: Sequence[dict[str, str]]) -> int:
    """The tokens ``messages`` take in the model's window, by this module's estimate."""
    text = sum(count_tokens(m.get("content", "")) for m in messages)
    return math.ceil(text * TOKEN_MARGIN) + MESSAGE_TOKENS * len(messages)


def fit(llm: Any, wanted: int, *, reply_tokens: int, fixed: Sequence[str] = ()) -> int:
    """How many tokens of context (counted with ``count_tokens``) a prompt may pack: ``wanted``,
    or less when the model's window, minus the ``fixed`` texts around the context (system
    message, instructions, question), the expected reply and a message for the answer, holds
    less. At least 0; ``wanted`` when the window is unknown."""
    window = context_window(llm)
    if window is None:
        return wanted
    fixed_tokens = sum(count_tokens(t) for t in fixed)
    free = window - max(reply_tokens, MIN_REPLY_TOKENS) - MESSAGE_TOKENS * (len(fixed) + 1)
    return max(0, min(wanted, math.floor(free / TOKEN_MARGIN) - fixed_tokens))


__all__ = ["MESSAGE_TOKENS", "MIN_REPLY_TOKENS", "TOKEN_MARGIN", "context_window", "fit", "prompt_tokens"]
