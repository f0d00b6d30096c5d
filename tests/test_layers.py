"""The kernel's layers: ``rhizome.core`` never imports the tools built on it (``rhizome.tools``:
the conformance kit, fault injection, integrity checks, export, loaders, the CLI helpers), as
langchain-core never imports langchain-tests."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "packages" / "rhizome-core" / "src" / "rhizome" / "core"


def imports(source: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def test_no_kernel_module_imports_the_tools():
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted(KERNEL.rglob("*.py"))
        for name in imports(path)
        if name == "rhizome.tools" or name.startswith("rhizome.tools.")
    ]
    assert not found, found


def test_the_kernel_exports_nothing_from_the_tools():
    import rhizome.core

    assert not [m for m in rhizome.core._EXPORTS.values() if m.startswith("rhizome.tools")]


def test_importing_the_whole_method_facade_loads_no_tool():
    script = "import rhizome.core.method, rhizome.core.naive, json, sys; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert not [m for m in json.loads(result.stdout) if m.startswith("rhizome.tools")]
