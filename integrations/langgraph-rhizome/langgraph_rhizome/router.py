"""The offline question router: which index and which retrieval mode a question goes to,
decided without a model.

A question is first given a label — its kind (``specific``, ``multi-hop`` or ``global``, see
:data:`rhizome.core.index.base.QUESTION_KINDS`) by :func:`question_kind`'s rules, or whatever label a
classifier gives (a GORAG classifier trained on labelled questions, or on topics). The label
then picks a route:

- a label in ``routes`` goes where the user said (``"tool"`` or ``"tool:mode"``);
- a question kind goes to the mode that suits it best among the indexes
  (``index.describe_modes()``): a mode whose first kind it is beats one that lists it later,
  then the mode a method lists first (its own default), then the index given first;
- a label that names an index goes to that index's default mode.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from langchain_rhizome.tools import mode_infos, tool_name
from rhizome.core.aio import run_sync
from rhizome.core.errors import ConfigurationError
from rhizome.core.index.base import QUESTION_KINDS
from rhizome.core.retrieval.contract import check_k


class Route(BaseModel):
    """Where one question goes: the tool (index) and mode to search, with ``k``, and the
    label that decided it."""

    tool: str
    mode: str | None = None
    k: int = 5
    label: str

    def arguments(self, query: str) -> dict[str, Any]:
        """The tool call's arguments for ``query``."""
        return {"query": query, "k": self.k, **({"mode": self.mode} if self.mode else {})}


_GLOBAL = re.compile(
    r"\b(summari[sz]e|summary|overview|outline|rewrite|draft|themes?|trends?|patterns?|in general|overall|"
    r"as a whole|across (?:the|all)|big picture|landscape|(?:this|the) (?:context|dataset|corpus|collection)|"
    r"(?:main|key|major|common|recurring|general)\s+(?:ideas?|points?|topics?|issues?|findings?|aspects?|"
    r"subtypes?|types?|categories|challenges|concerns|considerations|recommendations|principles))\b",
    re.IGNORECASE,
)
_COMPARISON = re.compile(
    r"\b(both|same|compare[ds]?|comparison|differ(?:s|ence|ent)?|versus|vs\.?|neither|either)\b"
    r"|\bwhich of the\b"
    r"|\b(?:older|younger|earlier|later|first|longer|shorter|larger|bigger|smaller|higher|lower|more|fewer|"
    r"taller|closer|further|oldest|youngest|largest|biggest|smallest|highest|lowest|most|least)\b[^?]*\bor\b"
    r"|\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*,?\s+or\s+(?:the\s+)?[A-Z]",
)
_BRIDGE = re.compile(
    r"\b(?:the|a|an|this|that|his|her|its|their)\s+(?:[\w'-]+\s+){0,4}?(?:that|which|who|whom|whose|where|when)\s+\w+"
    r"|\b(?:the|a|an)\s+(?:[\w'-]+\s+){0,4}?(?:\w+ed|born|known|made|written|shot|built|held|run|led|set|sung)"
    r"\s+(?:by|in|on|at|for|from|as|with)\b"
    r"|\b\w+'s\s+[\w-]+(?:\s+[\w-]+)?\s+(?:that|which|who|whose)\b"
    r"|\bone of the\b|^\s*why\b"
    r"|\b(?:affects?|influences?|impacts?|leads? to|results? in|relates? to|relationship|interacts?|contributes? to)\b"
    r"|,\s*(?:and|but)\s+(?:what|which|who|how|why|when|where)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-Z][\w'-]*(?:\s+(?:of|the|de|von|van|and|&)?\s*[A-Z][\w'-]*)*")
_QUESTION_WORDS = {"What", "Which", "Who", "Whom", "Whose", "When", "Where", "Why", "How", "Are", "Is", "Was", "Were", "Did", "Do", "Does", "The", "In", "At", "On", "A", "An", "If", "This", "That"}


def question_kind(question: str) -> str:
    """The kind of a question by rules (English): ``global`` when it asks for themes,
    summaries, overviews or a rewrite of the material; ``multi-hop`` when it compares things
    ("both", "which ... or ...", "the same") or reaches its answer through another thing (a
    relative or participle clause after a noun — "the film that was shot in ...", "a game
    developed by ..." —, "one of the ...", a second question joined with "and what", a why or
    an effect of one thing on another), or names three or more distinct things; else
    ``specific``."""
    text = " ".join(question.split())
    if _GLOBAL.search(text):
        return "global"
    if _COMPARISON.search(text) or _BRIDGE.search(text):
        return "multi-hop"
    names = {m.group(0) for m in _NAME.finditer(text) if m.group(0) not in _QUESTION_WORDS}
    return "multi-hop" if len(names) >= 3 else "specific"


