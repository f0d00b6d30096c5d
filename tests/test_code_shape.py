"""The shape the code keeps: a method package is read function by function, so no function of
one is longer than a screenful and a half (the kernel's few long algorithms are exempt)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONGEST = 100
"""Most lines a function of a method package may have (its docstring included)."""


def test_no_function_of_a_method_package_is_over_100_lines():
    long = []
    for source in sorted(ROOT.glob("packages/rhizome-*/src/rhizome/*/**/*.py")):
        if "rhizome-core" in source.parts:
            continue
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > LONGEST:
                long.append(f"{source.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


def test_the_example_methods_use_only_the_kernel_kept_for_methods():
    """examples/ builds two complete methods from ``rhizome.core.method`` alone (their module
    level; the ``__main__`` demo may load a corpus with the tools)."""
    import rhizome.core.method as method

    for example in ("passage_graph.py", "entity_graph.py"):
        tree = ast.parse((ROOT / "examples" / example).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rhizome"):
                assert node.module == "rhizome.core.method", (example, node.module)
                assert all(alias.name in method.__all__ for alias in node.names), example
