"""Fault injection over every registered method (rhizome.tools.faults): a process killed in
the middle of an insert or a delete, damaged index files, a reader next to a writer. By default
three kill points per method; ``pytest --full`` kills at every one (every transaction, before and
after its commit, and every snapshot write, of an insert and of a delete: for release checks).
The benchmark (benchmarks/fault_injection.py) samples kill points too; docs/reliability.md
lists the guarantees."""

from __future__ import annotations

import functools

import pytest

from rhizome.tools import faults
from rhizome.tools.testing import registered_methods

METHODS = registered_methods()
KILLS = [("insert", "before-commit", "middle"), ("insert", "snapshot", 1), ("delete", "after-commit", 1)]


@functools.cache
def clean(method: str, operation: str) -> tuple:
    return faults.clean_build(method, operation)


def _check(outcome: faults.Outcome) -> None:
    if not outcome.held:
        pytest.fail(f"{outcome.method}: {outcome.case}: {outcome.detail}")


def every_kill() -> list[tuple[str, str, str, int]]:
    """Every ``(method, operation, point, k)`` where a kill can land (``--full``)."""
    cases = []
    for method in METHODS:
        for operation in ("insert", "delete"):
            counts = faults.count_points(method, operation)
            for point in faults.KILL_POINTS:
                cases += [(method, operation, point, k) for k in range(1, counts["snapshots" if point == "snapshot" else "commits"] + 1)]
    return cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.name == "test_a_killed_call_run_again_equals_a_clean_build":
        full = metafunc.config.getoption("--full")
        cases = every_kill() if full else [(m, *kill) for kill in KILLS for m in METHODS]
        metafunc.parametrize("method, operation, point, k", cases, ids=[f"{o}-{p}-{k}-{m}" for m, o, p, k in cases])


def test_a_killed_call_run_again_equals_a_clean_build(method, operation, point, k):
    if k == "middle":
        k = max(1, faults.count_points(method, operation)["commits"] // 2)
    _check(faults.kill_case(method, operation, point, k, clean(method, operation)))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", sorted(faults.CORRUPTIONS))
def test_damaged_files_give_correct_results_or_a_typed_error(method, case):
    _check(faults.corruption_case(method, case))


@pytest.mark.parametrize("method", METHODS)
def test_a_reader_next_to_a_writer_finds_every_committed_document(method):
    _check(faults.reader_case(method))
