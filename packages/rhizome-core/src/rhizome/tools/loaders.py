"""Files on disk to :class:`Document` records, one loader per format.

=============  ==============================================================  ===============
suffix         what becomes a document                                          library
=============  ==============================================================  ===============
.txt .md ...   the file (Markdown's first ``#`` heading is its title)           standard library
.html .htm     visible text, a paragraph per block, headings as ``# ...``       beautifulsoup4
.pdf           each page with text (``page``: 1-based), id ``FILE#page=N``      pypdf (extra ``pdf``)
.docx          paragraphs and tables in order; core properties title, author    python-docx (extra ``docx``)
.csv .tsv      each row; the text column by name, the others as metadata       standard library
.jsonl .json   each record (``.json``: a list of records or one record)         standard library
=============  ==============================================================  ===============

Every document gets ``source`` (the file's absolute path) and, where the format has one, a
``title``; a row's or record's other fields become its metadata. Ids are the path relative to
the folder loaded (``notes/a.md``), with ``#page=N`` for a PDF page and ``#N`` (0-based) for a
row or record without an id field, so loading the same folder again gives the same ids;
``id_prefix="team-b"`` puts ``team-b/`` before every id (two folders with the same file names in
one index).

Text files are decoded as UTF-8 when they are UTF-8 (a byte-order mark is honoured), else with
the encoding charset-normalizer finds (a Western text too short to tell apart defaults to
Windows-1252, which is what such files nearly always are); the choice is reported. Bytes no
encoding explains are replaced with U+FFFD and reported, never dropped silently.

Nothing is skipped without a word: :func:`load_files` returns the documents together with the
files it could not read (and why: a missing optional library, a damaged or encrypted file, no
text column, a name that is not UTF-8), the files of a type it does not read, and the warnings (encodings guessed, bytes
replaced, PDF pages without text). Hidden files and folders (``.git``, ``.DS_Store``) are not
looked at.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rhizome.core.errors import InvalidInputError
from rhizome.core.store.storage import MANIFEST, RECORDS
from rhizome.core.types import Document

TEXT_SUFFIXES = frozenset({".txt", ".text", ".rst", ".md", ".markdown"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
TABLE_SUFFIXES = frozenset({".csv", ".tsv"})
RECORD_SUFFIXES = frozenset({".jsonl", ".ndjson", ".json"})
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | TABLE_SUFFIXES | RECORD_SUFFIXES | {".pdf", ".docx"}
"""Every suffix a loader reads."""

TEXT_FIELDS = ("text", "content", "context", "page_content", "body")
"""Fields tried, in order, as a row's or record's text when no ``text_field`` is given."""

EXTRAS = {"bs4": ("beautifulsoup4", "html"), "pypdf": ("pypdf", "pdf"), "docx": ("python-docx", "docx")}
"""Optional libraries by module: the distribution and the ``rhizome-rag`` extra that installs it."""


class LoaderWarning(UserWarning):
    """Something a loader did that the user should know: an encoding guessed, bytes replaced,
    a file it could not read (emitted by :func:`load_path`)."""


class UnreadableFileError(InvalidInputError):
    """One file cannot be turned into documents; the message says why and what to do."""


@dataclass
class LoadResult:
    """What :func:`load_files` found: the documents, and every file that gave none."""

    documents: list[Document] = field(default_factory=list)
    files: int = 0
    """Files read (that gave documents)."""
    unreadable: dict[str, str] = field(default_factory=dict)
    """Files of a supported type that could not be read, by path, with the reason."""
    unsupported: list[str] = field(default_factory=list)
    """Files of a type no loader reads (images, archives...), by path."""
    warnings: dict[str, list[str]] = field(default_factory=dict)
    """What the loaders did that changed the text (encodings guessed, bytes replaced, pages
    without text), by path."""

    def warn(self, path: Path | str, message: str) -> None:
        self.warnings.setdefault(str(path), []).append(message)


# -- decoding ----------------------------------------------------------------------------------
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_bytes(data: bytes) -> tuple[str, str, int]:
    """``(text, encoding, replaced)``: ``data`` decoded as UTF-8 (or the encoding its byte-order
    mark names); else, when it holds valid UTF-8 sequences beside invalid bytes (UTF-8 damaged
    in places), as UTF-8 with the invalid bytes replaced by U+FFFD (``replaced`` counts them);
    else as the legacy encoding charset-normalizer finds (Windows-1252 when the text is too
    short to tell Western encodings apart); else as UTF-8 with replacements."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = data.decode(encoding, errors="replace")
            return text, encoding, text.count("\ufffd")
    try:
        return data.decode("utf-8"), "utf-8", 0
    except UnicodeDecodeError:
        pass
    lenient = data.decode("utf-8", errors="replace")
    replaced = lenient.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd")
    if any(ord(c) > 127 and c != "\ufffd" for c in lenient):
        return lenient, "utf-8", replaced
    import charset_normalizer

    matches = list(charset_normalizer.from_bytes(data))
    if not matches:
        return lenient, "utf-8", replaced
    best = matches[0]
    if best.coherence < 0.2:  # no language recognised: too little text to tell encodings apart
        western = next((m for m in matches if "cp1252" in m.could_be_from_charset), None)
        if western is not None:
            return data.decode("cp1252"), "cp1252", 0
    return str(best), best.encoding, 0


