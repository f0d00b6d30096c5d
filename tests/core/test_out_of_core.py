"""The chunk collection of an index directory kept out of core (product-quantizer codes in memory, exact
vectors read from the records): above a size or when the memory budget says so, with exact
scores, exact filtered searches, snapshots and rebuilds; an index in memory stays exact."""

from __future__ import annotations

import pytest

from rhizome.core import HashingEmbedder, VectorIndex, memory
from rhizome.core.store import codes, outofcore
from rhizome.core.store.vectors import VectorStore, candidates, stable_int_id

DOCS = [
    {"id": f"d{i}", "text": f"Harbour {i} of {['Tarn', 'Holt', 'Mira', 'Osk'][i % 4]} has a {['ferry', 'mill', 'school'][i % 3]} "
                            f"and {i % 7} lighthouses near {['Bay', 'Cross', 'Hill', 'Ford', 'Wick'][i % 5]}.",
     "metadata": {"year": 2000 + i % 20}}
    for i in range(700)
]
QUERIES = [d["text"] for d in DOCS[::37]]


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(outofcore, "OUT_OF_CORE_FROM", 300)


def ids(retrieval) -> list[str]:
    return [h.id for h in retrieval]


def test_a_large_chunk_collection_goes_out_of_core_with_exact_scores(tmp_path, small):
    exact = VectorIndex(HashingEmbedder())  # in memory: never out of core
    exact.insert(DOCS)
    assert type(exact.store.collection("chunks")) is VectorStore
    index = VectorIndex(HashingEmbedder(), path=tmp_path / "idx", batch_size=128)
    index.insert(DOCS)
    held = index.store.collection("chunks")
    assert isinstance(held, outofcore.OutOfCoreStore) and len(held) == len(DOCS)
    found = wanted = 0
    for query in QUERIES:
        truth = {h.id: h.score for h in exact.as_retriever(k=10).retrieve(query)}
        hits = index.as_retriever(k=10).retrieve(query)
        assert hits[0].id == next(iter(truth))  # the document itself
        for hit in hits:  # the approximation only chooses candidates: a score is the exact cosine
            if hit.id in truth:
                assert hit.score == pytest.approx(truth[hit.id], abs=1e-5)
        found += len(truth.keys() & set(ids(hits)))
        wanted += len(truth)
    assert found / wanted >= 0.9
    # a filtered search reads the matching vectors and is exact
    where = {"year": {"$gt": 2016}}
    for query in QUERIES[:5]:
        assert ids(index.as_retriever(k=5, filter=where).retrieve(query)) == ids(exact.as_retriever(k=5, filter=where).retrieve(query))
    index.delete(["d0", "d1"])
    assert len(index.store.collection("chunks")) == len(DOCS) - 2
    assert "d0" not in {h.metadata["document_id"] for h in index.as_retriever(k=20).retrieve(DOCS[0]["text"])}
    index.close()


def test_its_snapshot_is_read_back_without_a_rebuild_and_repair_rebuilds_it(tmp_path, small, monkeypatch):
    index = VectorIndex(HashingEmbedder(), path=tmp_path / "idx")
    index.insert(DOCS)
    before = ids(index.as_retriever(k=10).retrieve(QUERIES[3]))
    index.close()

    def no_build(*args, **kwargs):
        raise AssertionError("rebuilt instead of read")

    with monkeypatch.context() as patch:
        patch.setattr(outofcore.OutOfCoreStore, "build", no_build)
        reader = VectorIndex(path=tmp_path / "idx", readonly=True)
        assert isinstance(reader.store.collection("chunks"), outofcore.OutOfCoreStore)
        assert ids(reader.as_retriever(k=10).retrieve(QUERIES[3])) == before
        reader.close()
    from rhizome.tools.integrity import check_index

    found = check_index(tmp_path / "idx")
    assert not found.problems and not found.warnings, (found.problems, found.warnings)
    writer = VectorIndex(path=tmp_path / "idx")
    assert writer.store.rebuild_snapshots() == ["chunks"]
    assert isinstance(writer.store.collection("chunks"), outofcore.OutOfCoreStore)
    assert ids(writer.as_retriever(k=10).retrieve(QUERIES[3]))[0] == before[0]
    writer.close()
    from rhizome.tools.integrity import repair_index

    repair_index(tmp_path / "idx")  # opens the bare store, which names no collection out of core: the records say it was
    reader = VectorIndex(path=tmp_path / "idx", readonly=True)
    assert isinstance(reader.store.collection("chunks"), outofcore.OutOfCoreStore)
    reader.close()


