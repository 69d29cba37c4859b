"""Task RPCs (list, get by ids, cancel) and the task manager's submission rule.

A submitted task is a durable row: the outbox the dispatcher's runner delivers
to rack controllers. The conflict rule (SEMANTICS.md "Tasks"): at most one
active task per rack; a task for a busy rack is held as ``waiting`` when the
schedule's policy is queue, and refused otherwise. The rack row is locked while
deciding, so two submitters never both see the rack idle.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import timedelta

import sqlalchemy as sa

from rackcron.errors import FailedPrecondition, NotFound
from rackcron.filters import ComponentFilter
from rackcron.models import (
    ACTIVE_STATUSES,
    OperationTemplate,
    OverlapPolicy,
    Page,
    Task,
    TaskStatus,
)
from rackcron.service import _rows
from rackcron.service._base import OpsBase, check_page, paged, parse_id
from rackcron.store.tables import ACTIVE_STATUS_VALUES, component, rack, task, task_component
from rackcron.templates import task_operation_text

__all__ = ["SubmissionRefused", "TaskOps"]


class SubmissionRefused(FailedPrecondition):
    """The task manager refused a task (busy rack under skip, rack gone, nothing to target)."""


class TaskOps(OpsBase):
    def list_tasks(
        self,
        *,
        rack_id: uuid.UUID | str | None = None,
        component_id: uuid.UUID | str | None = None,
        active_only: bool = False,
        offset: int = 0,
        limit: int = 0,
    ) -> Page[Task]:
        """ListTasks, newest first; ``total`` counts before paging."""
        check_page(offset, limit)
        query = sa.select(task)
        if rack_id is not None:
            query = query.where(task.c.rack_id == parse_id(rack_id, "rack_id"))
        if component_id is not None:
            covers = sa.select(task_component.c.task_id).where(
                task_component.c.task_id == task.c.id,
                task_component.c.component_id == parse_id(component_id, "component_id"),
            )
            query = query.where(covers.exists())
        if active_only:
            query = query.where(task.c.status.in_(ACTIVE_STATUS_VALUES))
        total = self.count(query)
        query = paged(query.order_by(task.c.created_at.desc(), task.c.id), offset, limit)
        return Page[Task](items=[_rows.task(r) for r in self.conn.execute(query)], total=total)

    def get_tasks(self, task_ids: Sequence[uuid.UUID | str]) -> list[Task]:
        """GetTasksByIDs: the tasks that exist, in the order asked."""
        ids = [parse_id(t, f"task_ids[{i}]") for i, t in enumerate(task_ids)]
        if not ids:
            return []
        rows = {r.id: r for r in self.conn.execute(sa.select(task).where(task.c.id.in_(ids)))}
        return [_rows.task(rows[i]) for i in ids if i in rows]

    def cancel_task(self, task_id: uuid.UUID | str) -> Task:
        """CancelTask: an active task becomes terminated (the runner tells its controller).

        :raises NotFound: no such task.
        :raises FailedPrecondition: the task has already ended.
        """
        task_id = parse_id(task_id, "task_id")
        row = self.conn.execute(
            sa.select(task).where(task.c.id == task_id).with_for_update()
        ).first()
        if row is None:
            raise NotFound(f"task_id: task {task_id} not found")
        if TaskStatus(row.status) not in ACTIVE_STATUSES:
            raise FailedPrecondition(
                f"task {task_id} has already ended ({row.status}): nothing to cancel"
            )
        self.conn.execute(
            task.update()
            .where(task.c.id == task_id)
            .values(
                status=TaskStatus.TERMINATED.value,
                message="cancelled",
                finished_at=self.now,
                updated_at=self.now,
            )
        )
        return self.get_tasks([task_id])[0]

    def lock_racks(self, rack_ids: Iterable[uuid.UUID]) -> None:
        """Lock these racks' rows (PostgreSQL) in id order, the one order every submitter uses."""
        ids = sorted(set(rack_ids), key=str)
        if ids:
            self.conn.execute(
                sa.select(rack.c.id).where(rack.c.id.in_(ids)).order_by(rack.c.id).with_for_update()
            ).all()

    def submit_task(
        self,
        *,
        rack_id: uuid.UUID,
        component_filter: ComponentFilter | None,
        template: OperationTemplate,
        policy: OverlapPolicy,
        description: str,
        schedule_id: uuid.UUID | None = None,
        scope_id: uuid.UUID | None = None,
    ) -> Task:
        """Create a task row: ``pending``, or ``waiting`` behind the rack's active task.

        :raises SubmissionRefused: the rack is gone, busy under the skip policy, or
            no component of the rack matches the filter.
        """
        rack_row = self.conn.execute(
            sa.select(rack.c.id).where(rack.c.id == rack_id).with_for_update()
        ).first()
        if rack_row is None:
            raise SubmissionRefused(f"rack {rack_id} no longer exists")
        components = self._task_components(rack_id, component_filter)
        blocking = self.conn.execute(
            sa.select(task.c.id)
            .where(task.c.rack_id == rack_id, task.c.status.in_(ACTIVE_STATUS_VALUES))
            .limit(1)
        ).scalar_one_or_none()
        status, expires = TaskStatus.PENDING, None
        if blocking is not None:
            if policy != OverlapPolicy.QUEUE:
                raise SubmissionRefused(f"rack {rack_id} already has an active task {blocking}")
            status = TaskStatus.WAITING
            timeout = template.information.get("queue_timeout_seconds")
            expires = self.now + timedelta(seconds=timeout) if timeout else None
        task_id = uuid.uuid4()
        self.conn.execute(
            task.insert().values(
                id=task_id,
                schedule_id=schedule_id,
                scope_id=scope_id,
                rack_id=rack_id,
                operation=task_operation_text(template),
                operation_type=template.type,
                operation_code=template.code,
                operation_information=template.information,
                component_uuids=[str(c) for c in components],
                description=description,
                status=status.value,
                message="",
                queue_expires_at=expires,
                created_at=self.now,
                updated_at=self.now,
            )
        )
        if components:
            self.conn.execute(
                task_component.insert(),
                [{"task_id": task_id, "component_id": c} for c in components],
            )
        return self.get_tasks([task_id])[0]

    def _task_components(self, rack_id: uuid.UUID, filt: ComponentFilter | None) -> list[uuid.UUID]:
        """The components a task on ``rack_id`` covers; they must still be on that rack."""
        query = sa.select(component.c.id, component.c.type).where(component.c.rack_id == rack_id)
        rows = self.conn.execute(query.order_by(component.c.id)).all()
        if filt is None:
            return [r.id for r in rows]
        if filt.kind == "types":
            wanted = set(filt.items)
            chosen = [r.id for r in rows if r.type.upper() in wanted]
        else:
            on_rack = {str(r.id) for r in rows}
            chosen = [uuid.UUID(c) for c in filt.items if c in on_rack]
        if not chosen:
            raise SubmissionRefused(f"no component of rack {rack_id} matches the scope's filter")
        return chosen
