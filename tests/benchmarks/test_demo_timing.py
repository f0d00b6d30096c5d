"""benchmarks.demo reads the build time of each method from the demo's own output."""

from __future__ import annotations

from benchmarks.demo import run_demo


def test_run_demo_times_one_method_from_its_output():
    wall, built = run_demo(["naive"])
    assert list(built) == ["naive"] and 0 < built["naive"] < wall
