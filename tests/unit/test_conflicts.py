"""Conflict checks (pure): coarse pairs, component intersection, time overlap, rendering.

Trees are validated from in-memory sources (no files, no store); stored schedules
are built as values. Times are exact: each expected first collision is worked out
by hand in the test's comment.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rackcron.domain import timing
from rackcron.domain.filters import ComponentFilter
from rackcron.domain.models import Management, OperationTemplate, OverlapPolicy, Schedule, SpecType
from rackcron.domain.timing import format_duration
from rackcron.reconciler.conflicts import (
    DEFAULT_DURATIONS,
    ConflictReport,
    StoredSchedule,
    StoreView,
    coarse_conflicts,
    precise_conflicts,
    render_text,
    to_diagnostics,
)
from rackcron.reconciler.declared import Declared
from rackcron.reconciler.validate import validate_sources
from tests.support import trees
from tests.support.trees import component, documents, rack, rack_id

R1, R2, R3 = (uuid.UUID(rack_id(n)) for n in (1, 2, 3))
C1, C2, C3, C4 = (uuid.UUID(f"00000000-0000-4000-8000-0000000000c{i}") for i in range(1, 5))
C5 = uuid.UUID("00000000-0000-4000-8000-0000000000c5")

RACKS = documents(
    rack("r1", 1, components=[
        component(1, "COMPUTE", name="c1"), component(2, "COMPUTE", name="c2"),
        component(3, "NVSWITCH", name="c3"), component(4, "POWERSHELF", name="c4"),
    ]),
    rack("r2", 2, components=[component(5, "COMPUTE", name="c5")]),
    rack("r3", 3),
)  # fmt: skip

NOW = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)  # a Monday


#: A TaskSchedule document (tests/support/trees.py), daily at 02:00 unless told otherwise.
schedule = functools.partial(trees.schedule, spec='"0 2 * * *"')


def tree(*schedules: str) -> Declared:
    result = validate_sources(
        [("racks.yaml", RACKS.encode()), ("s.yaml", "".join(schedules).encode())]
    )
    assert result.ok, [d.text() for d in result.errors]
    return result.declared


def pairs(report: ConflictReport) -> list[tuple[str, str]]:
    return [(c.a.name, c.b.name) for c in report.conflicts]


def stored(
    name: str,
    scope: tuple[tuple[uuid.UUID, ComponentFilter | None], ...] = ((R1, None),),
    *,
    spec_type: SpecType = SpecType.CRON,
    spec: str = "0 2 * * *",
    timezone: str = "UTC",
    code: str = "power_off",
    enabled: bool = True,
    next_run_at: datetime | None = None,
    owner: str | None = None,
    protect: bool = False,
) -> StoredSchedule:
    value = Schedule(
        id=uuid.uuid4(), name=name, spec_type=spec_type, spec=spec, timezone=timezone,
        template=OperationTemplate(type="power_control", code=code),
        overlap_policy=OverlapPolicy.SKIP, enabled=enabled, next_run_at=next_run_at,
        last_run_at=None, created_at=NOW, updated_at=NOW,
        management=Management(owner=owner, protect=protect),
    )  # fmt: skip
    return StoredSchedule(value, scope)


# --- coarse ----------------------------------------------------------------------------------


def test_coarse_reports_each_pair_sharing_a_rack_once() -> None:
    declared = tree(
        schedule("a", targets="{racks: [{name: r1}, {name: r2}]}"),
        schedule("b", targets="{racks: [{name: r2}]}", operation="{upgrade_firmware: {}}"),
        schedule("c", targets="{racks: [{name: r3}]}"),
        schedule("d", targets="{racks: [{name: r1, component_types: [CDU]}]}"),
        schedule("paused", extra="  enabled: false\n"),
    )
    report = coarse_conflicts(declared)
    # Operation types and filters are not compared; a paused schedule is not enabled.
    assert pairs(report) == [("a", "b"), ("a", "d")]
    assert [r.name for r in report.conflicts[0].racks] == ["r2"]
    assert [r.name for r in report.conflicts[1].racks] == ["r1"]
    assert (report.declared, report.stored) == (4, None)
    assert report.conflicts[0].collision is None


def test_coarse_with_the_store_compares_undeclared_enabled_schedules() -> None:
    declared = tree(schedule("a"))
    store = StoreView(
        schedules=(
            stored("a"),  # the declared one wins
            stored("other-repo", owner="team-b"),
            stored("by-hand"),
            stored("mine-deleted-by-apply", owner="me"),
            stored("mine-protected", owner="me", protect=True),
            stored("paused", enabled=False),
            stored("elsewhere", ((R2, None),)),
        )
    )
    report = coarse_conflicts(declared, store, owner="me")
    assert pairs(report) == [("a", "other-repo"), ("a", "by-hand"), ("a", "mine-protected")]
    assert [(c.b.origin, c.b.owner) for c in report.conflicts] == [
        ("store", "team-b"),
        ("store", None),
        ("store", "me"),
    ]
    assert "(store, owner team-b)" in to_diagnostics(report)[0].message
    assert "(store, unmanaged)" in to_diagnostics(report)[1].message
    assert report.stored == 4


def test_pairs_of_two_stored_schedules_are_not_reported() -> None:
    report = coarse_conflicts(tree(schedule("a", targets="{racks: [{name: r3}]}")),
                              StoreView((stored("x"), stored("y"))))  # fmt: skip
    assert pairs(report) == []


# --- precise: where -------------------------------------------------------------------------

WHOLE = "{racks: [{name: r1}]}"
COMPUTE = "{racks: [{name: r1, component_types: [COMPUTE]}]}"
NVSWITCH = "{racks: [{name: r1, component_types: [NVSWITCH]}]}"
CDU = "{racks: [{name: r1, component_types: [cdu]}]}"


def components(*ids: uuid.UUID) -> str:
    return "{components: [" + ", ".join(f"{{id: {i}}}" for i in ids) + "]}"


@pytest.mark.parametrize(
    ("a", "b", "whole", "shared"),
    [
        (WHOLE, WHOLE, True, ["c1", "c2", "c3", "c4"]),
        ("{racks: [{name: r3}]}", "{racks: [{name: r3}]}", True, []),
        (WHOLE, COMPUTE, False, ["c1", "c2"]),
        (COMPUTE, NVSWITCH, None, None),
        (WHOLE, CDU, None, None),
        (COMPUTE, components(C2, C3), False, ["c2"]),
        (NVSWITCH, components(C1, C2), None, None),
        (components(C1), components(C2), None, None),
        (components(C4, C1), components(C1, C4), False, ["c1", "c4"]),
        (components(C3), WHOLE, False, ["c3"]),
    ],
    ids=[
        "whole-whole",
        "whole-whole-no-components",
        "whole-types",
        "types-disjoint",
        "types-matching-nothing",
        "types-components",
        "types-components-disjoint",
        "components-disjoint",
        "components-same-in-inventory-order",
        "components-whole",
    ],
)
def test_precise_intersects_components_through_the_inventory(
    a: str, b: str, whole: bool | None, shared: list[str] | None
) -> None:
    report = precise_conflicts(tree(schedule("a", targets=a), schedule("b", targets=b)), now=NOW)
    if shared is None:
        assert report.conflicts == ()
        return
    (conflict,) = report.conflicts
    (rack,) = conflict.racks
    assert rack.whole_rack is whole
    assert [c.name for c in rack.components] == shared


FIRMWARE, POWER, BRING_UP = "{upgrade_firmware: {}}", "{power_on: {}}", "{bring_up: {}}"


@pytest.mark.parametrize(
    ("a", "b", "rule", "shared"),
    [
        ((POWER, components(C1)), (FIRMWARE, components(C3)), None, None),
        ((FIRMWARE, components(C1)), (FIRMWARE, components(C2)), None, None),
        ((POWER, components(C1)), (POWER, components(C3)), None, None),
        ((FIRMWARE, components(C1, C2)), (FIRMWARE, components(C2)),
         "firmware and firmware conflict on shared components", ["c2"]),
        ((POWER, components(C3)), (FIRMWARE, components(C3)),
         "power on NVSWITCH and firmware on NVSWITCH conflict on shared components", ["c3"]),
        ((BRING_UP, components(C1)), (POWER, components(C2)),
         "bring-up or ingest and any task conflict on the whole rack", []),
        ((POWER, components(C4)), (FIRMWARE, components(C1)),
         "power on POWERSHELF and firmware conflict on the whole rack", []),
    ],
    ids=["compute-power-beside-nvswitch-firmware", "firmware-disjoint", "compute-beside-nvswitch",
         "firmware-shared", "nvswitch-power-firmware", "bring-up-holds-the-rack",
         "shelf-power-holds-the-rack"],
)  # fmt: skip
def test_precise_asks_the_task_conflict_table(
    a: tuple[str, str], b: tuple[str, str], rule: str | None, shared: list[str] | None
) -> None:
    """docs/spec/SEMANTICS.md "Task conflicts": the same table as the task manager's."""
    declared = tree(
        schedule("a", operation=a[0], targets=a[1]), schedule("b", operation=b[0], targets=b[1])
    )
    report = precise_conflicts(declared, now=NOW)
    if rule is None:
        assert report.conflicts == ()
        return
    (conflict,) = report.conflicts
    (rack,) = conflict.racks
    assert (rack.rule, [c.name for c in rack.components]) == (rule, shared)


