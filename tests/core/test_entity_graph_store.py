"""The kernel's entity-graph layer on its own: fold rules, what a change reports, exact removal,
a method's own relation key, and summaries deferred to the end of an insert call.

Every test runs with each layout of the profiles' lists (``every_list_layout``), as the LightRAG
tests do."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rhizome.core import HashingEmbedder
from rhizome.core.extraction.schema import relation_id, relation_key
from rhizome.core.graph.mentions import ChunkExtraction, EntityMention, RelationMention
from rhizome.core.graph.profiles import FoldPolicy, triple_key
from rhizome.core.graph.resolution import EntityResolver
from rhizome.core.graph.store import EntityGraphStore, GraphChange
from rhizome.core.graph.summarize import DescriptionSummarizer
from rhizome.core.naive import VectorIndex


@pytest.fixture(autouse=True)
def inline_limit(every_list_layout: int) -> int:
    return every_list_layout


def graph_of(tmp_path: Any, policy: FoldPolicy | None = None, min_fragments: int | None = None) -> EntityGraphStore:
    index = VectorIndex(HashingEmbedder(), path=tmp_path / "idx")
    summarizer = DescriptionSummarizer(None, max_tokens=64, min_fragments=min_fragments)
    return EntityGraphStore(index.store, "t", embed=index.embed, summarizer=summarizer, resolver=EntityResolver(), policy=policy)


def chunk(chunk_id: str, entities: list[tuple[str, str, str]], relations: list[tuple[str, str, str, float]]) -> ChunkExtraction:
    return ChunkExtraction(
        chunk_id=chunk_id,
        entities=[EntityMention(name=n, type=t, description=d) for n, t, d in entities],
        relations=[RelationMention(source=a, target=b, description=d, keywords=["link"], strength=w) for a, b, d, w in relations],
    )


def apply(graph: EntityGraphStore, records: list[ChunkExtraction], removed: list[str] = (), defer: bool = False) -> GraphChange:
    change = asyncio.run(graph.plan(records, list(removed), defer=defer))
    with graph.store.transaction() as db:
        graph.write(db, change)
        graph.forget_chunks(db, list(removed))
    return change


def rows(graph: EntityGraphStore) -> dict[str, list[str]]:
    tables = (graph.entities, graph.relations, graph.lists.citations, graph.lists.fragments, graph.extractions, graph.mentions, graph.pending)
    out = {t.name: sorted(r.model_dump_json() for r in t.all()) for t in tables}
    out["vectors"] = sorted(map(str, graph.store.query("SELECT collection, id, vector FROM vectors")))
    return out


ADA = chunk("c1", [("Ada Lovelace", "PERSON", "wrote the first program"), ("Charles Babbage", "PERSON", "designed the engine")],
            [("Ada Lovelace", "Charles Babbage", "worked with", 2.0)])
BABBAGE = chunk("c2", [("Charles Babbage", "ORGANIZATION", "a mathematician"), ("ada lovelace", "PERSON", "a countess")],
                [("Charles Babbage", "Ada Lovelace", "corresponded with", 3.0)])
LONDON = chunk("c3", [("London", "GEO", "a city"), ("Ada Lovelace", "PERSON", "lived in London")],
               [("Ada Lovelace", "London", "lived in", 1.0)])


def test_mentions_fold_into_profiles_by_the_shared_rules(tmp_path):
    graph = graph_of(tmp_path)
    apply(graph, [ADA.model_copy(deep=True), BABBAGE.model_copy(deep=True)])
    ada = graph.entity("ADA LOVELACE")
    assert ada.name == "Ada Lovelace" and ada.type == "PERSON"  # the first mention's name
    assert ada.source_chunk_ids == ["c1", "c2"] and ada.descriptions == ["wrote the first program", "a countess"]
    babbage = graph.entity("Charles Babbage")
    assert babbage.type == "PERSON"  # one vote each: the type seen first wins the tie
    (relation,) = graph.all_relations()  # both directions are one relation by default
    assert relation.weight == 5.0 and relation.source_chunk_ids == ["c1", "c2"]
    assert relation.descriptions == ["worked with", "corresponded with"]
    assert graph.degrees([ada.id]) == {ada.id: 1}
    assert set(graph.evidence_graph().chunk_ids) == {"c1", "c2"}


def test_a_change_says_what_it_added_changed_and_removed(tmp_path):
    graph = graph_of(tmp_path)
    first = apply(graph, [ADA.model_copy(deep=True)])
    assert sorted(first.added_entities) == ["ada lovelace", "charles babbage"] and len(first.added_relations) == 1
    assert first.changed_entities == [] and first.removed_entities == []
    second = apply(graph, [LONDON.model_copy(deep=True)])
    assert second.added_entities == ["london"] and second.changed_entities == ["ada lovelace"]
    assert second.touched_entities == {"ada lovelace", "london"}
    third = apply(graph, [], removed=["c3"])
    assert third.removed_entities == ["london"] and len(third.removed_relations) == 1
    assert third.changed_entities == ["ada lovelace"] and "london" in third.touched_entities
    assert third.counts()["chunks_removed"] == 1


def test_adding_then_removing_a_chunk_gives_back_every_row(tmp_path):
    graph = graph_of(tmp_path)
    apply(graph, [ADA.model_copy(deep=True), LONDON.model_copy(deep=True)])
    before = rows(graph)
    assert before["vectors"] and before[graph.extractions.name]
    apply(graph, [BABBAGE.model_copy(deep=True)])
    assert rows(graph) != before
    apply(graph, [], removed=["c2"])
    assert rows(graph) == before


def test_a_method_keys_its_relations_its_own_way(tmp_path):
    def directed(a: str, b: str, predicate: str = "") -> tuple[str, str, str]:
        return relation_key(a, b, "", directed=True)

    graph = graph_of(tmp_path, FoldPolicy(relation_key=directed))
    apply(graph, [ADA.model_copy(deep=True), BABBAGE.model_copy(deep=True)])
    ids = sorted(r.id for r in graph.all_relations())
    assert ids == sorted([relation_id(directed("ada lovelace", "charles babbage")), relation_id(directed("charles babbage", "ada lovelace"))])
    apply(graph, [], removed=["c2"])
    assert [r.id for r in graph.all_relations()] == [relation_id(directed("ada lovelace", "charles babbage"))]


def triples(chunk_id: str, facts: list[tuple[str, str, str, str]]) -> ChunkExtraction:
    return ChunkExtraction(
        chunk_id=chunk_id,
        relations=[RelationMention(source=s, predicate=p, target=o, description=text, strength=5.0) for s, p, o, text in facts],
    )


def test_triples_count_their_passages_and_keep_their_first_text(tmp_path):
    policy = FoldPolicy(relation_key=triple_key, weight="passages", descriptions="first", entity_text=None)
    graph = graph_of(tmp_path, policy)
    first = triples("c1", [("Ada", "met", "Babbage", "Ada met Babbage"), ("Ada", "wrote", "Notes", "Ada wrote Notes")])
    second = triples("c2", [("ada", "met", "babbage", "ada met babbage"), ("Babbage", "met", "Ada", "Babbage met Ada")])
    apply(graph, [first])
    before = rows(graph)
    apply(graph, [second])
    met = graph.relations.one(policy.relation_id("ada", "babbage", "met"))
    assert met.predicate == "met" and met.metadata["directed"]  # the predicate as first written
    assert met.weight == 2.0 and met.description == "Ada met Babbage"  # two passages; the first text stands
    assert graph.relations.one(policy.relation_id("babbage", "ada", "met")).weight == 1.0  # the other direction
    assert not graph.store.has_collection(graph.entity_collection)  # no entity vectors, names only
    assert graph.store.has_collection(graph.name_collection)
    apply(graph, [], removed=["c2"])
    assert rows(graph) == before
    apply(graph, [second.model_copy(deep=True)])
    apply(graph, [], removed=["c1"])
    met = graph.relations.one(policy.relation_id("ada", "babbage", "met"))
    assert met.weight == 1.0 and met.description == "ada met babbage"  # as a build of c2 alone


def test_an_insert_call_summarises_a_grown_profile_once_when_it_ends(tmp_path):
    graph = graph_of(tmp_path, min_fragments=3)
    change = apply(graph, [ADA.model_copy(deep=True), BABBAGE.model_copy(deep=True), LONDON.model_copy(deep=True)], defer=True)
    assert change.pending == ["e:ada lovelace"]
    assert [row.id for row in graph.pending.all() if row.summary] == ["e:ada lovelace"]
    # the batch embeds nothing: every changed profile waits for its vector until the call ends
    assert not change.entity_vectors[0] and not change.relation_vectors[0]
    assert {row.id for row in graph.pending.all() if not row.summary} == set(change.unembedded)
    assert len(change.unembedded) == len(change.entities) - 1 + len(change.relations)
    done = asyncio.run(graph.settle())
    assert done["summaries_written"] == 1  # offline: an extractive summary, written as a stage result
    assert done["entity_embeddings"] + done["relation_embeddings"] == len(change.unembedded) + 1  # and Ada's
    assert graph.pending.keys() == []
    # ... then each is embedded once, as a plan without deferral would have embedded it
    settled = rows(graph)
    again = graph_of(tmp_path / "again", min_fragments=3)
    apply(again, [ADA.model_copy(deep=True), BABBAGE.model_copy(deep=True), LONDON.model_copy(deep=True)])
    assert settled["vectors"] == rows(again)["vectors"]
    ada = graph.entity("Ada Lovelace")
    assert ada.metadata["summarised"] == 3 and ada.description == ada.metadata["summary"]


def test_waiting_profiles_are_settled_a_part_at_a_time_to_the_same_rows(tmp_path, monkeypatch):
    """settle() stores what an insert call left waiting a part at a time (SETTLE_PART): the same
    rows as one part, each embedding call no larger than a part, and a call cut short keeps
    the parts stored and leaves the rest waiting."""
    from rhizome.core.graph import store as layer

    docs = [ADA, BABBAGE, LONDON]
    whole = graph_of(tmp_path / "whole", min_fragments=3)
    apply(whole, [d.model_copy(deep=True) for d in docs], defer=True)
    asyncio.run(whole.settle())
    monkeypatch.setattr(layer, "SETTLE_PART", 2)
    parts = graph_of(tmp_path / "parts", min_fragments=3)
    apply(parts, [d.model_copy(deep=True) for d in docs], defer=True)
    waiting = len(parts.pending.keys())
    sizes: list[int] = []
    embed = parts.embed

    async def counted(texts, **options):
        sizes.append(len(texts))
        if len(sizes) == 3:
            raise RuntimeError("cut short")
        return await embed(texts, **options)

    parts.embed = counted
    with pytest.raises(RuntimeError, match="cut short"):
        asyncio.run(parts.settle())
    assert 0 < len(parts.pending.keys()) < waiting  # the first part stored, the rest waiting
    parts.embed = embed
    asyncio.run(parts.settle())
    assert max(sizes) <= 2 and rows(parts) == rows(whole)


def test_the_whole_graph_views_read_what_decoding_every_record_reads(tmp_path):
    """The evidence and fact graphs read a few columns and JSON fields in SQL (``every_source``),
    not decoded records and citation rows: the same lists, in the same order, in both layouts,
    after a removal rebuilt profiles too."""
    from rhizome.core.graph.lists import profile_key

    graph = graph_of(tmp_path)
    apply(graph, [ADA.model_copy(deep=True), BABBAGE.model_copy(deep=True), LONDON.model_copy(deep=True)])
    apply(graph, [chunk("c4", [("London", "GEO", "on the Thames"), ("Ada Lovelace", "PERSON", "born there")],
                        [("Ada Lovelace", "London", "born in", 2.0)])])
    apply(graph, [], removed=["c1"])
    entities, relations = graph.entities.all(), graph.relations.all()
    cited = graph.lists.sources([*entities, *relations])
    assert graph.lists.every_source(graph.entities) == [(e.id, cited[profile_key(e)]) for e in entities]
    facts = [(r.id, cited[profile_key(r)], r.source, r.target) for r in relations]
    assert graph.lists.every_source(graph.relations, "source", "target") == facts
    assert ("ada lovelace", ["c2", "c3", "c4"]) in graph.lists.every_source(graph.entities)
    walk = graph.evidence_graph()
    assert walk.passages_of == {e.id: len(cited[profile_key(e)]) for e in entities}
    assert sorted(zip(*walk.matrix[: len(walk.entity_ids), : len(walk.entity_ids)].nonzero())) == sorted(
        {(walk.entity_ids.index(a), walk.entity_ids.index(b)) for _, _, s, t in facts for a, b in ((s, t), (t, s))})
    assert graph.fact_graph().chunks == {fid: frozenset(chunks) for fid, chunks, _, _ in facts}


def test_the_view_a_search_reads_is_the_graph_of_every_decoded_record(tmp_path):
    """``view`` holds the structure alone (edges, names, cited chunks) and reads a record when
    asked: every lookup, member list, community's chunks and whole record is what the graph of
    every decoded record gives, in both layouts."""
    from rhizome.core.graph.entity_graph import EntityGraph
    from rhizome.core.types import Community

    graph = graph_of(tmp_path)
    apply(graph, [ADA.model_copy(deep=True), BABBAGE.model_copy(deep=True), LONDON.model_copy(deep=True)])
    apply(graph, [chunk("c4", [("London", "GEO", "on the Thames"), ("Ada Lovelace", "PERSON", "born there")],
                        [("Ada Lovelace", "London", "born in", 2.0)])])
    apply(graph, [], removed=["c1"])
    entities, relations = graph.all_entities(), graph.all_relations()
    members = [e.id for e in entities]
    communities = {"c0": Community(id="c0", level=0, entity_ids=members), "c1": Community(id="c1", level=1, entity_ids=members[:2], parent="c0")}
    whole = EntityGraph.build({e.id: e for e in entities}, {r.id: r for r in relations}, communities)
    view = graph.view(communities)
    assert len(view.relations) == len(relations) > 0 and list(view.entities) == list(whole.entities)
    for name in ("degree", "relations_of", "communities_of", "sources", "entities_of_chunk"):
        assert getattr(view, name) == getattr(whole, name), name
    assert whole.degree == {e: len({r.target if r.source == e else r.source for r in relations if e in (r.source, r.target) and r.source != r.target}) for e in members}
    for r in relations:
        edge = view.relations[r.id]
        assert (edge.id, edge.source, edge.target, edge.weight) == (r.id, r.source, r.target, r.weight)
        assert view.combined_degree(edge) == whole.combined_degree(r)
    assert view.whole_relations([r.id for r in reversed(relations)] + ["nothing"]) == {r.id: r for r in reversed(relations)}
    assert view.whole_entities(reversed(members)) == {e.id: e for e in reversed(entities)}
    for c in communities.values():
        assert view.members(c) == whole.members(c) and view.members(c, 1) == whole.members(c)[:1]
        assert view.community_chunks(c) == whole.community_chunks(c)
    assert [view.name(e) for e in [*members, "nothing"]] == [whole.name(e) for e in [*members, "nothing"]]
    assert list(view.entities.values()) == entities and view.entities[members[0]] == entities[0]
    with pytest.raises(KeyError):
        view.entities["nothing"]

