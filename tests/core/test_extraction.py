"""Tests of the extraction step: LLM extractor (with a fake model), offline extractor, OpenIE
import. No network, no model server."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from rhizome.core.errors import (
    ConfigurationError,
    EmptyExtractionError,
    InvalidInputError,
    ModelOutputError,
)
from rhizome.core.extraction import (
    ExtractedRelation,
    Extraction,
    Extractor,
    LLMExtractor,
    OfflineExtractor,
    entity_key,
    import_openie,
    pmi_values,
)
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.types import Chunk


def make_chunk(text: str, cid: str = "doc:0", index: int = 0) -> Chunk:
    return Chunk(
        id=cid,
        document_id="doc",
        text=text,
        index=index,
        start=0,
        end=len(text),
        n_tokens=len(text.split()),
    )


ADA_TEXT = "Ada Lovelace worked with Charles Babbage on the Analytical Engine in London."

FIRST_ANSWER = {
    "entities": [
        {
            "name": "Ada Lovelace",
            "type": "person",
            "description": "A mathematician who wrote notes on the engine.",
        },
        {
            "name": "Analytical Engine",
            "type": "CONCEPT",
            "description": "A mechanical computer design.",
        },
    ],
    "relations": [
        {
            "source": "Ada Lovelace",
            "target": "Analytical Engine",
            "description": "She wrote about the engine.",
            "keywords": ["authorship"],
            "strength": 8,
        }
    ],
}

GLEAN_ANSWER = {
    "entities": [
        {"name": "Charles Babbage", "type": "PERSON", "description": "Designer of the engine."},
        {"name": "ada  LOVELACE", "type": "PERSON", "description": "Repeated on purpose."},
    ],
    "relations": [
        {
            "source": "Charles Babbage",
            "target": "Ada Lovelace",
            "description": "They worked together.",
            "keywords": "collaboration, friendship",
            "strength": 9,
        }
    ],
}


def user_prompt(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def is_gleaning(messages: list[dict[str, str]]) -> bool:
    return "Already found:" in user_prompt(messages)


# --------------------------------------------------------------------------------------------
# LLM extractor
# --------------------------------------------------------------------------------------------


def test_llm_extraction_builds_records():
    model = FakeChatModel([FIRST_ANSWER])
    [result] = LLMExtractor(model, gleaning=0).extract([make_chunk(ADA_TEXT)])
    assert isinstance(result, Extraction)
    assert result.chunk_id == "doc:0"
    assert [(e.id, e.name, e.type) for e in result.entities] == [
        ("ada lovelace", "Ada Lovelace", "PERSON"),
        ("analytical engine", "Analytical Engine", "CONCEPT"),
    ]
    assert all(e.source_chunk_ids == ["doc:0"] for e in result.entities)
    [relation] = result.relations
    assert {relation.source, relation.target} == {"ada lovelace", "analytical engine"}
    assert relation.weight == 8.0
    assert relation.keywords == ["authorship"]
    assert relation.description == "She wrote about the engine."
    assert len(model.requests) == 1
    # the system prompt and the schema went to the model
    assert model.requests[0][0]["role"] == "system"
    assert ADA_TEXT in user_prompt(model.requests[0])


@pytest.mark.parametrize(
    "broken",
    [
        "{ this is not json",
        {"entities": [{"name": "Ada Lovelace"}], "relations": []},  # type and description missing
        {"entities": [], "relations": [{"source": "A", "target": "B"}]},
    ],
)
async def test_llm_extractor_retries_invalid_output(broken):
    model = FakeChatModel([broken, FIRST_ANSWER], max_retries=2)
    [result] = await LLMExtractor(model, gleaning=0).aextract([make_chunk(ADA_TEXT)])
    assert len(model.requests) == 2
    assert model.usage.retries == 1
    # the retry shows the model its previous answer and the problem
    assert [m["role"] for m in model.requests[1]][-2:] == ["assistant", "user"]
    assert [e.name for e in result.entities] == ["Ada Lovelace", "Analytical Engine"]


async def test_llm_extractor_gives_up_after_retries():
    model = FakeChatModel(["nope", "still nope", "never"], max_retries=1)
    with pytest.raises(ModelOutputError) as info:
        await LLMExtractor(model, gleaning=0).aextract([make_chunk(ADA_TEXT)])
    assert not isinstance(info.value, EmptyExtractionError)
    assert len(model.requests) == 2


async def test_empty_extraction_is_reported():
    model = FakeChatModel([{"entities": [], "relations": []}])
    with pytest.raises(EmptyExtractionError) as info:
        await LLMExtractor(model, gleaning=1).aextract([make_chunk(ADA_TEXT, cid="book:7")])
    assert "book:7" in str(info.value)
    assert "bigger" in str(info.value)
    # the first pass found nothing, one gleaning pass found nothing either: stop there
    assert len(model.requests) == 2


async def test_an_empty_extraction_leaves_no_answer_in_the_cache_so_a_rerun_asks_again():
    from rhizome.core.store.cache import ModelCache

    cache = ModelCache()
    empty = FakeChatModel([{"entities": [], "relations": []}], cache=cache)
    with pytest.raises(EmptyExtractionError):
        await LLMExtractor(empty, gleaning=1).aextract([make_chunk(ADA_TEXT)])
    assert len(empty.requests) == 2 and len(cache) == 0  # first call and gleaning: both refused

    healthy = FakeChatModel(lambda messages, schema: GLEAN_ANSWER if is_gleaning(messages) else FIRST_ANSWER, cache=cache)
    [result] = await LLMExtractor(healthy, gleaning=1).aextract([make_chunk(ADA_TEXT)])
    assert len(healthy.requests) == 2 and result.entities  # asked again, not answered from the cache
    assert len(cache) == 2  # accepted answers stay: a third run pays nothing
    again = FakeChatModel(["never asked"], cache=cache)
    await LLMExtractor(again, gleaning=1).aextract([make_chunk(ADA_TEXT)])
    assert again.requests == []


async def test_an_empty_answer_cached_before_is_refused_and_taken_out_of_the_cache():
    from rhizome.core.store.cache import ModelCache

    cache = ModelCache()
    await LLMExtractor(FakeChatModel([{"entities": [], "relations": []}], cache=cache), gleaning=0, allow_empty=True).aextract(
        [make_chunk(ADA_TEXT)]
    )
    assert len(cache) == 1  # accepted where empty answers are allowed
    strict = FakeChatModel([FIRST_ANSWER], cache=cache)
    with pytest.raises(EmptyExtractionError):  # from the cache
        await LLMExtractor(strict, gleaning=0).aextract([make_chunk(ADA_TEXT)])
    assert strict.requests == [] and len(cache) == 0
    [result] = await LLMExtractor(strict, gleaning=0).aextract([make_chunk(ADA_TEXT)])
    assert len(strict.requests) == 1 and result.entities


async def test_allow_empty_and_blank_chunks():
    model = FakeChatModel([{"entities": [], "relations": []}])
    extractor = LLMExtractor(model, gleaning=0, allow_empty=True)
    results = await extractor.aextract([make_chunk(ADA_TEXT, "a"), make_chunk(" \n\t ", "b")])
    assert [r.chunk_id for r in results] == ["a", "b"]
    assert all(r.is_empty for r in results)
    assert len(model.requests) == 1  # the blank chunk never reaches the model

    strict = LLMExtractor(FakeChatModel([FIRST_ANSWER]), gleaning=0)
    [blank] = await strict.aextract([make_chunk("   ", "c")])
    assert blank.is_empty  # nothing to extract is not an error


async def test_gleaning_adds_missed_items_and_stops_when_nothing_new():
    def respond(messages, schema):
        return GLEAN_ANSWER if is_gleaning(messages) else FIRST_ANSWER

    model = FakeChatModel(respond)
    [result] = await LLMExtractor(model, gleaning=5).aextract([make_chunk(ADA_TEXT)])
    # first pass, one useful gleaning round, one round that only repeats: 3 calls, not 6
    assert len(model.requests) == 3
    assert result.metadata["gleaning_rounds"] == 2
    assert [e.id for e in result.entities] == [
        "ada lovelace",
        "analytical engine",
        "charles babbage",
    ]
    ada = result.entities[0]
    assert ada.name == "Ada Lovelace"  # first spelling kept
    assert "Repeated on purpose." in ada.descriptions
    pairs = {(r.source, r.target) for r in result.relations}
    assert pairs == {("ada lovelace", "analytical engine"), ("ada lovelace", "charles babbage")}
    babbage = next(r for r in result.relations if "charles babbage" in (r.source, r.target))
    assert babbage.keywords == ["collaboration", "friendship"]


def test_an_item_named_again_in_one_pack_is_folded_into_the_first():
    answer = {
        "entities": [
            {"name": "Ada Lovelace", "type": "", "description": ""},
            {"name": " ada lovelace ", "type": "person", "description": " Wrote notes. "},
            {"name": "Ada Lovelace", "type": "MATHEMATICIAN", "description": "Wrote notes."},
            {"name": "Ada Lovelace", "type": "", "description": "Counted numbers."},
        ],
        "relations": [
            {"source": "Ada Lovelace", "target": "Analytical Engine", "description": "", "keywords": [], "strength": 3},
            {"source": "Analytical Engine", "target": "ada lovelace", "description": " Notes on it. ", "keywords": " notes ,  engine ", "strength": 8},
            {"source": "Ada Lovelace", "target": "Analytical Engine", "description": "Notes on it.", "keywords": ["Notes", "notes"], "strength": 5},
        ],
    }
    [result] = LLMExtractor(FakeChatModel([answer]), gleaning=0).extract([make_chunk(ADA_TEXT)])
    ada = next(e for e in result.entities if e.id == "ada lovelace")
    assert (ada.name, ada.type) == ("Ada Lovelace", "PERSON")  # the first type given wins
    assert ada.descriptions == ["Wrote notes.", "Counted numbers."] and ada.description == "Wrote notes."
    [relation] = result.relations
    assert relation.descriptions == ["Notes on it."] and relation.description == "Notes on it."
    assert relation.keywords == ["notes", "engine", "Notes"] and relation.weight == 8.0


async def test_failing_gleaning_pass_keeps_first_pass():
    def respond(messages, schema):
        return "not json at all" if is_gleaning(messages) else FIRST_ANSWER

    model = FakeChatModel(respond, max_retries=1)
    [result] = await LLMExtractor(model, gleaning=2).aextract([make_chunk(ADA_TEXT)])
    assert len(model.requests) == 3  # first pass, then one gleaning pass tried twice
    assert [e.name for e in result.entities] == ["Ada Lovelace", "Analytical Engine"]
    assert "gleaning_error" in result.metadata


async def test_gleaning_zero_and_one():
    def respond(messages, schema):
        return GLEAN_ANSWER if is_gleaning(messages) else FIRST_ANSWER

    none = FakeChatModel(respond)
    [r0] = await LLMExtractor(none, gleaning=0).aextract([make_chunk(ADA_TEXT)])
    assert len(none.requests) == 1
    assert "charles babbage" not in {e.id for e in r0.entities}

    one = FakeChatModel(respond)
    [r1] = await LLMExtractor(one, gleaning=1).aextract([make_chunk(ADA_TEXT)])
    assert len(one.requests) == 2
    assert "charles babbage" in {e.id for e in r1.entities}


async def test_gleaning_prompt_lists_names_not_previous_json():
    def respond(messages, schema):
        return {"entities": [], "relations": []} if is_gleaning(messages) else FIRST_ANSWER

    model = FakeChatModel(respond)
    await LLMExtractor(model, gleaning=1).aextract([make_chunk(ADA_TEXT)])
    assert len(model.requests) == 2
    glean = model.requests[1]
    prompt = user_prompt(glean)
    assert [m["role"] for m in glean] == ["system", "user"]  # a fresh request, no chat history
    assert ADA_TEXT in prompt
    assert "Entities: Ada Lovelace; Analytical Engine" in prompt
    assert "Ada Lovelace - Analytical Engine" in prompt
    first_json = json.dumps(FIRST_ANSWER)
    assert first_json not in prompt
    for entity in FIRST_ANSWER["entities"]:
        assert entity["description"] not in prompt
    assert FIRST_ANSWER["relations"][0]["description"] not in prompt
    assert '"strength": 8' not in prompt and '"keywords": [' not in prompt


async def test_relation_endpoints_missing_from_entities_are_added():
    answer = {
        "entities": [{"name": "Ada Lovelace", "type": "PERSON", "description": "A mathematician."}],
        "relations": [
            {
                "source": "Ada Lovelace",
                "target": "Lord Byron",
                "description": "Her father.",
                "keywords": [],
                "strength": 7,
            },
            {
                "source": "Ada Lovelace",
                "target": "ada lovelace",
                "description": "Self.",
                "keywords": [],
                "strength": 1,
            },
            {
                "source": " ",
                "target": "Ada Lovelace",
                "description": "Blank.",
                "keywords": [],
                "strength": 1,
            },
        ],
    }
    [result] = await LLMExtractor(FakeChatModel([answer]), gleaning=0).aextract(
        [make_chunk(ADA_TEXT)]
    )
    assert [(e.id, e.name, e.type) for e in result.entities] == [
        ("ada lovelace", "Ada Lovelace", "PERSON"),
        ("lord byron", "Lord Byron", ""),
    ]
    assert len(result.relations) == 1  # self-loop and blank endpoint dropped


async def test_many_chunks_keep_order_and_report_progress():
    def respond(messages, schema):
        prompt = user_prompt(messages)
        name = next(w for w in ("Alpha", "Beta", "Gamma", "Delta") if f"{w} Corp" in prompt)
        return {
            "entities": [{"name": f"{name} Corp", "type": "ORGANIZATION", "description": "x"}],
            "relations": [],
        }

    seen: list[tuple[int, int]] = []
    model = FakeChatModel(respond, delay=0.001, max_concurrency=2)
    chunks = [
        make_chunk(f"{w} Corp makes things.", f"c{i}", i)
        for i, w in enumerate(["Alpha", "Beta", "Gamma", "Delta"])
    ]
    extractor = LLMExtractor(model, gleaning=0, progress=lambda d, t: seen.append((d, t)))
    results = await extractor.aextract(chunks)
    assert [r.chunk_id for r in results] == ["c0", "c1", "c2", "c3"]
    assert [r.entities[0].name for r in results] == [
        "Alpha Corp",
        "Beta Corp",
        "Gamma Corp",
        "Delta Corp",
    ]
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert model.max_in_flight <= 2


def test_llm_extractor_validates_arguments():
    model = FakeChatModel()
    with pytest.raises(ConfigurationError):
        LLMExtractor(model, gleaning=-1)
    with pytest.raises(ConfigurationError):
        LLMExtractor(model, max_concurrency=0)
    with pytest.raises(InvalidInputError):
        LLMExtractor(model).extract(["not a chunk"])  # type: ignore[list-item]
    assert isinstance(LLMExtractor(model), Extractor)
    assert isinstance(OfflineExtractor(), Extractor)


def test_schema_is_lenient_where_it_is_safe():
    relation = ExtractedRelation.model_validate(
        {"source": "A", "target": "B", "description": "d", "keywords": "x; y", "strength": "12"}
    )
    assert relation.keywords == ["x", "y"]
    assert relation.strength == 10
    assert (
        ExtractedRelation.model_validate(
            {"source": "A", "target": "B", "description": "d", "keywords": [], "strength": 0.2}
        ).strength
        == 1
    )
    schema = ExtractedRelation.model_json_schema()
    assert set(schema["required"]) == {"source", "target", "description"}
    assert set(schema["properties"]) == {"source", "target", "description", "keywords", "strength", "passages"}


# --------------------------------------------------------------------------------------------
# offline extractor
# --------------------------------------------------------------------------------------------

OFFLINE_TEXTS = [
    "Dr. Grace Hopper joined the United States Navy in 1943. Hopper later worked at "
    "Remington Rand in New York City.",
    "Researchers at the University of Pennsylvania built ENIAC. Grace Hopper visited the "
    "University of Pennsylvania.",
]


def offline_chunks() -> list[Chunk]:
    return [make_chunk(t, f"doc:{i}", i) for i, t in enumerate(OFFLINE_TEXTS)]


def test_offline_finds_multiword_names_and_cooccurrence():
    results = OfflineExtractor().extract(offline_chunks())
    first, second = results
    names = [(e.name, e.type) for e in first.entities]
    assert names == [
        ("Grace Hopper", "PERSON"),
        ("United States Navy", "ORGANIZATION"),
        ("Hopper", "NOUN_PHRASE"),
        ("Remington Rand", "NOUN_PHRASE"),
        ("New York City", "LOCATION"),
    ]
    assert [(e.name, e.type) for e in second.entities] == [
        ("University of Pennsylvania", "ORGANIZATION"),
        ("ENIAC", "NOUN_PHRASE"),
        ("Grace Hopper", "PERSON"),  # the PERSON cue from the other chunk applies here too
    ]
    # "Researchers" opens a sentence and is an ordinary word: not an entity
    assert "researchers" not in {e.id for e in second.entities}
    # descriptions are the sentences that mention the entity
    grace = first.entities[0]
    assert grace.description == "Dr. Grace Hopper joined the United States Navy in 1943."
    # every pair of names in a chunk co-occurs once
    assert len(first.relations) == 10
    pair = next(
        r for r in first.relations if {r.source, r.target} == {"grace hopper", "new york city"}
    )
    assert pair.weight == 1.0
    assert pair.metadata["kind"] == "cooccurrence"
    assert pair.source < pair.target
    assert pair.description == ""  # never in the same sentence
    navy = next(
        r for r in first.relations if {r.source, r.target} == {"grace hopper", "united states navy"}
    )
    assert navy.description == "Dr. Grace Hopper joined the United States Navy in 1943."
    assert {"pmi", "npmi"} <= navy.metadata.keys()


def test_offline_is_deterministic():
    a = [r.model_dump() for r in OfflineExtractor().extract(offline_chunks())]
    b = [r.model_dump() for r in OfflineExtractor().extract(offline_chunks())]
    assert a == b


def test_offline_sentence_window_and_min_frequency():
    text = (
        "Alice Smith met Bob Jones in Paris. Alice Smith and Bob Jones went home. Carol Kim stayed."
    )
    [result] = OfflineExtractor(window="sentence").extract([make_chunk(text)])
    weights = {(r.source, r.target): r.weight for r in result.relations}
    assert weights[("alice smith", "bob jones")] == 2.0
    assert weights[("alice smith", "paris")] == 1.0
    assert not any("carol kim" in pair for pair in weights)

    [frequent] = OfflineExtractor(min_frequency=2).extract([make_chunk(text)])
    assert [e.id for e in frequent.entities] == ["alice smith", "bob jones"]
    assert len(frequent.relations) == 1


def test_offline_name_rules():
    extractor = OfflineExtractor(max_phrase_words=4)
    found = extractor.find_mentions(
        "Yesterday the Bank of England met J. R. R. Tolkien and NASA near Mount Everest. "
        "Google's office in the U.S. Army base was closed in March."
    )
    names = [name for name, _, _ in found]
    assert names == [
        "Bank of England",
        "J. R. R. Tolkien",
        "NASA",
        "Mount Everest",
        "Google",
        "U.S. Army",
    ]
    types = {name: kind for name, kind, _ in found}
    assert types["Bank of England"] == "ORGANIZATION"
    assert types["Mount Everest"] == "LOCATION"
    assert [k for n, _, k in found if n == "NASA"] == ["acronym"]
    # a long title-case run is treated as a heading, not a name
    assert extractor.find_mentions("We read The Very Long Title Of Some Old Book today.") == []
    with pytest.raises(ConfigurationError):
        OfflineExtractor(window="paragraph")  # type: ignore[arg-type]


def test_offline_common_phrases_are_optional_and_lighter():
    text = "The random forest model and Google work on image classification."
    plain = OfflineExtractor().extract([make_chunk(text)])[0]
    assert [e.name for e in plain.entities] == ["Google"]
    rich = OfflineExtractor(common_phrases=True).extract([make_chunk(text)])[0]
    assert [e.name for e in rich.entities] == [
        "random forest model",
        "Google",
        "image classification",
    ]
    assert rich.entities[0].metadata["salience"] == 0.5
    assert rich.entities[1].metadata["salience"] == 1.0


# --------------------------------------------------------------------------------------------
# OpenIE import
# --------------------------------------------------------------------------------------------

OPENIE = {
    "docs": [
        {
            "idx": 0,
            "passage": "Marie Curie was born in Warsaw.",
            "extracted_entities": ["Marie Curie", "Warsaw", 42],
            "extracted_triples": [
                ["Marie Curie", "born in", "Warsaw"],
                ["Marie Curie", "born in"],
                ["Marie Curie", "born in", "Warsaw"],
                ["Marie Curie", None, "Poland"],
            ],
            "title": "ignored",
        },
        {
            "idx": "chunk-abc",
            "passage": "Pierre  Curie\nmarried Marie Curie.",
            "extracted_entities": ["Pierre Curie", "Marie Curie"],
            "extracted_triples": [["Pierre Curie", "married", "Marie Curie"]],
        },
        {
            "idx": 7,
            "passage": "A passage we do not have.",
            "extracted_entities": [],
            "extracted_triples": [["Paris", "capital of", "France"]],
        },
    ],
    "avg_ent_chars": 9.5,
    "avg_ent_words": 1.8,
}


def test_import_openie_maps_passages_to_chunks(tmp_path):
    chunks = [
        make_chunk("Marie Curie was born in Warsaw.", "d:0", 0),
        make_chunk("Pierre Curie married Marie Curie.", "d:1", 1),
    ]
    path = tmp_path / "openie.json"
    path.write_text(json.dumps(OPENIE), encoding="utf-8")
    first, second, third = import_openie(path, chunks)
    assert [first.chunk_id, second.chunk_id, third.chunk_id] == ["d:0", "d:1", "openie-7"]
    assert [x.metadata["matched_chunk"] for x in (first, second, third)] == [True, True, False]

    assert [e.id for e in first.entities] == ["marie curie", "warsaw"]
    assert first.metadata["skipped_entities"] == 1
    assert first.metadata["skipped_triples"] == 2  # wrong arity, non-string predicate
    [born] = first.relations  # the repeated triple is kept once
    assert (born.source, born.target, born.predicate) == ("marie curie", "warsaw", "born in")
    assert born.description == "Marie Curie born in Warsaw"
    assert born.metadata["directed"] is True

    # entities only named in triples are added; without chunks, ids come from idx
    assert {e.id for e in third.entities} == {"paris", "france"}
    no_chunks = import_openie(OPENIE)
    assert [x.chunk_id for x in no_chunks] == ["openie-0", "chunk-abc", "openie-7"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "docs"),
        ('{"passages": []}', 'no "docs"'),
        ('{"docs": {"idx": 1}}', "must be a list"),
        ('{"docs": ["text"]}', "docs[0]"),
        ('{"docs": [{"idx": 1, "passage": "x"}]}', "neither"),
        ('{"docs": [{"idx": 1, "extracted_triples": "a b c"}]}', "must be a list"),
    ],
)
def test_import_openie_rejects_broken_files(tmp_path, content, message):
    path = tmp_path / "broken.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError) as info:
        import_openie(path)
    assert message in str(info.value)


def test_import_openie_missing_file(tmp_path):
    with pytest.raises(InvalidInputError, match="not found"):
        import_openie(tmp_path / "nope.json")


# --------------------------------------------------------------------------------------------
# merge
# --------------------------------------------------------------------------------------------


def test_cooccurrence_pmi_worked_example():
    # a, b co-occur twice, a and c once; a cited by 2 chunks, b by 2, c by 1, of 3 chunks
    weights = pmi_values({"a": 2, "b": 2, "c": 1}, 3, {"ab": ("a", "b", 2.0), "ac": ("a", "c", 1.0)})
    ab, ac = SimpleNamespace(id="ab"), SimpleNamespace(id="ac")
    assert set(weights) == {ab.id, ac.id}
    p_ab, p_a, p_b = 2 / 3, 2 / 5, 2 / 5
    expected = p_ab * math.log2(p_ab / (p_a * p_b))
    assert weights[ab.id][0] == pytest.approx(expected)
    # npmi over the 3 chunks: q(a, b) = min(2, 2, 2) / 3, q(a) = q(b) = 2 / 3
    q_ab, q_a, q_b = 2 / 3, 2 / 3, 2 / 3
    assert weights[ab.id][1] == pytest.approx(math.log2(q_ab / (q_a * q_b)) / -math.log2(q_ab))
    assert -1.0 <= weights[ac.id][1] <= 1.0


def test_entity_key_normalises_names():
    assert entity_key("  New\n York   City ") == entity_key("new york city") == "new york city"
    assert entity_key('"Apple"') == "apple"


def test_openie_extractor_serves_triples_for_matching_chunks():
    from rhizome.core.extraction import OpenIEExtractor
    from rhizome.core.types import Chunk

    data = {"docs": [{"idx": 0, "passage": "Ilse Varn mapped Oskel.", "extracted_entities": ["Ilse Varn", "Oskel"],
                      "extracted_triples": [["Ilse Varn", "mapped", "Oskel"]]}]}
    chunks = [
        Chunk(id="a:0", document_id="a", text="Ilse Varn mapped Oskel.", index=0, start=0, end=23, n_tokens=6),
        Chunk(id="b:0", document_id="b", text="Something else.", index=0, start=0, end=15, n_tokens=3),
    ]
    result = OpenIEExtractor(data).extract(chunks)
    assert [e.chunk_id for e in result] == ["a:0", "b:0"]
    assert [r.predicate for r in result[0].relations] == ["mapped"]
    assert result[1].entities == [] and result[1].metadata["matched_chunk"] is False
    with pytest.raises(InvalidInputError):
        OpenIEExtractor({"not": "openie"})


def test_openie_extractor_batches_do_not_report_other_batches_passages(caplog):
    from rhizome.core.extraction import OpenIEExtractor
    from rhizome.core.types import Chunk

    texts = ["Ilse Varn mapped Oskel.", "Oskel lies  in Tarn."]
    data = {"docs": [{"idx": i, "passage": t, "extracted_entities": [t.split()[0]], "extracted_triples": []} for i, t in enumerate(texts)]}
    extractor = OpenIEExtractor(data)
    chunks = [Chunk(id=f"d{i}:0", document_id=f"d{i}", text=" ".join(t.split()), index=0, start=0, end=len(t), n_tokens=5) for i, t in enumerate(texts)]
    with caplog.at_level("WARNING"):
        first, second = extractor.extract(chunks[:1]), extractor.extract(chunks[1:])
    assert "matched no given chunk" not in caplog.text  # each batch holds its own passages only
    assert first[0].entities[0].name == "Ilse" and second[0].entities[0].source_chunk_ids == ["d1:0"]  # whitespace-insensitive match


def test_merge_memo_is_not_fooled_by_a_reused_list_id():
    """The fold memo is keyed by a list's id; an entry left by another list under that id (as
    after the first list was freed) must be rebuilt, not trusted."""
    from rhizome.core.graph.profiles import union_into

    gone, grown = ["old"], ["a"]
    seen = {id(grown): (gone, {"a", "b"})}  # as if `gone` had lived at `grown`'s address
    union_into(grown, ["b", "a"], seen)
    assert grown == ["a", "b"]
    assert seen[id(grown)][0] is grown
