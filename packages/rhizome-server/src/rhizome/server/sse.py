"""Server-sent events: each ``event:`` line with one ``data:`` line of JSON."""

from __future__ import annotations

import json
from typing import Any


def event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def data_only(data: Any) -> str:
    """An unnamed event (how OpenAI's streams are framed)."""
    return f"data: {data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)}\n\n"
