"""The kernel's group writer: model or offline, the shared report shape, and the identity that
goes into every summary's stage digest."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rhizome.core import FakeChatModel, ModelOutputError
from rhizome.core.index.hierarchy import GroupInput, SummaryFields
from rhizome.core.index.writers import CommunityReport, GroupWriter
from rhizome.core.text import count_tokens
from rhizome.core.types import Community


class Reports(GroupWriter):
    system = "You write reports."

    def prompt(self, data: GroupInput | None) -> str:
        return f"Report on:\n{'' if data is None else data.text}"

    def offline(self, data: GroupInput, *context: Any) -> SummaryFields:
        return {"title": data.group.id, "summary": data.text, "context": list(context), "by": "offline"}


def _input() -> GroupInput:
    return GroupInput(group=Community(id="c1", level=0, entity_ids=["a"]), text="A knows B.")


async def test_without_a_model_the_offline_summary_is_written_with_the_context_it_is_given():
    fields = await Reports(None, max_tokens=100).awrite(_input(), "graph")
    assert fields == {"title": "c1", "summary": "A knows B.", "context": ["graph"], "by": "offline"}


async def test_a_model_report_is_validated_and_its_fields_kept():
    answer = {
        "title": " A and B ",
        "summary": "Two people.",
        "rating": "12",  # lenient: parsed and clamped to 10
        "rating_explanation": "They matter.",
        "findings": [{"summary": "A knows B", "explanation": "The data says so."}],
        "comment": "ignored",  # an unknown key costs no retry
    }
    model = FakeChatModel([{"title": "", "summary": "x", "rating": 3, "findings": []}, answer])
    fields = await Reports(model, max_tokens=100).awrite(_input())
    assert fields == {
        "title": "A and B",
        "summary": "Two people.",
        "rating": 10.0,
        "findings": [{"summary": "A knows B", "explanation": "The data says so."}],
        "metadata": {"rating_explanation": "They matter."},
        "by": "model",
    }
    assert model.usage.calls == 2 and model.usage.retries == 1  # the blank title was asked again
    assert model.requests[0][0] == {"role": "system", "content": "You write reports."}
    with pytest.raises(ModelOutputError):
        await Reports(FakeChatModel(["nonsense"], max_retries=1), max_tokens=100).awrite(_input())


def test_the_identity_names_the_writer_and_its_settings():
    """The identity is part of every stored summary's digest: GraphRAG's and ArchRAG's reports
    name their language, RAPTOR's summaries do not (changing this rewrites stored summaries)."""
    assert Reports(None, max_tokens=100).identity == ["offline", "", 100]
    assert Reports(None, max_tokens=2000, language="English").identity == ["offline", "", "English", 2000]
    model = FakeChatModel([])
    assert Reports(model, max_tokens=50).identity == ["model", model.name, 50]
    assert Reports.schema is CommunityReport


def test_the_input_budget_leaves_room_for_the_prompt_and_the_answer():
    assert Reports(None, max_tokens=100).input_budget(5000) == 5000  # no model: no window to fit
    small = SimpleNamespace(name="small", context_window=2048)
    budget = Reports(small, max_tokens=1000).input_budget(5000)
    assert 0 < budget < 2048 - 1000 - count_tokens(Reports.system + Reports(None, max_tokens=1).prompt(None))

    class Wordy(Reports):
        reply_margin = 200  # the answer's JSON around the summary

    assert Wordy(small, max_tokens=1000).input_budget(5000) < budget