class QuestionRouter:
    """Routes questions to an index and a mode (see the module docstring).

    Parameters
    ----------
    indexes:
        The indexes by tool name (as :func:`create_rag_agent` names them).
    classifier:
        Anything with ``aclassify(text)`` returning a result with a ``label`` (a GORAG
        classifier); ``None``: :func:`question_kind`.
    routes:
        Label → ``"tool"`` or ``"tool:mode"``, before the defaults.
    k:
        Hits asked for on every route.
    """

    def __init__(
        self,
        indexes: Mapping[str, Any],
        *,
        classifier: Any = None,
        routes: Mapping[str, str] | None = None,
        k: int = 5,
    ) -> None:
        if not indexes:
            raise ConfigurationError("the router needs at least one index")
        if classifier is not None and not callable(getattr(classifier, "aclassify", None)):
            raise ConfigurationError(f"classifier must have aclassify (e.g. rhizome.gorag.GORAGClassifier); got {type(classifier).__name__}")
        self.indexes = dict(indexes)
        self.classifier = classifier
        self.k = check_k(k)
        self.modes = {name: mode_infos(index) for name, index in self.indexes.items()}
        self.routes = {label: self._parse(label, target) for label, target in (routes or {}).items()}
        self.defaults = {kind: self._best(kind) for kind in QUESTION_KINDS}

    def _parse(self, label: str, target: str) -> tuple[str, str | None]:
        tool, _, mode = target.partition(":")
        if tool not in self.indexes:
            raise ConfigurationError(f"route {label!r} → {target!r}: no index named {tool!r} (indexes: {', '.join(self.indexes)})")
        if mode and mode not in self.modes[tool]:
            raise ConfigurationError(f"route {label!r} → {target!r}: {tool} has no mode {mode!r} (modes: {', '.join(map(str, self.modes[tool]))})")
        return tool, mode or next(iter(self.modes[tool]))

    def _best(self, kind: str) -> tuple[str, str | None]:
        candidates = [
            (0 if info.suits[0] == kind else 1, position, order, tool, mode)
            for order, (tool, modes) in enumerate(self.modes.items())
            for position, (mode, info) in enumerate(modes.items())
            if kind in info.suits
        ]
        if not candidates:
            tool = next(iter(self.indexes))
            return tool, next(iter(self.modes[tool]))
        *_, tool, mode = min(candidates)
        return tool, mode

    async def alabel(self, question: str) -> str:
        """The label of ``question``: the classifier's, or its kind by rules."""
        if self.classifier is None:
            return question_kind(question)
        return str((await self.classifier.aclassify(question)).label)

    async def aroute(self, question: str) -> Route:
        label = await self.alabel(question)
        return self.route_label(label)

    def route(self, question: str) -> Route:
        return run_sync(self.aroute(question))

    def route_label(self, label: str) -> Route:
        """The route of a label (see the module docstring)."""
        if label in self.routes:
            tool, mode = self.routes[label]
        elif label in self.defaults:
            tool, mode = self.defaults[label]
        elif label in self.indexes:
            tool, mode = label, next(iter(self.modes[label]))
        else:
            raise ConfigurationError(
                f"the label {label!r} has no route: give routes={{{label!r}: 'tool:mode'}}, or label questions "
                f"with a question kind ({', '.join(QUESTION_KINDS)}) or an index name ({', '.join(self.indexes)})"
            )
        return Route(tool=tool, mode=mode, k=self.k, label=label)

    def table(self) -> dict[str, str]:
        """Every label this router knows and where it goes, ``tool`` or ``tool:mode``."""
        out = {}
        for label in [*self.routes, *[k for k in QUESTION_KINDS if k not in self.routes]]:
            route = self.route_label(label)
            out[label] = f"{route.tool}:{route.mode}" if route.mode else route.tool
        return out


def named_indexes(indexes: Any) -> dict[str, Any]:
    """Indexes by tool name: a mapping as given (names made tool-safe), or a sequence named
    ``search_<method>`` (two of one method need a mapping)."""
    if isinstance(indexes, Mapping):
        out = {tool_name(name): index for name, index in indexes.items()}
    else:
        items = list(indexes) if isinstance(indexes, list | tuple) else [indexes]
        out = {}
        for index in items:
            name = tool_name(f"search_{getattr(index, 'method', 'index')}")
            if name in out:
                raise ConfigurationError(f"two indexes would both be called {name!r}; pass indexes as a dict of names")
            out[name] = index
    if not out:
        raise ConfigurationError("give at least one index (indexes={'name': index, ...})")
    for name, index in out.items():
        if not callable(getattr(index, "as_retriever", None)):
            raise ConfigurationError(f"{name}: expected a Rhizome index (with as_retriever); got {type(index).__name__}")
    return out


__all__ = ["QuestionRouter", "Route", "named_indexes", "question_kind"]
