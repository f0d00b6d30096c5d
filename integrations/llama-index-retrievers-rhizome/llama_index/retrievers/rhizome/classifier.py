"""A LlamaIndex transformation that labels nodes with a Rhizome classifier (GORAG).

Use it in an ``IngestionPipeline`` (or call it on nodes) to write each node's label into its
metadata, so retrieval can later filter on it. Generic over any classifier with ``abatch``
returning results with ``label`` and ``candidates``; no dependency on ``rhizome-gorag``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from pydantic import ConfigDict, Field, field_validator

from rhizome.core.aio import run_sync


class RhizomeClassifierTransform(TransformComponent):
    """Label each node's text with a Rhizome classifier and store the label in its metadata.

    ``label_key`` receives the label; with ``candidates_key`` set, the candidate labels as a
    comma-separated string (LlamaIndex metadata must stay flat). Nodes are classified in order;
    with online indexing each may grow the classifier's graph for the next.

    Example:
        .. code-block:: python

            from llama_index.core.ingestion import IngestionPipeline
            pipeline = IngestionPipeline(transformations=[splitter, RhizomeClassifierTransform(classifier=clf)])
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    classifier: Any = Field(description="the classifier: anything with abatch(texts, online=...)")
    label_key: str = "label"
    candidates_key: str | None = "label_candidates"
    online: bool | None = None
    exclude_from_embed: bool = True
    """Keep the label out of the text that gets embedded (it stays visible to the LLM)."""

    @field_validator("classifier")
    @classmethod
    def _check(cls, value: Any) -> Any:
        if callable(getattr(value, "abatch", None)):
            return value
        raise ValueError(
            f"classifier must have abatch(texts, online=...) (e.g. rhizome.gorag.GORAGClassifier); got {type(value).__name__}"
        )

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        nodes = list(nodes)
        texts = [node.get_content(metadata_mode=MetadataMode.NONE) for node in nodes]
        todo = [i for i, text in enumerate(texts) if text.strip()]
        results = await self.classifier.abatch([texts[i] for i in todo], online=self.online)
        for i, result in zip(todo, results):
            node = nodes[i]
            node.metadata[self.label_key] = result.label
            keys = [self.label_key]
            if self.candidates_key:
                node.metadata[self.candidates_key] = ", ".join(result.candidates)
                keys.append(self.candidates_key)
            if self.exclude_from_embed:
                node.excluded_embed_metadata_keys = list(dict.fromkeys([*node.excluded_embed_metadata_keys, *keys]))
        return nodes

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return run_sync(self.acall(nodes, **kwargs))


__all__ = ["RhizomeClassifierTransform"]
