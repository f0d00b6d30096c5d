"""The indexes a server holds open, each a named workspace.

Names come from the command line only: ``NAME=LOCATION``, or a location whose folder name (a
database's schema) is the name, or every index folder under ``--root``. A request names a
workspace and gets it or a 404: nothing a client sends is ever turned into a path.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rhizome.core.errors import ConfigurationError
from rhizome.server.errors import WorkspaceKindError, WorkspaceNotFoundError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""A workspace name: letters, digits, ``_ . -``; it cannot hold a ``/`` or start with a dot."""

RESERVED = frozenset({"health", "workspaces", "jobs", "v1", "api", "openapi.json", "mcp", "ui", "agent"})
"""Names the server's own routes use (``ui``: the web page's files), and ``agent`` (the chat model
``rhizome/agent``), which a workspace cannot take."""


@dataclass(frozen=True)
class WorkspaceSpec:
    """A workspace as the command line gives it: its name and the index's location."""

    name: str
    location: str | Path


def check_name(name: str, given: str) -> str:
    if not NAME.match(name) or name in RESERVED:
        raise ConfigurationError(
            f"{given!r} gives the workspace name {name!r}; a name is letters, digits, '_', '.' and '-' "
            f"(at most 64, not starting with '.' or '-', none of {', '.join(sorted(RESERVED))}); "
            "name it yourself with NAME=PATH"
        )
    return name


def parse_spec(item: str) -> WorkspaceSpec:
    """``NAME=LOCATION`` or ``LOCATION`` (named after its folder, or a database URL's schema)."""
    from rhizome.core.store.storage import as_location, is_url

    name, sep, rest = item.partition("=")
    if sep and not is_url(item) and NAME.match(name):
        return WorkspaceSpec(check_name(name, item), as_location(rest))
    location = as_location(item)
    if is_url(location):
        from rhizome.core.store.backends.postgres import parse_url

        return WorkspaceSpec(check_name(parse_url(str(location))[1], item), location)
    return WorkspaceSpec(check_name(Path(location).resolve().name, item), location)


def under_root(root: str | Path) -> list[WorkspaceSpec]:
    """Every index folder (and saved classifier) directly under ``root``, named after its folder."""
    from rhizome.core.store.storage import has_index

    folder = Path(root)
    if not folder.is_dir():
        raise ConfigurationError(f"--root {root} is not a folder; give a folder whose subfolders are indexes")
    from rhizome.server.classify import holds_classifier

    return [WorkspaceSpec(check_name(child.name, str(child)), child)
            for child in sorted(folder.iterdir()) if child.is_dir() and (has_index(child) or holds_classifier(child))]


def collect(items: Sequence[str], root: str | Path | None) -> list[WorkspaceSpec]:
    """The workspaces of the command line, each name once."""
    specs = [parse_spec(item) for item in items] + (under_root(root) if root is not None else [])
    seen: dict[str, WorkspaceSpec] = {}
    for spec in specs:
        if spec.name in seen:
            raise ConfigurationError(
                f"two indexes are named {spec.name!r}; name them apart with NAME=PATH (e.g. {spec.name}-2={spec.location})"
            )
        seen[spec.name] = spec
    if not seen:
        raise ConfigurationError("no index to serve: give index folders (or NAME=PATH), or --root DIR holding index folders")
    return list(seen.values())


