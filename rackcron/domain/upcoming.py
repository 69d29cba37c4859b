"""The fleet's upcoming firings in a window: one bar per (firing, rack), pure.

What the web console's timeline draws and ``rackcron upcoming`` lists. Each enabled
schedule fires at its stored ``next_run_at`` (an overdue one at the window's start: the
dispatcher fires it at its next poll), then as its spec says (``rackcron.domain.timing``). A
firing occupies each rack of its scope for its operation's expected duration (the
schedule's ``expected_duration``, else :data:`EXPECTED_DURATIONS`, the same the precise
conflict check assumes). A firing of a schedule with a ``rollout`` puts each rack in its
estimated slot of the roll-out (``rackcron.domain.rollouts.slots``: the firing then spans
the estimated span); a roll-out running now is drawn as it stands (:func:`running_bars`):
its racks in flight from their start, the racks waiting after them, a batch of the
in-flight limit at a time.

Two bars on one rack whose times overlap are marked as a predicted conflict when their
tasks would conflict (the table of ``rackcron.domain.task_conflicts``, over the components each
scope's filter selects, read as an index: a bar meets only the bars it conflicts with):
the second of them would be refused under skip, or queued.
A bar names at most :data:`MAX_CONFLICT_NAMES` of the schedules it conflicts with (the
first its sweeps meet: which ones depends only on the schedules, their names and times),
and says when there are more: n schedules in lockstep on one rack would otherwise put n
names on each of their bars. A bar whose start falls inside a
freeze that holds it is marked with the freeze (``rackcron.domain.freezes``).

The result is bounded: at most :data:`MAX_FIRES_PER_SCHEDULE` firings of one schedule (its
name is then in :attr:`Upcoming.cut`), :data:`MAX_BARS` bars in all (the earliest; past
that, :attr:`Upcoming.truncated`) and the first :data:`MAX_FIRES_PER_SCHEDULE` windows of each
freeze (its name is then in :attr:`Upcoming.freezes_cut`: a freeze every minute is 44,640
windows in 31 days).
"""

from __future__ import annotations

import heapq
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import islice
from typing import Protocol

from rackcron.domain import rollouts, timing
from rackcron.domain.filters import ComponentFilter
from rackcron.domain.firing import select_components
from rackcron.domain.freezes import Target, matches, selects_rack, windows
from rackcron.domain.models import (
    Component,
    Freeze,
    Rack,
    RolloutRecord,
    Schedule,
    Scope,
    ScopeEntry,
)
from rackcron.domain.operation_names import operation_name, spoken, spoken_name
from rackcron.domain.task_conflicts import Point, TaskShape, meeting_points

__all__ = [
    "EXPECTED_DURATIONS",
    "MAX_BARS",
    "MAX_CONFLICT_NAMES",
    "MAX_FIRES_PER_SCHEDULE",
    "Bar",
    "Declares",
    "FleetView",
    "FreezeWindow",
    "Upcoming",
    "expected_duration",
    "length_of",
    "running_bars",
    "upcoming",
]

#: How long an operation is expected to keep its components busy once fired.
EXPECTED_DURATIONS: Mapping[str, timedelta] = {
    "power_on": timedelta(minutes=10),
    "power_off": timedelta(minutes=10),
    "power_reset": timedelta(minutes=10),
    "bring_up": timedelta(hours=2),
    "ingest": timedelta(minutes=30),
    "upgrade_firmware": timedelta(hours=2),
}
MAX_FIRES_PER_SCHEDULE = 1_000
MAX_BARS = 20_000
MAX_CONFLICT_NAMES = 10


def expected_duration(operation: str) -> timedelta:
    """:data:`EXPECTED_DURATIONS` of ``operation``; the longest for one not listed."""
    return EXPECTED_DURATIONS.get(operation, max(EXPECTED_DURATIONS.values()))


@dataclass(frozen=True, slots=True)
class FleetView:
    """What the timeline reads of the store, in one transaction."""

    schedules: Sequence[Schedule]
    scopes: Mapping[uuid.UUID, Sequence[ScopeEntry | Scope]]
    racks: Sequence[Rack]
    components: Sequence[Component]
    freezes: Sequence[Freeze] = ()
    rollouts: Sequence[RolloutRecord] = ()  # the unfinished ones, with their scopes


