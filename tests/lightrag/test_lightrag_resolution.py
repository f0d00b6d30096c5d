"""Entity resolution on a small labelled set, offline and with a model's confirmation."""

from __future__ import annotations

import numpy as np
import pytest
from _lightrag_fakes import fake_model

from rhizome.core import Document
from rhizome.core.graph.resolution import (
    EntityResolver,
    initials,
    is_acronym,
    normalise_name,
    resolve_names,
)
from rhizome.core.models.base import BaseEmbedder
from rhizome.lightrag import LightRAGIndex

# (name, type, group): names of one group are one entity; different groups must stay apart
LABELLED = [
    ("IBM", "ORGANIZATION", "ibm"),
    ("I.B.M.", "ORGANIZATION", "ibm"),
    ("International Business Machines", "ORGANIZATION", "ibm"),
    ("International Business Machines Corp.", "ORGANIZATION", "ibm"),
    ("World Health Organization", "ORGANIZATION", "who"),
    ("WHO", "ORGANIZATION", "who"),
    ("The United States", "GEO", "us"),
    ("United States", "LOCATION", "us"),
    ("São Paulo", "GEO", "sao"),
    ("Sao Paulo", "GEO", "sao"),
    ("Marie Curie", "PERSON", "curie"),
    ("Marie Curie's", "PERSON", "curie"),
    ("Jean-Paul Sartre", "PERSON", "sartre"),
    ("Jean Paul Sartre", "PERSON", "sartre"),
    ("J. R. R. Tolkien", "PERSON", "tolkien"),
    ("J.R.R. Tolkien", "PERSON", "tolkien"),
    ("New York", "GEO", "ny"),
    ("New York Times", "ORGANIZATION", "nyt"),
    ("Paris", "GEO", "paris"),
    ("Paris Hilton", "PERSON", "hilton"),
    ("Apple Inc.", "ORGANIZATION", "apple-inc"),
    ("Apple", "CONCEPT", "apple-fruit"),
    ("AI", "CONCEPT", "ai"),
    ("Amnesty International", "ORGANIZATION", "amnesty"),
    ("George Bush", "PERSON", "bush-senior"),
    ("George W. Bush", "PERSON", "bush-junior"),
    ("Manchester United", "ORGANIZATION", "mufc"),
    ("Manchester City", "ORGANIZATION", "mcfc"),
]


def test_name_rules():
    assert normalise_name("I.B.M.") == normalise_name("IBM") == "ibm"
    assert normalise_name("The  United States") == "united states"
    assert normalise_name("J. R. R. Tolkien") == normalise_name("J.R.R. Tolkien") == "jrr tolkien"
    assert is_acronym("I.B.M.") and is_acronym("WHO") and not is_acronym("Who") and not is_acronym("IBM Research")
    assert initials("Massachusetts Institute of Technology") == "mit" and initials("Apple Inc.") == ""


async def test_labelled_set_offline():
    from rhizome.core import HashingEmbedder

    groups = await resolve_names([(n, t) for n, t, _ in LABELLED], embedder=HashingEmbedder())
    truth = {n: g for n, _, g in LABELLED}
    for a, _, ga in LABELLED:
        for b, _, gb in LABELLED:
            same = groups[a] == groups[b]
            assert same == (ga == gb), f"{a!r} and {b!r} should {'' if ga == gb else 'not '}be one entity"
    assert len(set(groups.values())) == len(set(truth.values()))


class TableEmbedder(BaseEmbedder):
    """Vectors from a table: names in one row are near-identical, everything else orthogonal."""

    def __init__(self, rows: list[list[str]]) -> None:
        super().__init__("table:8", dimension=8)
        self.rows = rows

    async def _aembed_batch(self, texts):
        out = []
        for text in texts:
            vector = np.zeros(8, dtype=np.float32)
            for i, row in enumerate(self.rows):
                if text.split("\n")[0] in row:
                    vector[i] = 1.0
                    vector[7] = 0.05 * row.index(text.split("\n")[0])
            if not vector.any():
                vector[6] = 1.0
            out.append(vector.tolist())
        return out


async def test_embedding_candidates_are_confirmed_by_the_model():
    embedder = TableEmbedder([["Big Blue", "IBM Corporation"], ["Joe Biden", "Joseph Biden"]])
    names = [("Big Blue", "ORGANIZATION"), ("IBM Corporation", "ORGANIZATION"), ("Joe Biden", "PERSON"), ("Joseph Biden", "PERSON")]
    merged = await resolve_names(names, embedder=embedder)
    assert merged["IBM Corporation"] == "Big Blue" and merged["Joseph Biden"] == "Joe Biden"
    model, responder = fake_model(same=False)
    kept = await resolve_names(names, embedder=embedder, resolver=EntityResolver(llm=model))
    assert kept["IBM Corporation"] == "IBM Corporation" and responder.kinds == ["resolution"]


async def test_index_merges_variants_across_inserts():
    index = LightRAGIndex(chunk_size=64, chunk_overlap=8)
    await index.ainsert(Document(id="a", text="IBM opened a lab in Zurich. The lab in Zurich studies physics."))
    await index.ainsert(Document(id="b", text="International Business Machines sold computers in Geneva."))
    await index.ainsert(Document(id="c", text="Engineers at IBM Corporation work in Zurich."))
    ibm = index.entity("IBM")
    assert ibm.source_chunk_ids == ["a:0", "b:0", "c:0"]
    assert index.entity("International Business Machines").id == ibm.id == index.entity("IBM Corporation").id
    await index.adelete("a")  # the first spelling goes; the entity stays on its other names
    ibm = index.entity("International Business Machines")
    assert ibm.id == "ibm" and ibm.name == "International Business Machines" and ibm.source_chunk_ids == ["b:0", "c:0"]


async def test_resolution_off_keeps_the_paper_rule():
    index = LightRAGIndex(resolution=False, chunk_size=64, chunk_overlap=8)
    await index.ainsert([Document(id="a", text="IBM opened a lab in Zurich."), Document(id="b", text="IBM Corporation hired engineers in Geneva.")])
    assert index.entity("IBM").id != index.entity("IBM Corporation").id


@pytest.mark.parametrize("same", [True, False])
async def test_model_confirmation_inside_the_index(same):
    model, responder = fake_model(same=same)
    index = LightRAGIndex(llm=model, chunk_size=64, chunk_overlap=8, gleaning=0)
    await index.ainsert(Document(id="a", text="National Aeronautics Agency launched rockets and hired Ada Lovelace."))
    await index.ainsert(Document(id="b", text="The NAA launched a probe with Ada Lovelace."))
    assert "resolution" in responder.kinds
    assert (index.entity("NAA").id == index.entity("National Aeronautics Agency").id) is same
