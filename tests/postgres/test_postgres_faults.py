"""Fault injection on an index in PostgreSQL (rhizome.tools.faults with ``server``): a process
killed in the middle of an insert and of a delete, then the same call run again, ends row for
row equal to a clean build in PostgreSQL with no model answer paid twice; a reader beside a
writer in another process finds every committed document. The benchmark
(benchmarks/fault_injection.py --backend postgres) draws many more kill points."""

from __future__ import annotations

import pytest

from rhizome.tools import faults


@pytest.mark.parametrize("operation, point", [("insert", "before-commit"), ("delete", "after-commit")])
def test_a_killed_call_on_postgres_run_again_equals_a_clean_build(postgres, operation, point):
    counts = faults.count_points("lightrag", operation, postgres.base)
    assert counts["snapshots"] == 0  # vectors live in the database: no snapshot file to kill a write of
    k = max(1, counts["commits"] // 2)
    outcome = faults.kill_case("lightrag", operation, point, k, faults.clean_build("lightrag", operation, postgres.base), postgres.base)
    assert outcome.backend == "postgres"
    assert outcome.held, outcome.detail


def test_a_reader_beside_a_writer_on_postgres_finds_every_committed_document(postgres):
    outcome = faults.reader_case("naive", postgres.base)
    assert outcome.held, outcome.detail


def test_each_case_drops_its_schema(postgres):
    with faults.place(postgres.base) as url:
        faults.build("naive", url).close()
        schema = url.rsplit("schema=", 1)[1]
    import psycopg

    with psycopg.connect(postgres.base) as raw:
        assert raw.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)).fetchone() is None
