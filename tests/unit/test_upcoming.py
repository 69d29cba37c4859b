"""rackcron.domain.upcoming: the bars of a window, predicted conflicts and freezes, pure."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rackcron.domain import timing
from rackcron.domain.filters import ComponentFilter
from rackcron.domain.models import (
    Component,
    ComponentType,
    Freeze,
    FreezeSelector,
    OperationTemplate,
    OverlapPolicy,
    Rack,
    RolloutFirst,
    RolloutPolicy,
    RolloutRecord,
    RolloutScopeRecord,
    Schedule,
    Scope,
    SpecType,
)
from rackcron.domain.upcoming import MAX_FIRES_PER_SCHEDULE, FleetView, expected_duration, upcoming

T0 = datetime(2026, 12, 1, tzinfo=UTC)
RACK = Rack(id=uuid.uuid4(), name="rack-a01", labels={"row": "A"})
OTHER = Rack(id=uuid.uuid4(), name="rack-b01", labels={"row": "B"})
C0, C1, SHELF = (
    Component(id=uuid.uuid4(), rack_id=RACK.id, type=t, name=n)
    for t, n in (
        (ComponentType.COMPUTE, "c0"),
        (ComponentType.COMPUTE, "c1"),
        (ComponentType.POWERSHELF, "ps"),
    )
)
TEMPLATES = {
    "power_on": OperationTemplate(type="power_control", code="power_on"),
    "power_off": OperationTemplate(type="power_control", code="power_off"),
    "upgrade_firmware": OperationTemplate(
        type="firmware_control", code="upgrade", information={"target_version": "2"}
    ),
}


def schedule(
    name: str,
    kind: str,
    *targets: tuple[Rack, ComponentFilter | None],
    spec: str = "6h",
    spec_type: SpecType = SpecType.INTERVAL,
    next_run_at: datetime | None = T0 + timedelta(hours=1),
    enabled: bool = True,
    anchor: datetime | None = None,
    jitter: str | None = None,
) -> tuple[Schedule, list[Scope]]:
    made = Schedule(
        id=uuid.uuid4(), name=name, spec_type=spec_type, spec=spec, timezone="UTC",
        template=TEMPLATES[kind], overlap_policy=OverlapPolicy.SKIP, enabled=enabled,
        next_run_at=next_run_at, last_run_at=None, created_at=T0, updated_at=T0,
        anchor=anchor, jitter=jitter,
    )  # fmt: skip
    scopes = [
        Scope(
            id=uuid.uuid4(),
            schedule_id=made.id,
            rack_id=r.id,
            component_filter=f,
            last_task_id=None,
            created_at=T0,
        )
        for r, f in targets
    ]
    return made, scopes


def view(*made: tuple[Schedule, list[Scope]], freezes: tuple[Freeze, ...] = ()) -> FleetView:
    return FleetView(
        schedules=[s for s, _ in made],
        scopes={s.id: scopes for s, scopes in made},
        racks=[RACK, OTHER],
        components=[C0, C1, SHELF],
        freezes=freezes,
    )


def only(*components: Component) -> ComponentFilter:
    return ComponentFilter.components([c.id for c in components])


def test_each_firing_is_a_bar_per_rack_as_long_as_its_operation() -> None:
    made = schedule("six-hourly", "power_on", (RACK, None), (OTHER, None))
    found = upcoming(view(made), T0, T0 + timedelta(hours=24))
    starts = [T0 + timedelta(hours=h) for h in (1, 7, 13, 19)]
    assert [(b.start, b.rack) for b in found.bars] == [
        (at, rack) for at in starts for rack in ("rack-a01", "rack-b01")
    ]
    assert {b.end - b.start for b in found.bars} == {expected_duration("power_on")}
    assert not found.truncated


def test_an_overdue_schedule_fires_once_at_the_window_start() -> None:
    made = schedule("late", "power_on", (RACK, None), next_run_at=T0 - timedelta(hours=13))
    found = upcoming(view(made), T0, T0 + timedelta(hours=6))
    assert [b.start for b in found.bars] == [T0, T0 + timedelta(hours=5)]


def test_an_overdue_schedule_whose_period_lands_on_the_window_start_fires_there_once() -> None:
    made = schedule(
        "late", "power_on", (RACK, None), spec="1m", next_run_at=T0 - timedelta(minutes=5)
    )
    found = upcoming(view(made), T0, T0 + timedelta(minutes=3))
    assert [b.start for b in found.bars] == [T0 + timedelta(minutes=m) for m in range(3)]


def test_disabled_consumed_and_unscoped_schedules_draw_nothing() -> None:
    paused = schedule("paused", "power_on", (RACK, None), enabled=False)
    consumed = schedule("consumed", "power_on", (RACK, None), next_run_at=None)
    unscoped = schedule("unscoped", "power_on")
    assert upcoming(view(paused, consumed, unscoped), T0, T0 + timedelta(days=1)).bars == ()


def test_overlapping_bars_are_marked_only_when_their_tasks_conflict() -> None:
    shelf = schedule("shelf-off", "power_off", (RACK, only(SHELF)))
    compute = schedule("c0-on", "power_on", (RACK, only(C0)))
    firmware = schedule("c1-fw", "upgrade_firmware", (RACK, only(C1)))
    found = upcoming(view(shelf, compute, firmware), T0, T0 + timedelta(hours=2))
    marks = {b.schedule: b.conflicts_with for b in found.bars}
    # The shelf's power holds the rack against both; compute power beside firmware on
    # another component may run side by side.
    assert marks == {
        "shelf-off": ("c0-on", "c1-fw"),
        "c0-on": ("shelf-off",),
        "c1-fw": ("shelf-off",),
    }


def test_bars_that_do_not_overlap_in_time_are_not_marked() -> None:
    first = schedule("first", "power_on", (RACK, only(C0)))
    later = schedule("later", "power_off", (RACK, only(C0)),
                     next_run_at=T0 + timedelta(hours=1, minutes=10))  # fmt: skip
    found = upcoming(view(first, later), T0, T0 + timedelta(hours=2))
    assert all(b.conflicts_with == () for b in found.bars)


def test_a_bar_in_a_freeze_names_it_and_the_window_lists_its_racks() -> None:
    freeze = Freeze(
        id=uuid.uuid4(), name="row-b", start=T0, end=T0 + timedelta(hours=3),
        selector=FreezeSelector(rack_labels={"row": "B"}, operations=["power_on"]),
    )  # fmt: skip
    made = schedule("both", "power_on", (RACK, None), (OTHER, None))
    found = upcoming(view(made, freezes=(freeze,)), T0, T0 + timedelta(hours=8))
    assert [(b.rack, b.start.hour, b.freeze) for b in found.bars] == [
        ("rack-a01", 1, None), ("rack-b01", 1, "row-b"),
        ("rack-a01", 7, None), ("rack-b01", 7, None),
    ]  # fmt: skip
    (window,) = found.freezes
    assert (window.name, window.rack_ids, window.holds) == ("row-b", {OTHER.id}, "power_on")


def test_a_schedule_firing_every_second_is_bounded() -> None:
    made = schedule("hot", "power_on", (RACK, None), spec="1s", next_run_at=T0)
    found = upcoming(view(made), T0, T0 + timedelta(hours=2))
    assert len(found.bars) == MAX_FIRES_PER_SCHEDULE and found.cut == ("hot",)
    assert not found.truncated


def test_a_window_must_end_after_it_starts() -> None:
    with pytest.raises(ValueError, match="must end after"):
        upcoming(view(), T0, T0)


def test_spread_schedules_are_drawn_at_their_spread_times_and_conflict_there() -> None:
    """docs/spec/SEMANTICS.md "Spreading fire times": bars and marks use the jittered times."""
    spec = timing.parse_spec("cron", "0 * * * *")
    spread = timing.Spread(None, timedelta(minutes=50))
    hours = [T0 + timedelta(hours=h) for h in range(1, 4)]
    starts = [h + timing.jitter_offset(spec, spread, "hourly", h) for h in hours]
    hourly = schedule("hourly", "power_off", (RACK, None), spec="0 * * * *",
                      spec_type=SpecType.CRON, next_run_at=starts[0], jitter="50m")  # fmt: skip
    found = upcoming(view(hourly), T0, T0 + timedelta(hours=3, minutes=59))
    assert [b.start for b in found.bars] == starts
    # Another schedule on the rack, at the second bar's jittered time, is marked against it.
    at = schedule("at", "power_on", (RACK, only(C0)), spec="24h", next_run_at=starts[1])
    marked = upcoming(view(hourly, at), T0, T0 + timedelta(hours=3, minutes=59))
    assert [b.start for b in marked.bars if b.conflicts_with == ("at",)] == [starts[1]]
    # An anchored interval from an overdue next run: back on its grid at the window start.
    anchored = schedule("grid", "power_on", (OTHER, None), spec="2h",
                        next_run_at=T0 - timedelta(hours=5),
                        anchor=datetime(2026, 1, 1, 0, 30, tzinfo=UTC))  # fmt: skip
    drawn = upcoming(view(anchored), T0, T0 + timedelta(hours=5))
    assert [b.start for b in drawn.bars] == [T0, T0 + timedelta(minutes=30),
                                             T0 + timedelta(hours=2, minutes=30),
                                             T0 + timedelta(hours=4, minutes=30)]  # fmt: skip


def test_a_rollout_firing_puts_each_rack_in_its_estimated_slot() -> None:
    """Canary rack-b01 first, then after its 45 minutes and the 30-minute bake, rack-a01:
    the firing spans the estimated span; the declared expected_duration is each bar's."""
    made, scopes = schedule("fw", "upgrade_firmware", (RACK, None), (OTHER, None), spec="24h")
    rolled = made.model_copy(
        update={
            "rollout": RolloutPolicy(
                max_in_flight="1", waves=("1",), bake="30m", first=RolloutFirst(racks=["rack-b01"])
            ),
            "expected_duration": "45m",
        }
    )
    found = upcoming(view((rolled, scopes)), T0, T0 + timedelta(hours=24))
    fired = T0 + timedelta(hours=1)
    assert [(b.rack, b.start - fired, b.end - b.start, b.slot) for b in found.bars] == [
        ("rack-b01", timedelta(0), timedelta(minutes=45), True),
        ("rack-a01", timedelta(minutes=75), timedelta(minutes=45), True),
    ]


