"""The "write a new method" walkthrough of docs/architecture.md is real code: the conformance
kit passes for it, and the page shows exactly that file."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from rhizome.tools.testing import IndexConformance

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "passage_graph.py"


def _load():
    spec = importlib.util.spec_from_file_location("passage_graph", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestWalkthroughMethod(IndexConformance):
    @pytest.fixture
    def method(self):
        return _load().PassageGraphIndex


def test_the_architecture_page_shows_the_example_file():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- walkthrough -->\n```python\n(.*?)```", page, re.DOTALL)
    code = EXAMPLE.read_text(encoding="utf-8")
    assert len(blocks) == 3 and all(block in code for block in blocks), "the walkthrough must show examples/passage_graph.py"
    assert sum(len(b.splitlines()) for b in blocks) <= 100


ENTITY_EXAMPLE = ROOT / "examples" / "entity_graph.py"


class TestEntityGraphExample(IndexConformance):
    """The entity-graph walkthrough: a method on the kernel's entity-graph layer passes the kit."""

    @pytest.fixture
    def method(self):
        spec = importlib.util.spec_from_file_location("entity_graph", ENTITY_EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.EntityWalkIndex


def test_the_entity_graph_example_stays_short():
    assert len(ENTITY_EXAMPLE.read_text(encoding="utf-8").splitlines()) <= 120
