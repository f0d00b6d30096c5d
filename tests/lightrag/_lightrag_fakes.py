"""Deterministic fake model answers for the LightRAG tests: extraction over numbered passages,
gleaning, summaries, keywords and resolution checks, all derived from the prompt text."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from rhizome.core import Document, FakeChatModel

PASSAGE = re.compile(r'\[(\d+)\][^\n]*\n"""\n(.*?)\n"""', re.DOTALL)
NAME = re.compile(r"\b(?:[A-Z][a-z]+|[A-Z]{2,})(?: (?:[A-Z][a-z]+|[A-Z]{2,}))*\b")
SKIP = {"The", "A", "An", "In", "It", "He", "She", "They", "Its", "His", "Her"}


def names_in(text: str) -> list[str]:
    found = (n[4:] if n.startswith("The ") else n for n in NAME.findall(text))
    return list(dict.fromkeys(n for n in found if n not in SKIP))


class Responder:
    """Answers every schema the LightRAG package asks for. ``keywords`` fixes the keyword
    answer; ``glean`` adds one extra entity per pack in the gleaning round; ``same`` decides
    resolution checks."""

    def __init__(self, keywords: dict[str, Any] | None = None, glean: bool = False, same: bool = True) -> None:
        self.keywords = keywords
        self.glean = glean
        self.same = same
        self.kinds: list[str] = []

    def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> Any:
        prompt = messages[-1]["content"] if messages[-1]["role"] == "user" else messages[-2]["content"]
        props = set((schema or {}).get("properties", {}))
        if "high_level_keywords" in props:
            self.kinds.append("keywords")
            return self.keywords or {"high_level_keywords": ["history"], "low_level_keywords": names_in(prompt)[:3]}
        if "summary" in props:
            self.kinds.append("summary")
            digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
            subject = prompt.split("\n", 1)[0].replace("Subject: ", "")
            return {"summary": f"Summary {digest} of {subject}."}
        if "same" in props:
            self.kinds.append("resolution")
            count = len(re.findall(r"^\d+\. ", prompt, re.MULTILINE))
            return {"same": list(range(1, count + 1)) if self.same else []}
        if "content_keywords" in props:
            self.kinds.append("extract")
            entities, relations, keywords = [], [], []
            for number, text in PASSAGE.findall(prompt):
                found = names_in(text)
                n = int(number)
                entities += [{"name": x, "type": "PERSON", "description": f"{x} appears in: {text[:60]}", "passages": [n]} for x in found]
                relations += [
                    {"source": a, "target": b, "description": f"{a} and {b} share a passage.", "keywords": ["link"], "strength": 3, "passages": [n]}
                    for a, b in zip(found, found[1:])
                ]
                keywords.append({"passage": n, "keywords": ["topic"]})
            return {"entities": entities, "relations": relations, "content_keywords": keywords}
        if "entities" in props:  # gleaning
            self.kinds.append("glean")
            if not self.glean:
                return {"entities": [], "relations": []}
            passages = PASSAGE.findall(prompt)
            return {"entities": [{"name": f"Gleaned {len(passages)}", "type": "EVENT", "description": "found late", "passages": [1]}], "relations": []}
        self.kinds.append("other")
        return {"answer": "unknown", "citations": [1]}


def fake_model(**kwargs: Any) -> tuple[FakeChatModel, Responder]:
    responder = Responder(**kwargs)
    return FakeChatModel(responder), responder


CORPUS = [
    Document(id="curie", text="Marie Curie worked in Paris. Marie Curie won the Nobel Prize with Pierre Curie.", metadata={"title": "Curie", "source": "curie.txt"}),
    Document(id="paris", text="Paris is the capital of France. The Seine flows through Paris.", metadata={"title": "Paris"}),
    Document(id="nobel", text="The Nobel Prize is awarded in Stockholm. Alfred Nobel founded the Nobel Prize.", metadata={"title": "Nobel"}),
]
