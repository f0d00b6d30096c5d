from __future__ import annotations

import threading

import numpy as np
import pytest

from rhizome.core.errors import ConfigurationError, IndexFormatError
from rhizome.core.store.vectors import VectorStore, ranked, ranked_found, stable_int_id


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_add_search_replace_remove(tmp_path):
    rng = np.random.default_rng(0)
    vectors = unit(rng.standard_normal((50, 8)).astype(np.float32))
    keys = [f"item-{i}" for i in range(50)]
    store = VectorStore(8)
    store.add(keys, vectors)
    assert len(store) == 50
    hits = store.search(vectors[7], 3)[0]
    assert hits[0][0] == "item-7" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    # replacing keeps one copy with the new vector
    store.add(["item-7"], vectors[8:9])
    assert len(store) == 50
    assert np.allclose(store.vectors(["item-7"])[0], vectors[8])
    assert store.remove(["item-7", "unknown"]) == 1
    assert "item-7" not in store and len(store) == 49
    assert all(k != "item-7" for k, _ in store.search(vectors[7], 49)[0])


def test_replacing_in_place_after_removals_and_a_reload_equals_a_store_built_afresh(tmp_path, monkeypatch):
    """Vectors replaced where they lie (no faiss ``remove_ids``) give the store that adding the
    final vectors to an empty one gives, also after removals compacted the index and after a
    save and load, with replaced and new keys in one add."""
    import faiss

    rng = np.random.default_rng(1)
    final = {f"k{i}": unit(rng.standard_normal((1, 6)).astype(np.float32))[0] for i in range(40)}
    store = VectorStore(6)
    store.add(list(final), unit(rng.standard_normal((40, 6)).astype(np.float32)))
    store.remove(["k3", "k17"])
    store.save(tmp_path / "v.npz")
    store, _ = VectorStore.load(tmp_path / "v.npz")
    monkeypatch.setattr(faiss.IndexIDMap2, "remove_ids", lambda *a: pytest.fail("a replacement compacted the index"))
    mixed = ["k0", "k3", "k39", "k17", "k20", "k40"]  # kept, removed before, kept, removed before, kept, new
    final["k40"] = unit(rng.standard_normal((1, 6)).astype(np.float32))[0]
    store.add(mixed, np.vstack([final[k] for k in mixed]))
    store.add([k for k in final if k not in mixed], np.vstack([final[k] for k in final if k not in mixed]))
    fresh = VectorStore(6)
    fresh.add(list(final), np.vstack(list(final.values())))
    assert len(store) == store._index.ntotal == len(fresh) == 41
    assert np.array_equal(store.vectors(list(final)), fresh.vectors(list(final)))
    queries = unit(rng.standard_normal((5, 6)).astype(np.float32))
    assert store.search(queries, 10) == fresh.search(queries, 10)


def test_a_search_waits_while_another_thread_changes_the_store():
    """faiss searches without the GIL; an add that grew faiss's storage under a running search
    crashed the process (and a removal under it raised KeyError). A search that starts while
    an add is under way waits for it, and then sees the new vector."""
    eye = np.eye(4, dtype=np.float32)
    store = VectorStore(4)
    store.add(["a"], eye[:1])
    entered, release = threading.Event(), threading.Event()
    real = store._index

    class SlowAdd:  # the faiss index, with an add that holds on until released
        def __getattr__(self, name):
            return getattr(real, name)

        def add_with_ids(self, *args):
            entered.set()
            release.wait(10)
            return real.add_with_ids(*args)

    store._index = SlowAdd()
    writer = threading.Thread(target=store.add, args=(["b"], eye[1:2]))
    writer.start()
    assert entered.wait(10)
    found: list = []
    reader = threading.Thread(target=lambda: found.append(store.search(eye[1], 2)[0]))
    reader.start()
    reader.join(0.5)
    waited = reader.is_alive() and not found
    release.set()
    writer.join(10)
    reader.join(10)
    assert waited, "the search ran while the add was under way"
    assert [key for key, _ in found[0]] == ["b", "a"]