def test_a_running_rollout_is_drawn_as_it_stands() -> None:
    made, scopes = schedule("fw", "power_on", (RACK, None), (OTHER, None))
    started = T0 - timedelta(minutes=4)
    record = RolloutRecord(
        id=uuid.uuid4(), schedule_id=made.id, schedule_name="fw", manual=True, due_at=started,
        fired_at=started, policy=RolloutPolicy(max_in_flight="1"), operation="power_on",
        state="rolling", wave=1, budget=0, in_flight=1, per_group=1, updated_at=started,
        per_rack_seconds=600,
        scopes=[
            RolloutScopeRecord(position=0, scope_id=scopes[0].id, rack_id=RACK.id,
                               rack_name=RACK.name, wave=1, stage="active", started_at=started),
            RolloutScopeRecord(position=1, scope_id=scopes[1].id, rack_id=OTHER.id,
                               rack_name=OTHER.name, wave=1, stage="waiting"),
        ],
    )  # fmt: skip
    disabled = made.model_copy(update={"enabled": False})  # its next firing is not drawn
    plain = FleetView(
        schedules=[disabled], scopes={made.id: scopes}, racks=[RACK, OTHER],
        components=[C0, C1, SHELF], rollouts=[record],
    )  # fmt: skip
    found = upcoming(plain, T0, T0 + timedelta(hours=24))
    assert [(b.rack, b.stage, b.start, b.end, b.rollout) for b in found.bars] == [
        ("rack-a01", "active", T0, started + timedelta(minutes=10), record.id),
        ("rack-b01", "waiting", T0 + timedelta(minutes=10), T0 + timedelta(minutes=20),
         record.id),
    ]  # fmt: skip


