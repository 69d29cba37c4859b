"""Schedule specs: parse a (spec_type, spec, timezone) triple, then evaluate it.

docs/spec/SEMANTICS.md "Spec types" defines three kinds, each a small frozen value:

* ``Interval``: a positive Go duration; fires ``d`` after "now" on create or
  resume and ``d`` after each dispatch.
* ``Cron``: five fields (or a descriptor, or ``@every``) in a time zone; fires
  at the first match strictly after a moment, with Debian's DST rule.
* ``OneTime``: an RFC 3339 instant; fires once, then is consumed.

``first_run`` arms a schedule, ``next_after`` advances it after a firing, and
``latest_due`` finds the last fire time an outage collapsed into one firing.
They take the moment as a parameter and never read the clock; every datetime
in or out is aware, and results are in UTC.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from datetime import timezone as FixedOffset

from rackcron.domain.timing._base import UTC, SpecError, as_utc, parse_timezone, quote
from rackcron.domain.timing._cron import Cron, parse_cron
from rackcron.domain.timing._dst import next_cron
from rackcron.domain.timing._duration import parse_duration

__all__ = [
    "Interval",
    "OneTime",
    "Spec",
    "SpecType",
    "describe_local",
    "first_run",
    "format_rfc3339",
    "latest_due",
    "next_after",
    "parse_rfc3339",
    "parse_spec",
]


class SpecType(enum.StrEnum):
    """The kind of a schedule spec (proto enum ``INTERVAL``, ``CRON``, ``ONE_TIME``)."""

    INTERVAL = "interval"
    CRON = "cron"
    ONE_TIME = "one-time"


@dataclass(frozen=True)
class Interval:
    """A fixed period of ``nanoseconds`` (> 0)."""

    nanoseconds: int

    def __post_init__(self) -> None:
        if self.nanoseconds <= 0:
            raise SpecError(f"interval must be positive, got {self.nanoseconds}ns")

    @property
    def delta(self) -> timedelta:
        """The period as a timedelta, rounded up to whole microseconds (never 0)."""
        return timedelta(microseconds=-(-self.nanoseconds // 1000))


@dataclass(frozen=True)
class OneTime:
    """A single instant ``at``; stored in UTC whatever zone it was given in."""

    at: datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "at", as_utc(self.at))


Spec = Interval | Cron | OneTime

# RFC 3339 section 5.6, date-time: "T"/"t" between date and time, "Z"/"z" or a
# numeric offset, optional fraction. ASCII digits only (\d would admit others).
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
_SECOND = timedelta(seconds=1)


def format_rfc3339(moment: datetime) -> str:
    """``moment`` in UTC as RFC 3339 with a ``Z`` (fractional seconds only when present)."""
    return as_utc(moment).isoformat().replace("+00:00", "Z")


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 timestamp with an explicit offset; return it in UTC.

    Fractions beyond microseconds are truncated; ``-00:00`` reads as UTC.

    :raises SpecError: not RFC 3339, no offset, or not a real date and time.
    """
    return _parse_rfc3339(text, "")


def _parse_rfc3339(text: str, label: str) -> datetime:
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise SpecError(
            f"{label}{quote(text)} must be an RFC 3339 timestamp "
            "with an explicit offset (Z or ±hh:mm)"
        )
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zulu, sign, off_hours, off_minutes = match.groups()[6:]
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        offset = timedelta(0)
        if not zulu:
            if int(off_hours) > 23 or int(off_minutes) > 59:
                raise ValueError("offset out of range")
            offset = timedelta(hours=int(off_hours), minutes=int(off_minutes))
            offset = -offset if sign == "-" else offset
        moment = datetime(year, month, day, hour, minute, second, micro, FixedOffset(offset))
        return moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise SpecError(f"{label}{quote(text)} is not a valid date and time ({exc})") from None