def test_ids_are_stable_across_processes_and_save_load(tmp_path):
    assert stable_int_id("abc") == stable_int_id("abc") >= 0
    store = VectorStore(4)
    store.add(["a", "b"], unit(np.eye(4, dtype=np.float32)[:2]))
    store.save(tmp_path / "v.npz", meta={"generation": 3})
    loaded, meta = VectorStore.load(tmp_path / "v.npz")
    assert meta == {"generation": 3}
    assert loaded.search(np.eye(4, dtype=np.float32)[1], 1)[0][0][0] == "b"
    loaded.remove(["a"])
    assert loaded.ids() == ["b"]


def test_a_snapshot_lists_its_ids_as_faiss_holds_them_and_a_reload_pairs_them_without_hashing(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    store = VectorStore(8)
    store.add([f"k{i}" for i in range(300)], unit(rng.standard_normal((300, 8)).astype(np.float32)))
    store.add([f"k{i}" for i in range(0, 300, 3)], unit(rng.standard_normal((100, 8)).astype(np.float32)))  # replaced in place
    store.remove([f"k{i}" for i in range(0, 300, 7)])
    store.add(["late", "k7"], unit(rng.standard_normal((2, 8)).astype(np.float32)))  # k7 removed, then back at the end
    store.save(tmp_path / "v.npz")
    import rhizome.core.store.vectors as vectors

    monkeypatch.setattr(vectors, "stable_int_id", lambda key: pytest.fail("a reload hashed an id"))
    loaded, _ = VectorStore.load(tmp_path / "v.npz")
    monkeypatch.undo()
    assert loaded._ids == {stable_int_id(key): key for key in store.ids()}  # every faiss id with its own string id
    queries = unit(rng.standard_normal((5, 8)).astype(np.float32))
    assert loaded.search(queries, 10) == store.search(queries, 10) and loaded.digest() == store.digest()


def test_errors():
    store = VectorStore(4)
    with pytest.raises(ConfigurationError):
        store.add(["a"], np.ones((1, 5), dtype=np.float32))
    with pytest.raises(ConfigurationError):
        store.add(["a", "a"], np.ones((2, 4), dtype=np.float32))
    assert store.search(np.ones(4, dtype=np.float32), 5) == [[]]


def test_damaged_file(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"garbage")
    with pytest.raises(IndexFormatError):
        VectorStore.load(tmp_path / "bad.npz")


def test_snapshot_is_an_npz_either_way(tmp_path):
    """The streamed file is what ``np.savez`` writes (``np.load`` reads it), and a file written
    by ``np.savez`` itself (snapshots saved before the streaming) still loads."""
    import json

    import faiss

    rng = np.random.default_rng(1)
    vectors = unit(rng.standard_normal((300, 16)).astype(np.float32))
    store = VectorStore(16)
    store.add([f"k{i}" for i in range(300)], vectors)
    store.save(tmp_path / "new.npz", meta={"generation": 7})
    with np.load(tmp_path / "new.npz") as data:
        assert json.loads(data["header"].tobytes())["meta"] == {"generation": 7}
        assert faiss.deserialize_index(data["index"]).ntotal == 300
    header = json.dumps({"dimension": 16, "ids": store.ids(), "meta": {"generation": 6}}).encode()
    with open(tmp_path / "old.npz", "wb") as handle:
        np.savez(handle, index=faiss.serialize_index(store._index), header=np.frombuffer(header, dtype=np.uint8))
    for name, generation in (("new.npz", 7), ("old.npz", 6)):
        loaded, meta = VectorStore.load(tmp_path / name)
        assert meta == {"generation": generation} and len(loaded) == 300
        assert loaded.search(vectors[42], 1)[0][0][0] == "k42"
        assert np.allclose(loaded.vectors(["k5"])[0], vectors[5])


def test_a_snapshot_saved_with_a_search_graph_opens_and_is_searched_exactly(tmp_path):
    """The opt-in HNSW search graphs are gone; a snapshot that holds one (a ``graph`` member
    beside the vectors) still opens, its graph unread: every search is the exact scan's, and
    the next save drops the member."""
    import json

    import faiss

    rng = np.random.default_rng(3)
    held = unit(rng.standard_normal((800, 64)).astype(np.float32))
    keys = [f"k{i}" for i in range(800)]
    store = VectorStore(64)
    store.add(keys, held)
    exact = store.search(held[:50], 5)
    graph = faiss.IndexHNSWFlat(64, 32, faiss.METRIC_INNER_PRODUCT)
    graph.add(held)
    header = json.dumps({"dimension": 64, "ids": store.ids(), "meta": {"generation": 3}}).encode()
    with open(tmp_path / "old.npz", "wb") as handle:
        np.savez(handle, header=np.frombuffer(header, dtype=np.uint8), index=faiss.serialize_index(store._index),
                 graph=faiss.serialize_index(graph))
    loaded, meta = VectorStore.load(tmp_path / "old.npz")
    assert meta == {"generation": 3} and len(loaded) == 800
    assert loaded.search(held[:50], 5) == exact
    loaded.save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz") as data:
        assert "graph" not in data.files


def test_a_large_collection_is_searched_through_its_sieve_with_the_exact_scans_results(tmp_path, monkeypatch):
    """From SIEVE_FROM vectors a search scans product-quantizer codes and re-ranks the candidates
    by faiss's own inner product of the stored floats: the same ids and bit-identical scores as
    the exact scan. The sieve follows every add, overwrite and remove, is saved and read back
    with the snapshot, and is trained again when the collection has grown fourfold."""
    from rhizome.core.store import vectors

    monkeypatch.setattr(vectors, "SIEVE_FROM", 3000)
    rng = np.random.default_rng(5)
    held = unit(rng.standard_normal((4000, 32)).astype(np.float32))
    keys = [f"k{i}" for i in range(4000)]
    queries = unit(held[:40] + 0.3 * rng.standard_normal((40, 32)).astype(np.float32))
    store, exact = VectorStore(32), VectorStore(32)
    exact.search_exactly()
    small = VectorStore(32)
    small.add(keys[:2000], held[:2000])
    small.search(queries[:5], 5)
    assert not small.sieve  # below the threshold: exact
    for s in (store, exact):
        s.add(keys, held)
    def asked(s):  # the queries a few at a time, as a retriever asks them
        return [row for i in range(0, len(queries), 8) for row in s.search(queries[i : i + 8], 5)]

    sifted = []
    sift = VectorStore._sift
    monkeypatch.setattr(VectorStore, "_sift", lambda self, *a: sifted.append(1) or sift(self, *a))
    assert asked(store) == asked(exact)  # ids and scores, bit for bit
    assert store.sieve and sifted and not exact.sieve
    sifted.clear()
    assert store.search(queries[:2], 200) == exact.search(queries[:2], 200) and not sifted  # candidates over a quarter: scanned whole
    assert store.search(queries[:20], 5) == exact.search(queries[:20], 5) and not sifted  # a batch: one scan serves every query
    zero = np.zeros((1, 32), dtype=np.float32)  # every code scores alike: the codes rank nothing, so it is scanned whole
    assert store.search(zero, 3) == exact.search(zero, 3)
    assert store.search(queries[:5], 3, among=keys[:50]) == exact.search(queries[:5], 3, among=keys[:50])  # filtered: exact
    changed = unit(rng.standard_normal((3, 32)).astype(np.float32))
    for s in (store, exact):  # an overwrite, a new vector, a removal
        s.add(["k1", "new", "k2"], changed)
        s.remove(["k3", "k4"])
    assert store.search(changed, 1)[0] == [("k1", pytest.approx(1.0))] and store.search(changed[1:2], 1)[0][0][0] == "new"
    assert asked(store) == asked(exact)
    store.save(tmp_path / "v.npz")
    with np.load(tmp_path / "v.npz") as data:
        assert "sieve" in data.files and data["sieve"].nbytes < held.nbytes / 4  # codes: a fraction of the floats
    loaded, _ = VectorStore.load(tmp_path / "v.npz")
    assert loaded.sieve and loaded._sieve_trained == 4000
    assert asked(loaded) == asked(exact)
    more = unit(rng.standard_normal((12100, 32)).astype(np.float32))
    loaded.add([f"m{i}" for i in range(12100)], more)
    assert loaded._sieve_trained == 4000  # codes of the added vectors, from the codes trained before
    loaded.save(tmp_path / "v.npz")
    assert loaded._sieve_trained == 16099  # grown fourfold: trained again on the whole
    loaded.search_exactly()
    assert not loaded.sieve and asked(loaded) == asked(VectorStore.load(tmp_path / "v.npz")[0])


def test_a_cut_or_damaged_snapshot_is_a_format_error(tmp_path):
    store = VectorStore(8)
    store.add([f"k{i}" for i in range(100)], unit(np.ones((100, 8), dtype=np.float32)))
    store.save(tmp_path / "v.npz")
    data = (tmp_path / "v.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(IndexFormatError):
        VectorStore.load(tmp_path / "cut.npz")
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF  # inside the vectors: the member's CRC-32 catches it as faiss reads
    (tmp_path / "flipped.npz").write_bytes(bytes(flipped))
    with pytest.raises(IndexFormatError, match="CRC"):
        VectorStore.load(tmp_path / "flipped.npz")


def test_present_reads_the_held_keys_and_their_vectors_in_one_step():
    store = VectorStore(2)
    store.add(["a", "b"], np.eye(2, dtype=np.float32))
    keys, vectors = store.present(["b", "gone", "a"])
    assert keys == ["b", "a"] and vectors.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert store.present([])[0] == [] and store.present(["gone"])[1].shape == (0, 2)
    with pytest.raises(KeyError, match="gone"):
        store.vectors(["a", "gone"])  # vectors() wants every key
    entered, release = threading.Event(), threading.Event()

    floats = store._floats

    def slow_floats():  # the stored floats, handed over when released
        entered.set()
        release.wait(5)
        return floats()

    store._floats = slow_floats
    result = {}
    reader = threading.Thread(target=lambda: result.update(read=store.present(["a", "b"])))
    reader.start()
    assert entered.wait(5)
    deleter = threading.Thread(target=store.remove, args=(["b"],))
    deleter.start()
    deleter.join(0.2)
    assert deleter.is_alive()  # held off by the read
    release.set()
    reader.join(5)
    deleter.join(5)
    assert result["read"][0] == ["a", "b"] and "b" not in store


def test_a_found_row_is_ranked_as_every_pair_sorted_by_score_to_6_decimals_then_id():
    # ranked_found reads faiss's best-first order and sorts only runs of equal scores; it must
    # give what sorting every pair gives, ties and near ties (across a 6th-decimal rounding
    # boundary) and rows that are not best first included
    rng = np.random.default_rng(3)
    for trial in range(3000):
        n = int(rng.integers(0, 30))
        scores = rng.choice([0.5, 1 / 3, 0.1234565, 0.1234575, 5e-7], size=n) + rng.choice([0, 1e-7, 5e-7, 1e-6, 2e-6], size=n)
        row = np.sort(scores.astype(np.float32))[::-1].copy()
        ids = rng.permutation(500)[:n].astype(np.int64)
        if n and trial % 4 == 0:
            ids[-min(n, 3):] = -1  # fewer found than asked
        if trial % 5 == 0:
            order = rng.permutation(n)
            row, ids = row[order], ids[order]
        names = {int(i): f"k{int(i) % 7}-{int(i)}" for i in ids}
        k = int(rng.integers(1, 35))
        every = ranked([(names[int(i)], float(s)) for s, i in zip(row, ids) if int(i) != -1], k)
        assert ranked_found(row, ids, k, names.__getitem__) == every


def test_present_reads_each_key_s_current_vector_after_overwrites_and_removals():
    # present() copies rows out of the stored floats by position: positions move when a
    # removal compacts them, and an overwrite changes a row where it lies
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((40, 3)).astype(np.float32)
    store = VectorStore(3)
    store.add([f"k{i}" for i in range(40)], vectors)
    store.present(["k0"])  # positions read once, then changed under them
    store.add(["k3", "k39"], vectors[:2] * 2)
    store.remove(["k10", "k0"])
    keys, rows = store.present(["k39", "k3", "k10", "k11", "k3"])
    assert keys == ["k39", "k3", "k11", "k3"]
    assert np.array_equal(rows, np.stack([vectors[1] * 2, vectors[0] * 2, vectors[11], vectors[0] * 2]))
