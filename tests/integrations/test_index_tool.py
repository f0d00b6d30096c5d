"""The steerable index tool: query + mode enum + k, a description written from the index,
passages as content and Documents (with provenance) as artifact."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from langchain_rhizome import create_index_tool, describe_index, document_to_hit, hit_to_document
from rhizome.core import ConfigurationError, InvalidInputError
from rhizome.graphrag import GraphRAGIndex
from rhizome.rag.cli import sample_corpus
from rhizome.tools import load_path
from tests.integrations._integration_toys import CORPUS, ToyIndex

QUERY = "Who led the closure of the Mire Banks?"


@pytest.fixture(scope="module")
def graph_index():
    index = GraphRAGIndex()  # offline: rule-based extraction, hashing embedder
    index.insert(load_path(sample_corpus()))
    yield index
    index.close()


def call(tool, **args) -> ToolMessage:
    return tool.invoke({"type": "tool_call", "id": "call-1", "name": tool.name, "args": args})


def test_schema_carries_the_modes_and_k(graph_index):
    tool = create_index_tool(graph_index, k=3, max_k=8)
    schema = tool.tool_call_schema.model_json_schema()
    assert tool.name == "search_graphrag"
    assert schema["properties"]["mode"]["enum"] == list(GraphRAGIndex.modes)
    assert schema["properties"]["mode"]["default"] == "local"
    assert (schema["properties"]["k"]["default"], schema["properties"]["k"]["maximum"]) == (3, 8)
    assert schema["required"] == ["query"]


def test_description_is_written_from_the_index(graph_index):
    text = describe_index(graph_index, "islands")
    assert "islands index, a graphrag index over 8 documents (8 passages)" in text
    for mode, info in graph_index.describe_modes().items():
        assert f"- {mode}: {info.purpose}" in text
    one = GraphRAGIndex()
    one.insert(["Piet Hale kept the Oskel light for forty-one years."])
    assert "a graphrag index over 1 document (1 passage)." in describe_index(one)  # not "1 documents (1 passages)"
    one.close()


def test_the_mode_steers_the_search_and_the_artifact_keeps_provenance(graph_index):
    tool = create_index_tool(graph_index)
    local = call(tool, query=QUERY, mode="local", k=2)
    global_ = call(tool, query=QUERY, mode="global", k=2)
    assert {d.metadata["kind"] for d in local.artifact} == {"chunk"}
    assert {d.metadata["kind"] for d in global_.artifact} == {"point"}
    for message in (local, global_):
        assert len(message.artifact) == 2
        for doc in message.artifact:
            assert f"[{doc.id}]" in message.content  # every passage is led by the id to cite
            hit = document_to_hit(doc)
            assert hit.provenance.document_ids and hit_to_document(hit) == doc


async def test_async_call_and_bad_arguments(graph_index):
    tool = create_index_tool(graph_index, k=2, max_k=4)
    message = await tool.ainvoke({"type": "tool_call", "id": "c", "name": tool.name, "args": {"query": QUERY, "k": 1}})
    assert len(message.artifact) == 1
    with pytest.raises(Exception, match="mode"):
        call(tool, query=QUERY, mode="sideways")
    with pytest.raises(Exception, match="less than or equal to 4"):
        call(tool, query=QUERY, k=9)
    with pytest.raises(ConfigurationError):
        create_index_tool(graph_index.as_retriever())
    with pytest.raises(ConfigurationError):
        create_index_tool(graph_index, k=0)
    with pytest.raises(InvalidInputError):
        document_to_hit(hit_to_document(graph_index.as_retriever().retrieve(QUERY)[0]).model_copy(update={"metadata": {"score": "high"}}))


def test_an_index_with_one_mode_has_no_mode_argument():
    tool = create_index_tool(ToyIndex(CORPUS), name="toy notes")
    assert tool.name == "toy_notes"
    assert "mode" not in tool.tool_call_schema.model_json_schema()["properties"]
    found = call(tool, query="Which insects have a queen in their colony?", k=2)
    assert found.artifact[0].metadata["document_ids"] == ["doc-bees"]
