"""One test per loader on small files written here, the encodings, and what a folder's summary
says about the files it could not read."""

from __future__ import annotations

import json
import os
import sys
import warnings

import pytest

from rhizome.core.errors import InvalidInputError
from rhizome.tools.loaders import LoaderWarning, decode_bytes, describe_files, load_files, load_path


def make_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A small valid PDF with one line of Helvetica text per page (empty: a page without
    text), written object by object with its cross-reference table."""
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET" if text else ""
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    if title:
        objects.append(f"<< /Title ({title}) /Author (Hanna Crest) >>")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    info = f" /Info {len(objects)} 0 R" if title else ""
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def only(result):
    assert not result.unreadable, result.unreadable
    return {d.id: d for d in result.documents}


def test_text_file(tmp_path):
    (tmp_path / "ferry.txt").write_text("Mira Holt runs the ferry.\n", encoding="utf-8")
    docs = only(load_files(tmp_path))
    doc = docs["ferry.txt"]
    assert doc.text == "Mira Holt runs the ferry.\n"
    assert doc.metadata == {"source": str((tmp_path / "ferry.txt").resolve()), "title": "ferry"}


def test_markdown_file_takes_its_first_heading_as_title(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "tarn.md").write_text("Intro line.\n\n## The Tarn Harbour ##\n\nBoats.", encoding="utf-8")
    doc = only(load_files(tmp_path))["notes/tarn.md"]
    assert doc.metadata["title"] == "The Tarn Harbour" and "Boats." in doc.text


def test_html_file_keeps_the_visible_text(tmp_path):
    (tmp_path / "port.html").write_text(
        "<html><head><title>Port Amsel</title><style>p {color: red}</style></head>"
        "<body><h1>Harbour</h1><script>var hidden = 1;</script><p>The market   opens\n at dawn.</p>"
        "<noscript>enable scripts</noscript></body></html>",
        encoding="utf-8",
    )
    doc = only(load_files(tmp_path))["port.html"]
    assert doc.metadata["title"] == "Port Amsel"
    assert doc.text == "# Harbour\n\nThe market opens at dawn."


def test_html_blocks_are_paragraphs_and_headings_stand_alone(tmp_path):
    """Defect: an <h1> and the paragraph after it were one line apart, so the sentence splitter
    read "Gull Island Light The lamp..." as one sentence, and inline elements broke a sentence
    over several lines."""
    from rhizome.core.text import trimmed_sentences

    (tmp_path / "light.html").write_text(
        "<body><h1>Gull Island <em>Light</em></h1><p>Ann Varga keeps the <a href='#'>lamp</a>.</p>"
        "<ul><li>Oil store</li><li>Fog bell</li></ul><div>Built 1871<br>Rebuilt 1902</div></body>",
        encoding="utf-8",
    )
    doc = only(load_files(tmp_path))["light.html"]
    assert doc.metadata["title"] == "Gull Island Light"
    assert doc.text == "# Gull Island Light\n\nAnn Varga keeps the lamp.\n\nOil store\n\nFog bell\n\nBuilt 1871 Rebuilt 1902"
    sentences = [doc.text[a:b] for a, b in trimmed_sentences(doc.text)]
    assert sentences == ["Gull Island Light", "Ann Varga keeps the lamp.", "Oil store", "Fog bell", "Built 1871 Rebuilt 1902"]


def test_pdf_file_gives_one_document_per_page(tmp_path):
    (tmp_path / "survey.pdf").write_bytes(make_pdf(["Hanna Crest mapped the reefs.", "", "The reefs lie east of Gull Island."], title="Reef Survey"))
    result = load_files(tmp_path)
    docs = only(result)
    assert sorted(docs) == ["survey.pdf#page=1", "survey.pdf#page=3"]
    first = docs["survey.pdf#page=1"]
    assert "Hanna Crest mapped the reefs." in first.text
    assert first.metadata["page"] == 1 and first.metadata["title"] == "Reef Survey" and first.metadata["author"] == "Hanna Crest"
    assert any("left out: 2" in w for w in result.warnings[str(tmp_path / "survey.pdf")])


def test_docx_file_keeps_paragraphs_and_tables_in_order(tmp_path):
    import docx

    document = docx.Document()
    document.core_properties.title = "Salt Guild"
    document.core_properties.author = "Petra Lind"
    document.add_heading("The Salt Guild", 1)
    document.add_paragraph("Petra Lind chairs the Salt Guild.")
    table = document.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "year", (0, 1): "boats", (1, 0): "1911", (1, 1): "3"}.items():
        table.cell(r, c).text = text
    document.add_paragraph("The guild sets the prices.")
    document.save(tmp_path / "guild.docx")
    doc = only(load_files(tmp_path))["guild.docx"]
    assert doc.text == "The Salt Guild\nPetra Lind chairs the Salt Guild.\nyear | boats\n1911 | 3\nThe guild sets the prices."
    assert doc.metadata["title"] == "Salt Guild" and doc.metadata["author"] == "Petra Lind"


def test_csv_rows_are_documents_with_the_text_column_chosen(tmp_path):
    (tmp_path / "boats.csv").write_text("name;notes;year\nKetch;Sails to Oslo.;1911\nSloop;Sank in the storm.;1911\n", encoding="utf-8")
    result = load_files(tmp_path)
    assert "has no text field" in result.unreadable[str(tmp_path / "boats.csv")] and "--text-field" in result.unreadable[str(tmp_path / "boats.csv")]
    docs = only(load_files(tmp_path, text_field="notes", id_field="name"))
    assert docs["Sloop"].text == "Sank in the storm."
    assert docs["Sloop"].metadata == {"source": str((tmp_path / "boats.csv").resolve()), "year": "1911", "row": 1}


def test_jsonl_records_are_documents(tmp_path):
    lines = [{"text": "Osric keeps the light.", "author": "Vane", "page": 4}, {"id": "b", "body": "ignored", "text": "Gull Island."}]
    (tmp_path / "notes.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    docs = only(load_files(tmp_path))
    assert docs["notes.jsonl#0"].metadata["page"] == 4 and docs["notes.jsonl#0"].metadata["author"] == "Vane"
    assert docs["b"].text == "Gull Island." and docs["b"].metadata["body"] == "ignored"
    result = load_files(tmp_path, text_field="body")
    assert "row 0 lacks the field 'body'" in result.unreadable[str(tmp_path / "notes.jsonl")]


def test_latin1_text_is_decoded_and_the_guess_reported(tmp_path):
    (tmp_path / "cafe.txt").write_bytes("Café Zürich".encode("latin-1"))
    result = load_files(tmp_path)
    assert only(result)["cafe.txt"].text == "Café Zürich"
    assert result.warnings[str(tmp_path / "cafe.txt")] == ["not UTF-8: decoded as cp1252"]
    assert decode_bytes("Привет мир, это тест".encode("cp1251"))[:2] == ("Привет мир, это тест", "cp1251")
    assert decode_bytes("\ufeffbom".encode("utf-8"))[:2] == ("bom", "utf-8-sig")


def test_undecodable_bytes_are_replaced_with_a_warning(tmp_path):
    (tmp_path / "damaged.txt").write_bytes("Zürich, then a stray byte: ".encode() + b"\xff" + b" end")
    result = load_files(tmp_path)
    assert only(result)["damaged.txt"].text == "Zürich, then a stray byte: \ufffd end"
    assert "1 bytes fit no text encoding" in result.warnings[str(tmp_path / "damaged.txt")][0]


def test_files_that_cannot_be_read_are_listed_never_skipped_silently(tmp_path):
    (tmp_path / "ok.txt").write_text("Petra Lind chairs the Salt Guild.", encoding="utf-8")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (tmp_path / "scan.pdf").write_bytes(make_pdf(["", ""]))
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\x02abc")
    (tmp_path / "empty.md").write_text("   \n", encoding="utf-8")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x", encoding="utf-8")
    result = load_files(tmp_path)
    assert [d.id for d in result.documents] == ["ok.txt"] and result.files == 1
    reasons = {k.rsplit("/", 1)[-1]: v for k, v in result.unreadable.items()}
    assert "pypdf cannot read it" in reasons["broken.pdf"]
    assert "OCR" in reasons["scan.pdf"]
    assert "binary" in reasons["binary.txt"]
    assert reasons["empty.md"] == "it holds no text"
    assert result.unsupported == [str(tmp_path / "photo.png")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [d.id for d in load_path(tmp_path)] == ["ok.txt"]
    said = " ".join(str(w.message) for w in caught if issubclass(w.category, LoaderWarning))
    assert "broken.pdf was not loaded" in said and "photo.png" in said


def test_a_missing_optional_library_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "a.pdf").write_bytes(make_pdf(["text"]))
    monkeypatch.setitem(sys.modules, "pypdf", None)  # as if not installed: importing it fails
    result = load_files(tmp_path)
    assert "install rhizome-rag[pdf]" in result.unreadable[str(tmp_path / "a.pdf")]
    with pytest.raises(InvalidInputError, match=r"rhizome-rag\[pdf\]"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load_path(tmp_path)


def test_framework_documents_go_straight_into_insert():
    from langchain_core.documents import Document as LCDocument
    from llama_index.core.schema import Document as LIDocument
    from llama_index.core.schema import TextNode

    from rhizome.core import VectorIndex

    index = VectorIndex()
    items = [
        LCDocument(page_content="Bees make honey in hives.", metadata={"page": 2, "author": "Ann"}),
        LCDocument(page_content="Ants dig tunnels.", id="ants"),
        LIDocument(text="Wasps build paper nests.", metadata={"shelf": "north"}),
        TextNode(text="Crabs walk sideways on the shore.", id_="crab", metadata={"shore": True}),
    ]
    report = index.insert(items)
    assert len(report.inserted) == 4 and {"ants", "crab"} <= set(report.inserted)
    again = index.insert([LIDocument(text="Wasps build paper nests.", metadata={"shelf": "north"})])
    assert again.skipped and not again.inserted  # a LlamaIndex document without an id: its content hash
    stored = index.store.documents_metadata(report.inserted)
    assert {"page": 2, "author": "Ann"} in stored.values() and stored["crab"] == {"shore": True}


def test_an_id_prefix_goes_before_every_id(tmp_path):
    (tmp_path / "notes.md").write_text("# Notes\n\nThe ferry leaves at nine.", encoding="utf-8")
    (tmp_path / "rows.csv").write_text("id,text\nk1,The ketch sank.\n,The sloop sails.\n", encoding="utf-8")
    found = load_files(tmp_path, id_prefix="team-b/")
    assert sorted(d.id for d in found.documents) == ["team-b/k1", "team-b/notes.md", "team-b/rows.csv#1"]
    assert sorted(d.id for d in load_files(tmp_path / "notes.md", id_prefix="b").documents) == ["b/notes.md"]
    with pytest.raises(InvalidInputError, match="id prefix '/' is empty"):
        load_files(tmp_path, id_prefix="/")


def test_a_file_whose_name_is_not_utf8_is_reported_and_the_rest_read(tmp_path):
    (tmp_path / "ferry.txt").write_text("The ferry leaves at nine.", encoding="utf-8")
    folder = os.fsencode(tmp_path)
    for name in (b"caf\xe9.txt", b"pic\xe9.png"):  # Latin-1 names
        with open(folder + b"/" + name, "wb") as f:
            f.write(b"Notes about the cafe by the harbour.")
    found = load_files(tmp_path)
    assert [d.id for d in found.documents] == ["ferry.txt"]
    [(file, reason)] = found.unreadable.items()
    assert os.fsencode(file) == folder + b"/caf\xe9.txt" and "its path is not UTF-8" in reason and "rename it" in reason
    assert describe_files(found.unsupported) == "pic\\xe9.png"  # printable


def test_nan_and_infinity_in_a_json_file_are_not_json(tmp_path):
    (tmp_path / "ok.jsonl").write_text('{"text": "A reading of 3.5.", "x": 3.5}\n', encoding="utf-8")
    (tmp_path / "nan.jsonl").write_text('{"text": "A reading.", "x": NaN}\n', encoding="utf-8")
    (tmp_path / "inf.json").write_text('[{"text": "A reading.", "x": -Infinity}]', encoding="utf-8")
    found = load_files(tmp_path)
    assert [d.id for d in found.documents] == ["ok.jsonl#0"]
    assert "NaN is not a JSON value" in found.unreadable[str(tmp_path / "nan.jsonl")]
    assert "-Infinity is not a JSON value" in found.unreadable[str(tmp_path / "inf.json")]


def test_an_index_built_into_the_folder_it_reads_is_left_out(tmp_path):
    """Defect: `rhizome index DIR --out DIR/idx` read its own manifest.json on the next run,
    reported it as a document it could not read and exited 1."""
    from rhizome.core import VectorIndex

    (tmp_path / "notes.md").write_text("Bees make honey.", encoding="utf-8")
    VectorIndex(path=tmp_path / "idx").close()
    found = load_files(tmp_path)
    assert [d.id for d in found.documents] == ["notes.md"] and not found.unreadable
    assert "Rhizome index" in found.warnings[str(tmp_path / "idx")][0]


def test_a_dangling_link_and_a_pipe_are_reported_not_skipped(tmp_path):
    (tmp_path / "notes.md").write_text("Bees make honey.", encoding="utf-8")
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere.md")
    os.mkfifo(tmp_path / "pipe.txt")
    os.mkfifo(tmp_path / "socketish")  # of no type a loader reads: listed with the other types
    found = load_files(tmp_path)
    assert [d.id for d in found.documents] == ["notes.md"] and found.unsupported == [str(tmp_path / "socketish")]
    assert "does not exist" in found.unreadable[str(tmp_path / "gone.md")]
    assert "not a regular file" in found.unreadable[str(tmp_path / "pipe.txt")]


def test_a_bad_json_lines_record_names_its_line_of_the_file(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"text": "Bees make honey."}\n\n{"text": oops}\n', encoding="utf-8")
    found = load_files(tmp_path)
    assert found.unreadable[str(tmp_path / "rows.jsonl")].startswith("line 3 is not valid JSON")


def test_one_text_field_setting_for_tables_that_differ(tmp_path):
    """Defect: --text-field applied to every table of a folder, so a CSV with its text in
    ``notes`` and a JSONL with it in ``text`` could not be loaded by one command."""
    (tmp_path / "boats.csv").write_text("id,notes\nKetch,Sails to Oslo.\n", encoding="utf-8")
    (tmp_path / "log.jsonl").write_text(json.dumps({"id": "l1", "text": "The light was lit.", "page": 3}) + "\n", encoding="utf-8")
    docs = only(load_files(tmp_path, text_field="notes, text"))
    assert docs["Ketch"].text == "Sails to Oslo." and "notes" not in docs["Ketch"].metadata
    assert docs["l1"].text == "The light was lit." and docs["l1"].metadata["page"] == 3
    result = load_files(tmp_path / "log.jsonl", text_field="page,text")  # the first named field a row has
    assert "the text field 'page' holds a int" in result.unreadable[str(tmp_path / "log.jsonl")]
    result = load_files(tmp_path / "log.jsonl", text_field="body,content")
    assert "has none of the fields 'body', 'content'" in result.unreadable[str(tmp_path / "log.jsonl")]


def test_a_binary_file_gets_one_report(tmp_path):
    """Defect: random bytes in a .txt file were reported twice, contradicting each other: a
    warning that bytes were replaced (as if read) and then 'not read' (binary)."""
    import random

    noise = bytes(random.Random(7).randrange(256) for _ in range(3000)) + b"\x00"
    (tmp_path / "noise.txt").write_bytes(noise)
    result = load_files(tmp_path)
    assert "NUL bytes" in result.unreadable[str(tmp_path / "noise.txt")]
    assert not result.warnings and not result.documents
