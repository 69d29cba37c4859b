"""The cron dialect, day matching, DST behaviour, and why croniter is not our base."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from croniter import croniter

from rackcron.domain.timing import Cron, SpecError, describe_local, next_after, parse_spec


def cron(expression: str, zone: str = "UTC") -> Cron:
    spec = parse_spec("cron", expression, zone)
    assert isinstance(spec, Cron)
    return spec


def fires(expression: str, zone: str, after: str, count: int = 3) -> list[str]:
    """Return the next ``count`` fire times as local RFC 3339 strings (offset pins the instant)."""
    spec = cron(expression, zone)
    moment: datetime | None = datetime.fromisoformat(after)
    out = []
    for _ in range(count):
        moment = next_after(spec, moment)
        assert moment is not None and moment.tzinfo is UTC
        out.append(describe_local(spec, moment).isoformat())
    return out


# --- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "field", "values"),
    [
        ("*/15 * * * *", "minutes", (0, 15, 30, 45)),
        ("5-20/5 * * * *", "minutes", (5, 10, 15, 20)),
        ("50/4 * * * *", "minutes", (50, 54, 58)),
        ("1,2,3,2 * * * *", "minutes", (1, 2, 3)),
        ("* 22-23,0-1 * * *", "hours", (0, 1, 22, 23)),
        ("* * * jan,MAR,Dec *", "months", (1, 3, 12)),
        ("* * * feb-apr *", "months", (2, 3, 4)),
        ("* * * */5 *", "months", (1, 6, 11)),
        ("* * * * mon-fri", "days_of_week", frozenset({1, 2, 3, 4, 5})),
        ("* * * * 7", "days_of_week", frozenset({0})),
        ("* * * * 5-7", "days_of_week", frozenset({5, 6, 0})),
        ("* * * * Sun,sat", "days_of_week", frozenset({0, 6})),
        ("* * * * 1/2", "days_of_week", frozenset({1, 3, 5})),
        ("* * * * 7/3", "days_of_week", frozenset({0})),
        ("* * * * */2", "days_of_week", frozenset({0, 2, 4, 6})),
        ("* * 1-31/10 * *", "days_of_month", frozenset({1, 11, 21, 31})),
        ("* * ? * 1", "days_of_month", frozenset(range(1, 32))),
        ("* * 3-3/2 * *", "days_of_month", frozenset({3})),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_field_values(expression: str, field: str, values: object) -> None:
    assert getattr(cron(expression), field) == values


@pytest.mark.parametrize(
    ("descriptor", "equivalent"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        ("@DAILY", "0 0 * * *"),
    ],
)
def test_descriptors(descriptor: str, equivalent: str) -> None:
    got, want = cron(descriptor), cron(equivalent)
    assert (got.minutes, got.hours, got.days_of_month, got.months, got.days_of_week) == (
        want.minutes,
        want.hours,
        want.days_of_month,
        want.months,
        want.days_of_week,
    )
    assert (got.day_or, got.fixed) == (want.day_or, want.fixed)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "cron expression is empty"),
        ("   ", "cron expression is empty"),
        ("* * * *", 'cron expression "\\* \\* \\* \\*" must have 5 fields .* got 4'),
        ("0 * * * * *", "must have 5 fields .* got 6"),
        ("61 * * * *", 'minute field "61": value 61 out of range 0-59'),
        ("* 24 * * *", 'hour field "24": value 24 out of range 0-23'),
        ("* * 0 * *", 'day-of-month field "0": value 0 out of range 1-31'),
        ("* * 32 * *", 'day-of-month field "32": value 32 out of range 1-31'),
        ("* * * 13 *", 'month field "13": value 13 out of range 1-12'),
        ("* * * * 8", 'day-of-week field "8": value 8 out of range 0-7'),
        ("* * * foo *", 'month field "foo": "foo" is not a number or a month name'),
        ("* * * * sunday", '"sunday" is not a number or a day name'),
        ("* * * mon *", 'month field "mon": "mon" is not a number or a month name'),
        ("x * * * *", 'minute field "x": "x" is not a number'),
        ("-1 * * * *", 'minute field "-1": "" is not a number'),
        ("5-1 * * * *", 'minute field "5-1": range "5-1" runs backwards'),
        ("* * * * sat-sun", 'range "sat-sun" runs backwards'),
        ("*/0 * * * *", 'minute field "\\*/0": step must be at least 1'),
        ("*/x * * * *", 'step "x" is not a number'),
        ("1-5/2/3 * * * *", 'step "2/3" is not a number'),
        ("1,,2 * * * *", "empty list item"),
        ("? * * * *", 'minute field "\\?": "\\?" is not a number'),
        ("L * * * *", 'minute field "L"'),
        ("* * L * *", 'day-of-month field "L"'),
        ("* * * * 5#3", 'day-of-week field "5#3"'),
        ("0 0 30 2 *", 'cron expression "0 0 30 2 \\*" never matches'),
        ("0 0 31 4,6,9,11 *", "never matches"),
        ("0 0 31 2 */2", "never matches"),
        ("@fortnightly", 'unknown descriptor "@fortnightly"'),
        ("@daily 5", 'unknown descriptor "@daily 5"'),
        ("@every", "@every needs a duration"),
        ("@every 0s", '@every duration must be positive, got "0s"'),
        ("@every -1m", '@every duration must be positive, got "-1m"'),
        ("@every 1d", 'unknown unit "d" in duration "1d"'),
        ("CRON_TZ=Europe/Paris", '"CRON_TZ=Europe/Paris" must be followed by a space'),
        ("CRON_TZ= 0 0 * * *", '"CRON_TZ=" names no timezone'),
        ("TZ= 0 0 * * *", '"TZ=" names no timezone'),
        ("CRON_TZ=Mars/Olympus 0 0 * * *", 'unknown timezone "Mars/Olympus"'),
    ],
    ids=repr,
)
def test_rejects(expression: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec("cron", expression, "UTC")


@pytest.mark.parametrize(
    "expression",
    ["0 0 29 2 *", "0 0 30 1,2 *", "0 0 30 2 1", "0 0 31 2 1", "0 0 31 * *"],
    ids=["feb-29", "jan-or-feb-30", "or-with-weekday", "31-feb-or-monday", "31st"],
)
def test_accepts_rare_but_possible(expression: str) -> None:
    assert next_after(cron(expression), datetime(2026, 1, 1, tzinfo=UTC)) is not None


def test_feb_29_waits_for_a_leap_year() -> None:
    assert fires("0 12 29 2 *", "UTC", "2026-01-01T00:00:00+00:00", 2) == [
        "2028-02-29T12:00:00+00:00",
        "2032-02-29T12:00:00+00:00",
    ]


@pytest.mark.parametrize(
    ("expression", "fixed"),
    [
        ("30 2 * * *", True),
        ("0,30 1-3 * * *", True),
        ("0-59 2 * * *", True),
        ("5/10 2 * * *", True),
        ("* 2 * * *", False),
        ("*/5 2 * * *", False),
        ("30 * * * *", False),
        ("30 */2 * * *", False),
        ("@daily", True),
        ("@hourly", False),
    ],
)
def test_fixed_classification_follows_the_field_text(expression: str, fixed: bool) -> None:
    assert cron(expression).fixed is fixed


# --- day of month / day of week ----------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # both restricted: either may match (1st of the month OR a Friday)
        (
            "0 0 1 * 5",
            ["2026-03-01T00:00:00+00:00", "2026-03-06T00:00:00+00:00", "2026-03-13T00:00:00+00:00"],
        ),
        # day of week is *: only the day of month counts
        (
            "0 0 1 * *",
            ["2026-03-01T00:00:00+00:00", "2026-04-01T00:00:00+00:00", "2026-05-01T00:00:00+00:00"],
        ),
        # */2 starts with *: unrestricted, so AND: odd days that are Mondays
        (
            "0 0 */2 * 1",
            ["2026-03-09T00:00:00+00:00", "2026-03-23T00:00:00+00:00", "2026-04-13T00:00:00+00:00"],
        ),
        # ? is unrestricted too
        (
            "0 0 ? * 1",
            ["2026-03-02T00:00:00+00:00", "2026-03-09T00:00:00+00:00", "2026-03-16T00:00:00+00:00"],
        ),
        # a restricted list that covers every day still makes it OR
        (
            "0 0 1-31 * 1",
            ["2026-03-01T00:00:00+00:00", "2026-03-02T00:00:00+00:00", "2026-03-03T00:00:00+00:00"],
        ),
        # "Friday the 13th" cannot be written: both restricted means the 13th OR Fridays
        (
            "0 0 13 * fri",
            ["2026-03-06T00:00:00+00:00", "2026-03-13T00:00:00+00:00", "2026-03-20T00:00:00+00:00"],
        ),
    ],
    ids=["or", "dom-only", "star-step-is-unrestricted", "question-mark", "full-list-or", "fri-13"],
)
def test_day_of_month_and_day_of_week(expression: str, expected: list[str]) -> None:
    assert fires(expression, "UTC", "2026-02-28T12:00:00+00:00") == expected


# --- prefixes and @every -----------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["CRON_TZ", "TZ"])
def test_timezone_prefix_overrides_the_argument(prefix: str) -> None:
    spec = cron(f"{prefix}=Asia/Tokyo  0 9 * * *", "America/New_York")
    assert spec.timezone.key == "Asia/Tokyo"
    assert spec.expression == f"{prefix}=Asia/Tokyo  0 9 * * *"
    assert next_after(spec, datetime(2026, 2, 28, 12, tzinfo=UTC)) == datetime(
        2026, 3, 1, 0, 0, tzinfo=UTC
    )


def test_prefix_with_descriptor() -> None:
    spec = cron("CRON_TZ=Europe/London @daily")
    assert next_after(spec, datetime(2026, 7, 1, 12, tzinfo=UTC)) == datetime(
        2026, 7, 1, 23, 0, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [
        ("@every 1h30m", 5400),
        ("@every 1.9s", 1),
        ("@every 500ms", 1),
        ("@every 1ns", 1),
        ("@every 90s", 90),
        ("@EVERY 2m", 120),
    ],
)
def test_every(expression: str, seconds: int) -> None:
    spec = cron(expression)
    assert spec.every == seconds
    after = datetime(2026, 3, 8, 6, 59, 59, 750_000, tzinfo=UTC)
    # robfig/cron: whole seconds after t, with t's fraction dropped; DST plays no part
    expected = datetime(2026, 3, 8, 6, 59, 59, tzinfo=UTC).timestamp() + seconds
    assert next_after(spec, after).timestamp() == expected  # type: ignore[union-attr]


# --- DST (docs/spec/SEMANTICS.md "Spec types": Debian cron's rule) ----------------------

NEW_YORK, LORD_HOWE, LONDON, TOKYO = (
    "America/New_York",
    "Australia/Lord_Howe",
    "Europe/London",
    "Asia/Tokyo",
)


@pytest.mark.parametrize(
    ("expression", "zone", "after", "expected"),
    [
        pytest.param(
            "30 2 * * *",
            NEW_YORK,
            "2026-03-07T12:00:00+00:00",
            ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"],
            id="ny-gap-fixed-fires-at-gap-end",
        ),
        pytest.param(
            "0,30 2 * * *",
            NEW_YORK,
            "2026-03-07T12:00:00+00:00",
            ["2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00", "2026-03-09T02:30:00-04:00"],
            id="ny-gap-two-fixed-slots-fire-once",
        ),
        pytest.param(
            "30 1 * * *",
            NEW_YORK,
            "2026-10-31T12:00:00+00:00",
            ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00", "2026-11-03T01:30:00-05:00"],
            id="ny-fold-fixed-fires-once-first-occurrence",
        ),
        pytest.param(
            "30 1 * * *",
            NEW_YORK,
            "2026-11-01T06:10:00+00:00",
            ["2026-11-02T01:30:00-05:00", "2026-11-03T01:30:00-05:00", "2026-11-04T01:30:00-05:00"],
            id="ny-fold-fixed-not-again-in-second-pass",
        ),
        pytest.param(
            "*/30 * * * *",
            NEW_YORK,
            "2026-11-01T04:45:00+00:00",
            ["2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00"],
            id="ny-fold-fine-fires-in-both-passes",
        ),
        pytest.param(
            "*/30 * * * *",
            NEW_YORK,
            "2026-03-08T06:15:00+00:00",
            ["2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"],
            id="ny-gap-fine-drops-missing-slots",
        ),
        pytest.param(
            "*/30 1-2 * * *",
            NEW_YORK,
            "2026-03-08T05:00:00+00:00",
            ["2026-03-08T01:00:00-05:00", "2026-03-08T01:30:00-05:00", "2026-03-09T01:00:00-04:00"],
            id="ny-gap-fine-hour-range-not-collapsed",
        ),
        pytest.param(
            "0 * * * *",
            NEW_YORK,
            "2026-11-01T04:30:00+00:00",
            ["2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"],
            id="ny-fold-hourly-fires-every-real-hour",
        ),
        pytest.param(
            "15 2 * * *",
            LORD_HOWE,
            "2026-10-03T00:00:00+00:00",
            ["2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00", "2026-10-06T02:15:00+11:00"],
            id="lord-howe-half-hour-gap-fixed",
        ),
        pytest.param(
            "*/20 2 * * *",
            LORD_HOWE,
            "2026-10-03T12:00:00+00:00",
            ["2026-10-04T02:40:00+11:00", "2026-10-05T02:00:00+11:00", "2026-10-05T02:20:00+11:00"],
            id="lord-howe-half-hour-gap-fine",
        ),
        pytest.param(
            "*/15 3 * * *",
            LORD_HOWE,
            "2026-10-03T12:00:00+00:00",
            ["2026-10-04T03:00:00+11:00", "2026-10-04T03:15:00+11:00", "2026-10-04T03:30:00+11:00"],
            id="lord-howe-hour-after-gap-complete",
        ),
        pytest.param(
            "45 1 * * *",
            LORD_HOWE,
            "2026-04-04T00:00:00+00:00",
            ["2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30", "2026-04-07T01:45:00+10:30"],
            id="lord-howe-half-hour-fold-fixed",
        ),
        pytest.param(
            "*/15 1 * * *",
            LORD_HOWE,
            "2026-04-04T14:20:00+00:00",
            ["2026-04-05T01:30:00+11:00", "2026-04-05T01:45:00+11:00", "2026-04-05T01:30:00+10:30"],
            id="lord-howe-half-hour-fold-fine",
        ),
        pytest.param(
            "30 1 * * *",
            LONDON,
            "2026-03-28T12:00:00+00:00",
            ["2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00", "2026-03-31T01:30:00+01:00"],
            id="london-gap-fixed",
        ),
        pytest.param(
            "30 1 * * *",
            LONDON,
            "2026-10-24T12:00:00+00:00",
            ["2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00+00:00", "2026-10-27T01:30:00+00:00"],
            id="london-fold-fixed",
        ),
        pytest.param(
            "*/30 1 * * *",
            LONDON,
            "2026-10-25T00:10:00+00:00",
            ["2026-10-25T01:30:00+01:00", "2026-10-25T01:00:00+00:00", "2026-10-25T01:30:00+00:00"],
            id="london-fold-fine",
        ),
        pytest.param(
            "30 2 * * *",
            TOKYO,
            "2026-03-07T12:00:00+00:00",
            ["2026-03-08T02:30:00+09:00", "2026-03-09T02:30:00+09:00", "2026-03-10T02:30:00+09:00"],
            id="tokyo-no-dst",
        ),
        pytest.param(
            "0 9 * * mon-fri",
            TOKYO,
            "2026-03-06T01:00:00+00:00",
            ["2026-03-09T09:00:00+09:00", "2026-03-10T09:00:00+09:00", "2026-03-11T09:00:00+09:00"],
            id="tokyo-weekdays",
        ),
    ],
)
def test_dst(expression: str, zone: str, after: str, expected: list[str]) -> None:
    assert fires(expression, zone, after) == expected


def test_fine_job_in_gap_hour_skips_the_day() -> None:
    # Every minute of 02:xx, which does not exist on 2026-03-08 in New York.
    got = fires("* 2 * * *", NEW_YORK, "2026-03-08T06:00:00+00:00", 2)
    assert got == ["2026-03-09T02:00:00-04:00", "2026-03-09T02:01:00-04:00"]


def test_non_utc_and_fractional_inputs() -> None:
    spec = cron("0 12 * * *")
    after = datetime.fromisoformat("2026-03-08T13:00:00.999999+01:00")  # 12:00:00.999999Z
    assert next_after(spec, after) == datetime(2026, 3, 9, 12, tzinfo=UTC)


def test_naive_datetime_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        next_after(cron("* * * * *"), datetime(2026, 1, 1))


def test_far_future_overflows_cleanly() -> None:
    with pytest.raises(OverflowError):
        next_after(cron("0 0 29 2 *"), datetime(9999, 3, 1, tzinfo=UTC))


# --- why not croniter --------------------------------------------------------------------


def test_croniter_defects_we_avoid() -> None:
    """croniter (the obvious base) breaks the rules of docs/spec/SEMANTICS.md "Spec types" in
    three ways."""
    ny = parse_spec("cron", "30 1 * * *", NEW_YORK).timezone  # type: ignore[union-attr]
    start = datetime(2026, 10, 31, 12, tzinfo=UTC)

    # 1. A fixed-time job fires twice in the repeated hour (01:30 EDT and 01:30 EST).
    theirs = croniter("30 1 * * *", start.astimezone(ny))
    twice = [theirs.get_next(datetime).astimezone(UTC) for _ in range(2)]
    assert twice == [
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC),
        datetime(2026, 11, 1, 6, 30, tzinfo=UTC),
    ]
    assert fires("30 1 * * *", NEW_YORK, start.isoformat(), 2)[1] == "2026-11-02T01:30:00-05:00"

    # 2. Gap slots of a finer job collapse into a 03:00 run that the hour field forbids.
    spring = datetime(2026, 3, 8, 6, 30, tzinfo=UTC)
    theirs = croniter("*/30 1-2 * * *", spring.astimezone(ny))
    assert theirs.get_next(datetime).astimezone(UTC) == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)
    assert fires("*/30 1-2 * * *", NEW_YORK, spring.isoformat(), 1) == ["2026-03-09T01:00:00-04:00"]

    # 3. `*/2` in day-of-month counts as restricted, turning AND into OR (a Tuesday fires).
    theirs = croniter("0 0 */2 * 1", datetime(2026, 3, 2, 12, tzinfo=UTC))
    assert theirs.get_next(datetime).strftime("%a %d") == "Tue 03"
    assert fires("0 0 */2 * 1", "UTC", "2026-03-02T12:00:00+00:00", 1) == [
        "2026-03-09T00:00:00+00:00"
    ]
