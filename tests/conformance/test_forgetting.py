"""Forgetting reaches the model-call cache: after a document is deleted, nothing of it is left
in the index directory, in the cache file or in PostgreSQL, for every registered method. The
document holds made-up names that the fake model's extraction echoes (the schema-answering fake
takes its names from the capitalised words of the passage), so every answer about the document
carries them; each file is then searched byte for byte (free pages and write-ahead logs too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.store.cache import ModelCache
from rhizome.core.types import Document
from rhizome.tools.testing import (
    CORPUS,
    QUERIES,
    FailingChatModel,
    index_class,
    modes_of,
    registered_methods,
)

CANARIES = ("Zorvexa", "Quintrell", "Brasklund", "Mirvenholt")
CANARY = Document(
    id="canary",
    text="Zorvexa Quintrell rowed from Brasklund to Mirvenholt in the spring storm. "
    "In Mirvenholt, Zorvexa Quintrell sold the Brasklund charts to the harbour school.",
)


def _build(method: str, location, cache: ModelCache | None = None):
    """An index of ``method`` at ``location`` holding the corpus and the canary, its models
    answering through ``cache`` (by default the index's own: a table of its database)."""
    cls = index_class(method)
    settings = {"chunk_size": 200, "chunk_overlap": 20} if "chunk_size" in cls.config_class.model_fields else {}
    if method == "raptor":  # small chunks, so that the corpus makes a tree of model-written summaries
        settings = {"chunk_size": 16, "chunk_overlap": 0}
    index = cls(HashingEmbedder(), llm=FailingChatModel() if cls.uses_llm else None, path=location, cache=False, **settings)
    cache = index.store.model_cache() if cache is None else cache
    for model in (index.llm, index.embedder):
        if model is not None and getattr(model, "cacheable", True):
            model.cache = cache
    # the canary in a batch of its own: LightRAG packs a batch's chunks into one prompt, and the
    # fake, unlike a model, would file names of one passage under another
    for batch in (CORPUS[:3], [CANARY], CORPUS[3:]):
        index.insert(batch)
    for mode in modes_of(cls):  # queries put answers in the cache too (keywords, filters, maps)
        for question in [*QUERIES, "Who rowed to Mirvenholt with the Brasklund charts?"]:
            index.as_retriever(k=3, mode=mode).retrieve(question)
    return index


def _leaks(folders: list[Path]) -> list[str]:
    found = []
    for folder in folders:
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            data = file.read_bytes()
            found += [f"{file.name}: {name}" for name in CANARIES if name.encode() in data]
    return found


def test_the_fake_echoes_the_canaries_so_the_test_can_fail(tmp_path):
    cache = ModelCache(tmp_path / "cache" / "model-calls.sqlite")
    index = _build("lightrag", tmp_path / "i", cache)
    index.close()
    assert any("model-calls.sqlite" in leak for leak in _leaks([tmp_path / "cache"]))
    assert _leaks([tmp_path / "i"])


@pytest.mark.parametrize("method", registered_methods())
def test_a_deleted_document_leaves_nothing_in_the_index_or_the_cache(tmp_path, method):
    cache = ModelCache(tmp_path / "cache" / "model-calls.sqlite")
    index = _build(method, tmp_path / "i", cache)
    before = len(cache)
    report = index.delete("canary")
    assert report.deleted == ["canary"] and (report.forgotten > 0) == index_class(method).uses_llm
    index.close()
    assert _leaks([tmp_path / "i", tmp_path / "cache"]) == []
    assert len(cache) < before or not before
    if method in ("lightrag", "hipporag", "sprag"):  # answers about one document each, which stay
        assert len(cache) > 0


def test_keeping_the_cache_is_a_choice(tmp_path):
    cache = ModelCache(tmp_path / "cache" / "model-calls.sqlite")
    index = _build("lightrag", tmp_path / "i", cache)
    report = index.delete("canary", purge_cache=False)
    index.close()
    assert report.forgotten == 0
    assert _leaks([tmp_path / "cache"])


def test_a_delete_cut_short_after_its_commit_forgets_on_the_next_write(tmp_path, monkeypatch):
    from rhizome.core.index.base import BaseIndex

    cache = ModelCache(tmp_path / "cache" / "model-calls.sqlite")
    index = _build("lightrag", tmp_path / "i", cache)
    with monkeypatch.context() as cut:  # the process ends between the delete's commit and its forget
        cut.setattr(BaseIndex, "forget_cached", lambda self, ids: (_ for _ in ()).throw(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            index.delete("canary")
    assert index.store.document_ids().count("canary") == 0 and _leaks([tmp_path / "cache"])
    index.close()
    again = index_class("lightrag").load(tmp_path / "i", llm=FailingChatModel(), cache=cache)
    report = again.delete("canary")  # already gone: reported missing, and what the cache held of it goes now
    again.close()
    assert report.missing == ["canary"] and report.forgotten > 0
    assert _leaks([tmp_path / "i", tmp_path / "cache"]) == []
