"""Fire times inside freezes: which declared firings a freeze will hold, within a horizon.

A freeze holds one scope of one firing (docs/spec/SEMANTICS.md "Freeze windows"): at
the moment of firing, a window of the freeze is open (``[start, end)``, half open)
and its selector matches that scope's rack, the schedule and its operation
(``rackcron.domain.freezes.matches``). So for each schedule (:class:`Firer`) and each freeze,
the racks the selector holds are found first; only then are fire times compared,
with the freeze's windows in ``[now, now + horizon)`` (``rackcron.domain.freezes.windows``,
merged where they overlap), using the same fire times as the precise conflict check
(:class:`~rackcron.reconciler.conflicts._times.Times`: from ``now``, or from a stored
phase). A firing the dispatcher makes late is judged at the moment it happens;
this check, made ahead, judges each firing at its due time. A firing is also held
when its operation's own work window (``rackcron.domain.freezes.work_window``: a firmware
upgrade's ``start_time`` to ``end_time``, :attr:`Firer.times`) meets a window of the
freeze: fire times before the operation's own times are judged one by one, those
after as above.

Each pair of a schedule and a freeze that meet is one
:class:`~rackcron.reconciler.conflicts._report.Held`: the first fire
time inside, the racks held, and how many fire times fall inside (counted up to
:data:`MAX_COUNTED`). The work is bounded: past ``max_steps`` fire times and windows
looked at, the check stops and says so (``HeldReport.exact`` false). Pure: ``now``
is an argument.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rackcron.domain import timing
from rackcron.domain.freezes import Target, matches, windows, work_window
from rackcron.domain.models import Freeze
from rackcron.domain.templates import OperationTimes
from rackcron.reconciler.conflicts._report import MAX_LISTED, Held, HeldReport
from rackcron.reconciler.conflicts._times import Times, instant, micros

__all__ = ["MAX_COUNTED", "MAX_STEPS", "Firer", "held_firings"]

#: Fire times counted inside one freeze for one schedule; past it, "at least".
MAX_COUNTED = 1_000
#: Fire times and windows a check looks at before it stops (well under a second's work).
MAX_STEPS = 1_000_000


@dataclass(frozen=True)
class Firer:
    """A schedule as a freeze sees it: its fire times, operation, labels and racks."""

    name: str
    spec: timing.Spec
    operation: str  # its YAML name: power_on, ..., upgrade_firmware
    labels: Mapping[str, str]
    racks: tuple[tuple[str, Mapping[str, str]], ...]  # (name, labels), each rack once
    start: datetime | None = None  # the store's next run: an interval's phase
    spread: timing.Spread = timing.NO_SPREAD  # its anchor and jitter
    fires: bool = True  # False: a one-time schedule that has fired
    source: str | None = None
    line: int | None = None
    times: OperationTimes = field(
        default_factory=OperationTimes
    )  # its operation's own start and end times


#: Spans in integer microseconds, sorted and merged.
_Spans = list[tuple[int, int]]


def _merged(spans: Iterable[tuple[datetime, datetime]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        a, b = micros(start), micros(end)
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


class _Budget:
    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self) -> bool:
        """One step; False once the budget is spent."""
        self.left -= 1
        return self.left >= 0


def held_firings(
    firers: Iterable[Firer],
    freezes: Sequence[Freeze],
    *,
    now: datetime,
    horizon: timedelta,
    limit: int = MAX_LISTED,
    max_steps: int = MAX_STEPS,
) -> HeldReport:
    """Each (schedule, freeze) pair where a fire time within ``[now, now + horizon)`` falls
    inside a window of the freeze on a scope it selects; in schedule, then freeze, order."""
    end = now + horizon
    budget = _Budget(max_steps)
    spans: dict[str, _Spans] = {}
    found: list[Held] = []
    total = 0
    exact = True
    for firer in firers:
        if not firer.fires or not exact:
            continue
        times: Times | None = None
        # Fire times before the operation's own times are judged with their work window.
        own = max((t for t in firer.times if t is not None), default=now)
        for freeze in freezes:
            held = tuple(
                name
                for name, labels in firer.racks
                if matches(
                    freeze.selector,
                    Target(name, labels, firer.name, firer.labels, firer.operation),
                )
            )
            if not held:
                continue
            if freeze.name not in spans:
                opened = []
                for window in windows(freeze, now, end):
                    if not budget.spend():
                        exact = False
                        break
                    opened.append(window)
                spans[freeze.name] = _merged(opened)
            if times is None:
                times = Times(firer.spec, firer.start, True, now, end, firer.spread, firer.name)
            first, work, count, complete = _working(
                times, firer.times, freeze, spans[freeze.name], micros(min(end, own)), budget
            )
            # The later ones: their work starts at the firing.
            later, more, rest = _inside(times, spans[freeze.name], budget, own)
            count, complete = count + more, complete and rest
            first = later if first is None else first
            exact = exact and budget.left >= 0
            if first is None:
                continue
            total += 1
            if len(found) < limit:
                at = instant(first)
                zone = firer.spec.timezone.key if isinstance(firer.spec, timing.Cron) else "UTC"
                found.append(
                    Held(
                        schedule=firer.name,
                        freeze=freeze.name,
                        at=at,
                        zone=zone,
                        local_at=timing.describe_local(firer.spec, at),
                        racks=held,
                        count=count,
                        count_exact=complete,
                        source=firer.source,
                        line=firer.line,
                        work=work,
                    )
                )
            if not exact:
                break
    return HeldReport(tuple(found), total, exact)


def _meets(spans: _Spans, at: int) -> bool:
    """Whether the instant ``at`` is inside one of ``spans``."""
    i = bisect_right(spans, at, key=lambda span: span[0])  # the spans starting by ``at``
    return i > 0 and spans[i - 1][1] > at


def _working(
    times: Times,
    own: OperationTimes,
    freeze: Freeze,
    spans: _Spans,
    until: int,
    budget: _Budget,
) -> tuple[int | None, tuple[datetime, datetime] | None, int, bool]:
    """Among the fire times before ``until`` (the operation's own times, or the horizon),
    the first held by ``freeze`` (its windows in the horizon: ``spans``) at its firing or
    over its work window, that window when the firing itself is not inside, how many are
    held, and whether that count is exact. Work windows may reach past the horizon: each
    is asked of the freeze (once per distinct window)."""
    first: int | None = None
    work: tuple[datetime, datetime] | None = None
    count = 0
    met: dict[tuple[datetime, datetime], bool] = {}
    at = times.after(-1)  # the first
    while at is not None and at < until:
        if not budget.spend():
            return first, work, count, False
        window = work_window(instant(at), *own)
        inside = _meets(spans, at)
        if window is not None and window not in met:
            met[window] = next(windows(freeze, *window), None) is not None
        if inside or (window is not None and met[window]):
            if first is None:
                first, work = at, None if inside else window
            count += 1
            if count >= MAX_COUNTED:
                return first, work, count, False
        at = times.after(at)
    return first, work, count, True


def _inside(
    times: Times, spans: _Spans, budget: _Budget, since: datetime
) -> tuple[int | None, int, bool]:
    """The first fire time from ``since`` inside ``spans``, how many fall inside, and whether
    that count is exact (not stopped at :data:`MAX_COUNTED` or by the budget)."""
    first: int | None = None
    count = 0
    floor = micros(since)
    for start, end in spans:
        if not budget.spend():
            return first, count, False
        at = times.after(max(start, floor) - 1)
        while at is not None and at < end:
            first = at if first is None else first
            count += 1
            if count >= MAX_COUNTED or not budget.spend():
                return first, count, False
            at = times.after(at)
    return first, count, True
