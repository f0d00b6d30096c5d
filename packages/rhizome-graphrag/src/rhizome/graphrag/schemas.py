"""The JSON shapes the chat model fills in for searches: map points, relevance ratings and
DRIFT steps (community reports use the kernel's :class:`~rhizome.core.index.writers.CommunityReport`).
Flat and short, so that small local models follow them; validators accept the harmless variants
small models produce (a number as a string, a rating out of range) and reject what cannot be
used, which makes the model layer retry with the error shown."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from rhizome.core.models.lenient import LenientModel, TextList, clamped


class MapPoint(LenientModel):
    description: str = Field(description="one key point that helps answer the question")
    score: clamped(0, 100) = Field(description="how important the point is for the answer, 0 to 100")  # type: ignore[valid-type]
    reports: TextList = Field(default_factory=list, description="ids of the reports it rests on")


class MapOutput(LenientModel):
    points: list[MapPoint] = Field(description="the key points; empty when the reports do not help")


class RatingOutput(LenientModel):
    rating: clamped(0, 5, integer=True) = Field(description="relevance of the report to the question, 0 (none) to 5 (essential)")  # type: ignore[valid-type]


class DriftStep(LenientModel):
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
    "MapOutput",
    "MapPoint",
    "RatingOutput",
]
