from __future__ import annotations

from pydantic import BaseModel, Field

from rhizome.core.models.counting import CountingChatModel
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.text import count_tokens


class Item(BaseModel):
    name: str
    score: int = Field(ge=1, le=10)


class Listing(BaseModel):
    items: list[Item]
    summary: str


async def test_counts_every_request_including_retries_with_tiktoken():
    inner = FakeChatModel(["broken", {"items": [], "summary": "ok"}])
    counting = CountingChatModel(inner, keep_log=True)
    result = await counting.acomplete_json("list things", Listing, system="be brief")
    assert result.summary == "ok"
    assert counting.usage.calls == 2 and counting.usage.retries == 1
    assert counting.log[0]["prompt_tokens"] == count_tokens("be brief") + count_tokens("list things")
    assert counting.log[0]["completion_tokens"] == count_tokens("broken")
    assert counting.usage.prompt_tokens == sum(e["prompt_tokens"] for e in counting.log)


class PlainModel:
    """A chat model that only has the protocol's public methods."""

    name = "plain"

    async def acomplete(self, prompt, *, system=None):
        from rhizome.core.protocols import Completion

        return Completion(text=f"echo {len(prompt)}")


async def test_wraps_models_that_only_implement_the_protocol():
    counting = CountingChatModel(PlainModel())
    completion = await counting.acomplete("hello there")
    assert completion.text == "echo 11"
    assert counting.usage.calls == 1 and counting.usage.prompt_tokens == count_tokens("hello there")
    counting.reset()
    assert counting.usage.calls == 0


async def test_schema_responder_gives_valid_instances_built_from_the_passage():
    model = FakeChatModel(SchemaResponder(max_items=3))
    prompt = 'Extract things.\n\nPassage:\n"""\nIlse Varn mapped Oskel for the Moot.\n"""'
    listing = await model.acomplete_json(prompt, Listing)
    assert len(listing.items) == 3
    assert {i.name for i in listing.items} <= {"Ilse", "Varn", "Oskel", "Moot"}
    assert all(1 <= i.score <= 10 for i in listing.items)
    assert model.usage.retries == 0
