"""The conformance kit (rhizome.tools.testing) over every registered method, in every mode."""

from __future__ import annotations

import pytest

from rhizome.tools.testing import IndexConformance, registered_methods


class TestEveryMethod(IndexConformance):
    @pytest.fixture(params=registered_methods())
    def method(self, request: pytest.FixtureRequest) -> str:
        return request.param


def test_the_kit_covers_the_methods_we_ship():
    assert {"naive", "graphrag", "lightrag", "hipporag", "raptor", "sprag"} <= set(registered_methods())
