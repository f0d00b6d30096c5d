"""A document whose model answers stay invalid is tried again with varied sampling, and may
fall back to offline extraction: a re-run at temperature 0 with a fixed seed would otherwise
meet the same invalid answer every time."""

from __future__ import annotations

from typing import Any

import pytest
from _lightrag_fakes import CORPUS, Responder

from rhizome.core import ConfigurationError, FakeChatModel, HashingEmbedder
from rhizome.core.models.base import sampling_variation
from rhizome.lightrag import LightRAGIndex

BAD = "Seine"  # a word only the "paris" document has


class Stubborn(Responder):
    """Answers every extraction of the "paris" document with broken JSON, unless sampling is
    varied (``varied=True``) or never (``varied=False``); counts the variations it saw."""

    def __init__(self, varied: bool) -> None:
        super().__init__()
        self.varied = varied
        self.variations: list[int] = []

    def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> Any:
        if BAD in messages[0]["content"] + messages[-1]["content"] and "content_keywords" in (schema or {}).get("properties", {}):
            self.variations.append(sampling_variation())
            if not (self.varied and sampling_variation()):
                return "{not json"
        return super().__call__(messages, schema)


def test_a_failed_document_is_tried_again_with_varied_sampling():
    responder = Stubborn(varied=True)
    index = LightRAGIndex(HashingEmbedder(), llm=FakeChatModel(responder), extraction="llm", batch_size=1)
    report = index.insert(CORPUS)
    assert not report.failed and sorted(report.inserted) == sorted(d.id for d in CORPUS)
    assert responder.variations[0] == 0 and responder.variations[-1] != 0  # first as configured, then varied
    assert index.entity("Seine") is not None


def test_each_run_varies_anew(tmp_path):
    responder = Stubborn(varied=False)
    index = LightRAGIndex(HashingEmbedder(), llm=FakeChatModel(responder), extraction="llm", path=tmp_path / "i")
    first = index.insert(CORPUS)
    assert list(first.failed) == ["paris"] and "paris:0" in first.failed["paris"]
    seen_first = {v for v in responder.variations if v}
    second = index.insert(CORPUS)
    assert list(second.failed) == ["paris"] and sorted(second.skipped) == ["curie", "nobel"]
    seen_second = {v for v in responder.variations if v} - seen_first
    assert seen_first and seen_second  # another seed on the re-run, not the same one again
    index.close()


def test_offline_fallback_stores_the_document_and_says_so():
    responder = Stubborn(varied=False)
    index = LightRAGIndex(HashingEmbedder(), llm=FakeChatModel(responder), extraction="llm")
    report = index.insert(CORPUS, fallback="offline")
    assert report.fallback == ["paris"] and not report.failed
    assert "paris" in report.inserted and index.entity("Seine") is not None  # found by the offline extractor
    hits = index.as_retriever(k=3, mode="naive").retrieve("Seine")
    assert hits and hits[0].provenance.document_ids == ["paris"]


def test_fallback_is_refused_where_it_cannot_apply():
    from rhizome.core.naive import VectorIndex

    with pytest.raises(ConfigurationError, match="does not extract"):
        VectorIndex(HashingEmbedder()).insert(CORPUS, fallback="offline")
    with pytest.raises(ConfigurationError, match="fallback must be"):
        LightRAGIndex(HashingEmbedder()).insert(CORPUS, fallback="llm")
