"""A LightRAG delete interrupted at any point (issue 13).

A delete computes everything it changes (the profiles rebuilt from the remaining chunks' stored
records, their summaries, their vectors) before its one transaction, and stores it all there
(only an insert call leaves summaries to its end). So a kill leaves either the index as it was
(the same delete again finishes, paying no summary twice) or the index an uninterrupted delete
leaves.
"""

from __future__ import annotations

from typing import Any

import pytest
from _lightrag_fakes import CORPUS, fake_model

from rhizome.core import Document, HashingEmbedder
from rhizome.core.graph.store import EntityGraphStore
from rhizome.lightrag import LightRAGIndex

EXTRA = Document(id="extra", text="Marie Curie visited Stockholm. Pierre Curie stayed in Paris with Alfred Nobel.")
LATER = Document(id="later", text="Alfred Nobel wrote to Marie Curie from Stockholm about Paris.")


class Killed(BaseException):
    """Stands for a kill: not an ``Exception``, so nothing on the way catches it."""


def rows(index: LightRAGIndex) -> dict[str, list]:
    q = index.store.query
    tables = (index.entity_table, index.relation_table, index.entity_graph.lists.citations, index.entity_graph.lists.fragments, index.entity_graph.extractions, index.entity_graph.mentions)
    return {
        "documents": sorted(r[:2] for r in q("SELECT id, content_hash FROM documents")),
        "chunks": sorted(q("SELECT id, document_id, text FROM chunks")),
        "vectors": sorted(q("SELECT collection, id, vector FROM vectors")),
        **{t.name: sorted(r.model_dump_json() for r in t.all()) for t in tables},
    }


def open_index(path: Any, model: Any, **options: Any) -> LightRAGIndex:
    return LightRAGIndex(HashingEmbedder(), llm=model, path=path, chunk_size=64, chunk_overlap=8, force_summary_fragments=2, **options)


@pytest.mark.parametrize("point", ["summaries", "embedding", "commit"])
def test_an_interrupted_delete_changes_nothing_and_the_same_delete_finishes(tmp_path, monkeypatch, point):
    clean = open_index(tmp_path / "clean", fake_model()[0], cache=False)  # its answers are not shared
    clean.insert(CORPUS)
    clean.insert(EXTRA)
    clean.insert(LATER)
    clean.delete("extra")
    without = rows(clean)  # a profile's summary depends on the insert calls its fragments came in
    model, _ = fake_model()
    index = open_index(tmp_path / "i", model)
    index.insert(CORPUS)
    index.insert(EXTRA)
    index.insert(LATER)  # the profiles without EXTRA were never summarised: the delete writes them
    before = rows(index)

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise Killed(point)

    with monkeypatch.context() as patch:
        if point == "summaries":  # a model call of the profiles' summaries
            patch.setattr(type(model), "_achat", killed)
        elif point == "embedding":  # after the summaries were committed as stage results
            patch.setattr(index.entity_graph, "embed", killed)
        else:  # inside the delete's transaction: rolled back
            patch.setattr(EntityGraphStore, "write", killed)
        with pytest.raises(Killed):
            index.delete("extra")
    index.close()

    model, _ = fake_model()
    index = open_index(tmp_path / "i", model)
    assert rows(index) == before and not index.needs_refresh
    report = index.delete("extra")
    assert report.deleted == ["extra"]
    assert rows(index) == without
    if point != "summaries":  # the summaries written before the kill are not paid again
        assert model.usage.calls == 0
