"""Small fixtures for the GORAG tests: a toy two-round corpus and a scripted chat model."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from rhizome.core.errors import ModelServerError
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.models.fake import FakeChatModel
from rhizome.gorag import prompts

ROUND1 = [
    ("cardiology", "The heart pumps blood; cardiac arrhythmia and heart failure need cardiology care."),
    ("cardiology", "Coronary artery disease narrows arteries of the heart and causes angina."),
    ("astronomy", "Telescopes observe galaxies, stars and distant planets in the night sky."),
    ("astronomy", "A supernova is the explosion of a massive star seen by telescopes."),
]
ROUND2 = [
    ("cooking", "Bake the bread dough in a hot oven; the recipe needs flour, yeast and salt."),
    ("cooking", "Simmer the sauce, season the recipe with garlic and herbs, then roast vegetables."),
]
QUERIES = [
    ("cardiology", "Heart failure patients with arrhythmia were treated in cardiology."),
    ("astronomy", "The telescope found a new planet orbiting a distant star."),
    ("cooking", "A bread recipe with flour and yeast baked in the oven."),
]


def split(rows):
    return [t for _, t in rows], [label for label, _ in rows]


def stub_round_answer(body: dict) -> dict | None:
    """For a loopback Ollama stub: a round's keyword or description request answered (the
    keywords are the prompt text's long words), or ``None`` for a label request."""
    props = set((body.get("format") or {}).get("properties", {}))
    prompt = body["messages"][-1]["content"]
    if "keywords" in props:
        words = [w.strip(".,;()").lower() for w in prompt.split("Text:\n", 1)[1].split()]
        return {"keywords": [w for w in words if len(w) > 5][:8]}
    if "description" in props:
        return {"description": "Texts of this category."}
    return None


def scripted_model(*, choose=None, **kwargs: Any) -> FakeChatModel:
    """A fake model that extracts keywords (words longer than 5 letters), describes labels from
    their name, and classifies by the first candidate (or ``choose(prompt)``)."""

    def respond(messages, schema):
        system, prompt = messages[0]["content"], messages[-1]["content"]
        if system == prompts.EXTRACT_SYSTEM:
            text = prompt.split("Text:\n", 1)[1].rsplit("\n\nAnswer with JSON", 1)[0]
            words = [w.strip(".,;()").lower() for w in text.split()]
            return {"keywords": list(dict.fromkeys(w for w in words if len(w) > 5))[:8]}
        if system == prompts.DESCRIBE_SYSTEM:
            name = prompt.split('named "', 1)[1].split('"', 1)[0]
            return {"description": f"Texts about {name} and its typical subjects."}
        if system == prompts.CLASSIFY_SYSTEM:
            if choose is not None:
                return {"label": choose(prompt)}
            first = prompt.split("Candidate labels", 1)[1].split("\n- ", 1)[1].split("\n", 1)[0]
            return {"label": re.split(r" \(score|:", first)[0]}
        raise AssertionError(f"unexpected prompt: {json.dumps(messages)[:200]}")

    return FakeChatModel(respond, **kwargs)


def learned_state(clf: Any) -> dict:
    """Everything classifying with online indexing may change, as plain values."""
    profiles = {
        y: (p.weight, sorted(zip(p.lex_sum.indices.tolist(), p.lex_sum.data.tolist())), len(p.texts))
        for y, p in clf.scorer.profiles.items()
    }
    return {
        "nodes": sorted((n, sorted(d.items())) for n, d in clf.graph.nodes(data=True)),
        "edges": sorted((*sorted((u, v)), sorted(d.items())) for u, v, d in clf.graph.edges(data=True)),
        "texts": list(clf.stats.texts),
        "extra": dict(clf.stats.extra),
        "members": {y: list(m) for y, m in clf.members.items()},
        "self_indexed": {k: list(v) for k, v in clf.self_indexed.items()},
        "pending": [(tokens, keywords, label) for tokens, keywords, label, _ in clf._pending],
        "profiles": profiles,
    }


def classifier_state(clf: Any) -> dict:
    """:func:`learned_state` and what a round changes besides: the round, the labels (with
    their descriptions and counts), the label names, the embedding profiles and the targets of
    embedding links."""
    dense = {
        y: [None if v is None else v.tolist() for v in (p.dense_sum, p.name_dense)]
        for y, p in clf.scorer.profiles.items()
    }
    return {
        **learned_state(clf),
        "round": clf.round,
        "labels": {y: info.model_dump() for y, info in clf.labels.items()},
        "names": dict(clf._names),
        "idf_texts": clf.scorer.space.n,
        "dense": dense,
        "link_targets": (list(clf.linker.names), [v.tolist() for v in clf.linker.vectors]),
    }


class FlakyEmbedder(HashingEmbedder):
    """The hashing embedder, whose calls can be made to meet a model failure once: after
    ``fail(n, error)`` the n-th ``aembed`` call from then on raises ``error``. ``calls`` counts
    the ``aembed`` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self._fail_at: int | None = None
        self._error: type[Exception] = ModelServerError

    def fail(self, nth: int, error: type[Exception] = ModelServerError) -> None:
        self._fail_at, self._error = self.calls + nth, error

    async def aembed(self, texts):
        self.calls += 1
        if self.calls == self._fail_at:
            raise self._error("the embedding server failed after its retries")
        return await super().aembed(texts)


def failing_model(fail_on: int) -> tuple[FakeChatModel, dict[str, int]]:
    """The scripted model, whose ``fail_on``-th classification request (1-based) meets a server
    failure once; ``calls["classify"]`` counts the classification requests."""
    healthy = scripted_model()
    calls = {"classify": 0}

    def respond(messages, schema):
        if messages[0]["content"] == prompts.CLASSIFY_SYSTEM:
            calls["classify"] += 1
            if calls["classify"] == fail_on:
                raise ModelServerError("the model server answered 503 after its retries")
        return healthy._responses(messages, schema)

    return FakeChatModel(respond), calls


@pytest.fixture
def model() -> FakeChatModel:
    return scripted_model()
