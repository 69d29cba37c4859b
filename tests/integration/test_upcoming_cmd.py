"""``rackcron upcoming``: the next firings from a tree or the store, as text, JSON and a
Mermaid gantt; the real CLI on both backends. Then windows and schedules that cost (a
window years ahead of a one-second schedule, many firings overlapping on one rack, many
freezes, the bar limit), with the work counted (tests.support.work), never timed, and
hostile names that must not leave a Mermaid label. (Predicted conflicts at scale:
test_upcoming_conflicts.py.)"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from rackcron.domain.models import Component, ComponentType, Rack, ScheduleConfig
from rackcron.domain.upcoming import MAX_CONFLICT_NAMES
from rackcron.service import Service
from tests.support.cli import run
from tests.support.service import make_operation, rack_spec
from tests.support.work import count_steps

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FLEET = str(ROOT / "examples" / "fleet")
NOW = "2026-12-01T00:00:00Z"


def _json(*args: str, url: str | None = None) -> dict:  # type: ignore[type-arg]
    result = run("upcoming", *args, "--format", "json", "--now", NOW, url=url)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_from_a_tree_each_rack_lists_its_schedules_firings() -> None:
    data = _json(FLEET, "--window", "24h", "--rack", "rack-b01")
    assert data["format_version"] == "1.1" and data["source"] == FLEET
    assert (data["start"], data["end"]) == (NOW, "2026-12-02T00:00:00Z")
    assert [(f["start"], f["schedule"], f["freeze"]) for f in data["firings"]] == [
        ("2026-12-01T06:00:00Z", "burn-in-power-cycle", "row-b-backup-window"),
        ("2026-12-01T12:00:00Z", "burn-in-power-cycle", None),
        ("2026-12-01T18:00:00Z", "burn-in-power-cycle", None),
    ]
    assert {f["end"][11:16] for f in data["firings"]} == {"06:10", "12:10", "18:10"}
    assert data["cut"] == []


def test_from_a_tree_a_roll_out_is_drawn_at_its_slots_for_its_expected_duration() -> None:
    """As from the store: rack-b01 (the canary) at the firing, rack-b02 after its hour
    and the half-hour bake, each for the declared hour (found in review: the tree's
    view dropped the roll-out and the expected duration)."""
    result = run("upcoming", FLEET, "--format", "json", "--now", "2027-02-01T00:00:00Z",
                 "--window", "12h")  # fmt: skip
    assert result.exit_code == 0, result.output
    bars = [(f["rack"], f["start"][11:16], f["end"][11:16])
            for f in json.loads(result.output)["firings"]
            if f["schedule"] == "powershelf-firmware-rollout"]  # fmt: skip
    assert bars == [("rack-b01", "03:00", "04:00"), ("rack-b02", "04:30", "05:30")]


def test_predicted_conflicts_name_the_other_schedule() -> None:
    data = _json(FLEET, "--window", "1h", "--rack", "rack-b04")
    pairs = {(f["schedule"], tuple(f["conflicts_with"])) for f in data["firings"]}
    assert pairs == {
        ("demo-queued-power-off", ("demo-queued-power-on",)),
        ("demo-queued-power-on", ("demo-queued-power-off",)),
    }
    assert sorted(data["cut"]) == []  # 240 firings each in an hour: under the bound


def test_from_the_store_it_fires_from_the_stored_next_run(store_url: str) -> None:
    assert run("apply", FLEET, "--auto-approve", url=store_url).exit_code == 0
    text = run("upcoming", "--window", "168h", "--rack", "rack-a01", url=store_url)
    assert text.exit_code == 0, text.output
    assert (
        "nightly-compute-firmware" in text.output
        and "upgrade firmware to 2.3.1 (bios, bmc)" in text.output
    )
    data = json.loads(run("upcoming", "--window", "168h", "--format", "json", url=store_url).output)
    assert data["source"] == "store"
    racks = {f["rack"] for f in data["firings"] if f["schedule"] == "nightly-compute-firmware"}
    assert racks == {"rack-a01", "rack-a02"}


def test_mermaid_is_a_gantt_block_per_rack() -> None:
    result = run("upcoming", FLEET, "--window", "24h", "--rack", "rack-b01", "--format",
                 "mermaid", "--now", NOW)  # fmt: skip
    lines = result.output.splitlines()
    assert lines[0] == "```mermaid" and lines[1] == "gantt" and lines[-1] == "```"
    assert "    section rack-b01" in lines
    assert "    #98;urn-in-power-cycle :done, 2026-12-01 06:00:00, 600s" in lines  # frozen


def test_text_summary_and_errors(tmp_path: Path) -> None:
    result = run("upcoming", FLEET, "--window", "24h", "--rack", "rack-b01", "--now", NOW)
    assert result.output.splitlines()[-1] == (
        "3 firings on 1 rack from 2026-12-01T00:00:00Z to 2026-12-02T00:00:00Z:"
        " 0 in predicted conflicts, 1 held by freezes."
    )
    too_long = run("upcoming", FLEET, "--window", "745h")
    assert too_long.exit_code == 2 and "744h" in too_long.output
    unknown = run("upcoming", FLEET, "--rack", "no-such-rack")
    assert unknown.exit_code == 1 and 'rack "no-such-rack" not found' in unknown.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {name: x}\nspec: 3\n")
    invalid = run("upcoming", str(tmp_path))
    assert invalid.exit_code == 1 and "bad.yaml:" in invalid.output


@pytest.mark.parametrize("fmt", ["text", "json", "mermaid"])
def test_an_empty_window_is_not_an_error(fmt: str) -> None:
    result = run("upcoming", FLEET, "--rack", "rack-a01", "--window", "1h", "--format", fmt,
                 "--now", NOW)  # fmt: skip
    assert result.exit_code == 0, result.output
    if fmt == "text":
        assert result.output.startswith("0 firings on 0 racks from ")


# --- what a window may cost, and hostile names in the gantt -----------------------------------

#: Work budgets (calls counted by tests.support.work): the fixed code takes about 1,000
#: fire-time steps, 200,000 bars met (20 a bar: each other schedule once a sweep) and
#: 122,000 freeze steps here; the old one took hundreds of millions, all pairs of 10,000
#: overlapping bars (50 million), and millions.
BUDGET_YEARS = 5_000
BUDGET_MET = 400_000
BUDGET_FREEZES = 500_000
#: Conflicts noted on bars for 6,900 firings in lockstep: about 11 a firing and sweep
#: (160,000); naming all 299 others was 4.3 million.
BUDGET_NOTED = 400_000


def _rack(service: Service, name: str = "rack-1") -> uuid.UUID:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name=name))
    service.upsert_component(Component(id=uuid.uuid4(), rack_id=rack.id,
                                       type=ComponentType.COMPUTE, name="c0"))  # fmt: skip
    return rack.id


def _every_second(service: Service, name: str, rack: uuid.UUID, operation: str) -> None:
    service.create_schedule(ScheduleConfig(name=name, spec_type="interval", spec="1s"),
                            make_operation(operation, target=rack_spec(rack)))  # fmt: skip


def test_a_window_years_after_a_one_second_schedules_next_run_is_cheap(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stored next run is the test clock's (2026-06-01): --now ten years later was
    # 315 million steps of the overdue skip, one fire time at a time.
    _every_second(service, "every-second", _rack(service), "power_on")
    steps = count_steps(monkeypatch)
    result = run("upcoming", "--now", "2036-06-01T00:00:00.5Z", "--window", "1h", "--format",
                 "json", url=store_url)  # fmt: skip
    assert steps["next_after"] < BUDGET_YEARS
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    starts = [f["start"] for f in data["firings"]]
    assert len(starts) == 1000 and data["cut"] == ["every-second"]
    # Fired once at the window's start (overdue), then on the period of the stored run.
    assert starts[:3] == ["2036-06-01T00:00:00.500000Z", "2036-06-01T00:00:01Z",
                          "2036-06-01T00:00:02Z"]  # fmt: skip


def test_many_overlapping_firings_on_one_rack_are_marked_in_bounded_time(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rack = _rack(service)
    for n in range(10):
        _every_second(service, f"fw-{n}", rack, "upgrade_firmware")
    steps = count_steps(monkeypatch)
    result = run("upcoming", "--window", "744h", "--format", "json", url=store_url)
    assert steps["met"] < BUDGET_MET, steps
    firings = json.loads(result.output)["firings"]
    assert len(firings) == 10_000
    assert all(len(f["conflicts_with"]) == 9 for f in firings)


def test_a_start_at_the_end_of_the_calendar_is_a_usage_error(store_url: str) -> None:
    assert run("db", "upgrade", url=store_url).exit_code == 0
    result = run("upcoming", "--now", "9999-12-31T23:00:00Z", url=store_url)
    assert result.exit_code == 2 and "--now" in result.output, result.output
    assert "internal error" not in result.output


HOSTILE = [
    'click x href "javascript:alert(1)"',
    "%%{init: {'securityLevel': 'loose'}}%%",
    "```\n# out of the fence",
    "a:b, 2026-01-01, 1d",
    "section evil",
    "x\u2028click y call alert(1)",
    "<img src=x onerror=alert(1)>",
]


def test_hostile_rack_names_cannot_leave_a_mermaid_label(service: Service, store_url: str) -> None:
    from rackcron.store import tables, transaction

    for n, name in enumerate(HOSTILE):
        rack = _rack(service, f"rack-{n}")
        service.create_schedule(ScheduleConfig(name=f"s{n}", spec_type="interval", spec="6h"),
                                make_operation("power_on", target=rack_spec(rack)))  # fmt: skip
        with transaction(service.engine) as conn:  # what a store written by another tool holds
            conn.execute(tables.rack.update().where(tables.rack.c.id == rack).values(name=name))
            conn.execute(tables.task_schedule.update().where(tables.task_schedule.c.name == f"s{n}")
                         .values(name=name + " schedule"))  # fmt: skip
    result = run("upcoming", "--window", "24h", "--format", "mermaid", url=store_url)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "```mermaid" and lines[-1] == "```"
    assert "```" not in "\n".join(lines[1:-1])
    body = lines[1:-1]
    assert all(
        line == "gantt" or line.startswith(("    title ", "    dateFormat ", "    axisFormat ",
                                            "    section ", "    #"))
        for line in body
    ), body  # fmt: skip
    for line in body:
        assert "%%" not in line and "<" not in line and '"' not in line, line
        if line.startswith("    #"):  # a task: the first ':' is the one before its data
            assert line.index(":") == line.index(" :") + 1, line


def test_past_the_bar_limit_the_latest_firings_are_left_out(
    service: Service, store_url: str
) -> None:
    # 30 hourly schedules over 744 h are 22,320 bars, past MAX_BARS (20,000). The oldest
    # schedules took every bar, to the window's end, and the three newest had none: the
    # page said "the latest are not shown" while it left out the next hour's firings.
    rack = _rack(service)
    for n in range(30):
        service.create_schedule(ScheduleConfig(name=f"hourly-{n:02d}", spec_type="interval",
                                               spec="1h"),
                                make_operation("power_on", target=rack_spec(rack)))  # fmt: skip
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "744h", "--format",
                 "json", url=store_url)  # fmt: skip
    data = json.loads(result.output)
    assert data["truncated"] is True and len(data["firings"]) == 20_000
    first_hour = {f["schedule"] for f in data["firings"] if f["start"] == "2026-06-01T13:00:00Z"}
    assert first_hour == {f"hourly-{n:02d}" for n in range(30)}
    per_schedule = {f["schedule"] for f in data["firings"]}
    assert len(per_schedule) == 30
    last = max(f["start"] for f in data["firings"])
    assert last == "2026-06-29T07:00:00Z"  # 13:00 + 666 h: the 667th hour, 20,000 / 30


def test_many_freezes_are_looked_up_in_bounded_time(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each firing asked each freeze for its window afresh: 100 freezes over its rack and
    # 20,000 firings took 22 s; each freeze's windows are now walked once, in time order.
    from rackcron.domain.models import Freeze, FreezeSelector

    rack = _rack(service)
    for n in range(20):
        _every_second(service, f"s{n:02d}", rack, "power_on")
    for n in range(100):  # each one second every minute, over the rack
        service.upsert_freeze(Freeze(id=uuid.uuid4(), name=f"f{n:03d}", cron="* * * * *",
                                     duration_seconds=1, selector=FreezeSelector(racks=["rack-1"])))  # fmt: skip
    steps = count_steps(monkeypatch)
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "744h", "--format",
                 "json", url=store_url)  # fmt: skip
    assert steps["next_after"] < BUDGET_FREEZES
    firings = json.loads(result.output)["firings"]
    assert len(firings) == 20_000
    held = {(f["schedule"], f["start"], f["freeze"]) for f in firings if f["freeze"]}
    # Each schedule's firings at a whole minute are held, by the first freeze.
    assert held == {(f"s{n:02d}", f"2026-06-01T12:{m:02d}:00Z", "f000")
                    for n in range(20) for m in range(1, 17)}  # fmt: skip


def test_the_names_a_firing_conflicts_with_are_bounded(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 300 hourly firmware upgrades in lockstep on one rack: every firing conflicts with
    # all 299 others. Each bar named all of them (39 MB of JSON; 800 schedules took 30 s);
    # now it names 10 and says there are more, and its sweeps stop there.
    rack = _rack(service)
    for n in range(300):
        service.create_schedule(ScheduleConfig(name=f"fw-{n:03d}", spec_type="interval",
                                               spec="1h"),
                                make_operation("upgrade_firmware", target=rack_spec(rack)))  # fmt: skip
    steps = count_steps(monkeypatch)
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "24h", "--format",
                 "json", url=store_url)  # fmt: skip
    assert result.exit_code == 0
    assert steps["noted"] < BUDGET_NOTED, steps
    assert len(result.output) < 5_000_000, len(result.output)
    data = json.loads(result.output)
    assert (
        data["format_version"] == "1.1" and len(data["firings"]) == 6_900
    )  # 23 each (the first at 13:00)
    for firing in data["firings"]:
        names = firing["conflicts_with"]
        assert len(names) == MAX_CONFLICT_NAMES and firing["conflicts_more"] is True
        assert firing["schedule"] not in names and names == sorted(names)
    text = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "2h", url=store_url)
    assert text.exit_code == 0 and " and more" in text.output


def test_a_firing_with_few_conflicts_names_them_all(service: Service, store_url: str) -> None:
    rack = _rack(service)
    for n in range(MAX_CONFLICT_NAMES + 1):  # each conflicts with exactly 10 others
        service.create_schedule(ScheduleConfig(name=f"fw-{n:02d}", spec_type="interval",
                                               spec="1h"),
                                make_operation("upgrade_firmware", target=rack_spec(rack)))  # fmt: skip
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "2h", "--format",
                 "json", url=store_url)  # fmt: skip
    firings = json.loads(result.output)["firings"]
    assert len(firings) >= MAX_CONFLICT_NAMES + 1
    for firing in firings:
        expected = sorted({f"fw-{n:02d}" for n in range(11)} - {firing["schedule"]})
        assert firing["conflicts_with"] == expected and firing["conflicts_more"] is False


def test_one_racks_firings_are_not_cut_by_the_fleets_bar_limit(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --rack kept the rack's bars among the fleet's first MAX_BARS: at 2,000 racks that
    # was ~10 firings of the rack, to 00:24 of a 24 h window, and "too many firings".
    from rackcron.domain import upcoming as module

    monkeypatch.setattr(module, "MAX_BARS", 50)
    busy = [_rack(service, f"busy-{n:02d}") for n in range(30)]
    quiet = _rack(service, "quiet")
    service.create_schedule(ScheduleConfig(name="fleet-hourly", spec_type="interval", spec="1h"),
                            make_operation("power_on", target=rack_spec(*busy, quiet)))  # fmt: skip
    service.create_schedule(ScheduleConfig(name="quiet-6h", spec_type="interval", spec="6h"),
                            make_operation("power_off", target=rack_spec(quiet)))  # fmt: skip
    data = _json("--rack", "quiet", url=store_url)
    assert data["truncated"] is False
    assert {f["rack"] for f in data["firings"]} == {"quiet"}
    counts = {s: sum(f["schedule"] == s for f in data["firings"]) for s in ("fleet-hourly",
                                                                            "quiet-6h")}  # fmt: skip
    assert counts == {"fleet-hourly": 24, "quiet-6h": 4}
    fleet = _json(url=store_url)
    assert fleet["truncated"] is True and len(fleet["firings"]) == 50