def test_precise_keeps_only_the_racks_where_components_meet() -> None:
    declared = tree(
        schedule("a", targets="{racks: [{name: r1, component_types: [NVSWITCH]}, {name: r2}]}"),
        schedule("b", targets="{racks: [{name: r1, component_types: [COMPUTE]}, {name: r2}]}"),
    )
    (conflict,) = precise_conflicts(declared, now=NOW).conflicts
    assert [(r.name, [c.name for c in r.components]) for r in conflict.racks] == [("r2", ["c5"])]


# --- precise: when ---------------------------------------------------------------------------


def test_first_collision_is_the_first_instant_both_run() -> None:
    # Firmware 01:00-03:00 UTC every day; a power-off at 02:30 lands in the middle of it.
    declared = tree(
        schedule("fw", spec='"0 1 * * *"', operation="{upgrade_firmware: {}}"),
        schedule("shutdown", spec='"30 2 * * *"', operation="{power_off: {}}"),
    )
    (conflict,) = precise_conflicts(declared, now=NOW).conflicts
    hit = conflict.collision
    assert hit is not None
    assert hit.at == datetime(2026, 6, 1, 2, 30, tzinfo=UTC)
    fw, shutdown = hit.firings
    assert (fw.start, fw.end) == (
        datetime(2026, 6, 1, 1, tzinfo=UTC),
        datetime(2026, 6, 1, 3, tzinfo=UTC),
    )
    assert (shutdown.start, shutdown.end) == (hit.at, datetime(2026, 6, 1, 2, 40, tzinfo=UTC))


