"""The cron dialect, parsed into sets, and matching in naive wall-clock time.

A ``Cron`` is five sorted sets (minute, hour, day of month, month, day of week)
plus two flags taken from the *text* of the fields, as Debian/Vixie cron does:

* ``day_or``: day of month and day of week are both restricted, so a day
  matches when either does; otherwise both must. A field that starts with
  ``*`` (so also ``*/2``) or is ``?`` is unrestricted (docs/spec/SEMANTICS.md
  "Spec types").
* ``fixed``: neither the minute nor the hour field starts with ``*``. Fixed
  jobs follow Debian's DST rule (see ``_dst``); finer ones fire at every real
  instant. This is the test cronsim applies, so both agree on which jobs get
  the special treatment.

This module only answers "which wall times match": ``next_wall`` finds the
first matching naive wall time at or after a given one, field by field (a
month, then a day from a per-month table, then an hour and a minute by
bisection), never minute by minute. Mapping wall times to real instants
across DST changes is ``_dst``'s job.

Every valid (month, day), Feb 29 included, falls on each weekday within a
few decades (the Gregorian calendar repeats every 400 years), so an
expression matches some day unless day of month and day of week are ANDed
and no listed month has the smallest listed day (``0 0 30 2 *``).
``parse_cron`` rejects exactly those, so ``next_wall`` always terminates.
"""

from __future__ import annotations

import calendar
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from rackcron.domain.timing._base import SpecError, parse_timezone, quote
from rackcron.domain.timing._duration import parse_duration

__all__ = ["Cron", "Wall", "parse_cron"]

Wall = tuple[int, int, int, int, int]  # year, month, day, hour, minute
_T = TypeVar("_T")

_MONTH_NAMES = {n.lower(): i for i, n in enumerate(calendar.month_abbr) if n}
_DAY_NAMES = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, low, high, names); day of week accepts 7 as Sunday, like Vixie cron.
_FIELDS: tuple[tuple[str, int, int, dict[str, int] | None], ...] = (
    ("minute", 0, 59, None),
    ("hour", 0, 23, None),
    ("day-of-month", 1, 31, None),
    ("month", 1, 12, _MONTH_NAMES),
    ("day-of-week", 0, 7, _DAY_NAMES),
)
_MAX_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # Feb 29 exists
# The values of "*" per field; day of week is 0-6 once 7 is folded onto 0.
_FULL = (
    tuple(range(60)),
    tuple(range(24)),
    tuple(range(1, 32)),
    tuple(range(1, 13)),
    tuple(range(7)),
)
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_PREFIXES = ("CRON_TZ=", "TZ=")
_LAST_YEAR = 9999
_DAYS = {n: tuple(range(1, n + 1)) for n in (28, 29, 30, 31)}


@dataclass(frozen=True)
class Cron:
    """A parsed cron spec; build it with ``parse_spec`` (or ``parse_cron``).

    ``expression`` is the spec as given; ``timezone`` is the effective zone
    (a ``CRON_TZ=``/``TZ=`` prefix wins over the schedule's zone). ``every``
    is set, in whole seconds, for ``@every <duration>``, and the field sets
    are then unused. Days of week are 0-6, Sunday = 0.
    """

    expression: str
    timezone: ZoneInfo
    minutes: tuple[int, ...] = ()
    hours: tuple[int, ...] = ()
    days_of_month: frozenset[int] = frozenset()
    months: tuple[int, ...] = ()
    days_of_week: frozenset[int] = frozenset()
    day_or: bool = False
    fixed: bool = False
    every: int | None = None

    def next_wall(self, year: int, month: int, day: int, hour: int, minute: int) -> Wall:
        """Return the first matching wall time at or after the given one.

        :raises OverflowError: no match before the year 10000.
        """
        hours, minutes, months = self.hours, self.minutes, self.months
        if month in months:
            days = self._days(year, month)
            k = bisect_left(days, day)
            if k < len(days) and days[k] == day:
                i = bisect_left(hours, hour)
                if i < len(hours) and hours[i] == hour:
                    j = bisect_left(minutes, minute)
                    if j < len(minutes):
                        return year, month, day, hour, minutes[j]
                    i += 1
                if i < len(hours):
                    return year, month, day, hours[i], minutes[0]
                k += 1
            if k < len(days):
                return year, month, days[k], hours[0], minutes[0]
        while True:
            i = bisect_right(months, month)
            if i < len(months):
                month = months[i]
            else:
                year, month = year + 1, months[0]
                if year > _LAST_YEAR:
                    raise OverflowError(f"cron {quote(self.expression)} has no time before 10000")
            days = self._days(year, month)
            if days:
                return year, month, days[0], hours[0], minutes[0]

    def _days(self, year: int, month: int) -> tuple[int, ...]:
        shape = _SHAPES.get(year * 16 + month)
        if shape is None:
            shape = _remember(_SHAPES, year * 16 + month, calendar.monthrange(year, month))
        key = (self.days_of_month, self.days_of_week, self.day_or, shape)
        days = _DAY_TABLES.get(key)
        if days is None:
            first, length = shape  # weekday of the 1st (Monday = 0), month length
            doms, dows = self.days_of_month, self.days_of_week
            # the cron weekday (Sunday = 0) of day d is (first + d) % 7
            if self.day_or:
                days = tuple(d for d in _DAYS[length] if d in doms or (first + d) % 7 in dows)
            elif len(dows) == 7:
                days = (
                    _DAYS[length]
                    if len(doms) == 31
                    else tuple(d for d in sorted(doms) if d <= length)
                )
            else:
                days = tuple(d for d in _DAYS[length] if d in doms and (first + d) % 7 in dows)
            _remember(_DAY_TABLES, key, days)
        return days


