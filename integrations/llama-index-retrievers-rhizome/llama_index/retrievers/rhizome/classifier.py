"""A LlamaIndex transformation that labels nodes with a Rhizome classifier (GORAG).

Use it in an ``IngestionPipeline`` (or call it on nodes) to write each node's label into its
metadata, so retrieval can later filter on it. Generic over any classifier with ``abatch``
returning results with ``label`` and ``candidates``; no dependency on ``rhizome-gorag``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from pydantic import ConfigDict, Field, field_validator

from rhizome.core.aio import run_sync


class RhizomeClassifierTransform(TransformComponent):
    """Label documents with a Rhizome classifier and store the label in their nodes' metadata.

    With ``per="document"`` (default) the nodes that come from one source document (the same
    ``ref_doc_id``) are joined in order and classified once, as one text, and every one of them
    gets that label: a label is a property of the document, not of a chunk. ``per="node"``
    classifies each node by itself; a node without a source document is its own document.

    ``label_key`` receives the label; with ``candidates_key`` set, the candidate labels as a
    comma-separated string (LlamaIndex metadata must stay flat). Documents are classified in
    order of their first node; with online indexing each may grow the classifier for the next.
    A document the classifier cannot take (e.g. empty text) gets ``error_key`` instead of a
    label; the others are labelled.

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
    per: Literal["document", "node"] = "document"
    options: dict[str, Any] = Field(default_factory=dict)
    """Further keyword arguments of the classifier's ``abatch`` (GORAG: ``index_threshold``)."""
    error_key: str = "label_error"
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

    def _groups(self, nodes: list[BaseNode]) -> list[list[int]]:
        """Positions of the nodes of each document, documents in order of first appearance."""
        groups: dict[str, list[int]] = {}
        for i, node in enumerate(nodes):
            key = f"node:{node.node_id}" if self.per == "node" or not node.ref_doc_id else f"doc:{node.ref_doc_id}"
            groups.setdefault(key, []).append(i)
        return list(groups.values())

    @staticmethod
    def _document_text(nodes: list[BaseNode]) -> str:
        def start(node: BaseNode) -> int:
            return getattr(node, "start_char_idx", None) or 0

        ordered = sorted(nodes, key=start)  # stable: nodes without offsets keep their order
        return "\n\n".join(node.get_content(metadata_mode=MetadataMode.NONE) for node in ordered)

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        nodes = list(nodes)
        groups = self._groups(nodes)
        texts = [self._document_text([nodes[i] for i in group]) for group in groups]
        results = await self.classifier.abatch(texts, online=self.online, **self.options)
        for group, result in zip(groups, results):
            for i in group:
                node = nodes[i]
                if getattr(result, "label", None) is None:
                    node.metadata[self.error_key] = str(getattr(result, "error", "could not be classified"))
                    for stale in (self.label_key, self.candidates_key):  # from an earlier classification
                        if stale:
                            node.metadata.pop(stale, None)
                    keys = [self.error_key]
                else:
                    node.metadata.pop(self.error_key, None)
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
