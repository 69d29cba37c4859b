"""The task runner's side of the store: which tasks need a controller call, and what came of it.

A task has runner work while ``next_check_at`` is set and due (docs/spec/SEMANTICS.md
"Tasks"; the runner itself lives in ``rackcron.dispatcher.runner``), its ``lifecycle.duty``:

* ``pending``: deliver it to its rack's controller;
* ``running``: ask its controller how it is doing;
* ``cancel_pending`` (it owes its controller a stop: a cancelled task, or one failed
  after its controller stopped answering): tell its controller to stop it.

Every rule of how a task moves is ``rackcron.domain.lifecycle``'s; this module applies them.

:meth:`DeliveryOps.claim_work` takes due tasks (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL) and moves their ``next_check_at`` a lease ahead, so no other runner
takes them while the calls are made; a runner that dies loses its lease, and the
tasks come due again (a retried submit is safe: controllers key it by task id).
:meth:`DeliveryOps.record` writes what the calls gave (a lifecycle event each), each
kind of write with one statement guarded by the status it expects, so a task
cancelled meanwhile is never overwritten. Messages come from controllers, so
:func:`storable` makes each one fit every backend first (a NUL or a lone surrogate
would fail the whole write, and the same answer would fail it again every lease).
The queue moves in :meth:`DeliveryOps.expire_queued` (a waiting task past its queue
timeout is terminated) and :meth:`DeliveryOps.promote_waiting` (each rack's waiting
tasks, oldest first, become pending until the first that conflicts with the running
set: ``rackcron.domain.task_conflicts``). A freeze holds a pending or waiting task by its rack
and by the schedule name and labels the task recorded at submission.

Both ``record`` and ``expire_queued`` return the tasks their own statements ended
(:class:`Written`), read back in the same transaction: a notification is sent by the
process whose write made the change, once however many runners run.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, NamedTuple

import sqlalchemy as sa

from rackcron.domain.lifecycle import (
    EXPIRED_MESSAGE,
    RUNNING_SET,
    STOP_AGAIN,
    Duty,
    Event,
    Stop,
    TaskStatus,
    duty,
    next_status,
    next_stop,
    owes_stop,
    promotions,
    status_values,
)
from rackcron.domain.models import OperationTemplate
from rackcron.domain.operation_names import operation_name
from rackcron.domain.rollouts import RolloutState
from rackcron.service import _rows
from rackcron.service._freezes import FreezeOps, Named
from rackcron.service._tasks import TaskOps, chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import rack, rollout, task, task_schedule

__all__ = [
    "MAX_MESSAGE",
    "DeliveryOps",
    "DueCall",
    "Recorded",
    "Update",
    "Written",
    "followed",
    "storable",
]

_CANDIDATES = 4  # due tasks read per task claimed, at most
_WAITING = TaskStatus.WAITING.value
_WITH_RUNNER = status_values(RUNNING_SET)  # pending, running

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: Longest task message stored (characters); a longer one is cut, ending in an ellipsis.
MAX_MESSAGE = 4096


#: What joins a task's message to what happened to the task afterwards.
_THEN = "; then "


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def storable(message: str) -> str:
    """``message`` as every backend can store it: NUL characters (PostgreSQL refuses
    them) and lone surrogates (not encodable as UTF-8) become U+FFFD, and it is cut to
    :data:`MAX_MESSAGE` characters."""
    return _cut(_UNSTORABLE.sub("\ufffd", message), MAX_MESSAGE)


def followed(message: str, then: str) -> str:
    """A task's ``message`` followed by what happened to the task afterwards, ``message;
    then THEN``, within :data:`MAX_MESSAGE` characters with both kept: ``then`` is cut to
    half of them at most, and ``message`` to the rest. An empty ``message`` gives ``then``."""
    if not message:
        return _cut(then, MAX_MESSAGE)
    then = _cut(then, MAX_MESSAGE // 2)
    return _cut(message, MAX_MESSAGE - len(_THEN) - len(then)) + _THEN + then


class DueCall(NamedTuple):
    """A task the runner must call its controller about."""

    task_id: uuid.UUID
    rack_id: uuid.UUID
    status: TaskStatus  # ``lifecycle.duty`` says what to do: deliver, poll, or stop
    failures: int  # failed controller calls in a row
    operation_type: str
    operation_code: str
    information: dict[str, Any]
    component_uuids: list[str]
    description: str
    controller: dict[str, Any] | None  # the rack's controller setting; None: the default
    rack_name: str | None  # None: the rack is no longer in the inventory
    schedule_id: uuid.UUID | None = None  # the schedule that fired it, if any
    forced: bool = False  # by a trigger forced past a freeze: never held by one
    schedule_name: str | None = None  # None: no schedule, or it is gone
    due_at: datetime | None = None  # its firing's due time; None: not from a firing
    message: str = ""  # the task's message as claimed (why it ended, when it owes a stop)
    rack_labels: dict[str, str] | None = None  # the rack's labels now


class Update(NamedTuple):
    """What one controller call gave for one task: a ``lifecycle.Event`` on the task as it
    was (``was``, its status) when the call was decided.

    ``message`` is the task's new message when the event ends the task or gives up the
    stop it owes (:func:`followed` keeps why it ended); otherwise (a retry, a stop told) an
    empty one keeps the task's message. ``delay``: seconds
    before the runner looks again (``ACCEPTED``, ``STILL_RUNNING``, ``RETRY_SCHEDULED``).
    """

    task_id: uuid.UUID
    event: Event
    was: TaskStatus
    message: str = ""
    delay: float = 0.0


class Written(NamedTuple):
    """A task as a write of the runner's side left it (:meth:`DeliveryOps.record`,
    :meth:`DeliveryOps.expire_queued`): one that write ended, or whose owed stop it settled."""

    task_id: uuid.UUID
    rack_id: uuid.UUID
    rack_name: str | None  # None: the rack is no longer in the inventory
    schedule_id: uuid.UUID | None
    schedule_name: str | None  # None: no schedule, or a deleted one
    status: TaskStatus
    message: str
    description: str
    template: OperationTemplate
    at: datetime  # when the write was made


class Recorded(NamedTuple):
    """What :meth:`DeliveryOps.record` did beyond its writes."""

    stop_again: list[uuid.UUID]  # started tasks found cancelled meanwhile: the stop is sent again
    written: list[Written]  # the tasks its writes ended, or whose stop they settled


class _Write(Enum):
    """The statements :meth:`DeliveryOps.record` runs, one executemany each, in this order."""

    STARTED = "pending -> running"
    ENDED = "-> final"
    ABANDONED = "-> final, a stop owed"
    RETRY = "a failed call, made again later"
    POLLED = "still running"
    STOP_SETTLED = "the stop told, or given up on"
    RELEASE = "due again now"


#: The writes of the events that leave both the status and the stop as they are.
_BOOKKEEPING = {
    Event.RETRY_SCHEDULED: _Write.RETRY,
    Event.STILL_RUNNING: _Write.POLLED,
    Event.RELEASED: _Write.RELEASE,
}


def _write(update: Update) -> tuple[_Write, TaskStatus | None]:
    """The statement that records ``update``, and the status it writes (None: none), by
    what the lifecycle says its event does.

    :raises IllegalTransition: the lifecycle refuses the event (a runner bug).
    """
    if duty(update.was) is Duty.STOP:  # the stop machine's event
        if next_stop(update.event) is Stop.CLEAR:
            return _Write.STOP_SETTLED, None
    else:
        status = next_status(update.was, update.event)
        if status != update.was:
            if status == TaskStatus.RUNNING:
                return _Write.STARTED, status
            owed = owes_stop(update.was, update.event)
            return (_Write.ABANDONED if owed else _Write.ENDED), status
    return _BOOKKEEPING[update.event], None


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
    task.c.schedule_id,
    task.c.forced,
    task_schedule.c.name,
    task.c.due_at,
    task.c.message,
    rack.c.labels,
).select_from(
    task.outerjoin(rack, rack.c.id == task.c.rack_id).outerjoin(
        task_schedule, task_schedule.c.id == task.c.schedule_id
    )
)


_WRITTEN = sa.select(
    task.c.id,
    task.c.rack_id,
    rack.c.name.label("rack_name"),
    task.c.schedule_id,
    task_schedule.c.name.label("schedule_name"),
    task.c.status,
    task.c.message,
    task.c.description,
    task.c.operation_type,
    task.c.operation_code,
    task.c.operation_information,
    task.c.updated_at,
).select_from(
    task.outerjoin(rack, rack.c.id == task.c.rack_id).outerjoin(
        task_schedule, task_schedule.c.id == task.c.schedule_id
    )
)


def _as_written(row: Any) -> Written:
    """A row of :data:`_WRITTEN` as :class:`Written`."""
    return Written(
        task_id=row.id,
        rack_id=row.rack_id,
        rack_name=row.rack_name,
        schedule_id=row.schedule_id,
        schedule_name=row.schedule_name,
        status=TaskStatus(row.status),
        message=row.message,
        description=row.description,
        template=_rows.template(row),
        at=row.updated_at,
    )


def _status_is(*statuses: str) -> sa.ColumnElement[bool]:
    """``status`` is one of these (no ``IN``: an expanding list cannot run in executemany)."""
    return sa.or_(*(task.c.status == s for s in statuses))


def _by_id(statement: sa.Update) -> sa.Update:
    return statement.where(task.c.id == sa.bindparam("b_id"))


#: Seconds before a delivery a freeze holds is looked at again.
HOLD_RECHECK = 30.0


#: What :meth:`DeliveryOps._held` judges a task by.
_HELD = sa.select(
    task.c.id,
    task.c.rack_id,
    task.c.operation_type,
    task.c.operation_code,
    task.c.operation_information,
    task.c.schedule_name,
    task.c.schedule_labels,
    task_schedule.c.name.label("current_name"),
    task_schedule.c.labels.label("current_labels"),
).select_from(task.outerjoin(task_schedule, task_schedule.c.id == task.c.schedule_id))


def _recorded(row: Any) -> Named | None:
    """The schedule a task is judged by: the name and labels it recorded at submission;
    for a task that recorded none while its schedule exists (written by a rackcron older
    than migration 0013, during a rolling upgrade), its schedule as it is now; None for a
    task of no schedule, or of one deleted before it could record it."""
    if row.schedule_name is not None:
        return row.schedule_name, row.schedule_labels or {}
    if row.current_name is not None:
        return row.current_name, row.current_labels or {}
    return None


def _operation(kind: str, code: str, information: dict[str, Any]) -> str:
    """A task's operation name (``power_on``, ...) from its row's template columns."""
    return operation_name(OperationTemplate(type=kind, code=code, information=information))


@dataclass(frozen=True, slots=True)
class DeliveryOps:
    """The task runner's work: controller calls due, what controllers said, the waiting
    queue; it submits nothing, but locks racks through ``tasks`` and asks ``freezes`` what
    they hold."""

    work: UnitOfWork
    tasks: TaskOps
    freezes: FreezeOps

    def claim_work(
        self,
        limit: int,
        *,
        lease: float,
        take: Callable[[DueCall], bool] = lambda work: True,
    ) -> list[DueCall]:
        """Up to ``limit`` due tasks, oldest due first, leased for ``lease`` seconds.

        ``take`` can leave a task alone (its controller is still busy with an
        earlier call): it stays due, for this runner's next round or another runner.
        ``limit`` candidates are read; if some were left alone (or held by a freeze),
        they are read again four times over, so the tasks of a busy controller do not
        crowd out the others'. (Always reading four times over read 3.4 rows per task
        claimed while draining a 5,000-rack firing.)
        """
        first = self._due(limit)
        work = self._takeable(first, take)
        if len(work) < limit and len(first) == limit:
            seen = {w.task_id for w in first}
            more = [w for w in self._due(limit * _CANDIDATES) if w.task_id not in seen]
            work += self._takeable(more, take)[: limit - len(work)]
        until = self.work.now + timedelta(seconds=lease)
        for chunk in chunked([w.task_id for w in work]):
            self.work.conn.execute(
                task.update().where(task.c.id.in_(chunk)).values(next_check_at=until)
            )
        return work

    def _due(self, limit: int) -> list[DueCall]:
        """The first ``limit`` due tasks, oldest due first, locked."""
        query = (
            _WORK.where(task.c.next_check_at.is_not(None), task.c.next_check_at <= self.work.now)
            .order_by(task.c.next_check_at)
            .limit(limit)
            .with_for_update(skip_locked=True, of=task)
        )
        return [
            DueCall(row[0], row[1], TaskStatus(row[2]), *row[3:])
            for row in self.work.conn.execute(query)
        ]

    def _takeable(self, rows: list[DueCall], take: Callable[[DueCall], bool]) -> list[DueCall]:
        """Those of ``rows`` neither held by a freeze nor left alone by ``take``."""
        held = self._held_deliveries(rows)
        return [w for w in rows if w.task_id not in held and take(w)]

    def _held_deliveries(self, rows: Sequence[DueCall]) -> set[uuid.UUID]:
        """The pending tasks a freeze holds now (docs/spec/SEMANTICS.md "Freeze windows"):
        not delivered, and due again in :data:`HOLD_RECHECK` seconds. Running tasks and
        stops are never held."""
        pending = [w.task_id for w in rows if duty(w.status) is Duty.DELIVER and not w.forced]
        held = self._held(pending)
        later = self.work.now + timedelta(seconds=HOLD_RECHECK)
        for chunk in chunked(sorted(held, key=str)):
            self.work.conn.execute(
                task.update().where(task.c.id.in_(chunk)).values(next_check_at=later)
            )
        return held

    def record(self, updates: Sequence[Update]) -> Recorded:
        """Write the runner's results. Returns the ids of the ``started`` tasks that had
        been cancelled meanwhile (the cancellation may have reached the controller
        before the task did, so it is sent again: they are made due now), and the tasks
        these writes ended or settled the stop of (a result dropped because its task
        moved on meanwhile is not among them)."""
        now = self.work.now
        groups: dict[_Write, list[tuple[Update, TaskStatus | None]]] = {}
        for update in updates:
            update = update._replace(message=storable(update.message))
            write, status = _write(update)
            groups.setdefault(write, []).append((update, status))
        later: sa.BindParameter[datetime] = sa.bindparam("b_at")

        def run(statement: sa.Update, rows: list[dict[str, Any]]) -> None:
            if rows:
                self.work.conn.execute(statement, rows)

        started = [u for u, _ in groups.get(_Write.STARTED, [])]
        run(
            _by_id(task.update())
            .where(task.c.status == TaskStatus.PENDING.value)
            .values(
                status=TaskStatus.RUNNING.value,
                started_at=now,
                updated_at=now,
                failures=0,
                message="",
                next_check_at=later,
            ),
            [{"b_id": u.task_id, "b_at": now + timedelta(seconds=u.delay)} for u in started],
        )
        # A verdict applies while the task is still the runner's: never to one cancelled meanwhile.
        run(
            _by_id(task.update())
            .where(_status_is(*_WITH_RUNNER))
            .values(
                status=sa.bindparam("b_status"),
                message=sa.bindparam("b_message"),
                finished_at=now,
                updated_at=now,
                next_check_at=None,
                started_at=sa.func.coalesce(task.c.started_at, now),
            ),
            [
                {"b_id": u.task_id, "b_status": status, "b_message": u.message}
                for u, status in groups.get(_Write.ENDED, [])
            ],
        )
        run(
            _by_id(task.update())
            .where(_status_is(*_WITH_RUNNER))
            .values(
                status=sa.bindparam("b_status"),
                message=sa.bindparam("b_message"),
                finished_at=now,
                updated_at=now,
                failures=0,
                cancel_pending=True,
                next_check_at=now,
                started_at=sa.func.coalesce(task.c.started_at, now),
            ),
            [
                {"b_id": u.task_id, "b_status": status, "b_message": u.message}
                for u, status in groups.get(_Write.ABANDONED, [])
            ],
        )
        run(
            # Only while the task is as it was when the call was decided: a delivery's
            # late failure never touches a task cancelled meanwhile.
            _by_id(task.update())
            .where(task.c.status == sa.bindparam("b_was"))
            .values(
                failures=task.c.failures + 1,
                message=sa.func.coalesce(sa.bindparam("b_message"), task.c.message),
                updated_at=now,
                next_check_at=later,
            ),
            [
                {
                    "b_id": u.task_id,
                    "b_was": u.was,
                    "b_message": u.message or None,
                    "b_at": now + timedelta(seconds=u.delay),
                }
                for u, _ in groups.get(_Write.RETRY, [])
            ],
        )
        run(
            _by_id(task.update())
            .where(task.c.status == TaskStatus.RUNNING.value)
            .values(failures=0, next_check_at=later),
            [
                {"b_id": u.task_id, "b_at": now + timedelta(seconds=u.delay)}
                for u, _ in groups.get(_Write.POLLED, [])
            ],
        )
        run(
            _by_id(task.update())
            .where(task.c.cancel_pending)
            .values(
                cancel_pending=False,
                next_check_at=None,
                failures=0,
                updated_at=now,
                message=sa.func.coalesce(sa.bindparam("b_message"), task.c.message),
            ),
            [
                {"b_id": u.task_id, "b_message": u.message or None}
                for u, _ in groups.get(_Write.STOP_SETTLED, [])
            ],
        )
        run(
            _by_id(task.update())
            .where(task.c.next_check_at.is_not(None))
            .values(next_check_at=now),
            [{"b_id": u.task_id} for u, _ in groups.get(_Write.RELEASE, [])],
        )
        # The status each final write set (None: a stop settled, the status left as it was).
        final = {
            u.task_id: status
            for w in (_Write.ENDED, _Write.ABANDONED, _Write.STOP_SETTLED)
            for u, status in groups.get(w, [])
        }
        written = [w for w in self._written(list(final)) if final[w.task_id] in (None, w.status)]
        return Recorded(self._cancelled_meanwhile([u.task_id for u in started]), written)

    def _written(self, ids: Sequence[uuid.UUID]) -> list[Written]:
        """Those of ``ids`` this transaction wrote, as stored: each such write sets
        ``updated_at`` to its ``now``, and a guarded statement that found its task moved on
        wrote nothing. (Two transactions of one instant, to the microsecond, could not be
        told apart; ``record`` also checks the status its write set.)"""
        found: list[Written] = []
        for chunk in chunked(ids):
            query = _WRITTEN.where(task.c.id.in_(chunk), task.c.updated_at == self.work.now)
            found += (_as_written(row) for row in self.work.conn.execute(query))
        return found

    def _cancelled_meanwhile(self, started: Sequence[uuid.UUID]) -> list[uuid.UUID]:
        """The accepted tasks found cancelled meanwhile owe the stop again
        (``lifecycle.STOP_AGAIN``): marked, due now, and returned."""
        again = _status_is(*status_values(STOP_AGAIN[Event.ACCEPTED]))
        found: list[uuid.UUID] = []
        for chunk in chunked(started):
            found += self.work.conn.execute(
                sa.select(task.c.id).where(task.c.id.in_(chunk), again)
            ).scalars()
        if found:
            self.work.conn.execute(
                _by_id(task.update()).values(cancel_pending=True, next_check_at=self.work.now),
                [{"b_id": i} for i in found],
            )
        return found

    def expire_queued(self) -> list[Written]:
        """End every waiting task whose queue timeout has passed (``terminated``, as the
        reference); returns those this call ended."""
        ended = self.work.conn.execute(
            task.update()
            .where(  # lifecycle.expired, set-wise
                task.c.status == _WAITING,
                task.c.queue_expires_at.is_not(None),
                task.c.queue_expires_at <= self.work.now,
            )
            .values(
                status=next_status(TaskStatus.WAITING, Event.EXPIRED).value,
                message=EXPIRED_MESSAGE,
                end_reason="expired",
                finished_at=self.work.now,
                updated_at=self.work.now,
            )
            .returning(task.c.id)
        )
        return self._written(list(ended.scalars()))

    def promote_waiting(self) -> list[uuid.UUID]:
        """Promote the waiting tasks that may start; returns their ids.

        Each rack with waiting tasks takes them oldest first, as ``lifecycle.promotions``
        says: each that conflicts with no task of the running set (those promoted before
        it included) becomes pending, until the first that conflicts. The racks are
        locked as a submitter locks them, so a promotion never races a new submission,
        and their queues are read under the locks. A rack deleted from the inventory has
        nothing to lock; its tasks are promoted all the same, and the runner fails them.
        """
        racks = sorted(
            set(
                self.work.conn.execute(
                    sa.select(task.c.rack_id).where(task.c.status == _WAITING).distinct()
                ).scalars()
            ),
            key=str,
        )
        if not racks:
            return []
        self.tasks.lock_racks(racks)
        queues = self.tasks.rack_queues(racks)
        held = self._held([a.task_id for q in queues.values() for a in q.waiting])
        ids: list[uuid.UUID] = []
        for queue in queues.values():
            # A waiting task a freeze holds stops its rack's queue, as a conflict does.
            free = itertools.takewhile(lambda a: a.task_id not in held, queue.waiting)
            ids += (a.task_id for a in promotions(free, queue.running))
        promoted = next_status(TaskStatus.WAITING, Event.PROMOTED).value
        done: list[uuid.UUID] = []
        for chunk in chunked(ids):
            done += self.work.conn.execute(
                task.update()
                .where(
                    task.c.id.in_(chunk),
                    task.c.status == _WAITING,
                    # Past its queue timeout it is expired, never promoted (the next
                    # round's expire_queued terminates it).
                    sa.or_(
                        task.c.queue_expires_at.is_(None), task.c.queue_expires_at > self.work.now
                    ),
                )
                .values(status=promoted, updated_at=self.work.now, next_check_at=self.work.now)
                .returning(task.c.id)
            ).scalars()
        promoted_ids = set(done)
        return [i for i in ids if i in promoted_ids]

    def _held(self, task_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """Those of these tasks a paused or halted roll-out holds (docs/spec/SEMANTICS.md
        "Roll-outs"), or a freeze holds now (:meth:`_frozen`)."""
        return self._held_by_rollouts(task_ids) | self._frozen(task_ids)

    def _held_by_rollouts(self, task_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """Those of these tasks whose roll-out is paused or halted; nothing more is read
        when no roll-out is."""
        stopped = rollout.c.state.in_([RolloutState.PAUSED.value, RolloutState.HALTED.value])
        if not task_ids or self.work.conn.execute(sa.select(rollout.c.id).where(
            stopped, rollout.c.finished_at.is_(None)).limit(1)).first() is None:  # fmt: skip
            return set()
        held: set[uuid.UUID] = set()
        for chunk in chunked(task_ids):
            query = (
                sa.select(task.c.id)
                .join(rollout, rollout.c.id == task.c.firing_id)
                .where(task.c.id.in_(chunk), stopped)
            )
            held.update(self.work.conn.execute(query).scalars())
        return held

    def _frozen(self, task_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """Those of these tasks a freeze holds now, each judged by its rack as it is and by
        the schedule it recorded (:func:`_recorded`); forced tasks are never held. Nothing
        more is read when no freeze is open."""
        active = self.freezes.active_freezes(self.work.now) if task_ids else []
        if not active:
            return set()
        rows: list[Any] = []
        for chunk in chunked(task_ids):
            rows += self.work.conn.execute(_HELD.where(task.c.id.in_(chunk), ~task.c.forced)).all()
        holds = self.freezes.holds((r.rack_id for r in rows), active)
        assert holds is not None
        return {
            r.id
            for r in rows
            if holds.holding(
                r.rack_id,
                _recorded(r),
                _operation(r.operation_type, r.operation_code, r.operation_information),
            )
        }

    def task_counts(self) -> dict[str, int]:
        """How many tasks are in each status."""
        query = sa.select(task.c.status, sa.func.count()).group_by(task.c.status)
        return dict(self.work.conn.execute(query).all())
