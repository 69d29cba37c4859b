"""Conflict checks: which schedules can act on the same racks, and when.

Two levels, both advisory (a conflict never blocks anything):

* **coarse** asks the service's CheckScheduleConflicts question (SEMANTICS.md,
  "RPCs") for every enabled declared schedule: every other enabled schedule with
  a scope entry on one of its racks is a conflict. Component filters, operation
  types and times are not compared.
* **precise** keeps only the pairs that can actually collide, judged on two axes:

  1. *where*: on a rack both scopes name, their component sets intersect,
     computed through the inventory. No filter covers the whole rack (every
     component of it, and the rack itself, so two whole-rack operations meet
     even on a rack that declares no components); a ``types`` filter covers the
     rack's components of those types; a ``components`` filter those components.
  2. *when*: within a horizon ``[now, now + horizon)``, a firing of one overlaps
     a firing of the other, each firing occupying ``[fire time, fire time +
     assumed duration of its operation)``. Operation types are not compared:
     a power-off in the middle of a firmware upgrade is the collision this is
     for. The first collision is the earliest instant at which both run.

Fire times are the service's own (``rackcron.timing.first_run`` and
``next_after``) from ``now``: a declared schedule fires as if created at ``now``
(interval: ``now + d``). An interval or ``@every`` schedule's phase is set by its
last firing, so when the store holds it enabled with the same spec it keeps the
phase of the stored ``next_run_at``: it fires at ``next_run_at + k*d``, the first
such time at or after ``now``. A one-time instant before ``now`` is taken as
already fired, unless the store holds it unfired (then it is due at ``now``); one
the store shows as fired never fires again.

The stored schedules compared are the enabled ones the tree does not declare,
minus those this repository owns without protection: the next apply deletes
them. A declared schedule always wins over a stored one of the same name.

Fire times are never listed minute by minute (:class:`_Times`): interval and
``@every`` schedules are a ``range`` of integer microseconds, so a one-second
interval costs nothing; a cron schedule's firings are listed lazily, and past
the listed prefix asked for directly ("the first match after t"). A pair's
first collision leaps from one firing of the sparser side to the next
(:func:`_first_overlap`), or walks the shorter of two complete lists and bisects
the other. Fire times are shared by schedules with the same (spec, start) and
asked for only for pairs whose components intersect.

Everything here is pure: ``now`` is a parameter, and the caller reads the store
into a :class:`StoreView`. Reports are frozen values; :meth:`ConflictReport.to_json`
is the documented ``rackcron.conflicts/v1`` form, and the text and diagnostic
renderings are made from it.
"""

from __future__ import annotations

import json
import uuid
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from rackcron import timing
from rackcron.filters import ComponentFilter
from reconciler.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:
    from rackcron.models import Component, Rack, Schedule
    from reconciler.declared import Declared

__all__ = [
    "DEFAULT_DURATIONS",
    "DEFAULT_HORIZON",
    "FORMAT",
    "FORMAT_VERSION",
    "OPERATIONS",
    "Collision",
    "Conflict",
    "ConflictReport",
    "Firing",
    "Party",
    "SharedComponent",
    "SharedRack",
    "StoreView",
    "StoredSchedule",
    "coarse_conflicts",
    "format_duration",
    "precise_conflicts",
    "render_json",
    "render_text",
    "to_diagnostics",
]

FORMAT = "rackcron.conflicts/v1"
FORMAT_VERSION = "1.0"

OPERATIONS = ("power_on", "power_off", "power_reset", "bring_up", "ingest", "upgrade_firmware")
# How long an operation is assumed to keep its components busy once fired.
DEFAULT_DURATIONS: Mapping[str, timedelta] = {
    "power_on": timedelta(minutes=10),
    "power_off": timedelta(minutes=10),
    "power_reset": timedelta(minutes=10),
    "bring_up": timedelta(hours=2),
    "ingest": timedelta(minutes=30),
    "upgrade_firmware": timedelta(hours=2),
}
DEFAULT_HORIZON = timedelta(days=14)

Mode = Literal["coarse", "precise"]
Origin = Literal["declared", "store"]
ScopeEntry = tuple[uuid.UUID, ComponentFilter | None]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


