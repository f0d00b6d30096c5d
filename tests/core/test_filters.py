"""The metadata filter grammar: parsing, typed errors, and the same answer from the database
(SQLite here, PostgreSQL through the session's server) as from :meth:`MetadataFilter.matches`."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rhizome.core import VectorIndex
from rhizome.core.errors import InvalidInputError
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.retrieval.filters import MetadataFilter, as_filter
from rhizome.core.types import Document

METADATA: dict[str, dict[str, Any]] = {
    "a": {"year": 1901, "tags": ["salt", "crane"], "shelf": "south", "date": "2023-04-01"},
    "b": {"year": "1911", "tags": [], "shelf": "north", "title": "Salt Marsh", "date": "2024-01-15"},
    "c": {"year": 1920.0, "flag": True, "shelf": None, "tags": ["crane", 7, True]},
    "d": {"title": "", "flag": False, "year": " 1930 "},
    "e": {"year": "unknown", "tags": "salt", "title": "the salt road", "score": 2.5},
    "f": {"year": 1911, "shelf": "south", "tags": ["Salt"], "nested": {"x": 1}},
}

CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"shelf": "south"}, {"a", "f"}),
    ({"year": {"$gt": 1900}}, {"a", "b", "c", "d", "f"}),
    ({"year": {"$gt": "1905", "$lt": 1925}}, {"b", "c", "f"}),
    ({"year": {"$gte": 1911, "$lte": 1911}}, {"b", "f"}),
    ({"year": {"$between": [1905, 1925]}}, {"b", "c", "f"}),
    ({"year": 1911}, {"b", "f"}),
    ({"year": "1920"}, {"c"}),
    ({"year": {"$in": ["1911", 1920]}}, {"b", "c", "f"}),
    ({"year": {"$nin": [1911, 1901]}}, {"c", "d", "e"}),
    ({"tags": "salt"}, {"a", "e"}),
    ({"tags": {"$contains": "salt"}}, {"a", "e"}),
    ({"tags": {"$contains": 7}}, {"c"}),
    ({"tags": True}, {"c"}),
    ({"tags": {"$icontains": "SALT"}}, {"a", "e", "f"}),
    ({"title": {"$contains": "salt"}}, {"e"}),
    ({"title": {"$icontains": "salt"}}, {"b", "e"}),
    ({"date": {"$gte": "2024-01-01"}}, {"b"}),
    ({"date": {"$lt": "2024-01-01"}}, {"a"}),
    ({"shelf": {"$ne": "north"}}, {"a", "c", "d", "e", "f"}),
    ({"shelf": None}, {"c", "d", "e"}),
    ({"flag": False}, {"d"}),
    ({"tags": {"$exists": True}}, {"a", "c", "e", "f"}),
    ({"title": {"$exists": False}}, {"a", "c", "d", "f"}),
    ({"$or": [{"shelf": "north"}, {"year": {"$gte": 1920}}]}, {"b", "c", "d"}),
    ({"$and": [{"shelf": "south"}, {"year": {"$gt": 1905}}]}, {"f"}),
    ({"$not": {"$or": [{"shelf": "south"}, {"tags": "crane"}]}}, {"b", "d", "e"}),
    ({"shelf": "south", "$not": {"year": 1901}}, {"f"}),
    ({"score": {"$lt": 3}}, {"e"}),
    ({"nested": {"$exists": True}}, {"f"}),
]


@pytest.mark.parametrize(("spec", "expected"), CASES, ids=[str(s) for s, _ in CASES])
def test_the_grammar_in_python(spec, expected):
    wanted = as_filter(spec)
    assert {d for d, metadata in METADATA.items() if wanted.matches(metadata)} == expected


def _index(location: Any) -> VectorIndex:
    index = VectorIndex(HashingEmbedder(), path=location)
    index.insert([Document(id=d, text=f"document {d} about the harbour", metadata=m) for d, m in METADATA.items()])
    return index


@pytest.fixture(params=["sqlite", "postgresql"])
def index(request, tmp_path):
    location = tmp_path / "index" if request.param == "sqlite" else request.getfixturevalue("postgres").url("filters")
    index = _index(location)
    assert index.store.sql_dialect == request.param
    yield index
    index.close()


def _random_filter(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    if depth < 2 and rng.random() < 0.35:
        op = rng.choice(["$and", "$or", "$not"])
        if op == "$not":
            return {"$not": _random_filter(rng, depth + 1)}
        return {op: [_random_filter(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    field = rng.choice(["year", "tags", "shelf", "title", "flag", "date", "score"])
    values = [1901, 1911, "1911", 1920, 1925.5, "1905", "salt", "Salt", "crane", 7, True, False, None, "south", "north",
              "2024-01-01", "", "sa", 2.5]
    op = rng.choice(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$icontains", "$exists"])
    if op in ("$in", "$nin"):
        return {field: {op: rng.sample(values, rng.randint(1, 3))}}
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return {field: {op: rng.choice([v for v in values if isinstance(v, (int, float, str)) and not isinstance(v, bool)])}}
    if op == "$icontains":
        return {field: {op: rng.choice(["sa", "SALT", "marsh", "ROAD"])}}
    if op == "$contains":
        return {field: {op: rng.choice([v for v in values if v is not None])}}
    if op == "$exists":
        return {field: {op: rng.choice([True, False])}}
    return {field: {op: rng.choice(values)}}


def test_the_database_answers_as_python_does(index):
    store = index.store
    for spec, expected in CASES:
        assert store.matching_documents(as_filter(spec)) == expected, spec
    rng = random.Random(57)
    for _ in range(300):
        spec = _random_filter(rng)
        wanted = as_filter(spec)
        assert wanted is not None
        assert store.matching_documents(wanted) == {d for d, m in METADATA.items() if wanted.matches(m)}, spec


def test_searches_keep_only_matching_documents(index):
    for spec, expected in CASES[:12]:
        hits = index.as_retriever(k=3, filter=spec).retrieve("harbour")
        assert hits and all(set(h.provenance.document_ids) <= expected for h in hits), spec
        assert len(hits) == min(3, len(expected))


@pytest.mark.parametrize(("spec", "says"), [
    ({"year": {"$regex": "19.*"}}, "unknown operator '\\$regex' in the filter on 'year'"),
    ({"$nor": [{"year": 1}]}, "unknown filter operator '\\$nor'"),
    ({"year": {"$gt": [1900]}}, "compares with a number or text"),
    ({"year": {"$gt": True}}, "compares with a number or text"),
    ({"year": {"$gt": None}}, "compares with a number or text"),
    ({"year": {"$in": 1900}}, "non-empty list"),
    ({"year": {"$nin": []}}, "non-empty list"),
    ({"year": [1900, 1901]}, "\\$in"),
    ({"year": {"$ne": [1900]}}, "\\$nin"),
    ({"year": {"$eq": {"a": 1}}}, "compares with text, a number"),
    ({"year": {"$exists": "yes"}}, "true or false"),
    ({"tags": {"$contains": ["a", "b"]}}, "\\$and"),
    ({"tags": {"$icontains": 3}}, "takes text"),
    ({"year": {"$between": [1900]}}, "\\[low, high\\]"),
    ({"$or": []}, "non-empty list of filters"),
    ({"$or": {"year": 1}}, "list of filters"),
    ({"$not": [{"year": 1}]}, "must be a dict"),
    ({"year": {}}, "has no operator"),
    ({"year": {"$gt": float("nan")}}, "compares with a number or text"),
    ("year > 1900", "is a dict"),
])
def test_a_malformed_filter_says_what_to_write(spec, says):
    with pytest.raises(InvalidInputError, match=says):
        as_filter(spec)


def test_a_field_no_document_has_is_refused_but_exists_is_not(tmp_path):
    index = _index(tmp_path / "index")
    with pytest.raises(InvalidInputError, match="no stored document has the metadata field 'yeer'.*date, flag"):
        index.as_retriever(filter={"$or": [{"yeer": 1901}, {"shelf": "south"}]})
    assert index.store.matching_documents(as_filter({"colour": {"$exists": False}})) == set(METADATA)
    with pytest.raises(InvalidInputError, match="quote or backslash"):
        index.store.matching_documents(as_filter({'a"b': 1}))


def test_the_mapping_form_round_trips_and_reads_as_words():
    spec = {"$or": [{"shelf": "south"}, {"year": {"$gt": 1900, "$lte": "1950"}}], "$not": {"tags": {"$in": ["salt", 7]}}}
    wanted = as_filter(spec)
    again = as_filter(wanted.to_dict())
    assert isinstance(again, MetadataFilter) and again == wanted
    assert all(wanted.matches(m) == again.matches(m) for m in METADATA.values())
    assert str(wanted) == '(shelf = "south" or (year > 1900 and year <= "1950")) and not tags in ("salt", 7)'
    assert as_filter({}) is None and as_filter(None) is None and as_filter({"$and": []}) is None
