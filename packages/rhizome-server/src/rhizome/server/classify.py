"""A saved GORAG classifier served as a workspace: ``POST /{ws}/classify`` labels one text or a
batch, each with its candidate labels and the scorer's confidence.

A folder that holds a classifier ``rhizome classify --save DIR`` wrote (its ``classifier.json``)
is served as a classifier workspace, given on the command line as an index is or found under
``--root``. It is opened as ``rhizome classify --classifier DIR`` opens it: with ``--llm``'s chat
model, else offline (TF-IDF keywords, the scorer picks the label); with the embedder it was
built with. Classifying is a read: texts are never indexed online, so the classifier serves
every request the same way and nothing is written.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field, model_validator

from rhizome.server.offload import in_thread
from rhizome.server.schemas import Strict
from rhizome.server.security import require_read

MAX_TEXTS = 1000
"""Most texts one request may classify."""


def holds_classifier(location: str | Path) -> bool:
    """Whether ``location`` is a folder holding a saved GORAG classifier."""
    from rhizome.core.store.storage import is_url
    from rhizome.gorag.persistence import STATE_FILE

    return not is_url(location) and (Path(location) / STATE_FILE).is_file()


@dataclass
class ClassifierWorkspace:
    """A saved classifier under its name."""

    name: str
    location: str | Path
    classifier: Any

    @classmethod
    def open(cls, name: str, location: str | Path, args: argparse.Namespace) -> ClassifierWorkspace:
        import json

        from rhizome.gorag.classifier import GORAGClassifier
        from rhizome.gorag.persistence import STATE_FILE
        from rhizome.tools.cli import make_cli_chat_model, make_cli_embedder

        llm = None if args.offline or not args.llm else make_cli_chat_model(args.llm, args)
        options: dict[str, Any] = {} if llm is not None else {"keyword_source": "tfidf"}
        try:
            built_with = json.loads((Path(location) / STATE_FILE).read_text(encoding="utf-8"))["models"]["embedder"]
        except (OSError, ValueError, KeyError, TypeError):
            built_with = None  # a damaged file: load() below says so, with a typed error
        if built_with or args.embed:
            options["embedder"] = make_cli_embedder(args.embed or built_with, args)
        return cls(name, location, GORAGClassifier.load(location, llm, **options))

    def describe(self) -> dict[str, Any]:
        clf = self.classifier
        graph = clf.graph
        return {
            "name": self.name, "kind": "classifier", "method": "gorag", "modes": [],
            "models": {"embedder": getattr(clf.embedder, "name", None), "llm": getattr(clf.llm, "name", None)},
            "counts": {"labels": len(clf.labels), "rounds": clf.round, "nodes": graph.number_of_nodes(), "edges": graph.number_of_edges()},
            "labels": list(clf.labels), "chat_models": [], "writable": False,
        }

    async def classify(self, texts: list[str]) -> list[ClassifiedText]:
        """Each text's label, candidates and confidence (a text that cannot be classified gets
        its error in its place; the others are classified)."""
        results = await in_thread(lambda: self.classifier.abatch(texts, online=False))
        return [ClassifiedText.of(result) for result in results]


class ClassifyRequest(Strict):
    text: str | None = Field(None, min_length=1, description="one text to label")
    texts: list[str] | None = Field(None, min_length=1, max_length=MAX_TEXTS, description=f"a batch (at most {MAX_TEXTS})")

    @model_validator(mode="after")
    def _one_of(self) -> ClassifyRequest:
        if (self.text is None) == (self.texts is None):
            raise ValueError('give "text" (one text) or "texts" (a batch), not both')
        return self

    def batch(self) -> list[str]:
        return [self.text] if self.text is not None else list(self.texts or [])


class Candidate(BaseModel):
    label: str
    probability: float = Field(description="the scorer's calibrated probability")


class ClassifiedText(BaseModel):
    label: str | None = Field(description="the label (null: the text could not be classified, see error)")
    confidence: float = Field(0.0, description="the scorer's probability of the label")
    candidates: list[Candidate] = Field(default_factory=list, description="the candidate labels, most probable first")
    keywords: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list, description="keywords of the text linked to the label in the graph")
    guess: bool = Field(False, description="no keyword of the text is in the graph: the label is a guess")
    error: str | None = None

    @classmethod
    def of(cls, result: Any) -> ClassifiedText:
        if result.label is None:  # a ClassificationError
            return cls(label=None, error=result.error)
        return cls(label=result.label, confidence=result.confidence, keywords=result.keywords, evidence=result.evidence,
                   candidates=[Candidate(label=c, probability=result.scores.get(c, 0.0)) for c in result.candidates],
                   guess=result.fallback == "no_terminals")


class ClassifyResponse(BaseModel):
    workspace: str
    results: list[ClassifiedText] = Field(description="one per text, in order")


router = APIRouter(dependencies=[Depends(require_read)])


@router.post("/{ws}/classify", response_model=ClassifyResponse, tags=["classify"])
async def classify(request: Request, ws: str, body: ClassifyRequest) -> ClassifyResponse:
    """Label one text or a batch with the workspace's saved GORAG classifier."""
    from rhizome.server.state import server

    space = server(request).workspaces.classifier(ws)
    return ClassifyResponse(workspace=space.name, results=await space.classify(body.batch()))