# --- inputs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredSchedule:
    """A stored schedule with its scope (rack, filter) entries in scope order."""

    schedule: Schedule
    scope: tuple[ScopeEntry, ...]


@dataclass(frozen=True)
class StoreView:
    """What the check reads from the store: every schedule with its scope, and the inventory."""

    schedules: tuple[StoredSchedule, ...] = ()
    racks: tuple[Rack, ...] = ()
    components: tuple[Component, ...] = ()


# --- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Party:
    """One schedule of a conflicting pair, and where it is declared (or that it is stored)."""

    name: str
    origin: Origin
    operation: str  # power_on, ..., upgrade_firmware (a stored unknown one: its operation_type)
    spec_type: str
    spec: str
    timezone: str
    source: str | None = None  # declared: the file
    line: int | None = None  # declared: the document's first line
    owner: str | None = None  # stored: the repository that manages it, if any

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "origin": self.origin,
            "operation": self.operation,
            "spec_type": self.spec_type,
            "spec": self.spec,
            "timezone": self.timezone,
            "source": self.source,
            "line": self.line,
            "owner": self.owner,
        }


@dataclass(frozen=True)
class SharedComponent:
    id: uuid.UUID
    name: str


@dataclass(frozen=True)
class SharedRack:
    """A rack both schedules target; precise checks add the components both cover there."""

    id: uuid.UUID
    name: str
    whole_rack: bool = False  # precise: both target the whole rack
    components: tuple[SharedComponent, ...] = ()  # precise: the components both cover

    def to_json(self, mode: Mode) -> dict[str, Any]:
        data: dict[str, Any] = {"id": str(self.id), "name": self.name}
        if mode == "precise":
            data["whole_rack"] = self.whole_rack
            data["components"] = [{"id": str(c.id), "name": c.name} for c in self.components]
        return data


@dataclass(frozen=True)
class Firing:
    """One firing of a schedule: when it starts and until when it is assumed to run (UTC)."""

    start: datetime
    end: datetime
    zone: str  # the schedule's zone for display: cron's (a CRON_TZ= prefix wins), else UTC
    local_start: datetime  # start in that zone
    local_at: datetime  # the collision instant in that zone


@dataclass(frozen=True)
class Collision:
    """The first instant both schedules run, and the firing of each running then."""

    at: datetime
    firings: tuple[Firing, Firing]


@dataclass(frozen=True)
class Conflict:
    """A pair of schedules, reported once; ``a`` is always declared."""

    a: Party
    b: Party
    racks: tuple[SharedRack, ...]
    collision: Collision | None = None  # precise only


