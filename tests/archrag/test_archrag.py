"""ArchRAG: the C-HNSW index, one clustering round and its stop conditions, the layers an index
builds, adaptive filtering with a fake model and over the Ollama wire, and answers."""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from rhizome.archrag import ArchRAGConfig, ArchRAGIndex, FilteredParams
from rhizome.archrag.chnsw import CHNSW, LayerSearch, SearchCounter, brute_force, unit_rows
from rhizome.archrag.clustering import MIN_WEIGHT, augment, community_edges, partition, stop_reason
from rhizome.archrag.retrieval import cited_rows, select
from rhizome.core.errors import ConfigurationError
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.types import Document, Hit, Provenance
from rhizome.tools.testing import CORPUS

PEOPLE = ["Mira Holt", "Osric Vane", "Petra Lind", "Hanna Crest", "Tomas Reed", "Ida Quell", "Bram Oster", "Lena Frey",
          "Karl Wend", "Sofia Marr", "Edda Brun", "Nils Aster"]
PLACES = ["Tarn Harbour", "Gull Island", "Salt Guild", "Sea School", "Fish Market", "North Reef", "Old Mill", "Stone Bridge"]


def town(n: int = 24) -> list[Document]:
    """Documents whose people and places recur in overlapping groups: a graph big enough for
    several community layers."""
    docs = []
    for i in range(n):
        a, b, c = PEOPLE[i % 12], PEOPLE[(i + 1) % 12], PEOPLE[(i + 5) % 12]
        p, q = PLACES[i % 8], PLACES[(i + 3) % 8]
        text = (f"{a} met {b} at {p} in {1900 + i}. {b} later wrote to {c} about {q}. "
                f"{c} and {a} both worked at {p}.")
        docs.append(Document(id=f"d{i:02d}", text=text))
    return docs


