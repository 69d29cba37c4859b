"""Freeze windows: when they hold and what (docs/spec/SEMANTICS.md "Freeze windows")."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rackcron.domain import timing
from rackcron.domain.commands import (
    Command,
    DeleteComponent,
    DeleteFreeze,
    DeleteRack,
    UpsertComponent,
    UpsertFreeze,
    UpsertRack,
    lifted_freezes,
)
from rackcron.domain.freezes import (
    Target,
    active_window,
    already_missed,
    check_freeze,
    holding,
    in_force,
    matches,
    windows,
    work_window,
)
from rackcron.domain.models import (
    Component,
    ComponentType,
    Freeze,
    FreezeSelector,
    Miss,
    MissReason,
    OperationTemplate,
    Rack,
    UpgradeFirmware,
)
from rackcron.domain.templates import OperationTimes, operation_times, to_template

NEW_YORK = ZoneInfo("America/New_York")


def freeze(**fields) -> Freeze:  # type: ignore[no-untyped-def]
    return Freeze(id=uuid.uuid4(), name=fields.pop("name", "f"), **fields)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


HOLIDAYS = freeze(start=utc(2026, 12, 20), end=utc(2027, 1, 3))
NIGHTLY = freeze(cron="0 22 * * *", duration_seconds=8 * 3600, timezone="UTC")


@pytest.mark.parametrize(
    ("at", "held"),
    [
        (utc(2026, 12, 19, 23, 59), False),
        (utc(2026, 12, 20), True),  # the start is inside
        (utc(2027, 1, 2, 23, 59), True),
        (utc(2027, 1, 3), False),  # the end is not: windows are half open
    ],
)
def test_a_fixed_window_holds_from_its_start_until_its_end(at: datetime, held: bool) -> None:
    assert (active_window(HOLIDAYS, at) is not None) is held


@pytest.mark.parametrize(
    ("at", "window"),
    [
        (utc(2026, 6, 1, 21, 59), None),
        (utc(2026, 6, 1, 22), (utc(2026, 6, 1, 22), utc(2026, 6, 2, 6))),
        (utc(2026, 6, 2, 5, 59), (utc(2026, 6, 1, 22), utc(2026, 6, 2, 6))),  # past midnight
        (utc(2026, 6, 2, 6), None),
    ],
)
def test_a_recurring_window_runs_duration_from_each_cron_time(
    at: datetime, window: tuple[datetime, datetime] | None
) -> None:
    assert active_window(NIGHTLY, at) == window


def test_windows_overlapping_a_range_in_order() -> None:
    found = list(windows(NIGHTLY, utc(2026, 6, 1, 23), utc(2026, 6, 3, 23)))
    assert found == [
        (utc(2026, 6, 1, 22), utc(2026, 6, 2, 6)),  # already open at the range's start
        (utc(2026, 6, 2, 22), utc(2026, 6, 3, 6)),
        (utc(2026, 6, 3, 22), utc(2026, 6, 4, 6)),
    ]
    assert list(windows(HOLIDAYS, utc(2027, 1, 3), utc(2027, 2, 1))) == []


def test_a_recurring_freeze_at_0130_local_on_fall_back_day_opens_once() -> None:
    """01:30 happens twice in New York on 2026-11-01; by Debian cron's rule the window
    opens at the first one (EDT, 05:30Z), and runs its elapsed duration."""
    nightly = freeze(cron="30 1 * * *", duration_seconds=3600, timezone="America/New_York")
    day = list(windows(nightly, utc(2026, 11, 1), utc(2026, 11, 2)))
    assert day == [(utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 6, 30))]
    first = day[0][0].astimezone(NEW_YORK)
    assert (first.hour, first.minute, first.utcoffset()) == (1, 30, timedelta(hours=-4))
    # The second 01:30 (EST, 06:30Z) is the instant the window closes: not held.
    assert active_window(nightly, utc(2026, 11, 1, 6, 29)) is not None
    assert active_window(nightly, utc(2026, 11, 1, 6, 30)) is None
    # The next day opens at 01:30 EST.
    assert next(windows(nightly, utc(2026, 11, 1, 7), utc(2026, 11, 3)))[0] == utc(
        2026, 11, 2, 6, 30
    )


def test_a_spring_forward_gap_opens_the_window_when_the_gap_ends() -> None:
    nightly = freeze(cron="30 2 * * *", duration_seconds=600, timezone="America/New_York")
    (window,) = windows(nightly, utc(2026, 3, 8), utc(2026, 3, 9))
    assert window == (utc(2026, 3, 8, 7), utc(2026, 3, 8, 7, 10))  # 03:00 EDT


RACK = Target("rack-b01", {"row": "B"}, "nightly-fw", {"team": "infra"}, "upgrade_firmware")


@pytest.mark.parametrize(
    ("selector", "held"),
    [
        (FreezeSelector(), True),
        (FreezeSelector(racks=["rack-b01"]), True),
        (FreezeSelector(racks=["rack-a01"]), False),
        (FreezeSelector(rack_labels={"row": "B"}), True),
        (FreezeSelector(rack_labels={"row": "B", "hall": "2"}), False),  # every label
        (FreezeSelector(racks=["rack-a01"], rack_labels={"row": "B"}), True),  # name or label
        (FreezeSelector(schedules=["nightly-fw"]), True),
        (FreezeSelector(schedule_labels={"team": "db"}), False),
        (FreezeSelector(operations=["power_on", "upgrade_firmware"]), True),
        (FreezeSelector(operations=["power_on"]), False),
        (FreezeSelector(rack_labels={"row": "B"}, operations=["power_off"]), False),  # and
    ],
)
def test_a_selector_needs_every_dimension_it_names(selector: FreezeSelector, held: bool) -> None:
    assert matches(selector, RACK) is held


def test_a_task_without_a_schedule_is_held_only_by_freezes_not_naming_schedules() -> None:
    manual = Target("rack-b01", {}, None, {}, "power_on")
    assert matches(FreezeSelector(), manual)
    assert not matches(FreezeSelector(schedules=["nightly-fw"]), manual)


def test_holding_is_the_first_active_freeze_that_matches() -> None:
    other = freeze(name="row-a", start=utc(2026, 1, 1), end=utc(2028, 1, 1),
                   selector=FreezeSelector(rack_labels={"row": "A"}))  # fmt: skip
    assert holding([other, HOLIDAYS], RACK, utc(2026, 12, 25)) is HOLIDAYS
    assert holding([other, HOLIDAYS], RACK, utc(2027, 2, 1)) is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "either start and end, or cron and duration"),
        ({"start": utc(2026, 1, 1), "end": utc(2026, 1, 2), "cron": "0 1 * * *"}, "either"),
        ({"start": utc(2026, 1, 1)}, "both start and end"),
        ({"start": utc(2026, 1, 2), "end": utc(2026, 1, 1)}, "end must be after start"),
        ({"cron": "0 1 * * *"}, "positive duration"),
        ({"cron": "@every 1h", "duration_seconds": 60}, "@every"),
        ({"cron": "0 1 * * *", "duration_seconds": 60, "timezone": "Mars/Base"}, "Mars/Base"),
        ({"start": utc(2026, 1, 1), "end": utc(2026, 1, 2),
          "selector": FreezeSelector(operations=["reboot"])}, "unknown operation 'reboot'"),
    ],
)  # fmt: skip
def test_a_freeze_is_one_window_or_one_recurrence(fields: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(timing.SpecError, match=message):
        check_freeze(freeze(**fields))


# --- a freeze miss told once per window ---------------------------------------------------

NIGHT = utc(2026, 12, 1, 23)  # inside NIGHTLY's window of Dec 1, 22:00 .. Dec 2, 06:00


def freeze_miss(at: datetime, detail: str | None = "f") -> Miss:
    return Miss(at=at, lateness_seconds=0.0, reason=MissReason.FREEZE, detail=detail)


@pytest.mark.parametrize(
    ("previous", "holding", "repeated"),
    [
        (None, [NIGHTLY], False),
        (freeze_miss(NIGHT - timedelta(minutes=30)), [NIGHTLY], True),
        (freeze_miss(utc(2026, 12, 1, 22)), [NIGHTLY], True),  # at the window's start
        (freeze_miss(utc(2026, 12, 1, 5)), [NIGHTLY], False),  # the night before
        (freeze_miss(NIGHT, "other"), [NIGHTLY], False),
        (freeze_miss(NIGHT, "f, g"), [NIGHTLY], True),  # g has closed; f was told
        (freeze_miss(NIGHT), [NIGHTLY, freeze(name="g", start=NIGHT, end=HOLIDAYS.start)], False),
        (
            Miss(at=NIGHT, lateness_seconds=60.0, reason=MissReason.DEADLINE),
            [NIGHTLY],
            False,
        ),
        (  # a freeze this host cannot evaluate is one window while it holds
            freeze_miss(NIGHT, "x"),
            [freeze(name="x", cron="0 22 * * *", duration_seconds=3600, timezone="Nowhere/Newer")],
            True,
        ),
    ],
    ids=[
        "first", "same-window", "window-start", "next-window", "another-freeze",
        "fewer-freezes", "a-freeze-joins", "after-a-deadline-miss", "unevaluable",
    ],
)  # fmt: skip
def test_a_freeze_miss_repeats_the_previous_inside_the_same_windows(
    previous: Miss | None, holding: list[Freeze], repeated: bool
) -> None:
    assert already_missed(previous, holding, NIGHT + timedelta(minutes=30)) is repeated


# --- an operation's own times (docs/spec/SEMANTICS.md "Freeze windows (beyond the reference)")

FIRED = utc(2026, 12, 19, 23, 55)  # five minutes before HOLIDAYS opens
_US = timedelta(microseconds=1)


@pytest.mark.parametrize(
    ("start", "end", "work"),
    [
        (None, None, None),  # the work starts at the firing
        (utc(2026, 12, 19), None, None),  # a start time already past: at the firing too
        (utc(2026, 12, 20, 1), None, (utc(2026, 12, 20, 1), utc(2026, 12, 20, 1) + _US)),
        (utc(2026, 12, 20, 1), utc(2026, 12, 20, 3), (utc(2026, 12, 20, 1), utc(2026, 12, 20, 3))),
        (None, utc(2026, 12, 20, 3), (FIRED, utc(2026, 12, 20, 3))),  # from the firing until end
        (utc(2026, 12, 19), utc(2026, 12, 20, 3), (FIRED, utc(2026, 12, 20, 3))),
        (utc(2026, 12, 19), utc(2026, 12, 19, 1), None),  # a window already over
    ],
)
def test_the_work_window_starts_at_the_operations_own_start_time_when_later(
    start: datetime | None, end: datetime | None, work: tuple[datetime, datetime] | None
) -> None:
    assert work_window(FIRED, start, end) == work


def test_a_firmware_upgrade_whose_start_time_is_inside_a_freeze_is_held() -> None:
    """Issue 24 finding 12: fired just before the freeze, its start_time inside it."""
    target = Target("r1", {}, "fw", {}, "upgrade_firmware")
    inside = work_window(FIRED, utc(2026, 12, 20, 1), None)
    assert holding([HOLIDAYS], target, FIRED) is None  # the firing alone is outside
    assert holding([HOLIDAYS], target, FIRED, inside) is HOLIDAYS
    assert in_force(HOLIDAYS, FIRED, inside)
    after = work_window(FIRED, utc(2027, 1, 3), None)  # the window's end is not inside
    assert not in_force(HOLIDAYS, FIRED, after)


def test_a_work_window_meeting_a_freeze_is_held_though_it_starts_before() -> None:
    # 20:00 to 23:00 meets NIGHTLY, which opens at 22:00.
    work = work_window(utc(2026, 6, 1, 12), utc(2026, 6, 1, 20), utc(2026, 6, 1, 23))
    assert in_force(NIGHTLY, utc(2026, 6, 1, 12), work)
    before = work_window(utc(2026, 6, 1, 12), utc(2026, 6, 1, 20), utc(2026, 6, 1, 22))
    assert not in_force(NIGHTLY, utc(2026, 6, 1, 12), before)  # ends as the freeze opens


def test_operation_times_are_read_from_the_stored_template() -> None:
    op = UpgradeFirmware(start_time=utc(2026, 12, 20, 1), end_time=utc(2026, 12, 20, 3))
    assert operation_times(to_template(op)) == OperationTimes(
        utc(2026, 12, 20, 1), utc(2026, 12, 20, 3)
    )
    assert operation_times(to_template(UpgradeFirmware())) == OperationTimes(None, None)
    assert operation_times(None) == OperationTimes()
    odd = OperationTemplate(
        type="firmware_control",
        code="upgrade",
        information={"start_time": "soon", "end_time": 10**20},
    )
    assert operation_times(odd) == OperationTimes()  # a row rackcron did not write: no times


_R1 = uuid.UUID(int=1)


def _rack(name: str, rack_id: uuid.UUID = _R1, **labels: str) -> Rack:
    return Rack(id=rack_id, name=name, labels=labels)


class _Stored:
    """A stored inventory of one rack ``r1`` (row a) holding one component, and rack ``r2``."""

    r1, r2 = _rack("r1", row="a"), _rack("r2", uuid.UUID(int=2))
    part = Component(id=uuid.UUID(int=3), rack_id=r1.id, type=ComponentType.COMPUTE)

    def find_rack(self, rack_id: uuid.UUID) -> Rack | None:
        return {r.id: r for r in (self.r1, self.r2)}.get(rack_id)

    def find_component(self, component_id: uuid.UUID) -> Component | None:
        return self.part if component_id == self.part.id else None


_HOLDS = {
    name: Freeze(id=uuid.uuid4(), name=name, start=HOLIDAYS.start, end=HOLIDAYS.end, selector=s)
    for name, s in (
        ("by-name", FreezeSelector(racks=["r1"])),
        ("by-label", FreezeSelector(rack_labels={"row": "a"})),
        ("everything", FreezeSelector()),
    )
}


_LATER = HOLIDAYS.end + timedelta(days=1)  # type: ignore[operator]
_SOONER = HOLIDAYS.end - timedelta(days=1)  # type: ignore[operator]


def _changed(name: str, **update: object) -> Freeze:
    return _HOLDS[name].model_copy(update=update)


@pytest.mark.parametrize(
    ("command", "lifted"),
    [
        (UpsertRack(rack=_rack("r1-new", row="a")), ["by-name"]),
        (UpsertRack(rack=_rack("r1", row="b")), ["by-label"]),
        (UpsertRack(rack=_rack("r1", row="a", extra="x")), []),  # still held: holds no less
        (UpsertRack(rack=_rack("elsewhere", uuid.uuid4())), []),  # a new rack
        (DeleteRack(id=_Stored.r1.id), ["by-name", "by-label"]),  # "everything" holds its heir
        (DeleteRack(id=_Stored.r2.id), []),
        (
            UpsertComponent(component=_Stored.part.model_copy(update={"rack_id": _Stored.r2.id})),
            ["by-name", "by-label"],
        ),
        (UpsertComponent(component=_Stored.part.model_copy(update={"name": "tray"})), []),
        (UpsertFreeze(freeze=_HOLDS["by-name"]), []),  # unchanged: holds as much
        (UpsertFreeze(freeze=_changed("by-name", reason="audit", end=_LATER)), []),  # longer
        (UpsertFreeze(freeze=_changed("by-name", end=_SOONER)), ["by-name"]),  # shorter
        (
            UpsertFreeze(freeze=_changed("by-name", selector=FreezeSelector(racks=["r2"]))),
            ["by-name"],
        ),
        (DeleteComponent(id=_Stored.part.id), ["by-name", "by-label"]),
        (DeleteFreeze(name="by-label"), ["by-label"]),
        (DeleteFreeze(name="not-stored"), []),
    ],
)
def test_what_a_command_lifts_from_the_stored_freezes(command: Command, lifted: list[str]) -> None:
    """Changing a freeze, or taking a rack (or its hardware) out of what it holds by name or
    label, lifts it; anything that leaves it holding as much does not."""
    assert [lift.freeze for lift in lifted_freezes(command, _HOLDS, _Stored())] == lifted
