"""Every installed method serves: its workspace is described, each of its modes answers a
query, and a chat client gets an answer with sources."""

from __future__ import annotations

import pytest
from server_support import API_KEY, AUTH, build_index

from rhizome.core.store.storage import method_registry

TEXTS = {
    "ferry.md": "# The Tarn ferry\n\nCaptain Mira Holt runs the Tarn Harbour ferry. The ferry crosses to Gull Island twice a day.",
    "light.md": "# Gull Island light\n\nOsric Vane keeps the lighthouse on Gull Island. He learned the trade from Mira Holt.",
    "guild.md": "# The Salt Guild\n\nPetra Lind chairs the Salt Guild of Tarn, which buys fish from the island boats.",
    "boats.md": "# Island boats\n\nThe island boats land their fish at Tarn Harbour, where the Salt Guild weighs every catch.",
}


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    for name, text in TEXTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("method", sorted(method_registry()))
def test_every_method_is_served(method, small_corpus, tmp_path, client_for):
    client = client_for([f"w={build_index(tmp_path / method, method, small_corpus)}"], "--api-key", API_KEY)
    space = client.get("/workspaces", headers=AUTH).json()["workspaces"][0]
    assert space["method"] == method and space["counts"]["documents"] == len(TEXTS)
    for mode in space["modes"]:
        body = {"query": "Who keeps the lighthouse on Gull Island?", "k": 2, **({"mode": mode["name"]} if mode["name"] else {})}
        found = client.post("/w/query", json=body, headers=AUTH)
        assert found.status_code == 200, (mode["name"], found.text)
        assert found.json()["hits"], (mode["name"], found.json()["notes"])
    reply = client.post("/v1/chat/completions", json={"model": "rhizome/w", "messages": [{"role": "user", "content": "Who keeps the lighthouse?"}]},
                        headers=AUTH).json()
    assert "Sources:" in reply["choices"][0]["message"]["content"]
