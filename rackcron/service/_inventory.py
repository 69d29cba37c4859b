"""Inventory operations: racks, components and NVLink domains that scopes point at.

Upserts are keyed by id (create or replace every field). A rack that a schedule's
scope still uses cannot be deleted; its components are unlinked (kept, rack
NULL) and its domain memberships dropped.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from rackcron.domain.commands import CommandFailed
from rackcron.domain.models import Component, NVLDomain, Rack, Task, check_labels
from rackcron.domain.targets import normalize_mac
from rackcron.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound, RackcronError
from rackcron.service import _rows
from rackcron.service._base import check_text, parse_id
from rackcron.service._tasks import chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import (
    ACTIVE_STATUS_VALUES,
    component,
    component_placement,
    nvl_domain,
    nvl_domain_rack,
    rack,
    task,
    task_schedule,
    task_schedule_scope,
)

__all__ = ["InventoryOps", "RackView"]

#: Controller URLs and file paths are longer than names; the JSON column has no limit of its own.
_MAX_CONTROLLER_TEXT = 2048


@dataclass(frozen=True)
class RackView:
    """A rack with what ``rackcron racks`` shows of it: its components (by name), the
    NVLink domains it is in, and its active tasks (oldest first) with their schedules'
    names (a task whose schedule is gone has none)."""

    rack: Rack
    components: list[Component]
    domains: list[NVLDomain]
    active_tasks: list[Task]
    schedule_names: dict[uuid.UUID, str]


def _check_texts(table: sa.Table, values: Mapping[str, object]) -> None:
    for field, value in values.items():
        if isinstance(value, str):
            check_text(value, f"{table.name}.{field}")


def _rack_values(item: Rack) -> dict[str, Any]:
    """The row of ``item`` (:meth:`InventoryOps.upsert_rack` says what it refuses)."""
    if not item.name:
        raise InvalidArgument("rack.name is required")
    controller = None
    if item.controller is not None:
        controller = item.controller.model_dump(mode="json")  # the fields that are set
        for field, value in controller.items():
            check_text(value, f"controller.{field}", max_length=_MAX_CONTROLLER_TEXT)
    check_labels(item.labels, "rack.labels")
    for key, value in item.labels.items():
        check_text(key, "rack.labels")
        check_text(value, f"rack.labels.{key}")
    return {
        "name": item.name,
        "external_id": item.external_id,
        "owner": item.owner,
        "controller": controller,  # None: SQL NULL, the server's default controller
        "labels": dict(item.labels) or None,
    }


def _component_values(item: Component) -> dict[str, Any]:
    """The row of ``item``, its BMC MAC normalised.

    :raises InvalidArgument: a BMC MAC that is none."""
    mac = None
    if item.bmc_mac:
        mac = normalize_mac(item.bmc_mac)
        if mac is None:
            raise InvalidArgument(f"component.bmc_mac: {item.bmc_mac!r} is not a MAC address")
    return {
        "rack_id": item.rack_id,
        "type": item.type.value,
        "name": item.name,
        "external_id": item.external_id,
        "bmc_mac": mac,
    }


@dataclass(frozen=True, slots=True)
class InventoryOps:
    """Racks, components and NVLink domains."""

    work: UnitOfWork

    def _upsert(self, table: sa.Table, item_id: uuid.UUID, values: Mapping[str, object]) -> None:
        _check_texts(table, values)
        exists = self.work.conn.execute(
            sa.select(table.c.id).where(table.c.id == item_id).with_for_update()
        ).first()
        try:
            with self.work.conn.begin_nested():
                if exists:
                    self.work.conn.execute(
                        table.update()
                        .where(table.c.id == item_id)
                        .values(**values, updated_at=self.work.now)
                    )
                else:
                    self.work.conn.execute(
                        table.insert().values(
                            id=item_id, **values, created_at=self.work.now, updated_at=self.work.now
                        )
                    )
        except sa.exc.IntegrityError as exc:
            raise Conflict(
                f"{table.name} {item_id}: external_id {values.get('external_id')!r} is already used"
            ) from exc

    def upsert_rack(self, item: Rack) -> Rack:
        """Create or replace a rack, with its controller (None: the server's default).

        :raises Conflict: its external_id is taken.
        :raises InvalidArgument: no name, or a controller setting the store cannot hold.
        """
        try:
            self.upsert_racks([item])
        except CommandFailed as failed:
            raise failed.error from None
        return item

    def upsert_racks(self, items: Sequence[Rack]) -> None:
        """:meth:`upsert_rack` for each of ``items``, in order, in a few statements.

        :raises CommandFailed: the first refused (its index in ``items``) and why;
            nothing of the batch is then written.
        """
        self._upsert_many(rack, items, _rack_values)

    def upsert_components(self, items: Sequence[Component]) -> None:
        """:meth:`upsert_component` for each of ``items``, in order, in a few statements.

        :raises CommandFailed: as :meth:`upsert_racks`.
        """
        wanted = sorted({i.rack_id for i in items if i.rack_id is not None}, key=str)
        known: set[uuid.UUID] = set()
        for chunk in chunked(wanted):
            query = sa.select(rack.c.id).where(rack.c.id.in_(chunk))
            known.update(self.work.conn.execute(query).scalars())

        def values(item: Component) -> dict[str, Any]:
            found = _component_values(item)
            if item.rack_id is not None and item.rack_id not in known:
                raise NotFound(f"component.rack_id: rack [id: {item.rack_id}] is not found")
            return found

        self._upsert_many(component, items, values)
        self._place({(i.id, i.rack_id) for i in items if i.rack_id is not None})

    def _place(self, pairs: set[tuple[uuid.UUID, uuid.UUID]]) -> None:
        """Record that these components are on these racks (``component_placement``)."""
        for chunk in chunked(sorted({c for c, _ in pairs}, key=str)):
            query = sa.select(component_placement).where(
                component_placement.c.component_id.in_(chunk)
            )
            pairs -= {(r.component_id, r.rack_id) for r in self.work.conn.execute(query)}
        if pairs:
            rows = [{"component_id": c, "rack_id": r} for c, r in pairs]
            self.work.conn.execute(component_placement.insert(), rows)

    def _upsert_many(
        self,
        table: sa.Table,
        items: Sequence[Rack | Component | NVLDomain],
        make: Callable[[Any], Mapping[str, Any]],
    ) -> None:
        """Insert or replace a row of ``table`` per item: its id, and the values ``make``
        gives for it (checked as :meth:`_upsert` checks them)."""
        rows: list[tuple[uuid.UUID, Mapping[str, Any]]] = []
        for index, item in enumerate(items):
            try:
                values = make(item)
                _check_texts(table, values)
            except RackcronError as exc:
                raise CommandFailed(index, exc) from exc
            rows.append((item.id, values))
        existing: set[uuid.UUID] = set()
        for chunk in chunked(sorted({i for i, _ in rows}, key=str)):
            query = sa.select(table.c.id).where(table.c.id.in_(chunk)).with_for_update()
            existing.update(self.work.conn.execute(query).scalars())
        now = self.work.now
        new = [{"id": i, **v, "created_at": now, "updated_at": now}
               for i, v in rows if i not in existing]  # fmt: skip
        # Bound as b_<column>: a column's own name is SQLAlchemy's in an UPDATE's SET.
        replaced = [{f"b_{k}": x for k, x in {"id": i, **v, "updated_at": now}.items()}
                    for i, v in rows if i in existing]  # fmt: skip
        try:
            with self.work.conn.begin_nested():
                if new:
                    self.work.conn.execute(table.insert(), new)
                if replaced:
                    columns = [k.removeprefix("b_") for k in replaced[0] if k != "b_id"]
                    update = (
                        table.update()
                        .where(table.c.id == sa.bindparam("b_id"))
                        .values({c: sa.bindparam(f"b_{c}") for c in columns})
                    )
                    self.work.conn.execute(update, replaced)
        except sa.exc.IntegrityError:
            # An external id taken (or an id twice): one by one, the first refused is named.
            for index, (item_id, values) in enumerate(rows):
                try:
                    self._upsert(table, item_id, values)
                except RackcronError as exc:
                    raise CommandFailed(index, exc) from exc

    def find_rack(self, rack_id: uuid.UUID) -> Rack | None:
        """The rack ``rack_id``, or None."""
        row = self.work.conn.execute(sa.select(rack).where(rack.c.id == rack_id)).first()
        return None if row is None else _rows.rack(row)

    def list_racks(self) -> list[Rack]:
        return [
            _rows.rack(r)
            for r in self.work.conn.execute(sa.select(rack).order_by(rack.c.name, rack.c.id))
        ]

    def rack_views(self, rack_id: uuid.UUID | str | None = None) -> list[RackView]:
        """Every rack by name (or the one ``rack_id``) as a :class:`RackView`.

        :raises NotFound: no rack ``rack_id``.
        """
        query = sa.select(rack).order_by(rack.c.name, rack.c.id)
        # As the schedule is named now (the task's own schedule_name is what it recorded).
        current = task_schedule.c.name.label("current_schedule_name")
        tasks = sa.select(task, current).select_from(
            task.outerjoin(task_schedule, task_schedule.c.id == task.c.schedule_id)
        )
        tasks = tasks.where(task.c.status.in_(ACTIVE_STATUS_VALUES))
        if rack_id is not None:
            rack_id = parse_id(rack_id, "rack_id")
            query = query.where(rack.c.id == rack_id)
            tasks = tasks.where(task.c.rack_id == rack_id)
        racks = [_rows.rack(r) for r in self.work.conn.execute(query)]
        if rack_id is not None and not racks:
            raise NotFound(f"rack [id: {rack_id}] is not found")
        components: dict[uuid.UUID | None, list[Component]] = {}
        for c in self.list_components(rack_id):
            components.setdefault(c.rack_id, []).append(c)
        domains: dict[uuid.UUID, list[NVLDomain]] = {}
        for d in self.list_nvl_domains():
            for member in d.rack_ids:
                domains.setdefault(member, []).append(d)
        active: dict[uuid.UUID, list[Task]] = {}
        names: dict[uuid.UUID, str] = {}
        for row in self.work.conn.execute(tasks.order_by(task.c.created_at, task.c.id)):
            active.setdefault(row.rack_id, []).append(_rows.task(row))
            if row.current_schedule_name is not None:
                names[row.schedule_id] = row.current_schedule_name
        return [
            RackView(
                r,
                components.get(r.id, []),
                domains.get(r.id, []),
                active.get(r.id, []),
                {
                    t.schedule_id: names[t.schedule_id]
                    for t in active.get(r.id, [])
                    if t.schedule_id is not None and t.schedule_id in names
                },
            )
            for r in racks
        ]

    def delete_rack(self, rack_id: uuid.UUID | str) -> None:
        """:raises NotFound: no such rack. :raises FailedPrecondition: a scope uses it."""
        rack_id = parse_id(rack_id, "rack_id")
        if self.work.conn.execute(sa.select(rack.c.id).where(rack.c.id == rack_id)).first() is None:
            raise NotFound(f"rack [id: {rack_id}] is not found")
        used = self.work.conn.execute(
            sa.select(sa.func.count()).where(task_schedule_scope.c.rack_id == rack_id)
        ).scalar_one()
        if used:
            raise FailedPrecondition(f"rack {rack_id} is in the scope of {used} schedule(s)")
        self.work.conn.execute(rack.delete().where(rack.c.id == rack_id))

    def upsert_component(self, item: Component) -> Component:
        """Create or replace a component (its BMC MAC is stored normalised)."""
        values = _component_values(item)  # checked before the rack, as ever
        try:
            self.upsert_components([item])
        except CommandFailed as failed:
            raise failed.error from None
        return item.model_copy(update={"bmc_mac": values["bmc_mac"]})

    def find_component(self, component_id: uuid.UUID) -> Component | None:
        """The component ``component_id``, or None."""
        query = sa.select(component).where(component.c.id == component_id)
        row = self.work.conn.execute(query).first()
        return None if row is None else _rows.component(row)

    def list_components(self, rack_id: uuid.UUID | str | None = None) -> list[Component]:
        query = sa.select(component).order_by(component.c.rack_id, component.c.name, component.c.id)
        if rack_id is not None:
            query = query.where(component.c.rack_id == parse_id(rack_id, "rack_id"))
        return [_rows.component(r) for r in self.work.conn.execute(query)]

    def delete_component(self, component_id: uuid.UUID | str) -> None:
        """:raises NotFound: no such component."""
        component_id = parse_id(component_id, "component_id")
        if not self.work.conn.execute(
            component.delete().where(component.c.id == component_id)
        ).rowcount:
            raise NotFound(f"component [id: {component_id}] is not found")

    def upsert_nvl_domain(self, item: NVLDomain) -> NVLDomain:
        """Create or replace an NVLink domain and its member racks (in order)."""
        try:
            self.upsert_nvl_domains([item])
        except CommandFailed as failed:
            raise failed.error from None
        return item

    def upsert_nvl_domains(self, items: Sequence[NVLDomain]) -> None:
        """:meth:`upsert_nvl_domain` for each of ``items``, in order, in a few statements.

        :raises CommandFailed: as :meth:`upsert_racks`.
        """
        wanted = sorted({r for item in items for r in item.rack_ids}, key=str)
        known: set[uuid.UUID] = set()
        for chunk in chunked(wanted):  # within any database's bound parameters
            query = sa.select(rack.c.id).where(rack.c.id.in_(chunk))
            known.update(self.work.conn.execute(query).scalars())

        def values(item: NVLDomain) -> dict[str, Any]:
            if not item.name:
                raise InvalidArgument("nvl_domain.name is required")
            if len(set(item.rack_ids)) != len(item.rack_ids):
                raise InvalidArgument("nvl_domain.rack_ids: a rack is listed twice")
            for rack_id in item.rack_ids:
                if rack_id not in known:
                    raise NotFound(f"nvl_domain.rack_ids: rack [id: {rack_id}] is not found")
            return {"name": item.name, "external_id": item.external_id, "owner": item.owner}

        self._upsert_many(nvl_domain, items, values)
        # The last of a domain listed twice says its members, as one by one.
        members = {item.id: item.rack_ids for item in items}
        for chunk in chunked(sorted(members, key=str)):
            self.work.conn.execute(
                nvl_domain_rack.delete().where(nvl_domain_rack.c.domain_id.in_(chunk))
            )
        rows = [{"domain_id": d, "rack_id": r, "ordinal": i}
                for d, racks in members.items() for i, r in enumerate(racks)]  # fmt: skip
        if rows:
            self.work.conn.execute(nvl_domain_rack.insert(), rows)

    def list_nvl_domains(self) -> list[NVLDomain]:
        members: dict[uuid.UUID, list[uuid.UUID]] = {}
        query = sa.select(nvl_domain_rack).order_by(
            nvl_domain_rack.c.domain_id, nvl_domain_rack.c.ordinal
        )
        for m in self.work.conn.execute(query):
            members.setdefault(m.domain_id, []).append(m.rack_id)
        rows = self.work.conn.execute(
            sa.select(nvl_domain).order_by(nvl_domain.c.name, nvl_domain.c.id)
        )
        return [_rows.nvl_domain(r, members.get(r.id, [])) for r in rows]

    def delete_nvl_domain(self, domain_id: uuid.UUID | str) -> None:
        """:raises NotFound: no such domain."""
        domain_id = parse_id(domain_id, "nvl_domain_id")
        if not self.work.conn.execute(
            nvl_domain.delete().where(nvl_domain.c.id == domain_id)
        ).rowcount:
            raise NotFound(f"NVLink domain [id: {domain_id}] is not found")
