"""Many schedules on one rack: reports list a bounded number of pairs and count the rest.

N schedules sharing a rack are N*(N-1)/2 pairs. A tree of 1,000 small schedules on
one rack (far inside every YAML budget) made ``rackcron conflicts --format github``
write 100 MB and the plan's "schedules that share racks" warnings 27 MB. Through
the real CLI: every conflicts report lists at most 100 pairs, says how many more there
are, and keeps the exact count in its summary and its JSON; the plan warns of the rack
once, counting the pairs.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from rackcron.reconciler.conflicts._report import MAX_LISTED
from tests.support.cli import run_process
from tests.support.trees import rack

pytestmark = pytest.mark.slow

N = 1000
PAIRS = N * (N - 1) // 2

RACK = rack("rack-b01", 1)

SCHEDULE = """---
apiVersion: rackcron/v1
kind: TaskSchedule
metadata: {{name: q{i}}}
spec: {{spec_type: interval, spec: 6h, operation: {{power_off: {{}}}}, targets: {{racks: [{{name: rack-b01}}]}}}}
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("pairs")
    (tree / "racks.yaml").write_text(RACK)
    (tree / "schedules.yaml").write_text("".join(SCHEDULE.format(i=i) for i in range(N)))
    return tree


#: The CLI in a subprocess, its stdout and stderr apart; fails when it runs past 120 s.
rackcron = partial(run_process, timeout=120)


@pytest.mark.parametrize(
    ("fmt", "mode"),
    # --precise compares at most --max-pairs (default 200,000) pairs: this one compares all.
    [("github", []), ("text", []), ("github", ["--precise", "--max-pairs", str(PAIRS)])],
    ids=["github", "text", "precise"],
)
def test_conflicts_list_a_bounded_number_of_pairs(tree: Path, fmt: str, mode: list[str]) -> None:
    # The schedules fire together on the whole rack: every pair collides in precise mode too.
    result = rackcron("conflicts", ".", "--format", fmt, *mode, cwd=tree)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-2000:]
    assert len(output) < 100_000, f"{len(output)} characters"
    assert len(output.splitlines()) <= 3 * MAX_LISTED + 5  # text: a headline and two lines each
    more = PAIRS - MAX_LISTED
    assert f"… and {more} more conflicts not listed (a report lists the first 100 of {PAIRS})" in (
        output
    )
    if fmt == "text":
        assert f"Coarse check of {N} declared schedules: {PAIRS} conflicts." in output


def test_conflicts_json_keeps_the_exact_count(tree: Path) -> None:
    result = rackcron("conflicts", ".", "--format", "json", cwd=tree)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert data["format_version"] == "1.5"
    assert data["count"] == PAIRS and data["truncated"] is True
    assert len(data["conflicts"]) == MAX_LISTED


def test_validate_with_conflicts_is_bounded(tree: Path) -> None:
    result = rackcron("validate", ".", "--conflicts", cwd=tree)
    output = result.stdout + result.stderr
    assert len(output) < 100_000 and len(output.splitlines()) <= MAX_LISTED + 5, len(output)
    assert f"{PAIRS - MAX_LISTED} more conflicts not listed" in output


@pytest.mark.parametrize("fmt", ["markdown", "text", "json"])
def test_plan_warns_of_the_shared_rack_once(tree: Path, tmp_path: Path, fmt: str) -> None:
    """The plan's warning is a group of racks: one rack, reached alike by 1,000 schedules,
    is one warning naming the first ten and counting the pairs."""
    db = f"sqlite:///{tmp_path}/db"
    result = rackcron("plan", ".", "--format", fmt, "--database-url", db, cwd=tree)
    assert result.returncode == 0, result.stderr[-2000:]
    output = result.stdout
    if fmt == "json":
        data = json.loads(output)
        assert data["format_version"] == "1.16"
        assert data["warnings_counts"]["schedules_share_racks"] == 1
        (detail,) = [d for d in data["warnings_detail"] if d["code"] == "schedules_share_racks"]
        assert detail["racks_shared"] == {
            "racks": ["rack-b01"], "rack_count": 1, "schedule_count": N, "changed_count": N,
            "pairs": PAIRS,
            "reaches": [{"reach": "all components", "count": N,
                         "schedules": sorted(f"q{i}" for i in range(N))[:10]}],
            "reach_count": 1,
        }  # fmt: skip
        return
    assert output.count("shared by") == 1 and len(output) < 200 * N
    assert "1 group of racks is shared by schedules" in output
    assert f"rack-b01: q0, q1, q10, q100, q101 and {N - 5:,} more schedules" in output
    verbose = rackcron("plan", ".", "--format", fmt, "--verbose", "--database-url", db, cwd=tree)
    output = verbose.stdout
    assert output.count("shared by") == 1 and len(output) < 200 * N
    assert (
        f'rack "rack-b01" shared by {N:,} schedules, {N:,} created or changed here ({PAIRS:,} pairs)'
        in output
    )
    assert f"and {N - 10:,} more" in output
    assert "more groups" not in output and "more pairs" not in output
