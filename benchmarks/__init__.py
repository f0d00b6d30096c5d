"""Benchmarks: speed, cost and quality runs, kept out of the test suite.

Run one with ``uv run python -m benchmarks.<name>``; each writes JSON under
``benchmarks/results/`` and prints the markdown table that goes into ``docs/benchmarks.md``.
"""
