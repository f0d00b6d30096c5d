"""The examples in examples/ run offline from a fresh environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "script,expected",
    [
        ("langchain_chain.py", "source: Ilse Varn, cartographer"),
        ("llamaindex_query_engine.py", "query engine used 2 source nodes"),
        ("langgraph_router.py", "cites: 07-mire-fisheries.md:0"),
        ("rag_agent.py", "calls islands_memory mode=v2"),
        ("global_search_graph.py", "3 map branches ran"),
    ],
)
def test_example_runs_offline(script, expected):
    env = dict(os.environ)  # OLLAMA_HOST points at a closed port (conftest)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