@dataclass(frozen=True, slots=True)
class Bar:
    """One firing of one schedule on one rack, ``[start, end)`` in UTC."""

    schedule_id: uuid.UUID
    schedule: str
    operation: str  # its name (power_reset)
    operation_text: str  # as people read it (power reset (forced))
    rack_id: uuid.UUID
    rack: str
    start: datetime
    end: datetime
    freeze: str | None = None  # the freeze holding this firing, if one does
    conflicts_with: tuple[str, ...] = ()  # schedules whose bars here conflict with it
    conflicts_more: bool = False  # more schedules conflict than conflicts_with names
    slot: bool = False  # its estimated slot in a roll-out firing
    rollout: uuid.UUID | None = None  # the running roll-out it is a rack of
    stage: str | None = None  # that rack's stage: active or waiting


@dataclass(frozen=True, slots=True)
class Upcoming:
    """The bars of a window, by start time (then rack and schedule name)."""

    start: datetime
    end: datetime
    bars: tuple[Bar, ...]
    truncated: bool = False  # MAX_BARS reached: later bars are missing
    cut: tuple[str, ...] = ()  # schedules whose later firings in the window are missing
    freezes: tuple[FreezeWindow, ...] = ()
    freezes_cut: tuple[str, ...] = ()  # freezes whose later windows in the window are missing


@dataclass(frozen=True, slots=True)
class FreezeWindow:
    """A window of a freeze within the timeline's, and the racks its selector takes (what
    else it selects, schedules and operations, is in ``holds``)."""

    name: str
    start: datetime
    end: datetime
    rack_ids: frozenset[uuid.UUID]
    holds: str


def _fires(schedule: Schedule, start: datetime, end: datetime) -> Iterator[datetime]:
    """The schedule's firings that start before ``end``, in order (an overdue one at
    ``start``, and then its next fire time after ``start``)."""
    if not schedule.enabled or schedule.next_run_at is None:
        return
    spec = timing.parse_spec(schedule.spec_type, schedule.spec, schedule.timezone or "UTC")
    spread, name = schedule.spread, schedule.name
    at: datetime | None = schedule.next_run_at
    while at is not None and at < end:
        fired = max(at, start)  # overdue: once, now
        yield fired
        at = timing.fire_after(spec, spread, name, at)
        if at is not None and at <= fired:
            after = fired + timedelta(microseconds=1)
            at = (
                _not_before(spec, at, after)
                if spread == timing.NO_SPREAD
                else timing.fire_from(spec, spread, name, after)  # its own grid: in one step
            )


_Meets = tuple[frozenset[Point], frozenset[Point]]  # where a scope's task stands, looks


@dataclass(frozen=True, slots=True)
class _Plan:
    """What each firing of one schedule puts on the racks of its scope."""

    schedule: Schedule
    operation: str
    operation_text: str
    length: timedelta
    targets: tuple[tuple[Rack, _Meets], ...]
    offsets: tuple[timedelta, ...] = ()  # each target's slot in a roll-out (empty: none)
    cutoff: timedelta | None = None  # the roll-out's declared cutoff (None: the next firing)

    def target(self, rack: Rack) -> Target:
        """What a freeze is asked about a firing on ``rack``."""
        return Target(
            rack_name=rack.name,
            rack_labels=rack.labels,
            schedule_name=self.schedule.name,
            schedule_labels=self.schedule.management.labels,
            operation=self.operation,
        )


def _plan(
    schedule: Schedule,
    scopes: Iterable[ScopeEntry | Scope],
    racks: Mapping[uuid.UUID, Rack],
    meetings: _Meetings,
) -> _Plan | None:
    """None when no scope would submit anything (no rack known, a filter matching none)."""
    operation = operation_name(schedule.template)
    kind = schedule.template.type if schedule.template is not None else ""
    targets = []
    for scope in scopes:
        rack = racks.get(scope.rack_id)
        if rack is None:
            continue
        meets = meetings.of(rack.id, kind, scope.component_filter)
        if meets is None:
            continue  # the filter matches nothing: the scope would submit nothing
        targets.append((rack, meets))
    if not targets:
        return None
    length = length_of(schedule, operation)
    offsets = _slots(schedule, targets, length)
    cutoff = schedule.rollout.policy().cutoff if offsets and schedule.rollout else None
    text = spoken(schedule.template)
    return _Plan(schedule, operation, text, length, tuple(targets), offsets, cutoff)


