"""The precise check: the coarse pairs that can really collide, each with its first collision.

A pair is kept when, on a rack both scopes name, the tasks they would submit there
conflict by the task manager's table (*where*: ``rackcron.domain.task_conflicts``, over
their operation types and the components they cover through the inventory) and,
within the horizon, a firing of one overlaps a firing of the other (*when*), each
firing assumed to keep its components busy for its operation's duration
(:data:`DEFAULT_DURATIONS`, which the caller may override per operation in
:data:`OPERATIONS`). Fire times are shared by schedules with the same spec and
start, and asked for only for pairs whose tasks conflict.

It also lists the declared fire times within the horizon that a freeze will hold
(``_freezes``): the tree's freezes and, with the store, the stored ones an apply
keeps.

Every pair sharing a rack is compared, and N schedules on one rack are
N*(N-1)/2 pairs, so the check has a work budget: after ``max_pairs`` pairs
(:data:`MAX_PAIRS` by default) it stops and says so: the report is not
``complete``, its count is a lower bound, and it carries how many pairs sharing a
rack were not compared (:class:`~rackcron.reconciler.conflicts._report.Unchecked`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from rackcron.domain import timing
from rackcron.domain.filters import ComponentFilter
from rackcron.domain.freezes import unevaluable
from rackcron.domain.task_conflicts import ConflictRow, TaskShape, conflicting_row
from rackcron.domain.templates import operation_times, to_template
from rackcron.domain.upcoming import EXPECTED_DURATIONS
from rackcron.reconciler.conflicts._coarse import (
    RackComponents,
    StoreView,
    Subject,
    build_inventory,
    compared_subjects,
    pair_count,
    sharing_pairs,
)
from rackcron.reconciler.conflicts._freezes import Firer, held_firings
from rackcron.reconciler.conflicts._report import (
    MAX_LISTED,
    Collision,
    ConflictReport,
    PredictedConflict,
    PredictedFiring,
    Unchecked,
)
from rackcron.reconciler.conflicts._times import (
    MICROSECOND,
    Times,
    first_overlap,
    instant,
    micros,
)

if TYPE_CHECKING:
    from rackcron.domain.models import Freeze
    from rackcron.reconciler.declared import Declared

OPERATIONS = ("power_on", "power_off", "power_reset", "bring_up", "ingest", "upgrade_firmware")
# How long an operation is assumed to keep its components busy once fired: the same the
# timeline draws (rackcron.domain.upcoming).
DEFAULT_DURATIONS: Mapping[str, timedelta] = EXPECTED_DURATIONS
DEFAULT_HORIZON = timedelta(days=14)
#: Pairs sharing a rack a precise check compares before it stops (about a second's work).
MAX_PAIRS = 200_000


def _firing(subject: Subject, start: int, length: int, at: datetime) -> PredictedFiring:
    assert subject.spec is not None  # only a schedule that fires has a firing
    begin = instant(start)
    zone = subject.spec.timezone.key if isinstance(subject.spec, timing.Cron) else "UTC"
    return PredictedFiring(
        start=begin,
        end=instant(start + length),
        zone=zone,
        local_start=timing.describe_local(subject.spec, begin),
        local_at=timing.describe_local(subject.spec, at),
    )


def _durations(overrides: Mapping[str, timedelta] | None) -> dict[str, timedelta]:
    durations = {**DEFAULT_DURATIONS, **(overrides or {})}
    for operation, length in durations.items():
        if length <= timedelta(0):
            raise ValueError(f"duration of {operation} must be positive, got {length}")
    return durations


def precise_conflicts(
    declared: Declared,
    store: StoreView | None = None,
    *,
    now: datetime,
    horizon: timedelta = DEFAULT_HORIZON,
    durations: Mapping[str, timedelta] | None = None,
    owner: str | None = None,
    max_pairs: int = MAX_PAIRS,
) -> ConflictReport:
    """Pairs whose tasks conflict on a shared rack and whose firings overlap in time.

    At most ``max_pairs`` pairs sharing a rack are compared; past that the report
    is incomplete (``unchecked``) and its count a lower bound.

    ``durations`` overrides :data:`DEFAULT_DURATIONS` per operation; an operation
    not listed (a stored one rackcron does not know) is given the longest.

    :raises ValueError: ``now`` is naive, the horizon or a duration is not positive, or
        ``max_pairs`` is below 1.
    """
    if max_pairs < 1:
        raise ValueError(f"max_pairs must be at least 1, got {max_pairs}")
    if now.tzinfo is None:
        raise ValueError(f"now must be timezone-aware, got naive {now.isoformat()}")
    now = now.astimezone(UTC)
    if horizon <= timedelta(0):
        raise ValueError(f"horizon must be positive, got {horizon}")
    lengths = _durations(durations)
    longest = max(lengths.values())
    end = now + horizon
    inventory = build_inventory(declared, store)
    mine, others = compared_subjects(declared, store, owner)
    # Per subject (by identity), then per distinct (spec, start): many schedules share a spec.
    by_spec: dict[tuple[timing.Spec | None, datetime | None, bool, timing.Spread, str], Times] = {}
    times: dict[int, Times] = {}
    covers: dict[int, dict[uuid.UUID, frozenset[uuid.UUID]]] = {}

    def fire_times(subject: Subject) -> Times:
        if id(subject) not in times:
            # A jitter depends on the name: such a schedule shares its times with none.
            name = subject.party.name if subject.spread.jitter else ""
            key = (subject.spec, subject.start, subject.fires, subject.spread, name)
            if key not in by_spec:
                by_spec[key] = Times(*key[:3], now, end, subject.spread, name)
            times[id(subject)] = by_spec[key]
        return times[id(subject)]

    # One set per distinct scope entry, one intersection per pair of sets: the budget counts
    # pairs, and N schedules with the same entry on a rack of many components must not cost
    # N*(N-1)/2 set intersections of that size.
    entries: dict[tuple[uuid.UUID, ComponentFilter | None], frozenset[uuid.UUID]] = {}
    meets: dict[tuple[int, int], frozenset[uuid.UUID]] = {}

    def covered(subject: Subject) -> dict[uuid.UUID, frozenset[uuid.UUID]]:
        if id(subject) not in covers:
            for entry in subject.scope:
                if entry not in entries:
                    entries[entry] = inventory.covered(*entry)
            covers[id(subject)] = {r: entries[(r, f)] for r, f in subject.scope}
        return covers[id(subject)]

    # What each scope entry would submit, by operation type, and each pair's verdict.
    works: dict[tuple[uuid.UUID, ComponentFilter | None, str], TaskShape | None] = {}
    by_subject: dict[int, dict[uuid.UUID, TaskShape | None]] = {}
    rows: dict[tuple[int, int], ConflictRow | None] = {}

    def work(subject: Subject, rack: uuid.UUID) -> TaskShape | None:
        if id(subject) not in by_subject:
            for r, f in subject.scope:
                if (r, f, subject.kind) not in works:
                    works[r, f, subject.kind] = inventory.work(r, f, subject.kind)
            by_subject[id(subject)] = {r: works[r, f, subject.kind] for r, f in subject.scope}
        return by_subject[id(subject)][rack]

    def rule(x: TaskShape | None, y: TaskShape | None) -> ConflictRow | None:
        if x is None or y is None:
            return None
        key = (id(x), id(y))
        if key not in rows:
            rows[key] = conflicting_row(x, y)
        return rows[key]

    def meet(x: frozenset[uuid.UUID], y: frozenset[uuid.UUID]) -> frozenset[uuid.UUID]:
        key = (id(x), id(y))
        if key not in meets:
            meets[key] = x & y
        return meets[key]

    def length(subject: Subject) -> int:
        return lengths.get(subject.party.operation, longest) // MICROSECOND

    # Pairs of the same fire times and lengths meet at the same instants: N schedules of
    # one spec on one rack are N*(N-1)/2 pairs but one overlap to compute.
    overlaps: dict[tuple[int, int, int, int], tuple[int, int, int] | None] = {}
    since = micros(now)
    conflicts: list[PredictedConflict] = []
    total = compared = 0
    unchecked: Unchecked | None = None
    for a, b, racks in sharing_pairs(mine, others):
        if compared == max_pairs:  # another pair is waiting: the check stops unfinished
            left = pair_count(mine, others)
            unchecked = Unchecked(
                max(left.total - compared, 1), left.exact, compared, stopped_at=a.party
            )
            break
        compared += 1
        mine_covers, their_covers = covered(a), covered(b)
        meeting = [
            (rack, meet(mine_covers[rack], their_covers[rack]), row)
            for rack in racks
            if (row := rule(work(a, rack), work(b, rack)))
        ]
        if not meeting:
            continue
        times_a, times_b = fire_times(a), fire_times(b)
        key = (id(times_a), length(a), id(times_b), length(b))
        if key not in overlaps:
            overlaps[key] = first_overlap(times_a, key[1], times_b, key[3], since)
        hit = overlaps[key]
        if hit is None:
            continue
        total += 1
        if len(conflicts) >= MAX_LISTED:
            continue  # counted, not listed
        at = instant(hit[0])
        firings = (_firing(a, hit[1], length(a), at), _firing(b, hit[2], length(b), at))
        shared = tuple(inventory.shared(rack, both, str(row)) for rack, both, row in meeting)
        conflicts.append(PredictedConflict(a.party, b.party, shared, Collision(at, firings)))
    firers, freezes = _firers(mine, declared, inventory), _freezes(declared, store, owner)
    held = held_firings(firers, freezes, now=now, horizon=horizon)
    return ConflictReport(
        mode="precise",
        conflicts=tuple(conflicts),
        declared=len(mine),
        stored=len(others) if store else None,
        now=now,
        horizon=horizon,
        durations=lengths,
        total=total,
        exact=unchecked is None,
        unchecked=unchecked,
        held=held,
    )


def _firers(mine: list[Subject], declared: Declared, inventory: RackComponents) -> list[Firer]:
    """The declared schedules compared, as the freeze check sees them."""
    labels = {s.name: s.labels for s in declared.schedules}
    own = {
        s.name: operation_times(s.template or to_template(s.operation)) for s in declared.schedules
    }
    firers = []
    for subject in mine:
        assert subject.spec is not None  # a declared schedule's spec is valid
        party = subject.party
        racks = tuple(
            (inventory.rack_name(r), inventory.rack_labels.get(r, {}))
            for r in dict.fromkeys(subject.racks)
        )
        firer = Firer(
            name=party.name,
            spec=subject.spec,
            operation=party.operation,
            labels=labels.get(party.name, {}),
            racks=racks,
            start=subject.start,
            fires=subject.fires,
            source=party.source,
            line=party.line,
            times=own[party.name],
        )
        firers.append(firer)
    return firers


def _freezes(declared: Declared, store: StoreView | None, owner: str | None) -> list[Freeze]:
    """The freezes after an apply: the declared ones, and the stored ones it keeps (but
    those this host cannot evaluate: ``rackcron.domain.freezes.unevaluable``)."""
    names = {f.name for f in declared.freezes}
    kept = [
        f
        for f in (store.freezes if store else ())
        if f.name not in names
        and not (owner is not None and f.management.owner == owner and not f.management.protect)
        and unevaluable(f) is None
    ]
    return sorted([f.freeze for f in declared.freezes] + kept, key=lambda f: f.name)
