"""Every LightRAG test runs with each layout of the profiles' lists (``every_list_layout``)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def inline_limit(every_list_layout: int) -> int:
    return every_list_layout
