"""Which two tasks on one rack may not run at the same time: the task manager's conflict table.

The table is docs/spec/SEMANTICS.md "Task conflicts", as data (:data:`TABLE`), and
:func:`conflicts` is its one reading. Every decision that asks "may these two run side
by side?" asks it here: the task manager's submission and promotion
(``rackcron.service._tasks``, ``rackcron.service._delivery``) and the reconciler's
precise conflict analysis (``rackcron.reconciler.conflicts``); the timeline
(``rackcron.domain.upcoming``) asks it through :func:`meeting_points`, the same table read as an
index. Nothing here does I/O.

A task is seen as its :class:`TaskShape`: the operation type (the reference's:
``power_control``, ``firmware_control``, ``bring_up``; anything else is a type added
later, which only an "any" side matches) and the components it targets, each with the
type it had when the task was submitted. Tasks on different racks never conflict: the
callers only compare tasks of one rack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType

__all__ = [
    "BLIND",
    "OPERATION_KINDS",
    "TABLE",
    "ConflictKind",
    "ConflictRow",
    "Point",
    "Reach",
    "Side",
    "TaskShape",
    "conflicting_row",
    "conflicts",
    "meeting_points",
]


class ConflictKind(StrEnum):
    """The operation types the table names (the reference's ``operation_type`` values)."""

    POWER = "power_control"  # power on, off and reset
    FIRMWARE = "firmware_control"  # firmware upgrade
    BRING_UP = "bring_up"  # bring-up and ingest (their codes differ)


class Reach(StrEnum):
    """What a row needs of the two tasks' components to match."""

    RACK = "rack"  # nothing: the row holds the whole rack
    COMPONENTS = "components"  # at least one component UUID in common


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a row: an operation type (None: any) and, optionally, a component type
    the task must target at least one component of."""

    kind: ConflictKind | None
    component_type: str | None = None
    blind: bool = False  # the task must target no known component (:data:`BLIND`)

    def matches(self, work: TaskShape) -> bool:
        return (
            (self.kind is None or work.operation_type == self.kind)
            and (self.component_type is None or self.component_type in work.types)
            and (not self.blind or not work.components)
        )

    def __str__(self) -> str:
        if self.blind:
            return "a task that names no known component"
        what = "any task" if self.kind is None else _NAMES[self.kind]
        return what if self.component_type is None else f"{what} on {self.component_type}"


@dataclass(frozen=True, slots=True)
class ConflictRow:
    """A row of the table: ``a`` and ``b`` conflict (in either order), within ``reach``."""

    a: Side
    b: Side
    reach: Reach

    def matches(self, x: TaskShape, y: TaskShape) -> bool:
        """Whether this row matches ``x`` as its ``a`` and ``y`` as its ``b``."""
        return (
            self.a.matches(x)
            and self.b.matches(y)
            and (self.reach is Reach.RACK or not x.components.keys().isdisjoint(y.components))
        )

    def __str__(self) -> str:
        where = "the whole rack" if self.reach is Reach.RACK else "shared components"
        return f"{self.a} and {self.b} conflict on {where}"


_NAMES: Mapping[ConflictKind, str] = MappingProxyType(
    {
        ConflictKind.POWER: "power",
        ConflictKind.FIRMWARE: "firmware",
        ConflictKind.BRING_UP: "bring-up or ingest",
    }
)


@dataclass(frozen=True, slots=True)
class TaskShape:
    """A task as the table sees it: its operation type, and its components (canonical
    UUID text -> the component's type when the task was submitted)."""

    operation_type: str
    components: Mapping[str, str]
    types: frozenset[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "types", frozenset(self.components.values()))

    @classmethod
    def of(cls, operation_type: str, ids: Iterable[str], types: Iterable[str]) -> TaskShape:
        """From a task row's parallel lists of component ids and types."""
        return cls(operation_type, dict(zip(ids, types, strict=True)))


_P, _F, _B = ConflictKind.POWER, ConflictKind.FIRMWARE, ConflictKind.BRING_UP

#: The operation type of each operation as a tree names it (docs/declaring.md).
OPERATION_KINDS: Mapping[str, ConflictKind] = MappingProxyType(
    {
        "power_on": _P,
        "power_off": _P,
        "power_reset": _P,
        "upgrade_firmware": _F,
        "bring_up": _B,
        "ingest": _B,
    }
)
_RACK, _PARTS = Reach.RACK, Reach.COMPONENTS

#: docs/spec/SEMANTICS.md "Task conflicts", row by row. Any pair no row matches, in either
#: order, may run side by side.
TABLE: tuple[ConflictRow, ...] = (
    ConflictRow(Side(_P, "POWERSHELF"), Side(_P), _RACK),
    ConflictRow(Side(_P, "POWERSHELF"), Side(_F), _RACK),
    ConflictRow(Side(_P, "COMPUTE"), Side(_P, "COMPUTE"), _PARTS),
    ConflictRow(Side(_P, "NVSWITCH"), Side(_P, "NVSWITCH"), _PARTS),
    ConflictRow(Side(_P, "COMPUTE"), Side(_F, "COMPUTE"), _PARTS),
    ConflictRow(Side(_P, "NVSWITCH"), Side(_F, "NVSWITCH"), _PARTS),
    ConflictRow(Side(_F), Side(_F), _PARTS),
    ConflictRow(Side(_B), Side(None), _RACK),
)

#: rackcron's own row, after the table's: a task that targets no known component (a rack
#: target on a rack whose inventory lists none) holds the whole rack, since nothing says
#: what it touches. The reference's rows would let it run beside anything but bring-up.
BLIND = ConflictRow(Side(None, blind=True), Side(None), _RACK)


def conflicting_row(x: TaskShape, y: TaskShape) -> ConflictRow | None:
    """The first row of :data:`TABLE`, then :data:`BLIND`, that matches ``x`` and ``y`` in either order; None
    when they may run side by side."""
    for row in (*TABLE, BLIND):
        if row.matches(x, y) or row.matches(y, x):
            return row
    return None


def conflicts(x: TaskShape, y: TaskShape) -> bool:
    """Whether two tasks of one rack may not run at the same time."""
    return conflicting_row(x, y) is not None


#: Where a task stands or looks: a row (its index in :data:`TABLE`, :data:`BLIND` last), a
#: side of it, and a component id (None: the whole rack, for a :attr:`Reach.RACK` row).
Point = tuple[int, str, str | None]


def meeting_points(work: TaskShape) -> tuple[frozenset[Point], frozenset[Point]]:
    """Where ``work`` stands and where it looks: ``x`` and ``y`` conflict exactly when
    ``x`` looks where ``y`` stands (and so ``y`` where ``x`` stands).

    A task matching side ``a`` of a row stands at that side and looks at side ``b``, over
    the row's places (the whole rack, or each of its components), and the other way round
    (a row whose sides are alike has one: a task matching it stands and looks there).
    A caller holding many tasks by where they stand meets only those that conflict with a
    new one, where asking :func:`conflicts` of each would compare every pair.
    """
    rack, parts = _meeting_sides(work.operation_type, work.types)
    stands: set[Point] = {(i, side, None) for i, side, _ in rack}
    stands.update((i, side, c) for i, side, _ in parts for c in work.components)
    looks: set[Point] = {(i, other, None) for i, _, other in rack}
    looks.update((i, other, c) for i, _, other in parts for c in work.components)
    return frozenset(stands), frozenset(looks)


_Sides = tuple[tuple[int, str, str], ...]  # (row, side it stands at, side it looks at)


@lru_cache(maxsize=256)  # bounded: operation types come from the store
def _meeting_sides(operation_type: str, types: frozenset[str]) -> tuple[_Sides, _Sides]:
    """The sides a task matches, of rows over the whole rack and over components: what
    :func:`meeting_points` spreads over a task's places (a fleet has a few kinds of task)."""
    work = TaskShape(operation_type, {str(n): t for n, t in enumerate(types)})  # none: blind
    rack: list[tuple[int, str, str]] = []
    parts: list[tuple[int, str, str]] = []
    for index, row in enumerate((*TABLE, BLIND)):
        sides = (("a", "b", row.a), ("b", "a", row.b)) if row.a != row.b else (("a", "a", row.a),)
        for side, other, this in sides:
            if this.matches(work):
                (rack if row.reach is Reach.RACK else parts).append((index, side, other))
    return tuple(rack), tuple(parts)
