"""Names and ids: the id a name on the command line means, and the names shown beside ids.

Resolution follows :func:`rackcron.domain.names.resolve` (an id first, else the one object of
that name, else ambiguous or not found); these operations only read the candidates
for it, by name or id, in one SELECT each. A component's name is unique only within
its rack, so ``RACK/COMPONENT`` (a rack's name or id, a slash, the component's name)
names one too.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import sqlalchemy as sa

from rackcron.domain.lookalikes import lookalike_names, spelled
from rackcron.domain.names import (
    MAX_COMPARED,
    Candidate,
    as_uuid,
    near_misses,
    rack_candidate,
    resolve,
)
from rackcron.errors import NotFound
from rackcron.logs import event
from rackcron.service import _rows
from rackcron.service._tasks import chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import component, freeze, nvl_domain, rack, task_schedule

__all__ = ["LOOKALIKE_KINDS", "Lookalikes", "NameOps", "Names", "near_names", "warn_lookalike"]

#: The kinds whose names are judged for look-alikes (``rackcron.domain.lookalikes``): each
#: object kind's name column, and how a message calls the kind.
LOOKALIKE_KINDS: dict[str, tuple[sa.Column[Any], str]] = {
    "schedule": (task_schedule.c.name, "schedule"),
    "rack": (rack.c.name, "rack"),
    "nvl_domain": (nvl_domain.c.name, "NVLink domain"),
    "freeze": (freeze.c.name, "freeze"),
}

_COMPONENT_HINT = ", or name it as RACK/COMPONENT"


@dataclass(frozen=True)
class Names:
    """The names of the ids asked for that exist, by kind (an id missing has none)."""

    racks: dict[uuid.UUID, str] = field(default_factory=dict)
    schedules: dict[uuid.UUID, str] = field(default_factory=dict)
    components: dict[uuid.UUID, str] = field(default_factory=dict)


def _named(table: sa.Table, ref: str, *extra: sa.ColumnElement[bool]) -> sa.ColumnElement[bool]:
    """Rows called ``ref``, or whose id it is."""
    as_id = as_uuid(ref)
    by_name = sa.and_(table.c.name == ref, *extra)
    return by_name if as_id is None else sa.or_(by_name, table.c.id == as_id)


def near_names(work: UnitOfWork, column: sa.Column[Any], ref: str) -> tuple[str, ...]:
    """Stored names of ``column`` that read close to ``ref``, for a "did you mean"
    (:func:`rackcron.domain.names.near_misses`)."""
    names = work.conn.execute(sa.select(column).distinct().limit(MAX_COMPARED)).scalars()
    return near_misses(ref, (name for name in names if name))


def _component_detail(row: Any) -> str:
    """What tells a component from another of its name: its rack, type, external id."""
    parts = [f"rack {row.rack_name}" if row.rack_name else "in no rack", row.type]
    if row.external_id:
        parts.append(f"external id {row.external_id}")
    return ", ".join(parts)


class Lookalikes(Protocol):
    """Whether a name looks like another stored name of its kind."""

    def lookalike(self, kind: str, name: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class NameOps:
    """Names: look-alike checks and a rack's or component's id by name."""

    work: UnitOfWork

    def lookalike(self, kind: str, name: str) -> str | None:
        """Why ``name``, stored as a ``kind`` (a key of :data:`LOOKALIKE_KINDS`), mixes
        scripts or reads the same as another stored name of its kind; None when it does
        not (always for an ASCII name, which reads no other name)."""
        if name.isascii():
            return None
        column, _ = LOOKALIKE_KINDS[kind]
        others = self.work.conn.execute(sa.select(column)).scalars()
        return lookalike_names([name], others).get(name)

    def resolve_rack(self, ref: str) -> uuid.UUID:
        """The id of the rack ``ref`` names (``rackcron.domain.names``).

        :raises AmbiguousName: several racks have that name.
        :raises NotFound: no rack has it, and it is not a UUID.
        """
        rows = self.work.conn.execute(sa.select(rack).where(_named(rack, ref)))
        try:
            return resolve("rack", ref, [rack_candidate(_rows.rack(r)) for r in rows])
        except NotFound as missing:
            raise missing.suggesting(near_names(self.work, rack.c.name, ref)) from None

    def resolve_component(self, ref: str) -> uuid.UUID:
        """The id of the component ``ref`` names: its id, its name, or ``RACK/NAME``.

        :raises AmbiguousName: several components have that name (in that rack).
        :raises NotFound: no component (or rack, for ``RACK/NAME``) has it.
        """
        query = sa.select(component, rack.c.name.label("rack_name")).select_from(
            component.outerjoin(rack, rack.c.id == component.c.rack_id)
        )
        rows = [(r, r.name) for r in self.work.conn.execute(query.where(_named(component, ref)))]
        rack_ref, slash, name = ref.rpartition("/")
        if slash and rack_ref and not rows:
            rack_id = self.resolve_rack(rack_ref)
            where = sa.and_(component.c.rack_id == rack_id, component.c.name == name)
            rows = [(r, ref) for r in self.work.conn.execute(query.where(where))]
        candidates = [Candidate(r.id, called, _component_detail(r)) for r, called in rows]
        try:
            return resolve("component", ref, candidates, hint=_COMPONENT_HINT)
        except NotFound as missing:
            raise missing.suggesting(near_names(self.work, component.c.name, name)) from None

    def names_of(
        self,
        *,
        racks: Iterable[uuid.UUID] = (),
        schedules: Iterable[uuid.UUID] = (),
        components: Iterable[uuid.UUID] = (),
    ) -> Names:
        """The names of these racks, schedules and components (those that exist)."""
        found = Names()
        for table, ids, into in (
            (rack, racks, found.racks),
            (task_schedule, schedules, found.schedules),
            (component, components, found.components),
        ):
            for chunk in chunked(sorted(set(ids), key=str)):
                query = sa.select(table.c.id, table.c.name).where(table.c.id.in_(chunk))
                into.update((row.id, row.name) for row in self.work.conn.execute(query))
        return found


def warn_lookalike(ops: Lookalikes, kind: str, name: str, object_id: str | None) -> str | None:
    """Why ``name``, just written as a ``kind`` (``schedule``, ``rack``, ``nvl_domain`` or
    ``freeze``), looks like another stored name (:meth:`NameOps.lookalike`), logged as a
    warning; None when it does not. Accepted all the same, as the reference accepts any
    name (docs/spec/flow-wire.md "5. Deliberate differences from the reference
    implementation")."""
    lookalike = ops.lookalike(kind, name)
    if lookalike is not None:
        fields = {kind: name, "id": object_id, "reason": lookalike, "characters": spelled(name)}
        event(logging.WARNING, f"look-alike {LOOKALIKE_KINDS[kind][1]} name", **fields)
    return lookalike
