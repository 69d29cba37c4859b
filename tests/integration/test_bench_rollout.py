"""A smoke run of bench/rollout.py (docs/benchmarks.md "`bench/rollout.py`: a roll-out over 5,000 racks"), on a small fleet: its
plain firing and its roll-out start every rack exactly once, and its lag run measures a
lag for each rack past the first batch (the figures are the script's, not the test's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import rollout as bench

pytestmark = pytest.mark.slow


def test_the_rollout_benchmark_runs_on_a_small_fleet(tmp_path: Path) -> None:
    service, drop = bench._fresh("sqlite", tmp_path, None)
    try:
        racks = bench._racks(service, 60)
        assert bench.plain(service, racks, 0) > 0
        assert bench.rolled(service, racks, 0) > 0  # asserts every rack started once
        waits = bench.lag(service, racks, poll=30.0, duration=0.05)
    finally:
        drop()
    assert len(waits) == 60 - 3  # 5% of 60: 3 in the first batch
    assert max(waits) < 30.0  # a task's end wakes the dispatcher: no rack waits for a poll