# Memo tables shared by all Cron values: month shapes by (year, month), and
# matching days by (field sets, shape); a shape is one of 28 (weekday, length).
_SHAPES: dict[int, tuple[int, int]] = {}
_DAY_TABLES: dict[
    tuple[frozenset[int], frozenset[int], bool, tuple[int, int]], tuple[int, ...]
] = {}
_MEMO_LIMIT = 10_000


def _remember(table: dict[Any, Any], key: Any, value: _T) -> _T:
    if len(table) >= _MEMO_LIMIT:
        table.clear()
    table[key] = value
    return value


def parse_cron(expression: str, zone: ZoneInfo) -> Cron:
    """Parse a cron spec in the rackcron dialect (see docs/timing.md).

    :raises SpecError: the expression, its prefix or its descriptor is invalid,
        or it never matches.
    """
    text = expression.strip()
    if text.startswith(_PREFIXES):
        head, _, text = _split_word(text)
        name = head.partition("=")[2]
        if not text:
            raise SpecError(f"{quote(head)} must be followed by a space and a cron expression")
        if not name:
            raise SpecError(f"{quote(head)} names no timezone")
        zone = parse_timezone(name)
    if not text:
        raise SpecError("cron expression is empty")
    if text.startswith("@"):
        word, _, rest = _split_word(text)
        word = word.lower()
        if word == "@every":
            return Cron(expression, zone, every=_every_seconds(rest))
        if word not in _DESCRIPTORS or rest:
            raise SpecError(
                f"unknown descriptor {quote(text)} (expected @yearly, @annually, @monthly, "
                "@weekly, @daily, @midnight, @hourly or @every <duration>)"
            )
        text = _DESCRIPTORS[word]
    parts = text.split()
    if len(parts) != 5:
        raise SpecError(
            f"cron expression {quote(text)} must have 5 fields "
            f"(minute hour day-of-month month day-of-week), got {len(parts)}"
        )
    dom_any = parts[2].startswith("*") or parts[2] == "?"
    dow_any = parts[4].startswith("*") or parts[4] == "?"
    minutes, hours, doms, months, dows = (
        _parse_field(part, index) for index, part in enumerate(parts)
    )
    day_or = not dom_any and not dow_any
    if not day_or and not any(doms[0] <= _MAX_DAYS[m] for m in months):
        raise SpecError(
            f"cron expression {quote(text)} never matches: "
            "no listed month has the listed days of the month"
        )
    return Cron(
        expression,
        zone,
        minutes=minutes,
        hours=hours,
        days_of_month=_frozen(doms),
        months=months,
        days_of_week=_frozen(dows),
        day_or=day_or,
        fixed=not parts[0].startswith("*") and not parts[1].startswith("*"),
    )


def _split_word(text: str) -> tuple[str, str, str]:
    # Like str.partition(" "), but any run of whitespace separates.
    pieces = text.split(None, 1)
    return (pieces[0], " ", pieces[1]) if len(pieces) == 2 else (text, "", "")


def _every_seconds(text: str) -> int:
    # robfig/cron: sub-second parts are dropped and anything under 1s runs every 1s.
    if not text:
        raise SpecError("@every needs a duration, e.g. @every 1h30m")
    nanoseconds = parse_duration(text)
    if nanoseconds <= 0:
        raise SpecError(f"@every duration must be positive, got {quote(text)}")
    return max(1, nanoseconds // 1_000_000_000)


@lru_cache(maxsize=1024)
def _frozen(values: tuple[int, ...]) -> frozenset[int]:
    # One frozenset per distinct tuple, so the day-table key hashes cheaply.
    return frozenset(values)


@lru_cache(maxsize=1024)
def _parse_field(text: str, index: int) -> tuple[int, ...]:
    """Return the sorted values of one field (day of week 7 folded to 0)."""
    if text == "*" or (text == "?" and index in (2, 4)):
        return _FULL[index]
    low, high = _FIELDS[index][1:3]
    values: set[int] = set()
    for item in text.split(","):
        if not item:
            raise _field_error(text, index, "empty list item")
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not (step_text.isascii() and step_text.isdigit()):
                raise _field_error(text, index, f"step {quote(step_text)} is not a number")
            step = int(step_text)
            if step == 0:
                raise _field_error(text, index, "step must be at least 1")
        if base == "*":
            start, stop = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, stop = _value(first, text, index), _value(last, text, index)
            if start > stop:
                raise _field_error(text, index, f"range {quote(base)} runs backwards")
        else:
            start = _value(base, text, index)
            # a/n means a-max/n, as in robfig/cron, whose day of week ends at 6
            stop = max(start, 6 if index == 4 else high) if slash else start
        values.update(range(start, stop + 1, step))
    if index == 4:
        values = {v % 7 for v in values}
    return tuple(sorted(values))


def _value(token: str, text: str, index: int) -> int:
    _, low, high, names = _FIELDS[index]
    if token.isascii() and token.isdigit():
        number = int(token)
        if not low <= number <= high:
            raise _field_error(text, index, f"value {number} out of range {low}-{high}")
        return number
    if names is not None and token.lower() in names:
        return names[token.lower()]
    kind = {3: "a number or a month name", 4: "a number or a day name"}.get(index, "a number")
    raise _field_error(text, index, f"{quote(token)} is not {kind}")


def _field_error(text: str, index: int, problem: str) -> SpecError:
    return SpecError(f"{_FIELDS[index][0]} field {quote(text)}: {problem}")
