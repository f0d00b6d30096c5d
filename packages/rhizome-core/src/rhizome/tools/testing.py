"""The conformance kit: what every Rhizome method must do, checked the same way for each.

Like ``langchain-tests``, it is a pytest base class. The project's own suite runs it over every
method registered under the ``rhizome.methods`` entry points (``tests/conformance``), so a new
method is checked as soon as it is installed; a method package may also subclass it in its own
tests::

    import pytest
    from rhizome.tools.testing import IndexConformance

    class TestMyMethod(IndexConformance):
        @pytest.fixture
        def method(self) -> str:
            return "my-method"

Each test builds small indexes from :data:`CORPUS` (offline: the hashing embedder, and a fake
chat model that answers every JSON schema, for methods that use one) and checks, in every mode:

- the retrieval contract: ``k`` hits (exactly ``k`` when the index holds that many passages),
  ordered by the mode's score (``raw_score``), each citing stored passages; a bad query or
  ``k`` is a typed error;
- scores: every hit's ``score`` is the kernel's relevance (the query's cosine to the nearest
  passage it cites, in ``[0, 1]``); ``score_threshold`` leaves out the hits below it and
  keeps the order of the rest; a threshold outside ``[0, 1]`` is a ``ConfigurationError``;
- insert and delete: a deleted document is never cited again, re-inserting restores the results,
  an unchanged document costs nothing;
- reopening: the same results after ``close()`` and ``load()``, read-only too, and right after
  ``persist()`` in the same process;
- resuming: a build interrupted by a failing model finishes on the next call, ends equal to a
  clean build, and pays no model call twice;
- failure isolation: a document whose model answers stay invalid is recorded as failed, with
  the reason, while the others are stored; inserting again retries only it (for a method whose
  model only writes whole-index structure, ``llm_per_document = False``: every document is
  stored and the change is reported unfinished until a healthy model finishes it); a server
  that times out or goes away stops the insert of documents, no request sent twice, and a
  re-run stores everything;
- concurrency: one retriever serving many threads and event loops gives the serial results and
  keeps no per-call state; inserts from two threads both land; queries in one thread while
  another inserts and deletes fail nothing and end on the results of the final state, and so
  do the queries after an insert committed at each place a query reads a table's generation;
  a read-only reader sees documents committed after it opened, also when it opened the index
  empty;
- metadata: every hit carries the metadata of the documents it cites, and metadata filters
  (equality, ``$in``, ``$gt``, ``$or`` with ``$ne`` and ``$lte``, on the retriever or per
  call) leave only hits — and context — whose
  documents match, still ``k`` of them when the matching documents hold that many passages;
  a filter nothing matches gives no hits and says why; a filter that cannot be applied raises;
- rerankers: ``as_retriever(reranker=..., rerank_candidates=6)`` with a fake reranker (sync and
  async) returns ``k`` hits, the candidates it scores highest in its order, each with the
  candidate's provenance and text and its search score kept; a bad reranker is a
  ``ConfigurationError``; a mode that reranks inside its own search (spRAG's segments) still
  returns ``k`` hits with provenance.

Where the indexes live is the kit's :meth:`IndexConformance.place` (a test's named index: a
directory under ``tmp_path``) and :meth:`IndexConformance.scratch` (an index built without a
location: memory); a storage backend's run overrides both (``tests/postgres`` gives each index a
schema of its own on a PostgreSQL server).

It needs pytest (a test dependency, not a runtime one).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from rhizome.core.errors import (
    ConfigurationError,
    InvalidInputError,
    ModelError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from rhizome.core.models.embeddings import HashingEmbedder
from rhizome.core.models.fake import FakeChatModel, SchemaResponder
from rhizome.core.protocols import Completion
from rhizome.core.store.storage import method_registry
from rhizome.core.types import Document, Hit

CORPUS = [
    Document(id="harbour", text="Captain Mira Holt runs the Tarn Harbour ferry. The ferry crosses to Gull Island twice a day.", metadata={"title": "Tarn Harbour"}),
    Document(id="island", text="Gull Island has a lighthouse kept by Osric Vane. Osric Vane learned the trade from Mira Holt.", metadata={"title": "Gull Island"}),
    Document(id="guild", text="The Salt Guild of Tarn buys fish from the island boats. Petra Lind chairs the Salt Guild.", metadata={"title": "Salt Guild"}),
    Document(id="school", text="Petra Lind founded the Tarn Sea School, where Osric Vane teaches navigation.", metadata={"title": "Sea School"}),
    Document(id="storm", text="The Great Storm of 1911 sank three boats of the Salt Guild near Gull Island.", metadata={"title": "Great Storm"}),
    Document(id="market", text="The Tarn fish market opens at dawn; the Salt Guild sets the day's prices there.", metadata={"title": "Fish Market"}),
    Document(id="chapel", text="A chapel on Gull Island remembers the sailors lost in the Great Storm.", metadata={"title": "Chapel"}),
    Document(id="survey", text="Hanna Crest mapped the reefs around Gull Island for the Tarn Sea School.", metadata={"title": "Reef Survey"}),
]
"""Eight short documents about a fictional harbour town, written for this kit: names that
recur across documents, so every method builds a connected graph from them."""

QUERIES = ["Who keeps the lighthouse on Gull Island?", "What does the Salt Guild do?", "Who founded the Tarn Sea School?"]

SHELVES = {"harbour": ("north", 1901), "island": ("north", 1911), "guild": ("south", 1911), "school": ("south", 1920),
           "storm": ("north", 1911), "market": ("south", 1930), "chapel": ("north", 1920), "survey": ("south", 1901)}
"""Metadata the filter checks add to :data:`CORPUS`: a shelf and a year per document."""


def shelved() -> list[Document]:
    """:data:`CORPUS` with a ``shelf`` and a ``year`` in every document's metadata."""
    return [d.model_copy(update={"metadata": {**d.metadata, "shelf": SHELVES[d.id][0], "year": SHELVES[d.id][1]}}) for d in CORPUS]