def _read_text(file: Path, result: LoadResult) -> str:
    text, encoding, replaced = decode_bytes(file.read_bytes())
    if "\x00" in text:  # refused before any warning about how it was decoded: it is not read at all
        raise UnreadableFileError("it holds NUL bytes, so it is binary, not text")
    if replaced:
        result.warn(file, f"{replaced} bytes fit no text encoding and were replaced with U+FFFD (\ufffd); "
                          "convert the file to UTF-8 to keep them")
    elif encoding not in ("utf-8", "utf-8-sig", "ascii"):
        result.warn(file, f"not UTF-8: decoded as {encoding}")
    return text


def _requires(module: str, suffix: str) -> Any:
    """Import an optional library, or say which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        distribution, extra = EXTRAS[module]
        raise UnreadableFileError(
            f"reading {suffix} files needs {distribution}: install rhizome-rag[{extra}] "
            f"(pip install 'rhizome-rag[{extra}]', or rhizome-core[{extra}])"
        ) from None


# -- one loader per format -----------------------------------------------------------------------
@dataclass(frozen=True)
class _Source:
    """One file being loaded: its path, its id (relative path), the options of the call and
    the prefix of every id (``""``, or ``"NAME/"``)."""

    file: Path
    rel: str
    text_field: str | None
    id_field: str | None
    prefix: str = ""

    def document(self, text: str, id: str | None = None, **metadata: Any) -> Document:
        meta = {"source": str(self.file.resolve()), **{k: v for k, v in metadata.items() if v not in (None, "")}}
        return Document(text=text, id=self.prefix + (id or self.rel), metadata=meta)


_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _text_file(source: _Source, result: LoadResult) -> list[Document]:
    text = _read_text(source.file, result)
    title = source.file.stem
    if source.file.suffix.lower() in (".md", ".markdown"):
        heading = _HEADING.search(text)
        title = heading.group(1).strip() if heading else title
    return [source.document(text, title=title)]


def _html_file(source: _Source, result: LoadResult) -> list[Document]:
    bs4 = _requires("bs4", ".html")
    soup = bs4.BeautifulSoup(_read_text(source.file, result), "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    for hidden in soup(["head", "script", "style", "noscript", "template"]):
        hidden.decompose()
    heading = soup.find(["h1", "h2"])
    if not title:
        title = heading.get_text(" ", strip=True) if heading else source.file.stem
    return [source.document(_html_text(soup), title=title)]


_HTML_BLOCKS = ("address", "article", "aside", "blockquote", "dd", "div", "dl", "dt", "figcaption", "figure", "footer",
                "form", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "td", "th", "tr", "ul")
"""Elements a browser shows as blocks of their own: their text is a paragraph, never joined
to the next block's first sentence."""


