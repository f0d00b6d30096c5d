"""Full garbage collections are deferred while an index writes, and only then."""

import gc

from rhizome.core.index import heap
from rhizome.core.naive import VectorIndex


def test_deferral_nests_and_restores_the_thresholds():
    before = gc.get_threshold()
    with heap.full_collections_deferred():
        inside = gc.get_threshold()
        with heap.full_collections_deferred():
            assert gc.get_threshold() == inside
        assert gc.get_threshold() == inside  # the outer writer still defers
    assert inside[:2] == before[:2] and inside[2] > 10**6  # young generations as before
    assert gc.get_threshold() == before


def test_young_garbage_cycles_are_still_collected_while_deferred():
    class Node:
        pass

    assert gc.isenabled()
    with heap.full_collections_deferred():
        gc.collect()
        before = len(gc.get_objects())
        for _ in range(20000):  # 40,000 objects in cycles, freed only by the collector
            a, b = Node(), Node()
            a.other, b.other = b, a
        del a, b
        assert len(gc.get_objects()) < before + 5000  # the automatic young collections freed them


def test_an_insert_runs_with_full_collections_deferred(tmp_path, monkeypatch):
    seen = []
    index = VectorIndex(path=tmp_path / "idx")
    real = index._prepare

    async def prepare(batch, stats):
        seen.append(gc.get_threshold()[2])
        return await real(batch, stats)

    monkeypatch.setattr(index, "_prepare", prepare)
    index.insert([{"id": "a", "text": "Alpha beta gamma."}])
    assert seen and seen[0] > 10**6 and gc.get_threshold()[2] < 10**6
    index.close()
