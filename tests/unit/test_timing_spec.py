"""parse_spec, time zones, one-time timestamps and the evaluation API for each spec kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rackcron.domain.timing as timing
from rackcron.domain.timing import (
    Cron,
    Interval,
    OneTime,
    SpecError,
    SpecType,
    describe_local,
    first_run,
    latest_due,
    next_after,
    parse_rfc3339,
    parse_spec,
    parse_timezone,
)

NOW = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)


def test_exported_members() -> None:
    assert sorted(timing.__all__) == [
        "Cron",
        "Interval",
        "NO_SPREAD",
        "OneTime",
        "Spec",
        "SpecError",
        "SpecType",
        "Spread",
        "SpreadError",
        "describe_local",
        "fire_after",
        "fire_from",
        "first_fire",
        "first_run",
        "format_duration",
        "format_rfc3339",
        "jitter_offset",
        "latest_due",
        "latest_fire",
        "next_after",
        "nominal_after",
        "parse_duration",
        "parse_rfc3339",
        "parse_spec",
        "parse_spread",
        "parse_timezone",
        "stored_spread",
    ]
    assert issubclass(SpecError, ValueError)
    assert [kind.value for kind in SpecType] == ["interval", "cron", "one-time"]


# --- time zones --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("", "UTC"),
        ("UTC", "UTC"),
        ("America/New_York", "America/New_York"),
        ("Etc/GMT+5", "Etc/GMT+5"),
    ],
    ids=["empty-is-utc", "utc", "new-york", "etc"],
)
def test_parse_timezone(name: str, key: str) -> None:
    assert parse_timezone(name).key == key


@pytest.mark.parametrize(
    "name",
    [
        "Mars/Olympus",
        "utc",
        " UTC",
        "America",
        "../etc/passwd",
        "/etc/localtime",
        "a\x00b",
        "localtime",
        "posixrules",
        "right/UTC",
        "posix/UTC",
    ],
    ids=repr,
)
def test_parse_timezone_rejects(name: str) -> None:
    with pytest.raises(SpecError, match=r"^unknown timezone "):
        parse_timezone(name)


@pytest.mark.parametrize(
    ("spec_type", "spec"),
    [("interval", "1h"), ("cron", "* * * * *"), ("one-time", "2026-06-01T04:00:00Z")],
)
def test_timezone_is_validated_for_every_type(spec_type: str, spec: str) -> None:
    with pytest.raises(SpecError, match='unknown timezone "Nowhere/Land"'):
        parse_spec(spec_type, spec, "Nowhere/Land")
    parse_spec(spec_type, spec, "")  # empty means UTC


def test_unknown_spec_type() -> None:
    with pytest.raises(SpecError, match='unknown spec type "ONE_TIME"'):
        parse_spec("ONE_TIME", "2026-06-01T04:00:00Z")


def test_spec_type_enum_and_string_are_equivalent() -> None:
    assert (
        parse_spec(SpecType.INTERVAL, "30m")
        == parse_spec("interval", "30m")
        == Interval(30 * 60 * 10**9)
    )


# --- interval ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0", 'interval must be positive, got "0"'),
        ("0s", 'interval must be positive, got "0s"'),
        ("-1h", 'interval must be positive, got "-1h"'),
        ("1d", 'unknown unit "d" in duration "1d"'),
        ("10", 'missing unit in duration "10"'),
        ("", 'invalid duration ""'),
        ("every hour", 'invalid duration "every hour"'),
    ],
    ids=repr,
)
def test_interval_rejects(spec: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec("interval", spec)


def test_interval_first_run_and_next_after() -> None:
    spec = parse_spec("interval", "1h30m", "America/New_York")
    assert first_run(spec, NOW) == NOW + timedelta(minutes=90)
    # DST plays no part: 24h after 2026-03-07T12:00Z is exactly one UTC day later.
    day = parse_spec("interval", "24h")
    assert next_after(day, NOW) == datetime(2026, 3, 8, 12, 0, tzinfo=UTC)


def test_interval_sub_microsecond_rounds_up() -> None:
    assert next_after(parse_spec("interval", "1ns"), NOW) == NOW + timedelta(microseconds=1)


def test_interval_output_is_utc_for_non_utc_input() -> None:
    paris = timezone(timedelta(hours=1))
    got = first_run(parse_spec("interval", "1s"), datetime(2026, 3, 7, 13, 0, tzinfo=paris))
    assert got == datetime(2026, 3, 7, 12, 0, 1, tzinfo=UTC)
    assert got.tzinfo is UTC


# --- one-time ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("2026-06-01T04:00:00Z", datetime(2026, 6, 1, 4, tzinfo=UTC)),
        ("2026-06-01t04:00:00z", datetime(2026, 6, 1, 4, tzinfo=UTC)),
        ("2026-06-01T06:00:00+02:00", datetime(2026, 6, 1, 4, tzinfo=UTC)),
        ("2026-05-31T23:30:00-04:30", datetime(2026, 6, 1, 4, tzinfo=UTC)),
        ("2026-06-01T04:00:00-00:00", datetime(2026, 6, 1, 4, tzinfo=UTC)),
        ("2026-06-01T04:00:00.5Z", datetime(2026, 6, 1, 4, 0, 0, 500_000, tzinfo=UTC)),
        ("2026-06-01T04:00:00.123456789Z", datetime(2026, 6, 1, 4, 0, 0, 123_456, tzinfo=UTC)),
        ("2028-02-29T00:00:00Z", datetime(2028, 2, 29, tzinfo=UTC)),
        ("2026-01-01T00:30:00+01:00", datetime(2025, 12, 31, 23, 30, tzinfo=UTC)),
    ],
    ids=[
        "z",
        "lowercase",
        "plus",
        "minus-half-hour",
        "minus-zero",
        "fraction",
        "nanoseconds",
        "leap-day",
        "previous-year",
    ],
)
def test_one_time_accepts_rfc3339(spec: str, expected: datetime) -> None:
    parsed = parse_spec("one-time", spec)
    assert parsed == OneTime(expected)
    assert isinstance(parsed, OneTime) and parsed.at.tzinfo is UTC


@pytest.mark.parametrize(
    "spec",
    [
        "2026-06-01T04:00:00",
        "2026-06-01 04:00:00Z",
        "2026-06-01",
        "2026-06-01T04:00Z",
        "2026-06-01T04:00:00+0200",
        "2026-06-01T04:00:00+02",
        "2026-06-01T04:00:00 Z",
        "20260601T040000Z",
        "2026-6-1T04:00:00Z",
        "2026-06-01T04:00:00.Z",
        "2026-06-01T04:00:00Z ",
        "２０２６-06-01T04:00:00Z",
        "tomorrow",
        "",
    ],
    ids=repr,
)
def test_one_time_requires_rfc3339_with_offset(spec: str) -> None:
    message = "must be an RFC 3339 timestamp with an explicit offset \\(Z or ±hh:mm\\)"
    with pytest.raises(SpecError, match=f'^one-time spec ".*" {message}$'):
        parse_spec("one-time", spec)


@pytest.mark.parametrize(
    "spec",
    [
        "2026-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-06-01T24:00:00Z",
        "2026-06-01T04:60:00Z",
        "2026-06-01T04:00:60Z",
        "2026-06-01T04:00:00+24:00",
        "2026-06-01T04:00:00+02:60",
        "0000-01-01T00:00:00Z",
        "0001-01-01T00:00:00+01:00",
    ],
    ids=repr,
)
def test_one_time_rejects_impossible_instants(spec: str) -> None:
    with pytest.raises(SpecError, match=r'^one-time spec ".*" is not a valid date and time \('):
        parse_spec("one-time", spec)


def test_one_time_evaluation() -> None:
    spec = parse_spec("one-time", "2026-06-01T06:00:00+02:00", "Asia/Tokyo")
    at = datetime(2026, 6, 1, 4, tzinfo=UTC)
    assert first_run(spec, NOW) == at
    past = NOW + timedelta(days=365)
    assert first_run(spec, past) == at  # a past instant is still returned: due at the next poll
    assert next_after(spec, at) is None  # consumed


def test_one_time_normalises_aware_input_and_rejects_naive() -> None:
    assert OneTime(datetime(2026, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))).at == datetime(
        2026, 1, 1, tzinfo=UTC
    )
    with pytest.raises(ValueError, match="timezone-aware"):
        OneTime(datetime(2026, 1, 1))


def test_parse_rfc3339_names_no_field() -> None:
    assert parse_rfc3339("2026-03-07T12:00:00Z") == NOW
    with pytest.raises(SpecError, match=r'^"12:00" must be an RFC 3339 timestamp'):
        parse_rfc3339("12:00")


# --- cron through parse_spec -------------------------------------------------------------


def test_cron_first_run_is_strictly_after_now() -> None:
    spec = parse_spec("cron", "0 12 * * *")
    assert first_run(spec, NOW) == datetime(2026, 3, 8, 12, tzinfo=UTC)
    assert next_after(spec, NOW - timedelta(microseconds=1)) == NOW


def test_cron_uses_the_timezone_argument() -> None:
    spec = parse_spec("cron", "0 9 * * *", "Asia/Tokyo")
    assert isinstance(spec, Cron) and spec.timezone.key == "Asia/Tokyo"
    assert first_run(spec, NOW) == datetime(2026, 3, 8, 0, tzinfo=UTC)


def test_describe_local() -> None:
    moment = datetime(2026, 3, 8, 7, tzinfo=UTC)
    cron = parse_spec("cron", "30 2 * * *", "America/New_York")
    local = describe_local(cron, moment)
    assert (local.isoformat(), local.tzname()) == ("2026-03-08T03:00:00-04:00", "EDT")
    interval = parse_spec("interval", "1h", "America/New_York")
    assert describe_local(interval, moment).isoformat() == "2026-03-08T07:00:00+00:00"
    with pytest.raises(ValueError, match="timezone-aware"):
        describe_local(cron, datetime(2026, 3, 8, 7))


# --- latest_due: the last tick a late firing collapsed -----------------------------------------

H = timedelta(hours=1)


@pytest.mark.parametrize(
    ("kind", "spec", "zone", "due", "now", "latest"),
    [
        ("interval", "1h", "", NOW, NOW + 3.5 * H, NOW + 3 * H),
        ("interval", "1h", "", NOW, NOW + 3 * H, NOW + 3 * H),  # a tick exactly at now
        ("interval", "1h", "", NOW, NOW + 0.5 * H, NOW),  # nothing collapsed
        ("interval", "1h", "", NOW, NOW - H, NOW),  # now before due: due
        ("cron", "@every 90s", "", NOW + timedelta(microseconds=5), NOW + timedelta(minutes=5),
         NOW + timedelta(minutes=4, seconds=30)),
        ("cron", "0 * * * *", "", NOW, NOW + 3.5 * H, NOW + 3 * H),
        ("cron", "0 2 * * *", "", datetime(2026, 3, 1, 2, tzinfo=UTC),
         datetime(2027, 3, 9, 10, tzinfo=UTC), datetime(2027, 3, 9, 2, tzinfo=UTC)),  # a year
        # America/New_York springs forward on 2026-03-08: 02:30 is 03:00 EDT (07:00Z).
        ("cron", "30 2 * * *", "America/New_York", datetime(2026, 3, 6, 7, 30, tzinfo=UTC),
         datetime(2026, 3, 8, 7, 45, tzinfo=UTC), datetime(2026, 3, 8, 7, tzinfo=UTC)),
        # ...and falls back on 2026-11-01: a finer job fires in both 01:30s (05:30Z, 06:30Z),
        ("cron", "*/30 * * * *", "America/New_York", datetime(2026, 11, 1, 4, tzinfo=UTC),
         datetime(2026, 11, 1, 6, 40, tzinfo=UTC), datetime(2026, 11, 1, 6, 30, tzinfo=UTC)),
        # a fixed one only in the first.
        ("cron", "30 1 * * *", "America/New_York", datetime(2026, 10, 30, 5, 30, tzinfo=UTC),
         datetime(2026, 11, 1, 6, 40, tzinfo=UTC), datetime(2026, 11, 1, 5, 30, tzinfo=UTC)),
        ("one-time", "2026-03-07T12:00:00Z", "", NOW, NOW + 30 * H, NOW),
    ],
    ids=[
        "interval", "interval-on-a-tick", "interval-on-time", "interval-early", "every",
        "cron-hourly", "cron-a-year-late", "spring-forward", "fall-back-fine",
        "fall-back-fixed", "one-time",
    ],
)  # fmt: skip
def test_latest_due(
    kind: str, spec: str, zone: str, due: datetime, now: datetime, latest: datetime
) -> None:
    assert latest_due(parse_spec(kind, spec, zone), due, now) == latest


LATEST_DUE_SPECS = [
    *("* * * * *", "*/7 * * * *", "0 * * * *", "30 2 * * *", "0,30 1-3 * * *"),
    *("15 9 * * 1-5", "0 0 29 2 *", "*/20 1 * * *", "@every 50m"),
]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    spec=st.sampled_from(LATEST_DUE_SPECS),
    zone=st.sampled_from(["UTC", "America/New_York", "Australia/Lord_Howe"]),
    start=st.datetimes(datetime(2025, 12, 1), datetime(2027, 3, 1), timezones=st.just(UTC)),
    late=st.timedeltas(timedelta(0), timedelta(days=3)),
)
def test_latest_due_is_the_last_tick_of_the_chain(
    spec: str, zone: str, start: datetime, late: timedelta
) -> None:
    """The same answer as walking every tick from ``due`` with ``next_after``."""
    parsed = parse_spec("cron", spec, zone)
    due = next_after(parsed, start)
    assert due is not None
    walked, now = due, due + late
    while (following := next_after(parsed, walked)) is not None and following <= now:
        walked = following
    assert latest_due(parsed, due, now) == walked


@pytest.mark.parametrize("function", [first_run, next_after], ids=["first_run", "next_after"])
@pytest.mark.parametrize("spec", ["interval", "cron", "one-time"])
def test_naive_inputs_are_rejected(function: object, spec: str) -> None:
    parsed = {
        "interval": Interval(1),
        "cron": parse_spec("cron", "* * * * *"),
        "one-time": OneTime(NOW),
    }[spec]
    with pytest.raises(ValueError, match="timezone-aware"):
        function(parsed, datetime(2026, 1, 1))  # type: ignore[operator]


def test_specs_are_frozen_values() -> None:
    spec = parse_spec("cron", "0 0 * * *", "Europe/London")
    assert spec == parse_spec("cron", "0 0 * * *", "Europe/London")
    assert hash(spec) == hash(parse_spec("cron", "0 0 * * *", "Europe/London"))
    with pytest.raises(AttributeError):
        spec.expression = "x"  # type: ignore[misc]
