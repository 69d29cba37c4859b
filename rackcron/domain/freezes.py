"""Freeze windows: when a freeze holds, and what it holds (docs/spec/SEMANTICS.md "Freeze windows").

A :class:`~rackcron.domain.models.Freeze` is a fixed window ``[start, end)`` or windows
``[s, s + duration)`` starting at each time ``s`` of a cron expression in its time zone
(the cron rules of ``rackcron.domain.timing``, daylight saving time included). Windows are half
open, as firings are: a freeze ending at 06:00 no longer holds a firing at 06:00.

What a freeze holds is a :class:`Target`: one scope of one firing (its rack, its
schedule, its operation), or one task. A firing is held by a window open at the firing,
or by one meeting the operation's own *work window* (:func:`work_window`: a firmware
upgrade's ``start_time`` to ``end_time``), so work the firing hands over for later does
not start inside a freeze either. Everything here is pure: ``at`` is always an
argument, and the callers (the dispatcher's firing, the task runner's promotions and
deliveries, a manual trigger, and the plan's review of declared fire times) read the
freezes and the names and labels they need.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rackcron.domain import timing
from rackcron.domain.models import Freeze, FreezeSelector, Miss, MissReason, Rack

__all__ = [
    "MAX_DURATION_SECONDS",
    "OPERATION_NAMES",
    "Target",
    "active_window",
    "already_missed",
    "check_freeze",
    "holding",
    "holds_no_less",
    "in_force",
    "loosened_by",
    "matches",
    "next_window",
    "unevaluable",
    "windows",
    "work_window",
]

#: The operation names a selector may list (a tree's names, docs/declaring.md).
OPERATION_NAMES = frozenset(
    {"power_on", "power_off", "power_reset", "upgrade_firmware", "bring_up", "ingest"}
)

#: The longest window of a recurring freeze: 366 days (a fixed window may be any length).
MAX_DURATION_SECONDS = 366 * 86_400

_TICK = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Target:
    """What a freeze is asked about: a rack, a schedule (None for a task without one) and
    an operation (its YAML name)."""

    rack_name: str
    rack_labels: Mapping[str, str]
    schedule_name: str | None
    schedule_labels: Mapping[str, str]
    operation: str


def check_freeze(freeze: Freeze) -> timing.Cron | None:
    """Check that ``freeze`` is one window or one recurrence; returns its cron, if any.

    :raises timing.SpecError: neither or both forms, an end not after its start, a cron
        without a positive duration of at most :data:`MAX_DURATION_SECONDS` (or with
        ``@every``, which has no phase), a bad cron expression or time zone, or an
        unknown operation name.
    """
    fixed = freeze.start is not None or freeze.end is not None
    if fixed == (freeze.cron is not None):
        raise timing.SpecError("give either start and end, or cron and duration")
    for name, moment in (("start", freeze.start), ("end", freeze.end)):
        if moment is None or moment.utcoffset() is None:
            continue
        try:
            moment.astimezone(UTC)
        except OverflowError:
            raise timing.SpecError(f"{name} {moment.isoformat()} is out of range in UTC") from None
    unknown = sorted(set(freeze.selector.operations) - OPERATION_NAMES)
    if unknown:
        raise timing.SpecError(
            f"unknown operation {unknown[0]!r} (expected one of {', '.join(sorted(OPERATION_NAMES))})"
        )
    if fixed:
        if freeze.start is None or freeze.end is None:
            raise timing.SpecError("a fixed freeze needs both start and end")
        if freeze.end <= freeze.start:
            raise timing.SpecError("end must be after start")
        if freeze.duration_seconds is not None:
            raise timing.SpecError("duration goes with cron, not with start and end")
        return None
    assert freeze.cron is not None
    if not freeze.duration_seconds or freeze.duration_seconds <= 0:
        raise timing.SpecError("a recurring freeze needs a positive duration")
    if freeze.duration_seconds > MAX_DURATION_SECONDS:
        raise timing.SpecError(
            f"duration must be at most {MAX_DURATION_SECONDS // 3600}h (366 days),"
            f" got {freeze.duration_seconds // 3600}h"
        )
    spec = timing.parse_spec("cron", freeze.cron, freeze.timezone)
    assert isinstance(spec, timing.Cron)
    if spec.every is not None:
        raise timing.SpecError("@every has no fixed start: give a cron time")
    return spec


def unevaluable(freeze: Freeze) -> str | None:
    """Why this host cannot evaluate a stored ``freeze`` (a time zone its tzdata lacks, a
    row rackcron did not write), or None when it can."""
    try:
        check_freeze(freeze)
    except (ValueError, OverflowError) as exc:  # timing.SpecError included
        return str(exc)
    return None


def windows(
    freeze: Freeze, since: datetime, until: datetime
) -> Iterator[tuple[datetime, datetime]]:
    """The freeze's windows that overlap ``[since, until)``, in order (UTC)."""
    spec = check_freeze(freeze)
    if spec is None:
        assert freeze.start is not None and freeze.end is not None
        if freeze.start < until and freeze.end > since:
            yield freeze.start, freeze.end
        return
    assert freeze.duration_seconds is not None
    length = timedelta(seconds=freeze.duration_seconds)
    start = timing.next_after(spec, since - length)  # the first window still open at since
    while start is not None and start < until:
        yield start, start + length
        start = timing.next_after(spec, start)


def active_window(freeze: Freeze, at: datetime) -> tuple[datetime, datetime] | None:
    """The window of ``freeze`` that holds the instant ``at``, or None."""
    return next(windows(freeze, at, at + _TICK), None)


