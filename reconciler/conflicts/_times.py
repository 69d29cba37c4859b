"""Fire times over the horizon, in integer microseconds, and when two schedules first overlap.

:class:`Times` answers one question about a schedule's firings in ``[now, now +
horizon)``, "the first fire time after x", without listing them minute by minute:
interval and ``@every`` schedules are a ``range``, one-time schedules a tuple, and
a cron is listed lazily and asked directly past its listed prefix.
:func:`first_overlap` finds the earliest instant at which a firing of each of two
schedules runs, each firing lasting its operation's assumed duration. Times are
microseconds since the epoch (:func:`micros`, :func:`instant`) so that ranges
and bisection work on plain integers.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from rackcron.domain import timing

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    return (moment - _EPOCH) // MICROSECOND


def instant(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


class Times:
    """One schedule's fire times in ``[now, end)``, asked one at a time: the first after ``x``.

    Interval and ``@every`` schedules (each firing relative to the previous one) are
    a ``range``, one-time schedules a tuple: both answered by bisection. A
    field-based cron, and a schedule with a jitter (``spread``,
    ``rackcron.domain.timing``), is generated lazily: a prefix of its firings grows by at
    most ``_CHUNK`` per question, and a question beyond it is answered directly (its
    fire times are a fixed set of instants, so the first one after any ``x`` is well
    defined) and memoised. A sparse one is soon listed whole; a dense one is never
    generated further than pairs need.
    """

    _CHUNK = 64

    @property
    def complete(self) -> bool:
        """Every fire time is listed."""
        return self.following is None

    def __init__(
        self,
        spec: timing.Spec | None,
        start: datetime | None,
        fires: bool,
        now: datetime,
        end: datetime,
        spread: timing.Spread = timing.NO_SPREAD,
        name: str = "",
    ) -> None:
        #: The first fire time strictly after a moment, while the listing is incomplete.
        self.following: Callable[[datetime], datetime | None] | None = None
        self.listed: Sequence[int] = ()
        self.end = micros(end)
        self.memo: dict[int, int | None] = {}
        if spec is None or not fires:
            return
        if isinstance(spec, timing.OneTime):
            at = spec.at if start is None else max(start, now)
            self.listed = (micros(at),) if now <= at < end else ()
            return
        step = spec.delta if isinstance(spec, timing.Interval) else None
        if isinstance(spec, timing.Cron) and spec.every is not None:
            step = timedelta(seconds=spec.every)
        if spread != timing.NO_SPREAD:  # its own grid, whatever the stored next run
            first = timing.fire_from(spec, spread, name, now)
            step = None if spread.jitter else step
        else:
            first = timing.first_run(spec, now)
        if step is not None and start is not None and spread == timing.NO_SPREAD:
            # The stored phase, carried forward to now: start + k*step, k >= 0.
            first = start + max(0, -((start - now) // step)) * step
        if first is None or first >= end:
            return
        if step is None:
            self.following = lambda x: timing.fire_from(spec, spread, name, x + MICROSECOND)
            self.listed = [micros(first)]
            self._grow(micros(end))  # one firing at most _CHUNK times is complete now
            return
        second = timing.next_after(spec, first)
        assert second is not None
        if second - first == step:
            self.listed = range(micros(first), self.end, step // MICROSECOND)
        else:  # ``@every`` truncates to whole seconds: only from a fractional start
            self.listed = [micros(first), *range(micros(second), self.end, step // MICROSECOND)]

    def after(self, x: int) -> int | None:
        """The first fire time strictly after ``x`` (microseconds), or None."""
        listed = self.listed
        if self.following is not None and listed and x >= listed[-1]:
            self._grow(x)
            if x >= listed[-1]:
                return self._ask(x)
        i = bisect_right(listed, x)
        return listed[i] if i < len(listed) else None

    def _grow(self, x: int) -> None:
        listed, following = self.listed, self.following
        assert isinstance(listed, list) and following is not None
        for _ in range(self._CHUNK):
            found = following(instant(listed[-1]))
            if found is None or micros(found) >= self.end:
                self.following = None  # complete: bisection answers everything from now on
                return
            listed.append(micros(found))
            if listed[-1] > x:
                return

    def _ask(self, x: int) -> int | None:
        if self.following is None:
            return None
        if x not in self.memo:
            found = self.following(instant(x))
            self.memo[x] = micros(found) if found and micros(found) < self.end else None
        return self.memo[x]


def first_overlap(
    a: Times, a_length: int, b: Times, b_length: int, since: int
) -> tuple[int, int, int] | None:
    """The earliest instant from ``since`` at which both run, with the start of each firing then.

    A firing at ``s`` of length ``d`` runs over ``[s, s + d)``. From a moment ``t``,
    the first firing of a side that runs at ``t`` or later is its first start after
    ``t - d``; call them ``ca`` and ``cb``. If the two overlap, they meet at the later
    start, and nothing met before: the side starting later runs nothing between
    ``t`` and its start. Otherwise no collision starts before ``max(ca, cb)``, so
    ``t`` leaps there. Each leap passes a firing of the sparser side, so a
    five-minute cron against a weekly one costs a few steps, not thousands.
    """
    if a.complete and b.complete:
        return _first_overlap_listed(a.listed, a_length, b.listed, b_length)
    a_after, b_after = a.after, b.after
    t = since
    while True:
        ca = a_after(t - a_length)
        if ca is None:
            return None
        cb = b_after(t - b_length)
        if cb is None:
            return None
        if ca < cb + b_length and cb < ca + a_length:
            return max(ca, cb), ca, cb
        t = max(ca, cb)


def _first_overlap_listed(
    a: Sequence[int], a_length: int, b: Sequence[int], b_length: int
) -> tuple[int, int, int] | None:
    """:func:`first_overlap` over two complete lists: walk the shorter, bisect the longer.

    For a firing at ``s`` the earliest partner is the first start after ``s - d'``:
    running at ``s`` already, or starting before ``s + d``. The walk stops once a
    firing starts no earlier than the best collision so far.
    """
    swapped = len(a) > len(b)
    if swapped:
        a, a_length, b, b_length = b, b_length, a, a_length
    best: tuple[int, int, int] | None = None
    for s in a:
        if best is not None and s >= best[0]:
            break
        j = bisect_right(b, s - b_length)
        if j < len(b) and b[j] < s + a_length:
            at = max(s, b[j])
            if best is None or at < best[0]:
                best = (at, s, b[j])
    if best is None or not swapped:
        return best
    return best[0], best[2], best[1]
