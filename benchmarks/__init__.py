"""Benchmarks: speed, cost and quality runs, kept out of the test suite.

Run one with ``uv run python -m benchmarks.<name>``; each writes JSON under
``benchmarks/results/`` and prints its markdown table; ``python -m benchmarks render`` turns the
JSON into the pages of ``docs/results/`` (``benchmarks/render.py``).
"""
