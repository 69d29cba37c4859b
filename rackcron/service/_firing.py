"""The three phases of a firing, each run in its own transaction by the caller.

SEMANTICS.md "Dispatch":

1. :meth:`FiringOps.claim_due` / :meth:`FiringOps.claim` lock the schedule rows
   (PostgreSQL ``FOR UPDATE``, ``SKIP LOCKED`` for the dispatcher; SQLite's
   ``BEGIN IMMEDIATE``), re-check they are due, apply the overlap policy and
   advance the schedule, then the caller commits. From here the tick is spent:
   a crash later loses at most this tick's tasks, never fires it twice.
2. :meth:`FiringOps.submit` creates one task per eligible scope, each in a
   savepoint, so one scope's failure does not stop the others.
3. :meth:`FiringOps.write_back` records each scope's ``last_task_id``.

The overlap check counts a scope as busy when its last task is active OR any
active task carries its scope id, so a task submitted in phase 2 whose id was
never written back (a crash before phase 3) still blocks the next firing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from rackcron.errors import FailedPrecondition, RackcronError
from rackcron.firing import advance, select_scopes, task_description
from rackcron.models import Schedule, Scope, TaskStatus
from rackcron.service import _rows
from rackcron.service._schedules import ScheduleOps
from rackcron.service._tasks import TaskOps
from rackcron.store.tables import ACTIVE_STATUS_VALUES, task, task_schedule, task_schedule_scope

__all__ = ["Firing", "FiringOps", "ScopeOutcome"]

_scope = task_schedule_scope


@dataclass(frozen=True)
class ScopeOutcome:
    """What a firing did on one scope."""

    scope_id: uuid.UUID
    rack_id: uuid.UUID
    result: Literal["submitted", "queued", "skipped", "failed"]
    task_id: uuid.UUID | None = None
    error: str | None = None


@dataclass(frozen=True)
class Firing:
    """A claimed firing: the schedule as it was when due, and the scopes to submit."""

    schedule: Schedule
    at: datetime
    manual: bool
    scopes: list[Scope]  # every scope, in scope order
    submit: list[Scope]  # the scopes the overlap policy lets through

    @property
    def lag_seconds(self) -> float:
        """Dispatch time minus the time the schedule was due (0 for a manual trigger)."""
        due = self.schedule.next_run_at
        return 0.0 if self.manual or due is None else (self.at - due).total_seconds()


class FiringOps(ScheduleOps, TaskOps):
    def claim_due(self, limit: int) -> list[Firing]:
        """Phase 1 for automatic dispatch: up to ``limit`` due schedules, oldest due first."""
        query = (
            sa.select(task_schedule)
            .where(
                task_schedule.c.enabled == sa.true(),
                task_schedule.c.next_run_at.is_not(None),
                task_schedule.c.next_run_at <= self.now,
            )
            .order_by(task_schedule.c.next_run_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        return self._claim(list(self.conn.execute(query)), manual=False)

    def claim(self, schedule_id: uuid.UUID | str) -> Firing:
        """Phase 1 for TriggerTaskSchedule: fires regardless of enabled and next_run_at.

        :raises NotFound: no such schedule.
        :raises FailedPrecondition: a consumed one-time schedule.
        """
        row = self.schedule_row(schedule_id, lock=True)
        if _rows.schedule(row).consumed:
            raise FailedPrecondition(
                f"task schedule {row.id} is a one-time schedule that has already fired; create a new one"
            )
        return self._claim([row], manual=True)[0]

    def _claim(self, rows: Sequence[Any], *, manual: bool) -> list[Firing]:
        if not rows:
            return []
        ids = [r.id for r in rows]
        scope_rows = self.conn.execute(
            sa.select(_scope).where(_scope.c.schedule_id.in_(ids)).order_by(_scope.c.ordinal)
        ).all()
        scopes: dict[uuid.UUID, list[Scope]] = {i: [] for i in ids}
        for r in scope_rows:
            scopes[r.schedule_id].append(_rows.scope(r))
        busy = self._busy_scopes(scope_rows)
        firings = []
        for row in rows:
            schedule = _rows.schedule(row)
            submit, _skipped = select_scopes(
                scopes[row.id], busy, schedule.overlap_policy, manual=manual
            )
            step = advance(
                schedule.spec_type,
                schedule.spec,
                schedule.timezone,
                enabled=schedule.enabled,
                last_run_at=schedule.last_run_at,
                now=self.now,
                fired=bool(submit) or manual,
            )
            self.conn.execute(
                task_schedule.update()
                .where(task_schedule.c.id == row.id)
                .values(
                    next_run_at=step.next_run_at,
                    last_run_at=step.last_run_at,
                    enabled=step.enabled,
                    updated_at=self.now,
                )
            )
            firings.append(Firing(schedule, self.now, manual, scopes[row.id], submit))
        return firings

    def _busy_scopes(self, scope_rows: Sequence[Any]) -> set[uuid.UUID]:
        if not scope_rows:
            return set()
        last_task = {r.last_task_id: r.id for r in scope_rows if r.last_task_id is not None}
        query = sa.select(task.c.id, task.c.scope_id).where(
            task.c.status.in_(ACTIVE_STATUS_VALUES),
            sa.or_(
                task.c.scope_id.in_([r.id for r in scope_rows]),
                task.c.id.in_(list(last_task)),
            ),
        )
        busy = set()
        for task_id, scope_id in self.conn.execute(query):
            busy.add(scope_id if scope_id is not None else last_task[task_id])
            if task_id in last_task:
                busy.add(last_task[task_id])
        return busy

    def submit(self, firing: Firing) -> list[ScopeOutcome]:
        """Phase 2: one task per scope to submit; failures are per scope."""
        schedule = firing.schedule
        assert schedule.template is not None
        submitting = {s.id for s in firing.submit}
        # Lock the firing's racks in one stable order before submitting: two firings
        # over the same racks in different scope orders would otherwise deadlock.
        self.lock_racks(s.rack_id for s in firing.submit)
        outcomes = []
        for scope in firing.scopes:
            if scope.id not in submitting:
                outcomes.append(ScopeOutcome(scope.id, scope.rack_id, "skipped"))
                continue
            try:
                with self.conn.begin_nested():
                    submitted = self.submit_task(
                        rack_id=scope.rack_id,
                        component_filter=scope.component_filter,
                        template=schedule.template,
                        policy=schedule.overlap_policy,
                        description=task_description(schedule.name, firing.at),
                        schedule_id=schedule.id,
                        scope_id=scope.id,
                    )
            except Exception as exc:  # one scope's failure never stops the others
                error = (
                    exc.message
                    if isinstance(exc, RackcronError)
                    else f"{type(exc).__name__}: {exc}"
                )
                outcomes.append(ScopeOutcome(scope.id, scope.rack_id, "failed", error=error))
                continue
            result = "queued" if submitted.status == TaskStatus.WAITING else "submitted"
            outcomes.append(ScopeOutcome(scope.id, scope.rack_id, result, task_id=submitted.id))
        return outcomes

    def write_back(self, outcomes: Sequence[ScopeOutcome]) -> None:
        """Phase 3: each submitted scope's last_task_id (scopes deleted meanwhile are ignored)."""
        rows = [
            {"b_scope": o.scope_id, "b_task": o.task_id} for o in outcomes if o.task_id is not None
        ]
        if rows:
            self.conn.execute(
                _scope.update()
                .where(_scope.c.id == sa.bindparam("b_scope"))
                .values(last_task_id=sa.bindparam("b_task")),
                rows,
            )