def test_racks_laid_out_alike_share_their_meeting_points(monkeypatch) -> None:
    """Where a scope's task stands and looks is worked out once per operation type and
    layout of components (their places and types on the rack), not once per scope: 40
    racks alike under two fleet-wide schedules are two answers, and their bars still
    conflict rack by rack and nowhere else."""
    import rackcron.domain.upcoming as module

    calls: list[object] = []
    counted = module.meeting_points

    def counting(work):
        calls.append(work)
        return counted(work)

    monkeypatch.setattr(module, "meeting_points", counting)
    racks = [Rack(id=uuid.uuid4(), name=f"rack-{n:02d}") for n in range(40)]
    parts = [Component(id=uuid.uuid4(), rack_id=r.id, type=t, name=f"c{i}")
             for r in racks for i, t in enumerate((ComponentType.COMPUTE, ComponentType.NVSWITCH))]  # fmt: skip
    on = schedule("on", "power_on", *((r, None) for r in racks))
    off = schedule("off", "power_off", *((r, None) for r in racks))
    firmware = schedule("fw", "upgrade_firmware", (racks[0], None))
    found = upcoming(
        FleetView(schedules=[on[0], off[0], firmware[0]],
                  scopes={s.id: scopes for s, scopes in (on, off, firmware)},
                  racks=racks, components=parts),
        T0, T0 + timedelta(hours=2),
    )  # fmt: skip
    assert len(calls) == 2  # power (on and off are one operation type) and firmware
    assert len(found.bars) == 81
    assert {b.rack for b in found.bars if b.conflicts_with} == {r.name for r in racks}
    assert all(set(b.conflicts_with) <= {"on", "off", "fw"} - {b.schedule} for b in found.bars)


