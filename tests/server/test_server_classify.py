"""A saved GORAG classifier served as a workspace: listed with its kind, ``POST /{ws}/classify``
for one text or a batch (labels, candidates, confidence), and a clear 400 for what a
classifier does not do (search, answer, documents, chat) or an index asked to classify."""

from __future__ import annotations

import shutil

import pytest
from server_support import API_KEY, AUTH

from tests.gorag.conftest import QUERIES, ROUND1, ROUND2, split


@pytest.fixture(scope="module")
def saved_classifier(tmp_path_factory):
    """A classifier trained offline on two rounds and saved as ``rhizome classify --save`` saves it."""
    from rhizome.gorag import GORAGClassifier

    clf = GORAGClassifier()
    clf.fit_round(*split(ROUND1))
    clf.fit_round(*split(ROUND2))
    return clf.persist(tmp_path_factory.mktemp("classifier") / "topics")


@pytest.fixture
def client(saved_classifier, built, client_for):
    return client_for([str(saved_classifier), f"docs={built('naive')}"], "--api-key", API_KEY)


def test_the_classifier_is_listed_with_its_kind_and_labels(client):
    listed = {w["name"]: w for w in client.get("/workspaces", headers=AUTH).json()["workspaces"]}
    assert listed["docs"]["kind"] == "index" and listed["docs"]["labels"] is None
    topics = listed["topics"]
    assert (topics["kind"], topics["method"], topics["modes"], topics["chat_models"]) == ("classifier", "gorag", [], [])
    assert sorted(topics["labels"]) == ["astronomy", "cardiology", "cooking"]
    assert topics["counts"]["labels"] == 3 and topics["counts"]["rounds"] == 2 and topics["counts"]["edges"] > 0
    assert client.get("/health").json()["workspaces"] == 2
    assert all("topics" not in m["id"] for m in client.get("/v1/models", headers=AUTH).json()["data"])


def test_one_text_and_a_batch_get_labels_candidates_and_confidence(client):
    gold, text = QUERIES[0]
    one = client.post("/topics/classify", json={"text": text}, headers=AUTH).json()
    assert one["workspace"] == "topics" and len(one["results"]) == 1
    result = one["results"][0]
    assert result["label"] == gold and result["candidates"][0]["label"] == gold
    assert result["confidence"] == pytest.approx(result["candidates"][0]["probability"]) and 0 < result["confidence"] <= 1
    assert result["evidence"] and not result["guess"]
    batch = client.post("/topics/classify", json={"texts": [t for _, t in QUERIES] + [" "]}, headers=AUTH).json()["results"]
    assert [r["label"] for r in batch[:3]] == [g for g, _ in QUERIES]
    assert batch[3]["label"] is None and batch[3]["error"]  # a blank text: its error in its place, the others labelled
    again = client.post("/topics/classify", json={"text": text}, headers=AUTH).json()
    assert again == one  # a read: nothing was indexed online


def test_what_a_workspace_does_not_do_is_a_clear_400(client):
    for path, body in [("/topics/query", {"query": "heart"}), ("/topics/answer", {"query": "heart"})]:
        answer = client.post(path, json=body, headers=AUTH)
        assert answer.status_code == 400 and "POST /topics/classify" in answer.json()["error"]["message"]
    assert client.get("/topics/documents", headers=AUTH).status_code == 400
    chat = client.post("/v1/chat/completions", json={"model": "rhizome/topics", "messages": [{"role": "user", "content": "hi"}]}, headers=AUTH)
    assert chat.status_code == 400 and "classifier" in chat.json()["error"]["message"]
    index = client.post("/docs/classify", json={"text": "heart"}, headers=AUTH)
    assert index.status_code == 400 and "POST /docs/query" in index.json()["error"]["message"]
    assert client.post("/nowhere/classify", json={"text": "heart"}, headers=AUTH).status_code == 404
    assert client.post("/topics/classify", json={"text": "a", "texts": ["b"]}, headers=AUTH).status_code == 422
    assert client.post("/topics/classify", json={}, headers=AUTH).status_code == 422
    assert client.post("/topics/classify", json={"text": "heart"}).status_code == 401  # reads need the key when there is one


def test_root_finds_classifiers_beside_indexes(saved_classifier, built, tmp_path, client_for):
    shutil.copytree(saved_classifier, tmp_path / "topics")
    shutil.copytree(built("naive"), tmp_path / "docs")
    client = client_for(["--root", str(tmp_path)])
    kinds = {w["name"]: w["kind"] for w in client.get("/workspaces").json()["workspaces"]}
    assert kinds == {"docs": "index", "topics": "classifier"}


async def test_the_mcp_classify_tool(saved_classifier, built):
    from mcp import Client
    from server_support import open_app

    from rhizome.server.mcp import build

    app = open_app([str(saved_classifier), f"docs={built('naive')}"])
    try:
        async with Client(build(app.state.server)) as client:
            result = await client.call_tool("classify", {"workspace": "topics", "texts": [QUERIES[1][1]]})
            assert result.structured_content["results"][0]["label"] == QUERIES[1][0]
            wrong = await client.call_tool("classify", {"workspace": "docs", "texts": ["heart"]})
            assert wrong.is_error and "not a classifier" in wrong.content[0].text
            listed = (await client.call_tool("list_workspaces", {})).structured_content["workspaces"]
            assert [w["kind"] for w in listed] == ["index", "classifier"]
    finally:
        app.state.server.workspaces.close()


def test_a_damaged_classifier_is_a_typed_error_at_start(saved_classifier, tmp_path):
    from server_support import open_app

    from rhizome.core.errors import IndexFormatError

    damaged = tmp_path / "topics"
    shutil.copytree(saved_classifier, damaged)
    (damaged / "classifier.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(IndexFormatError, match="damaged"):
        open_app([str(damaged)])
