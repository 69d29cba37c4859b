"""Spreading fire times: an interval's anchor and a jitter that is the same everywhere.

docs/spec/SEMANTICS.md "Spreading fire times". Schedules applied together fire
together; two optional fields spread them:

* ``anchor`` (interval only): nominal fire times are ``anchor + k * interval`` for any
  integer k, so arming, resuming and firing pick the first such time strictly after
  the moment, instead of ``moment + interval``.
* ``jitter`` (cron, or an anchored interval): each nominal fire time is delayed by
  ``hash(schedule name, nominal time) mod bound`` whole seconds, where the bound is the
  jitter capped at the gap to the next nominal fire time (as Temporal caps it), so a
  jittered firing never reaches the next one and jitter never accumulates.

The offset is a pure function of the name and the nominal time: every replica, a
restart and ``plan`` (before the schedule exists) compute the same fire times.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from rackcron.domain.timing._base import SpecError, as_utc, quote
from rackcron.domain.timing._cron import Cron
from rackcron.domain.timing._duration import parse_duration
from rackcron.domain.timing._spec import (
    Interval,
    OneTime,
    Spec,
    first_run,
    format_rfc3339,
    latest_due,
    next_after,
    parse_rfc3339,
)

__all__ = [
    "NO_SPREAD",
    "Spread",
    "SpreadError",
    "fire_after",
    "fire_from",
    "first_fire",
    "jitter_offset",
    "latest_fire",
    "nominal_after",
    "parse_spread",
    "stored_spread",
]

_SECOND = timedelta(seconds=1)
_TINY = timedelta(microseconds=1)


class SpreadError(SpecError):
    """An anchor or jitter is invalid, or not allowed on its spec; ``field`` names which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Spread:
    """How a schedule's fire times are spread: ``anchor`` (UTC) of an interval schedule,
    and ``jitter`` (whole seconds, at least one); both None: the reference's times."""

    anchor: datetime | None = None
    jitter: timedelta | None = None


NO_SPREAD = Spread()


def parse_spread(spec: Spec, anchor: str | datetime | None, jitter: str | None) -> Spread:
    """The spread of a schedule of ``spec`` that declares ``anchor`` (RFC 3339 with an
    offset, or an aware datetime) and ``jitter`` (a Go duration); None for either: not
    declared. An ``@every`` cron counts from its last firing, as an un-anchored interval
    does: it takes no jitter either.

    :raises SpreadError: naming ``anchor`` or ``jitter``: malformed, an anchor on a cron
        or one-time schedule, a jitter that is not whole seconds (at least one), on a
        one-time schedule, or on an
        interval schedule without an anchor (its jitter would accumulate).
    """
    kind = "one-time" if isinstance(spec, OneTime) else "cron"
    kind = "interval" if isinstance(spec, Interval) else kind
    at = None
    if anchor is not None:
        if kind != "interval":
            raise SpreadError(
                "anchor", f"only an interval schedule has an anchor; this one is {kind}"
            )
        try:
            at = as_utc(anchor) if isinstance(anchor, datetime) else parse_rfc3339(anchor)
        except (SpecError, ValueError) as exc:
            raise SpreadError("anchor", str(exc)) from None
    spread = None
    if jitter is not None:
        if kind == "one-time":
            raise SpreadError("jitter", "a one-time schedule fires once: it takes no jitter")
        if kind == "interval" and at is None:
            raise SpreadError(
                "jitter",
                "an interval schedule takes a jitter only with an anchor (without one,"
                " each firing would move the next)",
            )
        if isinstance(spec, Cron) and spec.every is not None:
            raise SpreadError(
                "jitter",
                "an @every schedule takes no jitter: each firing would move the next (use"
                " an interval schedule with an anchor)",
            )
        try:
            nanoseconds = parse_duration(jitter)
        except SpecError as exc:
            raise SpreadError("jitter", str(exc)) from None
        seconds, rest = divmod(nanoseconds, 1_000_000_000)
        if seconds < 1 or rest:
            raise SpreadError("jitter", f"must be whole seconds, at least 1s, got {quote(jitter)}")
        spread = timedelta(seconds=seconds)
    return Spread(at, spread)


