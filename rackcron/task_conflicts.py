"""Which two tasks on one rack may not run at the same time: the task manager's conflict table.

The table is docs/spec/SEMANTICS.md "Task conflicts", as data (:data:`TABLE`), and
:func:`conflicts` is its one reading. Every decision that asks "may these two run side
by side?" asks it here: the task manager's submission and promotion
(``rackcron.service._tasks``, ``rackcron.service._delivery``) and the reconciler's
precise conflict analysis (``rackcron.reconciler.conflicts``). Nothing here does I/O.

A task is seen as its :class:`Work`: the operation type (the reference's:
``power_control``, ``firmware_control``, ``bring_up``; anything else is a type added
later, which only an "any" side matches) and the components it targets, each with the
type it had when the task was submitted. Tasks on different racks never conflict: the
callers only compare tasks of one rack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

__all__ = [
    "BLIND",
    "OPERATION_KINDS",
    "TABLE",
    "Kind",
    "Reach",
    "Row",
    "Side",
    "Work",
    "conflicting_row",
    "conflicts",
]


class Kind(StrEnum):
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

    kind: Kind | None
    component_type: str | None = None
    blind: bool = False  # the task must target no known component (:data:`BLIND`)

    def matches(self, work: Work) -> bool:
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
class Row:
    """A row of the table: ``a`` and ``b`` conflict (in either order), within ``reach``."""

    a: Side
    b: Side
    reach: Reach

    def matches(self, x: Work, y: Work) -> bool:
        """Whether this row matches ``x`` as its ``a`` and ``y`` as its ``b``."""
        return (
            self.a.matches(x)
            and self.b.matches(y)
            and (self.reach is Reach.RACK or not x.components.keys().isdisjoint(y.components))
        )

    def __str__(self) -> str:
        where = "the whole rack" if self.reach is Reach.RACK else "shared components"
        return f"{self.a} and {self.b} conflict on {where}"


_NAMES: Mapping[Kind, str] = MappingProxyType(
    {Kind.POWER: "power", Kind.FIRMWARE: "firmware", Kind.BRING_UP: "bring-up or ingest"}
)


@dataclass(frozen=True, slots=True)
class Work:
    """A task as the table sees it: its operation type, and its components (canonical
    UUID text -> the component's type when the task was submitted)."""

    operation_type: str
    components: Mapping[str, str]
    types: frozenset[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "types", frozenset(self.components.values()))

    @classmethod
    def of(cls, operation_type: str, ids: Iterable[str], types: Iterable[str]) -> Work:
        """From a task row's parallel lists of component ids and types."""
        return cls(operation_type, dict(zip(ids, types, strict=True)))


_P, _F, _B = Kind.POWER, Kind.FIRMWARE, Kind.BRING_UP

#: The operation type of each operation as a tree names it (docs/declaring.md).
OPERATION_KINDS: Mapping[str, Kind] = MappingProxyType(
    {
        "power_on": _P, "power_off": _P, "power_reset": _P,
        "upgrade_firmware": _F,
        "bring_up": _B, "ingest": _B,
    }
)  # fmt: skip
_RACK, _PARTS = Reach.RACK, Reach.COMPONENTS

#: docs/spec/SEMANTICS.md "Task conflicts", row by row. Any pair no row matches, in either
#: order, may run side by side.
TABLE: tuple[Row, ...] = (
    Row(Side(_P, "POWERSHELF"), Side(_P), _RACK),
    Row(Side(_P, "POWERSHELF"), Side(_F), _RACK),
    Row(Side(_P, "COMPUTE"), Side(_P, "COMPUTE"), _PARTS),
    Row(Side(_P, "NVSWITCH"), Side(_P, "NVSWITCH"), _PARTS),
    Row(Side(_P, "COMPUTE"), Side(_F, "COMPUTE"), _PARTS),
    Row(Side(_P, "NVSWITCH"), Side(_F, "NVSWITCH"), _PARTS),
    Row(Side(_F), Side(_F), _PARTS),
    Row(Side(_B), Side(None), _RACK),
)

#: rackcron's own row, after the table's: a task that targets no known component (a rack
#: target on a rack whose inventory lists none) holds the whole rack, since nothing says
#: what it touches. The reference's rows would let it run beside anything but bring-up.
BLIND = Row(Side(None, blind=True), Side(None), _RACK)


def conflicting_row(x: Work, y: Work) -> Row | None:
    """The first row of :data:`TABLE`, then :data:`BLIND`, that matches ``x`` and ``y`` in either order; None
    when they may run side by side."""
    for row in (*TABLE, BLIND):
        if row.matches(x, y) or row.matches(y, x):
            return row
    return None


def conflicts(x: Work, y: Work) -> bool:
    """Whether two tasks of one rack may not run at the same time."""
    return conflicting_row(x, y) is not None
