"""Inventory operations: racks, components and NVLink domains that scopes point at.

Upserts are keyed by id (create or replace every field). A rack that a schedule's
scope still uses cannot be deleted; its components are unlinked (kept, rack
NULL) and its domain memberships dropped.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import sqlalchemy as sa

from rackcron.domain.models import Component, NVLDomain, Rack, Task
from rackcron.domain.targets import normalize_mac
from rackcron.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound
from rackcron.service import _rows
from rackcron.service._base import check_text, parse_id
from rackcron.service._tasks import chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import (
    ACTIVE_STATUS_VALUES,
    component,
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


@dataclass(frozen=True, slots=True)
class InventoryOps:
    """Racks, components and NVLink domains."""

    work: UnitOfWork

    def _upsert(self, table: sa.Table, item_id: uuid.UUID, values: Mapping[str, object]) -> None:
        for field, value in values.items():
            if isinstance(value, str):
                check_text(value, f"{table.name}.{field}")
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
        if not item.name:
            raise InvalidArgument("rack.name is required")
        controller = None
        if item.controller is not None:
            controller = item.controller.model_dump(mode="json")  # the fields that are set
            for field, value in controller.items():
                check_text(value, f"controller.{field}", max_length=_MAX_CONTROLLER_TEXT)
        values = {
            "name": item.name,
            "external_id": item.external_id,
            "owner": item.owner,
            "controller": controller,  # None: SQL NULL, the server's default controller
            "labels": dict(item.labels) or None,
        }
        for key, value in item.labels.items():
            check_text(key, "rack.labels")
            check_text(value, f"rack.labels.{key}")
        self._upsert(rack, item.id, values)
        return item

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
        mac = None
        if item.bmc_mac:
            mac = normalize_mac(item.bmc_mac)
            if mac is None:
                raise InvalidArgument(f"component.bmc_mac: {item.bmc_mac!r} is not a MAC address")
        if (
            item.rack_id is not None
            and self.work.conn.execute(
                sa.select(rack.c.id).where(rack.c.id == item.rack_id)
            ).first()
            is None
        ):
            raise NotFound(f"component.rack_id: rack [id: {item.rack_id}] is not found")
        values = {
            "rack_id": item.rack_id,
            "type": item.type.value,
            "name": item.name,
            "external_id": item.external_id,
            "bmc_mac": mac,
        }
        self._upsert(component, item.id, values)
        return item.model_copy(update={"bmc_mac": mac})

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
        if not item.name:
            raise InvalidArgument("nvl_domain.name is required")
        if len(set(item.rack_ids)) != len(item.rack_ids):
            raise InvalidArgument("nvl_domain.rack_ids: a rack is listed twice")
        known = {
            found
            for chunk in chunked(item.rack_ids)  # within any database's bound parameters
            for found in self.work.conn.execute(
                sa.select(rack.c.id).where(rack.c.id.in_(chunk))
            ).scalars()
        }
        for rack_id in item.rack_ids:
            if rack_id not in known:
                raise NotFound(f"nvl_domain.rack_ids: rack [id: {rack_id}] is not found")
        values = {"name": item.name, "external_id": item.external_id, "owner": item.owner}
        self._upsert(nvl_domain, item.id, values)
        self.work.conn.execute(
            nvl_domain_rack.delete().where(nvl_domain_rack.c.domain_id == item.id)
        )
        if item.rack_ids:
            self.work.conn.execute(
                nvl_domain_rack.insert(),
                [
                    {"domain_id": item.id, "rack_id": r, "ordinal": i}
                    for i, r in enumerate(item.rack_ids)
                ],
            )
        return item

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
