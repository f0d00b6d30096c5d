from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from rhizome.core.models.lenient import TextList, clamped


class Sample(BaseModel):
    strength: clamped(1, 10, integer=True)  # type: ignore[valid-type]
    score: clamped(0, 100) = 0.0  # type: ignore[valid-type]
    loose: clamped(1, 10, default=1.0) = 1.0  # type: ignore[valid-type]
    words: TextList = []


@pytest.mark.parametrize("given,expected", [(7, 7), ("7", 7), (7.6, 8), (" 12 ", 10), (-3, 1), ("8/10", 8)])
def test_clamped_integers(given, expected):
    assert Sample(strength=given).strength == expected


def test_clamped_floats_defaults_and_rejections():
    assert Sample(strength=1, score="150").score == 100.0
    assert Sample(strength=1, loose="very strong").loose == 1.0  # falls back to the default
    with pytest.raises(ValidationError):
        Sample(strength="strong")  # no default: the model is asked again


def test_text_lists():
    assert Sample(strength=1, words="a, b;c\nd").words == ["a", "b", "c", "d"]
    assert Sample(strength=1, words=[" x ", "", None, 3]).words == ["x", "3"]
    assert Sample(strength=1, words=None).words == []


def test_schema_states_the_exact_range():
    props = Sample.model_json_schema()["properties"]
    assert props["strength"]["minimum"] == 1 and props["strength"]["maximum"] == 10
    assert props["strength"]["type"] == "integer"
    assert props["words"]["type"] == "array"
