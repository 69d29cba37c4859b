"""Failures first: failed tasks, missed firings and firings with refused scopes newest
first, the schedules that fail, and the counts the console's overview leads with.

Every read is bounded by an index and a limit, whatever the store holds: failures by
``ix_task_failed`` (only failed and terminated tasks), misses by ``ix_missed_firing_at``,
active tasks by ``ix_task_active``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.models import (
    MissedFiring,
    MissReason,
    RefusedFiring,
    Schedule,
    TaskFailure,
)
from rackcron.domain.results import NEVER_FIRED, LastResult
from rackcron.service import _rows
from rackcron.service._tasks import TaskOps, chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import (
    ACTIVE_TASK,
    FAILED_TASK,
    firing,
    missed_firing,
    rack,
    task,
    task_schedule,
    task_schedule_scope,
)

__all__ = ["Failing", "FailureOps", "FleetCounts"]


@dataclass(frozen=True, slots=True)
class FleetCounts:
    """How the fleet stands: tasks now, and what went wrong since a time."""

    running: int  # tasks pending or running now
    waiting: int  # tasks waiting in a queue now
    failed: int  # tasks that ended failed or terminated since
    missed: int  # firings missed since: past their deadline, or kept back by a roll-out
    held: int  # firings a freeze held since
    refused: int  # scopes the task manager refused since (a conflicting task, a full queue)


@dataclass(frozen=True, slots=True)
class Failing:
    """A schedule that fails: its last result, and its failures since the window's start."""

    schedule: Schedule
    result: LastResult
    failed_since: int


def _missed(row: sa.Row[Any]) -> MissedFiring:
    return MissedFiring(
        id=row.id,
        schedule_id=row.schedule_id,
        schedule_name=row.schedule_name,
        due_at=row.due_at,
        at=row.at,
        lateness_seconds=row.lateness_ms / 1000,
        reason=MissReason(row.reason),
        detail=row.detail,
    )