@dataclass(frozen=True)
class ConflictReport:
    """The outcome of one check: what was compared and the conflicts found, in tree order."""

    mode: Mode
    conflicts: tuple[Conflict, ...]
    declared: int  # enabled declared schedules checked
    stored: int | None  # stored schedules compared; None: the store was not read
    now: datetime | None = None  # precise only
    horizon: timedelta | None = None  # precise only
    durations: Mapping[str, timedelta] = field(default_factory=dict)  # precise only

    def to_json(self) -> dict[str, Any]:
        """The documented ``rackcron.conflicts/v1`` form (docs/conflicts.md)."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "mode": self.mode,
            "with_store": self.stored is not None,
            "checked": {"declared": self.declared, "stored": self.stored or 0},
            "now": _utc(self.now) if self.now else None,
            "horizon": format_duration(self.horizon) if self.horizon else None,
            "durations": {k: format_duration(v) for k, v in self.durations.items()} or None,
            "count": len(self.conflicts),
            "conflicts": [_conflict_json(c, self.mode) for c in self.conflicts],
        }


def _utc(moment: datetime) -> str:
    return timing.format_rfc3339(moment)


def _local(moment: datetime) -> str:
    return f"{moment.isoformat()} {moment.tzname() or ''}".rstrip()


def _conflict_json(conflict: Conflict, mode: Mode) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schedules": [conflict.a.to_json(), conflict.b.to_json()],
        "racks": [r.to_json(mode) for r in conflict.racks],
    }
    if mode == "precise":
        hit = conflict.collision
        data["first_collision"] = hit and {
            "at": _utc(hit.at),
            "firings": [
                {
                    "schedule": party.name,
                    "start": _utc(firing.start),
                    "end": _utc(firing.end),
                    "zone": firing.zone,
                    "local_start": _local(firing.local_start),
                    "local_at": _local(firing.local_at),
                }
                for party, firing in zip((conflict.a, conflict.b), hit.firings, strict=True)
            ],
        }
    return data


def format_duration(value: timedelta) -> str:
    """A Go-style duration without zero parts: ``2h``, ``1h30m``, ``336h``, ``90s``, ``1.5s``."""
    micros = value // _MICROSECOND
    hours, micros = divmod(micros, 3_600_000_000)
    minutes, micros = divmod(micros, 60_000_000)
    seconds = f"{micros / 1_000_000:g}s" if micros else ""
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + seconds
    return text or "0s"


# --- inventory ---------------------------------------------------------------------------------


class _Inventory:
    """Rack names and the components of each rack, to turn scope entries into component sets."""

    def __init__(self, racks: Iterable[Rack], components: Iterable[Component]) -> None:
        self.rack_names = {r.id: r.name for r in racks}
        self.by_rack: dict[uuid.UUID, list[Component]] = {}
        self.names: dict[uuid.UUID, str] = {}
        self.position: dict[uuid.UUID, int] = {}  # inventory order, for listing
        for c in components:
            if c.rack_id is not None:
                self.by_rack.setdefault(c.rack_id, []).append(c)
            self.names[c.id] = c.name or c.external_id or str(c.id)
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

    def shared(self, rack_id: uuid.UUID, both: frozenset[uuid.UUID]) -> SharedRack:
        """The rack entry for what two scope entries both cover there."""
        unknown = len(self.position)
        parts = sorted(both - {rack_id}, key=lambda c: (self.position.get(c, unknown), c.int))
        return SharedRack(
            rack_id,
            self.rack_name(rack_id),
            whole_rack=rack_id in both,
            components=tuple(SharedComponent(c, self.names.get(c) or str(c)) for c in parts),
        )


def _inventory(declared: Declared, store: StoreView | None) -> _Inventory:
    """The declared inventory; racks only the store knows are added from it."""
    racks, components = list(declared.racks), list(declared.components)
    if store is not None:
        known = {r.id for r in racks}
        racks += [r for r in store.racks if r.id not in known]
        components += [c for c in store.components if c.rack_id not in known]
    return _Inventory(racks, components)


# --- subjects: the schedules compared ----------------------------------------------------------


@dataclass(frozen=True)
class _Subject:
    party: Party
    spec: timing.Spec | None  # None: a stored spec this host cannot evaluate (never fires here)
    scope: tuple[ScopeEntry, ...]
    start: datetime | None = None  # the store's next_run_at: an interval's phase, a one-time due
    fires: bool = True  # False: a one-time schedule the store shows as already fired

    @property
    def racks(self) -> list[uuid.UUID]:
        return [rack for rack, _ in self.scope]


def _same_spec(stored: Schedule, spec_type: str, spec: str, timezone: str) -> bool:
    return (stored.spec_type.value, stored.spec, stored.timezone or "UTC") == (
        spec_type,
        spec,
        timezone or "UTC",
    )


def _subjects(
    declared: Declared, store: StoreView | None, owner: str | None
) -> tuple[list[_Subject], list[_Subject]]:
    """The enabled declared schedules, and the stored ones compared with them."""
    stored_by_name = {s.schedule.name: s for s in store.schedules} if store else {}
    mine: list[_Subject] = []
    for item in declared.schedules:
        if not item.enabled:
            continue
        config = item.config
        spec_type = config.spec_type.value  # type: ignore[union-attr]
        party = Party(
            name=item.name, origin="declared", operation=item.operation.kind,
            spec_type=spec_type, spec=config.spec, timezone=config.timezone or "UTC",
            source=item.source, line=item.line,
        )  # fmt: skip
        start, fires = None, True
        twin = stored_by_name.get(item.name)
        if twin and _same_spec(twin.schedule, spec_type, config.spec, config.timezone):
            if twin.schedule.consumed:
                fires = False
            elif twin.schedule.enabled:
                start = twin.schedule.next_run_at
        spec = timing.parse_spec(spec_type, config.spec, config.timezone)
        mine.append(_Subject(party, spec, tuple(item.scope), start, fires))
    names = {s.name for s in declared.schedules}
    others: list[_Subject] = []
    for stored in store.schedules if store else ():
        schedule, management = stored.schedule, stored.schedule.management
        deleted_by_apply = (
            owner is not None and management.owner == owner and not management.protect
        )
        if not schedule.enabled or schedule.name in names or deleted_by_apply:
            continue
        party = Party(
            name=schedule.name, origin="store", operation=schedule.operation_type.lower(),
            spec_type=schedule.spec_type.value, spec=schedule.spec,
            timezone=schedule.timezone or "UTC", owner=management.owner,
        )  # fmt: skip
        try:
            spec: timing.Spec | None = timing.parse_spec(
                schedule.spec_type, schedule.spec, schedule.timezone
            )
        except timing.SpecError:  # e.g. a time zone this host's tzdata does not have
            spec = None
        others.append(_Subject(party, spec, stored.scope, schedule.next_run_at))
    return mine, others


def _pairs(
    mine: list[_Subject], others: list[_Subject]
) -> Iterable[tuple[_Subject, _Subject, list[uuid.UUID]]]:
    """Each pair sharing a rack once, with the racks shared (in ``a``'s scope order).

    ``a`` is declared; pairs of two stored schedules are not the tree's business.
    """
    subjects = mine + others
    by_rack: dict[uuid.UUID, list[int]] = {}
    for index, subject in enumerate(subjects):
        for rack in subject.racks:
            by_rack.setdefault(rack, []).append(index)
    for i, a in enumerate(mine):
        partners = sorted({j for rack in a.racks for j in by_rack[rack] if j > i})
        for j in partners:
            b = subjects[j]
            theirs = set(b.racks)
            yield a, b, [rack for rack in a.racks if rack in theirs]


# --- coarse ------------------------------------------------------------------------------------


def coarse_conflicts(
    declared: Declared, store: StoreView | None = None, *, owner: str | None = None
) -> ConflictReport:
    """CheckScheduleConflicts for every enabled declared schedule: pairs sharing a rack.

    ``store``: also compare the stored schedules the tree does not declare (except
    those ``owner`` manages unprotected: an apply deletes them).
    """
    inventory = _inventory(declared, store)
    mine, others = _subjects(declared, store, owner)
    conflicts = tuple(
        Conflict(a.party, b.party, tuple(SharedRack(r, inventory.rack_name(r)) for r in racks))
        for a, b, racks in _pairs(mine, others)
    )
    return ConflictReport("coarse", conflicts, len(mine), len(others) if store else None)


# --- precise -----------------------------------------------------------------------------------


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def _instant(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


class _Times:
    """One schedule's fire times in ``[now, end)``, asked one at a time: the first after ``x``.

    Interval and ``@every`` schedules (each firing relative to the previous one) are
    a ``range``, one-time schedules a tuple: both answered by bisection. A
    field-based cron is generated lazily: a prefix of its firings grows by at most
    ``_CHUNK`` per question, and a question beyond it is answered directly with
    ``next_after(spec, x)`` (a cron is a fixed set of instants, so the first one
    after any ``x`` is well defined) and memoised. A sparse cron is soon listed
    whole; a dense one is never generated further than pairs need.
    """

    _CHUNK = 64

    @property
    def complete(self) -> bool:
        """Every fire time is listed."""
        return self.cron is None

    def __init__(self, subject: _Subject, now: datetime, end: datetime) -> None:
        self.cron: timing.Cron | None = None
        self.listed: Sequence[int] = ()
        self.end = _micros(end)
        self.memo: dict[int, int | None] = {}
        spec, start = subject.spec, subject.start
        if spec is None or not subject.fires:
            return
        if isinstance(spec, timing.OneTime):
            at = spec.at if start is None else max(start, now)
            self.listed = (_micros(at),) if now <= at < end else ()
            return
        step = spec.delta if isinstance(spec, timing.Interval) else None
        if isinstance(spec, timing.Cron) and spec.every is not None:
            step = timedelta(seconds=spec.every)
        first = timing.first_run(spec, now)
        if step is not None and start is not None:
            # The stored phase, carried forward to now: start + k*step, k >= 0.
            first = start + max(0, -((start - now) // step)) * step
        if first >= end:
            return
        if step is None:
            assert isinstance(spec, timing.Cron)
            self.cron, self.listed = spec, [_micros(first)]
            self._grow(_micros(end))  # a cron firing at most _CHUNK times is complete now
            return
        second = timing.next_after(spec, first)
        assert second is not None
        if second - first == step:
            self.listed = range(_micros(first), self.end, step // _MICROSECOND)
        else:  # ``@every`` truncates to whole seconds: only from a fractional start
            self.listed = [_micros(first), *range(_micros(second), self.end, step // _MICROSECOND)]

    def after(self, x: int) -> int | None:
        """The first fire time strictly after ``x`` (microseconds), or None."""
        listed = self.listed
        if self.cron is not None and listed and x >= listed[-1]:
            self._grow(x)
            if x >= listed[-1]:
                return self._ask(x)
        i = bisect_right(listed, x)
        return listed[i] if i < len(listed) else None

    def _grow(self, x: int) -> None:
        listed, cron = self.listed, self.cron
        assert isinstance(listed, list) and cron is not None
        for _ in range(self._CHUNK):
            found = timing.next_after(cron, _instant(listed[-1]))
            assert found is not None
            if _micros(found) >= self.end:
                self.cron = None  # complete: bisection answers everything from now on
                return
            listed.append(_micros(found))
            if listed[-1] > x:
                return

    def _ask(self, x: int) -> int | None:
        if self.cron is None:
            return None
        if x not in self.memo:
            found = timing.next_after(self.cron, _instant(x))
            assert found is not None
            self.memo[x] = _micros(found) if _micros(found) < self.end else None
        return self.memo[x]


def _first_overlap(
    a: _Times, a_length: int, b: _Times, b_length: int, since: int
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
    """:func:`_first_overlap` over two complete lists: walk the shorter, bisect the longer.

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


def _firing(subject: _Subject, start: int, length: int, at: datetime) -> Firing:
    assert subject.spec is not None  # only a schedule that fires has a firing
    begin = _instant(start)
    zone = subject.spec.timezone.key if isinstance(subject.spec, timing.Cron) else "UTC"
    return Firing(
        start=begin,
        end=_instant(start + length),
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
) -> ConflictReport:
    """Pairs whose components intersect on a shared rack and whose firings overlap in time.

    ``durations`` overrides :data:`DEFAULT_DURATIONS` per operation; an operation
    not listed (a stored one rackcron does not know) is given the longest.

    :raises ValueError: ``now`` is naive, or the horizon or a duration is not positive.
    """
    if now.tzinfo is None:
        raise ValueError(f"now must be timezone-aware, got naive {now.isoformat()}")
    now = now.astimezone(UTC)
    if horizon <= timedelta(0):
        raise ValueError(f"horizon must be positive, got {horizon}")
    lengths = _durations(durations)
    longest = max(lengths.values())
    end = now + horizon
    inventory = _inventory(declared, store)
    mine, others = _subjects(declared, store, owner)
    # Per subject (by identity), then per distinct (spec, start): many schedules share a spec.
    by_spec: dict[tuple[timing.Spec, datetime | None, bool], _Times] = {}
    times: dict[int, _Times] = {}
    covers: dict[int, dict[uuid.UUID, frozenset[uuid.UUID]]] = {}

    def fire_times(subject: _Subject) -> _Times:
        if id(subject) not in times:
            key = (subject.spec, subject.start, subject.fires)
            if key not in by_spec:
                by_spec[key] = _Times(subject, now, end)
            times[id(subject)] = by_spec[key]
        return times[id(subject)]

    def covered(subject: _Subject) -> dict[uuid.UUID, frozenset[uuid.UUID]]:
        if id(subject) not in covers:
            covers[id(subject)] = {r: inventory.covered(r, f) for r, f in subject.scope}
        return covers[id(subject)]

    def length(subject: _Subject) -> int:
        return lengths.get(subject.party.operation, longest) // _MICROSECOND

    conflicts = []
    for a, b, racks in _pairs(mine, others):
        mine_covers, their_covers = covered(a), covered(b)
        meeting = [
            (rack, both) for rack in racks if (both := mine_covers[rack] & their_covers[rack])
        ]
        if not meeting:
            continue
        hit = _first_overlap(fire_times(a), length(a), fire_times(b), length(b), _micros(now))
        if hit is None:
            continue
        at = _instant(hit[0])
        firings = (_firing(a, hit[1], length(a), at), _firing(b, hit[2], length(b), at))
        shared = tuple(inventory.shared(rack, both) for rack, both in meeting)
        conflicts.append(Conflict(a.party, b.party, shared, Collision(at, firings)))
    return ConflictReport(
        "precise", tuple(conflicts), len(mine), len(others) if store else None,
        now=now, horizon=horizon, durations=lengths,
    )  # fmt: skip


# --- rendering ---------------------------------------------------------------------------------


def render_json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2)