def registered_methods() -> list[str]:
    """Every installed method (the ``rhizome.methods`` entry points), sorted."""
    return sorted(method_registry())


def index_class(method: Any) -> Any:
    """The index class of a registered method name (or the class itself)."""
    return method_registry()[method].load() if isinstance(method, str) else method


def modes_of(method: Any) -> tuple[str | None, ...]:
    return tuple(index_class(method).modes) or (None,)


class FailingChatModel(FakeChatModel):
    """The schema-answering fake, failing like a server that goes away after ``fail_after``
    calls (``None``: never): every later request is recorded in ``requests`` and raises
    ``error`` (by default :class:`ModelUnavailableError`)."""

    def __init__(self, fail_after: int | None = None, error: type[ModelError] = ModelUnavailableError) -> None:
        super().__init__(SchemaResponder(), name="fake:conformance")
        self.fail_after = fail_after
        self.error = error

    async def _achat(self, messages: Any, json_schema: Any) -> Any:
        if self.fail_after is not None and self.usage.calls >= self.fail_after:
            self.requests.append([dict(m) for m in messages])
            raise self.error("the fake model server went away")
        return await super()._achat(messages, json_schema)


class PoisonedChatModel(FailingChatModel):
    """The schema-answering fake, answering every prompt that contains ``poison`` with text
    that is not JSON, however often it is asked (one retry, to keep the test short)."""

    def __init__(self, poison: str) -> None:
        super().__init__()
        self.poison = poison
        self.max_retries = 1

    async def _achat(self, messages: Any, json_schema: Any) -> Any:
        if json_schema is not None and any(self.poison in m["content"] for m in messages):
            return Completion(text="Sorry, I cannot answer that in JSON.")
        return await super()._achat(messages, json_schema)


def signature(hits: list[Hit]) -> list[tuple[str, str]]:
    return [(h.kind, h.id) for h in hits]


