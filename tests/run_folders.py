"""The test run's own folders, for a child process started with an environment of its own."""

from __future__ import annotations

import os


def run_folders() -> dict[str, str]:
    """The run's bytecode and temporary folders (set by tests/conftest.py), as environment
    variables: a command started with them reads the modules this run compiled instead of
    compiling them again (and writing them beside the sources), and leaves no file outside the
    run."""
    return {name: os.environ[name] for name in ("PYTHONPYCACHEPREFIX", "TMPDIR") if name in os.environ}