def test_the_memory_budget_sends_the_chunk_collection_out_of_core_instead_of_failing(tmp_path, monkeypatch):
    state = {"bytes": 0}
    monkeypatch.setattr(memory, "resident_bytes", lambda: state["bytes"])
    index = VectorIndex(HashingEmbedder(), path=tmp_path / "idx", memory_gb=0.002)  # 2.1 MB: 700 exact vectors (x3 to build) do not fit
    index.insert(DOCS[:200])
    assert type(index.store.collection("chunks")) is VectorStore
    index.insert(DOCS[200:])
    assert isinstance(index.store.collection("chunks"), outofcore.OutOfCoreStore)
    assert ids(index.as_retriever(k=1).retrieve(DOCS[650]["text"])) == ["d650:0"]
    index.close()


def test_the_codes_are_sized_by_the_dimension_and_the_training_sample():
    assert codes.plan(384, 65_536) == (48, 8)
    assert codes.plan(768, 65_536) == (96, 8)
    assert codes.plan(384, 300) == (48, 2)  # a small sample trains fewer centroids per sub-vector
    assert candidates(10) == 32 * 10 + 16  # the first ten: 32 candidates each
    assert candidates(200) == 32 * 10 + 8 * 190 + 16  # the evidence modes' 200 passage seeds
    import faiss

    fast = codes.quantizer(384, 65_536)  # a 4-bit code for every 2 floats, scanned with SIMD lookups
    assert isinstance(fast, faiss.IndexPQFastScan) and (fast.M, fast.nbits, fast.code_size) == (192, 4, 96)
    assert isinstance(codes.quantizer(384, 300), faiss.IndexPQ)  # too few points for 16 centroids a sub-vector
    assert isinstance(codes.quantizer(102, 65_536), faiss.IndexPQ)  # 51 codes of 2 floats do not pair up in bytes


def test_an_entity_methods_fact_collection_goes_out_of_core_too(tmp_path, monkeypatch):
    """The relation vectors (about three facts a passage: the largest collection of an entity
    graph) follow the chunk collection out of core, and the walk's ranking barely moves."""
    from rhizome.hipporag import HippoRAGIndex

    monkeypatch.setattr(outofcore, "OUT_OF_CORE_FROM", 20)  # this corpus states 29 facts

    exact = HippoRAGIndex(HashingEmbedder())
    exact.insert(DOCS)
    index = HippoRAGIndex(HashingEmbedder(), path=tmp_path / "idx", batch_size=128)
    index.insert(DOCS)
    facts = index.store.collection(index.entity_graph.relation_collection)
    assert isinstance(facts, outofcore.OutOfCoreStore) and len(facts) == len(exact.store.collection(exact.entity_graph.relation_collection))
    found = wanted = 0
    for query in QUERIES:
        truth = ids(exact.as_retriever(k=5).retrieve(query))
        found += len(set(truth) & set(ids(index.as_retriever(k=5).retrieve(query))))
        wanted += len(truth)
    assert found / wanted >= 0.9
    index.close()


def test_a_vector_added_after_a_removal_is_found():
    """faiss's fast-scan codes are packed 32 vectors a block, and its removal left old codes in
    the last block's freed places, which the next add merged into the new codes: the vector
    added was never found. codes.remove_ids writes that block afresh."""
    import numpy as np

    rng = np.random.default_rng(11)
    held = rng.standard_normal((1000, 64)).astype(np.float32)
    held /= np.linalg.norm(held, axis=1, keepdims=True)
    rows = {f"k{i}": held[i] for i in range(1000)}

    def read(keys):
        found = [k for k in keys if k in rows]
        return found, np.array([rows[k] for k in found], dtype=np.float32).reshape(-1, 64)

    store = outofcore.OutOfCoreStore.build(64, read, held, [(list(rows)[:999], held[:999])])
    store.remove(["k3", "k500"])  # 997 left: the last block part full
    del rows["k3"], rows["k500"]
    store.add(["k999"], held[999:])
    assert store.search(held[999:], 1)[0][0][0] == "k999"
    assert store._index.search(held[999:], 1)[1][0][0] == stable_int_id("k999")  # by its codes alone, not only re-ranked
    store.add(["k7"], held[999:])  # an overwrite: removed and added again
    rows["k7"] = held[999]
    assert {key for key, _ in store.search(held[999:], 2)[0]} == {"k7", "k999"}
    assert all(store.search(held[i : i + 1], 1)[0][0][0] == f"k{i}" for i in range(8, 400, 7))
