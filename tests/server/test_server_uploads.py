"""File uploads through httpx against the app: ``POST /{ws}/documents`` with a multipart body
reads each file with the kernel's loaders and inserts the documents as a job."""

from __future__ import annotations

import io
import json
import tempfile

import pytest
from server_support import API_KEY, AUTH, wait_for

from tests.core.test_loaders import make_pdf


@pytest.fixture
def client(fresh, client_for):
    return client_for([f"w={fresh('lightrag')}"], "--api-key", API_KEY)


def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = "Salt Guild"
    document.add_paragraph("Petra Lind chairs the Salt Guild of Port Amsel.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


FILES = {
    "tides.md": b"# Tides\n\nThe tide at Oskel turns twice a day; Cato Wren logs it.\n",
    "ferry.txt": "Mira Holt runs the ferry to Tarrow. Caf\u00e9 on board.".encode("cp1252"),
    "market.html": b"<html><head><title>Market</title></head><body><p>The fish market of Port Amsel opens at dawn.</p></body></html>",
    "boats.csv": b"name,text\nKetch,The ketch Sula sails to Mire.\nSloop,The sloop Wren sank off the Teeth.\n",
    "notes.jsonl": b'{"id": "n1", "text": "Hanna Crest mapped the reefs of Little Skerry."}\n',
    "survey.pdf": make_pdf(["Ilse Varn surveyed the Teeth reef.", "The reef lies north of Oskel."], title="Reef Survey"),
    "guild.docx": docx_bytes(),
}


def test_every_format_the_loaders_read_is_uploaded_and_inserted_as_a_job(client):
    posted = client.post("/w/documents", files=[("files", (name, data)) for name, data in FILES.items()], headers=AUTH)
    assert posted.status_code == 202, posted.text
    receipt = posted.json()
    files = {f["name"]: f for f in receipt["files"]}
    assert set(files) == set(FILES) and all(f["error"] is None for f in files.values())
    assert files["boats.csv"]["documents"] == 2 and files["survey.pdf"]["documents"] == 2 and files["tides.md"]["documents"] == 1
    assert any("not UTF-8" in w for w in files["ferry.txt"]["warnings"])
    assert receipt["documents"] == sum(f["documents"] for f in files.values()) == 9
    job = wait_for(client, receipt["id"])
    assert job["status"] == "done", job
    assert sorted(job["result"]["inserted"]) == sorted([
        "tides.md", "ferry.txt", "market.html", "boats.csv#0", "boats.csv#1", "n1", "survey.pdf#page=1", "survey.pdf#page=2", "guild.docx"])
    listed = {d["id"]: d for d in client.get("/w/documents", params={"limit": 100}, headers=AUTH).json()["documents"]}
    assert listed["tides.md"]["title"] == "Tides" and listed["survey.pdf#page=1"]["title"] == "Reef Survey"
    assert listed["guild.docx"]["status"] == "done"
    hit = client.post("/w/query", json={"query": "Who chairs the Salt Guild?", "mode": "naive", "k": 1}, headers=AUTH).json()["hits"][0]
    assert hit["provenance"]["document_ids"] == ["guild.docx"]
    assert hit["metadata"]["source"] == "guild.docx"  # the file's name, never the server's temporary folder


def test_upload_options_reach_the_loaders(client):
    rows = b"key;body\nr1;Brann Tolle keeps bees on Oskel.\n"
    receipt = client.post("/w/documents", files={"files": ("bees.csv", rows)},
                          data={"id_prefix": "team-b", "text_field": "body", "id_field": "key"}, headers=AUTH).json()
    assert wait_for(client, receipt["id"])["result"]["inserted"] == ["team-b/r1"]


def test_unreadable_and_unsupported_files_are_reported_and_the_rest_inserted(client):
    receipt = client.post("/w/documents", files=[("files", ("ok.md", b"Cato Wren is the harbour master.")),
                                                 ("files", ("photo.png", b"\x89PNG\r\n")),
                                                 ("files", ("broken.pdf", b"%PDF-1.4 not really"))], headers=AUTH).json()
    files = {f["name"]: f for f in receipt["files"]}
    assert files["ok.md"]["documents"] == 1 and files["ok.md"]["error"] is None
    assert "no loader reads this type" in files["photo.png"]["error"]
    assert files["broken.pdf"]["documents"] == 0 and files["broken.pdf"]["error"]
    assert "rhizome-upload" not in json.dumps(receipt)  # no temporary path
    assert wait_for(client, receipt["id"])["result"]["inserted"] == ["ok.md"]


def test_files_that_give_no_document_refuse_the_request_and_queue_nothing(client):
    answer = client.post("/w/documents", files=[("files", ("photo.png", b"\x89PNG")), ("files", ("empty.txt", b"  \n"))], headers=AUTH)
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert "gave no document" in message and "photo.png" in message and "empty.txt: it holds no text" in message
    assert "/tmp" not in message and tempfile.gettempdir() not in message  # the run's may be elsewhere (tests/conftest.py)
    assert client.get("/w/documents", headers=AUTH).json()["total"] == 8


@pytest.mark.parametrize(("name", "stored"), [("../../etc/passwd.md", "passwd.md"), ("C:\\Users\\x\\notes.md", "notes.md"), ("dir/a.md", "a.md")])
def test_a_file_name_is_only_its_last_part(client, name, stored):
    receipt = client.post("/w/documents", files={"files": (name, b"Some text about the Moot.")}, headers=AUTH).json()
    assert [f["name"] for f in receipt["files"]] == [stored]
    assert wait_for(client, receipt["id"])["result"]["inserted"] == [stored]


@pytest.mark.parametrize("name", ["..", ".hidden.md", "dir/"])
def test_a_file_without_a_usable_name_is_400(client, name):
    answer = client.post("/w/documents", files={"files": (name, b"text")}, headers=AUTH)
    assert answer.status_code == 400 and "send each file with a name" in answer.json()["error"]["message"]


def test_two_files_of_one_name_are_400(client):
    answer = client.post("/w/documents", files=[("files", ("a/x.md", b"one")), ("files", ("b/x.md", b"two"))], headers=AUTH)
    assert answer.status_code == 400 and "two uploaded files are named 'x.md'" in answer.json()["error"]["message"]


def test_an_upload_needs_the_key(client):
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        assert client.post("/w/documents", files={"files": ("a.md", b"text")}, headers=headers).status_code == 401
    assert client.get("/w/documents", headers=AUTH).json()["total"] == 8


def test_an_upload_larger_than_the_body_limit_is_413(fresh, client_for):
    client = client_for([f"w={fresh('naive')}"], "--api-key", API_KEY, "--max-body", "4096")
    big = client.post("/w/documents", files={"files": ("big.txt", b"word " * 2000)}, headers=AUTH)
    assert big.status_code == 413 and "--max-body" in big.json()["error"]["message"]

    def chunked():  # no Content-Length: counted as it arrives
        yield b"--xx\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.txt\"\r\n\r\n"
        for _ in range(10):
            yield b"word " * 200
        yield b"\r\n--xx--\r\n"

    streamed = client.post("/w/documents", content=chunked(), headers={**AUTH, "Content-Type": "multipart/form-data; boundary=xx"})
    assert streamed.status_code == 413
    assert client.get("/w/documents", headers=AUTH).json()["total"] == 8


def test_json_inserts_still_take_the_same_route(client):
    job = client.post("/w/documents", json={"documents": ["Cato Wren is the harbour master."]}, headers=AUTH)
    assert job.status_code == 202 and "files" not in job.json()
    assert wait_for(client, job.json()["id"])["status"] == "done"


def test_openapi_describes_both_bodies(client):
    operation = client.get("/openapi.json").json()["paths"]["/{ws}/documents"]["post"]
    content = operation["requestBody"]["content"]
    assert "application/json" in content and content["multipart/form-data"]["schema"]["properties"]["files"]["type"] == "array"
