"""LightRAG summary calls (issue 21): an insert call summarises each profile at most once, however
many of its batches touch it, and a later insert summarises a profile again only when the
fragments added since its summary grow past the threshold."""

from __future__ import annotations

from _lightrag_fakes import fake_model

from rhizome.core import Document
from rhizome.lightrag import LightRAGIndex


def documents(start: int, n: int) -> list[Document]:
    return [Document(id=f"d{i}", text=f"Ada Lovelace met Person{chr(65 + i % 26)}{chr(65 + i // 26)} in Town{i}.") for i in range(start, start + n)]


def summaries(responder) -> int:
    return responder.kinds.count("summary")


def test_one_insert_call_summarises_a_profile_once_across_its_batches():
    model, responder = fake_model()
    index = LightRAGIndex(llm=model, batch_size=2, resolution=False, force_summary_fragments=4, pack_tokens=0)
    report = index.insert(documents(0, 12))  # six batches, each adding two fragments about Ada Lovelace
    ada = index.entity("Ada Lovelace")
    assert len(ada.descriptions) == 12
    assert ada.description.startswith("Summary ")  # summarised, covering every fragment
    assert ada.metadata["summarised"] == 12
    assert summaries(responder) == 1 == report.stats["summaries_written"]
    assert not index.entity_graph.pending.keys() and not index.needs_refresh
    assert "ada lovelace" in set(index.store.collection(index.ENTITY_COLLECTION).ids())  # embedded once summarised


def test_a_later_insert_summarises_again_only_past_the_threshold():
    model, responder = fake_model()
    index = LightRAGIndex(llm=model, resolution=False, force_summary_fragments=4, pack_tokens=0)
    index.insert(documents(0, 8))
    first = index.entity("Ada Lovelace").description
    assert summaries(responder) == 1
    index.insert(documents(8, 2))  # two new fragments: the summary and two notes stay under four
    ada = index.entity("Ada Lovelace")
    assert summaries(responder) == 1
    assert ada.description.startswith(first) and ada.description.count("\n") == 2
    index.insert(documents(10, 1))  # the summary and three new notes reach four: summarised again
    ada = index.entity("Ada Lovelace")
    assert summaries(responder) == 2
    assert ada.description.startswith("Summary ") and ada.description != first
    assert ada.metadata["summarised"] == 11


def test_a_waiting_profile_keeps_its_value_until_the_call_summarises_it(monkeypatch):
    """A profile that began waiting for its summary in one batch is not joined again in each
    later batch of the call (it can only stay past the threshold): it keeps the value it had
    when it began waiting, and the summary at the call's end covers every fragment."""
    model, responder = fake_model()
    index = LightRAGIndex(llm=model, batch_size=2, resolution=False, force_summary_fragments=4, pack_tokens=0)

    async def cut_short(*args, **kwargs):  # the call ends before its summaries, as if interrupted
        return None

    monkeypatch.setattr(index, "_after_change", cut_short)
    index.insert(documents(0, 12))  # Ada reaches four fragments in the second of six batches
    ada = index.entity("Ada Lovelace")
    assert len(ada.descriptions) == 12
    assert ada.description == "\n".join(ada.descriptions[:4])
    assert index.entity_graph.pending.keys() == ["e:ada lovelace"]
    monkeypatch.undo()
    index.insert(documents(12, 1))
    ada = index.entity("Ada Lovelace")
    assert ada.description.startswith("Summary ") and ada.metadata["summarised"] == 13
    assert summaries(responder) == 1 and not index.entity_graph.pending.keys()