def stored_spread(anchor: datetime | None, jitter: str | None) -> Spread:
    """The spread of a stored schedule (checked by :func:`parse_spread` when written).

    :raises SpecError: a jitter that is not a Go duration.
    """
    if jitter is None:
        return Spread(anchor)
    return Spread(anchor, timedelta(seconds=parse_duration(jitter) // 1_000_000_000))


def nominal_after(spec: Spec, spread: Spread, t: datetime) -> datetime | None:
    """The first nominal fire time strictly after ``t`` (UTC): ``anchor + k * interval``
    for an anchored interval, otherwise as :func:`next_after` (None: one-time)."""
    t = as_utc(t)
    if spread.anchor is not None and isinstance(spec, Interval):
        steps = (t - spread.anchor) // spec.delta + 1
        return spread.anchor + steps * spec.delta
    return next_after(spec, t)


def jitter_offset(spec: Spec, spread: Spread, name: str, nominal: datetime) -> timedelta:
    """How long the schedule named ``name`` waits after its ``nominal`` fire time: the
    hash of name and time, modulo the jitter capped at the gap to the next nominal
    time, in whole seconds (zero without a jitter, or under a second's gap)."""
    if spread.jitter is None:
        return timedelta(0)
    try:
        following = nominal_after(spec, spread, nominal)
    except OverflowError:  # the calendar ends (year 9999) first: the jitter alone bounds it
        following = None
    bound = spread.jitter if following is None else min(spread.jitter, following - nominal)
    seconds = bound // _SECOND
    if seconds < 1:
        return timedelta(0)
    digest = hashlib.sha256(f"{name}\n{format_rfc3339(nominal)}".encode()).digest()
    return timedelta(seconds=int.from_bytes(digest[:8]) % seconds)


def first_fire(
    spec: Spec, spread: Spread, name: str, now: datetime, fired: datetime | None = None
) -> datetime:
    """When a schedule armed at ``now`` (created, resumed, its timing changed) first
    fires (UTC): :func:`~rackcron.domain.timing.first_run`, or the first anchored time
    strictly after ``now``; jittered. A jittered schedule's nominal time at or before
    ``now`` whose jittered time is still ahead fires then, unless the schedule ``fired``
    (last dispatched) at or after it: armed within its jitter, it is not skipped (a
    cut-over arms the new server after the old one stopped short of it)."""
    if isinstance(spec, OneTime):
        return first_run(spec, now)
    if spread.jitter is not None:
        now = as_utc(now)
        last = _latest_nominal(spec, spread, now - spread.jitter, now)
        if last is not None and (fired is None or as_utc(fired) < last):
            fires = last + jitter_offset(spec, spread, name, last)
            if fires > now:
                return fires
    nominal = nominal_after(spec, spread, now) if spread.anchor else first_run(spec, now)
    assert nominal is not None  # only a one-time spec runs out
    return nominal + jitter_offset(spec, spread, name, nominal)


def fire_after(spec: Spec, spread: Spread, name: str, t: datetime) -> datetime | None:
    """The fire time following a firing at ``t`` (UTC), jittered; None once consumed."""
    nominal = nominal_after(spec, spread, t)
    if nominal is None:
        return None
    return nominal + jitter_offset(spec, spread, name, nominal)


def fire_from(spec: Spec, spread: Spread, name: str, t: datetime) -> datetime | None:
    """The first fire time at or after ``t`` (UTC) of a schedule whose fire times do not
    depend on when it last fired: a cron, a one-time spec, or an anchored interval (an
    un-anchored interval counts from its stored next run: not for it)."""
    t = as_utc(t)
    if spread.jitter is not None:  # the nominal time before t may fire at t or after
        last = _latest_nominal(spec, spread, t - spread.jitter, t - _TINY)
        if last is not None and (fires := last + jitter_offset(spec, spread, name, last)) >= t:
            return fires
    if isinstance(spec, OneTime):
        return spec.at if spec.at >= t else None
    return fire_after(spec, spread, name, t - _TINY)


def latest_fire(spec: Spec, spread: Spread, name: str, due: datetime, now: datetime) -> datetime:
    """The latest fire time at or before ``now`` of a schedule due at ``due`` (a fire
    time itself): what :func:`~rackcron.domain.timing.latest_due` finds, with the spread.

    Of the fire times that follow ``due``, the last whose jittered time is not after
    ``now``; ``due`` when none is (a starting deadline's lateness counts from it).
    """
    due, now = as_utc(due), as_utc(now)
    if spread == NO_SPREAD:
        return latest_due(spec, due, now)
    if isinstance(spec, OneTime) or now <= due:
        return due
    last = _latest_nominal(spec, spread, due, now)
    while last is not None and last > due:
        fires = last + jitter_offset(spec, spread, name, last)
        if fires <= now:
            return fires
        last = _latest_nominal(spec, spread, due, last - _TINY)
    return due


def _latest_nominal(spec: Spec, spread: Spread, due: datetime, t: datetime) -> datetime | None:
    """The last nominal fire time after ``due`` and at or before ``t``; None: none is."""
    if spread.anchor is not None and isinstance(spec, Interval):
        found = spread.anchor + (t - spread.anchor) // spec.delta * spec.delta
    else:
        found = latest_due(spec, due, t)
    return found if found > due else None