@dataclass(frozen=True, slots=True)
class FailureOps:
    """What went wrong, newest first."""

    work: UnitOfWork
    tasks: TaskOps

    def failures(
        self, limit: int, *, schedule_id: uuid.UUID | None = None, until: datetime | None = None
    ) -> list[TaskFailure]:
        """The tasks that ended failed or terminated, newest first, at most ``limit`` (0:
        all; of ``schedule_id`` alone when given; ended at ``until`` or before, when
        given), with their rack's and schedule's names."""
        query = (
            sa.select(task, rack.c.name.label("rack_name"), task_schedule.c.name.label("sname"))
            .outerjoin(rack, rack.c.id == task.c.rack_id)
            .outerjoin(task_schedule, task_schedule.c.id == task.c.schedule_id)
            .where(FAILED_TASK, task.c.finished_at.is_not(None))
            .order_by(task.c.finished_at.desc(), task.c.id.desc())
        )
        if limit:
            query = query.limit(limit)
        if schedule_id is not None:
            query = query.where(task.c.schedule_id == schedule_id)
        if until is not None:
            query = query.where(task.c.finished_at <= until)
        return [
            TaskFailure(task=_rows.task(row), rack=row.rack_name, schedule=row.sname)
            for row in self.work.conn.execute(query)
        ]

    def misses(
        self, limit: int, *, schedule_id: uuid.UUID | None = None, until: datetime | None = None
    ) -> list[MissedFiring]:
        """The missed firings kept, newest first, at most ``limit`` (0: all; of
        ``schedule_id`` alone, and told at ``until`` or before, when given)."""
        query = sa.select(missed_firing).order_by(
            missed_firing.c.at.desc(), missed_firing.c.id.desc()
        )
        if limit:
            query = query.limit(limit)
        if schedule_id is not None:
            query = query.where(missed_firing.c.schedule_id == schedule_id)
        if until is not None:
            query = query.where(missed_firing.c.at <= until)
        return [_missed(row) for row in self.work.conn.execute(query)]

    def refusals(
        self, limit: int, *, schedule_id: uuid.UUID | None = None, until: datetime | None = None
    ) -> list[RefusedFiring]:
        """The firings some of whose scopes the task manager refused, newest first, at most
        ``limit`` (0: all; of ``schedule_id`` alone, and fired at ``until`` or before, when
        given), with the refused racks' names."""
        query = (
            sa.select(firing)
            .where(firing.c.refused.is_not(None))
            .order_by(firing.c.fired_at.desc(), firing.c.id.desc())
        )
        if limit:
            query = query.limit(limit)
        if schedule_id is not None:
            query = query.where(firing.c.schedule_id == schedule_id)
        if until is not None:
            query = query.where(firing.c.fired_at <= until)
        rows = list(self.work.conn.execute(query))
        racks: dict[str, str] = {}  # refused scope id -> its rack's id
        for row in rows:
            refused = set(row.refused)
            racks.update((scope[0], scope[1]) for scope in row.scopes if scope[0] in refused)
        names: dict[str, str] = {}
        for chunk in chunked(sorted({uuid.UUID(r) for r in racks.values()}, key=str)):
            query = sa.select(rack.c.id, rack.c.name).where(rack.c.id.in_(chunk))
            names.update((str(i), n) for i, n in self.work.conn.execute(query))
        return [
            RefusedFiring(
                id=row.id,
                schedule_id=row.schedule_id,
                schedule_name=row.schedule_name,
                due_at=row.due_at,
                at=row.fired_at,
                racks=sorted(names.get(racks[s], racks[s]) for s in row.refused if s in racks),
            )
            for row in rows
        ]

    def counts(self, since: datetime) -> FleetCounts:
        """Active tasks by status now; failures and misses since ``since``."""
        active: dict[str, int] = dict(
            self.work.conn.execute(
                sa.select(task.c.status, sa.func.count()).where(ACTIVE_TASK).group_by(task.c.status)
            ).all()
        )
        failed = self.work.conn.execute(
            sa.select(sa.func.count())
            .select_from(task)
            .where(FAILED_TASK, task.c.finished_at >= since)
        ).scalar_one()
        misses: dict[str, int] = dict(
            self.work.conn.execute(
                sa.select(missed_firing.c.reason, sa.func.count())
                .where(missed_firing.c.at >= since)
                .group_by(missed_firing.c.reason)
            ).all()
        )
        held = misses.pop(MissReason.FREEZE.value, 0)
        postgres = self.work.conn.dialect.name == "postgresql"
        length = (sa.func.jsonb_array_length if postgres else sa.func.json_array_length)(
            firing.c.refused
        )
        refused = self.work.conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(length), 0)).where(
                firing.c.refused.is_not(None), firing.c.fired_at >= since
            )
        ).scalar_one()
        return FleetCounts(
            running=active.get(TaskStatus.PENDING.value, 0)
            + active.get(TaskStatus.RUNNING.value, 0),
            waiting=active.get(TaskStatus.WAITING.value, 0),
            failed=failed,
            missed=sum(misses.values()),
            held=held,
            refused=int(refused),
        )

    def failing(self, limit: int, since: datetime) -> tuple[list[Failing], int]:
        """The schedules whose latest task on some scope failed or was terminated, or with
        a task that did since ``since``, the latest failure first: at most ``limit``, with
        their last results and failures since; and how many there are."""
        scope = task_schedule_scope
        latest = (
            sa.select(scope.c.schedule_id.label("id"), task.c.finished_at.label("ended"))
            .select_from(scope.join(task, task.c.id == scope.c.last_task_id))
            .where(FAILED_TASK)
        )
        recent = sa.select(task.c.schedule_id.label("id"), task.c.finished_at.label("ended")).where(
            FAILED_TASK, task.c.finished_at >= since, task.c.schedule_id.is_not(None)
        )
        either = sa.union_all(latest, recent).subquery()
        ended = sa.func.max(either.c.ended)
        failing = sa.select(either.c.id, ended.label("ended")).group_by(either.c.id)
        total = self.work.conn.execute(
            sa.select(sa.func.count()).select_from(failing.subquery())
        ).scalar_one()
        ordered = failing.order_by(ended.desc(), either.c.id).limit(limit)
        ids = list(self.work.conn.execute(ordered).scalars())
        counts: dict[uuid.UUID, int] = dict(
            self.work.conn.execute(
                sa.select(task.c.schedule_id, sa.func.count())
                .where(FAILED_TASK, task.c.finished_at >= since, task.c.schedule_id.in_(ids))
                .group_by(task.c.schedule_id)
            ).all()
        )
        results = self.tasks.last_results(ids)
        rows = self.work.conn.execute(sa.select(task_schedule).where(task_schedule.c.id.in_(ids)))
        schedules = {row.id: _rows.schedule(row) for row in rows}
        listed = [
            Failing(schedules[i], results.get(i, NEVER_FIRED), counts.get(i, 0))
            for i in ids
            if i in schedules
        ]
        return listed, total
