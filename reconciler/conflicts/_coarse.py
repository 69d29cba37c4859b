"""What the check compares, and the coarse check: every pair of schedules sharing a rack.

The caller reads the store into a :class:`StoreView`; with the declared tree it
gives the inventory (:class:`RackComponents`, turning a scope entry into the set of
components it covers) and the schedules compared (:class:`Subject`: the enabled
declared ones, and the stored ones the tree does not declare and an apply would
not delete). :func:`sharing_pairs` yields each pair sharing a rack once, a declared
schedule first; :func:`coarse_conflicts` reports them all, as the service's
CheckScheduleConflicts would, and the precise check filters the same pairs. N
schedules on one rack are N*(N-1)/2 pairs: a report lists the first
:data:`~rackcron.reconciler.conflicts._report.MAX_LISTED` and counts the rest
(:func:`pair_count`, linear: ``_count``) without making them.
"""

from __future__ import annotations

import bisect
import itertools
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from rackcron.domain import timing
from rackcron.domain.filters import ComponentFilter
from rackcron.domain.task_conflicts import OPERATION_KINDS, TaskShape
from rackcron.reconciler.conflicts._count import PairCount, count_pairs
from rackcron.reconciler.conflicts._report import (
    MAX_LISTED,
    ConflictReport,
    Party,
    PredictedConflict,
    SharedComponent,
    SharedRack,
)

if TYPE_CHECKING:
    from rackcron.domain.models import Component, Freeze, Rack, Schedule
    from rackcron.reconciler.declared import Declared

ScopeEntry = tuple[uuid.UUID, ComponentFilter | None]


# --- inputs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredSchedule:
    """A stored schedule with its scope (rack, filter) entries in scope order."""

    schedule: Schedule
    scope: tuple[ScopeEntry, ...]


@dataclass(frozen=True)
class StoreView:
    """What the check reads from the store: every schedule with its scope, the inventory,
    and the freezes."""

    schedules: tuple[StoredSchedule, ...] = ()
    racks: tuple[Rack, ...] = ()
    components: tuple[Component, ...] = ()
    freezes: tuple[Freeze, ...] = ()


# --- inventory ---------------------------------------------------------------------------------


class RackComponents:
    """Rack names and the components of each rack, to turn scope entries into component sets."""

    def __init__(self, racks: Iterable[Rack], components: Iterable[Component]) -> None:
        racks = list(racks)
        self.rack_names = {r.id: r.name for r in racks}
        self.rack_labels = {r.id: r.labels for r in racks}
        self.by_rack: dict[uuid.UUID, list[Component]] = {}
        self.names: dict[uuid.UUID, str] = {}
        self.types: dict[uuid.UUID, str] = {}
        self.position: dict[uuid.UUID, int] = {}  # inventory order, for listing
        for c in components:
            if c.rack_id is not None:
                self.by_rack.setdefault(c.rack_id, []).append(c)
            self.names[c.id] = c.name or c.external_id or str(c.id)
            self.types[c.id] = c.type.value
            self.position[c.id] = len(self.position)

    def rack_name(self, rack_id: uuid.UUID) -> str:
        return self.rack_names.get(rack_id, str(rack_id))

    def covered(self, rack_id: uuid.UUID, filt: ComponentFilter | None) -> frozenset[uuid.UUID]:
        """What a scope entry covers; the rack's own id stands for "the whole rack"."""
        members = self.by_rack.get(rack_id, [])
        if filt is None:
            return frozenset([rack_id, *(c.id for c in members)])
        if filt.kind == "types":
            return frozenset(c.id for c in members if c.type.value in filt.items)
        return frozenset(uuid.UUID(item) for item in filt.items)

    def work(self, rack_id: uuid.UUID, filt: ComponentFilter | None, kind: str) -> TaskShape | None:
        """A task a scope entry would submit, as the conflict table sees it; None when its
        filter matches no component (the task manager would refuse it)."""
        covered = self.covered(rack_id, filt) - {rack_id}
        if filt is not None and not covered:
            return None
        return TaskShape(kind, {str(c): self.types.get(c, "UNKNOWN") for c in covered})

    def shared(
        self, rack_id: uuid.UUID, both: frozenset[uuid.UUID], rule: str | None = None
    ) -> SharedRack:
        """The rack entry for what two scope entries both cover there (``rule``: the row
        of the conflict table that makes them collide)."""
        unknown = len(self.position)
        parts = sorted(both - {rack_id}, key=lambda c: (self.position.get(c, unknown), c.int))
        return SharedRack(
            rack_id,
            self.rack_name(rack_id),
            whole_rack=rack_id in both,
            components=tuple(SharedComponent(c, self.names.get(c) or str(c)) for c in parts),
            rule=rule,
        )


def build_inventory(declared: Declared, store: StoreView | None) -> RackComponents:
    """The declared inventory; racks only the store knows are added from it."""
    racks, components = list(declared.racks), list(declared.components)
    if store is not None:
        known = {r.id for r in racks}
        racks += [r for r in store.racks if r.id not in known]
        components += [c for c in store.components if c.rack_id not in known]
    return RackComponents(racks, components)


# --- subjects: the schedules compared ----------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    party: Party
    kind: str  # its tasks' operation type (``rackcron.domain.task_conflicts.Kind``), or the stored one
    spec: timing.Spec | None  # None: a stored spec this host cannot evaluate (never fires here)
    scope: tuple[ScopeEntry, ...]
    start: datetime | None = None  # the store's next_run_at: an interval's phase, a one-time due
    fires: bool = True  # False: a one-time schedule the store shows as already fired
    spread: timing.Spread = timing.NO_SPREAD  # its anchor and jitter

    @property
    def racks(self) -> list[uuid.UUID]:
        return [rack for rack, _ in self.scope]