def _html_text(soup: Any) -> str:
    """The visible text of a parsed page as paragraphs separated by blank lines (one per block
    element; whitespace inside one collapsed, as a browser shows it), with headings written as
    Markdown headings (``# Harbour``): the sentence splitter and the offline steps then treat
    a heading as they do in a Markdown file, not as the start of the paragraph after it."""
    for level in range(1, 7):
        for tag in soup.find_all(f"h{level}"):
            tag.replace_with(f"\n\n{'#' * level} {tag.get_text(' ', strip=True)}\n\n")
    for tag in soup.find_all(_HTML_BLOCKS):
        tag.insert_before("\n\n")
        tag.insert_after("\n\n")
    for tag in soup.find_all("br"):
        tag.replace_with("\n")
    paragraphs = (" ".join(part.split()) for part in re.split(r"\n\s*\n", soup.get_text()))
    return "\n\n".join(p for p in paragraphs if p)


def _pdf_file(source: _Source, result: LoadResult) -> list[Document]:
    pypdf = _requires("pypdf", ".pdf")
    with _logged_as_warnings("pypdf", source.file, result):
        return _pdf_pages(pypdf, source, result)


def _pdf_pages(pypdf: Any, source: _Source, result: LoadResult) -> list[Document]:
    try:
        reader = pypdf.PdfReader(str(source.file))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableFileError("it is encrypted with a password; decrypt it first (e.g. qpdf --decrypt)")
        info = reader.metadata or {}
        title = (info.get("/Title") or "").strip() or source.file.stem
        author = (info.get("/Author") or "").strip() or None
        documents, empty = [], []
        for number, page in enumerate(reader.pages, start=1):
            text = (page.extract_text() or "").replace("\x00", "")
            if text.strip():
                documents.append(source.document(text, f"{source.rel}#page={number}", title=title, page=number, author=author))
            else:
                empty.append(number)
    except UnreadableFileError:
        raise
    except Exception as exc:  # pypdf raises many kinds for damaged files
        raise UnreadableFileError(f"pypdf cannot read it ({type(exc).__name__}: {exc})") from exc
    if not documents:
        raise UnreadableFileError("no page has extractable text (a scanned PDF needs OCR first, e.g. ocrmypdf)")
    if empty:
        result.warn(source.file, f"pages without text (scanned images?) were left out: {', '.join(map(str, empty))}")
    return documents


@contextlib.contextmanager
def _logged_as_warnings(logger: str, file: Path, result: LoadResult) -> Iterator[None]:
    """What a library logs while it reads ``file`` becomes the file's warnings (pypdf logs
    about damaged files it still reads), instead of lines on standard error."""
    import logging

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            result.warn(file, f"{logger}: {record.getMessage()}")

    log = logging.getLogger(logger)
    handler, propagate = Collect(logging.WARNING), log.propagate
    log.addHandler(handler)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.propagate = propagate


def _docx_file(source: _Source, result: LoadResult) -> list[Document]:
    docx = _requires("docx", ".docx")
    try:
        document = docx.Document(str(source.file))
    except Exception as exc:
        raise UnreadableFileError(f"python-docx cannot read it ({type(exc).__name__}: {exc})") from exc
    parts: list[str] = []
    for block in document.iter_inner_content():  # paragraphs and tables in document order
        if hasattr(block, "rows"):
            for row in block.rows:
                cells = list(dict.fromkeys(cell.text.strip() for cell in row.cells))
                parts.append(" | ".join(c for c in cells if c))
        else:
            parts.append(block.text)
    text = "\n".join(p for p in parts if p.strip())
    props = document.core_properties
    return [source.document(text, title=(props.title or "").strip() or source.file.stem, author=(props.author or "").strip())]


def _records(source: _Source, result: LoadResult) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of a table or the records of a JSON file, numbered from 0."""
    suffix = source.file.suffix.lower()
    text = _read_text(source.file, result)
    if suffix in TABLE_SUFFIXES:
        sample = text[:8192]
        delimiter = "\t" if suffix == ".tsv" else ","
        if suffix == ".csv":
            with contextlib.suppress(csv.Error):  # a single column: no delimiter to find
                delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
        for number, row in enumerate(reader):
            yield number, {str(k): v for k, v in row.items() if k is not None}
        return
    if suffix == ".json":
        try:
            loaded = json.loads(text, parse_constant=_not_json)
        except ValueError as exc:
            raise UnreadableFileError(f"it is not valid JSON ({exc})") from exc
        records = loaded if isinstance(loaded, list) else [loaded]
    else:  # one record per line: an error names the file's line
        records = []
        for line_number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line, parse_constant=_not_json))
            except ValueError as exc:
                raise UnreadableFileError(f"line {line_number} is not valid JSON ({exc})") from exc
    for number, record in enumerate(records):
        if isinstance(record, str):
            record = {"text": record}
        if not isinstance(record, dict):
            raise UnreadableFileError(f"record {number} is neither an object nor a string")
        yield number, record


def _field_names(given: str | None) -> list[str]:
    """The field names of a ``text_field`` setting: one, or several separated by commas."""
    return [name.strip() for name in (given or "").split(",") if name.strip()]


def _not_json(constant: str) -> Any:
    """NaN and Infinity, which Python's json reads but JSON does not have: refused."""
    raise ValueError(f"{constant} is not a JSON value; write null or a string")