def test_schedules_sharing_meeting_points_but_not_lengths_are_swept_apart() -> None:
    """Scopes of one make and operation type share their meeting points; a long bar of
    one schedule still conflicts with a short one of another that starts after a third,
    shorter one has ended (found in review: the sweep took them for one kind of bar)."""
    made = []
    for name, kind, after, length in (
        ("long", "power_on", timedelta(hours=1), "2h"),
        ("short-1", "power_off", timedelta(hours=1, minutes=1), "30m"),
        ("short-2", "power_off", timedelta(hours=1, minutes=40), "30m"),
    ):
        scheduled, scopes = schedule(name, kind, (RACK, None), spec="24h", next_run_at=T0 + after)
        made.append((scheduled.model_copy(update={"expected_duration": length}), scopes))
    found = upcoming(view(*made), T0, T0 + timedelta(hours=6))
    marked = {b.schedule: b.conflicts_with for b in found.bars}
    assert marked == {
        "long": ("short-1", "short-2"),
        "short-1": ("long",),
        "short-2": ("long",),
    }


@pytest.mark.parametrize(
    ("cutoff", "fired", "drawn"),
    [
        # The default cutoff is the next firing: rack-a01's slot (45 m) is past it, so
        # each hourly firing draws rack-b01 alone, and every firing fires.
        (None, [0, 30, 60], ["rack-b01"] * 3),
        # A cutoff of 50 m: rack-a01 starts at 45 m, the roll-out runs until 50 m, past
        # the firing at 30 m, which is missed (one roll-out at a time).
        ("50m", [0, 60], ["rack-b01", "rack-a01", "rack-b01"]),
    ],
)
def test_a_rollout_draws_no_rack_past_its_cutoff_and_its_overlapped_firings_are_missed(
    cutoff: str | None, fired: list[int], drawn: list[str]
) -> None:
    """Hostile review of issue 27: a roll-out's racks were drawn past its cutoff (to
    01:25 for a firing every minute), and the next firing of the schedule too, which the
    contract misses while a roll-out of the schedule is unfinished."""
    made, scopes = schedule("fw", "upgrade_firmware", (RACK, None), (OTHER, None), spec="30m")
    rolled = made.model_copy(
        update={
            "rollout": RolloutPolicy(
                max_in_flight="1", first=RolloutFirst(racks=["rack-b01"]), cutoff=cutoff
            ),
            "expected_duration": "45m",
        }
    )
    window = (T0 + timedelta(hours=1), T0 + timedelta(minutes=150))  # firings at 0, 30, 60 m
    found = upcoming(view((rolled, scopes)), *window)
    assert sorted({int((b.start - window[0]).total_seconds() // 60) // 30 * 30
                   for b in found.bars if b.rack == "rack-b01"}) == fired  # fmt: skip
    assert [b.rack for b in sorted(found.bars, key=lambda b: b.start)] == drawn
