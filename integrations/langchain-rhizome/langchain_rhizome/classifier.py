"""A LangChain Runnable over a Rhizome classifier (the GORAG classifier of ``rhizome-gorag``).

The Runnable is generic: it adapts any object with ``aclassify(text, online=...)``,
``classify`` and ``abatch(texts, online=...)`` returning pydantic results with a ``label`` —
so this package needs no dependency on the classifier's package.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import ensure_config
from pydantic import ConfigDict, field_validator

from rhizome.core.aio import run_sync
from rhizome.core.errors import InvalidInputError

ClassifierInput = str | dict[str, Any]


class RhizomeClassifier(RunnableSerializable[ClassifierInput, Any]):
    """Classify texts inside LangChain chains.

    Input: a string, or a dict holding the text under ``input_key`` (so it composes after a
    prompt-free step such as ``RunnablePassthrough``). Output: with ``output="result"``
    (default) a JSON-serialisable dict — ``label``, ``candidates``, the Steiner ``tree``,
    ``evidence`` keywords, ``hallucinated``, ...; with ``output="label"`` the label string.

    ``batch`` / ``abatch`` keep the classifier's semantics: with online indexing the texts are
    classified one after another in input order; the texts taken for indexing join the graph
    as the classifier's ``online_mode`` says (GORAG: deferred by default — together, at its
    ``flush_online()``, ``persist()``, next round, or once ``max_pending`` wait; sequential —
    each at once, so it may change the next one's result). They start one run per input
    (callbacks, ``run_name``, ``tags``: one config for all or one per input) and pass
    ``max_concurrency`` to the classifier's ``abatch`` when it takes it. A text the classifier
    refuses gives its per-item error output, or with ``return_exceptions=True`` its
    :class:`~rhizome.core.errors.InvalidInputError`; an input that is not a text fails the
    batch before anything is classified (with ``return_exceptions=True``: its ``ValueError``).

    Example:
        .. code-block:: python

            from rhizome.gorag import GORAGClassifier
            clf = GORAGClassifier("ollama:qwen2.5:7b-instruct")
            clf.fit_round(texts, labels)
            chain = RhizomeClassifier(classifier=clf, output="label")
            chain.invoke("A convolutional network for retinal images ...")
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    classifier: Any
    """The classifier: anything with ``classify``, ``aclassify`` and ``abatch``."""
    input_key: str = "text"
    """Key of the text when the input is a dict."""
    output: Literal["result", "label"] = "result"
    online: bool | None = None
    """Override the classifier's online indexing for calls through this Runnable."""
    options: dict[str, Any] = {}
    """Further keyword arguments of each classifier call (GORAG: ``index_threshold``, the
    confidence a text needs to be indexed online; ``None`` indexes every text)."""

    @field_validator("classifier")
    @classmethod
    def _check(cls, value: Any) -> Any:
        if all(callable(getattr(value, name, None)) for name in ("classify", "aclassify", "abatch")):
            return value
        raise ValueError(
            f"classifier must have classify, aclassify and abatch (e.g. rhizome.gorag.GORAGClassifier); "
            f"got {type(value).__name__}"
        )

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return False

    def _text(self, value: ClassifierInput) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and isinstance(value.get(self.input_key), str):
            return value[self.input_key]
        raise ValueError(
            f"RhizomeClassifier takes a string or a dict with a string under {self.input_key!r}; "
            f"got {type(value).__name__}"
        )

    def _shape(self, result: Any) -> Any:
        """The output of one result; a text the classifier could not take (a batch's
        per-item error, whose ``label`` is ``None``) gives ``None`` (``output="label"``) or
        its JSON dict with ``error``."""
        return result.label if self.output == "label" else result.model_dump(mode="json")

    async def _aone(self, value: ClassifierInput) -> Any:
        return self._shape(
            await self.classifier.aclassify(self._text(value), online=self.online, **self.options)
        )

    def _one(self, value: ClassifierInput) -> Any:
        return run_sync(self._aone(value))

    def invoke(self, input: ClassifierInput, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(self._one, input, ensure_config(config), run_type="chain")

    async def ainvoke(self, input: ClassifierInput, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._acall_with_config(self._aone, input, ensure_config(config), run_type="chain")

    async def _amany(
        self, inputs: Sequence[ClassifierInput], *, return_exceptions: bool, max_concurrency: int | None
    ) -> list[Any]:
        """The outputs of ``inputs`` from one ``abatch`` call of the classifier (which keeps
        its semantics: with online indexing the texts are classified one after another, in
        order). An input that is not a text raises at once, before anything is classified,
        unless ``return_exceptions``: then it, and each text the classifier refused, gives its
        exception in its place; otherwise a refused text gives its per-item error output."""
        texts: list[str] = []
        out: list[Any] = [None] * len(inputs)
        good: list[int] = []
        for i, value in enumerate(inputs):
            try:
                texts.append(self._text(value))
            except ValueError as exc:
                if not return_exceptions:
                    raise
                out[i] = exc
            else:
                good.append(i)
        if not texts:
            return out
        kwargs: dict[str, Any] = {"online": self.online, **self.options}
        if max_concurrency is not None and _accepts(self.classifier.abatch, "max_concurrency"):
            kwargs["max_concurrency"] = max_concurrency
        results = await self.classifier.abatch(texts, **kwargs)
        for i, result in zip(good, results):
            if return_exceptions and result.label is None:  # the classifier refused this text
                out[i] = InvalidInputError(getattr(result, "error", None) or "the classifier refused this text")
            else:
                out[i] = self._shape(result)
        return out

    async def _abatch_configured(
        self, inputs: list[ClassifierInput], config: list[RunnableConfig], *, return_exceptions: bool
    ) -> list[Any]:
        return await self._amany(
            inputs, return_exceptions=return_exceptions, max_concurrency=config[0].get("max_concurrency")
        )

    def batch(
        self,
        inputs: list[ClassifierInput],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """Classify ``inputs`` with one run per input (``config``: one for all or one per
        input; callbacks, ``run_name``, ``tags``, ``max_concurrency`` — the classifier's
        concurrency without online indexing, or of model keyword extraction with it)."""

        def classify_all(values: list[ClassifierInput], config: list[RunnableConfig]) -> list[Any]:
            return run_sync(self._abatch_configured(values, config, return_exceptions=return_exceptions))

        return self._batch_with_config(
            classify_all, inputs,  # type: ignore[arg-type]  # langchain's stubs leave out the config argument it passes
            config, return_exceptions=return_exceptions, run_type="chain"
        )

    async def abatch(
        self,
        inputs: list[ClassifierInput],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """Async :meth:`batch`."""

        async def classify_all(values: list[ClassifierInput], config: list[RunnableConfig]) -> list[Any]:
            return await self._abatch_configured(values, config, return_exceptions=return_exceptions)

        return await self._abatch_with_config(
            classify_all, inputs,  # type: ignore[arg-type]  # as in batch()
            config, return_exceptions=return_exceptions, run_type="chain"
        )


def _accepts(function: Any, name: str) -> bool:
    """Whether ``function`` takes the keyword ``name`` (the classifier is duck-typed)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)

__all__ = ["RhizomeClassifier"]