def parse_spec(spec_type: SpecType | str, spec: str, timezone: str = "UTC") -> Spec:
    """Validate a schedule spec and return its parsed form.

    ``timezone`` is checked for every spec type (``""`` means UTC) but only a
    cron spec uses it; a ``CRON_TZ=``/``TZ=`` prefix in the spec overrides it.

    :raises SpecError: unknown spec type or time zone, or an invalid spec.
    """
    try:
        kind = SpecType(spec_type)
    except ValueError:
        raise SpecError(
            f"unknown spec type {quote(str(spec_type))} (expected interval, cron or one-time)"
        ) from None
    zone = parse_timezone(timezone)
    if kind is SpecType.CRON:
        return parse_cron(spec, zone)
    if kind is SpecType.INTERVAL:
        nanoseconds = parse_duration(spec)
        if nanoseconds <= 0:
            raise SpecError(f"interval must be positive, got {quote(spec)}")
        return Interval(nanoseconds)
    return OneTime(_parse_rfc3339(spec, "one-time spec "))


def first_run(spec: Spec, now: datetime) -> datetime:
    """Return when a schedule armed at ``now`` first fires (UTC).

    Interval: ``now + d``. Cron: the first match strictly after ``now``.
    One-time: its instant, even if that is in the past (due at the next poll).

    :raises ValueError: ``now`` is naive.
    """
    now = as_utc(now)
    if isinstance(spec, OneTime):
        return spec.at
    return _advance(spec, now)


def next_after(spec: Spec, t: datetime) -> datetime | None:
    """Return the fire time following a firing at ``t`` (UTC), or None once consumed.

    Interval: ``t + d``. Cron: the first match strictly after ``t``. One-time:
    None.

    :raises ValueError: ``t`` is naive.
    """
    t = as_utc(t)
    if isinstance(spec, OneTime):
        return None
    return _advance(spec, t)


#: The first span :func:`latest_due` looks back over, doubled until it holds a fire time.
_LOOK_BACK = timedelta(minutes=1)


def latest_due(spec: Spec, due: datetime, now: datetime) -> datetime:
    """Return the latest fire time at or before ``now`` of a schedule due at ``due``:
    the last of the fire times ``next_after`` chains from ``due`` that are not after
    ``now`` (the ticks a late firing collapses into one), or ``due`` itself when the
    next one is after ``now``, and always for a one-time spec.

    Interval: ``due + k * d``. ``@every``: whole steps from ``due`` truncated to the
    second. Cron: searched back from ``now`` over spans that double from a minute, so a
    firing a year late costs a few dozen steps, not one per tick it collapsed.

    :raises ValueError: a naive datetime.
    """
    due, now = as_utc(due), as_utc(now)
    if isinstance(spec, OneTime) or now <= due:
        return due
    if isinstance(spec, Interval):
        return due + (now - due) // spec.delta * spec.delta
    if spec.every is not None:  # as _advance chains it: truncated, then whole steps
        first, step = due.replace(microsecond=0), spec.every * _SECOND
        return due if now < first + step else first + (now - first) // step * step
    span = _LOOK_BACK
    while True:
        start = max(due, now - span)
        found = due if start == due else next_cron(spec, start)
        if found <= now:  # a fire time in (start, now]: walk to the last one
            while (following := next_cron(spec, found)) <= now:
                found = following
            return found
        span *= 2


def describe_local(spec: Spec, t: datetime) -> datetime:
    """Return ``t`` in the spec's zone for display: cron's zone, UTC otherwise.

    :raises ValueError: ``t`` is naive.
    """
    t = as_utc(t)
    if isinstance(spec, Cron):
        return t.astimezone(spec.timezone)
    return t


def _advance(spec: Interval | Cron, t: datetime) -> datetime:
    if isinstance(spec, Interval):
        return t + spec.delta
    if spec.every is not None:
        # robfig/cron's ConstantDelaySchedule: whole seconds after t, truncated.
        return t.replace(microsecond=0) + spec.every * _SECOND
    return next_cron(spec, t)