def test_first_collision_found_from_either_side() -> None:
    # The long firing belongs to b this time, and b has far more firings than a.
    declared = tree(
        schedule("weekly-off", spec='"30 2 * * 3"', operation="{power_off: {}}"),
        schedule("every-5m-ingest", spec='"*/5 * * * *"', operation="{ingest: {}}"),
    )
    (conflict,) = precise_conflicts(declared, now=NOW).conflicts
    assert conflict.collision is not None
    # 2026-06-03 is the first Wednesday; ingest started at 02:30 runs over it (and 02:05..02:25 too).
    assert conflict.collision.at == datetime(2026, 6, 3, 2, 30, tzinfo=UTC)
    off, ingest = conflict.collision.firings
    assert off.start == conflict.collision.at
    assert ingest.start == datetime(2026, 6, 3, 2, 5, tzinfo=UTC)  # the earliest still running


def test_back_to_back_firings_do_not_collide() -> None:
    # [02:00, 02:10) and [02:10, 02:20): half-open, they touch but never overlap.
    declared = tree(schedule("a", spec='"0 2 * * *"'), schedule("b", spec='"10 2 * * *"'))
    assert precise_conflicts(declared, now=NOW).conflicts == ()


def test_dst_gap_cron_meets_a_utc_interval_only_on_the_spring_forward_day() -> None:
    # The interval fires at 07:00Z every day for 10 minutes. "30 2 * * *" in New York is
    # 07:30Z in winter and 06:30Z in summer; on 2026-03-08 02:30 does not exist, and a
    # fixed-time job fires when the gap ends: 03:00 EDT = 07:00Z, right on the interval.
    now = datetime(2026, 3, 5, 7, 0, tzinfo=UTC)
    declared = tree(
        schedule("nightly", spec='"30 2 * * *"', extra="  timezone: America/New_York\n"),
        schedule("daily", spec_type="interval", spec="24h", operation="{power_off: {}}"),
    )
    (conflict,) = precise_conflicts(declared, now=now).conflicts
    hit = conflict.collision
    assert hit is not None and hit.at == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)
    nightly, daily = hit.firings
    assert nightly.zone == "America/New_York" and daily.zone == "UTC"
    assert nightly.local_at.isoformat() == "2026-03-08T03:00:00-04:00"
    assert nightly.local_at.tzname() == "EDT"
    assert daily.local_start == hit.at
    # With a horizon ending before the spring-forward day there is nothing to report.
    assert precise_conflicts(declared, now=now, horizon=timedelta(days=2)).conflicts == ()


