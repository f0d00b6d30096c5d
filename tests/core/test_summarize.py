from __future__ import annotations

import pytest

from rhizome.core.errors import ConfigurationError
from rhizome.core.graph.summarize import DescriptionSummarizer, extractive_summary
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.text import count_tokens


async def test_short_descriptions_are_joined_without_a_model_call():
    llm = FakeChatModel([{"summary": "unused"}])
    summarizer = DescriptionSummarizer(llm, max_tokens=100)
    text = await summarizer.asummarize("Oskel", ["An island.", "An island.", "Has a lighthouse."])
    assert text == "An island.\nHas a lighthouse."
    assert llm.usage.calls == 0


async def test_many_fragments_force_a_summary():
    llm = FakeChatModel([{"summary": "An island with a lighthouse."}])
    summarizer = DescriptionSummarizer(llm, max_tokens=100, min_fragments=3)
    text = await summarizer.asummarize("Oskel", ["A.", "B.", "C."])
    assert text == "An island with a lighthouse." and llm.usage.calls == 1
    assert "Subject: Oskel" in llm.requests[0][-1]["content"]


async def test_long_input_is_map_reduced_within_the_input_budget():
    fragments = [f"Fact number {i} about the harbour and its merchants, told at some length." for i in range(60)]
    llm = FakeChatModel(lambda messages, schema: {"summary": "partial summary of the harbour"})
    summarizer = DescriptionSummarizer(llm, max_tokens=50, max_input_tokens=200)
    text = await summarizer.asummarize("harbour", fragments)
    assert text == "partial summary of the harbour"
    assert llm.usage.calls > 2  # several groups, then a final reduce
    for request in llm.requests:
        notes = request[-1]["content"].split("Notes:\n", 1)[1].split("\n\nWrite", 1)[0]
        assert count_tokens(notes) <= 200 + 3 * notes.count("\n- ")


async def test_offline_summary_keeps_central_sentences_within_budget():
    fragments = [
        "Ilse Varn drew the map of 1702. She was a cartographer.",
        "The map of 1702 by Ilse Varn showed the Teeth reef.",
        "Varn's map of 1702 led to the Oskel lighthouse. Her husband was a harbourmaster.",
    ]
    summarizer = DescriptionSummarizer(None, max_tokens=30)
    text = await summarizer.asummarize("Ilse Varn", fragments)
    assert count_tokens(text) <= 30
    assert "map of 1702" in text


def test_extractive_summary_edge_cases():
    assert extractive_summary([], 50) == ""
    assert count_tokens(extractive_summary(["word " * 200], 20)) <= 20


def test_invalid_settings():
    with pytest.raises(ConfigurationError):
        DescriptionSummarizer(max_tokens=4)
    with pytest.raises(ConfigurationError):
        DescriptionSummarizer(min_fragments=1)