def _racks_text(racks: list[dict[str, Any]]) -> str:
    parts = []
    for rack in racks:
        if rack.get("whole_rack"):
            parts.append(f"{rack['name']} (whole rack)")
        elif rack.get("components"):
            parts.append(f"{rack['name']} ({', '.join(c['name'] for c in rack['components'])})")
        else:
            parts.append(rack["name"])
    return ", ".join(parts)


def _where(party: Mapping[str, Any]) -> str:
    if party["origin"] == "declared":
        return f"{party['source']}:{party['line']}"
    return f"store, owner {party['owner']}" if party["owner"] else "store, unmanaged"


def _headline(conflict: Mapping[str, Any], mode: str) -> str:
    a, b = conflict["schedules"]
    verb = "can collide on" if mode == "precise" else "share"
    return f'schedules "{a["name"]}" and "{b["name"]}" {verb} {_racks_text(conflict["racks"])}'


def _describe(party: Mapping[str, Any], length: str | None) -> str:
    operation = party["operation"] + (f" (assumed {length})" if length else "")
    spec = f"{party['spec_type']} {party['spec']!r}"
    if party["spec_type"] == "cron":
        spec += f" in {party['timezone']}"
    return f'"{party["name"]}": {operation}, {spec}, {_where(party)}'


def render_text(data: Mapping[str, Any]) -> str:
    """The report for a terminal, made from its JSON form."""
    mode = data["mode"]
    lengths = data["durations"] or {}
    lines: list[str] = []
    for conflict in data["conflicts"]:
        lines.append(f"warning: {_headline(conflict, mode)}")
        hit = conflict.get("first_collision")
        if hit:
            zones = {f["zone"]: f["local_at"] for f in hit["firings"] if f["zone"] != "UTC"}
            local = "".join(f" = {at} in {zone}" for zone, at in zones.items())
            lines.append(f"  first collision at {hit['at']}{local}")
        for i, party in enumerate(conflict["schedules"]):
            lines.append(f"  - {_describe(party, lengths.get(party['operation']))}")
            if hit:
                firing = hit["firings"][i]
                local = f" ({firing['local_start']})" if firing["zone"] != "UTC" else ""
                lines.append(f"      fires {firing['start']}{local}, runs until {firing['end']}")
    checked = data["checked"]
    compared = f"{checked['declared']} declared schedules"
    if data["with_store"]:
        compared += f" (and {checked['stored']} stored)"
    if mode == "precise":
        compared += f" over {data['horizon']} from {data['now']}"
    count = data["count"]
    found = "no conflicts" if not count else f"{count} conflict{'s' if count != 1 else ''}"
    if lines:
        lines.append("")
    lines.append(f"{mode.capitalize()} check of {compared}: {found}.")
    return "\n".join(lines)


def to_diagnostics(report: ConflictReport, severity: Severity = "warning") -> list[Diagnostic]:
    """One diagnostic per conflict, at the declared schedule ``a`` (its document's first line)."""
    data = report.to_json()
    diagnostics = []
    for conflict in data["conflicts"]:
        a, b = conflict["schedules"]
        racks = _racks_text(conflict["racks"])
        if hit := conflict.get("first_collision"):
            message = (
                f'schedule "{a["name"]}" can collide with "{b["name"]}" ({_where(b)}) on {racks},'
                f" first at {hit['at']}"
            )
        else:
            message = (
                f'schedule "{a["name"]}" shares {racks} with "{b["name"]}" ({_where(b)});'
                " filters and fire times not compared"
            )
        diagnostics.append(
            Diagnostic(a["source"], a["line"], 1, severity, message, "$.metadata.name")
        )
    return diagnostics
