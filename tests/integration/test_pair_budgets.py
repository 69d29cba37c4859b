"""Thousands of schedules sharing racks: the work is linear, or budgeted and said to be.

A second review found the pair caps bounded the output but not the work: the plan's
warnings built every changed schedule's partner set, the coarse count did the same
for schedules on several racks, and ``conflicts --precise`` compared every one of
N*(N-1)/2 pairs (4,000 schedules on one rack: 24 s; 20,000: over a minute). Through
the real CLI, with sizes at which those quadratic paths take minutes (the subprocess
timeout is the failure, not a wall-clock assertion):

* the coarse count stays exact for schedules that target several racks, each pair
  counted once however many racks it shares, and the plan groups racks reached alike;
* ``--precise`` stops at its work budget (``--max-pairs``, default 200,000 pairs) and
  says so in every format; ``--strict`` fails an unfinished check.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from rackcron.reconciler.conflicts import MAX_PAIRS
from tests.support.cli import run_process
from tests.support.trees import rack

pytestmark = pytest.mark.slow

# Seconds. Measured on a 2-core host: each run here takes 1-7 s; before the fix the same
# runs took 33 s (coarse), 35 s (plan) and over a minute (precise).
TIMEOUT = 25

SCHEDULE = """---
apiVersion: rackcron/v1
kind: TaskSchedule
metadata: {{name: q{i}}}
spec: {{spec_type: interval, spec: 6h, operation: {{power_off: {{}}}}, targets: {{racks: [{racks}]}}}}
"""


def write_tree(tree: Path, n: int, racks: int) -> Path:
    (tree / "racks.yaml").write_text(
        "".join(f"---\n{rack(f'rack-{i}', i)}" for i in range(1, racks + 1))
    )
    targets = ", ".join(f"{{{{name: rack-{i}}}}}" for i in range(1, racks + 1))
    schedule = SCHEDULE.replace("{racks}", targets)
    (tree / "schedules.yaml").write_text("".join(schedule.format(i=i) for i in range(n)))
    return tree


#: The CLI in a subprocess, its stdout and stderr apart; fails when it runs past TIMEOUT.
rackcron = partial(run_process, timeout=TIMEOUT)


# --- several racks each: exact counts in linear time ----------------------------------------

WIDE_N = 8000  # before the fix, each schedule's partner set scanned racks * 8,000 names
WIDE_PAIRS = WIDE_N * (WIDE_N - 1) // 2


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(tmp_path_factory.mktemp("wide"), WIDE_N, racks=8)


@pytest.fixture(scope="module")
def wider(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The coarse check costs little per schedule: 32 racks make the old scan show.
    return write_tree(tmp_path_factory.mktemp("wider"), WIDE_N, racks=32)


def test_coarse_count_of_multi_rack_schedules_is_exact_and_linear(wider: Path) -> None:
    result = rackcron("conflicts", ".", "--format", "json", cwd=wider)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert data["format_version"] == "1.5"
    assert data["count"] == WIDE_PAIRS and data["count_exact"] is True  # once per pair, not 32x
    assert data["complete"] is True and data["unchecked"] is None
    assert len(data["conflicts"]) == 100
    # every listed pair shares all the racks, named once each
    assert all(len(c["racks"]) == 32 for c in data["conflicts"])


def test_plan_warnings_group_racks_reached_alike_in_linear_time(wide: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/db"
    result = rackcron(
        "plan", ".", "--format", "markdown", "--verbose", "--database-url", db, cwd=wide
    )
    assert result.returncode == 0, result.stderr[-2000:]
    output = result.stdout
    # 8 racks each reached by the same 8,000 schedules: one group, its pairs counted once
    assert "⚠️ 1 warnings: schedules that share racks" in output
    racks = ", ".join(f'"rack-{i}"' for i in range(1, 6)) + " and 3 more"
    changed = f"{WIDE_N:,} created or changed here"
    assert (
        f"8 racks ({racks}) shared by {WIDE_N:,} schedules, {changed} ({WIDE_PAIRS:,} pairs)"
        in output
    )


# --- one rack, --precise: a work budget -------------------------------------------------------

ONE_N = 6000  # 17,997,000 pairs: main compared them all (about a minute)
ONE_PAIRS = ONE_N * (ONE_N - 1) // 2


@pytest.fixture(scope="module")
def one_rack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(tmp_path_factory.mktemp("one"), ONE_N, racks=1)


def test_precise_check_stops_at_its_budget_and_strict_fails_it(one_rack: Path) -> None:
    result = rackcron("conflicts", ".", "--precise", "--format", "json", "--strict", cwd=one_rack)
    assert result.returncode == 1, result.stderr[-2000:]  # an unfinished check never passes
    data = json.loads(result.stdout)
    assert data["format_version"] == "1.5"
    assert data["complete"] is False and data["count_exact"] is False
    unchecked = data["unchecked"]
    assert unchecked["compared"] == MAX_PAIRS
    assert unchecked["pairs"] == ONE_PAIRS - MAX_PAIRS and unchecked["exact"] is True
    assert unchecked["stopped_at"]["source"] == "schedules.yaml"
    # every compared pair collides (same spec, whole rack): the count found so far
    assert data["count"] == MAX_PAIRS and len(data["conflicts"]) == 100


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_precise_check_says_it_is_incomplete_in_every_format(one_rack: Path, fmt: str) -> None:
    result = rackcron("conflicts", ".", "--precise", "--format", fmt, cwd=one_rack)
    assert result.returncode == 0, result.stderr[-2000:]  # without --strict: a warning
    output = result.stdout
    note = (
        f"incomplete check: stopped after comparing {MAX_PAIRS} pairs of schedules sharing"
        f' racks (its work budget), at "q33"; {ONE_PAIRS - MAX_PAIRS} more pairs were not'
        " compared"
    )
    assert note in output
    if fmt == "text":
        assert f": at least {MAX_PAIRS} conflicts (incomplete)." in output
    else:
        assert f"::warning file=schedules.yaml,line={2 + 5 * 33},col=1::{note}" in output
    assert len(output) < 100_000


def test_the_budget_is_an_option(tmp_path: Path) -> None:
    tree = write_tree(tmp_path, 20, racks=2)
    small = rackcron(
        "conflicts", ".", "--precise", "--max-pairs", "10", "--format", "json", cwd=tree
    )
    assert small.returncode == 0, small.stderr[-2000:]
    data = json.loads(small.stdout)
    assert data["complete"] is False and data["count"] == 10 and data["count_exact"] is False
    assert data["unchecked"] == {
        "pairs": 190 - 10, "exact": True, "compared": 10,
        "stopped_at": {"name": "q0", "source": "schedules.yaml", "line": 2},
    }  # fmt: skip
    whole = rackcron("conflicts", ".", "--precise", "--max-pairs", "190", "--strict", cwd=tree)
    assert whole.returncode == 1 and "incomplete" not in whole.stdout  # 190 conflicts, all found
    assert ": 190 conflicts." in whole.stdout
