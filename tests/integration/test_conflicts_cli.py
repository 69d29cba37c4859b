"""`rackcron conflicts` and `rackcron validate --conflicts`: the real CLI on trees in temp dirs.

Stored schedules come from `rackcron apply` into a real store; the check only reads
it, which each --with-store test verifies by comparing every table before and after.
"""

from __future__ import annotations

import functools
import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import Result

from rackcron.domain.timing import format_rfc3339
from rackcron.service import Service
from rackcron.store import open_engine
from tests.support import trees
from tests.support.cli import run
from tests.support.service import snapshot
from tests.support.trees import component, documents, rack

#: r1 (c1 COMPUTE, c2 NVSWITCH) and r2.
RACKS = documents(
    rack(
        "r1",
        1,
        components=[component(1, "COMPUTE", name="c1"), component(2, "NVSWITCH", name="c2")],
    ),
    rack("r2", 2),
)
#: A TaskSchedule document (tests/support/trees.py), daily at 02:00 unless told otherwise.
schedule = functools.partial(trees.schedule, spec='"0 2 * * *"')


def write_tree(path: Path, *schedules: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "racks.yaml").write_text(RACKS)
    (path / "schedules.yaml").write_text("".join(schedules))
    return path


NOW = "2026-06-01T00:00:00Z"  # a Monday

# Firmware on the compute trays 01:00-03:00; a rack power-off at 02:30; an NVSwitch-only
# power-on at 02:30 (shares the rack with both, but no component with the firmware).
TREE = (
    schedule("fw", spec='"0 1 * * *"', operation="{upgrade_firmware: {}}",
             racks="[{name: r1, component_types: [COMPUTE]}]"),
    schedule("shutdown", spec='"30 2 * * *"', operation="{power_off: {}}"),
    schedule("switches", spec='"30 2 * * *"', racks="[{name: r1, component_types: [NVSWITCH]}]"),
    schedule("elsewhere", racks="[{name: r2}]"),
)  # fmt: skip


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "tree", *TREE)


def test_coarse_warns_and_exits_0_unless_strict(tree: Path) -> None:
    result = run("conflicts", str(tree))
    assert result.exit_code == 0, result.output
    assert result.output.count("warning:") == 3
    assert 'warning: schedules "fw" and "shutdown" share r1' in result.output
    assert "Coarse check of 4 declared schedules: 3 conflicts." in result.output
    assert run("conflicts", str(tree), "--strict").exit_code == 1


def test_strict_exits_0_without_conflicts(tmp_path: Path) -> None:
    alone = write_tree(tmp_path / "alone", schedule("a"), schedule("b", racks="[{name: r2}]"))
    result = run("conflicts", str(alone), "--strict")
    assert result.exit_code == 0, result.output
    assert "no conflicts" in result.output


def test_precise_json_keeps_only_pairs_that_collide(tree: Path) -> None:
    result = run("conflicts", str(tree), "--precise", "--now", NOW, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["format"], data["mode"], data["count"]) == ("rackcron.conflicts/v1", "precise", 2)
    assert data["horizon"] == "336h" and data["now"] == NOW
    fw, switches = data["conflicts"]
    assert [s["name"] for s in fw["schedules"]] == ["fw", "shutdown"]
    assert fw["racks"][0]["components"] == [
        {"id": "00000000-0000-4000-8000-0000000000c1", "name": "c1"}
    ]
    assert fw["first_collision"]["at"] == "2026-06-01T02:30:00Z"
    assert [f["start"] for f in fw["first_collision"]["firings"]] == [
        "2026-06-01T01:00:00Z",
        "2026-06-01T02:30:00Z",
    ]
    assert [s["name"] for s in switches["schedules"]] == ["shutdown", "switches"]
    assert switches["racks"][0]["components"][0]["name"] == "c2"


