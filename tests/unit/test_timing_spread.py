"""Spreading fire times: anchors and jitter (docs/spec/SEMANTICS.md "Spreading fire times")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackcron.domain.timing import (
    NO_SPREAD,
    Spread,
    SpreadError,
    fire_after,
    fire_from,
    first_fire,
    first_run,
    jitter_offset,
    latest_due,
    latest_fire,
    next_after,
    nominal_after,
    parse_spec,
    parse_spread,
)

NOW = datetime(2026, 3, 7, 12, 0, 30, tzinfo=UTC)
HOURLY = parse_spec("interval", "1h")
NIGHTLY = parse_spec("cron", "0 2 * * *", "Europe/Berlin")
ANCHOR = "2026-01-01T00:15:00Z"


# --- declaring ----------------------------------------------------------------------------------


def test_an_anchor_and_a_jitter_are_parsed() -> None:
    spread = parse_spread(HOURLY, "2026-01-01T01:15:00+01:00", "10m")
    assert spread == Spread(datetime(2026, 1, 1, 0, 15, tzinfo=UTC), timedelta(minutes=10))
    assert parse_spread(NIGHTLY, None, "1h30m") == Spread(None, timedelta(minutes=90))
    assert parse_spread(HOURLY, None, None) == NO_SPREAD


@pytest.mark.parametrize(
    ("spec", "anchor", "jitter", "field", "message"),
    [
        (NIGHTLY, ANCHOR, None, "anchor", "only an interval schedule has an anchor; this one is cron"),
        (parse_spec("one-time", "2026-05-01T00:00:00Z"), ANCHOR, None, "anchor", "this one is one-time"),
        (HOURLY, "2026-01-01 00:15", None, "anchor", "RFC 3339"),
        (HOURLY, "2026-01-01T00:15:00", None, "anchor", "explicit offset"),
        (parse_spec("one-time", "2026-05-01T00:00:00Z"), None, "5m", "jitter", "takes no jitter"),
        (HOURLY, None, "5m", "jitter", "only with an anchor"),
        (NIGHTLY, None, "500ms", "jitter", 'whole seconds, at least 1s, got "500ms"'),
        (NIGHTLY, None, "1.5s", "jitter", "whole seconds"),
        (NIGHTLY, None, "0", "jitter", "at least 1s"),
        (NIGHTLY, None, "-5m", "jitter", "at least 1s"),
        (NIGHTLY, None, "5 minutes", "jitter", 'in duration "5 minutes"'),
    ],
)  # fmt: skip
def test_a_spread_its_spec_cannot_take_names_its_field(
    spec: object, anchor: str | None, jitter: str | None, field: str, message: str
) -> None:
    with pytest.raises(SpreadError, match=message) as caught:
        parse_spread(spec, anchor, jitter)  # type: ignore[arg-type]
    assert caught.value.field == field


# --- anchors ------------------------------------------------------------------------------------


def test_an_anchored_interval_fires_on_its_grid_not_from_now() -> None:
    spread = parse_spread(HOURLY, ANCHOR, None)
    assert first_run(HOURLY, NOW) == NOW + timedelta(hours=1)  # the reference's rule
    assert first_fire(HOURLY, spread, "s", NOW) == datetime(2026, 3, 7, 12, 15, tzinfo=UTC)
    # strictly after: a moment on the grid moves to the next point
    on_grid = datetime(2026, 3, 7, 12, 15, tzinfo=UTC)
    assert nominal_after(HOURLY, spread, on_grid) == on_grid + timedelta(hours=1)
    # after a late firing, the next time is still on the grid (missed times not replayed)
    late = datetime(2026, 3, 7, 15, 59, tzinfo=UTC)
    assert fire_after(HOURLY, spread, "s", late) == datetime(2026, 3, 7, 16, 15, tzinfo=UTC)


def test_an_anchor_in_the_future_or_far_past_is_the_same_grid() -> None:
    future = parse_spread(HOURLY, "2030-06-01T00:15:00Z", None)
    past = parse_spread(HOURLY, "1990-06-01T08:15:00Z", None)
    want = datetime(2026, 3, 7, 12, 15, tzinfo=UTC)
    assert first_fire(HOURLY, future, "s", NOW) == want == first_fire(HOURLY, past, "s", NOW)


def test_an_anchor_is_an_instant_whose_wall_time_moves_across_dst() -> None:
    """Daily at 02:30 Berlin winter time is 03:30 Berlin summer time: it is an instant."""
    daily = parse_spec("interval", "24h")
    spread = parse_spread(daily, "2026-03-01T02:30:00+01:00", None)
    after_dst = datetime(2026, 3, 30, 0, 0, tzinfo=UTC)  # Berlin moved to +02:00 on 03-29
    fires = first_fire(daily, spread, "s", after_dst)
    assert fires == datetime(2026, 3, 30, 1, 30, tzinfo=UTC)  # 03:30 +02:00


# --- jitter -------------------------------------------------------------------------------------


def test_jitter_is_the_same_for_a_name_and_time_and_differs_between_names() -> None:
    spread = parse_spread(NIGHTLY, None, "30m")
    nominal = first_run(NIGHTLY, NOW)
    offsets = {jitter_offset(NIGHTLY, spread, f"nightly-{i}", nominal) for i in range(50)}
    assert len(offsets) > 40  # spread over the half hour, not one second
    assert all(timedelta(0) <= o < timedelta(minutes=30) for o in offsets)
    assert all(o == timedelta(seconds=o.total_seconds() // 1) for o in offsets)  # whole seconds
    assert jitter_offset(NIGHTLY, spread, "a", nominal) == jitter_offset(
        NIGHTLY, Spread(None, timedelta(minutes=30)), "a", nominal
    )
    # a rename changes it; so does another night
    tomorrow = nominal + timedelta(days=1)
    assert len({jitter_offset(NIGHTLY, spread, "a", n) for n in (nominal, tomorrow)}) == 2


def test_jitter_delays_the_stored_time_and_never_accumulates() -> None:
    spread = parse_spread(NIGHTLY, None, "30m")
    first = first_fire(NIGHTLY, spread, "n", NOW)
    nominal = first_run(NIGHTLY, NOW)
    assert first == nominal + jitter_offset(NIGHTLY, spread, "n", nominal)
    fires, nominals = [first], [nominal]
    for _ in range(40):  # firing at each jittered time finds the next night's nominal time
        nominals.append(next_after(NIGHTLY, nominals[-1]))  # type: ignore[arg-type]
        fires.append(fire_after(NIGHTLY, spread, "n", fires[-1]))  # type: ignore[arg-type]
    assert all(0 <= (f - n).total_seconds() < 1800 for f, n in zip(fires, nominals, strict=True))


def test_armed_within_its_jitter_a_nominal_time_still_fires_unless_it_already_fired() -> None:
    """A cut-over arms the new server after the old one stopped short of a jittered
    firing: that firing is not skipped, nor fired twice by a schedule re-armed after it."""
    quarter = parse_spec("cron", "*/15 * * * *")
    spread = parse_spread(quarter, None, "14m")
    name = next(
        n for n in map(str, range(100))
        if jitter_offset(quarter, spread, n, datetime(2026, 3, 7, 12, 0, tzinfo=UTC))
        > timedelta(minutes=1)
    )  # fmt: skip
    nominal = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)
    jittered = nominal + jitter_offset(quarter, spread, name, nominal)
    assert first_fire(quarter, spread, name, NOW) == jittered  # 12:00:30, before it
    assert first_fire(quarter, spread, name, NOW, fired=jittered - timedelta(hours=1)) == jittered
    after = first_fire(quarter, spread, name, NOW, fired=nominal)  # it fired: the next one
    assert after > nominal + timedelta(minutes=15) - timedelta(seconds=1)
    assert first_fire(quarter, spread, name, jittered) > jittered  # at it: the next


def test_jitter_longer_than_the_gap_is_capped_below_the_next_fire_time() -> None:
    """Temporal's rule: the jitter is capped at the gap to the next nominal time."""
    every_minute = parse_spec("cron", "* * * * *")
    spread = parse_spread(every_minute, None, "1h")
    nominal = first_run(every_minute, NOW)
    offsets = [jitter_offset(every_minute, spread, f"m{i}", nominal) for i in range(200)]
    assert max(offsets) < timedelta(minutes=1) and len(set(offsets)) > 30


