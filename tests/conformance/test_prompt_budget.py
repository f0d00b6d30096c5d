"""Every prompt of every method fits the model's context window.

A fake model with a 4,096-token window (a common small Ollama setting) records the largest
request it receives; every registered method indexes a corpus whose contexts would overflow that
window at the methods' default budgets (local contexts of 12,000 tokens, 1,200-token extraction
packs, 8,000-token answer contexts), then answers in every mode, and GORAG classifies a long
text. Prompt builders must pack to fit: the model refuses any request that would not leave room
for its answer (PromptTooLongError), so a builder that does not fit fails this test."""

from __future__ import annotations

from typing import Any

import pytest

from rhizome.core.models.budget import MIN_REPLY_TOKENS, prompt_tokens
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.types import Document
from rhizome.tools.testing import index_class, modes_of, registered_methods

WINDOW = 4096

PEOPLE = ["Mira Holt", "Osric Vane", "Petra Lind", "Hanna Crest", "Tomas Reed", "Ida Quell", "Bram Oster", "Lena Frey"]
PLACES = ["Tarn Harbour", "Gull Island", "Salt Guild", "Sea School", "Fish Market", "North Reef"]


def corpus(n: int = 40) -> list[Document]:
    """Long documents whose names recur across all of them: big communities, long descriptions,
    and local contexts far larger than the window."""
    docs = []
    for i in range(n):
        sentences = [
            f"{PEOPLE[(i + j) % len(PEOPLE)]} met {PEOPLE[(i + 2 * j + 1) % len(PEOPLE)]} at {PLACES[(i + j) % len(PLACES)]} "
            f"in the year {1900 + i + j}, and they spoke about the {PLACES[(i * j + 2) % len(PLACES)]} accounts at length."
            for j in range(12)
        ]
        docs.append(Document(id=f"doc{i:02d}", text=" ".join(sentences), metadata={"title": f"Record {i}"}))
    return docs


class Recording(FakeChatModel):
    def __init__(self, window: int = WINDOW) -> None:
        super().__init__(SchemaResponder(max_items=6), name="fake:budget", context_window=window)
        self.largest = 0

    async def _achat(self, messages: Any, json_schema: Any) -> Any:
        self.largest = max(self.largest, prompt_tokens(messages))
        return await super()._achat(messages, json_schema)


def _method(name: str) -> Any:
    # RAPTOR clusters this corpus's leaves with UMAP, whose functions numba compiles on first use
    # in a process (tens of seconds): run with the suite's other UMAP test, in one worker
    return pytest.param(name, marks=pytest.mark.xdist_group("umap")) if name == "raptor" else name


def test_the_sweep_covers_every_method_that_calls_a_model():
    assert {"graphrag", "lightrag", "hipporag", "raptor", "archrag"} <= set(METHODS_WITH_A_MODEL)


METHODS_WITH_A_MODEL = [m for m in registered_methods() if index_class(m).uses_llm]


@pytest.mark.parametrize("method", [_method(m) for m in METHODS_WITH_A_MODEL])
def test_every_prompt_of_every_method_fits_a_small_context_window(method):
    cls = index_class(method)
    model = Recording()
    index = cls(HashingEmbedder(), llm=model, cache=False)
    report = index.insert(corpus())
    assert not report.failed, (method, report.failed)
    for mode in modes_of(method):
        answer = index.answer("What did Mira Holt and Osric Vane discuss at Tarn Harbour?", mode=mode, k=10)
        assert answer.text, (method, mode)
    assert model.largest + MIN_REPLY_TOKENS <= WINDOW
    assert model.largest > WINDOW // 2, (method, model.largest)  # the sweep did press on the window


def test_gorag_cuts_a_long_text_to_the_window():
    from rhizome.gorag import GORAGClassifier

    window = 1024  # below GORAG's own text budget, so the window decides
    model = Recording(window)
    classifier = GORAGClassifier(model)
    classifier.fit_round(["Mira Holt sailed to Gull Island.", "The Salt Guild set fish prices."], ["travel", "trade"])
    long_text = " ".join(doc.text for doc in corpus(6))  # about 6,000 tokens
    assert classifier.classify(long_text).label in {"travel", "trade"}
    assert window // 2 < model.largest and model.largest + MIN_REPLY_TOKENS <= window
