"""The starting-deadline rule, pure: which firings are missed, and what a deadline may be.

docs/spec/SEMANTICS.md "Starting deadline (beyond the reference)": a firing made later
than the deadline after the time it was due is missed; without a deadline, or for a
manual trigger, a firing always goes ahead. The due time is ``next_run_at``, or, when the
firing collapsed several ticks, the latest of them at or before it. A deadline is a Go
duration of at least 1m.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from rackcron.domain.firing import Lateness, deadline_lateness, parse_starting_deadline
from rackcron.domain.timing import NO_SPREAD, SpecError, SpecType, Spread, jitter_offset, parse_spec

DUE = datetime(2026, 6, 1, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1m", 60.0), ("15m", 900.0), ("1.5h", 5400.0), ("60s", 60.0), ("2h45m", 9900.0)],
    ids=["minimum", "minutes", "fraction", "seconds", "compound"],
)
def test_a_deadline_is_a_go_duration_in_seconds(text: str, seconds: float) -> None:
    assert parse_starting_deadline(text) == seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("59s", "must be a duration of at least 1m, got '59s'"),
        ("0", "must be a duration of at least 1m, got '0'"),
        ("-5m", "must be a duration of at least 1m, got '-5m'"),
        ("15 minutes", 'unknown unit " minutes" in duration "15 minutes"'),
        ("1d", 'unknown unit "d" in duration "1d"'),
        ("", 'invalid duration ""'),
    ],
    ids=["under-a-minute", "zero", "negative", "words", "days", "empty"],
)
def test_a_deadline_under_a_minute_or_not_a_duration_is_refused(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=f"^{message}$"):
        parse_starting_deadline(text)


class Schedule(NamedTuple):
    """What ``deadline_lateness`` reads of a schedule."""

    starting_deadline: str | None
    spec_type: SpecType = SpecType.CRON
    spec: str = "0 2 * * *"  # daily: no tick collapsed in the cases below
    timezone: str = "UTC"
    name: str = "nightly"
    spread: Spread = NO_SPREAD


@pytest.mark.parametrize(
    ("late", "deadline", "manual", "missed"),
    [
        (timedelta(minutes=20), "15m", False, True),
        (timedelta(minutes=15), "15m", False, False),  # not *later* than the deadline
        (timedelta(minutes=15, microseconds=1), "15m", False, True),
        (timedelta(minutes=10), "15m", False, False),
        (timedelta(hours=11, minutes=34), None, False, False),  # no deadline: always fires
        (timedelta(hours=11, minutes=34), "15m", True, False),  # a manual trigger ignores it
        (timedelta(0), "1m", False, False),
    ],
    ids=["late", "exactly-at", "just-past", "within", "no-deadline", "manual", "on-time"],
)
def test_a_firing_later_than_its_deadline_is_missed(late, deadline, manual, missed) -> None:
    judged = deadline_lateness(DUE, DUE + late, Schedule(deadline), manual=manual)
    assert judged == Lateness(DUE, late.total_seconds() if missed else None)


H = timedelta(hours=1)


@pytest.mark.parametrize(
    ("schedule", "due", "at", "judged"),
    [
        # The case: hourly, a 1h deadline, an outage collapsed 02:00, 03:00 and
        # 04:00 into a firing at 04:30. The latest tick, 04:00, is 30 min back: it fires
        # (counted from 02:00, the oldest, it was 2.5 h late and missed).
        (Schedule("1h", SpecType.INTERVAL, "1h"), DUE, DUE + 2.5 * H, Lateness(DUE + 2 * H, None)),
        (Schedule("1h", SpecType.CRON, "0 * * * *"), DUE, DUE + 2.5 * H,
         Lateness(DUE + 2 * H, None)),
        # Past the deadline of even the latest tick: missed, as late as that tick.
        (Schedule("15m", SpecType.INTERVAL, "1h"), DUE, DUE + 2.5 * H,
         Lateness(DUE + 2 * H, 1800.0)),
        (Schedule("15m", SpecType.CRON, "0 * * * *"), DUE, DUE + 2.5 * H,
         Lateness(DUE + 2 * H, 1800.0)),
        # A nightly cron three nights late, fired at 05:30: 3.5 h past that night's 02:00.
        (Schedule("1h"), DUE, DUE + timedelta(days=3, hours=3.5),
         Lateness(DUE + timedelta(days=3), 12_600.0)),
        # America/New_York springs forward on 2026-03-08: that night's 02:30 is 03:00 EDT
        # (07:00Z), so a firing at 03:45 EDT is 45 min late (75 min by the wall clock).
        (Schedule("1h", SpecType.CRON, "30 2 * * *", "America/New_York"),
         datetime(2026, 3, 6, 7, 30, tzinfo=UTC), datetime(2026, 3, 8, 7, 45, tzinfo=UTC),
         Lateness(datetime(2026, 3, 8, 7, tzinfo=UTC), None)),
        # It falls back on 2026-11-01: a half-hourly job's last tick is the second 01:30
        # (EST, 06:30Z), so a firing at 01:40 EST is 10 min late...
        (Schedule("15m", SpecType.CRON, "*/30 * * * *", "America/New_York"),
         datetime(2026, 11, 1, 4, tzinfo=UTC), datetime(2026, 11, 1, 6, 40, tzinfo=UTC),
         Lateness(datetime(2026, 11, 1, 6, 30, tzinfo=UTC), None)),
        # ...while a fixed 01:30 job fires in the first 01:30 only (EDT, 05:30Z): 70 min.
        (Schedule("15m", SpecType.CRON, "30 1 * * *", "America/New_York"),
         datetime(2026, 10, 31, 5, 30, tzinfo=UTC), datetime(2026, 11, 1, 6, 40, tzinfo=UTC),
         Lateness(datetime(2026, 11, 1, 5, 30, tzinfo=UTC), 4200.0)),
        # A one-time schedule has one tick: its instant.
        (Schedule("1h", SpecType.ONE_TIME, "2026-06-01T02:00:00Z"), DUE, DUE + 2.5 * H,
         Lateness(DUE, 9000.0)),
        # Without a deadline nothing is judged: the due time stays next_run_at.
        (Schedule(None, SpecType.INTERVAL, "1h"), DUE, DUE + 2.5 * H, Lateness(DUE, None)),
    ],
    ids=[
        "issue-interval", "issue-cron", "interval-missed", "cron-missed", "nights",
        "spring-forward", "fall-back-fine", "fall-back-fixed", "one-time", "no-deadline",
    ],
)  # fmt: skip
def test_collapsed_ticks_are_judged_from_the_latest(schedule, due, at, judged) -> None:
    assert deadline_lateness(due, at, schedule, manual=False) == judged


def test_a_manual_trigger_is_judged_from_next_run_at_and_never_missed() -> None:
    hourly = Schedule("15m", SpecType.CRON, "0 * * * *")
    assert deadline_lateness(DUE, DUE + 2.5 * H, hourly, manual=True) == Lateness(DUE, None)


def test_a_schedule_without_a_due_time_is_never_missed() -> None:
    assert deadline_lateness(None, DUE, Schedule("1m"), manual=False) == Lateness(None, None)


def test_an_unreadable_stored_spec_is_an_error() -> None:
    with pytest.raises(SpecError):
        deadline_lateness(DUE, DUE + H, Schedule("1m", timezone="Mars/Olympus"), manual=False)


def test_a_jittered_schedule_is_judged_from_its_jittered_times() -> None:
    """docs/spec/SEMANTICS.md "Spreading fire times": lateness counts from the jittered time."""
    spread = Spread(None, timedelta(minutes=30))
    hourly = Schedule("15m", SpecType.CRON, "0 * * * *", spread=spread)
    spec = parse_spec(SpecType.CRON, "0 * * * *")
    nominals = [DUE + k * H for k in range(4)]
    fires = [n + jitter_offset(spec, spread, hourly.name, n) for n in nominals]
    assert len(set(f - n for f, n in zip(fires, nominals, strict=True))) > 1  # really jittered
    on_time = fires[0] + timedelta(minutes=14)
    assert deadline_lateness(fires[0], on_time, hourly, manual=False) == Lateness(fires[0], None)
    three_hours_late = fires[3] + timedelta(minutes=20)
    assert deadline_lateness(fires[0], three_hours_late, hourly, manual=False) == (
        Lateness(fires[3], 1200.0)
    )
