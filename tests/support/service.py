"""Builders and probes shared by the service tests.

* ``make_operation`` / ``rack_spec`` build requests without repeating the model plumbing;
* ``create`` makes a schedule with sensible defaults;
* ``snapshot`` reads every table, so "a refused request changes nothing" is one equality;
* ``set_status`` moves a task along, as the task runner would.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from rackcron.domain.models import (
    BringUp,
    ComponentTarget,
    ComponentType,
    ExternalRef,
    Ingest,
    NVLDomainTarget,
    PowerOff,
    PowerOn,
    PowerReset,
    RackTarget,
    Schedule,
    ScheduleConfig,
    SpecType,
    TargetSpec,
    TaskStatus,
    UpgradeFirmware,
)
from rackcron.service import Service
from rackcron.store import transaction
from rackcron.store.tables import metadata, task, task_schedule_scope

__all__ = [
    "component_spec",
    "create",
    "domain_spec",
    "make_operation",
    "rack_spec",
    "scope_rows",
    "set_status",
    "snapshot",
]

_OPERATIONS = {
    "power_on": PowerOn,
    "power_off": PowerOff,
    "power_reset": PowerReset,
    "bring_up": BringUp,
    "ingest": Ingest,
    "upgrade_firmware": UpgradeFirmware,
}


def rack_spec(*racks: uuid.UUID | str, types: Sequence[ComponentType] = ()) -> TargetSpec:
    """Racks by UUID (a ``uuid.UUID``) or by name (a ``str``), each with ``types``."""
    targets = [
        RackTarget(id=str(r), component_types=list(types))
        if isinstance(r, uuid.UUID)
        else RackTarget(name=r, component_types=list(types))
        for r in racks
    ]
    return TargetSpec(racks=targets)


def component_spec(*components: uuid.UUID | ExternalRef) -> TargetSpec:
    """Components by UUID or by external reference."""
    return TargetSpec(
        components=[
            ComponentTarget(id=str(c)) if isinstance(c, uuid.UUID) else ComponentTarget(external=c)
            for c in components
        ]
    )


def domain_spec(*domains: NVLDomainTarget) -> TargetSpec:
    return TargetSpec(nvl_domains=list(domains))


def make_operation(
    kind: str = "power_on",
    racks: Iterable[uuid.UUID | str] = (),
    *,
    target: TargetSpec | None = None,
    types: Sequence[ComponentType] = (),
    **params: Any,
) -> Any:
    """An operation of ``kind`` targeting ``racks`` (or the given ``target``)."""
    spec = target if target is not None else rack_spec(*racks, types=types)
    return _OPERATIONS[kind](target_spec=spec, **params)


def create(
    service: Service,
    racks: Iterable[uuid.UUID | str] = (),
    *,
    name: str = "nightly",
    spec_type: SpecType = SpecType.INTERVAL,
    spec: str = "1h",
    timezone: str = "",
    policy: Any = None,
    kind: str = "power_on",
    target: TargetSpec | None = None,
    **params: Any,
) -> Schedule:
    """Create a schedule; by default an hourly power-on of ``racks``."""
    config = ScheduleConfig(
        name=name, spec_type=spec_type, spec=spec, timezone=timezone, overlap_policy=policy
    )
    return service.create_schedule(config, make_operation(kind, racks, target=target, **params))


def snapshot(service: Service) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table, as sorted tuples of reprs."""
    with transaction(service.engine, write=False) as conn:
        return {
            table.name: sorted(
                tuple(repr(v) for v in row) for row in conn.execute(sa.select(table))
            )
            for table in metadata.sorted_tables
        }


def set_status(
    service: Service, task_id: uuid.UUID, status: TaskStatus, finished_at: datetime | None = None
) -> None:
    """Move a task to ``status`` (ended at ``finished_at``, if given), as the runner does
    when a rack controller reports."""
    values: dict[str, Any] = {"status": status.value}
    if finished_at is not None:
        values["finished_at"] = finished_at
    with transaction(service.engine) as conn:
        conn.execute(task.update().where(task.c.id == task_id).values(**values))


def scope_rows(service: Service, schedule_id: uuid.UUID) -> list[Any]:
    """The raw scope rows of a schedule (works after the schedule is deleted too)."""
    with transaction(service.engine, write=False) as conn:
        query = sa.select(task_schedule_scope).where(
            task_schedule_scope.c.schedule_id == schedule_id
        )
        return list(conn.execute(query))
