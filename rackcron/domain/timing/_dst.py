"""From matching wall times to real instants: cron across DST changes.

A zone's local wall clock is UTC plus an offset that changes at transitions.
A spring-forward transition leaves a *gap* (wall times that never happen); a
fall-back transition leaves a *fold* (wall times that happen twice, told
apart by ``fold=0`` and ``fold=1``). docs/spec/SEMANTICS.md "Spec types" asks for
Debian cron's rule, which splits jobs in two (``Cron.fixed``):

* **Fixed-time jobs** (minute and hour fields do not start with ``*``) are
  walked in naive wall time. A matching wall time maps to its first
  occurrence (``fold=0``); one in a gap maps to the instant the gap ends, so
  ``30 2 * * *`` fires at 03:00 on the spring-forward day and ``0,30 2 * * *``
  fires there once, not twice. The map is monotonic, so the answer is the
  first matching wall time whose instant is after ``t``; wall times whose
  instant is not (``t`` inside the second pass of a fold) are passed over, so
  a fixed job never fires in the repeated hour.
* **Finer jobs** fire at every real instant whose wall time matches: gap
  slots are dropped and a repeated hour is served twice. These are walked in
  UTC, one stretch of constant offset at a time. Within a stretch wall time is
  UTC plus a constant, so the next match is ``next_wall(wall(c)) - offset``;
  if the offset has changed by then, the transition is found by bisection on
  whole seconds and the walk resumes from it with the new offset (after a
  fall-back that re-enters the repeated wall times, which is how the second
  pass fires).

Datetimes are never advanced by adding timedeltas to aware local values:
Python does that in wall time and drops ``fold`` (docs/benchmarks.md "Cron
evaluation"). Wall times are naive, instants are UTC, and every crossing
between them goes through ``astimezone`` or an explicit offset.

The UTC walk rests on two facts about tzdata, checked against every zone
since 1900 when this was written: consecutive offset changes are more than
six days apart (so a two-day window holds at most one), and offsets stay
within UTC-12..UTC+14 (so a jump never moves wall time by more than 26 hours).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from rackcron.domain.timing._base import UTC
from rackcron.domain.timing._cron import Cron

__all__ = ["next_cron"]

_MINUTE = timedelta(minutes=1)
# Shorter than the gap between two offset changes, longer than any offset jump.
_WINDOW = timedelta(days=2)


def next_cron(cron: Cron, after: datetime) -> datetime:
    """Return the first fire time of a field-based ``cron`` strictly after UTC ``after``.

    :raises OverflowError: no fire time before the year 10000.
    """
    if cron.fixed:
        return _next_fixed(cron, after)
    return _next_fine(cron, after)


def _next_fixed(cron: Cron, after: datetime) -> datetime:
    tz = cron.timezone
    local = after.astimezone(tz)
    start = datetime(local.year, local.month, local.day, local.hour, local.minute) + _MINUTE
    while True:
        wall = cron.next_wall(start.year, start.month, start.day, start.hour, start.minute)
        naive = datetime(*wall)
        offset = tz.utcoffset(naive)  # fold=0: a repeated time's first occurrence
        assert offset is not None  # a ZoneInfo has an offset at every wall time
        instant = datetime(*wall, tzinfo=UTC) - offset
        if instant.astimezone(tz).utcoffset() != offset:
            # In a gap, fold=0 reads the wall time with the offset from before the
            # change, which puts the instant after it; the change is within a day.
            instant = _transition(tz, instant - _WINDOW, instant)
        if instant > after:
            return instant
        start = naive + _MINUTE


def _next_fine(cron: Cron, after: datetime) -> datetime:
    tz = cron.timezone
    cursor, inclusive = after, False
    while True:
        local = cursor.astimezone(tz)
        offset = local.utcoffset()
        assert offset is not None  # local is aware
        start = datetime(local.year, local.month, local.day, local.hour, local.minute)
        if not inclusive or local.second or local.microsecond:
            start += _MINUTE
        wall = cron.next_wall(start.year, start.month, start.day, start.hour, start.minute)
        instant = datetime(*wall, tzinfo=UTC) - offset
        horizon = cursor + _WINDOW
        if instant <= horizon:
            if instant.astimezone(tz).utcoffset() == offset:
                return instant  # at most one change in the window, and none happened
            limit = instant
        elif horizon.astimezone(tz).utcoffset() == offset:
            # Nothing matches before the horizon. Up to a window before the match,
            # every instant's wall time lies strictly between the two, so jump.
            cursor, inclusive = max(horizon, instant - _WINDOW), False
            continue
        else:
            limit = horizon
        cursor, inclusive = _transition(tz, cursor, limit), True


def _transition(tz: ZoneInfo, low: datetime, high: datetime) -> datetime:
    """Return the offset change in ``(low, high]``; the two must differ in offset.

    tzdata places transitions on whole seconds, so bisect over those.
    """
    before = low.astimezone(tz).utcoffset()
    lo = int(low.timestamp() // 1)
    hi = -int(-high.timestamp() // 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, tz).utcoffset() == before:
            lo = mid
        else:
            hi = mid
    return datetime.fromtimestamp(hi, UTC)
