"""LangChain's structured-query filters (``langchain_core.structured_query``: what a
self-query retriever's LLM writes) as Rhizome metadata filters.

Rhizome's own filter is already a LangChain filter dict (``{"year": {"$gt": 1900}}``, ``$or``,
``$in`` ..., see :mod:`rhizome.core.retrieval.filters`), so a dict passes through unchanged;
:class:`RhizomeTranslator` turns a ``Comparison`` or ``Operation`` into one, and is the
translator to give ``SelfQueryRetriever(structured_query_translator=RhizomeTranslator())``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.structured_query import (
    Comparator,
    Comparison,
    Operation,
    Operator,
    StructuredQuery,
    Visitor,
)

from rhizome.core.errors import InvalidInputError

_COMPARATORS = {
    Comparator.EQ: "$eq", Comparator.NE: "$ne", Comparator.GT: "$gt", Comparator.GTE: "$gte",
    Comparator.LT: "$lt", Comparator.LTE: "$lte", Comparator.IN: "$in", Comparator.NIN: "$nin",
    Comparator.CONTAIN: "$contains", Comparator.LIKE: "$icontains",
}
"""Each LangChain comparator and its Rhizome operator (``like``: a substring, letters A-Z
compared without case, as Rhizome has no patterns)."""


class RhizomeTranslator(Visitor):
    """A structured query's filter as a Rhizome filter dict: every comparator (``like`` as
    ``$icontains``) and every operator (``and``, ``or``, ``not``)."""

    allowed_comparators = tuple(_COMPARATORS)
    allowed_operators = (Operator.AND, Operator.OR, Operator.NOT)

    def visit_operation(self, operation: Operation) -> dict[str, Any]:
        parts = [argument.accept(self) for argument in operation.arguments]
        if operation.operator == Operator.NOT:
            return {"$not": parts[0] if len(parts) == 1 else {"$and": parts}}
        return {f"${operation.operator.value}": parts}

    def visit_comparison(self, comparison: Comparison) -> dict[str, Any]:
        return {comparison.attribute: {_COMPARATORS[comparison.comparator]: comparison.value}}

    def visit_structured_query(self, structured_query: StructuredQuery) -> tuple[str, dict[str, Any]]:
        if structured_query.filter is None:
            return structured_query.query, {}
        return structured_query.query, {"filter": structured_query.filter.accept(self)}


def rhizome_filter(filter: Any) -> dict[str, Any] | None:
    """A Rhizome filter dict from a dict (unchanged), a structured-query ``Comparison`` or
    ``Operation``, or ``None``."""
    if filter is None or isinstance(filter, dict):
        return filter
    if isinstance(filter, (Comparison, Operation)):
        return filter.accept(RhizomeTranslator())
    raise InvalidInputError(
        f"a filter is a dict such as {{'year': {{'$gt': 1900}}}} or a LangChain Comparison or Operation, "
        f"not a {type(filter).__name__}"
    )


__all__ = ["RhizomeTranslator", "rhizome_filter"]
