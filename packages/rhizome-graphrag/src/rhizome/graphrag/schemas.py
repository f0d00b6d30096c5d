"""The JSON shapes the chat model fills in: community reports, map points, relevance ratings,
and DRIFT steps. Flat and short, so that small local models follow them; validators
accept the harmless variants small models produce (a number as a string, a rating out of range)
and reject what cannot be used, which makes the model layer retry with the error shown."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rhizome.core.models.lenient import TextList, clamped


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Finding(_Lenient):
    """One insight of a community report."""

    summary: str = Field(description="a one-line headline of the insight")
    explanation: str = Field(description="a short paragraph explaining it, grounded in the data")

    @field_validator("summary", "explanation")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("must not be empty")
        return value.strip()


class ReportOutput(_Lenient):
    """A community report as the model writes it (GraphRAG's fields)."""

    title: str = Field(description="a short, specific title naming the community's key entities")
    summary: str = Field(description="an executive summary of the community in a few sentences")
    rating: clamped(0, 10) = Field(description="impact severity from 0 (none) to 10 (very high)")  # type: ignore[valid-type]
    rating_explanation: str = Field(default="", description="one sentence justifying the rating")
    findings: list[Finding] = Field(description="five to ten key insights about the community")

    @field_validator("title", "summary")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("findings")
    @classmethod
    def _some_findings(cls, value: list[Finding]) -> list[Finding]:
        if not value:
            raise ValueError("give at least one finding")
        return value


class MapPoint(_Lenient):
    description: str = Field(description="one key point that helps answer the question")
    score: clamped(0, 100) = Field(description="how important the point is for the answer, 0 to 100")  # type: ignore[valid-type]
    reports: TextList = Field(default_factory=list, description="ids of the reports it rests on")


class MapOutput(_Lenient):
    points: list[MapPoint] = Field(description="the key points; empty when the reports do not help")


class RatingOutput(_Lenient):
    rating: clamped(0, 5, integer=True) = Field(description="relevance of the report to the question, 0 (none) to 5 (essential)")  # type: ignore[valid-type]


class DriftStep(_Lenient):
    answer: str = Field(description="what the context says about the question, or an empty string")
    follow_ups: list[str] = Field(default_factory=list, description="specific follow-up questions")
    score: clamped(0, 100) = Field(description="how well the context answers the question, 0 to 100")  # type: ignore[valid-type]

    @field_validator("follow_ups", mode="before")
    @classmethod
    def _questions(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value] if value.strip() else []
        return value


__all__ = [
    "DriftStep",
    "Finding",
    "MapOutput",
    "MapPoint",
    "RatingOutput",
    "ReportOutput",
]
