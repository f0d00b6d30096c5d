"""The documentation runs as written: every Python block of README.md, docs/*.md and the README
of every package and integration is executed, offline, and every shell command of README.md and
docs/ that needs the environment says ``uv run rhizome`` (a package's README speaks to a pip
user, for whom ``rhizome`` is on the PATH).

A page's blocks run in order in one namespace, in a fresh folder holding ``my-docs/`` (a copy of
the sample corpus the package ships and ``rhizome demo`` indexes: what a reader following the
README has), with ``OLLAMA_HOST`` pointing at the loopback stub of the Ollama API
(tests/ollama_stub.py): ``ollama:`` models answer there, structured calls with JSON that fits
their schema. A block that cannot run so (it needs a file only its reader has, a package not
installed here) is marked, just above it, ``<!-- not run: why -->``; the marks are few and each
says why. A link to a heading (``#anchor``, ``page.md#anchor``) must name a heading that exists,
and a relative link must name a file of the repository. The benchmark results pages
(docs/results/) are rendered from benchmarks/results/*.json: a page that differs from what its
JSON renders to fails.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from ollama_stub import OllamaStub

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PACKAGE_PAGES = [*sorted(ROOT.glob("packages/*/README.md")), *sorted(ROOT.glob("integrations/*/README.md"))]
BLOCK = re.compile(r"(?:<!--\s*(?P<mark>[^>]*?)\s*-->\n)?```(?P<lang>\w*)\n(?P<code>.*?)^```", re.DOTALL | re.MULTILINE)
MOST_NOT_RUN = 4
"""How many blocks in all may be marked not run (kept small on purpose)."""

def blocks(page: Path, lang: str = "python") -> list[tuple[int, str, str]]:
    """``(line, mark, code)`` of each block of ``lang`` on ``page`` (mark: the comment just above)."""
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start("code")) + 1, (m.group("mark") or "").strip(), m.group("code"))
        for m in BLOCK.finditer(text)
        if m.group("lang") == lang
    ]


def not_run(mark: str) -> bool:
    return mark.startswith("not run")


@pytest.fixture
def reader_folder(tmp_path, monkeypatch):
    """A folder like a reader's: my-docs/ holding the shipped sample corpus, the stub as the
    Ollama server."""
    from rhizome.core.models.fake import SchemaResponder
    from rhizome.rag.demo import sample_corpus

    shutil.copytree(sample_corpus(), tmp_path / "my-docs")
    responder = SchemaResponder()
    with OllamaStub(models=["qwen2.5:7b-instruct", "nomic-embed-text:latest", "llama3.1:latest", "bge-m3:latest"],
                    embed_dimension=32) as stub:
        stub.reply_fn = lambda body: (
            responder(body["messages"], body["format"]) if body.get("format") else "Piet Hale kept the Oskel light [1]."
        )
        monkeypatch.setenv("OLLAMA_HOST", stub.url)
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def page_id(page: Path) -> str:
    return page.name if page.parent in (ROOT, ROOT / "docs") else f"{page.parent.name}/{page.name}"


LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", [p for p in PAGES + PACKAGE_PAGES if blocks(p)], ids=page_id)
def test_every_python_block_runs(page, reader_folder):
    namespace: dict = {"__name__": f"docs.{page.stem}"}
    for line, mark, code in blocks(page):
        if not_run(mark):
            assert mark.partition(":")[2].strip(), f"{page.name}:{line}: say why the block is not run"
            continue
        try:
            exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)
        except Exception as exc:  # name the block, not only the line inside it
            raise AssertionError(f"the block at {page.relative_to(ROOT)}:{line} fails: {type(exc).__name__}: {exc}") from exc


def test_the_loader_block_runs_on_files_without_a_title(tmp_path, monkeypatch, capsys):
    """Defect: docs/documents.md's first block read ``doc.metadata["title"]``, a KeyError on a
    .txt file or a CSV or JSON Lines row without a title (the sample corpus has titles only)."""
    (tmp_path / "my-docs").mkdir()
    (tmp_path / "my-docs" / "note.txt").write_text("The moot meets each spring.", encoding="utf-8")
    (tmp_path / "my-docs" / "rows.csv").write_text("id,text\nr1,The ferry crosses twice a day.\n", encoding="utf-8")
    (tmp_path / "my-docs" / "rows.jsonl").write_text('{"id": "j1", "text": "Gulls nest on the cliffs."}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    line, _, code = blocks(ROOT / "docs" / "documents.md")[0]
    assert "load_files" in code
    exec(compile(code, f"docs/documents.md:{line}", "exec"), {"__name__": "docs.documents"})
    assert {"note.txt", "r1", "j1"} <= set(capsys.readouterr().out.split())


def test_few_blocks_are_marked_not_run():
    marked = [(p.name, line, mark) for p in PAGES + PACKAGE_PAGES for line, mark, _ in blocks(p) if not_run(mark)]
    assert len(marked) <= MOST_NOT_RUN, marked


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_commands_say_uv_run(page):
    """`uv sync` does not put `rhizome` on the PATH: a command that needs the environment is
    written `uv run rhizome ...`."""
    for lang in ("bash", "sh", "shell", "console", ""):
        for line, _, code in blocks(page, lang):
            for offset, command in enumerate(code.splitlines()):
                words = command.strip().lstrip("$ ").split()
                if words[:1] == ["rhizome"] or (len(words) > 1 and words[0] in ("&&", ";") and words[1] == "rhizome"):
                    pytest.fail(f"{page.name}:{line + offset}: write `uv run rhizome`, not `{command.strip()}`")


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives ``page``'s headings (lower case, punctuation dropped, spaces as
    hyphens; a repeated heading gets ``-1``, ``-2``, ...)."""
    out: set[str] = set()
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = 0
        while (slug if n == 0 else f"{slug}-{n}") in out:
            n += 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