def test_precise_durations_and_horizon(tree: Path) -> None:
    # Firmware shortened to 1h (01:00-02:00) no longer reaches the 02:30 power-off.
    shorter = run("conflicts", str(tree), "--precise", "--now", NOW, "--duration",
                  "upgrade_firmware=1h", "--format", "json")  # fmt: skip
    assert shorter.exit_code == 0, shorter.output
    assert [c["schedules"][0]["name"] for c in json.loads(shorter.output)["conflicts"]] == [
        "shutdown"
    ]
    # A horizon that ends before 02:30 on the first day sees nothing at all.
    early = run("conflicts", str(tree), "--precise", "--now", NOW, "--horizon", "2h", "--strict")
    assert early.exit_code == 0, early.output
    assert "over 2h from 2026-06-01T00:00:00Z: no conflicts." in early.output


def test_precise_text_shows_utc_and_local_times(tmp_path: Path) -> None:
    path = write_tree(
        tmp_path / "t",
        schedule("paris", spec='"0 3 * * *"', extra="  timezone: Europe/Paris\n"),
        schedule("utc", spec='"5 1 * * *"', operation="{ingest: {}}"),
    )
    result = run("conflicts", str(path), "--precise", "--now", NOW)
    assert result.exit_code == 0, result.output
    # 03:00 in Paris (CEST, +02:00) is 01:00Z; the ingest at 01:05Z overlaps its 10 minutes.
    assert (
        "first collision at 2026-06-01T01:05:00Z = 2026-06-01T03:05:00+02:00 CEST in Europe/Paris"
        in result.output
    )
    assert (
        "fires 2026-06-01T01:00:00Z (2026-06-01T03:00:00+02:00 CEST), runs until 2026-06-01T01:10:00Z"
        in result.output
    )
    assert "fires 2026-06-01T01:05:00Z, runs until 2026-06-01T01:35:00Z" in result.output


def test_github_annotations(tree: Path) -> None:
    result = run("conflicts", str(tree), "--precise", "--now", NOW, "--format", "github")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"::warning file={tree / 'schedules.yaml'},line=2,col=1::")
    assert 'schedule "fw" can collide with "shutdown"' in lines[0]
    strict = run("conflicts", str(tree), "--format", "github", "--strict")
    assert strict.exit_code == 1 and strict.output.startswith("::error ")


