from __future__ import annotations

from rhizome.core.models.fake import FakeChatModel
from rhizome.core.retrieval.answer import answer, build_context
from rhizome.core.types import Hit, Provenance

PASSAGE = (
    "# Ilse Varn, cartographer\n\nIlse Varn (1671-1739) was the daughter of a ropemaker. "
    "Ilse Varn drew the map of 1702. Varn later married the harbourmaster Tomas Hale."
)


def hit(text: str, doc: str = "d") -> Hit:
    return Hit(id=f"{doc}:0", text=text, score=1.0, provenance=Provenance(document_ids=[doc]))


def test_extractive_answer_weights_rare_question_words():
    result = answer("Who was Ilse Varn married to?", [hit(PASSAGE)])
    assert result.extractive and result.text == "Varn later married the harbourmaster Tomas Hale."
    assert result.citations[0].id == "d:0"


def test_extractive_answer_skips_headings_and_handles_no_hits():
    result = answer("Ilse Varn cartographer", [hit("# Ilse Varn, cartographer\n\nShe drew maps of the islands.")])
    assert not result.text.startswith("#")
    assert answer("anything", []).text == "No relevant passages were found."


def test_model_answer_cites_the_numbered_passages():
    llm = FakeChatModel([{"answer": "Tomas Hale.", "citations": [2, 9]}])
    hits = [hit("First passage.", "a"), hit("Varn married Tomas Hale.", "b")]
    result = answer("Who did Varn marry?", hits, llm)
    assert result.text == "Tomas Hale." and [h.id for h in result.citations] == ["b:0"]
    context, used = build_context(hits, max_tokens=1000)
    assert context.startswith("[1] (a)") and len(used) == 2