@pytest.mark.parametrize("page", PAGES + PACKAGE_PAGES, ids=page_id)
def test_links_to_headings_resolve(page):
    """Every ``[...](#anchor)`` and ``[...](page.md#anchor)`` link of a page names a heading."""
    text = page.read_text(encoding="utf-8")
    broken = []
    for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", text):
        linked = page if not target else (page.parent / target).resolve()
        if linked.suffix == ".md" and linked.exists() and anchor not in anchors(linked):
            broken.append(f"{target}#{anchor}")
    assert not broken, f"{page_id(page)}: links to no heading: {broken}"


@pytest.mark.parametrize("page", PAGES + PACKAGE_PAGES, ids=page_id)
def test_relative_links_name_files_of_the_repository(page):
    """Every relative link (``[...](other.md)``, ``[...](../benchmarks/render.py)``) names a file
    or folder that exists, and none leaves the repository."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    broken = []
    for target in LINK.findall(text):
        path = target.split("#", 1)[0]
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path):  # an anchor on the page, a URL, mailto:
            continue
        linked = (page.parent / path).resolve()
        if not linked.exists() or ROOT not in (linked, *linked.parents):
            broken.append(target)
    assert not broken, f"{page_id(page)}: links to no file of the repository: {broken}"


def test_results_pages_are_what_the_json_renders_to():
    """docs/results/ is generated: each page equals what ``python -m benchmarks render`` makes of
    benchmarks/results/*.json now (a changed results file needs its page rendered again)."""
    from benchmarks import render

    stale = [path for path, text in render.render_all().items()
             if not (ROOT / path).exists() or (ROOT / path).read_text(encoding="utf-8") != text]
    assert not stale, f"out of date, run `uv run python -m benchmarks render`: {stale}"


def test_every_results_file_is_on_a_page():
    """A results file that benchmarks/render.py places on no page would be published nowhere."""
    from benchmarks import render

    placed = {name for page in render.PAGE_ORDER for name in render.render_page(page)[1]}
    missing = sorted(p.name for p in render.RESULTS.glob("*.json") if p.name not in placed)
    assert not missing, f"place these in benchmarks/render.py's PAGES: {missing}"


OUTSIDE = re.compile(r"\.\./shared|(?<![\w./-])specs?/[\w-]+\.md|(?<![\w.-])/work/|(?<![\w.-])seeds/")
"""A path into a folder beside the repository (a shared data or design folder, a workspace)."""


def test_nothing_points_outside_the_repository():
    """The docs, the README and the benchmarks name the data sets and the environment variable
    that finds them (``RHIZOME_SHARED_DATA``), never a file outside the repository."""
    files = [*PAGES, *PACKAGE_PAGES, *sorted((ROOT / "benchmarks").rglob("*.py")),
             *sorted((ROOT / "benchmarks" / "results").glob("*.json"))]
    found = [f"{f.relative_to(ROOT)}:{n}" for f in files
             for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if OUTSIDE.search(line)]
    assert not found, found