class IndexConformance:
    """The kit (see the module docstring). Provide a ``method`` fixture: a registered method's
    name, or an index class (a method under development, not installed yet)."""

    @pytest.fixture
    def method(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError("provide a `method` fixture naming the method under test")

    # -- where the indexes live ----------------------------------------------------------------
    def place(self, tmp_path: Path, name: str) -> Any:
        """The location of a test's index called ``name``: a directory under ``tmp_path``. A
        storage backend's run of the kit returns its own (a new database schema)."""
        return tmp_path / name

    def scratch(self) -> Any:
        """Where :meth:`build` puts an index given no location: memory (``None``), or the
        backend's new location."""
        return None

    # -- building ------------------------------------------------------------------------------
    def settings(self, cls: Any) -> dict[str, Any]:
        """The settings every index of the kit is built with (those ``cls`` has). A method's own
        tests may override it, e.g. to build the structure its modes search on this small corpus."""
        return {"chunk_size": 200, "chunk_overlap": 20} if "chunk_size" in cls.config_class.model_fields else {}

    def embedder(self) -> Any:
        """The kit's embedder: the offline hashing embedder (overridable like :meth:`settings`)."""
        return HashingEmbedder()

    def build(self, method: Any, *, path: Any = None, llm: Any = "fake", documents: list[Document] = CORPUS, **options: Any) -> Any:
        cls = index_class(method)
        path = self.scratch() if path is None else path
        model = FailingChatModel() if llm == "fake" else llm
        index = cls(self.embedder(), llm=model if cls.uses_llm else None, path=path, **{**self.settings(cls), **options})
        self.__dict__.setdefault("_built", []).append(index)  # closed after the test, also if the insert raises
        if documents:
            index.insert(documents)
        return index

    @pytest.fixture(autouse=True)
    def _close_what_was_built(self) -> Iterator[None]:
        """Close every index :meth:`build` made once the test is done (closing again does
        nothing): an index a test leaves open would hold its store (a database connection, a
        writer lock) until the garbage collector found it."""
        yield
        for index in self.__dict__.pop("_built", []):
            index.close()

    @staticmethod
    def model(method: Any) -> Any:
        """A fresh fake chat model for a method that uses one (a fake cannot be rebuilt from
        its name, so reopening passes it again, as a user passes a framework model again)."""
        return FailingChatModel() if index_class(method).uses_llm else None

    def results(self, index: Any, k: int = 5) -> dict[Any, list[tuple[str, str]]]:
        return {(mode, q): signature(index.as_retriever(k=k, mode=mode).retrieve(q)) for mode in modes_of(type(index)) for q in QUERIES}

    # -- the retrieval contract ----------------------------------------------------------------
    def test_k_is_the_number_of_hits(self, method: Any) -> None:
        index = self.build(method)
        passages = len(index)
        for mode in modes_of(method):
            retriever = index.as_retriever(k=3, mode=mode)
            for query in QUERIES:
                assert len(retriever.retrieve(query)) == 3, (mode, query)
                for k in (1, 5, passages + 5):
                    hits = retriever.retrieve(query, k=k)
                    # fewer than k only when there is nothing left: hits that are runs of
                    # chunks (segments, passages) may cite every chunk in fewer than k hits
                    cited = {c for h in hits for c in h.provenance.chunk_ids}
                    assert len(hits) <= k and (len(hits) >= min(k, passages) or len(cited) >= passages), (mode, k)
                    assert [h.raw_score for h in hits] == sorted((h.raw_score for h in hits), reverse=True), mode
                    assert all(0.0 <= h.score <= 1.0 and "raw_score" in h.metadata for h in hits), mode

    def test_scores_are_the_relevance_and_a_threshold_keeps_the_order(self, method: Any) -> None:
        # every mode's hits carry the one relevance (the query's cosine to the nearest passage
        # a hit cites, in [0, 1]); a score_threshold leaves out those below it, order kept
        index = self.build(method)
        for mode in modes_of(method):
            for query in QUERIES:
                result = index.as_retriever(k=4, mode=mode).search(query, context=False)
                vector = index.embedder.embed_query([query])[0]
                for hit in result.hits:
                    _, rows = index.store.collection(index.CHUNK_COLLECTION).present(hit.provenance.chunk_ids)
                    assert hit.score == pytest.approx(min(1.0, max(0.0, float((rows @ vector).max()))), abs=1e-5), (mode, hit.id)
                if query != QUERIES[0]:
                    continue
                threshold = sorted(h.score for h in result.hits)[len(result.hits) // 2]
                kept = index.as_retriever(k=4, mode=mode, score_threshold=threshold).search(query, context=False)
                assert signature(kept.hits) == [(h.kind, h.id) for h in result.hits if h.score >= threshold], (mode, query)
                if len(kept.hits) < len(result.hits):
                    assert any("score_threshold" in note for note in kept.notes), (mode, kept.notes)
        for bad in (1.5, -0.1, "high", True):
            with pytest.raises(ConfigurationError, match="score_threshold"):
                index.as_retriever(score_threshold=bad)

    def test_retrieve_returns_the_hits_of_search(self, method: Any) -> None:
        # a mode may skip its context when only the hits are asked for; the hits stay the same
        index = self.build(method)
        for mode in modes_of(method):
            retriever = index.as_retriever(k=4, mode=mode)
            for query in QUERIES:
                assert signature(retriever.retrieve(query)) == signature(retriever.search(query).hits), (mode, query)

    def test_every_hit_cites_stored_passages(self, method: Any) -> None:
        index = self.build(method)
        for mode in modes_of(method):
            for query in QUERIES:
                result = index.as_retriever(k=5, mode=mode).search(query)
                for hit in [*result.hits, *result.context]:
                    cited = hit.provenance
                    assert cited.document_ids and cited.chunk_ids, (mode, hit.kind, hit.id)
                    stored = index.store.chunks(cited.chunk_ids)
                    assert set(stored) == set(cited.chunk_ids), (mode, hit.id)
                    assert {c.document_id for c in stored.values()} == set(cited.document_ids)
                    for span in cited.spans:
                        chunk = stored[span.chunk_id]
                        assert chunk.start <= span.start <= span.end <= chunk.end
                assert result.mode == mode or mode is None
                assert "model_calls" in result.stats

    def test_bad_queries_get_typed_errors(self, method: Any) -> None:
        index = self.build(method, documents=CORPUS[:2])
        for mode in modes_of(method):
            retriever = index.as_retriever(mode=mode)
            for query, k in (("   ", 2), ("fine", 0), ("fine", -1)):
                with pytest.raises(InvalidInputError):
                    retriever.retrieve(query, k=k)

    # -- insert and delete ---------------------------------------------------------------------
    def test_insert_delete_round_trip(self, method: Any) -> None:
        index = self.build(method, documents=CORPUS[:-1])
        before = self.results(index)
        extra = index.insert(CORPUS)
        assert extra.inserted == [CORPUS[-1].id] and sorted(extra.skipped) == sorted(d.id for d in CORPUS[:-1])
        again = index.insert(CORPUS)
        assert not again.inserted and again.stats.get("model_calls", 0) == 0
        report = index.delete([CORPUS[-1].id, "nowhere"])
        assert report.deleted == [CORPUS[-1].id] and report.missing == ["nowhere"]
        for mode in modes_of(method):
            for query in QUERIES:
                result = index.as_retriever(k=8, mode=mode).search(query)
                for hit in [*result.hits, *result.context]:
                    assert CORPUS[-1].id not in hit.provenance.document_ids, (mode, hit.id)
        assert self.results(index) == before, "insert then delete must give back the index held before"

    # -- reopening -----------------------------------------------------------------------------
    def test_reopen_gives_the_same_results(self, method: Any, tmp_path: Path) -> None:
        where = self.place(tmp_path, "idx")
        index = self.build(method, path=where)
        before = self.results(index)
        index.close()
        cls = index_class(method)
        again = cls(path=where, llm=self.model(method))  # open-or-create
        assert self.results(again) == before
        again.close()
        reader = cls.load(where, readonly=True, llm=self.model(method))
        assert self.results(reader) == before
        reader.close()

    def test_persist_then_load_in_one_process(self, method: Any, tmp_path: Path) -> None:
        target = self.place(tmp_path, "copy")
        index = self.build(method)
        before = self.results(index)
        index.persist(target)
        loaded = index_class(method).load(target, llm=self.model(method))  # while the first object has it open
        assert self.results(loaded) == before
        loaded.close()
        index.close()

    # -- resuming ------------------------------------------------------------------------------
    def test_resume_after_an_interruption(self, method: Any, tmp_path: Path) -> None:
        where = self.place(tmp_path, "idx")
        clean_model = FailingChatModel()
        clean = self.build(method, llm=clean_model, cache=False, batch_size=2)
        full_price = clean_model.usage.calls  # the model calls of a whole build
        expected = self.results(clean)
        clean.close()
        cls = index_class(method)
        if not cls.uses_llm or full_price < 2:
            return  # nothing that a failing model could interrupt
        failing = FailingChatModel(fail_after=full_price // 2)
        with pytest.raises(ModelUnavailableError):
            self.build(method, llm=failing, path=where, batch_size=2)
        healthy = FailingChatModel()
        resumed = cls.load(where, llm=healthy, batch_size=2)
        resumed.insert(CORPUS)
        assert not resumed.needs_refresh
        assert failing.usage.calls + healthy.usage.calls <= full_price, "a model call was paid twice"
        assert self.results(resumed) == expected
        resumed.close()

    def test_a_failing_server_stops_the_insert_and_no_request_is_sent_twice(self, method: Any, tmp_path: Path) -> None:
        cls = index_class(method)
        if not cls.uses_llm or not cls.llm_per_document:  # whole-index work: left unfinished, as above
            return
        for error in (ModelTimeoutError, ModelUnavailableError):
            where = self.place(tmp_path, error.__name__.lower())  # a PostgreSQL schema name is lower case
            hung = FailingChatModel(fail_after=0, error=error)
            with pytest.raises(error):
                self.build(method, llm=hung, path=where, batch_size=4, cache=False)
            sent = [repr(r) for r in hung.requests]
            assert len(sent) == len(set(sent)), "a request the server failed was sent again"
            left = cls.load(where, llm=FailingChatModel(), readonly=True)
            statuses = left.store.statuses()
            left.close()
            # nothing is left "processing": the batch in flight waits for the re-run, with the reason
            assert statuses and {s.status for s in statuses} == {"pending"}, statuses
            assert any(s.error and error.__name__ in s.error for s in statuses), statuses
            healthy = FailingChatModel()
            again = cls.load(where, llm=healthy, batch_size=4, cache=False)
            again.insert(CORPUS)  # the documents were left for this re-run
            assert {s.status for s in again.store.statuses()} == {"done"} and not again.needs_refresh
            assert sorted(again.store.document_ids()) == sorted(d.id for d in CORPUS)
            again.close()

    def test_a_document_whose_answers_stay_invalid_fails_alone(self, method: Any, tmp_path: Path) -> None:
        where = self.place(tmp_path, "idx")
        cls = index_class(method)
        if not cls.uses_llm:
            return
        others = [d.id for d in CORPUS if d.id != "survey"]
        index = self.build(method, llm=PoisonedChatModel("Hanna Crest"), path=where, documents=[], batch_size=4)
        report = index.insert(CORPUS)  # only "survey" mentions Hanna Crest
        if not cls.llm_per_document:
            self._invalid_answers_leave_the_change_unfinished(index, report, tmp_path)
            return
        assert list(report.failed) == ["survey"] and "ModelOutputError" in report.failed["survey"]
        assert sorted(report.inserted) == sorted(others)
        statuses = {s.id: (s.status, s.error) for s in index.store.statuses()}
        assert statuses.pop("survey")[0] == "failed" and set(statuses.values()) == {("done", None)}
        for (_, question), hits in self.results(index).items():
            assert hits, question
        index.close()
        healthy = FailingChatModel()
        again = cls.load(where, llm=healthy, batch_size=4)
        report = again.insert(CORPUS)  # retries only what failed
        assert report.inserted == ["survey"] and sorted(report.skipped) == sorted(others) and not report.failed
        assert {s.status for s in again.store.statuses()} == {"done"}
        assert any("survey" in h.provenance.document_ids for h in again.as_retriever(k=8).retrieve("Who mapped the reefs, Hanna Crest?"))
        again.close()

    def _invalid_answers_leave_the_change_unfinished(self, index: Any, report: Any, tmp_path: Path) -> None:
        """The same check for a method whose model writes whole-index structure after a change:
        every document is stored, the change is reported unfinished with the reason, searches
        still answer, and the next call with a healthy model finishes it."""
        assert not report.failed and sorted(report.inserted) == sorted(d.id for d in CORPUS)
        assert {s.status for s in index.store.statuses()} == {"done"}
        if report.unfinished is None:  # no model call read the poisoned document
            assert not index.needs_refresh
            return
        assert "ModelOutputError" in report.unfinished and index.needs_refresh
        for (_, question), hits in self.results(index).items():
            assert hits, question
        index.close()
        healthy = FailingChatModel()
        again = type(index).load(tmp_path / "idx", llm=healthy, batch_size=4)
        assert again.needs_refresh
        again.refresh()
        assert not again.needs_refresh and healthy.usage.calls >= 1
        assert any("survey" in h.provenance.document_ids for h in again.as_retriever(k=40).retrieve("Who mapped the reefs, Hanna Crest?"))
        again.close()

    # -- metadata and filters --------------------------------------------------------------------
    def test_hits_carry_the_metadata_of_their_documents(self, method: Any) -> None:
        index = self.build(method, documents=shelved())
        for mode in modes_of(method):
            for query in QUERIES:
                result = index.as_retriever(k=5, mode=mode).search(query)
                for hit in [*result.hits, *result.context]:
                    shelves = {SHELVES[d][0] for d in hit.provenance.document_ids}
                    if len(shelves) == 1:
                        assert hit.metadata.get("shelf") == shelves.pop(), (mode, hit.kind, hit.id)
                    else:
                        assert "shelf" not in hit.metadata, (mode, hit.kind, hit.id)
                    if len(hit.provenance.document_ids) == 1:
                        assert hit.metadata.get("year") == SHELVES[hit.provenance.document_ids[0]][1], (mode, hit.id)

    def test_filters_leave_only_matching_documents(self, method: Any) -> None:
        index = self.build(method, documents=shelved())
        south = {d for d, (shelf, _) in SHELVES.items() if shelf == "south"}
        years = {d for d, (_, year) in SHELVES.items() if year in (1911, 1920)}
        for mode in modes_of(method):
            for wanted, allowed in (({"shelf": "south"}, south), ({"year": {"$in": ["1911", 1920]}}, years),
                                    ({"shelf": {"$eq": "south"}, "year": 1901}, {"survey"}),
                                    ({"year": {"$gt": 1911}}, {d for d, (_, year) in SHELVES.items() if year > 1911}),
                                    ({"$or": [{"shelf": {"$ne": "north"}}, {"year": {"$lte": "1901"}}]}, south | {"harbour"})):
                retriever = index.as_retriever(k=3, mode=mode, filter=wanted)
                passages = len(index.store.chunk_ids(sorted(allowed)))
                for query in QUERIES:
                    result = retriever.search(query)
                    cited = {c for h in result.hits for c in h.provenance.chunk_ids}
                    assert len(result.hits) <= 3 and (len(result.hits) >= min(3, passages) or len(cited) >= passages), (mode, wanted, query)
                    for hit in [*result.hits, *result.context]:
                        assert set(hit.provenance.document_ids) <= allowed, (mode, wanted, hit.kind, hit.id)
                    per_call = index.as_retriever(k=3, mode=mode).retrieve(query, filter=wanted)
                    assert signature(per_call) == signature(result.hits), (mode, wanted, query)
            nothing = index.as_retriever(k=3, mode=mode).search(QUERIES[0], filter={"shelf": "west"})
            assert nothing.hits == [] and "no stored document matches" in nothing.notes[0], mode
            for bad in ({"shelf": {"$regex": "s.*"}}, {"year": {"$gt": ["1900"]}}, {"shelve": "south"}):
                with pytest.raises(InvalidInputError):
                    index.as_retriever(k=3, mode=mode, filter=bad)
                with pytest.raises(InvalidInputError):
                    index.as_retriever(k=3, mode=mode).retrieve(QUERIES[0], filter=bad)
        answer = index.answer(QUERIES[1], filter={"shelf": "south"})
        assert all(set(h.provenance.document_ids) <= south for h in answer.citations)

    # -- rerankers ------------------------------------------------------------------------------
    def test_a_reranker_orders_and_cuts_the_candidates_keeping_provenance(self, method: Any) -> None:
        index = self.build(method)
        seen: list[int] = []

        def shortest_first(query: str, texts: list[str]) -> list[float]:  # a fake reranker
            seen.append(len(texts))
            return [-float(len(t)) for t in texts]

        async def shortest_first_async(query: str, texts: list[str]) -> list[float]:
            return shortest_first(query, texts)

        for mode in modes_of(method):
            for reranker in (shortest_first, shortest_first_async):
                seen.clear()
                retriever = index.as_retriever(k=3, mode=mode, reranker=reranker, rerank_candidates=6)
                for query in QUERIES:
                    hits = retriever.retrieve(query)
                    assert len(hits) == 3 and seen, (mode, query)
                    if retriever.reranks_itself:  # the mode reranked its own candidates
                        assert all(h.provenance.chunk_ids for h in hits), mode
                        continue
                    candidates = index.as_retriever(k=6, mode=mode).retrieve(query)
                    assert seen[-1] == len(candidates) == 6, (mode, seen)
                    best = sorted(candidates, key=lambda h: len(h.text))[:3]  # stable: ties keep the search's order
                    assert [h.id for h in hits] == [h.id for h in best], (mode, query)
                    by_id = {h.id: h for h in candidates}
                    for hit in hits:
                        before = by_id[hit.id]
                        assert hit.provenance == before.provenance and hit.text == before.text and hit.kind == before.kind
                        assert hit.raw_score == -len(hit.text) and hit.metadata["retrieval_score"] == before.raw_score
                        assert hit.score == before.score  # the relevance does not depend on the ranking
        for bad in (lambda query, texts: [1.0], "cross-encoder"):
            with pytest.raises(ConfigurationError):
                index.as_retriever(k=3, reranker=bad).retrieve(QUERIES[0])
        with pytest.raises(ConfigurationError):
            index.as_retriever(k=3, reranker=shortest_first, rerank_candidates=0)

    # -- concurrency ---------------------------------------------------------------------------
    def test_one_retriever_serves_threads_and_loops(self, method: Any) -> None:
        index = self.build(method)
        for mode in modes_of(method):
            retriever = index.as_retriever(k=4, mode=mode)
            state = _state(retriever)
            serial = {q: signature(retriever.retrieve(q)) for q in QUERIES}
            with ThreadPoolExecutor(max_workers=6) as pool:
                threaded = list(pool.map(lambda q, r=retriever: (q, signature(r.retrieve(q))), QUERIES * 4))
            assert all(serial[q] == hits for q, hits in threaded), mode

            async def together(r: Any) -> list[list[Hit]]:
                return list(await asyncio.gather(*(r.aretrieve(q) for q in QUERIES * 2)))

            gathered = asyncio.run(together(retriever))
            assert [signature(h) for h in gathered] == [serial[q] for q in QUERIES * 2], mode
            assert _state(retriever) == state, f"{mode}: per-call state"

    def test_inserts_from_two_threads_both_land(self, method: Any) -> None:
        index = self.build(method, documents=[])
        errors: list[BaseException] = []

        def insert(documents: list[Document]) -> None:
            try:
                index.insert(documents)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        halves = (CORPUS[::2], CORPUS[1::2])
        threads = [threading.Thread(target=insert, args=(half,)) for half in halves]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        # nothing lost: equal to the two inserts made one after the other, in the order they
        # landed (an insert is one batch; a model may see a batch's chunks together)
        order = list(dict.fromkeys(c.rsplit(":", 1)[0] for c in index.store.chunk_ids()))
        assert sorted(order) == sorted(d.id for d in CORPUS)
        first, second = halves if order[0] in {d.id for d in halves[0]} else halves[::-1]
        serial = self.build(method, documents=first)
        serial.insert(second)
        assert self.results(index) == self.results(serial)

    def test_queries_while_another_thread_writes(self, method: Any) -> None:
        index = self.build(method, documents=CORPUS[:4])
        before = self.results(index)
        done = threading.Event()
        errors: list[BaseException] = []

        def write() -> None:
            try:
                for _ in range(2):
                    index.insert(CORPUS[4:])
                    index.delete([d.id for d in CORPUS[4:]])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
            finally:
                done.set()

        writer = threading.Thread(target=write)
        writer.start()
        queried = 0
        while not done.is_set() or not queried:
            for mode in modes_of(method):
                for query in QUERIES:
                    try:
                        hits = index.as_retriever(k=3, mode=mode).retrieve(query)
                    except BaseException as exc:  # pragma: no cover - reported below
                        errors.append(exc)
                        done.set()
                        break
                    assert len(hits) <= 3, mode
                    queried += 1
        writer.join()
        assert not errors, errors[0]
        assert self.results(index) == before

    def test_a_write_committed_during_a_query_is_seen_by_the_next(self, method: Any, request: pytest.FixtureRequest) -> None:
        # What a query caches from the records (a graph, a matrix) is keyed by the generations
        # of the tables it read. The previous test leaves the timing to the threads; this one
        # commits an insert at each place in turn where one query reads a generation, and the
        # queries after it must give the results of the final records. A place is the innermost
        # four frames of the call stack at the read (the read, through the store's helpers, up
        # to the cache it keys); with pytest's ``--full`` (where the suite defines it), the whole
        # call stack, which repeats those places under every caller (GraphRAG's DRIFT: 94 places
        # instead of 21). By default a place is tested under the first mode that reaches it: a
        # later mode reading through the same four frames reads the same cache (on an index in
        # memory LightRAG's five modes share four places; GraphRAG's 33 are 22, 43 on
        # PostgreSQL, where a search also reads generations to know its collections); ``--full``
        # tests every mode's own.
        full = request.config.getoption("full", default=False)
        frames = None if full else 4
        tested: set[tuple[Any, ...]] | None = None if full else set()
        serial = self.build(method, documents=CORPUS[:4])
        serial.insert(CORPUS[4:])
        want = self.results(serial)
        serial.close()
        for mode in modes_of(method):
            def query(index: Any, mode: Any = mode) -> None:
                index.as_retriever(k=3, mode=mode).retrieve(QUERIES[0])

            # counted on an index as new as each case's: an index an earlier query warmed
            # skips reads, and the ordinals would name other places
            probe = self.build(method, documents=CORPUS[:4])
            reads = _generation_reads(probe, query, frames, tested)
            probe.close()
            for at in reads:
                index = self.build(method, documents=CORPUS[:4])
                _insert_at_generation_read(index, at, query)
                assert self.results(index) == want, (mode, at)
                index.close()  # on a server, an open index holds a connection

    def test_reader_sees_documents_committed_after_it_opened(self, method: Any, tmp_path: Path) -> None:
        where = self.place(tmp_path, "idx")
        writer = self.build(method, path=where, documents=CORPUS[:4])
        reader = index_class(method).load(where, readonly=True, llm=self.model(method))
        seen = {d for h in reader.as_retriever(k=20).retrieve("Great Storm chapel sailors") for d in h.provenance.document_ids}
        assert not {"storm", "chapel"} & seen
        writer.insert(CORPUS[4:])
        cited = {d for h in reader.as_retriever(k=20).retrieve("Great Storm chapel sailors") for d in h.provenance.document_ids}
        assert {"storm", "chapel"} & cited, "the reader does not see the new documents"
        reader.close()
        writer.close()

    def test_reader_of_an_empty_index_sees_the_first_documents(self, method: Any, tmp_path: Path) -> None:
        where = self.place(tmp_path, "idx")
        writer = self.build(method, path=where, documents=[])
        reader = index_class(method).load(where, readonly=True, llm=self.model(method))
        assert reader.as_retriever(k=3).retrieve("Great Storm chapel sailors") == []
        writer.insert(CORPUS)
        cited = {d for h in reader.as_retriever(k=20).retrieve("Great Storm chapel sailors") for d in h.provenance.document_ids}
        assert {"storm", "chapel"} & cited, "a reader that opened the empty index never sees a vector"
        reader.close()
        writer.close()


def _state(obj: Any) -> dict[str, Any]:
    """An object's attributes: plain values as they are, objects by identity."""
    plain = (int, float, str, bool, bytes, tuple, frozenset, type(None))
    return {k: v if isinstance(v, plain) else id(v) for k, v in vars(obj).items()}


def _on_generation_reads(index: Any, query: Callable[[Any], None], hook: Callable[[int], None]) -> int:
    """Run ``query`` on ``index`` with ``hook(n)`` called just before the ``n``-th generation
    read of its store; the number of reads."""
    store, reads = index.store, [0]

    def generation(name: str) -> int:
        reads[0] += 1
        hook(reads[0])
        return type(store).generation(store, name)

    store.generation = generation
    try:
        query(index)
    finally:
        del store.generation
    return reads[0]


def _generation_reads(index: Any, query: Callable[[Any], None], frames: int | None = None,
                      tested: set[tuple[Any, ...]] | None = None) -> list[int]:
    """The generation reads of ``index``'s store that ``query`` makes, as their ordinals (1 for
    the first), one for each place in the code that reads (the call stack, down to the
    instruction, from the caller of the store's ``generation`` outwards; only its innermost
    ``frames`` frames when given): the first time it does, so a loop reading again from the
    same place is not counted again. Places in ``tested`` are left out, and those returned are
    added to it."""
    first: dict[tuple[Any, ...], int] = {}

    def place(n: int) -> None:
        stack: list[tuple[Any, int]] = []
        frame: FrameType | None = sys._getframe(2)  # past this function and the store's patched generation()
        while frame is not None and (frames is None or len(stack) < frames):
            stack.append((frame.f_code, frame.f_lasti))
            frame = frame.f_back
        first.setdefault(tuple(stack), n)

    _on_generation_reads(index, query, place)
    if tested is not None:
        first = {at: n for at, n in first.items() if at not in tested}
        tested.update(first)
    return sorted(first.values())


def _insert_at_generation_read(index: Any, at: int, query: Callable[[Any], None]) -> None:
    """Run ``query`` on ``index`` with :data:`CORPUS`\\ ``[4:]`` inserted (by another thread,
    as a writer would) just before the ``at``-th generation read of its store."""
    errors: list[BaseException] = []

    def insert() -> None:
        try:
            index.insert(CORPUS[4:])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def hook(n: int) -> None:
        if n == at:
            writer = threading.Thread(target=insert)
            writer.start()
            writer.join()

    reads = _on_generation_reads(index, query, hook)
    assert not errors, errors[0]
    assert reads >= at, "the query read fewer generations than when they were counted"


def cases() -> Iterator[tuple[str, str | None]]:
    """Every registered ``(method, mode)``."""
    for method in registered_methods():
        for mode in modes_of(method):
            yield method, mode


__all__ = ["CORPUS", "QUERIES", "SHELVES", "shelved", "FailingChatModel", "IndexConformance", "cases", "modes_of", "registered_methods", "signature"]
