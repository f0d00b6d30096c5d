"""Progress a person can read: the phases of an offline graph index as the command line prints
them (a snapshot, times left out), the callback form of the library, and bars on a terminal."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from rhizome.core.progress import phase, reporting
from rhizome.rag.cli import main, sample_corpus
from rhizome.tools.testing import CORPUS, IndexConformance, registered_methods

SNAPSHOTS = Path(__file__).parent / "snapshots"


def normalised(text: str) -> str:
    """The output without what changes from run to run: durations and the temporary paths."""
    return re.sub(r"(in|time:) \d+\.\d s", r"\1 <t> s", text)


def test_an_offline_graph_index_prints_its_phases(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("rhizome.core.progress.HEARTBEAT", 1e9)  # a busy machine's slow phase adds no line
    code = main(["index", str(sample_corpus()), "--method", "graphrag", "--out", str(tmp_path / "g"), "--offline", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0, err
    snapshot = SNAPSHOTS / "graphrag_offline_index.txt"
    shown = normalised(err) + "---\n" + normalised(out.replace(str(tmp_path), "<tmp>").replace(str(sample_corpus()), "<corpus>"))
    if os.environ.get("RHIZOME_UPDATE_SNAPSHOTS"):
        snapshot.write_text(shown, encoding="utf-8")
    assert shown == snapshot.read_text(encoding="utf-8"), "set RHIZOME_UPDATE_SNAPSHOTS=1 to accept a deliberate change"


def test_the_summary_of_a_tree_index_counts_its_summary_nodes(tmp_path, capsys):
    code = main(["index", str(sample_corpus()), "--method", "raptor", "--out", str(tmp_path / "r"), "--offline", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert re.search(r"^  tree: \d+ summary nodes? in 1 level above the chunks$", out, re.MULTILINE), out
    assert "  clustering (level 1): 18/18 nodes" in err and "  summarising clusters (level 1): " in err


def test_the_library_reports_phases_to_a_callback_when_asked():
    from rhizome.graphrag import GraphRAGIndex

    seen: list[tuple[str, int, int]] = []
    index = GraphRAGIndex(chunk_size=200, chunk_overlap=20, progress=lambda *event: seen.append(event))
    index.insert(CORPUS)
    last = {name: (done, total) for name, done, total in seen}
    assert last["chunking"] == (8, 8) and last["extracting entities (offline)"] == (8, 8)
    assert last["graphrag: indexing 8 new or changed documents"] == (8, 8)  # the run: chunks stored
    assert any(name.startswith("writing community reports") for name in last)
    assert all(done == total for done, total in last.values())
    index.delete(["storm"])
    assert any(name.startswith("embedding entities") for name, *_ in seen[len(last):])
    quiet = GraphRAGIndex(chunk_size=200, chunk_overlap=20)  # the default: nothing
    quiet.insert(CORPUS[:2])


PHASE_LINE = re.compile(r"^  (?P<name>[^:]+): (?P<done>[\d,]+)/(?P<total>[\d,]+) \w+(?P<spent>, [\d,]+ model calls?, [\d,]+ tokens)? in [\d.]+ s$")
STEPS = {  # what each method's run must show besides chunking and embedding (with a model)
    "graphrag": ("extracting entities", "merging extractions", "clustering (hierarchical Leiden)", "writing community reports"),
    "lightrag": ("extracting entities", "merging extractions"),
    "hipporag": ("extracting triples (OpenIE)",),
    "raptor": ("clustering (level 1)", "summarising clusters (level 1)", "embedding summaries (level 1)"),
    "sprag": ("AutoContext titles and summaries of documents", "embedding chunks with their headers"),
}
SETTINGS = {"raptor": {"chunk_size": 16, "chunk_overlap": 0}}
"""Small chunks, so the kit's eight short documents give RAPTOR enough leaves for a tree."""


@pytest.mark.parametrize("method", registered_methods())
def test_every_method_shows_its_steps_by_name_with_the_model_calls(method, capsys):
    """With a (fake) chat model, every registered method's run shows one line per phase, named
    for a person (no stage or collection names), the phases that call the model with their model
    calls and tokens."""
    index = IndexConformance().build(method, documents=[], progress=True, **SETTINGS.get(method, {}))
    index.insert(CORPUS)
    index.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"{method}: indexing 8 new or changed documents", lines
    phases = {}
    for line in lines[1:]:
        found = PHASE_LINE.match(line)
        assert found, f"not a phase line: {line!r}"
        phases[found["name"]] = found
    names = " | ".join(phases)
    assert "chunking" in phases and any(n.startswith("embedding chunks") for n in phases), names
    assert not any(re.search(r"[._]|\btexts\b", n) for n in phases), f"a phase named for the code, not a person: {names}"
    for step in STEPS.get(method, ()):
        assert any(n.startswith(step) for n in phases), f"{method}: no {step!r} phase in {names}"
    if type(index).uses_llm:
        assert any(p["spent"] for p in phases.values()), f"{method}: no phase shows its model calls: {lines}"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_bars_with_a_total_and_an_eta(monkeypatch):
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with reporting(True, "demo run", total=4) as run:
        with phase("extracting entities", 4, "chunk") as step:
            for _ in range(4):
                step.advance()
        run.advance_run(4)
    shown = screen.getvalue()
    assert "demo run:" in shown and "  extracting entities:" in shown
    assert "0/4 [00:00<" in shown  # the total, and tqdm's [elapsed<remaining] once a rate is known


def test_a_log_hears_from_a_long_phase_and_replayed_work_is_shown_once(monkeypatch):
    """Defects: in a pipe or a log a long phase printed nothing until it finished (RAPTOR's
    clustering: minutes of silence); a failing document made every retry of its batch print
    its phases again ('extracting entities' seven times)."""
    import time

    from rhizome.core import progress

    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    monkeypatch.setattr(progress, "HEARTBEAT", 0.05)
    with reporting(True, "a run"):
        with phase("clustering", 10, "node") as step:
            time.sleep(0.3)  # one step that takes a while
            step.advance(10)
        with progress.quietly("  retrying in halves"), progress.quietly("  said once only"), \
                phase("extracting entities", 2, "chunk") as again:
            again.advance(2)
    lines = log.getvalue().splitlines()
    assert any(line.startswith("  clustering: 0/10 nodes so far, still working") for line in lines), lines
    assert any(re.fullmatch(r"  clustering: 10/10 nodes in \d+\.\d s", line) for line in lines), lines
    assert lines.count("  retrying in halves") == 1 and "said once only" not in log.getvalue()  # one note
    assert "extracting entities" not in log.getvalue()  # replayed phases are not shown again
