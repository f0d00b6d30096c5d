"""Fault injection over every registered method (rhizome.tools.faults): a process killed in
the middle of an insert or a delete, damaged index files, a reader next to a writer. The
benchmark (benchmarks/fault_injection.py) runs many more kill points; docs/reliability.md
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


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("operation, point, k", KILLS)
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
