"""Task retention's side of the store: old final tasks deleted, one small batch at a time.

:meth:`RetentionOps.prune_tasks` applies ``rackcron.domain.retention``'s rule set-wise to at
most ``retention.MAX_BATCH`` tasks, oldest finished first, in the caller's transaction:

1. it selects their ids (through ``ix_task_finished``), ``FOR UPDATE SKIP LOCKED`` on
   PostgreSQL: replicas pruning at once take different tasks, and a task another
   transaction holds (a CancelTask, say) is left for a later pass;
2. it finds the scopes whose ``last_task_id`` points at them (most old tasks are no
   scope's last), locks them the same way and unsets their ``last_task_id``: what the
   foreign key's ON DELETE SET NULL would do, done first so that it never waits for a
   scope row a firing's write-back holds. A task whose scope row is held elsewhere is
   kept for a later pass;
3. it deletes them; the count is the rows deleted, so replicas never count one twice.

So on PostgreSQL a batch never waits for a lock another transaction holds: it cannot
deadlock with a firing or another replica, and a firing waits at most for one batch's
transaction (milliseconds) on the scope rows it touched. SQLite has one writer at a time
(``BEGIN IMMEDIATE``) and needs no row locks; its batches are as short.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from rackcron.domain.lifecycle import FINAL_STATUSES, status_values
from rackcron.domain.retention import MAX_BATCH, cutoff
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import (
    firing,
    missed_firing,
    rollout,
    rollout_scope,
    task,
    task_schedule_scope,
)

__all__ = ["RetentionOps"]

_scope = task_schedule_scope
_FINAL = status_values(FINAL_STATUSES)


def _prunable(before: datetime) -> sa.ColumnElement[bool]:
    """``rackcron.domain.retention.prunable``, in SQL."""
    return sa.and_(
        task.c.finished_at < before,  # implies ix_task_finished's condition
        task.c.status.in_(_FINAL),
        task.c.cancel_pending == sa.false(),
        task.c.next_check_at.is_(None),
        ~sa.exists().where(firing.c.id == task.c.firing_id, firing.c.finished_at.is_(None)),
        # A task of an unfinished roll-out is kept: the roll-out still reads it.
        ~sa.exists().where(rollout.c.id == task.c.firing_id, rollout.c.finished_at.is_(None)),
    )


@dataclass(frozen=True, slots=True)
class RetentionOps:
    """Retention: delete tasks and firing records that ended long enough ago."""

    work: UnitOfWork

    def _among(
        self, column: sa.ColumnElement[uuid.UUID], ids: Collection[uuid.UUID]
    ) -> sa.ColumnElement[bool]:
        """``column IN ids``; on PostgreSQL ``= ANY`` of one array parameter: 500 separate
        parameters would cost more to render and parse than the statement costs to run."""
        if self.work.conn.dialect.name == "postgresql":
            return column == sa.any_(sa.bindparam(None, list(ids), type_=ARRAY(sa.Uuid)))
        return column.in_(list(ids))

    def prune_tasks(self, retention: timedelta, *, limit: int = MAX_BATCH) -> int:
        """Delete up to ``limit`` final tasks that finished more than ``retention`` ago,
        oldest first, unsetting the ``last_task_id`` of the scopes that point at them;
        returns how many were deleted (0: none left, or none that could be locked now).

        :raises ValueError: ``retention`` is not positive, or ``limit`` is not from 1 to
            ``retention.MAX_BATCH``.
        """
        if not 1 <= limit <= MAX_BATCH:
            raise ValueError(f"limit must be from 1 to {MAX_BATCH}, got {limit}")
        rule = _prunable(cutoff(self.work.now, retention))
        oldest = (
            sa.select(task.c.id)
            .where(rule)
            .order_by(task.c.finished_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        ids = list(self.work.conn.execute(oldest).scalars())
        if not ids:
            return 0
        held = self._unset_last_tasks(ids)
        doomed = [i for i in ids if i not in held]
        if not doomed:
            return 0
        # By id alone: the rows are this transaction's (locked on PostgreSQL, and SQLite's
        # one writer), so they still match the rule.
        return self.work.conn.execute(task.delete().where(self._among(task.c.id, doomed))).rowcount

    def prune_firings(self, retention: timedelta, *, limit: int = MAX_BATCH) -> int:
        """Delete up to ``limit`` firing records, up to ``limit`` roll-outs, that
        finished more than ``retention`` ago (their scopes with them), and up to ``limit``
        missed firings decided as long ago, oldest first;
        returns how many were deleted. An open firing or unfinished roll-out is never
        deleted: it still owes tasks.

        :raises ValueError: ``limit`` is not from 1 to ``retention.MAX_BATCH``.
        """
        if not 1 <= limit <= MAX_BATCH:
            raise ValueError(f"limit must be from 1 to {MAX_BATCH}, got {limit}")
        deleted = 0
        ids = self._oldest(firing.c.id, firing.c.finished_at, retention, limit)
        if ids:
            where = self._among(firing.c.id, ids)
            deleted += self.work.conn.execute(firing.delete().where(where)).rowcount
        ids = self._oldest(rollout.c.id, rollout.c.finished_at, retention, limit)
        if ids:
            scopes = self._among(rollout_scope.c.rollout_id, ids)
            self.work.conn.execute(rollout_scope.delete().where(scopes))
            where = self._among(rollout.c.id, ids)
            deleted += self.work.conn.execute(rollout.delete().where(where)).rowcount
        ids = self._oldest(missed_firing.c.id, missed_firing.c.at, retention, limit)
        if ids:
            where = missed_firing.c.id.in_(ids)
            deleted += self.work.conn.execute(missed_firing.delete().where(where)).rowcount
        return deleted

    def _oldest(
        self,
        key: sa.ColumnElement[Any],
        ended: sa.ColumnElement[Any],
        retention: timedelta,
        limit: int,
    ) -> list[Any]:
        """The keys of up to ``limit`` rows that ended (``ended``) more than ``retention``
        ago, oldest first, locked (rows another replica has locked are left to it)."""
        oldest = (
            sa.select(key)
            .where(ended < cutoff(self.work.now, retention))
            .order_by(ended)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        return list(self.work.conn.execute(oldest).scalars())

    def _unset_last_tasks(self, ids: list[uuid.UUID]) -> set[uuid.UUID]:
        """Unset the ``last_task_id`` of the scopes pointing at these tasks whose rows can be
        locked now; returns the tasks that a scope held elsewhere still points at."""
        pointing = dict(
            self.work.conn.execute(
                sa.select(_scope.c.id, _scope.c.last_task_id).where(
                    self._among(_scope.c.last_task_id, ids)
                )
            ).all()
        )
        if not pointing:  # most old tasks are no scope's last
            return set()
        still = self._among(_scope.c.last_task_id, set(pointing.values()))
        locked = set(
            self.work.conn.execute(
                sa.select(_scope.c.id)
                .where(self._among(_scope.c.id, pointing), still)
                .with_for_update(skip_locked=True)
            ).scalars()
        )
        if locked:
            self.work.conn.execute(
                _scope.update()
                .where(self._among(_scope.c.id, locked), still)
                .values(last_task_id=None)
            )
        return {task_id for scope_id, task_id in pointing.items() if scope_id not in locked}
