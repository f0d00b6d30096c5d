"""What the command line imports: no package cycle, and nothing heavy just to print help.

Each check runs in a fresh interpreter, since this test process has long since imported
everything."""

from __future__ import annotations

import json
import subprocess
import sys


def imported_by(code: str) -> list[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_method_commands_do_not_import_the_umbrella():
    # rhizome-rag depends on rhizome-gorag, so gorag's command must not import rhizome.rag
    modules = imported_by("import rhizome.gorag.cli")
    assert not [m for m in modules if m == "rhizome.rag" or m.startswith("rhizome.rag.")]


def test_kernel_cli_imports_no_method_package():
    modules = imported_by("import rhizome.core.cli")
    assert not [m for m in modules if m.startswith("rhizome.") and not m.startswith("rhizome.core")]