def test_invalid_tree_prints_diagnostics_and_exits_1(tmp_path: Path) -> None:
    bad = write_tree(tmp_path / "bad", schedule("a", racks="[{name: nope}]"))
    result = run("conflicts", str(bad))
    assert result.exit_code == 1
    assert "rack nope is not found" in result.output
    as_json = run("conflicts", str(bad), "--format", "json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["errors"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--duration", "reboot=1h"], "expected OP=DURATION"),
        (["--duration", "ingest"], "expected OP=DURATION"),
        (["--duration", "ingest=1d"], 'unknown unit "d"'),
        (["--duration", "ingest=0s"], "must be positive"),
        (["--horizon", "-1h"], "must be positive"),
        (["--now", "2026-06-01"], "RFC 3339"),
    ],
    ids=["unknown-operation", "no-duration", "bad-unit", "zero", "negative-horizon", "bad-now"],
)
def test_bad_options_are_usage_errors(tree: Path, args: list[str], message: str) -> None:
    result = run("conflicts", str(tree), "--precise", *args)
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.slow
def test_with_store_compares_stored_schedules_and_writes_nothing(
    tmp_path: Path, store_url: str
) -> None:
    # Team A's schedules are in the store; team B's tree declares one more on r1.
    team_a = write_tree(tmp_path / "a", schedule("a-nightly"), schedule("a-r2", racks="[{name: r2}]"),
                        schedule("a-paused", extra="  enabled: false\n"))  # fmt: skip
    applied = run("apply", str(team_a), "--auto-approve", "--owner", "team-a",
                  "--database-url", store_url)  # fmt: skip
    assert applied.exit_code == 0, applied.output
    team_b = write_tree(tmp_path / "b", schedule("b-nightly", spec='"5 2 * * *"'))
    service = Service(open_engine(store_url))
    before = snapshot(service)

    def check(*args: str) -> Result:
        return run("conflicts", str(team_b), "--with-store", "--database-url", store_url, *args)

    result = check("--owner", "team-b", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["with_store"] and data["checked"] == {"declared": 1, "stored": 2}
    ((b, a),) = [c["schedules"] for c in data["conflicts"]]
    assert (b["name"], b["origin"]) == ("b-nightly", "declared")
    assert (a["name"], a["origin"], a["owner"]) == ("a-nightly", "store", "team-a")
    # 02:00 and 02:05, power-on 10 minutes each: they can collide.
    precise = check("--owner", "team-b", "--precise", "--now", NOW, "--strict")
    assert precise.exit_code == 1
    assert "first collision at 2026-06-01T02:05:00Z" in precise.output
    assert "store, owner team-a" in precise.output
    # As team A, an apply of this tree would delete a-nightly: nothing to compare.
    mine = check("--owner", "team-a", "--strict")
    assert mine.exit_code == 0 and "no conflicts" in mine.output
    # Without --with-store the store is not read at all.
    assert "no conflicts" in run("conflicts", str(team_b), "--database-url", store_url).output
    assert snapshot(service) == before
    service.close()


@pytest.mark.slow
def test_with_store_uses_the_stored_phase_of_an_interval(tmp_path: Path, store_url: str) -> None:
    daily = schedule("daily", spec_type="interval", spec="24h")
    tree_path = write_tree(tmp_path / "t", daily)
    assert (
        run("apply", str(tree_path), "--auto-approve", "--database-url", store_url).exit_code == 0
    )
    service = Service(open_engine(store_url))
    due = service.find_schedule("daily").next_run_at
    service.close()
    assert due is not None
    # A one-time power-off 5 minutes into the stored firing of "daily".
    once = schedule("once", spec_type="one-time", spec=f'"{format_rfc3339(due + timedelta(minutes=5))}"',
                    operation="{power_off: {}}")  # fmt: skip
    write_tree(tree_path, daily, once)
    # Seen from 23h30m before it is due: declared alone, "daily" would first fire 30
    # minutes after its stored phase, and miss the power-off.
    now = format_rfc3339(due - timedelta(hours=23, minutes=30))
    args = ["conflicts", str(tree_path), "--precise", "--now", now, "--format", "json"]
    alone = json.loads(run(*args).output)
    assert alone["count"] == 0
    stored = json.loads(run(*args, "--with-store", "--database-url", store_url).output)
    assert stored["count"] == 1
    hit = stored["conflicts"][0]["first_collision"]
    assert hit["at"] == format_rfc3339(due + timedelta(minutes=5))
    assert hit["firings"][0]["start"] == format_rfc3339(due)


def test_with_store_refuses_a_missing_sqlite_file(tree: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    result = run("conflicts", str(tree), "--with-store", "--database-url", f"sqlite:///{missing}")
    assert result.exit_code == 1
    assert f"no store at {missing}" in result.output
    assert not missing.exists()


def test_validate_conflicts_adds_warnings_at_the_schedules(tree: Path) -> None:
    plain = run("validate", str(tree))
    assert plain.exit_code == 0 and ": warning:" not in plain.output
    result = run("validate", str(tree), "--conflicts")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if ": warning: " in line]
    assert len(warnings) == 3
    assert warnings[0] == (
        f'{tree / "schedules.yaml"}:2:1: warning: schedule "fw" shares r1 with "shutdown"'
        f" ({tree / 'schedules.yaml'}:11); filters and fire times not compared [$.metadata.name]"
    )
    assert "0 errors, 3 warnings" in result.output
    as_json = json.loads(run("validate", str(tree), "--conflicts", "--format", "json").stdout)
    assert (as_json["errors"], as_json["warnings"]) == (0, 3)


def test_validate_conflicts_only_after_a_clean_validation(tmp_path: Path) -> None:
    bad = write_tree(
        tmp_path / "bad", schedule("a"), schedule("b"), schedule("c", spec='"61 * * * *"')
    )
    result = run("validate", str(bad), "--conflicts")
    assert result.exit_code == 1
    assert ": warning:" not in result.output and "1 error, 0 warnings" in result.output