def test_durations_override_the_defaults() -> None:
    declared = tree(schedule("a", spec='"0 2 * * *"'), schedule("b", spec='"15 2 * * *"'))
    assert precise_conflicts(declared, now=NOW).conflicts == ()  # power_on: 10m
    (conflict,) = precise_conflicts(
        declared, now=NOW, durations={"power_on": timedelta(minutes=20)}
    ).conflicts
    assert conflict.collision is not None
    assert conflict.collision.at == datetime(2026, 6, 1, 2, 15, tzinfo=UTC)
    assert conflict.collision.firings[0].end == datetime(2026, 6, 1, 2, 20, tzinfo=UTC)


def test_horizon_bounds_the_firings_compared() -> None:
    # Both fire on Mondays only; NOW is Monday 00:00, so next Monday is 7 days away.
    declared = tree(schedule("a", spec='"0 2 * * 1"'), schedule("b", spec='"5 2 * * mon"'))
    later = NOW + timedelta(hours=3)  # after this Monday's firings
    assert precise_conflicts(declared, now=later, horizon=timedelta(days=6)).conflicts == ()
    (conflict,) = precise_conflicts(declared, now=later, horizon=timedelta(days=7)).conflicts
    assert conflict.collision is not None
    assert conflict.collision.at == datetime(2026, 6, 8, 2, 5, tzinfo=UTC)


def test_one_time_schedules_fire_once_and_past_ones_not_at_all() -> None:
    at = '"2026-06-02T02:05:00+00:00"'
    declared = tree(
        schedule("once", spec_type="one-time", spec=at, operation="{bring_up: {}}"),
        schedule("nightly", spec='"0 2 * * *"'),
    )
    (conflict,) = precise_conflicts(declared, now=NOW).conflicts
    assert conflict.collision is not None
    assert conflict.collision.at == datetime(2026, 6, 2, 2, 5, tzinfo=UTC)
    # Once its instant has passed it is taken as fired.
    assert precise_conflicts(declared, now=NOW + timedelta(days=2)).conflicts == ()