@dataclass
class Workspace:
    """One open index under its name, with the lock that queues its writes."""

    name: str
    location: str | Path
    index: Any
    read_only: bool = False
    progress_sink: Any = None
    """Where the running write's progress goes (the job that holds :attr:`writer`)."""
    writes: int = 0
    """Inserts and deletes this server finished on the workspace (a key of cached counts)."""
    _writer: asyncio.Lock | None = field(default=None, repr=False)
    _graph_counts: tuple[Any, dict[str, int]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # the kernel reports an insert's phases to the index's progress callable: forward them
        # to the job running now (writes of one workspace run one at a time, see `writer`)
        self.index.progress = self._progress

    def _progress(self, phase: str, done: int, total: int) -> None:
        sink = self.progress_sink
        if sink is not None:
            sink(phase, done, total)

    @property
    def writer(self) -> asyncio.Lock:
        """Queues this workspace's writes on the server's loop, in the order they came (the
        kernel's write lock, which every insert and delete takes too, guards the index itself)."""
        if self._writer is None:
            self._writer = asyncio.Lock()
        return self._writer

    @property
    def default_mode(self) -> str | None:
        return next(iter(self.index.modes), None)

    def modes(self) -> list[str | None]:
        return list(self.index.modes) or [None]

    def chat_models(self) -> list[str]:
        from rhizome.server.chat.names import model_names

        return model_names(self.name, self.modes())

    def counts(self) -> dict[str, int]:
        """Documents, chunks, and what the graph holds (blocking: reads the store). Counting the
        graph reads every entity and relation, so its counts are kept until this server writes
        to the workspace or the numbers of documents and chunks change (another process's
        write, beside a ``--read-only`` server)."""
        index = self.index
        counts = {"documents": index.store.count("documents"), "chunks": len(index)}
        key = (self.writes, counts["documents"], counts["chunks"])
        if self._graph_counts is None or self._graph_counts[0] != key:
            self._graph_counts = (key, index.graph_contents().summary())
        return {**counts, **self._graph_counts[1]}

    def describe(self) -> dict[str, Any]:
        """Method, modes, models and counts (blocking: reads the store)."""
        index = self.index
        counts = self.counts()
        default = self.default_mode
        modes = [{"name": mode, "purpose": info.purpose, "suits": list(info.suits), "default": mode == default}
                 for mode, info in index.describe_modes().items()]
        return {
            "name": self.name,
            "method": index.method,
            "modes": modes,
            "models": {"embedder": index.embedder.name, "llm": getattr(index.llm, "name", None)},
            "counts": counts,
            "chat_models": self.chat_models(),
            "writable": not self.read_only,
            "kind": "index",
        }


class Workspaces:
    """The server's workspaces by name: the indexes (iterating gives them) and the saved
    classifiers (:mod:`rhizome.server.classify`)."""

    def __init__(self, workspaces: Sequence[Workspace], classifiers: Sequence[Any] = ()) -> None:
        self._by_name = {w.name: w for w in workspaces}
        self._classifiers = {c.name: c for c in classifiers}

    @classmethod
    def open(cls, specs: Sequence[WorkspaceSpec], args: argparse.Namespace, *, read_only: bool = False) -> Workspaces:
        """Open every index as ``rhizome query`` opens one (its embedder; ``--llm``, else its own
        chat model, else extractive answers; ``--offline``: none), writable unless ``read_only``.
        A folder holding a saved GORAG classifier is opened as one. One that cannot be opened
        closes those already open and raises."""
        from rhizome.server.classify import ClassifierWorkspace, holds_classifier
        from rhizome.tools.cli import open_index

        opened: list[Workspace] = []
        classifiers: list[ClassifierWorkspace] = []
        try:
            for spec in specs:
                if holds_classifier(spec.location):
                    classifiers.append(ClassifierWorkspace.open(spec.name, spec.location, args))
                    continue
                index = open_index(spec.location, args, readonly=read_only)
                opened.append(Workspace(spec.name, spec.location, index, read_only=read_only))
        except BaseException:
            for workspace in opened:
                workspace.index.close()
            raise
        return cls(opened, classifiers)

    def get(self, name: str) -> Workspace:
        """The index workspace ``name`` (a classifier's name is a 400 that says what it does)."""
        workspace = self._by_name.get(name)
        if workspace is None:
            if name in self._classifiers:
                raise WorkspaceKindError(f"workspace {name!r} is a GORAG classifier: it labels texts (POST /{name}/classify) "
                                         "and holds no documents to search or answer from")
            raise WorkspaceNotFoundError(f"no workspace {name!r} on this server; GET /workspaces lists them")
        return workspace

    def classifier(self, name: str) -> Any:
        """The classifier workspace ``name`` (an index's name is a 400 that says what it does)."""
        found = self._classifiers.get(name)
        if found is None:
            if name in self._by_name:
                raise WorkspaceKindError(f"workspace {name!r} is a {self._by_name[name].index.method} index, not a classifier: "
                                         f"search it with POST /{name}/query")
            raise WorkspaceNotFoundError(f"no workspace {name!r} on this server; GET /workspaces lists them")
        return found

    @property
    def classifiers(self) -> list[Any]:
        return list(self._classifiers.values())

    def describe(self) -> list[dict[str, Any]]:
        """Every workspace's description, the indexes first (blocking: reads the stores)."""
        return [w.describe() for w in [*self, *self.classifiers]]

    def __iter__(self) -> Iterator[Workspace]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name) + len(self._classifiers)

    def hidden_locations(self) -> list[tuple[str, str]]:
        """What a message must not show, with what a client sees instead: each workspace's
        absolute directory or database URL (as given and as messages show it) becomes its name.
        A relative location as given stays: it names nothing beyond the workspace."""
        from rhizome.core.store.storage import is_url, shown

        pairs: list[tuple[str, str]] = []
        for w in [*self, *self.classifiers]:
            shown_as = f"<workspace {w.name}>"
            if is_url(w.location):
                pairs += [(str(w.location), shown_as), (shown(w.location), shown_as)]
            else:
                pairs.append((str(Path(w.location).resolve()), shown_as))
                if Path(w.location).is_absolute():
                    pairs.append((str(w.location), shown_as))
        return pairs

    def close(self) -> None:
        for workspace in self:
            workspace.index.close()