def _same_spec(stored: Schedule, spec_type: str, spec: str, timezone: str) -> bool:
    return (stored.spec_type.value, stored.spec, stored.timezone or "UTC") == (
        spec_type,
        spec,
        timezone or "UTC",
    )


def compared_subjects(
    declared: Declared, store: StoreView | None, owner: str | None
) -> tuple[list[Subject], list[Subject]]:
    """The enabled declared schedules, and the stored ones compared with them."""
    stored_by_name = {s.schedule.name: s for s in store.schedules} if store else {}
    mine: list[Subject] = []
    for item in declared.schedules:
        if not item.enabled:
            continue
        config = item.config
        spec_type = item.spec_type.value
        party = Party(
            name=item.name,
            origin="declared",
            operation=item.operation.kind,
            spec_type=spec_type,
            spec=config.spec,
            timezone=config.timezone or "UTC",
            source=item.source,
            line=item.line,
        )
        start, fires = None, True
        twin = stored_by_name.get(item.name)
        if twin and _same_spec(twin.schedule, spec_type, config.spec, config.timezone):
            if twin.schedule.consumed:
                fires = False
            elif twin.schedule.enabled:
                start = twin.schedule.next_run_at
        spec = timing.parse_spec(spec_type, config.spec, config.timezone)
        kind = OPERATION_KINDS[item.operation.kind].value
        anchor = timing.parse_rfc3339(item.anchor) if item.anchor else None
        spread = timing.stored_spread(anchor, item.jitter)
        mine.append(Subject(party, kind, spec, tuple(item.scope), start, fires, spread))
    names = {s.name for s in declared.schedules}
    others: list[Subject] = []
    for stored in store.schedules if store else ():
        schedule, management = stored.schedule, stored.schedule.management
        deleted_by_apply = (
            owner is not None and management.owner == owner and not management.protect
        )
        if not schedule.enabled or schedule.name in names or deleted_by_apply:
            continue
        party = Party(
            name=schedule.name,
            origin="store",
            operation=schedule.operation_type.lower(),
            spec_type=schedule.spec_type.value,
            spec=schedule.spec,
            timezone=schedule.timezone or "UTC",
            owner=management.owner,
        )
        try:
            parsed: timing.Spec | None = timing.parse_spec(
                schedule.spec_type, schedule.spec, schedule.timezone
            )
        except timing.SpecError:  # e.g. a time zone this host's tzdata does not have
            parsed = None
        kind = schedule.template.type if schedule.template else party.operation
        try:
            spread = schedule.spread
        except timing.SpecError:  # a jitter rackcron did not write: as none
            spread = timing.NO_SPREAD
        subject = Subject(party, kind, parsed, stored.scope, schedule.next_run_at, spread=spread)
        others.append(subject)
    return mine, others


def sharing_pairs(
    mine: list[Subject], others: list[Subject]
) -> Iterator[tuple[Subject, Subject, list[uuid.UUID]]]:
    """Each pair sharing a rack once, with the racks shared (in ``a``'s scope order).

    ``a`` is declared; pairs of two stored schedules are not the tree's business.
    Lazy, and each step costs what it yields: a schedule's partners are the tails
    of its racks' (sorted) member lists past it, so a caller that stops early
    (the first :data:`MAX_LISTED`, or a work budget) never pays for the rest.
    """
    subjects = mine + others
    by_rack: dict[uuid.UUID, list[int]] = {}
    for index, subject in enumerate(subjects):
        for rack in dict.fromkeys(subject.racks):  # a rack twice in one scope: once
            by_rack.setdefault(rack, []).append(index)
    for i, a in enumerate(mine):
        racks = list(dict.fromkeys(a.racks))
        tails = [by_rack[rack][bisect.bisect_right(by_rack[rack], i) :] for rack in racks]
        partners = tails[0] if len(tails) == 1 else sorted({j for tail in tails for j in tail})
        for j in partners:
            b = subjects[j]
            theirs = set(b.racks)
            yield a, b, [rack for rack in racks if rack in theirs]


def pair_count(mine: list[Subject], others: list[Subject]) -> PairCount:
    """How many pairs :func:`sharing_pairs` yields, without making them (``_count``)."""
    flagged = [(s.racks, True) for s in mine] + [(s.racks, False) for s in others]
    return count_pairs(flagged)


# --- coarse ------------------------------------------------------------------------------------


def coarse_conflicts(
    declared: Declared, store: StoreView | None = None, *, owner: str | None = None
) -> ConflictReport:
    """CheckScheduleConflicts for every enabled declared schedule: pairs sharing a rack.

    ``store``: also compare the stored schedules the tree does not declare (except
    those ``owner`` manages unprotected: an apply deletes them).
    """
    inventory = build_inventory(declared, store)
    mine, others = compared_subjects(declared, store, owner)
    conflicts = tuple(
        PredictedConflict(
            a.party, b.party, tuple(SharedRack(r, inventory.rack_name(r)) for r in racks)
        )
        for a, b, racks in itertools.islice(sharing_pairs(mine, others), MAX_LISTED)
    )
    counted = pair_count(mine, others)
    return ConflictReport(
        mode="coarse",
        conflicts=conflicts,
        declared=len(mine),
        stored=len(others) if store else None,
        total=max(counted.total, len(conflicts)),
        exact=counted.exact,
    )
