"""The model-call cache works across processes: a second run pays for nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from rhizome.core.store.cache import ModelCache, cache_key

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from rhizome.core.store.cache import ModelCache
    from rhizome.core.models.fake import FakeChatModel, FakeEmbedder

    cache = ModelCache(sys.argv[1])
    llm = FakeChatModel(lambda messages, schema: "answer to " + messages[-1]["content"], cache=cache)
    emb = FakeEmbedder(8, cache=cache)

    async def main():
        await asyncio.gather(*(llm.acomplete(f"question {i}") for i in range(20)))
        await emb.aembed([f"text {i}" for i in range(30)])

    asyncio.run(main())
    print(json.dumps({"chat_calls": llm.usage.calls, "chat_hits": llm.usage.cache_hits,
                      "embed_calls": emb.usage.calls, "embed_hits": emb.usage.cache_hits}))
    """
)


def run(path) -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_cache_hits_across_processes(tmp_path):
    path = tmp_path / "calls.sqlite"
    first = run(path)
    assert first["chat_calls"] == 20 and first["chat_hits"] == 0
    assert first["embed_calls"] >= 1
    second = run(path)
    assert second == {"chat_calls": 0, "chat_hits": 20, "embed_calls": 0, "embed_hits": 30}


def test_two_processes_writing_at_once(tmp_path):
    path = tmp_path / "calls.sqlite"
    procs = [
        subprocess.Popen([sys.executable, "-c", SCRIPT, str(path)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out
    assert len(ModelCache(path)) == 50
    assert run(path)["chat_calls"] == 0


def test_key_is_canonical():
    assert cache_key({"a": 1, "b": [1, 2]}) == cache_key({"b": [1, 2], "a": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 2})


def test_memory_cache_roundtrip():
    cache = ModelCache()
    assert cache.get("k") is None
    cache.put("k", {"text": "v"})
    assert cache.get("k") == {"text": "v"}
    assert (cache.hits, cache.misses) == (1, 1)