def _record_file(source: _Source, result: LoadResult) -> list[Document]:
    documents = []
    named = _field_names(source.text_field)  # the first of these a row has (a folder's tables may differ)
    for number, record in _records(source, result):
        if named:
            name = next((f for f in named if f in record), None)
        else:
            name = next((f for f in TEXT_FIELDS if isinstance(record.get(f), str)), None)
        if name is None:
            fields = ", ".join(record) or "none"
            lacks = f"has none of the fields {', '.join(map(repr, named))}" if len(named) > 1 else (
                f"lacks the field {named[0]!r}" if named else "has no text field")
            raise UnreadableFileError(
                f"row {number} {lacks} (fields: {fields}); name the text field with --text-field, several "
                "separated by commas for tables that differ (text_field= in Python)"
            )
        text = record[name]
        if not isinstance(text, str):
            raise UnreadableFileError(f"row {number}: the text field {name!r} holds a {type(text).__name__}, not text")
        if not text.strip():
            result.warn(source.file, f"row {number} has no text and was left out")
            continue
        id_name = source.id_field or "id"
        given = record.get(id_name)
        if source.id_field and given in (None, ""):
            raise UnreadableFileError(f"row {number} has no value in the id field {source.id_field!r}")
        metadata = {k: v for k, v in record.items() if k not in (name, id_name)}
        metadata.setdefault("row", number)
        doc_id = str(given) if given not in (None, "") else f"{source.rel}#{number}"
        documents.append(source.document(text, doc_id, **metadata))
    return documents


LOADERS: dict[str, Callable[[_Source, LoadResult], list[Document]]] = {
    **dict.fromkeys(TEXT_SUFFIXES, _text_file),
    **dict.fromkeys(HTML_SUFFIXES, _html_file),
    **dict.fromkeys(TABLE_SUFFIXES | RECORD_SUFFIXES, _record_file),
    ".pdf": _pdf_file,
    ".docx": _docx_file,
}


# -- folders -------------------------------------------------------------------------------------
def _files(root: Path, result: LoadResult) -> list[Path]:
    """The files of ``root`` (itself when a file), hidden ones left out, and the folders that
    hold a Rhizome index (an index built into the folder it reads: its manifest is no document)."""
    if root.is_file():
        return [root]
    indexes = {f.parent for f in root.rglob(RECORDS) if (f.parent / MANIFEST).is_file()}
    for index in sorted(indexes):
        result.warn(index, "a Rhizome index (its manifest and records): left out")
    found = []
    for file in sorted(root.rglob("*")):
        parts = file.relative_to(root).parts
        if any(part.startswith(".") for part in parts) or indexes.intersection(file.parents) or file.is_dir():
            continue
        if file.is_file():
            found.append(file)
        elif file.suffix.lower() not in SUFFIXES:
            result.unsupported.append(str(file))
        elif file.is_symlink():
            result.unreadable[str(file)] = "it is a link to a file that does not exist"
        else:
            result.unreadable[str(file)] = "it is not a regular file (a pipe, socket or device)"
    return found


