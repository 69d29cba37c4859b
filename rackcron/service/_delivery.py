"""The task runner's side of the store: which tasks need a controller call, and what came of it.

A task has runner work while ``next_check_at`` is set and due (docs/spec/SEMANTICS.md
"Tasks"; the runner itself lives in ``rackcron.dispatcher.runner``):

* ``pending``: deliver it to its rack's controller;
* ``running``: ask its controller how it is doing;
* ``cancel_pending`` (a cancelled task, or one failed after its controller stopped
  answering): tell its controller to stop it.

:meth:`DeliveryOps.claim_work` takes due tasks (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL) and moves their ``next_check_at`` a lease ahead, so no other runner
takes them while the calls are made; a runner that dies loses its lease, and the
tasks come due again (a retried submit is safe: controllers key it by task id).
:meth:`DeliveryOps.record` writes what the calls gave, each kind of result with
one statement guarded by the status it expects, so a task cancelled meanwhile is
never overwritten. Messages come from controllers, so :func:`storable` makes each one
fit every backend first (a NUL or a lone surrogate would fail the whole write, and the
same answer would fail it again every lease). The queue moves in :meth:`DeliveryOps.expire_queued` (a
waiting task past its queue timeout fails) and :meth:`DeliveryOps.promote_waiting`
(the oldest waiting task of a rack with no pending or running task becomes pending).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

import sqlalchemy as sa

from rackcron.models import TaskStatus
from rackcron.service._tasks import TaskOps, chunked
from rackcron.store.tables import rack, task

__all__ = ["MAX_MESSAGE", "DeliveryOps", "Update", "Work", "storable"]

_PENDING, _RUNNING = TaskStatus.PENDING.value, TaskStatus.RUNNING.value
_CANDIDATES = 4  # due tasks read per task claimed, at most
_WAITING, _TERMINATED = TaskStatus.WAITING.value, TaskStatus.TERMINATED.value

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: Longest task message stored (characters); a longer one is cut, ending in an ellipsis.
MAX_MESSAGE = 4096


def storable(message: str) -> str:
    """``message`` as every backend can store it: NUL characters (PostgreSQL refuses
    them) and lone surrogates (not encodable as UTF-8) become U+FFFD, and it is cut to
    :data:`MAX_MESSAGE` characters."""
    message = _UNSTORABLE.sub("\ufffd", message)
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    return message


class Work(NamedTuple):
    """A task the runner must call its controller about."""

    task_id: uuid.UUID
    rack_id: uuid.UUID
    status: str  # pending (deliver), running (poll) or terminated (send the cancel)
    failures: int  # failed controller calls in a row
    operation_type: str
    operation_code: str
    information: dict[str, Any]
    component_uuids: list[str]
    description: str
    controller: dict[str, Any] | None  # the rack's controller setting; None: the default
    rack_name: str | None  # None: the rack is no longer in the inventory


class Update(NamedTuple):
    """What one controller call gave for one task.

    ``kind``:

    * ``started``: delivered, now running (pending -> running);
    * ``ended``: finished with ``status`` (completed, failed, terminated) and ``message``;
    * ``abandoned``: failed with ``message`` after the controller stopped answering; the
      operation may still run, so the controller is to be told to stop it, as after a
      cancellation;
    * ``retry``: the call made for a task in status ``was`` failed; ``message`` says why
      (empty: keep the task's message), try again in ``delay`` seconds;
    * ``polled``: still running, look again in ``delay`` seconds;
    * ``cancel_sent``: the controller was told to stop the task (or given up on, with
      ``message``);
    * ``release``: not handled this time, due again now.
    """

    task_id: uuid.UUID
    kind: Literal["started", "ended", "abandoned", "retry", "polled", "cancel_sent", "release"]
    status: str = ""
    message: str = ""
    delay: float = 0.0
    was: str = ""  # the task's status when the call was decided (retry, cancel_sent)


_WORK = sa.select(
    task.c.id,
    task.c.rack_id,
    task.c.status,
    task.c.failures,
    task.c.operation_type,
    task.c.operation_code,
    task.c.operation_information,
    task.c.component_uuids,
    task.c.description,
    rack.c.controller,
    rack.c.name,
).select_from(task.outerjoin(rack, rack.c.id == task.c.rack_id))


def _status_is(*statuses: str) -> sa.ColumnElement[bool]:
    """``status`` is one of these (no ``IN``: an expanding list cannot run in executemany)."""
    return sa.or_(*(task.c.status == s for s in statuses))


def _by_id(statement: sa.Update) -> sa.Update:
    return statement.where(task.c.id == sa.bindparam("b_id"))


class DeliveryOps(TaskOps):
    def claim_work(
        self,
        limit: int,
        *,
        lease: float,
        take: Callable[[Work], bool] = lambda work: True,
    ) -> list[Work]:
        """Up to ``limit`` due tasks, oldest due first, leased for ``lease`` seconds.

        ``take`` can leave a task alone (its controller is still busy with an
        earlier call): it stays due, for this runner's next round or another runner.
        Candidates are read four times over, so the tasks of a busy controller do not
        crowd out the others'.
        """
        query = (
            _WORK.where(task.c.next_check_at.is_not(None), task.c.next_check_at <= self.now)
            .order_by(task.c.next_check_at)
            .limit(limit * _CANDIDATES)
            .with_for_update(skip_locked=True, of=task)
        )
        work = [w for w in (Work(*row) for row in self.conn.execute(query)) if take(w)][:limit]
        until = self.now + timedelta(seconds=lease)
        for chunk in chunked([w.task_id for w in work]):
            self.conn.execute(task.update().where(task.c.id.in_(chunk)).values(next_check_at=until))
        return work

    def record(self, updates: Sequence[Update]) -> list[uuid.UUID]:
        """Write the runner's results; returns the ids of the ``started`` tasks that had
        been cancelled meanwhile: the cancellation may have reached the controller
        before the task did, so it is sent again (they are made due now)."""
        now = self.now
        groups: dict[str, list[Update]] = {}
        for update in updates:
            update = update._replace(message=storable(update.message))
            groups.setdefault(update.kind, []).append(update)
        later: sa.BindParameter[datetime] = sa.bindparam("b_at")

        def run(statement: sa.Update, rows: list[dict[str, Any]]) -> None:
            if rows:
                self.conn.execute(statement, rows)

        started = groups.get("started", [])
        run(
            _by_id(task.update())
            .where(task.c.status == _PENDING)
            .values(
                status=_RUNNING, started_at=now, updated_at=now, failures=0, message="",
                next_check_at=later,
            ),
            [{"b_id": u.task_id, "b_at": now + timedelta(seconds=u.delay)} for u in started],
        )  # fmt: skip
        run(
            _by_id(task.update())
            .where(_status_is(_PENDING, _RUNNING))
            .values(
                status=sa.bindparam("b_status"), message=sa.bindparam("b_message"),
                finished_at=now, updated_at=now, next_check_at=None,
                started_at=sa.func.coalesce(task.c.started_at, now),
            ),
            [
                {"b_id": u.task_id, "b_status": u.status, "b_message": u.message}
                for u in groups.get("ended", [])
            ],
        )  # fmt: skip
        run(
            _by_id(task.update())
            .where(_status_is(_PENDING, _RUNNING))
            .values(
                status=sa.bindparam("b_status"), message=sa.bindparam("b_message"),
                finished_at=now, updated_at=now, failures=0, cancel_pending=True,
                next_check_at=now, started_at=sa.func.coalesce(task.c.started_at, now),
            ),
            [
                {"b_id": u.task_id, "b_status": u.status, "b_message": u.message}
                for u in groups.get("abandoned", [])
            ],
        )  # fmt: skip
        run(
            # Only while the task is as it was when the call was decided: a delivery's
            # late failure never touches a task cancelled meanwhile.
            _by_id(task.update())
            .where(task.c.status == sa.bindparam("b_was"))
            .values(
                failures=task.c.failures + 1,
                message=sa.func.coalesce(sa.bindparam("b_message"), task.c.message),
                updated_at=now, next_check_at=later,
            ),
            [
                {"b_id": u.task_id, "b_was": u.was, "b_message": u.message or None,
                 "b_at": now + timedelta(seconds=u.delay)}
                for u in groups.get("retry", [])
            ],
        )  # fmt: skip
        run(
            _by_id(task.update())
            .where(task.c.status == _RUNNING)
            .values(failures=0, next_check_at=later),
            [
                {"b_id": u.task_id, "b_at": now + timedelta(seconds=u.delay)}
                for u in groups.get("polled", [])
            ],
        )
        run(
            _by_id(task.update())
            .where(task.c.cancel_pending)
            .values(
                cancel_pending=False, next_check_at=None, failures=0, updated_at=now,
                message=sa.func.coalesce(sa.bindparam("b_message"), task.c.message),
            ),
            [
                {"b_id": u.task_id, "b_message": u.message or None}
                for u in groups.get("cancel_sent", [])
            ],
        )  # fmt: skip
        run(
            _by_id(task.update())
            .where(task.c.next_check_at.is_not(None))
            .values(next_check_at=now),
            [{"b_id": u.task_id} for u in groups.get("release", [])],
        )
        return self._cancelled_meanwhile([u.task_id for u in started])

    def _cancelled_meanwhile(self, started: Sequence[uuid.UUID]) -> list[uuid.UUID]:
        found: list[uuid.UUID] = []
        for chunk in chunked(started):
            found += self.conn.execute(
                sa.select(task.c.id).where(task.c.id.in_(chunk), task.c.status == _TERMINATED)
            ).scalars()
        if found:
            self.conn.execute(
                _by_id(task.update()).values(cancel_pending=True, next_check_at=self.now),
                [{"b_id": i} for i in found],
            )
        return found

    def expire_queued(self) -> int:
        """Fail every waiting task whose queue timeout has passed; returns how many."""
        result = self.conn.execute(
            task.update()
            .where(
                task.c.status == _WAITING,
                task.c.queue_expires_at.is_not(None),
                task.c.queue_expires_at <= self.now,
            )
            .values(
                status=TaskStatus.FAILED.value,
                message="queue timeout expired before the rack was free",
                finished_at=self.now,
                updated_at=self.now,
            )
        )
        return result.rowcount

    def promote_waiting(self) -> list[uuid.UUID]:
        """Make the oldest waiting task of each free rack pending; returns their ids.

        A rack is free when it has no pending or running task. The racks are locked
        as a submitter locks them, so a promotion never races a new submission.
        """
        candidates = self._free_racks_with_waiting(None)
        if not candidates:
            return []
        self.lock_racks(candidates)
        # Re-read under the locks. A rack deleted from the inventory has nothing to lock;
        # its tasks are promoted too, and the runner fails them.
        promote = self._free_racks_with_waiting(list(candidates))
        ids = list(promote.values())
        for chunk in chunked(ids):
            self.conn.execute(
                task.update()
                .where(task.c.id.in_(chunk), task.c.status == _WAITING)
                .values(status=_PENDING, updated_at=self.now, next_check_at=self.now)
            )
        return ids

    def _free_racks_with_waiting(
        self, rack_ids: Sequence[uuid.UUID] | None
    ) -> dict[uuid.UUID, uuid.UUID]:
        """rack id -> its oldest waiting task, for racks with no pending or running task."""
        other = task.alias("other")
        busy = sa.exists().where(
            other.c.rack_id == task.c.rack_id, other.c.status.in_((_PENDING, _RUNNING))
        )
        query = (
            sa.select(task.c.rack_id, task.c.id)
            .where(task.c.status == _WAITING, ~busy)
            .order_by(task.c.created_at, task.c.id)
        )
        oldest: dict[uuid.UUID, uuid.UUID] = {}
        chunks = [None] if rack_ids is None else list(chunked(rack_ids))
        for chunk in chunks:
            scoped = query if chunk is None else query.where(task.c.rack_id.in_(chunk))
            for rack_id, task_id in self.conn.execute(scoped):
                oldest.setdefault(rack_id, task_id)
        return oldest

    def task_counts(self) -> dict[str, int]:
        """How many tasks are in each status."""
        query = sa.select(task.c.status, sa.func.count()).group_by(task.c.status)
        return dict(self.conn.execute(query).all())
