"""A chat's last question made to stand on its own (rhizome.core.retrieval.conversation)."""

from __future__ import annotations

import asyncio

import pytest

from rhizome.core.errors import InvalidInputError
from rhizome.core.models.fake import FakeChatModel
from rhizome.core.retrieval.conversation import astandalone

CHAT = [("system", "Be brief."), ("user", "Tell me about the Salt Guild."),
        ("assistant", "The Salt Guild trades salt from Tarn Harbour."), ("user", "Who founded it?")]


def standalone(turns, llm=None, **options):
    return asyncio.run(astandalone(turns, llm, **options))


def test_a_first_question_goes_as_it_is_with_no_model_call():
    llm = FakeChatModel(["never asked"])
    assert standalone([("system", "Be brief."), ("user", "Who founded the Salt Guild?")], llm) == "Who founded the Salt Guild?"
    assert standalone([("user", "Hello"), ("assistant", "Hi."), ("user", "   ")], llm) == "Hello"  # an empty last turn is no question
    assert llm.requests == []


def test_offline_the_previous_question_is_searched_for_with_the_last():
    assert standalone(CHAT) == "Tell me about the Salt Guild.\nWho founded it?"


def test_the_model_rewrites_the_follow_up_from_the_conversation_newest_turns_first():
    llm = FakeChatModel(['"Who founded the Salt Guild?"'])
    assert standalone(CHAT, llm) == "Who founded the Salt Guild?"
    prompt = llm.requests[0][-1]["content"]
    assert "User: Tell me about the Salt Guild.\nAssistant: The Salt Guild trades salt" in prompt
    assert "Last question: Who founded it?" in prompt and "Be brief." not in prompt  # system turns are not conversation
    assert standalone(CHAT, FakeChatModel(["  "])) == "Who founded it?"  # an empty rewrite: the question itself


def test_a_long_conversation_keeps_its_newest_turns_within_the_window():
    old = [("user", f"Question {i} about the harbour's {i}th ferry? " * 20) for i in range(30)]
    llm = FakeChatModel(["Who runs the ferry to Gull Island?"], context_window=1024)
    standalone([*old, ("assistant", "The ferry crosses to Gull Island."), ("user", "Who runs it?")], llm, max_history_tokens=5000)
    prompt = llm.requests[0][-1]["content"]
    assert "Assistant: The ferry crosses to Gull Island." in prompt and "Question 0 " not in prompt


def test_a_conversation_without_a_user_question_is_refused():
    with pytest.raises(InvalidInputError, match="no user message with text"):
        standalone([("system", "Be brief."), ("assistant", "Hi.")])
