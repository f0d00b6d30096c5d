"""create_rag_agent: a scripted tool-calling model and the offline router drive the same
graph; routing by question kind; citations; checkpoints; JSON state; streaming; Ollama wire."""

from __future__ import annotations

import json

import pytest
from langchain_core.load import dumpd, load
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_rhizome import QuestionRouter, RouterChatModel, create_rag_agent, question_kind
from ollama_stub import StubToolCalls, ollama_stub_fixture  # noqa: F401  (fixture)

from rhizome.core import ConfigurationError, FakeChatModel, VectorIndex
from rhizome.core.models.ollama import default_num_ctx
from rhizome.gorag import GORAGClassifier
from tests.langgraph.conftest import GLOBAL, MULTI_HOP, SPECIFIC, ScriptedChatModel, tool_call

ROUTES = {SPECIFIC: ("islands_graph", "local"), GLOBAL: ("islands_graph", "global"), MULTI_HOP: ("islands_memory", "v2")}


def ask(agent, question, thread="t"):
    return agent.invoke({"messages": [("user", question)]}, {"configurable": {"thread_id": thread}})


def test_question_kinds_by_rules():
    assert question_kind(SPECIFIC) == "specific"
    assert question_kind(GLOBAL) == "global"
    assert question_kind(MULTI_HOP) == "multi-hop"
    assert question_kind("Are the Moot and the Seabird Survey both in Port Amsel?") == "multi-hop"
    assert question_kind("Who is older, Agnes Brodd or Ilse Varn?") == "multi-hop"
    assert question_kind("Summarise what the documents say about fishing.") == "global"


def test_the_offline_agent_routes_each_kind_to_its_index_and_mode(islands):
    agent = create_rag_agent(None, islands, checkpointer=InMemorySaver())
    for question, (tool, mode) in ROUTES.items():
        state = ask(agent, question, thread=question)
        call, result, answer = state["messages"][1:]
        assert (call.tool_calls[0]["name"], call.tool_calls[0]["args"]["mode"]) == (tool, mode)
        assert isinstance(result, ToolMessage) and result.name == tool and result.artifact
        cited = [c["id"] for c in state["citations"]]
        assert cited and all(f"[{c}]" in answer.text for c in cited)
        assert set(cited) <= {d.id for d in result.artifact}
    assert ask(agent, SPECIFIC, thread=SPECIFIC)["citations"][0]["document_ids"] == ["07-mire-fisheries.md"]


def test_a_scripted_model_calls_several_tools_and_cites(islands):
    model = ScriptedChatModel(responses=[
        tool_call("islands_graph", "c1", query="Mire Banks closure", mode="local", k=2),
        tool_call("islands_memory", "c2", query="Agnes Brodd", mode="v2", k=2),
        AIMessage(content="Agnes Brodd led it [07-mire-fisheries.md:0]; see also [not-a-passage]."),
    ])
    agent = create_rag_agent(model, islands)
    state = agent.invoke({"messages": [("user", SPECIFIC)]})
    assert [m.type for m in state["messages"]] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert [len(m.artifact) for m in state["messages"] if m.type == "tool"] == [2, 2]
    assert state["citations"] == [{"id": "07-mire-fisheries.md:0", "tool": "islands_graph", "document_ids": ["07-mire-fisheries.md"], "sources": state["citations"][0]["sources"]}]
    system = model.seen[0][0]
    assert system.type == "system" and "islands_graph with mode=global" in system.text  # routes in the prompt
    # a history stored as dicts (messages_to_dict: the artifacts' Documents become dicts) cites the same
    from langchain_core.messages import messages_from_dict, messages_to_dict
    from langgraph_rhizome.agent import cited_hits

    stored = messages_from_dict(json.loads(json.dumps(messages_to_dict(state["messages"]))))
    assert isinstance(stored[2].artifact[0], dict) and cited_hits({"messages": stored}) == state["citations"]


def test_a_checkpointed_thread_resumes(islands):
    saver = InMemorySaver()
    agent = create_rag_agent(None, islands, checkpointer=saver, interrupt_before=["tools"])
    config = {"configurable": {"thread_id": "resume"}}
    paused = agent.invoke({"messages": [("user", SPECIFIC)]}, config)
    assert paused["messages"][-1].tool_calls and agent.get_state(config).next == ("tools",)
    # a new agent object on the same checkpointer picks the thread up where it stopped
    again = create_rag_agent(None, islands, checkpointer=saver, interrupt_before=["tools"])
    done = again.invoke(None, config)
    assert done["messages"][-1].type == "ai" and done["citations"]
    again.invoke({"messages": [("user", GLOBAL)]}, config)
    state = again.invoke(None, config)  # the second question continues the same conversation
    assert [m.text for m in state["messages"] if m.type == "human"] == [SPECIFIC, GLOBAL]


