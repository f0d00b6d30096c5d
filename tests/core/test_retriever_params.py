"""A retrieval mode's settings as a pydantic model (RetrieverParams): strict, documented, and a
ConfigurationError that says what is wrong when the retriever is made."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from pydantic import Field, model_validator

from rhizome.core import ConfigurationError, VectorIndex
from rhizome.core.retrieval.contract import BaseRetriever, Retrieval
from rhizome.core.retrieval.params import RetrieverParams, allowed
from rhizome.core.store.storage import method_registry


class WalkParams(RetrieverParams):
    """Settings of a test mode."""

    seeds: int = Field(5, ge=1)
    """Passages the walk starts from."""

    share: float = Field(0.5, ge=0, le=1)
    """Share of the budget for passages."""

    other: float = Field(0.25, ge=0, le=1)
    """Share of the budget for the rest."""

    damping: float = Field(0.5, ge=0, lt=1)
    """Damping of the walk."""

    chains: bool = False
    """Whether chains add seeds."""

    width: int | None = Field(None, ge=1)
    """Width of the walk (``None``: ``k``)."""

    @model_validator(mode="after")
    def _shares_fit(self) -> WalkParams:
        if self.share + self.other > 1:
            raise ValueError(f"share + other must not exceed 1, got {self.share:g} + {self.other:g}")
        return self


class Walk(BaseRetriever):
    mode = "walk"
    params_class = WalkParams
    params: WalkParams

    def _default_settings(self) -> Mapping[str, Any]:
        return {"seeds": self.index.config.chunk_size // 100}

    async def _asearch(self, query: str, k: int) -> Retrieval:
        return Retrieval(query=query)


def test_settings_are_strict_and_say_what_is_allowed():
    assert WalkParams() == WalkParams(seeds=5, share=0.5, other=0.25, damping=0.5, chains=False, width=None)
    for bad, says in [
        ({"seeds": True}, "seeds must be a positive integer, got True"),  # a bool is not an integer
        ({"seeds": 2.0}, "seeds must be a positive integer, got 2.0"),
        ({"seeds": 0}, "seeds must be a positive integer, got 0"),
        ({"chains": "no"}, "chains must be True or False, got 'no'"),  # bool("no") would be true
        ({"share": "0.2"}, "share must be a number between 0 and 1, got '0.2'"),
        ({"share": True}, "share must be a number between 0 and 1, got True"),
        ({"damping": 1.0}, "damping must be a number of at least 0 and below 1, got 1.0"),
        ({"width": 0}, "width must be a positive integer or None, got 0"),
    ]:
        with pytest.raises(ConfigurationError, match=f"^WalkParams: {says}$"):
            WalkParams(**bad)
    # an integer is a number, and numpy scalars count as the values they hold
    assert WalkParams(share=1, other=0).share == 1.0 and isinstance(WalkParams(share=1, other=0).share, float)
    assert WalkParams(seeds=np.int64(3), chains=np.bool_(True)) == WalkParams(seeds=3, chains=True)
    with pytest.raises(ConfigurationError, match="seeds must be a positive integer"):
        WalkParams(seeds=np.bool_(True))


def test_an_unknown_setting_lists_the_settings_there_are():
    with pytest.raises(ConfigurationError, match="WalkParams has no setting 'seed'; its settings are seeds, share, other, damping, chains, width$"):
        WalkParams(seed=3)
    with pytest.raises(ConfigurationError) as caught:
        WalkParams(seeds=0, sead=1, shear=2)
    message = str(caught.value)  # every problem at once: the bad value, then the unknown names
    assert message.startswith("WalkParams: seeds must be a positive integer, got 0. ")
    assert "has no settings 'sead', 'shear'" in message


def test_a_rule_across_settings_is_a_model_validator():
    with pytest.raises(ConfigurationError, match=r"^WalkParams: share \+ other must not exceed 1, got 0.9 \+ 0.25$"):
        WalkParams(share=0.9)
    assert WalkParams(share=0.75).share == 0.75


def test_the_schema_documents_every_setting():
    schema = WalkParams.model_json_schema()
    assert schema["additionalProperties"] is False
    seeds = schema["properties"]["seeds"]
    assert seeds["default"] == 5 and seeds["minimum"] == 1 and seeds["description"] == "Passages the walk starts from."
    assert allowed(schema["properties"]["width"]) == "a positive integer or None"
    assert allowed({"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1}) == "a non-empty list (one of 'a', 'b' each)"
    assert allowed({"type": "number", "exclusiveMinimum": 0}) == "a positive number"


def test_a_retriever_validates_its_settings_once_when_it_is_made():
    index = VectorIndex(chunk_size=300, chunk_overlap=10)
    walk = Walk(index, 3, share=0.25)
    assert isinstance(walk.params, WalkParams) and walk.params.share == 0.25
    assert walk.params.seeds == 3  # the default the mode takes from its index
    assert Walk(index, seeds=None).params.seeds == 3 and Walk(index, seeds=7).params.seeds == 7
    with pytest.raises(ConfigurationError, match="^the walk mode: share must be a number between 0 and 1, got 2$"):
        Walk(index, share=2)
    with pytest.raises(ConfigurationError, match="the walk mode has no setting 'seed'"):
        Walk(index, seed=1)
    with pytest.raises(ConfigurationError, match="the naive mode has no setting 'top_k'; its settings are none"):
        index.as_retriever(top_k=3)  # the naive mode takes no settings
    index.close()


def test_every_mode_of_every_method_declares_documented_settings():
    for name, entry in method_registry().items():
        cls = entry.load()
        index = cls()
        try:
            for mode in cls.modes or (None,):
                retriever = index.as_retriever(mode=mode)
                params = type(retriever).params_class
                assert isinstance(retriever.params, params), (name, mode)
                for field, info in params.model_fields.items():
                    assert info.description, f"{name} {mode}: {field} has no description"
                with pytest.raises(ConfigurationError, match="no setting 'no_such_setting'; its settings are"):
                    index.as_retriever(mode=mode, no_such_setting=1)
            for mode, info in cls.modes.items():
                if info.retriever is not None:
                    assert info.retriever_class() is type(index.as_retriever(mode=mode)), (name, mode)
        finally:
            index.close()
