"""Configuration objects: every setting of a method in one validated pydantic model.

Each method declares ``config_class``: a subclass of :class:`IndexConfig` (or of
:class:`ExtractionConfig` for methods that extract a graph) whose fields carry the paper's
defaults and a docstring naming their source. An index is built from its config; the config is
stored in the manifest, reopening the index restores it, and ``rhizome status IDX`` prints it.
One name means one thing across methods (``gleaning``, ``summary_max_tokens``,
``entity_types``...).

Constructors take the fields as keyword arguments (``GraphRAGIndex(max_cluster_size=5)``) or
a config object (``GraphRAGIndex(config=GraphRAGConfig(...))``), like scikit-learn estimators.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rhizome.core.errors import ConfigurationError
from rhizome.core.extraction.llm import DEFAULT_ENTITY_TYPES
from rhizome.core.extraction.spec import check_spec


class IndexConfig(BaseModel):
    """What every index is built with: how documents are cut into chunks."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    chunk_size: int = Field(1200, ge=16)
    """Tokens per chunk: 1,200, as GraphRAG (``chunks.size``) and LightRAG
    (``chunk_token_size``), so every method and the naive baseline see the same text units."""

    chunk_overlap: int = Field(100, ge=0)
    """Tokens shared by neighbouring chunks: 100 (GraphRAG ``chunks.overlap``, LightRAG
    ``chunk_overlap_token_size``)."""

    memory_gb: float | None = Field(None, gt=0)
    """Memory budget of a build in gigabytes: a step that would take the process past it (a
    vector collection loaded or grown, a graph clustered, a set of texts embedded at once)
    works out of core where it can, else stops with a ``MemoryBudgetError`` before it allocates
    anything (:mod:`rhizome.core.memory`). ``None``: ``RHIZOME_MEMORY_GB``, else no budget. A
    setting of the machine, not of the index: kept out of the manifest, free to differ on each open."""

    @model_validator(mode="after")
    def _overlap_fits(self) -> IndexConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}; 100 unless given) must be smaller than chunk_size "
                f"({self.chunk_size}); give a smaller chunk_overlap with it (rhizome index --chunk-overlap)"
            )
        return self


class ExtractionSpecConfig(IndexConfig):
    """What every method that extracts shares: how it extracts (HippoRAG's OpenIE needs no
    more; :class:`ExtractionConfig` adds the settings of described-entity extraction)."""

    extraction: str = "auto"
    """How chunks become entities and relations: ``auto`` (the chat model when one is given,
    else offline), ``llm``, ``offline`` or ``openie:PATH`` (see
    :mod:`rhizome.core.extraction.spec`); stored resolved, so reopening extracts the same way."""

    @field_validator("extraction")
    @classmethod
    def _spec(cls, value: str) -> str:
        return check_spec(value)


class ExtractionConfig(ExtractionSpecConfig):
    """What the methods that extract described entities and relations share (GraphRAG,
    LightRAG): the extraction spec, entity types, gleaning and description summaries."""

    entity_types: tuple[str, ...] = DEFAULT_ENTITY_TYPES
    """Entity types the model may assign: organization, person, geo, event (GraphRAG
    ``extract_graph.entity_types``; LightRAG's extraction prompt)."""

    gleaning: int = Field(1, ge=0)
    """Follow-up extraction calls asking for what was missed (GraphRAG ``max_gleanings`` 1,
    LightRAG ``entity_extract_max_gleaning`` 1)."""

    summary_max_tokens: int = Field(500, ge=16)
    """Length of a merged entity or relation description summary, and the length up to which
    descriptions are joined without a model call (GraphRAG ``summarize_descriptions.max_length``
    500; LightRAG's summary trigger)."""

    summary_max_input_tokens: int = Field(4000, ge=16)
    """Description tokens per summarisation call; more are summarised in groups first (GraphRAG
    ``max_input_tokens`` 4,000; sized for an 8k-context local model)."""

    language: str = "English"
    """Language of generated descriptions, summaries and reports."""

    @field_validator("entity_types", mode="before")
    @classmethod
    def _types(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("entity_types must be a list of type names, not one string")
        return value

    @model_validator(mode="after")
    def _summary_budget(self) -> ExtractionConfig:
        if self.summary_max_input_tokens < self.summary_max_tokens:
            raise ValueError("summary_max_input_tokens must be at least summary_max_tokens")
        return self

    def llm_extractor_options(self) -> dict[str, Any]:
        """The settings of :class:`~rhizome.core.extraction.llm.LLMExtractor` this config
        implies (methods add their own, e.g. packing)."""
        return {"entity_types": self.entity_types, "gleaning": self.gleaning, "language": self.language}


M = TypeVar("M", bound=BaseModel)


def build_config(config_class: type[M], base: BaseModel | dict[str, Any] | None, overrides: dict[str, Any]) -> M:
    """``config_class`` from a config object or dict plus keyword overrides, or a
    :class:`ConfigurationError` naming the bad fields."""
    values = base.model_dump() if isinstance(base, BaseModel) else dict(base or {})
    values.update(overrides)
    try:
        return config_class.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid {config_class.__name__}: {problems}") from None


def describe(config: IndexConfig) -> list[tuple[str, Any, str]]:
    """``(field, value, docstring)`` of every setting, for ``rhizome status``."""
    out = []
    for name, field in type(config).model_fields.items():
        doc = " ".join((field.description or "").split())
        out.append((name, getattr(config, name), doc))
    return out


RUNTIME_FIELDS = frozenset({"memory_gb"})
"""Config fields that belong to the machine an index is opened on, not to the index: left out
of the manifest, and free to differ each time the index is opened."""


__all__ = ["RUNTIME_FIELDS", "ExtractionConfig", "ExtractionSpecConfig", "IndexConfig", "build_config", "describe"]