def test_an_anchored_interval_with_jitter() -> None:
    spread = parse_spread(HOURLY, ANCHOR, "10m")
    fires = first_fire(HOURLY, spread, "h", NOW)
    grid = datetime(2026, 3, 7, 12, 15, tzinfo=UTC)
    assert grid <= fires < grid + timedelta(minutes=10)
    nxt = fire_after(HOURLY, spread, "h", fires)
    assert nxt is not None and grid + timedelta(hours=1) <= nxt < grid + timedelta(minutes=70)


def test_a_one_time_schedule_fires_at_its_instant() -> None:
    once = parse_spec("one-time", "2026-05-01T00:00:00Z")
    assert first_fire(once, NO_SPREAD, "o", NOW) == datetime(2026, 5, 1, tzinfo=UTC)
    assert fire_after(once, NO_SPREAD, "o", NOW) is None


@settings(max_examples=200, deadline=None)
@given(
    minutes=st.integers(1, 24 * 60),
    jitter=st.integers(1, 48 * 3600),
    at=st.datetimes(datetime(2000, 1, 1), datetime(2090, 1, 1), timezones=st.just(UTC)),
    name=st.text(min_size=1, max_size=20),
)
def test_a_jittered_time_stays_between_its_nominal_time_and_the_next(
    minutes: int, jitter: int, at: datetime, name: str
) -> None:
    spec = parse_spec("interval", f"{minutes}m")
    spread = Spread(datetime(2026, 1, 1, tzinfo=UTC), timedelta(seconds=jitter))
    fires = fire_after(spec, spread, name, at)
    nominal = nominal_after(spec, spread, at)
    assert fires is not None and nominal is not None and at < nominal <= fires
    assert fires < nominal + spec.delta  # type: ignore[union-attr]
    assert fire_after(spec, spread, name, fires) == (
        nominal + spec.delta + jitter_offset(spec, spread, name, nominal + spec.delta)  # type: ignore[union-attr]
    )


