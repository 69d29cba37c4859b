"""A smoke run of bench/scale.py (docs/benchmarks.md "`bench/scale.py`: a fleet of 5,000
racks and 100,000 schedules"): both shapes at their CI sizes, every stage measured and
printed (no ratio is asserted: the figures are the script's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "scale.py"
STAGES = ("validate", "initial plan (sqlite)", "initial apply (sqlite)",
          "no-change plan (sqlite)", "1% plan (sqlite)", "1% apply (sqlite)",
          "GetTaskSchedule (sqlite)", "ListTaskSchedules 100 (sqlite)",
          "upcoming 24 h (sqlite)", "timeline page 24 h (sqlite)", "ListTasks by rack (sqlite)",
          "ListTasks by component (sqlite)", "ListTasks active only (sqlite)")  # fmt: skip
FIRING = ("fire a schedule (sqlite)", "  until completed (sqlite)")


@pytest.mark.parametrize("shape", ["many", "wide"])
def test_every_stage_completes_and_prints(shape: str) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--shape", shape, "--smoke"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(SCRIPT.parents[1])},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    for stage in STAGES + (FIRING if shape == "wide" else ()):
        rows = [line for line in lines if line.startswith(stage + " ")]
        assert len(rows) == 2, (stage, done.stdout)  # one per size