def test_stored_next_run_fixes_an_interval_schedules_phase() -> None:
    # Declared alone, a 24h interval first fires at now + 24h = 06-02T00:00, missing 02:00.
    declared = tree(
        schedule("daily", spec_type="interval", spec="24h"),
        schedule("nightly", spec='"0 2 * * *"', operation="{power_off: {}}"),
    )
    assert precise_conflicts(declared, now=NOW).conflicts == ()
    # The store holds it, due at 01:55: its firings run 01:55-02:05, across 02:00.
    due = datetime(2026, 6, 1, 1, 55, tzinfo=UTC)
    store = StoreView((stored("daily", spec_type=SpecType.INTERVAL, spec="24h", next_run_at=due),))
    (conflict,) = precise_conflicts(declared, store, now=NOW).conflicts
    assert conflict.collision is not None
    assert conflict.collision.at == datetime(2026, 6, 1, 2, 0, tzinfo=UTC)
    assert conflict.collision.firings[0].start == due
    # A phase from the past is carried forward: due 3 days ago at 01:55, still 01:55 today.
    earlier = StoreView(
        (
            stored(
                "daily",
                spec_type=SpecType.INTERVAL,
                spec="24h",
                next_run_at=due - timedelta(days=3),
            ),
        )
    )
    (conflict,) = precise_conflicts(declared, earlier, now=NOW).conflicts
    assert conflict.collision is not None and conflict.collision.firings[0].start == due
    # A stored spec that differs from the declared one says nothing about the new phase.
    other = StoreView((stored("daily", spec_type=SpecType.INTERVAL, spec="12h", next_run_at=due),))
    assert precise_conflicts(declared, other, now=NOW).conflicts == ()


def test_stored_schedules_collide_with_their_own_operation_duration() -> None:
    declared = tree(schedule("fw", spec='"50 1 * * *"', operation="{upgrade_firmware: {}}"))
    store = StoreView(
        schedules=(
            stored("hand-made", ((R1, ComponentFilter.types(["COMPUTE"])),), spec="0 2 * * *"),
        ),
    )
    (conflict,) = precise_conflicts(declared, store, now=NOW).conflicts
    assert (conflict.b.origin, conflict.b.operation) == ("store", "power_off")
    assert conflict.collision is not None
    assert conflict.collision.at == datetime(2026, 6, 1, 2, 0, tzinfo=UTC)
    assert [c.name for c in conflict.racks[0].components] == ["c1", "c2"]


def test_a_consumed_one_time_schedule_does_not_fire_again() -> None:
    at = '"2026-06-02T02:05:00Z"'
    declared = tree(
        schedule("once", spec_type="one-time", spec=at), schedule("nightly", spec='"0 2 * * *"')
    )
    consumed = stored("once", spec_type=SpecType.ONE_TIME, spec="2026-06-02T02:05:00Z")
    assert consumed.schedule.consumed
    assert precise_conflicts(declared, StoreView((consumed,)), now=NOW).conflicts == ()


def test_a_stored_spec_this_host_cannot_evaluate_is_only_coarse() -> None:
    declared = tree(schedule("a"))
    store = StoreView((stored("odd", timezone="Mars/Olympus_Mons"),))
    assert pairs(coarse_conflicts(declared, store)) == [("a", "odd")]
    assert precise_conflicts(declared, store, now=NOW).conflicts == ()


def test_a_one_second_interval_over_a_long_horizon_stays_cheap() -> None:
    declared = tree(
        schedule("tick", spec_type="interval", spec="1s"),
        schedule("every-2s", spec_type="interval", spec="2s", targets=NVSWITCH),
        schedule("yearly", spec='"0 3 1 1 *"'),
        schedule("often", spec='"@every 1s"', targets=NVSWITCH),
    )
    started = time.perf_counter()
    report = precise_conflicts(declared, now=NOW, horizon=timedelta(days=366))
    assert time.perf_counter() - started < 2
    assert pairs(report) == [("tick", "every-2s"), ("tick", "yearly"), ("tick", "often"),
                             ("every-2s", "yearly"), ("every-2s", "often"), ("yearly", "often")]  # fmt: skip
    yearly = report.conflicts[1].collision
    assert yearly is not None and yearly.at == datetime(2027, 1, 1, 3, 0, tzinfo=UTC)