@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_the_state_is_json_and_the_stream_shows_each_step(islands):
    agent = create_rag_agent(None, islands)
    updates = list(agent.stream({"messages": [("user", MULTI_HOP)]}, stream_mode="updates"))
    steps = [next(iter(u)) for u in updates]
    assert steps[:3] == ["model", "CitationsMiddleware.after_model", "tools"] and steps[-2] == "model"
    state = agent.invoke({"messages": [("user", MULTI_HOP)]})
    text = json.dumps(dumpd(state))
    restored = load(json.loads(text), allowed_objects="all")
    assert restored["messages"][2].artifact == state["messages"][2].artifact


async def test_astream_events_show_the_model_the_tool_and_the_retriever(islands):
    agent = create_rag_agent(None, islands)
    kinds = [e["event"] async for e in agent.astream_events({"messages": [("user", GLOBAL)]}, version="v2")]
    for kind in ("on_chat_model_start", "on_tool_start", "on_retriever_end", "on_tool_end"):
        assert kind in kinds


def test_a_gorag_classifier_routes_offline_and_hints_a_model(islands):
    clf = GORAGClassifier(online=False)
    clf.fit_round(
        ["Agnes Brodd closed the Mire Banks", "the Moot meets in Port Amsel", "kelp trade on Tarrow", "the Oskel lighthouse keeper"],
        ["people", "people", "work", "work"],
    )
    routes = {"people": "islands_memory:v2", "work": "islands_graph:global"}
    offline = create_rag_agent(None, islands, classifier=clf, routes=routes)
    call = offline.invoke({"messages": [("user", "Who closed the Mire Banks, Agnes Brodd?")]})["messages"][1]
    assert (call.tool_calls[0]["name"], call.tool_calls[0]["args"]["mode"]) == ("islands_memory", "v2")
    model = ScriptedChatModel(responses=[AIMessage(content="I do not know.")])
    create_rag_agent(model, islands, classifier=clf, routes=routes).invoke({"messages": [("user", "How did the kelp trade work?")]})
    assert "labels this question 'work': start with islands_graph with mode=global" in model.seen[0][0].text


def test_router_defaults_overrides_and_errors(islands):
    router = QuestionRouter(islands)
    assert router.table() == {"specific": "islands_graph:local", "multi-hop": "islands_memory:v2", "global": "islands_graph:global"}
    assert QuestionRouter({"notes": VectorIndex()}).table() == {k: "notes" for k in ("specific", "multi-hop", "global")}
    assert router.route_label("islands_memory").mode == "v2"  # a label naming an index
    with pytest.raises(ConfigurationError, match="has no route"):
        router.route_label("poetry")
    with pytest.raises(ConfigurationError, match="no mode 'sideways'"):
        QuestionRouter(islands, routes={"x": "islands_graph:sideways"})
    with pytest.raises(ConfigurationError, match="both be called"):
        create_rag_agent(None, [VectorIndex(), VectorIndex()])
    with pytest.raises(ConfigurationError, match="tool calling"):
        create_rag_agent(FakeChatModel(), islands)
    with pytest.raises(ConfigurationError, match="not among the agent's tools"):
        RouterChatModel(router=router).bind_tools([])


def test_an_ollama_spec_drives_the_agent_over_the_wire(islands, ollama_stub, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", ollama_stub.url)
    ollama_stub.replies.extend([
        StubToolCalls([("islands_graph", {"query": "Mire Banks", "mode": "global", "k": 2})]),
        "Agnes Brodd [07-mire-fisheries.md:0].",
    ])
    state = create_rag_agent("ollama:qwen2.5:7b", islands).invoke({"messages": [("user", SPECIFIC)]})
    assert state["messages"][2].artifact and state["messages"][-1].text.startswith("Agnes Brodd")
    first = ollama_stub.calls("/api/chat")[0]
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in first["tools"]}
    assert tools["islands_graph"]["properties"]["mode"]["enum"] == ["local", "global", "drift", "naive"]
    assert first["options"]["num_ctx"] == default_num_ctx() and first["options"]["temperature"] == 0