def load_files(
    path: str | Path, *, text_field: str | None = None, id_field: str | None = None, id_prefix: str | None = None
) -> LoadResult:
    """Documents from a file or a folder (recursively), with every file that gave none.

    ``text_field`` names the column or field holding the text of a CSV row or JSON record
    (several, separated by commas: the first a row has, for a folder whose tables differ;
    default: the first of :data:`TEXT_FIELDS` present); ``id_field`` the one holding its id
    (default ``id`` when present, else ``FILE#N``); ``id_prefix`` is put before every id, with a
    ``/`` (``team-b/notes.md``)."""
    root = Path(path)
    if not root.exists():
        raise InvalidInputError(f"{root} does not exist")
    prefix = _id_prefix(id_prefix)
    result = LoadResult()
    for file in _files(root, result):
        loader = LOADERS.get(file.suffix.lower())
        if loader is None:
            result.unsupported.append(str(file))
            continue
        rel = file.name if root.is_file() else file.relative_to(root).as_posix()
        if printable(rel) != rel or printable(file.resolve()) != str(file.resolve()):  # id and source
            result.unreadable[str(file)] = (
                "its path is not UTF-8 (a name in Latin-1 or another legacy encoding), and a document's id and "
                "source are stored as UTF-8; rename it (e.g. `convmv -f latin1 -t utf8 --notest FILE`) and run again"
            )
            continue
        try:
            documents = loader(_Source(file, rel, text_field, id_field, prefix), result)
        except UnreadableFileError as exc:
            result.unreadable[str(file)] = str(exc)
            continue
        except OSError as exc:
            result.unreadable[str(file)] = f"it cannot be opened ({exc.strerror or exc})"
            continue
        kept = [d for d in documents if d.text.strip()]
        if not kept:
            result.unreadable[str(file)] = "it holds no text"
            continue
        result.documents.extend(kept)
        result.files += 1
    return result


def _id_prefix(id_prefix: str | None) -> str:
    """``"NAME/"`` for an ``id_prefix`` (slashes around it dropped), ``""`` for none."""
    if id_prefix is None:
        return ""
    name = id_prefix.strip().strip("/")
    if not name:
        raise InvalidInputError(f"the id prefix {id_prefix!r} is empty; give a name such as 'team-b' (ids become team-b/FILE)")
    return name + "/"


def load_path(
    path: str | Path, *, text_field: str | None = None, id_field: str | None = None, id_prefix: str | None = None
) -> list[Document]:
    """The documents of :func:`load_files`; each warning and each file that gave no document is
    reported as a :class:`LoaderWarning`. Nothing loadable at all is an
    :class:`~rhizome.core.errors.InvalidInputError` that lists why."""
    result = load_files(path, text_field=text_field, id_field=id_field, id_prefix=id_prefix)
    for file, messages in result.warnings.items():
        for message in messages:
            warnings.warn(f"{file}: {message}", LoaderWarning, stacklevel=2)
    for file, reason in result.unreadable.items():
        warnings.warn(f"{file} was not loaded: {reason}", LoaderWarning, stacklevel=2)
    if result.unsupported:
        warnings.warn(f"{len(result.unsupported)} files of types no loader reads were left out: "
                      f"{describe_files(result.unsupported)}", LoaderWarning, stacklevel=2)
    if not result.documents:
        raise InvalidInputError(no_documents(path, result))
    return result.documents


def no_documents(path: str | Path, result: LoadResult) -> str:
    """Why ``path`` gave no document, as one message."""
    why = [f"{printable(file)}: {reason}" for file, reason in result.unreadable.items()]
    if result.unsupported:
        why.append(f"files of other types: {describe_files(result.unsupported)}")
    return (f"found no documents in {path}; readable files: {', '.join(sorted(SUFFIXES))}"
            + (" — " + "; ".join(why) if why else ""))


def printable(path: str | Path) -> str:
    """``path`` as text that can be printed and stored: a name whose bytes are not UTF-8 (which
    Python keeps as lone surrogates) shows them as ``\\xe9``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def describe_files(files: Sequence[str], limit: int = 5) -> str:
    """A few file names and how many more."""
    names = [printable(Path(f).name) for f in files[:limit]]
    return ", ".join(names) + (f" and {len(files) - limit} more" if len(files) > limit else "")


__all__ = [
    "SUFFIXES",
    "TEXT_FIELDS",
    "LoadResult",
    "LoaderWarning",
    "UnreadableFileError",
    "decode_bytes",
    "describe_files",
    "load_files",
    "load_path",
    "printable",
]