@pytest.mark.slow
def test_many_schedules_are_checked_quickly() -> None:
    # 300 schedules over three racks, a fifth of them every five minutes: ~80,000 firings.
    docs = []
    for i in range(300):
        spec = '"*/5 * * * *"' if i % 5 == 0 else f'"{i % 60} {i % 24} * * *"'
        rack = ("r1", "r2", "r3")[i % 3]
        docs.append(schedule(f"s{i}", spec=spec, targets=f"{{racks: [{{name: {rack}}}]}}"))
    declared = tree(*docs)
    started = time.perf_counter()
    report = precise_conflicts(declared, now=NOW)
    assert time.perf_counter() - started < 10
    assert report.declared == 300 and report.conflicts


SPECS = [
    ("cron", '"*/7 * * * *"', "UTC", "{ingest: {}}"),
    ("cron", '"*/5 1-3 * * *"', "America/New_York", "{power_off: {}}"),
    ("cron", '"30 2 * * *"', "Europe/London", "{upgrade_firmware: {}}"),
    ("cron", '"0 */3 * * *"', "Asia/Kolkata", "{power_on: {}}"),
    ("cron", '"15,45 0-6 * * *"', "America/Los_Angeles", "{bring_up: {}}"),
    ("interval", "95m", "", "{power_reset: {}}"),
    ("interval", "13h", "", "{upgrade_firmware: {}}"),
    ("cron", '"@every 47m"', "", "{power_on: {}}"),
]


def brute_force(a: tuple, b: tuple, now: datetime, end: datetime) -> datetime | None:
    """Every firing of both, every pair compared: the earliest instant both run."""
    from rackcron.domain import timing

    def firings(
        spec_type: str, spec: str, zone: str, operation: str
    ) -> list[tuple[datetime, datetime]]:
        parsed = timing.parse_spec(spec_type, spec.strip('"'), zone)
        length = DEFAULT_DURATIONS[operation.strip("{}").split(":")[0]]
        out, t = [], timing.first_run(parsed, now)
        while t < end:
            out.append((t, t + length))
            t = timing.next_after(parsed, t)
        return out

    hits = [max(s1, s2) for s1, e1 in firings(*a) for s2, e2 in firings(*b) if s1 < e2 and s2 < e1]
    return min(hits, default=None)


@pytest.mark.slow
@pytest.mark.parametrize("now", [datetime(2026, 3, 7, 20, tzinfo=UTC), datetime(2026, 10, 31, 22, tzinfo=UTC)],
                         ids=["spring-forward-weekend", "fall-back-weekend"])  # fmt: skip
def test_first_collisions_match_a_brute_force_comparison(now: datetime) -> None:
    horizon = timedelta(days=2)
    docs = [
        schedule(f"s{i}", spec_type=t, spec=spec, operation=op,
                 extra=f"  timezone: {zone}\n" if zone else "")
        for i, (t, spec, zone, op) in enumerate(SPECS)
    ]  # fmt: skip
    report = precise_conflicts(tree(*docs), now=now, horizon=horizon)
    found = {(c.a.name, c.b.name): c.collision.at for c in report.conflicts if c.collision}
    for i, a in enumerate(SPECS):
        for j in range(i + 1, len(SPECS)):
            expected = brute_force(a, SPECS[j], now, now + horizon)
            assert found.get((f"s{i}", f"s{j}")) == expected, (SPECS[i], SPECS[j])


# --- inputs, outputs -------------------------------------------------------------------------