class Declares(Protocol):
    """What :func:`length_of` reads of a schedule (stored, or as a plan sees it)."""

    @property
    def expected_duration(self) -> str | None: ...


def length_of(schedule: Declares, operation: str) -> timedelta:
    """How long one of ``schedule``'s operations keeps a rack busy: its declared
    ``expected_duration``, else the operation's default."""
    if schedule.expected_duration is not None:
        try:
            return rollouts.parse_span(schedule.expected_duration, "expected_duration")
        except rollouts.RolloutError:
            pass  # a value rackcron did not write: the default
    return expected_duration(operation)


def _slots(
    schedule: Schedule, targets: Sequence[tuple[Rack, _Meets]], length: timedelta
) -> tuple[timedelta, ...]:
    """Each target's estimated start after a firing of ``schedule``'s roll-out (empty:
    it declares none, or one the dispatcher could not follow either)."""
    if schedule.rollout is None:
        return ()
    try:
        policy = schedule.rollout.policy()
        racked = [rollouts.Racked(i, t[0].name, t[0].labels) for i, t in enumerate(targets)]
        ordered = rollouts.order(policy, racked)
        groups = {g for s in racked if (g := rollouts.group_of(policy, s)) is not None}
        at = rollouts.slots(policy, len(ordered), len(groups) or None, length)
    except (rollouts.RolloutError, OverflowError):
        return ()
    offsets = [timedelta(0)] * len(targets)
    for position, scope in enumerate(ordered):
        offsets[int(scope.scope_id)] = at[position]  # type: ignore[call-overload]
    return tuple(offsets)


