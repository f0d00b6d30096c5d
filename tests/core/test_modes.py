"""What each retrieval mode is for (ModeInfo, describe_modes) and the map-reduce mode base."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from rhizome.core import ConfigurationError, VectorIndex
from rhizome.core.index.base import ModeInfo
from rhizome.core.naive import VectorRetriever
from rhizome.core.retrieval.contract import MapPlan, MapReduceSearch
from rhizome.core.store.storage import method_registry
from rhizome.core.types import Hit


def test_mode_info_is_checked():
    with pytest.raises(ConfigurationError, match="question kinds"):
        ModeInfo("finds things", ("thematic",))
    with pytest.raises(ConfigurationError):
        ModeInfo(" ")


def test_a_mode_builds_the_retriever_it_names_with_its_options():
    from rhizome.hipporag import HippoRAGIndex

    index = HippoRAGIndex()
    assert type(index.as_retriever(mode="v1")).__name__ == "HippoRAGRetriever" and index.as_retriever(mode="v1").mode == "v1"
    assert index.as_retriever().mode == "v2"  # the first mode declared is the default
    index.close()
    from rhizome.sprag import SpRAGIndex

    segments = SpRAGIndex()
    assert segments.as_retriever(mode="precision").mode == "precision"
    with pytest.raises(ConfigurationError, match="bad option"):
        segments.as_retriever(mode="balanced", preset="precision")  # a mode's own option cannot be given again
    segments.close()
    naive = VectorIndex()
    with pytest.raises(ConfigurationError, match="^bad option for the naive retriever: ") as info:  # one mode, no name:
        naive.as_retriever(index=naive)  # no double space where the mode's name would go
    assert "  " not in str(info.value)
    naive.close()


def test_every_registered_method_describes_every_mode():
    for name, entry in method_registry().items():
        cls = entry.load()
        index = cls()
        try:
            described = index.describe_modes()
            assert list(described) == list(cls.modes or (None,)), name
            assert all(info.purpose for info in described.values())
        finally:
            index.close()


def test_an_undescribed_mode_falls_back_to_its_retriever_docstring():
    class Plain(VectorIndex):  # builds its retriever itself and describes no mode
        method: ClassVar[str] = "plain"
        mode_info: ClassVar[dict] = {}

        def _retriever(self, mode, k, **options):
            return VectorRetriever(self, k, **options)

    index = Plain()
    (info,) = index.describe_modes().values()
    assert info.purpose.startswith("Top-``k`` chunks by cosine similarity") and info.suits == ()
    index.close()


class Scripted(MapReduceSearch):
    """Two batches whose points overlap; the reduce is the base class's."""

    fill = False

    def __init__(self) -> None:
        super().__init__(index=VectorIndex(), k=3)  # an empty index: the points are scripted

    async def aplan(self, query: str) -> MapPlan:
        return MapPlan(batches=[["a"], ["b"]], stats={"planned": 1})

    async def amap(self, query: str, batch, k: int) -> list[Hit]:
        points = {
            "a": [Hit(id="a1", text="Same  point", score=0.9), Hit(id="a2", text="low", score=0.1)],
            "b": [Hit(id="b1", text="same point", score=0.9), Hit(id="b2", text="middle", score=0.5)],
        }[batch[0]]
        return points[:k]


def test_map_reduce_search_orders_dedupes_and_cuts():
    search = Scripted()
    result = asyncio.run(search.asearch("q", k=2))
    assert [h.id for h in result.hits] == ["a1", "b2"]  # ties keep plan order, same text once
    assert result.stats["batches"] == 2 and result.stats["planned"] == 1
