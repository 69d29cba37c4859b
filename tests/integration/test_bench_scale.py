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
    assert "targets: judged at the default sizes" in done.stdout


def test_targets_are_judged_at_the_largest_size_and_say_which_are_not_met() -> None:
    sys.path.insert(0, str(SCRIPT.parents[1]))
    from bench.scale import SIZES, verdicts

    def row(stage: str, seconds: float, floor: float | None, rss: float) -> dict:
        return {"stage": stage, "seconds": seconds, "floor": floor, "rss": rss}

    sizes = list(SIZES["wide"])
    results = {
        sizes[0]: [row("validate", 0.1, 0.2, 100), row("initial apply (sqlite)", 1.0, 1.0, 100)],
        sizes[1]: [row("validate", 0.4, 0.8, 100), row("initial apply (sqlite)", 4.0, 3.0, 100)],
        sizes[2]: [row("validate", 1.0, 2.0, 100), row("initial apply (sqlite)", 12.0, 5.0, 3000)],
    }
    lines = verdicts("wide", sizes, results)
    assert lines[0] == "targets at 5,000 racks (exponents from 2,000):"
    assert any(
        line.startswith("validate") and "1.5x" in line and line.endswith(" met") for line in lines
    )
    assert any(
        line.startswith("initial apply") and "2.40x" in line and line.endswith("NOT met")
        for line in lines
    )
    assert any(
        line.startswith("initial apply") and "3000 MiB" in line and line.endswith("NOT met")
        for line in lines
    )
    assert any(
        line.startswith("initial apply")
        and "1.20" in line
        and "exponent" in line
        and line.endswith("NOT met")
        for line in lines
    )
    assert any(
        line.startswith("validate") and "exponent" in line and line.endswith(" met")
        for line in lines
    )
    assert verdicts("wide", [40, 80], {40: results[sizes[0]], 80: results[sizes[1]]})[0].startswith(
        "targets: judged at the default sizes"
    )
