"""The result of a conflict check, and its documented ``rackcron.conflicts/v1`` JSON form.

A :class:`ConflictReport` is a frozen value: the conflicting pairs (:class:`PredictedConflict`),
each naming its two schedules (:class:`Party`), the racks and, for a precise check,
the components both cover there (:class:`SharedRack`), and the first collision
(:class:`Collision`, one :class:`PredictedFiring` per side). Nothing here prints:
:meth:`ConflictReport.to_json` is the one serialised form, and every rendering
(``_render``) is made from it, so text and JSON cannot disagree.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from rackcron.domain import timing

FORMAT = "rackcron.conflicts/v1"
# 1.1: truncated; 1.2: count_exact, complete and unchecked (a precise check's work budget);
# 1.3: each precise rack's "rule" (the row of the task-conflict table that matches)
# 1.4: "freezes" (precise): declared fire times inside freezes
# 1.5: each held firing's "work": the operation's own work window a freeze meets
FORMAT_VERSION = "1.5"
#: Conflicts one report lists; ``count`` counts them all (docs/conflicts.md).
MAX_LISTED = 100
#: Racks a message about a fire time inside a freeze names; it counts the rest.
_RACKS_SHOWN = 10

Mode = Literal["coarse", "precise"]
Origin = Literal["declared", "store"]


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
    rule: str | None = None  # precise: the row of the task-conflict table that matches

    def to_json(self, mode: Mode) -> dict[str, Any]:
        data: dict[str, Any] = {"id": str(self.id), "name": self.name}
        if mode == "precise":
            data["whole_rack"] = self.whole_rack
            data["components"] = [{"id": str(c.id), "name": c.name} for c in self.components]
            data["rule"] = self.rule
        return data


@dataclass(frozen=True)
class PredictedFiring:
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
    firings: tuple[PredictedFiring, PredictedFiring]


@dataclass(frozen=True)
class PredictedConflict:
    """A pair of schedules, reported once; ``a`` is always declared."""

    a: Party
    b: Party
    racks: tuple[SharedRack, ...]
    collision: Collision | None = None  # precise only


@dataclass(frozen=True)
class Unchecked:
    """What a precise check left uncompared when it reached its work budget."""

    pairs: int  # pairs sharing a rack not compared (at least this many unless ``exact``)
    exact: bool
    compared: int  # pairs compared before it stopped
    stopped_at: Party  # the declared schedule whose pairs were being compared

    def to_json(self) -> dict[str, Any]:
        where = self.stopped_at
        return {
            "pairs": self.pairs,
            "exact": self.exact,
            "compared": self.compared,
            "stopped_at": {"name": where.name, "source": where.source, "line": where.line},
        }


@dataclass(frozen=True)
class Held:
    """A schedule firing inside a freeze: the first time, the racks held, how often, and
    the work window of the operation fired then when that, not the firing, meets the
    freeze (``rackcron.domain.freezes.work_window``)."""

    schedule: str
    freeze: str
    at: datetime
    zone: str  # the schedule's zone (UTC for interval and one-time)
    local_at: datetime
    racks: tuple[str, ...]
    count: int
    count_exact: bool
    source: str | None = None
    line: int | None = None
    work: tuple[datetime, datetime] | None = None

    def to_json(self) -> dict[str, object]:
        work = None
        if self.work is not None:
            start, end = self.work
            # A work window of one microsecond is the instant the work starts.
            until = None if end - start <= timedelta(microseconds=1) else _utc(end)
            work = {"start": _utc(start), "end": until}
        return {
            "schedule": self.schedule,
            "freeze": self.freeze,
            "at": timing.format_rfc3339(self.at),
            "zone": self.zone,
            "local_at": _local(self.local_at),
            "racks": list(self.racks),
            "count": self.count,
            "count_exact": self.count_exact,
            "source": self.source,
            "line": self.line,
            "work": work,
        }

    def message(self, horizon: timedelta) -> str:
        """One line for people: ``schedule "x" fires at T inside freeze "f" (racks ...)``."""
        return held_message(self.to_json(), timing.format_duration(horizon))


def held_message(held: Mapping[str, object], horizon: str) -> str:
    """:meth:`Held.message` from the JSON form (renderings are made from it)."""
    racks = list(held["racks"])  # type: ignore[call-overload]
    shown = ", ".join(str(r) for r in racks[:_RACKS_SHOWN])
    if len(racks) > _RACKS_SHOWN:
        shown += f" and {len(racks) - _RACKS_SHOWN} more"
    local = f" ({held['local_at']} in {held['zone']})" if held["zone"] != "UTC" else ""
    count = int(held["count"])  # type: ignore[call-overload]
    times = "once" if count == 1 else f"{'' if held['count_exact'] else 'at least '}{count} times"
    inside = "inside"
    work = held.get("work")  # 1.5: the operation's own work window, when it is what is held
    if isinstance(work, Mapping) and work["end"]:
        inside = f"and its operation may start from {work['start']} until {work['end']}, meeting"
    elif isinstance(work, Mapping):
        inside = f"and its operation starts at {work['start']}, inside"
    return (
        f'schedule "{held["schedule"]}" fires at {held["at"]}{local} {inside} freeze'
        f' "{held["freeze"]}" (rack{"s" if len(racks) > 1 else ""} {shown}):'
        f" {times} in the next {horizon}"
    )


@dataclass(frozen=True)
class HeldReport:
    """The pairs found (the first ``limit`` listed), how many in all, and whether the
    check looked at everything."""

    held: tuple[Held, ...]
    total: int
    exact: bool


@dataclass(frozen=True)
class ConflictReport:
    """The outcome of one check: what was compared and the conflicts found, in tree order."""

    mode: Mode
    conflicts: tuple[PredictedConflict, ...]
    declared: int  # enabled declared schedules checked
    stored: int | None  # stored schedules compared; None: the store was not read
    now: datetime | None = None  # precise only
    horizon: timedelta | None = None  # precise only
    durations: Mapping[str, timedelta] = field(default_factory=dict)  # precise only
    #: Conflicts found in all; ``conflicts`` lists the first :data:`MAX_LISTED` of them.
    total: int | None = None
    #: False: ``total`` is a lower bound (too costly to count exactly, or an unfinished check).
    exact: bool = True
    #: A precise check that stopped at its work budget: what it did not compare.
    unchecked: Unchecked | None = None
    #: Precise: the declared fire times inside freezes.
    held: HeldReport | None = None

    @property
    def complete(self) -> bool:
        """Every pair sharing a rack was judged (always, in a coarse check)."""
        return self.unchecked is None

    @property
    def count(self) -> int:
        """How many conflicts were found, listed or not."""
        return len(self.conflicts) if self.total is None else self.total

    def to_json(self) -> dict[str, Any]:
        """The documented ``rackcron.conflicts/v1`` form (docs/conflicts.md)."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "mode": self.mode,
            "with_store": self.stored is not None,
            "checked": {"declared": self.declared, "stored": self.stored or 0},
            "now": _utc(self.now) if self.now else None,
            "horizon": timing.format_duration(self.horizon) if self.horizon else None,
            "durations": {k: timing.format_duration(v) for k, v in self.durations.items()} or None,
            "count": self.count,
            "count_exact": self.exact and self.complete,
            "truncated": self.count > len(self.conflicts),
            "complete": self.complete,
            "unchecked": self.unchecked.to_json() if self.unchecked else None,
            "conflicts": [_conflict_json(c, self.mode) for c in self.conflicts],
            "freezes": self.held
            and {
                "count": self.held.total,
                "count_exact": self.held.exact,
                "held": [h.to_json() for h in self.held.held],
            },
        }


def _utc(moment: datetime) -> str:
    return timing.format_rfc3339(moment)


def _local(moment: datetime) -> str:
    return f"{moment.isoformat()} {moment.tzname() or ''}".rstrip()


def _conflict_json(conflict: PredictedConflict, mode: Mode) -> dict[str, Any]:
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
