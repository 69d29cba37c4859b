"""Scope RPCs: add (merge), update (reconcile), remove, list; and every scope at once.

Rules: docs/spec/SEMANTICS.md "Scope", "Scope RPCs" and "Merge rules". Every method
locks the schedule row first, so two scope changes on one schedule serialise, and a
raised error (a merge of filters of different kinds, the last scope) rolls back
everything the request did.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from rackcron.domain.filters import (
    ComponentFilter,
    filters_equal,
    from_stored,
    merge,
    to_stored,
)
from rackcron.domain.models import Scope, ScopeEntry, ScopeUpdate, TargetSpec
from rackcron.domain.targets import check_target_spec
from rackcron.errors import FailedPrecondition, NotFound
from rackcron.service import _rows
from rackcron.service._base import parse_id
from rackcron.service._schedules import ScheduleOps, insert_scopes
from rackcron.service._targets import TargetOps
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import task_schedule, task_schedule_scope

__all__ = ["ScopeOps"]

_scope = task_schedule_scope


@dataclass(frozen=True, slots=True)
class ScopeOps:
    """A schedule's scopes: list, add, update, remove."""

    work: UnitOfWork
    schedules: ScheduleOps
    targets: TargetOps

    def list_scopes(self, schedule_id: uuid.UUID | str) -> list[Scope]:
        """ListTaskScheduleScopes, in scope order. :raises NotFound: no such schedule."""
        row = self.schedules.schedule_row(schedule_id, field="schedule_id")
        return self._scopes(row.id)

    def scopes_by_schedule(
        self, *, enabled_only: bool = False
    ) -> dict[uuid.UUID, list[ScopeEntry]]:
        """Every schedule's scope (``enabled_only``: each enabled schedule's) in one query:
        schedule id -> its entries in scope order, as :meth:`list_scopes` lists them, for
        readers of the whole store (the plan, the timeline) that would otherwise query
        once per schedule. Schedules without scope entries are absent. A rack's id and a
        filter met again are the object read first (100,000 schedules hold 400,000
        entries)."""
        query = sa.select(_scope.c.schedule_id, _scope.c.id, _scope.c.rack_id,
                          _scope.c.component_filter)  # fmt: skip
        if enabled_only:
            query = query.join(task_schedule, task_schedule.c.id == _scope.c.schedule_id).where(
                task_schedule.c.enabled == sa.true()
            )
        grouped: dict[uuid.UUID, list[ScopeEntry]] = {}
        seen: dict[Any, Any] = {}
        query = query.order_by(_scope.c.schedule_id, _scope.c.ordinal)
        for schedule_id, scope_id, rack_id, stored in self.work.rows(query):
            found = from_stored(stored)
            entry = ScopeEntry(
                scope_id, seen.setdefault(rack_id, rack_id), seen.setdefault(found, found)
            )
            grouped.setdefault(schedule_id, []).append(entry)
        return grouped

    def _scopes(self, schedule_id: uuid.UUID) -> list[Scope]:
        query = (
            sa.select(_scope).where(_scope.c.schedule_id == schedule_id).order_by(_scope.c.ordinal)
        )
        return [_rows.scope(r) for r in self.work.conn.execute(query)]

    def _next_ordinal(self, schedule_id: uuid.UUID) -> int:
        """One past the highest ordinal the schedule's scope uses (0 when it has none)."""
        highest = sa.func.coalesce(sa.func.max(_scope.c.ordinal), -1)
        ordinal: int = self.work.conn.execute(
            sa.select(highest + 1).where(_scope.c.schedule_id == schedule_id)
        ).scalar_one()
        return ordinal

    def add_scope(
        self, schedule_id: uuid.UUID | str, target_spec: TargetSpec | None
    ) -> list[Scope]:
        """AddTaskScheduleScope: add new racks, merge filters of racks already in scope.

        Returns the created entries and the entries whose filter changed, in scope order.

        :raises FailedPrecondition: a filter merge of different kinds (nothing is changed).
        """
        schedule_id = parse_id(schedule_id, "schedule_id")
        check_target_spec(target_spec)  # every id checked before any lookup
        row = self.schedules.schedule_row(schedule_id, lock=True, field="schedule_id")
        resolved = self.targets.resolve_targets(target_spec)
        existing = {s.rack_id: s for s in self._scopes(row.id)}
        new = [(rack_id, filt) for rack_id, filt in resolved if rack_id not in existing]
        touched: set[uuid.UUID] = set()
        for rack_id, incoming in resolved:
            if rack_id not in existing:
                continue
            current = existing[rack_id]
            try:
                merged = merge(current.component_filter, incoming)
            except FailedPrecondition as exc:
                raise FailedPrecondition(f"target_spec: rack {rack_id}: {exc}") from None
            if merged != current.component_filter:
                self._set_filter(current.id, merged)
                touched.add(current.id)
        touched.update(insert_scopes(self.work, row.id, new, self._next_ordinal(row.id)))
        return [s for s in self._scopes(row.id) if s.id in touched]

    def _set_filter(self, scope_id: uuid.UUID, value: ComponentFilter | None) -> None:
        self.work.conn.execute(
            _scope.update().where(_scope.c.id == scope_id).values(component_filter=to_stored(value))
        )

    def update_scope(self, schedule_id: uuid.UUID | str, desired: TargetSpec | None) -> ScopeUpdate:
        """UpdateTaskScheduleScope: make the scope equal ``desired`` exactly.

        Racks in both keep their scope id and last_task_id; their filter is replaced
        when it differs (order-insensitive).
        """
        schedule_id = parse_id(schedule_id, "schedule_id")
        check_target_spec(desired)  # every id checked before any lookup
        row = self.schedules.schedule_row(schedule_id, lock=True, field="schedule_id")
        resolved = self.targets.resolve_targets(desired)
        existing = {s.rack_id: s for s in self._scopes(row.id)}
        wanted = dict(resolved)
        removed = [s.id for rack_id, s in existing.items() if rack_id not in wanted]
        if removed:
            self.work.conn.execute(_scope.delete().where(_scope.c.id.in_(removed)))
        updated = 0
        for rack_id, filt in resolved:
            current = existing.get(rack_id)
            if current is not None and not filters_equal(current.component_filter, filt):
                self._set_filter(current.id, filt)
                updated += 1
        new = [(rack_id, filt) for rack_id, filt in resolved if rack_id not in existing]
        insert_scopes(self.work, row.id, new, self._next_ordinal(row.id))
        return ScopeUpdate(
            scopes=self._scopes(row.id), added=len(new), removed=len(removed), updated=updated
        )

    def remove_scope(self, scope_id: uuid.UUID | str) -> None:
        """RemoveTaskScheduleScope: its in-flight task is not cancelled.

        :raises NotFound: no such scope.
        :raises FailedPrecondition: it is the schedule's last scope.
        """
        scope_id = parse_id(scope_id, "scope_id")
        schedule_id = self.work.conn.execute(
            sa.select(_scope.c.schedule_id).where(_scope.c.id == scope_id)
        ).scalar_one_or_none()
        if schedule_id is None:
            raise NotFound(f"scope_id: task schedule scope {scope_id} not found")
        self.schedules.schedule_row(schedule_id, lock=True)
        remaining = self.work.conn.execute(
            sa.select(sa.func.count()).where(_scope.c.schedule_id == schedule_id)
        ).scalar_one()
        if remaining <= 1:
            raise FailedPrecondition(
                f"scope_id: {scope_id} is the last scope of task schedule {schedule_id};"
                " a schedule needs at least one (delete the schedule instead)"
            )
        self.work.conn.execute(_scope.delete().where(_scope.c.id == scope_id))
