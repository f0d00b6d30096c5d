"""The bounded load test: 32 concurrent clients × 20 queries against a real uvicorn on loopback
while a writer inserts 200 documents (20 jobs of 10) into the same LightRAG workspace (offline,
hashing embedder): no request fails, no read is torn, and afterwards every inserted document is
served.

A torn read would be a hit put together from two states of the index: a passage's text, its
document id and its metadata out of step, or a hit naming a document the listing does not know.
Each inserted document says which it is three times (its id ``new/<i>``, its text "Number<i>
... Gannet<i>" and its metadata ``n: i``); every hit of every answer is checked against all
three."""

from __future__ import annotations

import asyncio
import re

import httpx
from server_support import API_KEY, AUTH, RunningServer, open_app

CLIENTS, QUERIES, DOCUMENTS, BATCH = 32, 20, 200, 10  # as many insert jobs as queries per client
MODES = ("naive", "local", "hybrid")


def text_of(i: int) -> str:
    return f"Skipper Number{i} sails the boat Gannet{i} out of Port Amsel every spring with a crew of {i % 7 + 2}."


def check_hit(hit: dict, original: set[str]) -> str | None:
    """What is torn in a hit, or ``None``."""
    documents = hit["provenance"]["document_ids"]
    for doc in documents:
        if not doc.startswith("new/"):
            if doc not in original:
                return f"unknown document {doc}"
            continue
        i = int(doc.removeprefix("new/"))
        if hit["kind"] == "chunk" and (hit["text"] != text_of(i) or hit["metadata"].get("n") != i):
            return f"chunk of {doc} holds {hit['text']!r} / metadata {hit['metadata']}"
    numbers = set(re.findall(r"Number(\d+)", hit["text"])) if hit["kind"] == "chunk" else set()
    if numbers and {f"new/{n}" for n in numbers} != set(documents):
        return f"text of {numbers} cited as {documents}"
    return None


async def reader(client: httpx.AsyncClient, c: int, original: set[str], problems: list[str], submitted: list[asyncio.Event]) -> tuple[int, int]:
    """Queries answered, and passages of inserted documents among their hits."""
    done = new = 0
    for q in range(QUERIES):
        await submitted[q].wait()  # query q after insert job q was queued: the reads are spread over the writes
        i = (c * QUERIES + q) % DOCUMENTS
        answer = await client.post("/w/query", json={"query": f"Who sails the boat Gannet{i}?", "k": 3, "mode": MODES[(c + q) % 3]})
        if answer.status_code != 200:
            problems.append(f"client {c} query {q}: {answer.status_code} {answer.text[:200]}")
            continue
        hits = answer.json()["hits"]
        if len(hits) != 3:
            problems.append(f"client {c} query {q}: {len(hits)} hits")
        problems += [f"client {c} query {q}: {torn}" for hit in hits if (torn := check_hit(hit, original))]
        done += 1
        new += sum(1 for hit in hits if hit["kind"] == "chunk" and hit["provenance"]["document_ids"][0].startswith("new/"))
    return done, new


async def writer(client: httpx.AsyncClient, problems: list[str], submitted: list[asyncio.Event]) -> None:
    for j, start in enumerate(range(0, DOCUMENTS, BATCH)):
        batch = [{"id": f"new/{i}", "text": text_of(i), "metadata": {"n": i}} for i in range(start, start + BATCH)]
        job = (await client.post("/w/documents", json={"documents": batch})).json()
        submitted[j].set()
        while job["status"] in ("queued", "running"):
            await asyncio.sleep(0.05)
            job = (await client.get(f"/jobs/{job['id']}")).json()
        if job["status"] != "done" or len(job["result"]["inserted"]) != BATCH:
            problems.append(f"insert of {start}..{start + BATCH - 1}: {job['status']} {job.get('error')}")


async def load(url: str) -> tuple[list[str], list[tuple[int, int]], list[dict]]:
    problems: list[str] = []
    limits = httpx.Limits(max_connections=CLIENTS + 2)
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=120, limits=limits) as client:
        original = {d["id"] for d in (await client.get("/w/documents")).json()["documents"]}
        submitted = [asyncio.Event() for _ in range(DOCUMENTS // BATCH)]
        writing = asyncio.create_task(writer(client, problems, submitted))
        served = await asyncio.gather(*(reader(client, c, original, problems, submitted) for c in range(CLIENTS)))
        await writing
        listed = (await client.get("/w/documents", params={"limit": 1000})).json()["documents"]
        for i in range(DOCUMENTS):  # every inserted document is served: the best hit for its own text
            hits = (await client.post("/w/query", json={"query": text_of(i), "mode": "naive", "k": 1})).json()["hits"]
            if hits[0]["provenance"]["document_ids"] != [f"new/{i}"]:
                problems.append(f"new/{i} not served: {hits[0]['provenance']['document_ids']}")
    return problems, served, listed


def test_32_clients_query_while_200_documents_are_inserted(fresh):
    app = open_app([f"w={fresh('lightrag')}"], "--api-key", API_KEY)
    with RunningServer(app) as server:
        problems, served, listed = asyncio.run(load(server.url))
    assert problems == [], "\n".join(problems[:20])
    assert sum(done for done, _ in served) == CLIENTS * QUERIES
    assert sum(new for _, new in served) > CLIENTS  # the reads saw the inserts: their passages were checked too
    new = {d["id"]: d["status"] for d in listed if d["id"].startswith("new/")}
    assert new == {f"new/{i}": "done" for i in range(DOCUMENTS)}
