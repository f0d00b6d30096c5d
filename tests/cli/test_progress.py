"""Progress a person can read: the phases of an offline graph index as the command line prints
them (a snapshot, times left out), the callback form of the library, and bars on a terminal."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

from rhizome.core.progress import phase, reporting
from rhizome.rag.cli import main, sample_corpus

SNAPSHOTS = Path(__file__).parent / "snapshots"


def normalised(text: str) -> str:
    """The output without what changes from run to run: durations and the temporary paths."""
    return re.sub(r"(in|time:) \d+\.\d s", r"\1 <t> s", text)


def test_an_offline_graph_index_prints_its_phases(tmp_path, capsys):
    code = main(["index", str(sample_corpus()), "--method", "graphrag", "--out", str(tmp_path / "g"), "--offline", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0, err
    snapshot = SNAPSHOTS / "graphrag_offline_index.txt"
    shown = normalised(err) + "---\n" + normalised(out.replace(str(tmp_path), "<tmp>").replace(str(sample_corpus()), "<corpus>"))
    if os.environ.get("RHIZOME_UPDATE_SNAPSHOTS"):
        snapshot.write_text(shown, encoding="utf-8")
    assert shown == snapshot.read_text(encoding="utf-8"), "set RHIZOME_UPDATE_SNAPSHOTS=1 to accept a deliberate change"


def test_the_library_reports_phases_to_a_callback_when_asked():
    from rhizome.core.testing import CORPUS
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
    assert any(name.startswith("embedding graphrag_entities") for name, *_ in seen[len(last):])
    quiet = GraphRAGIndex(chunk_size=200, chunk_overlap=20)  # the default: nothing
    quiet.insert(CORPUS[:2])


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