# --- a late firing: which fire time it stands for -------------------------------------------------


def test_without_a_spread_the_latest_fire_time_is_latest_due() -> None:
    due = first_run(NIGHTLY, NOW)
    later = due + timedelta(days=3, hours=5)
    assert latest_fire(NIGHTLY, NO_SPREAD, "n", due, later) == latest_due(NIGHTLY, due, later)


def test_a_late_firing_stands_for_the_latest_jittered_time_before_it() -> None:
    spread = parse_spread(NIGHTLY, None, "30m")
    due = first_fire(NIGHTLY, spread, "n", NOW)
    nights = [first_run(NIGHTLY, NOW) + timedelta(days=d) for d in range(5)]
    jittered = [n + jitter_offset(NIGHTLY, spread, "n", n) for n in nights]
    assert jittered[0] == due
    assert latest_fire(NIGHTLY, spread, "n", due, due + timedelta(minutes=1)) == due
    # three nights late: the third night's jittered time, if it has passed...
    assert latest_fire(NIGHTLY, spread, "n", due, jittered[3]) == jittered[3]
    # ...and the second's while the third night is past its nominal time but not its jitter
    if jittered[3] > nights[3]:
        assert (
            latest_fire(NIGHTLY, spread, "n", due, jittered[3] - timedelta(seconds=1))
            == (jittered[2])
        )


def test_a_late_anchored_firing_stands_for_its_latest_grid_time() -> None:
    spread = parse_spread(HOURLY, ANCHOR, None)
    due = first_fire(HOURLY, spread, "h", NOW)  # 12:15
    assert latest_fire(HOURLY, spread, "h", due, due + timedelta(hours=5, minutes=1)) == (
        due + timedelta(hours=5)
    )
    assert latest_fire(HOURLY, spread, "h", due, due - timedelta(minutes=1)) == due


@settings(max_examples=200, deadline=None)
@given(
    jitter=st.integers(1, 3 * 3600),
    at=st.datetimes(datetime(2020, 1, 1), datetime(2040, 1, 1), timezones=st.just(UTC)),
    anchored=st.booleans(),
)
def test_the_first_fire_time_from_a_moment_is_the_one_the_chain_reaches(
    jitter: int, at: datetime, anchored: bool
) -> None:
    """fire_from(t) is the first of the fire times fire_after chains that is not before t."""
    spec = parse_spec("interval", "45m") if anchored else parse_spec("cron", "*/30 * * * *")
    spread = Spread(datetime(2026, 1, 1, 0, 7, tzinfo=UTC) if anchored else None, None)
    spread = Spread(spread.anchor, timedelta(seconds=jitter))
    chained = first_fire(spec, spread, "x", at - timedelta(hours=4))
    while chained < at:
        chained = fire_after(spec, spread, "x", chained)  # type: ignore[assignment]
    assert fire_from(spec, spread, "x", at) == chained
    assert fire_from(spec, spread, "x", chained) == chained


def test_an_every_schedule_takes_no_jitter() -> None:
    """@every counts from the last firing: a jitter would move every later time."""
    with pytest.raises(SpreadError, match="an @every schedule takes no jitter") as caught:
        parse_spread(parse_spec("cron", "@every 1h"), None, "50m")
    assert caught.value.field == "jitter"


def test_a_jitter_near_the_end_of_the_calendar_is_bounded_by_itself() -> None:
    """The cap needs the next nominal time; past year 9999 there is none."""
    spec = parse_spec("interval", "1h")
    spread = parse_spread(spec, "9999-12-31T23:59:59Z", "30m")
    nominal = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert timedelta(0) <= jitter_offset(spec, spread, "x", nominal) < timedelta(minutes=30)