def next_window(freeze: Freeze, after: datetime) -> tuple[datetime, datetime] | None:
    """The first window of ``freeze`` that opens after ``after`` (not one already open)."""
    spec = check_freeze(freeze)
    if spec is None:
        assert freeze.start is not None and freeze.end is not None
        return (freeze.start, freeze.end) if freeze.start > after else None
    assert freeze.duration_seconds is not None
    start = timing.next_after(spec, after)
    return None if start is None else (start, start + timedelta(seconds=freeze.duration_seconds))


def _labelled(wanted: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def selects_rack(selector: FreezeSelector, name: str, labels: Mapping[str, str]) -> bool:
    """Whether ``selector``'s rack dimension takes this rack (an empty one takes every rack)."""
    if not (selector.racks or selector.rack_labels):
        return True
    return name in selector.racks or _labelled(selector.rack_labels, labels)


def holds_no_less(old: Freeze, new: Freeze) -> bool:
    """Whether ``new``, replacing ``old``, holds at least what it held: the same selector,
    and the same windows, or a fixed window that contains the old one, or the same
    recurrence with windows at least as long. (Its reason, labels, source or protection
    may differ.) Anything else may hold less, so it counts as lifting it."""
    if new.selector != old.selector:
        return False
    if (new.start, new.end, new.cron, new.duration_seconds, new.timezone) == (
        old.start,
        old.end,
        old.cron,
        old.duration_seconds,
        old.timezone,
    ):
        return True
    if None not in (old.start, old.end, new.start, new.end) and old.cron is new.cron is None:
        return new.start <= old.start and new.end >= old.end  # type: ignore[operator]
    return (
        old.cron is not None
        and (new.cron, new.timezone) == (old.cron, old.timezone)
        and (new.duration_seconds or 0) >= (old.duration_seconds or 0)
    )


def loosened_by(freezes: Iterable[Freeze], before: Rack | None, after: Rack | None) -> list[str]:
    """The names of the ``freezes`` that hold the rack ``before`` (as stored; None: none)
    by its name or labels and would no longer hold the rack ``after`` (None: the rack is
    gone): renaming, relabelling or deleting a rack, or moving its hardware to another,
    lifts these freezes from it as changing them would. A freeze of every rack holds
    whatever replaces it."""
    if before is None:
        return []
    return [
        f.name
        for f in freezes
        if selects_rack(f.selector, before.name, before.labels)
        and (after is None or not selects_rack(f.selector, after.name, after.labels))
        and (after is not None or bool(f.selector.racks or f.selector.rack_labels))
    ]


def matches(selector: FreezeSelector, target: Target) -> bool:
    """Whether ``selector`` holds ``target`` (:class:`~rackcron.domain.models.FreezeSelector`)."""
    if not selects_rack(selector, target.rack_name, target.rack_labels):
        return False
    if (selector.schedules or selector.schedule_labels) and not (
        target.schedule_name in selector.schedules
        or _labelled(selector.schedule_labels, target.schedule_labels)
    ):
        return False
    return not selector.operations or target.operation in selector.operations


def work_window(
    at: datetime, start: datetime | None, end: datetime | None
) -> tuple[datetime, datetime] | None:
    """The span, beyond the firing at ``at``, in which an operation fired then may start
    its work, given its own ``start`` and ``end`` times (``rackcron.domain.templates.operation_times``);
    None when it starts at the firing.

    The work starts at ``start`` when that is later than the firing, else at the firing;
    with an ``end`` after that, it may start anywhere until ``end``: ``[start, end)``.
    Otherwise it is the instant it starts (a span of one microsecond).
    """
    begin = at if start is None else max(at, start)
    if end is not None and end > begin:
        return begin, end
    return None if begin == at else (begin, begin + _TICK)


def in_force(freeze: Freeze, at: datetime, work: tuple[datetime, datetime] | None = None) -> bool:
    """Whether ``freeze`` holds work fired at ``at`` whose :func:`work_window` is ``work``:
    one of its windows is open at ``at``, or meets ``work``."""
    if active_window(freeze, at) is not None:
        return True
    return work is not None and next(windows(freeze, *work), None) is not None


def holding(
    freezes: Iterable[Freeze],
    target: Target,
    at: datetime,
    work: tuple[datetime, datetime] | None = None,
) -> Freeze | None:
    """The first of ``freezes`` (in the order given) :func:`in_force` for work fired at
    ``at`` (with that ``work`` window) that holds ``target``."""
    for freeze in freezes:
        if matches(freeze.selector, target) and in_force(freeze, at, work):
            return freeze
    return None


def already_missed(previous: Miss | None, holding: Sequence[Freeze], at: datetime) -> bool:
    """Whether a schedule's firing missed at ``at`` because ``holding`` hold every scope
    repeats its ``previous`` miss: that one was inside each of these freezes too, in the
    window of each that is open at ``at``. Such a miss is counted and not told
    (docs/notifications.md "A freeze is told once per window"). A freeze whose windows
    this host cannot evaluate counts as one window for as long as it holds.
    """
    if previous is None or previous.reason is not MissReason.FREEZE or not previous.detail:
        return False
    # A freeze miss records the names sorted, ", "-joined (a tree's names hold no comma).
    same = previous.detail == ", ".join(sorted(f.name for f in holding))
    before = set(previous.detail.split(", "))
    for freeze in holding:
        if not same and freeze.name not in before:
            return False
        try:
            window = active_window(freeze, at)
        except (ValueError, OverflowError):  # timing.SpecError included
            continue
        if window is None or window[0] > previous.at:
            return False
    return True
