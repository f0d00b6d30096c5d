"""Progress reporting for long work, on tqdm (a well-kept library that already handles terminals,
notebooks, rates and ETAs). ``progress`` arguments across Rhizome accept ``True`` (a bar on
stderr), ``False``/``None`` (silent) or a callable ``(stage, done, total)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ProgressCallback = Callable[[str, int, int], None]
ProgressArg = bool | ProgressCallback | None


class Progress:
    """One stage of work with a known total (documents, chunks, model calls...)."""

    def __init__(self, progress: ProgressArg, stage: str, total: int, unit: str = "it") -> None:
        self.stage, self.total, self.done = stage, total, 0
        self._callback = progress if callable(progress) else None
        self._bar: Any = None
        if progress is True:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=stage, unit=unit, leave=False, dynamic_ncols=True)

    def advance(self, n: int = 1, **postfix: Any) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            if postfix:
                self._bar.set_postfix(postfix, refresh=False)
        if self._callback is not None:
            self._callback(self.stage, self.done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Progress", "ProgressArg", "ProgressCallback"]