def test_invalid_inputs_are_refused() -> None:
    declared = tree(schedule("a"))
    with pytest.raises(ValueError, match="timezone-aware"):
        precise_conflicts(declared, now=datetime(2026, 6, 1))
    with pytest.raises(ValueError, match="horizon must be positive"):
        precise_conflicts(declared, now=NOW, horizon=timedelta(0))
    with pytest.raises(ValueError, match="duration of ingest must be positive"):
        precise_conflicts(declared, now=NOW, durations={"ingest": timedelta(0)})


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(days=14), "336h"),
        (timedelta(hours=1, minutes=30), "1h30m"),
        (timedelta(minutes=10), "10m"),
        (timedelta(seconds=90), "1m30s"),
        (timedelta(milliseconds=1500), "1.5s"),
        (timedelta(0), "0s"),
    ],
    ids=["days", "hours-minutes", "minutes", "minutes-seconds", "fraction", "zero"],
)
def test_format_duration(value: timedelta, text: str) -> None:
    assert format_duration(value) == text


def test_json_and_text_are_made_from_the_same_report() -> None:
    declared = tree(
        schedule("fw", spec='"0 1 * * *"', operation="{upgrade_firmware: {}}",
                 extra="  timezone: Europe/Paris\n"),
        schedule("shutdown", spec='"30 23 * * *"', operation="{power_off: {}}"),
    )  # fmt: skip
    report = precise_conflicts(declared, now=NOW)
    data = json.loads(json.dumps(report.to_json()))
    assert data["format"] == "rackcron.conflicts/v1" and data["format_version"] == "1.5"
    assert data["mode"] == "precise" and data["count"] == 1 and data["with_store"] is False
    assert data["horizon"] == "336h" and data["now"] == "2026-06-01T00:00:00Z"
    assert data["durations"] == {k: format_duration(v) for k, v in DEFAULT_DURATIONS.items()}
    (conflict,) = data["conflicts"]
    assert [s["name"] for s in conflict["schedules"]] == ["fw", "shutdown"]
    # 01:00 Paris (CEST) is 23:00Z the day before; the power-off at 23:30Z is inside it.
    hit = conflict["first_collision"]
    assert hit["at"] == "2026-06-01T23:30:00Z"
    assert hit["firings"][0] == {
        "schedule": "fw",
        "start": "2026-06-01T23:00:00Z",
        "end": "2026-06-02T01:00:00Z",
        "zone": "Europe/Paris",
        "local_start": "2026-06-02T01:00:00+02:00 CEST",
        "local_at": "2026-06-02T01:30:00+02:00 CEST",
    }
    rule = "power on POWERSHELF and firmware conflict on the whole rack"  # r1 has a shelf
    assert conflict["racks"][0]["rule"] == rule
    text = render_text(data)
    assert 'warning: schedules "fw" and "shutdown" can collide on r1 (whole rack)' in text
    assert f"\n  rule: {rule}\n" in text
    assert (
        "first collision at 2026-06-01T23:30:00Z = 2026-06-02T01:30:00+02:00 CEST in Europe/Paris"
        in text
    )
    assert (
        "fires 2026-06-01T23:00:00Z (2026-06-02T01:00:00+02:00 CEST), runs until 2026-06-02T01:00:00Z"
        in text
    )
    assert text.endswith(
        "Precise check of 2 declared schedules over 336h from 2026-06-01T00:00:00Z: 1 conflict."
    )


