"""What the command line imports: no package cycle, and nothing heavy just to print help.

Each check runs in a fresh interpreter, since this test process has long since imported
everything."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


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
    modules = imported_by("import rhizome.tools.cli")
    assert not [m for m in modules if m.startswith("rhizome.") and not m.startswith(("rhizome.core", "rhizome.tools"))]


# What `rhizome --help` must not load: the model client, the numeric and graph libraries,
# tokenisers, and the method packages' own code. (Times are measured by hand, not asserted:
# `python -X importtime -c "from rhizome.rag.cli import build_parser; build_parser()"`.)
HEAVY = ("numpy", "ollama", "tiktoken", "sklearn", "faiss", "networkx", "scipy", "httpx")
METHOD_CODE = ("rhizome.gorag.classifier", "rhizome.gorag.steiner", "rhizome.gorag.text",
               "rhizome.graphrag", "rhizome.lightrag")

HELP = """
from rhizome.rag.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
"""


def heavy(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted({m for m in modules for n in names if m == n or m.startswith(n + ".")})


@pytest.mark.parametrize("argv", [["--help"], ["classify", "--help"], ["index", "--help"]])
def test_help_loads_no_method_code_and_nothing_heavy(argv):
    """Defect: `rhizome --help` took about 6 s, importing scikit-learn for every command."""
    modules = imported_by(HELP.format(argv=argv))
    assert "rhizome.gorag.cli" in modules  # the plugin command was registered
    assert heavy(modules, METHOD_CODE) == []
    assert heavy(modules, HEAVY) == []


def test_gorag_exports_resolve_on_first_use():
    modules = imported_by(
        "import rhizome.gorag as g\n"
        "assert all(callable(getattr(g, n)) for n in g.__all__)\n"
        "from rhizome.gorag import *\n"
        "assert GORAGClassifier is g.GORAGClassifier and set(g.__all__) <= set(dir(g))"
    )
    assert "rhizome.gorag.classifier" in modules


def test_an_export_named_like_its_module_survives_the_module_import():
    # rhizome.core exports the function answer() from the module rhizome.core.retrieval.answer: importing
    # the module first (as langchain_rhizome does) must not hide the function
    script = "import rhizome.core.retrieval.answer\nfrom rhizome.core import answer\nprint(callable(answer) and answer.__name__)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "answer"
