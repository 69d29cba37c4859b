"""The starting-deadline rule, pure: which firings are missed, and what a deadline may be.

docs/spec/SEMANTICS.md "Starting deadline (beyond the reference)": a firing made later
than the deadline after the time it was due is missed; without a deadline, or for a
manual trigger, a firing always goes ahead. A deadline is a Go duration of at least 1m.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rackcron.firing import deadline_lateness, parse_starting_deadline
from rackcron.timing import SpecError

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
    lateness = deadline_lateness(DUE, DUE + late, deadline, manual=manual)
    assert lateness == (late.total_seconds() if missed else None)


def test_lateness_counts_from_the_due_time_however_many_ticks_were_collapsed() -> None:
    """An hourly cron due at 02:00 fired at 05:30: 3.5 h late, not the 30 min since 05:00."""
    at = DUE + timedelta(hours=3, minutes=30)
    assert deadline_lateness(DUE, at, "1h", manual=False) == 12_600.0


def test_a_schedule_without_a_due_time_is_never_missed() -> None:
    assert deadline_lateness(None, DUE, "1m", manual=False) is None
