"""Loaders for the benchmark data sets (hotpotqa-100, musique-dev, graphrag-bench-medical,
gorag-wos), read from the folder ``$RHIZOME_SHARED_DATA`` names (without it, a folder the
project's checkout has beside it). Nothing is copied into the project."""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from rhizome.core.types import Document

ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    path = Path(os.environ.get("RHIZOME_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if not path.is_dir():
        raise FileNotFoundError(
            f"benchmark data not found at {path}; put the shared folder beside the project or set RHIZOME_SHARED_DATA"
        )
    return path


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str
    type: str = ""
    supporting: tuple[str, ...] = field(default_factory=tuple)
    """Titles of the supporting passages (hotpotqa); empty where the data has no gold evidence."""


def _literal(value):
    return ast.literal_eval(value) if isinstance(value, str) else value


@lru_cache(maxsize=2)
def hotpotqa() -> tuple[list[Document], list[Question]]:
    """The 994 passages (document id = title, text = title line + sentences) and 100 questions."""
    base = data_dir() / "hotpotqa-100"
    corpus = json.loads((base / "corpus.json").read_text(encoding="utf-8"))
    documents = [
        Document(id=title, text=f"{title}\n{''.join(sentences).strip()}", metadata={"title": title})
        for title, sentences in corpus.items()
    ]
    questions = []
    for row in json.loads((base / "questions.json").read_text(encoding="utf-8")):
        titles = tuple(dict.fromkeys(t for t, _ in _literal(row["supporting_facts"])))
        questions.append(Question(row["_id"], row["question"], row["answer"], row.get("type", ""), titles))
    return documents, questions


@lru_cache(maxsize=2)
def musique() -> tuple[list[Document], list[Question]]:
    """The 1,890 musique-dev passages (document id = passage id, text = title line + text, as the
    OpenIE file's ``passage`` field) and the 47 questions (supporting = gold passage ids)."""
    base = data_dir() / "musique-dev"
    corpus = json.loads((base / "corpus.json").read_text(encoding="utf-8"))
    documents = [
        Document(id=row["id"], text=f"{row['title']}\n{row['text']}", metadata={"title": row["title"]}) for row in corpus
    ]
    questions = [
        Question(row["id"], row["question"], row["answer"], row["id"].split("__")[0], tuple(row["gold"]))
        for row in json.loads((base / "questions.json").read_text(encoding="utf-8"))
    ]
    return documents, questions


def musique_openie() -> Path:
    """The GPT-3.5-turbo-1106 OpenIE file (HippoRAG's format) of every musique-dev passage."""
    return data_dir() / "musique-dev" / "openie-gpt-3.5-turbo-1106.json"


@lru_cache(maxsize=2)
def medical() -> tuple[list[Document], list[Question]]:
    """The GraphRAG-Bench medical corpus (one long document) and its 2,062 questions."""
    base = data_dir() / "graphrag-bench-medical"
    corpus = json.loads((base / "corpus.json").read_text(encoding="utf-8"))
    documents = [
        Document(id=f"{row['corpus_name']}-{i}", text=row["context"], metadata={"title": row["corpus_name"]})
        for i, row in enumerate(corpus)
    ]
    questions = [
        Question(row["id"], row["question"], row["answer"], row.get("question_type", ""))
        for row in json.loads((base / "questions.json").read_text(encoding="utf-8"))
    ]
    return documents, questions


def wos_round(shots: int, round_: int) -> dict[str, list[tuple[str, str]]]:
    """``{"train"|"dev"|"test": [(label, text), ...]}`` of one gorag-wos round; a missing file
    (round 2's test set is not published) gives an empty list."""
    base = data_dir() / "gorag-wos" / f"wos_{shots}_shot" / f"n{round_}"
    out: dict[str, list[tuple[str, str]]] = {}
    for split in ("train", "dev", "test"):
        path = base / f"{split}.txt"
        rows = []
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                label, sep, text = line.partition("\t")
                if sep and text.strip():
                    rows.append((label.strip(), text.strip()))
        out[split] = rows
    return out