def random_layers(sizes: tuple[int, ...], dim: int, seed: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [unit_rows(rng.standard_normal((n, dim))) for n in sizes]


# -- C-HNSW -------------------------------------------------------------------------------------
def test_chnsw_search_recall_at_5_against_brute_force_with_defaults():
    layers = random_layers((1200, 300, 75, 20), 24)
    index = CHNSW(layers)
    queries = unit_rows(np.random.default_rng(3).standard_normal((40, 24)))
    recalls = []
    for q in queries:
        got, exact = index.search(q, 5), brute_force(index.vectors, q, 5)
        assert sorted(got) == sorted(exact) == [0, 1, 2, 3]
        for layer, rows in exact.items():
            recalls.append(len({r for r, _ in got[layer]} & {r for r, _ in rows}) / 5)
            assert [s for _, s in got[layer]] == sorted((s for _, s in got[layer]), reverse=True)
    assert np.mean(recalls) >= 0.95


def test_inter_layer_links_point_to_the_nearest_node_below():
    layers = random_layers((400, 100, 25), 16)
    for exact_links in (10**9, 0):  # by an exact product, and by the beam search
        index = CHNSW(layers, exact_links=exact_links)
        assert (index.links[0] == -1).all()
        for layer in (1, 2):
            nearest = np.argmax(index.vectors[layer] @ index.vectors[layer - 1].T, axis=1)
            share = (index.links[layer] == nearest).mean()
            assert share == 1.0 if exact_links else share >= 0.98


def test_chnsw_degrees_and_layers_searched():
    layers = random_layers((300, 60), 8)
    index = CHNSW(layers, m=4, m0=8, ef_construction=20)
    assert index.degrees(0).max() <= 8 and index.degrees(1).max() <= 4
    assert index.degrees(0).min() >= 1 and index.degrees(1).min() >= 1
    neighbours = index.neighbours(0)
    assert neighbours.shape == (300, 8) and ((neighbours >= -1) & (neighbours < 300)).all()
    assert not (neighbours == np.arange(300)[:, None]).any()  # no self-loops
    q = layers[0][5]
    only = index.search(q, 3, layers=[0])
    assert list(only) == [0] and only[0][0][0] == 5  # a stored vector finds itself
    counted = SearchCounter()
    index.search(q, 3, counter=counted)
    assert 0 < counted.distances < 360  # fewer than comparing with every node


def test_chnsw_read_back_from_its_arrays_searches_exactly_as_built():
    built = CHNSW(random_layers((500, 80, 12), 16), m=6, m0=12, ef_search=30, seed=5)
    arrays = built.to_arrays()
    assert all(isinstance(a, np.ndarray) and a.dtype != object for a in arrays.values())  # no pickle needed
    read = CHNSW.from_arrays(arrays)
    assert (read.top, read.m, read.m0, read.ef_search) == (2, 6, 12, 30)
    for layer in range(3):
        assert np.array_equal(read.vectors[layer], built.vectors[layer])
        assert np.array_equal(read.links[layer], built.links[layer])
        assert np.array_equal(read.neighbours(layer), built.neighbours(layer))
    queries = unit_rows(np.random.default_rng(9).standard_normal((20, 16)))
    for got, want in zip(read.search_many(queries, 4).values(), built.search_many(queries, 4).values(), strict=True):
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    empty = LayerSearch.from_arrays(LayerSearch(None, []).to_arrays())
    assert empty.chnsw is None and empty.ids == []


def test_an_index_directory_keeps_its_chnsw_for_the_processes_that_open_it(tmp_path, monkeypatch):
    where = tmp_path / "idx"
    writer = ArchRAGIndex(HashingEmbedder(), path=where, chunk_size=200, chunk_overlap=20, max_cluster_size=4, min_communities=2)
    writer.insert(town())
    want = writer.as_retriever(k=8, mode="hierarchical").retrieve("Mira Holt at Tarn Harbour")
    _, ids = writer.chnsw()
    writer.close()
    assert (where / "graphs" / "chnsw.npz").exists()  # written when the insert built it
    monkeypatch.setattr(ArchRAGIndex, "_build_chnsw", lambda self: pytest.fail("built again instead of read"))
    reader = ArchRAGIndex.load(where, readonly=True, embedder=HashingEmbedder())
    assert reader.chnsw()[1] == ids
    assert reader.as_retriever(k=8, mode="hierarchical").retrieve("Mira Holt at Tarn Harbour") == want
    reader.close()


def test_chnsw_rejects_bad_input():
    with pytest.raises(ConfigurationError):
        CHNSW(random_layers((10,), 4), m=0)
    with pytest.raises(Exception, match="dimension"):
        CHNSW([np.ones((3, 4)), np.ones((2, 5))])
    assert CHNSW([np.zeros((0, 4))]).search(np.ones(4), 3) == {}


# -- one clustering round ---------------------------------------------------------------------
def test_augment_weights_edges_by_cosine_and_adds_knn_edges_above_the_percentile():
    rng = np.random.default_rng(0)
    ids = [f"n{i}" for i in range(30)]
    vectors = unit_rows(rng.standard_normal((30, 6)))
    edges = {("n0", "n1"): 1.0, ("n1", "n2"): 1.0, ("n3", "n4"): 1.0, ("n5", "n6"): 1.0}

    def weighted(graph):  # {(u, v): weight} of the layer's arrays, u < v
        e = graph.edges
        return {(graph.nodes[s], graph.nodes[d]): float(w) for s, d, w in zip(e.src, e.dst, e.weight, strict=True)}

    def similarity(graph):  # the weights of the edges augment added
        return [w for pair, w in weighted(graph).items() if pair not in edges]

    graph = augment(ids, vectors, edges, percentile=0.5)
    assert graph.nodes == tuple(sorted(ids))
    held = weighted(graph)
    for a, b in edges:
        expected = max(float(vectors[int(a[1:])] @ vectors[int(b[1:])]), MIN_WEIGHT)
        assert held[(a, b)] == pytest.approx(expected, abs=1e-5)
    original = [max(float(vectors[int(a[1:])] @ vectors[int(b[1:])]), MIN_WEIGHT) for a, b in edges]
    threshold = float(np.quantile(original, 0.5))
    added = similarity(graph)
    assert added, "some similarity edges"
    assert all(w > threshold for w in added)
    top = augment(ids, vectors, edges, percentile=1.0)  # only pairs more similar than every relation
    assert all(w > max(original) for w in similarity(top))
    # K similarity edges per node: an edge is added only while one of its ends has room, so with
    # K = 1 every edge uses up a different node's single slot
    one = similarity(augment(ids, vectors, edges, percentile=0.0, k=1))
    three = similarity(augment(ids, vectors, edges, percentile=0.0, k=3))
    assert len(one) <= len(ids) < len(three)


@pytest.mark.parametrize("method", ["leiden", "spectral"])
def test_each_round_partitions_its_nodes(method):
    graph = nx.connected_caveman_graph(6, 8)
    graph = nx.relabel_nodes(graph, {n: f"v{n:02d}" for n in graph.nodes})
    graph.add_node("lonely")
    nx.set_edge_attributes(graph, 1.0, "weight")
    groups = partition(graph, method=method, max_cluster_size=10, seed=1)
    members = [m for g in groups for m in g]
    assert sorted(members) == sorted(graph.nodes) and len(members) == len(set(members))
    assert all(len(g) <= 10 for g in groups if "lonely" not in g)
    assert 5 <= len(groups) <= 12  # roughly the six caves (and the lonely node)
    with pytest.raises(ConfigurationError):
        partition(graph, method="kmeans")


def test_community_edges_count_crossing_relations():
    groups = [["a", "b"], ["c"], ["d"]]
    edges = {("a", "b"): 1.0, ("a", "c"): 1.0, ("b", "c"): 1.0, ("c", "d"): 1.0}
    assert community_edges(groups, ["X", "Y", "Z"], edges) == {("X", "Y"): 2.0, ("Y", "Z"): 1.0}


def test_stop_conditions():
    rules = {"max_layers": 3, "min_communities": 10, "min_shrink": 0.9}
    assert stop_reason(1, 500, 100, **rules) is None
    assert stop_reason(1, 100, 95, **rules) == "no-shrink"  # the round is dropped
    assert stop_reason(2, 100, 8, **rules) == "few-communities"
    assert stop_reason(3, 500, 100, **rules) == "max-layers"


# -- the layers of an index --------------------------------------------------------------------
def build(**options):
    settings = {"chunk_size": 200, "chunk_overlap": 20, "max_cluster_size": 4, "min_communities": 2, **options}
    llm, documents = settings.pop("llm", None), settings.pop("documents", None)
    index = ArchRAGIndex(HashingEmbedder(), llm=llm, **settings)
    report = index.insert(documents or town())
    return index, report


@pytest.mark.parametrize("clustering", ["leiden", "spectral"])
def test_layers_partition_their_nodes_and_link_parents(clustering):
    index, report = build(clustering=clustering)
    groups = index.communities.all()
    levels = sorted({g.level for g in groups.values()})
    assert levels == list(range(1, len(levels) + 1)) and len(levels) >= 2, report.stats
    entities = set(index.entity_table.keys())
    first = [g for g in groups.values() if g.level == 1]
    assert sorted(e for g in first for e in g.entity_ids) == sorted(entities)
    for level in levels[1:]:
        here = [g for g in groups.values() if g.level == level]
        below = {g.id for g in groups.values() if g.level == level - 1}
        children = [c for g in here for c in g.children]
        assert sorted(children) == sorted(below)  # each layer's communities partition the layer below
        for g in here:
            assert sorted(g.entity_ids) == sorted({e for c in g.children for e in groups[c].entity_ids})
            assert all(groups[c].parent == g.id for c in g.children)
        counts = [len([g for g in groups.values() if g.level == x]) for x in (level - 1, level)]
        assert counts[1] < 0.9 * counts[0]
    assert all(g.title and g.summary and g.metadata["summary_by"] == "offline" for g in groups.values())
    hnsw, ids = index.chnsw()
    assert [len(x) for x in ids] == [len(entities)] + [len([g for g in groups.values() if g.level == x]) for x in levels]


def test_clustering_stops_on_the_stated_conditions():
    index, report = build(max_layers=1)
    assert report.stats["layers"] == 1 and report.stats["stopped"] == "max-layers"
    index, report = build(min_communities=1000)
    assert report.stats["layers"] == 1 and report.stats["stopped"] == "few-communities"
    index, report = build(min_shrink=0.01)
    assert report.stats["layers"] == 0 and report.stats["stopped"] == "no-shrink"
    assert not index.communities.all()
    hits = index.as_retriever(k=3, mode="hierarchical").retrieve("Who met Mira Holt?")
    assert len(hits) == 3 and all(h.provenance.chunk_ids for h in hits)  # entities only, still k hits


def test_offline_search_returns_k_hits_with_provenance_from_every_layer():
    index, _ = build()
    raw = index.as_retriever(k=30, mode="hierarchical").search("Mira Holt at Tarn Harbour")
    assert {h.metadata.get("layer") for h in raw.hits} >= {0, 1, 2}
    assert {h.kind for h in raw.hits} >= {"entity", "relation", "community"}
    assert raw.stats["layers"][0] >= 5 and raw.stats["model_calls"] == 0
    filtered = index.as_retriever(k=8).search("Mira Holt at Tarn Harbour")
    assert len(filtered.hits) == 8 and all(h.kind == "point" and h.provenance.chunk_ids for h in filtered.hits)
    assert filtered.stats["filter_calls"] == 0
    only = index.as_retriever(k=30, mode="hierarchical", layers=[1], k_per_layer=2).search("Mira Holt")
    assert {h.metadata.get("layer") for h in only.hits if h.metadata.get("via") != "fill"} == {1}
    with pytest.raises(ConfigurationError):
        index.as_retriever(mode="hierarchical", layers="0")


def test_passages_mode_walks_from_the_search_to_a_second_hop_passage():
    hop = [Document(id="hop1", text="Ada Wren founded the Copper Lantern Society in Tarn Harbour."),
           Document(id="hop2", text="The Copper Lantern Society keeps its archive in Vell Castle.")]
    index, _ = build(documents=town() + hop)
    query = "What did Ada Wren start?"  # hop2 shares no word with it, only an entity with hop1
    dense = [h.metadata["document_id"] for h in index.as_retriever(k=30, mode="naive").retrieve(query)]
    found = index.as_retriever(k=10, mode="passages").search(query)
    walked = [h.metadata["document_id"] for h in found.hits]
    assert len(walked) == 10 and all(h.kind == "chunk" and len(h.provenance.chunk_ids) == 1 for h in found.hits)
    assert walked[0] == dense[0] == "hop1"  # the passage the question names stays first
    # the second hop rises to the first two through the entity it shares with the first
    assert walked.index("hop2") < 2 and dense.index("hop2") >= 10
    assert found.stats["seed_entities"] > 0 and found.stats["layers"][0] == 5
    # on request retrieved communities seed their members too; by default only entities and relations do
    more = index.as_retriever(k=10, mode="passages", community_seeds=True).search(query)
    assert 0 < found.stats["seed_entities"] < more.stats["seed_entities"]


def test_each_node_cites_its_chunks_nearest_the_query_first():
    index, _ = build()
    query = "Petra Lind wrote to Bram Oster about the Fish Market"
    vector = index.embedder.embed_query([query])[0]
    chunks = index.store.collection(index.CHUNK_COLLECTION, len(vector))
    graph = index.graph()
    ranked = index.as_retriever(k=30, mode="hierarchical").search(query).hits
    unranked = index.as_retriever(k=30, mode="hierarchical", rank_provenance=False).search(query).hits
    assert [h.id for h in ranked] == [h.id for h in unranked]  # the same nodes, only their citations move
    several = [h for h in ranked if len(h.provenance.chunk_ids) > 1 and h.metadata.get("via") != "fill"]
    assert {h.kind for h in several} >= {"entity", "community"}
    for hit in several:
        cosines = (chunks.vectors(hit.provenance.chunk_ids) @ vector).tolist()
        assert cosines == sorted(cosines, reverse=True), hit.id
    moved = 0
    for hit, plain in zip(ranked, unranked):
        if hit.kind == "entity":
            sources = graph.entities[hit.id].source_chunk_ids
            assert plain.provenance.chunk_ids == sources[: len(plain.provenance.chunk_ids)]
            assert set(hit.provenance.chunk_ids) <= set(sources)
        moved += hit.provenance.chunk_ids != plain.provenance.chunk_ids
    assert moved  # the query reorders some node's citations



def test_a_large_node_takes_its_nearest_chunks_from_the_index_wide_pool(monkeypatch):
    """A node citing more than EXACT_CHUNKS chunks takes them from the query's nearest chunks of
    the whole index: the same first ``keep`` as scoring every chunk, or every chunk scored when
    too few of its chunks are in the pool; a small node has all its chunks scored, by a search of
    them or, when the pool is every chunk, by the pool's scores."""
    from rhizome.archrag import retrieval

    index, _ = build(documents=town(60))
    query = "Petra Lind wrote to Bram Oster about the Fish Market"
    vector = index.embedder.embed_query([query])
    search = index.as_retriever(k=30, mode="hierarchical")
    graph = index.graph()
    sources = {(1, "community", c.id): graph.community_chunks(c) for c in graph.communities.values()}
    sources.update({(0, "entity", e.id): e.source_chunk_ids for e in graph.entities.values()})
    exact = search._nearest_first(sources, vector, keep=4)
    monkeypatch.setattr(retrieval, "EXACT_CHUNKS", 3)
    for pool in (8, 30, 1000):  # too small for some nodes, enough for most, the whole index
        monkeypatch.setattr(retrieval, "NEAREST_POOL", pool)
        pooled = search._nearest_first(sources, vector, keep=4)
        assert list(pooled) == list(sources)
        for row, cids in sources.items():
            assert pooled[row][:4] == exact[row][:4] and sorted(pooled[row]) == sorted(cids), (pool, row)
            if len(cids) <= 3:  # a small node is scored whole: from the pool when it is the whole index
                assert pooled[row] == exact[row], (pool, row)


# -- adaptive filtering --------------------------------------------------------------------------
def _row(key: str, text: str, chunk: str) -> Hit:
    return Hit(id=key, text=text, score=0.5, kind="entity", provenance=Provenance(document_ids=[chunk.split(":")[0]], chunk_ids=[chunk]))


def test_points_name_their_rows_and_select_drops_zeros_sorts_and_cuts():
    batch = [_row("a", "alpha", "d1:0"), _row("b", "beta", "d2:0"), _row("c", "gamma", "d3:0")]
    assert [h.id for h in cited_rows(["2", "row 3", "[2]"], batch)] == ["b", "c"]
    assert [h.id for h in cited_rows(["7", "none"], batch)] == ["a", "b", "c"]  # nothing valid: the batch

    def point(text: str, score: float) -> Hit:
        return Hit(id=text, text=text, score=score / 100, kind="point", metadata={"importance": score})

    points = [point("zero " * 5, 0), point("low " * 30, 20), point("high " * 30, 90), point("mid " * 30, 50)]
    assert [p.id.split()[0] for p in select(points, 10_000)] == ["high", "mid", "low"]
    assert [p.id.split()[0] for p in select(points, 90)] == ["high", "mid"]  # the budget cuts
    assert [p.id.split()[0] for p in select(points, 5)] == ["high"]  # at least one


def filtering_model() -> FakeChatModel:
    """Reports from the schema fake; filter calls answered with a score-0 point, a point citing
    row 2 and a point citing nothing."""
    fallback = SchemaResponder()

    def respond(messages, schema):
        if schema and "points" in schema.get("properties", {}):
            layer = "community" if "community reports" in messages[-1]["content"] else "entity"
            return {"points": [
                {"description": f"I don't know ({layer}).", "score": 0, "sources": []},
                {"description": f"Row two matters most ({layer}).", "score": 95 if layer == "entity" else 60, "sources": ["2"]},
                {"description": f"Everything here is loosely related ({layer}).", "score": 30, "sources": []},
            ]}
        return fallback(messages, schema)

    return FakeChatModel(respond, name="fake:filter")


def test_filtering_with_a_fake_model_drops_zeros_sorts_and_cites_rows():
    model = filtering_model()
    index, _ = build(llm=model, documents=CORPUS, min_communities=1)
    retriever = index.as_retriever(k=20)
    result = retriever.search("Who keeps the lighthouse on Gull Island?")
    own = [h for h in result.hits if h.metadata.get("via") != "fill"]
    assert result.stats["filter_calls"] >= 2 and result.stats["filter_calls"] == result.stats["batches"]
    assert own and all("I don't know" not in h.text for h in own)  # every batch gave one score-0 point
    importances = [h.metadata["importance"] for h in own]
    assert importances == sorted(importances, reverse=True) and importances[0] == 95
    layer_rows = index.as_retriever(k=50, mode="hierarchical").search("Who keeps the lighthouse on Gull Island?")
    row_two = [h for h in own if h.text.startswith("Row two") and "entity" in h.text][0]
    assert len(row_two.metadata["sources"]) == 1  # the row it named, not the batch
    broad = [h for h in own if h.text.startswith("Everything") and "entity" in h.text][0]
    assert len(broad.metadata["sources"]) > 1
    assert set(broad.metadata["sources"]) <= {h.id for h in layer_rows.hits}
    tight = index.as_retriever(k=20, context_max_tokens=30).search("Who keeps the lighthouse on Gull Island?")
    assert tight.stats["over_budget"] > 0 and tight.stats["points"] < result.stats["points"]


def test_answer_merges_the_points_most_important_first():
    model = filtering_model()
    index, _ = build(llm=model, documents=CORPUS, min_communities=1)
    answer = index.answer("Who keeps the lighthouse on Gull Island?")
    prompt = model.requests[-1][-1]["content"]
    assert "analysts" in model.requests[-1][0]["content"]
    assert prompt.index("Importance score: 95") < prompt.index("Importance score: 60") < prompt.index("Importance score: 30")
    assert "I don't know" not in prompt and answer.text


def test_filter_prompt_goes_over_the_ollama_wire(monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ollama_stub import OllamaStub

    from rhizome.core.models.ollama import OllamaChatModel

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    def reply(body: dict) -> dict:
        props = set((body.get("format") or {}).get("properties", {}))
        if "points" in props:
            return {"points": [{"description": "Osric Vane keeps the lighthouse.", "score": 88, "sources": ["1"]},
                               {"description": "Not relevant.", "score": 0, "sources": []}]}
        if "findings" in props:
            return {"title": "Gull Island keepers", "summary": "Who keeps what on Gull Island.", "rating": 4,
                    "rating_explanation": "local", "findings": [{"summary": "Lighthouse", "explanation": "Osric Vane keeps it."}]}
        return SchemaResponder()(body["messages"], body.get("format"))

    with OllamaStub(models=["qwen2.5:7b"]) as stub:
        stub.reply_fn = reply
        llm = OllamaChatModel("qwen2.5:7b", host=stub.url, retry_backoff=0.0)
        index = ArchRAGIndex(HashingEmbedder(), llm=llm, cache=False, chunk_size=200, chunk_overlap=20, min_communities=1)
        index.insert(CORPUS[:3])
        assert index.communities.all() and all(g.title == "Gull Island keepers" for g in index.communities.all().values())
        before = len(stub.calls("/api/chat"))
        hits = index.as_retriever(k=1).retrieve("Who keeps the lighthouse on Gull Island?")
        calls = stub.calls("/api/chat")[before:]
        assert calls and all(sorted(c["format"]["properties"]) == ["points"] for c in calls)
        assert all("Who keeps the lighthouse on Gull Island?" in c["messages"][-1]["content"] for c in calls)
        assert hits[0].kind == "point" and hits[0].text == "Osric Vane keeps the lighthouse." and hits[0].raw_score == pytest.approx(0.88)
        assert hits[0].provenance.chunk_ids
        index.close()


def test_bad_settings_are_typed_errors():
    with pytest.raises(ConfigurationError):
        ArchRAGIndex(HashingEmbedder(), clustering="kmeans")
    with pytest.raises(ConfigurationError):
        ArchRAGIndex(HashingEmbedder(), m=64, m0=32)
    index, _ = build(documents=CORPUS[:2])
    with pytest.raises(ConfigurationError):
        index.as_retriever(k_per_layer=0)
    held = [0, *index.communities.levels()]
    for mode in ("archrag", "hierarchical", "passages"):  # a layer the index lacks returned only the nearest passages, silently
        with pytest.raises(ConfigurationError, match=rf"layers \[99\] do not exist in this index; its layers are {', '.join(map(str, held))}"):
            index.as_retriever(mode=mode, layers=[0, 99])
    assert index.as_retriever(mode="hierarchical", layers=held).params.layers == tuple(held)
    with pytest.raises(ConfigurationError, match="rank_provenance must be True or False"):
        index.as_retriever(mode="hierarchical", rank_provenance="no")
    with pytest.raises(ConfigurationError, match="community_seeds must be True or False"):
        index.as_retriever(mode="passages", community_seeds="no")
    with pytest.raises(ConfigurationError, match="the passages mode: dense_k must be a positive integer, got True"):
        index.as_retriever(mode="passages", dense_k=True)
    with pytest.raises(ConfigurationError, match="the hierarchical mode has no setting 'filter_max_tokens'"):
        index.as_retriever(mode="hierarchical", filter_max_tokens=500)
    # a setting not given is the index's own; the models' defaults are the config's defaults
    config = index.config
    assert index.as_retriever().params.model_dump(include={"k_per_layer", "ef_search", "filter_max_tokens"}) == {
        "k_per_layer": config.k_per_layer, "ef_search": config.ef_search, "filter_max_tokens": config.filter_max_tokens}
    narrow, _ = build(documents=CORPUS[:2], k_per_layer=2)
    assert narrow.as_retriever(mode="passages").params.k_per_layer == 2 and narrow.as_retriever(k_per_layer=None).params.k_per_layer == 2
    assert narrow.as_retriever(mode="hierarchical", k_per_layer=3).params.k_per_layer == 3
    defaults = ArchRAGConfig()
    assert FilteredParams().model_dump(exclude={"layers"}) == {name: getattr(defaults, name) for name in FilteredParams.model_fields if name != "layers"}
    narrow.close()


def test_filtered_search_runs_as_a_langgraph_map_reduce_graph():
    from langgraph_rhizome import create_global_search_graph

    index, _ = build(llm=filtering_model(), documents=CORPUS, min_communities=1)
    app = create_global_search_graph(index, k=6)  # finds the archrag mode by its plan, map and reduce
    question = "Who keeps the lighthouse on Gull Island?"
    state = app.invoke({"question": question})
    expected = index.as_retriever(k=6).retrieve(question)  # the points, topped up with the nearest passages
    got = [Hit.model_validate(d) for d in state["documents"]]
    assert any(h.kind == "point" for h in expected)
    assert [(h.id, h.text, h.provenance) for h in got] == [(h.id, h.text, h.provenance) for h in expected]
    importance = [h.metadata["importance"] for h in got if h.kind == "point"]
    assert importance == sorted(importance, reverse=True)
    assert len(state["plan"]["batches"]) >= 2


def test_the_report_writer_keeps_the_identity_stored_reports_were_digested_with():
    from rhizome.archrag.index import ReportWriter

    assert ReportWriter(None, max_tokens=1500, language="English").identity == ["offline", "", "English", 1500]


def test_an_insert_updates_the_layers_around_what_it_touched_and_a_delete_partitions_whole():
    index, _ = build(documents=town(48), max_cluster_size=6)
    before = index.communities.all()
    report = index.insert(Document(id="extra", text="Mira Holt met Osric Vane again at Tarn Harbour in 1950."))
    assert report.stats["layer_1"] == "local", report.stats
    after = index.communities.all()
    touched = {"mira holt", "osric vane", "tarn harbour", "1950"}
    untouched = {gid for gid, g in before.items() if g.level == 1 and not touched & set(g.entity_ids)}
    assert untouched and all(gid in after and after[gid].summary == before[gid].summary for gid in untouched)
    assert 0 < report.stats["reports_written"] < len(after) / 2
    layer_one = [g for g in after.values() if g.level == 1]  # still a partition of the entities
    assert sorted(e for g in layer_one for e in g.entity_ids) == sorted(index.entity_table.keys())
    biggest = max(len(g.entity_ids) for g in before.values() if g.level == 1)  # Leiden may leave one unsplit
    assert max(len(g.entity_ids) for g in layer_one) <= max(6, biggest)
    assert not index.touched.keys()
    assert index.delete("extra").stats["layer_1"] == "full"