def test_coarse_json_and_diagnostics() -> None:
    declared = tree(schedule("a"), schedule("b", targets="{racks: [{name: r1}, {name: r2}]}"))
    report = coarse_conflicts(declared)
    data = report.to_json()
    assert data["now"] is None and data["horizon"] is None and data["durations"] is None
    assert data["conflicts"][0]["racks"] == [{"id": str(R1), "name": "r1"}]
    assert "first_collision" not in data["conflicts"][0]
    (diagnostic,) = to_diagnostics(report)
    assert (diagnostic.file, diagnostic.line, diagnostic.column) == ("s.yaml", 2, 1)
    assert diagnostic.severity == "warning" and diagnostic.path == "$.metadata.name"
    assert diagnostic.message == (
        'schedule "a" shares r1 with "b" (s.yaml:11); filters and fire times not compared'
    )
    assert to_diagnostics(report, "error")[0].severity == "error"
    assert render_text(data).endswith("Coarse check of 2 declared schedules: 1 conflict.")
    assert render_text(coarse_conflicts(tree(schedule("a"))).to_json()) == (
        "Coarse check of 1 declared schedules: no conflicts."
    )


def test_a_jitter_moves_the_firings_the_precise_check_compares() -> None:
    """docs/spec/SEMANTICS.md "Spreading fire times": the check uses the jittered times.
    Two daily 02:00 power operations on one rack collide the first night; spread by a
    3 h jitter, they first meet on the night their delays bring them together."""
    plain = tree(schedule("a"), schedule("d", operation="{power_off: {}}"))
    (conflict,) = precise_conflicts(plain, now=NOW).conflicts
    assert conflict.collision is not None
    assert conflict.collision.at == datetime(2026, 6, 1, 2, tzinfo=UTC)
    spread = tree(
        schedule("a", extra="  jitter: 3h\n"),
        schedule("d", operation="{power_off: {}}", extra="  jitter: 3h\n"),
    )
    spec, jitter = timing.parse_spec("cron", "0 2 * * *"), timing.Spread(None, timedelta(hours=3))
    nights = [datetime(2026, 6, 1, 2, tzinfo=UTC) + timedelta(days=d) for d in range(14)]
    a, d = ([n + timing.jitter_offset(spec, jitter, name, n) for n in nights] for name in "ad")
    on, off = DEFAULT_DURATIONS["power_on"], DEFAULT_DURATIONS["power_off"]
    met = [max(x, y) for x, y in zip(a, d, strict=True) if x < y + off and y < x + on]
    assert met and met[0] > nights[5]  # not the first night: the jitter moved them apart
    (conflict,) = precise_conflicts(spread, now=NOW).conflicts
    assert conflict.collision is not None and conflict.collision.at == met[0]


def test_the_text_names_five_shared_racks_and_counts_the_rest() -> None:
    """Two fleet-wide schedules share thousands of racks: a line named them all (22 KB at
    2,000 racks); the text and the diagnostics name five, the JSON keeps every one."""
    from rackcron.reconciler.conflicts._render import _racks_text

    racks = [{"id": str(i), "name": f"rack-{i}"} for i in range(2_000)]
    text = _racks_text(racks)
    assert text == "rack-0, rack-1, rack-2, rack-3, rack-4 and 1,995 more racks"
    assert _racks_text(racks[:5]) == "rack-0, rack-1, rack-2, rack-3, rack-4"
    whole = [{"id": "1", "name": "r1", "whole_rack": True}]
    assert _racks_text(whole) == "r1 (whole rack)"


def test_an_unusual_rack_or_component_name_cannot_pass_for_more_of_the_list() -> None:
    """Hostile review of issue 27: a component named ``compute-0), rack-prod-db (whole
    rack) and 4,000 more racks; ...`` read as more racks in a GitHub annotation. Unusual
    names are quoted (their quotes escaped); plain ones read as they did."""
    from rackcron.reconciler.conflicts._render import _racks_text

    spoof = "compute-0), rack-prod-db (whole rack) and 4,000 more racks"
    racks = [{"name": "rack-a01", "components": [{"name": spoof}, {"name": "compute-1"}]},
             {"name": 'r "x"', "whole_rack": True}]  # fmt: skip
    assert _racks_text(racks) == (
        'rack-a01 ("compute-0), rack-prod-db (whole rack) and 4,000 more racks", compute-1),'
        ' "r \\"x\\"" (whole rack)'
    )
