"""Progress of long work, phase by phase, for a person to read.

An insert, delete or refresh is one *run* (:func:`reporting`); the kernel services it uses open
*phases* (:func:`phase`) as they work: chunking, extracting entities, embedding, merging,
summarising, clustering, writing reports. Each phase has a total, so it shows an ETA, and the
model calls and tokens spent so far. Methods get the phases of the services they use with no
code of their own; a method may open its own with :func:`phase`.

``progress`` arguments across Rhizome accept:

- ``True``: on a terminal, one bar per phase (tqdm: rate and ETA) under a bar for the run;
  elsewhere (a pipe, a log file, a notebook's captured output) one line per finished phase, e.g.
  ``  extracting entities: 20/20 chunks, 12 model calls, 8,170 tokens in 3.1 s``, and a line
  every :data:`HEARTBEAT` seconds for a phase still working, so a log never goes silent;
- a callable ``(phase, done, total)``, called as each phase advances;
- ``False`` / ``None``: nothing (the library's default: progress is opt-in).

Outside a run, :func:`phase` is silent and costs nothing, so query-time work never prints.
Work done again (an insert retrying a failed batch in halves) runs :func:`quietly`: one line
says why, and its phases are not shown a second time.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from rhizome.core.aio import scoped

ProgressCallback = Callable[[str, int, int], None]
ProgressArg = bool | ProgressCallback | None

_RUN: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar("rhizome_progress", default=None)
_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("rhizome_progress_quiet", default=False)

HEARTBEAT = 30.0
"""Seconds between the lines of a phase still working, where progress is shown as lines."""


class Phase:
    """One phase of a run: ``advance`` it as work finishes (``add`` when there is more work
    than announced). Outside a run (``reporter`` ``None``) it only counts."""

    def __init__(self, reporter: Reporter | None, name: str, total: int, unit: str, position: int = 1) -> None:
        self.reporter, self.name, self.total, self.unit = reporter, name, total, unit
        self.done = 0
        self.started = self.shown = time.monotonic()
        self.usage_at_start = reporter.usage_now() if reporter else (0, 0)
        self.bar = reporter.bar(f"  {name}", total, unit, position) if reporter else None

    def add(self, n: int) -> None:
        self.total += n
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.refresh()

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.reporter is not None:
            self.reporter.advanced(self, n)

    def close(self) -> None:
        if self.reporter is not None:
            self.reporter.finished(self)

    def __enter__(self) -> Phase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Reporter:
    """Shows one run and its phases on ``stream`` (see the module docstring): a bar per phase
    under the run's bar on a terminal, a line per finished phase elsewhere, or calls to a
    callback."""

    def __init__(self, progress: ProgressArg, title: str, unit: str, total: int, stream: TextIO | None = None) -> None:
        self.callback = progress if callable(progress) else None
        self.stream = stream or sys.stderr
        terminal = progress is True and bool(getattr(self.stream, "isatty", lambda: False)())
        self.bars, self.lines = terminal, progress is True and not terminal
        self.usage: Any = None
        self.open: list[Phase] = []
        if self.lines:
            print(title, file=self.stream, flush=True)
        self.run = Phase(None, title, total, unit)
        self.run.bar = self.bar(title, total, unit, 0)
        self._stop = threading.Event()
        if self.lines:  # a long phase says it is still working
            threading.Thread(target=self._heartbeat, name="rhizome-progress", daemon=True).start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(HEARTBEAT, 5.0)):
            now = time.monotonic()
            for phase in list(self.open):
                if now - phase.shown >= HEARTBEAT:
                    phase.shown = now
                    total = f"/{phase.total:,}" if phase.total else ""
                    self.say(f"  {phase.name}: {phase.done:,}{total} {phase.unit}s so far, still working "
                             f"({now - phase.started:.0f} s)")

    def say(self, text: str) -> None:
        """A line for the person watching (as lines, or above the bars on a terminal)."""
        if self.lines:
            print(text, file=self.stream, flush=True)
        elif self.bars:
            from tqdm.auto import tqdm

            tqdm.write(text, file=self.stream)

    def bar(self, name: str, total: int, unit: str, position: int) -> Any:
        """A tqdm bar on a terminal (none elsewhere)."""
        if not self.bars:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=name, unit=f" {unit}", leave=False, position=position, dynamic_ncols=True, file=self.stream)

    def usage_now(self) -> tuple[int, int]:
        """Model calls and tokens of the run so far."""
        if self.usage is None:
            return 0, 0
        return self.usage.chat.calls, self.usage.chat.prompt_tokens + self.usage.chat.completion_tokens

    def spent(self, since: tuple[int, int]) -> str:
        """The model calls and tokens since ``since``, in words (empty when there were none)."""
        calls, tokens = (now - then for now, then in zip(self.usage_now(), since))
        return f"{calls:,} model call{'' if calls == 1 else 's'}, {tokens:,} tokens" if calls else ""

    def phase(self, name: str, total: int, unit: str) -> Phase:
        found = Phase(self, name, total, unit, position=len(self.open) + 1)
        self.open.append(found)
        return found

    def advanced(self, phase: Phase, n: int) -> None:
        if phase.bar is not None:
            phase.bar.update(n)
            spent = self.spent(phase.usage_at_start)
            if spent:
                phase.bar.set_postfix_str(spent, refresh=False)
        if self.callback is not None:
            self.callback(phase.name, phase.done, phase.total)

    def advance_run(self, n: int) -> None:
        """The run itself advanced by ``n`` of its units (e.g. chunks stored)."""
        self.run.done += n
        self.advanced(self.run, n)

    def finished(self, phase: Phase) -> None:
        if phase.bar is not None:
            phase.bar.close()
        if phase in self.open:
            self.open.remove(phase)
        if self.lines and phase.total:
            spent = self.spent(phase.usage_at_start)
            units = phase.unit if phase.total == 1 else f"{phase.unit}s"
            print(f"  {phase.name}: {phase.done:,}/{phase.total:,} {units}{', ' + spent if spent else ''} "
                  f"in {time.monotonic() - phase.started:.1f} s", file=self.stream, flush=True)

    def close(self) -> None:
        self._stop.set()
        if self.run.bar is not None:
            self.run.bar.close()


@contextlib.contextmanager
def reporting(progress: ProgressArg, title: str, *, unit: str = "chunk", total: int = 0) -> Iterator[Reporter | None]:
    """One run whose phases are shown as ``progress`` asks (nothing when it is falsy);
    ``total`` ``unit``s of the run advance with :meth:`Reporter.advance_run`."""
    if not progress:
        yield None
        return
    from rhizome.core.models.base import usage_scope

    reporter = Reporter(progress, title, unit, total)
    try:
        with scoped(_RUN, reporter), usage_scope() as usage:
            reporter.usage = usage
            yield reporter
    finally:
        reporter.close()


def phase(name: str, total: int, unit: str = "item") -> Phase:
    """A phase of the current run, shown with its total and ETA; silent outside a run. Use it
    as a context manager and ``advance`` it as work finishes."""
    reporter = _RUN.get()
    return reporter.phase(name, total, unit) if reporter is not None and not _QUIET.get() else Phase(None, name, total, unit)


@contextlib.contextmanager
def quietly(note: str) -> Iterator[None]:
    """Run work done again without showing its phases, saying once (``note``) why."""
    reporter = _RUN.get()
    if reporter is not None and not _QUIET.get():
        reporter.say(note)
    with scoped(_QUIET, True):
        yield


def current() -> Reporter | None:
    """The run being reported in this context, if any."""
    return _RUN.get()


__all__ = ["HEARTBEAT", "Phase", "ProgressArg", "ProgressCallback", "Reporter", "current", "phase", "quietly", "reporting"]