def _not_before(spec: timing.Spec, at: datetime | None, start: datetime) -> datetime | None:
    """The first of ``spec``'s fire times from ``at`` on that is not before ``start``, in one
    step: a 1 s interval a year behind (or a window a year ahead) is 31 million of them."""
    if at is None or at >= start:
        return at
    period = None  # a fixed period from ``at`` (a constant delay's is whole seconds already)
    if isinstance(spec, timing.Interval):
        period = spec.delta
    elif isinstance(spec, timing.Cron) and spec.every is not None:
        period = timedelta(seconds=spec.every)
    if period is not None:
        return at + -((at - start) // period) * period
    return timing.next_after(spec, start - timedelta(microseconds=1))  # cron: memoryless


def upcoming(
    view: FleetView, start: datetime, end: datetime, *, racks: Collection[uuid.UUID] | None = None
) -> Upcoming:
    """The bars of every enabled schedule's firings that start in ``[start, end)``; with
    ``racks``, only those on these racks (:data:`MAX_BARS` of theirs, not of the fleet's
    then filtered; a roll-out's slots are still those of its whole scope).

    :raises ValueError: ``end`` is not after ``start``.
    """
    if end <= start:
        raise ValueError(f"the window must end after it starts: {start} .. {end}")
    by_id = {r.id: r for r in view.racks}
    on_rack: dict[uuid.UUID, list[tuple[str, str]]] = {}
    for c in sorted(view.components, key=lambda c: str(c.id)):
        if c.rack_id is not None:
            on_rack.setdefault(c.rack_id, []).append((str(c.id), c.type.value))
    meetings = _Meetings(on_rack)
    # The fleet's firings in time order, merged from each schedule's: past MAX_BARS the
    # latest are the ones left out, whichever schedules they belong to.
    # Each plan with its firings and the positions of its targets drawn (those on
    # ``racks``, found once rather than at every firing).
    plans: list[tuple[_Plan, Iterator[datetime], Sequence[int]]] = []
    heap: list[tuple[datetime, int]] = []
    for schedule in sorted(view.schedules, key=lambda s: (s.name, str(s.id))):  # ties by name
        plan = _plan(schedule, view.scopes.get(schedule.id, ()), by_id, meetings)
        if plan is None:
            continue
        drawn: Sequence[int] = range(len(plan.targets))
        if racks is not None:
            drawn = [i for i, (rack, _) in enumerate(plan.targets) if rack.id in racks]
        fires = _fires(schedule, start, end)
        if drawn and (first := next(fires, None)) is not None:
            heap.append((first, len(plans)))
            plans.append((plan, fires, drawn))
    heapq.heapify(heap)
    held = _Held(view.freezes, start, end)
    fired = [0] * len(plans)
    # Until when each schedule's last roll-out runs: a firing due before is missed
    # (docs/spec/SEMANTICS.md "Roll-outs", one at a time), so it draws nothing.
    rolling: list[datetime | None] = [None] * len(plans)
    bars: list[Bar] = []
    meets: list[_Meets] = []  # by bar
    truncated = False
    cut: list[str] = []
    while heap and not truncated:
        at, index = heapq.heappop(heap)
        plan, fires, drawn = plans[index]
        schedule = plan.schedule
        following = next(fires, None)
        missed = (until := rolling[index]) is not None and at < until
        cutoff_at: datetime | None = None  # a roll-out's racks not started by then never are
        if plan.offsets and not missed:
            cutoff_at = _later(at, plan.cutoff) if plan.cutoff is not None else following
            last = _later(at, max(plan.offsets) + plan.length)
            rolling[index] = min(t for t in (cutoff_at, last, END_OF_TIME) if t is not None)
        for position in () if missed else drawn:
            rack, meet = plan.targets[position]
            if len(bars) == MAX_BARS:
                truncated = True
                break
            # As at the firing: a roll-out's racks at their turn.
            freeze = held.by(plan.target(rack), at)
            begins = _later(at, plan.offsets[position]) if plan.offsets else at
            if begins is None or begins >= end or (cutoff_at is not None and begins >= cutoff_at):
                continue  # its slot is past the window, the calendar or the roll-out's cutoff
            meets.append(meet)
            bar = Bar(
                schedule_id=schedule.id,
                schedule=schedule.name,
                operation=plan.operation,
                operation_text=plan.operation_text,
                rack_id=rack.id,
                rack=rack.name,
                start=begins,
                end=_later(begins, plan.length) or END_OF_TIME,
                freeze=freeze.name if freeze else None,
                slot=bool(plan.offsets),
            )
            bars.append(bar)
        fired[index] += 1
        if fired[index] == MAX_FIRES_PER_SCHEDULE:
            cut.append(schedule.name)
        elif following is not None:
            heapq.heappush(heap, (following, index))
    for bar in running_bars(view, start, end):
        if racks is not None and bar.rack_id not in racks:
            continue
        if len(bars) == MAX_BARS:
            truncated = True
            break
        bars.append(bar)
        meets.append((frozenset(), frozenset()))  # drawn as it stands, not judged again
    marked = _mark_conflicts(bars, meets)
    marked.sort(key=lambda b: (b.start, b.rack, b.schedule))
    frozen = list(_freeze_windows(view.freezes, view.racks, start, end))
    counts = Counter(w.name for w in frozen)
    freezes_cut = tuple(sorted(n for n, c in counts.items() if c == MAX_FIRES_PER_SCHEDULE))
    return Upcoming(
        start,
        end,
        bars=tuple(marked),
        truncated=truncated,
        cut=tuple(sorted(cut)),
        freezes=tuple(frozen),
        freezes_cut=freezes_cut,
    )


def running_bars(view: FleetView, start: datetime, end: datetime) -> Iterator[Bar]:
    """The racks of the running roll-outs as they stand at ``start``: each in flight from
    its start for the operation's length (at least until ``start``), the waiting ones
    after them in order, a batch of the in-flight limit each ``length`` (after the bake in
    progress), those of ``[start, end)``."""
    names = {r.id: r.name for r in view.racks}
    for record in view.rollouts:
        length = (
            timedelta(seconds=record.per_rack_seconds)
            if record.per_rack_seconds
            else expected_duration(record.operation)
        )
        active = [s for s in record.scopes if s.stage == "active"]
        # A paused or halted roll-out starts nothing until an operator says so: only its
        # racks in flight are drawn.
        moving = record.state in ("rolling", "baking")
        waiting = [s for s in record.scopes if s.stage == "waiting"] if moving else []
        after = max(start, record.bake_until or start)
        batch = max(1, record.in_flight)
        placed = [(s, max(s.started_at or start, start - length), "active") for s in active] + [
            (s, _later(after, ((len(active) + k) // batch) * length), "waiting")
            for k, s in enumerate(waiting)
        ]
        for scope, begins, stage in placed:
            if begins is None or begins >= end:
                continue
            finish = max(_later(begins, length) or END_OF_TIME, start + timedelta(minutes=1))
            if finish <= start:
                continue
            yield Bar(
                schedule_id=record.schedule_id,
                schedule=record.schedule_name,
                operation=record.operation,
                operation_text=spoken_name(record.operation),
                rack_id=scope.rack_id,
                rack=names.get(scope.rack_id, scope.rack_name),
                start=max(begins, start),
                end=finish,
                rollout=record.id,
                stage=stage,
            )


#: Where a bar past the calendar ends.
END_OF_TIME = datetime.max.replace(tzinfo=UTC)


def _later(at: datetime, delta: timedelta) -> datetime | None:
    """``at + delta``; None past what ``datetime`` holds (a stored estimate gone wild)."""
    try:
        return at + delta
    except OverflowError:
        return None


class _Held:
    """Which freeze holds a firing (:func:`rackcron.domain.freezes.holding`), asked in time order:
    each freeze's windows in ``[start, end)`` are walked forward once, where ``holding``
    computed a window afresh per firing and freeze (100 freezes and 20,000 firings: 22 s)."""

    def __init__(self, freezes: Sequence[Freeze], start: datetime, end: datetime) -> None:
        self._freezes = freezes
        self._windows = [windows(f, start, end) for f in freezes]
        self._current: list[tuple[datetime, datetime] | None] = [
            next(w, None) for w in self._windows
        ]
        self._at = start

    def by(self, target: Target, at: datetime) -> Freeze | None:
        """The first freeze (in the order given) open at ``at`` that holds ``target``."""
        assert at >= self._at, "firings are asked in time order"
        self._at = at
        for index, freeze in enumerate(self._freezes):
            if matches(freeze.selector, target) and self._open(index, at):
                return freeze
        return None

    def _open(self, index: int, at: datetime) -> bool:
        window = self._current[index]
        while window is not None and window[1] <= at:  # ended: every later one starts later
            window = next(self._windows[index], None)
        self._current[index] = window
        return window is not None and window[0] <= at


class _Meetings:
    """Where each scope's task would stand and look (:func:`meeting_points`), asked per
    rack, operation type and filter. Points name components by their place on their rack,
    their type and rank among that type (bars meet only on one rack), so racks of the same
    make share one answer: a fleet-wide schedule's 5,000 racks cost one, not 5,000 sets of
    points."""

    def __init__(self, on_rack: Mapping[uuid.UUID, list[tuple[str, str]]]) -> None:
        self._on_rack = on_rack
        self._by_scope: dict[tuple[uuid.UUID, str, ComponentFilter | None], _Meets | None] = {}
        self._by_layout: dict[tuple[str, frozenset[tuple[str, str]]], _Meets] = {}

    def of(
        self, rack_id: uuid.UUID, kind: str, component_filter: ComponentFilter | None
    ) -> _Meets | None:
        """None when the filter matches none of the rack's components (nothing submitted)."""
        key = (rack_id, kind, component_filter)
        if key not in self._by_scope:
            self._by_scope[key] = self._find(self._on_rack.get(rack_id, []), kind, component_filter)
        return self._by_scope[key]

    def _find(
        self, components: list[tuple[str, str]], kind: str, component_filter: ComponentFilter | None
    ) -> _Meets | None:
        chosen = select_components(component_filter, components)
        if chosen is None:
            return None
        place, seen = {}, Counter[str]()
        for c, t in components:  # a component's place: its type and rank among that type
            place[c] = (f"{t}.{seen[t]}", t)
            seen[t] += 1
        layout = (kind, frozenset(place[c] for c in chosen))
        if layout not in self._by_layout:
            self._by_layout[layout] = meeting_points(TaskShape(kind, dict(layout[1])))
        return self._by_layout[layout]


def _mark_conflicts(bars: list[Bar], meets: Sequence[_Meets]) -> list[Bar]:
    """``bars`` with ``conflicts_with`` set, rack by rack (:func:`_sweep`)."""
    by_rack: dict[uuid.UUID, list[int]] = {}
    for i, bar in enumerate(bars):
        by_rack.setdefault(bar.rack_id, []).append(i)
    found = _Conflicts()
    for indexes in by_rack.values():
        _sweep(bars, sorted(indexes, key=lambda i: bars[i].start), meets, found)
    return [found.mark(i, bar) for i, bar in enumerate(bars)]


class _Conflicts:
    """The schedules each bar conflicts with: up to :data:`MAX_CONFLICT_NAMES`, then
    only that there are more (the bar is then full: its sweeps stop for it)."""

    def __init__(self) -> None:
        self.names: dict[int, set[str]] = {}
        self.full: set[int] = set()

    def add(self, i: int, name: str) -> bool:
        """Records that bar ``i`` conflicts with schedule ``name``; whether it is full."""
        names = self.names.setdefault(i, set())
        if name not in names:
            if len(names) < MAX_CONFLICT_NAMES:
                names.add(name)
            else:
                self.full.add(i)
        return i in self.full

    def mark(self, i: int, bar: Bar) -> Bar:
        if i not in self.names:
            return bar
        return replace(
            bar, conflicts_with=tuple(sorted(self.names[i])), conflicts_more=i in self.full
        )


def _sweep(bars: list[Bar], indexes: list[int], meets: Sequence[_Meets], found: _Conflicts) -> None:
    """Adds to ``found`` the schedules each of one rack's bars (``indexes``, by start)
    conflicts with.

    A bar conflicts with schedule S when one of S's bars that would conflict overlaps it:
    either that bar was running when this one started (the forward sweep: S's latest such
    bar so far, since one schedule's bars on a rack are all as long), or it starts while
    this one runs (the backward sweep: S's earliest such bar from here on). Each sweep
    holds the bars it has seen in groups (:func:`_groups`), and a bar walks, until it is
    full, only the groups it conflicts with whose latest bar overlaps it: a group that
    does not is set aside for the bars that look as this one does (their bars are as long,
    so it overlaps none of them either) until a bar joins it. So a bar costs a step per
    schedule it conflicts with (at most 11) and one per group it walks, and a bar joining
    a group one step for each view that had set it aside: not one per running bar (20
    schedules firing every second on one rack took minutes), nor one per overlapping
    schedule (800 power-ons in lockstep, each on its own component, were 639,200
    comparisons and 45 s for no conflict), nor one per place it looks (19 whole-rack
    power-ons beside one per component, on 144 components: 11 s). What still costs more
    is in docs/benchmarks.md "`bench/console.py`: the web console's timeline"."""
    longest = max(bars[i].end - bars[i].start for i in indexes)
    group, views = _groups(bars, indexes, meets)
    owner: dict[uuid.UUID, int] = {}  # schedule -> a number, for cheap keys

    def ended(at: datetime, j: int) -> bool:
        return bars[j].end <= at

    def starts_after(at: datetime, j: int) -> bool:
        return bars[j].start >= at

    seen = _Seen(views)
    for i in indexes:
        into, view = group[_kind(bars, meets, i)]
        gone = partial(ended, bars[i].start)  # and so for every later bar
        _note(bars, i, seen.meet(view, gone, gone), found)
        seen.put(i, owner.setdefault(bars[i].schedule_id, len(owner)), into)
    seen = _Seen(views)
    for i in reversed(indexes):
        into, view = group[_kind(bars, meets, i)]
        if i not in found.full:
            # What starts ``longest`` after this bar, starts after it and every earlier one end.
            gone = partial(starts_after, bars[i].start + longest)
            _note(bars, i, seen.meet(view, gone, partial(starts_after, bars[i].end)), found)
        seen.put(i, owner[bars[i].schedule_id], into)


def _note(bars: list[Bar], i: int, walks: Iterable[Iterator[int]], found: _Conflicts) -> None:
    """Adds to ``found`` the schedules of the bars ``walks`` meet that overlap bar ``i``,
    until it is full. A walk goes from the bar nearest ``i`` away from it: backward, the
    first that starts after ``i`` ends ends the walk (forward, all overlap it)."""
    bar = bars[i]
    for walk in walks:
        for j in walk:
            if bars[j].start >= bar.end:
                break
            if bars[j].schedule_id != bar.schedule_id and found.add(i, bars[j].schedule):
                return  # full


def _kind(bars: list[Bar], meets: Sequence[_Meets], i: int) -> tuple[int, timedelta]:
    """Bar ``i``'s kind in a sweep: its meet (by identity: the scopes of one make and
    operation type share one, :class:`_Meetings`) and its length (a schedule's bars all
    last as long; two schedules sharing a meet may not)."""
    return id(meets[i]), bars[i].end - bars[i].start


def _groups(
    bars: list[Bar], indexes: list[int], meets: Sequence[_Meets]
) -> tuple[dict[tuple[int, timedelta], tuple[int | None, int]], list[tuple[int, ...]]]:
    """Where one rack's bars go in a sweep, and which groups each meets: by kind
    (:func:`_kind`), the group its bars join (None: nobody looks where they stand) and its
    view (an index into the list returned: the groups it looks at).

    Bars whose tasks stand at the same places (of those some task looks at) and last as
    long form a group: a bar looking at a place then meets its groups, each once, and
    within a group the bars end in the order they started. Meets that look at the same
    places share a view when their bars last as long (a group of no use to one bar of a
    view is then of no use to the view's next bars: :meth:`_Seen.meet`).
    """
    distinct = {_kind(bars, meets, i): (meets[i], bars[i].end - bars[i].start) for i in indexes}
    looked = set().union(*(looks for (_, looks), _ in distinct.values()))
    numbers: dict[tuple[frozenset[Point], timedelta], int] = {}
    into: dict[tuple[int, timedelta], int | None] = {}
    at: dict[Point, set[int]] = {}  # place -> the groups standing there
    for key, ((stands, _), length) in distinct.items():
        places = stands & looked
        if not places:
            into[key] = None
            continue
        number = into[key] = numbers.setdefault((places, length), len(numbers))
        for place in places:
            at.setdefault(place, set()).add(number)
    views: dict[tuple[frozenset[int], timedelta], int] = {}
    seen: dict[frozenset[Point], frozenset[int]] = {}  # looks -> groups, for meets that look alike
    group: dict[tuple[int, timedelta], tuple[int | None, int]] = {}
    for key, ((_, looks), length) in distinct.items():
        if looks not in seen:
            seen[looks] = frozenset().union(*(at[p] for p in looks if p in at))
        group[key] = (into[key], views.setdefault((seen[looks], length), len(views)))
    return group, [tuple(sorted(groups)) for groups, _ in views]


class _Seen:
    """The bars a sweep has seen, by group (:func:`_groups`): in each, each schedule's last
    seen bar there, in the order seen (a schedule firing every second is one entry). A
    group is dropped from a view once a walk finds nothing in it for the view, until a bar
    joins it again: a bar walks only groups that may hold a bar for it."""

    def __init__(self, views: Sequence[tuple[int, ...]]) -> None:
        self._in: dict[int, OrderedDict[int, int]] = {}  # group -> schedule -> order seen
        self._bars: list[int] = []  # bar by the order seen
        self._views = [set(groups) for groups in views]  # view -> groups it may find bars in
        self._dropped: dict[int, list[int]] = {}  # group -> views that dropped it

    def put(self, bar: int, schedule: int, group: int | None) -> None:
        if group is None:
            return
        there = self._in.setdefault(group, OrderedDict())
        there[schedule] = len(self._bars)
        there.move_to_end(schedule)
        self._bars.append(bar)
        for view in self._dropped.pop(group, ()):
            self._views[view].add(group)

    def meet(
        self, view: int, gone: Callable[[int], bool], idle: Callable[[int], bool]
    ) -> Iterator[Iterator[int]]:
        """A walk per group of ``view``, over its bars last seen first. A group's oldest
        bars that are ``gone`` (for every bar from here on; and so are all older ones) are
        dropped first, and a group left empty, or whose last seen bar is ``idle`` (of no
        use to the view's bars from here on), is dropped from the view."""
        groups = self._views[view]
        for group in tuple(groups):
            there = self._in.get(group)
            while there and gone(self._bars[next(iter(there.values()))]):
                there.popitem(last=False)
            if there and not idle(self._bars[next(reversed(there.values()))]):
                yield map(self._bars.__getitem__, reversed(there.values()))
            else:
                groups.discard(group)
                self._dropped.setdefault(group, []).append(view)


def _freeze_windows(
    freezes: Sequence[Freeze], racks: Sequence[Rack], start: datetime, end: datetime
) -> Iterable[FreezeWindow]:
    for freeze in freezes:
        held = frozenset(r.id for r in racks if selects_rack(freeze.selector, r.name, r.labels))
        holds = ", ".join(freeze.selector.operations) or "every operation"
        for begin, finish in islice(windows(freeze, start, end), MAX_FIRES_PER_SCHEDULE):
            yield FreezeWindow(freeze.name, begin, finish, held, holds)
