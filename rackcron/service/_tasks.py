"""Task RPCs (list, get by ids, cancel) and the task manager's submission rule.

A submitted task is a durable row: the outbox the dispatcher's runner delivers
to rack controllers. The conflict rule (docs/spec/SEMANTICS.md "Task conflicts", the
table in ``rackcron.domain.task_conflicts``): a task blocked by an active task of its rack (one
of the running set it conflicts with, or an earlier waiting one) is held as
``waiting`` when the schedule's policy is queue, and refused otherwise. The rack row is
locked while deciding, so two submitters never both miss each other's tasks.

Submission is batched (:meth:`TaskOps.submit_tasks`): lock the racks once in id
order, read their components and active tasks in one query each, decide every
request in memory with the pure rules of ``rackcron.domain.firing`` (``select_components``)
and ``rackcron.domain.lifecycle`` (``blocker``, ``admit``, ``queue_deadline``), then insert the
tasks with one executemany (a task's components and their types are JSON lists on its
row).
:meth:`TaskOps.submit_task` is the same path with a batch of one. CancelTask asks
the lifecycle too (``next_status``, ``owes_stop``).
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from rackcron.domain.filters import ComponentFilter
from rackcron.domain.firing import select_components
from rackcron.domain.lifecycle import (
    Event,
    TaskStatus,
    admit,
    blocker,
    next_status,
    owes_stop,
    queue_deadline,
    queue_full,
)
from rackcron.domain.models import OperationTemplate, OverlapPolicy, Page, Task
from rackcron.domain.results import LastResult
from rackcron.domain.task_conflicts import TaskShape, conflicting_row
from rackcron.domain.templates import task_operation_text
from rackcron.errors import (
    FailedPrecondition,
    IllegalTransition,
    InvalidArgument,
    NotFound,
    RackcronError,
)
from rackcron.service import _rows
from rackcron.service._base import check_page, paged, parse_id
from rackcron.service._work import UnitOfWork
from rackcron.store.bulk import among, insert_rows
from rackcron.store.tables import (
    ACTIVE_STATUS_VALUES,
    ACTIVE_TASK,
    component,
    component_placement,
    firing,
    rack,
    task,
    task_schedule_scope,
)

T = TypeVar("T")

__all__ = [
    "Active",
    "RackQueue",
    "Submission",
    "SubmissionRefused",
    "TaskOps",
    "TaskRequest",
    "chunked",
    "describe_error",
    "new_task_id",
]

#: At most this many values in one ``IN (...)`` list: SQLite allows 32,766 bound
#: parameters per statement, and a claimed batch may be larger than that.
IN_CHUNK = 5_000


def new_task_id() -> uuid.UUID:
    """A fresh task id: a version 7 UUID (RFC 9562), random but ordered by creation time.

    Ordered ids keep the inserts of a batch together at the end of the task
    index instead of scattering them over every page (uuid4),
    which costs a busy store many page reads and writes per batch.
    """
    rand = int.from_bytes(os.urandom(10))
    millis = time.time_ns() // 1_000_000
    return uuid.UUID(
        int=(millis & _MILLIS) << 80
        | 0x7 << 76
        | (rand >> 62 & 0xFFF) << 64
        | 0b10 << 62
        | rand & _RAND_B
    )


#: The columns of a new task's row that differ from task to task, in insert order.
_TASK_COLUMNS = (
    "id",
    "schedule_id",
    "scope_id",
    "rack_id",
    "operation",
    "operation_type",
    "operation_code",
    "operation_information",
    "component_uuids",
    "component_types",
    "description",
    "queue_expires_at",
    "forced",
    "rack_seq",
    "schedule_name",
    "schedule_labels",
    "firing_id",
    "due_at",
)

#: Each existing rack's components as (id text, type), in id order.
RackComponents = dict[uuid.UUID, list[tuple[str, str]]]

#: PostgreSQL's SQLSTATE for a lock not obtained within ``lock_timeout``.
_LOCK_NOT_AVAILABLE = "55P03"

_MILLIS = (1 << 48) - 1
_RAND_B = (1 << 62) - 1


def chunked(values: Sequence[T]) -> Iterator[Sequence[T]]:
    """``values`` in slices of at most :data:`IN_CHUNK`."""
    for start in range(0, len(values), IN_CHUNK):
        yield values[start : start + IN_CHUNK]


class Active:
    """An active task of a rack as the conflict rules see it (``lifecycle.Queued``); its
    :class:`~rackcron.domain.task_conflicts.TaskShape` is built only when a rule asks for it: most
    racks of a firing hold no other task, and need none.

    A row that lacks its component types (written by a rackcron older than migration
    0005, during a rolling upgrade) says nothing of what it touches: it holds the rack,
    as a task that lists no components does (``task_conflicts.BLIND``)."""

    __slots__ = ("_ids", "_kind", "_types", "_work", "task_id")

    def __init__(
        self, task_id: uuid.UUID, kind: str, ids: Sequence[str], types: Sequence[str] | None
    ) -> None:
        self.task_id, self._kind, self._ids, self._types = task_id, kind, ids, types
        self._work: TaskShape | None = None

    @property
    def work(self) -> TaskShape:
        if self._work is None:
            known = self._types is not None
            self._work = TaskShape.of(self._kind, self._ids if known else (), self._types or ())
        return self._work


@dataclass(slots=True)
class RackQueue:
    """A rack's active tasks: the running set (pending, running) and the waiting tasks in
    order of submission; ``last`` is the highest ``rack_seq`` among them (0: none)."""

    running: list[Active] = field(default_factory=list)
    waiting: list[Active] = field(default_factory=list)
    last: int = 0

    def add(self, status: TaskStatus, active: Active, seq: int) -> None:
        (self.waiting if status == TaskStatus.WAITING else self.running).append(active)
        self.last = max(self.last, seq)


class SubmissionRefused(FailedPrecondition):
    """The task manager refused a task (blocked under skip, queue full, rack gone, nothing
    to target)."""


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """What the task manager is asked to run: one task on one rack."""

    rack_id: uuid.UUID
    component_filter: ComponentFilter | None
    template: OperationTemplate
    policy: OverlapPolicy
    description: str
    schedule_id: uuid.UUID | None = None
    scope_id: uuid.UUID | None = None
    forced: bool = False  # a trigger forced past a freeze: no freeze holds this task
    # The schedule's name and labels as they are now: the task records them, and freezes
    # hold it by them (docs/spec/SEMANTICS.md "Freeze windows").
    schedule_name: str | None = None
    schedule_labels: Mapping[str, str] | None = None
    # The recorded firing asking, and its due time (docs/spec/SEMANTICS.md "Dispatch").
    firing_id: uuid.UUID | None = None
    due_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Submission:
    """The task manager's answer to one request: a created task, why it was refused, or
    ``deferred``: its rack is locked by another transaction, so it was not decided now."""

    task_id: uuid.UUID | None = None
    status: TaskStatus | None = None  # pending or waiting when created
    error: str | None = None  # names the rack
    deferred: bool = False
    blocked: bool = False  # refused for a conflicting active task on its rack (skip policy)


#: GetTasksByIDs asks for at most this many (one IN list: SQLite allows 32,766 parameters).
MAX_TASK_IDS = 10_000


@dataclass(frozen=True, slots=True)
class TaskOps:
    """Tasks: list, cancel, and submit them with the per-rack queue rules."""

    work: UnitOfWork

    def list_tasks(
        self,
        *,
        rack_id: uuid.UUID | str | None = None,
        component_id: uuid.UUID | str | None = None,
        active_only: bool = False,
        offset: int = 0,
        limit: int = 0,
        schedule_id: uuid.UUID | str | None = None,
        statuses: Iterable[TaskStatus] = (),
    ) -> Page[Task]:
        """ListTasks, newest first; ``total`` counts before paging. ``schedule_id`` and
        ``statuses`` (any of them) narrow it further (rackcron's own filters)."""
        check_page(offset, limit)
        where: list[sa.ColumnElement[bool] | sa.TextClause] = []
        if rack_id is not None:
            where.append(task.c.rack_id == parse_id(rack_id, "rack_id"))
        if schedule_id is not None:
            where.append(task.c.schedule_id == parse_id(schedule_id, "schedule_id"))
        if wanted := [s.value for s in statuses]:
            where.append(task.c.status.in_(wanted))
        if component_id is not None:
            where.append(self._covers(parse_id(component_id, "component_id")))
        if active_only:  # in the words of the partial index of active tasks
            where.append(ACTIVE_TASK)
        # Counted by a column the page's indexes hold (created_at is never null): SQLite,
        # without statistics, counts count(*) by scanning a covering index of every task.
        counted = sa.select(sa.func.count(task.c.created_at)).where(*where)
        total = self.work.conn.execute(counted).scalar_one()
        query = sa.select(task).where(*where).order_by(task.c.created_at.desc(), task.c.id)
        rows = self.work.conn.execute(paged(query, offset, limit))
        return Page[Task](items=[_rows.task(r) for r in rows], total=total)

    def _covers(self, component_id: uuid.UUID) -> sa.ColumnElement[bool]:
        """Tasks whose ``component_uuids`` hold this component, read among the tasks of
        the racks it has been on (by the rack index). The racks are read first: as a
        subquery, PostgreSQL misjudged how few they are and scanned every task."""
        placed = sa.select(component_placement.c.rack_id).where(
            component_placement.c.component_id == component_id
        )
        racks = list(self.work.conn.execute(placed).scalars())
        dialect = self.work.conn.dialect.name
        if dialect == "postgresql":
            holds = sa.type_coerce(task.c.component_uuids, JSONB).contains([str(component_id)])
        else:  # the list's JSON text holds the quoted id only as an element of it
            text = sa.type_coerce(task.c.component_uuids, sa.Text)
            holds = sa.func.instr(text, f'"{component_id}"') > 0
        return sa.and_(among(dialect, task.c.rack_id, racks), holds)

    def last_results(
        self, schedule_ids: Collection[uuid.UUID] | None = None
    ) -> dict[uuid.UUID, LastResult]:
        """The last result of each of ``schedule_ids`` (None: of every schedule) that has
        fired or has active tasks: its scopes' latest tasks by status, and its active
        tasks (two grouped reads, whatever the number of schedules)."""
        scope = task_schedule_scope
        dialect = self.work.conn.dialect.name
        chunks = [None] if schedule_ids is None else list(chunked(list(schedule_ids)))
        counts: dict[uuid.UUID, dict[TaskStatus, int]] = {}
        ended: dict[uuid.UUID, datetime] = {}
        active: dict[uuid.UUID, int] = {}
        for chunk in chunks:
            latest = (
                sa.select(
                    scope.c.schedule_id,
                    task.c.status,
                    sa.func.count(),
                    sa.func.max(task.c.finished_at),
                )
                .select_from(scope.join(task, task.c.id == scope.c.last_task_id))
                .group_by(scope.c.schedule_id, task.c.status)
            )
            running = (
                sa.select(task.c.schedule_id, sa.func.count())
                .where(ACTIVE_TASK, task.c.schedule_id.is_not(None))
                .group_by(task.c.schedule_id)
            )
            if chunk is not None:
                latest = latest.where(among(dialect, scope.c.schedule_id, chunk))
                running = running.where(among(dialect, task.c.schedule_id, chunk))
            for schedule_id, status, n, at in self.work.conn.execute(latest):
                counts.setdefault(schedule_id, {})[TaskStatus(status)] = n
                if at is not None and (schedule_id not in ended or at > ended[schedule_id]):
                    ended[schedule_id] = at
            active.update((schedule_id, n) for schedule_id, n in self.work.conn.execute(running))
        return {
            i: LastResult(counts.get(i, {}), ended.get(i), active.get(i, 0))
            for i in counts.keys() | active.keys()
        }

    def get_tasks(self, task_ids: Sequence[uuid.UUID | str]) -> list[Task]:
        """GetTasksByIDs: the tasks that exist, in the order asked.

        :raises InvalidArgument: a malformed id, or more than ``MAX_TASK_IDS`` of them.
        """
        if len(task_ids) > MAX_TASK_IDS:
            raise InvalidArgument(
                f"task_ids: at most {MAX_TASK_IDS} ids per request, got {len(task_ids)}"
            )
        ids = [parse_id(t, f"task_ids[{i}]") for i, t in enumerate(task_ids)]
        if not ids:
            return []
        rows = {r.id: r for r in self.work.conn.execute(sa.select(task).where(task.c.id.in_(ids)))}
        return [_rows.task(rows[i]) for i in ids if i in rows]

    def cancel_task(self, task_id: uuid.UUID | str) -> Task:
        """CancelTask: an active task becomes terminated (the runner tells its controller).

        A pending or running task may have reached its controller: it is marked
        for the runner to tell the controller at once (a delivery in flight when
        this commits is cancelled again once it lands: ``DeliveryOps.record``). A
        waiting task never left the store.

        :raises NotFound: no such task.
        :raises FailedPrecondition: the task has already ended.
        """
        task_id = parse_id(task_id, "task_id")
        row = self.work.conn.execute(
            sa.select(task).where(task.c.id == task_id).with_for_update()
        ).first()
        if row is None:
            raise NotFound(f"task_id: task {task_id} not found")
        was = TaskStatus(row.status)
        try:
            status = next_status(was, Event.CANCELLED)
        except IllegalTransition:
            raise FailedPrecondition(
                f"task_id: task {task_id} has already ended ({row.status}): nothing to cancel"
            ) from None
        reached = owes_stop(was, Event.CANCELLED)  # the runner is to tell the controller at once
        self.work.conn.execute(
            task.update()
            .where(task.c.id == task_id)
            .values(
                status=status.value,
                message="cancelled",
                end_reason="cancelled",
                finished_at=self.work.now,
                updated_at=self.work.now,
                cancel_pending=reached,
                failures=0,
                next_check_at=self.work.now if reached else None,
            )
        )
        return self.get_tasks([task_id])[0]

    def lock_racks(
        self, rack_ids: Iterable[uuid.UUID], *, defer_held: bool = False
    ) -> set[uuid.UUID]:
        """Lock these racks' rows (PostgreSQL) in id order, the one order every submitter uses.

        Returns the ids of the racks that exist. ``defer_held``: a rack another
        transaction still holds once the session's ``lock_timeout`` has passed (a replica
        paused or cut off while holding it) is left alone, and left out of the result.
        """
        ids = sorted(set(rack_ids), key=str)
        if not defer_held:
            return self._lock_racks(ids)
        try:
            with self.work.conn.begin_nested():  # rolled back on a timeout: no lock kept
                return self._lock_racks(ids)
        except sa.exc.OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
                raise
        return self._lock_racks(ids, skip_locked=True)

    def _lock_racks(self, ids: Sequence[uuid.UUID], *, skip_locked: bool = False) -> set[uuid.UUID]:
        found: set[uuid.UUID] = set()
        for chunk in chunked(ids):
            found.update(
                self.work.conn.execute(
                    sa.select(rack.c.id)
                    .where(among(self.work.conn.dialect.name, rack.c.id, chunk))
                    .order_by(rack.c.id)
                    .with_for_update(skip_locked=skip_locked)
                ).scalars()
            )
        return found

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
        request = TaskRequest(
            rack_id, component_filter, template, policy, description, schedule_id, scope_id
        )
        (submitted,) = self._submit_locked(
            [request], self._lock_racks_with_components([rack_id])[0]
        )
        if submitted.error is not None:
            raise SubmissionRefused(submitted.error)
        assert submitted.task_id is not None
        return self.get_tasks([submitted.task_id])[0]

    def submit_tasks(
        self, requests: Sequence[TaskRequest], *, defer_held: bool = False
    ) -> list[Submission]:
        """Create many task rows at once, each as :meth:`submit_task` would, in request order.

        The racks are locked once, in id order; a task created earlier in the batch
        counts as active on its rack for the requests after it. A refused request
        is a :class:`Submission` with an ``error`` and stops no other. Should the
        batch's insert itself fail (a schedule deleted meanwhile, say), the batch
        is rolled back and redone one request at a time, each in a savepoint, so
        that only the bad requests fail. ``defer_held`` (PostgreSQL): a rack another
        transaction holds past the session's lock timeout is not waited for any longer;
        its requests come back ``deferred``.
        """
        if not requests:
            return []
        on_rack, held = self._lock_racks_with_components(
            (r.rack_id for r in requests), defer_held=defer_held
        )
        deciding = [r for r in requests if r.rack_id not in held]
        try:
            with self.work.conn.begin_nested():
                decided = self._submit_locked(deciding, on_rack)
        except Exception:  # the batch's insert failed: find the bad requests one by one
            decided = self._submit_one_by_one(deciding, on_rack)
        if not held:
            return decided
        answers = iter(decided)
        return [Submission(deferred=True) if r.rack_id in held else next(answers) for r in requests]

    def _submit_one_by_one(
        self, requests: Sequence[TaskRequest], on_rack: RackComponents
    ) -> list[Submission]:
        submissions = []
        for request in requests:
            try:
                with self.work.conn.begin_nested():
                    (submitted,) = self._submit_locked([request], on_rack)
            except Exception as exc:  # one request's failure never stops the others
                submitted = Submission(error=f"rack {request.rack_id}: {describe_error(exc)}")
            submissions.append(submitted)
        return submissions

    def _submit_locked(
        self, requests: Sequence[TaskRequest], on_rack: RackComponents
    ) -> list[Submission]:
        """Decide every request in memory, then insert the accepted ones: a read of the
        racks' active tasks, and an insert per status."""
        queues = self.rack_queues(
            sorted({r.rack_id for r in requests if r.rack_id in on_rack}, key=str)
        )
        operations: dict[int, str] = {}  # the operation text of each template
        types: dict[uuid.UUID, dict[str, str]] = {}  # each rack's component id -> type
        every: dict[uuid.UUID, list[str]] = {}  # each rack's component types, in id order
        task_rows: dict[TaskStatus, list[tuple[Any, ...]]] = {}
        submissions = []
        for request in requests:
            rack_id = request.rack_id
            if rack_id not in on_rack:
                submissions.append(Submission(error=f"rack {rack_id} no longer exists"))
                continue
            components = select_components(request.component_filter, on_rack[rack_id])
            if components is None:
                message = f"no component of rack {rack_id} matches the scope's filter"
                submissions.append(Submission(error=message))
                continue
            if request.component_filter is None:  # all of them: the rack's own list
                if rack_id not in every:
                    every[rack_id] = [kind for _, kind in on_rack[rack_id]]
                kinds = every[rack_id]
            else:
                if rack_id not in types:
                    types[rack_id] = dict(on_rack[rack_id])
                kinds = [types[rack_id][c] for c in components]
            template = request.template
            task_id = new_task_id()
            active = Active(task_id, template.type, components, kinds)
            queue = request.policy == OverlapPolicy.QUEUE
            rack_queue = queues.get(rack_id)
            if rack_queue is None:
                rack_queue = queues[rack_id] = RackQueue()
            held = len(rack_queue.waiting)
            blocked_by = None
            if rack_queue.running or rack_queue.waiting:
                blocked_by = blocker(active.work, rack_queue.running, rack_queue.waiting)
            status = admit(blocked=blocked_by is not None, queue=queue, waiting=held)
            if status is None:
                assert blocked_by is not None
                message = (
                    f"rack {rack_id} already has an active task {blocked_by.task_id} that"
                    f" conflicts with it ({conflicting_row(active.work, blocked_by.work)})"
                )
                full = queue and queue_full(held)
                if full:
                    message = f"rack {rack_id}: waiting queue is full ({held} waiting tasks)"
                submissions.append(Submission(error=message, blocked=not full))
                continue
            expires = None
            if status == TaskStatus.WAITING:
                timeout = template.information.get("queue_timeout_seconds")
                expires = queue_deadline(self.work.now, timeout)
            seq = rack_queue.last + 1  # after every active task of the rack: no overtaking
            rack_queue.add(status, active, seq)
            operation = operations.get(id(template))
            if operation is None:
                operation = operations[id(template)] = task_operation_text(template)
            row = (  # in the order of _TASK_COLUMNS
                task_id,
                request.schedule_id,
                request.scope_id,
                rack_id,
                operation,
                template.type,
                template.code,
                template.information,
                components,
                kinds,
                request.description,
                expires,
                request.forced,
                seq,
                request.schedule_name,
                dict(request.schedule_labels or {}) or None,
                request.firing_id,
                request.due_at,
            )
            task_rows.setdefault(status, []).append(row)
            submissions.append(Submission(task_id=task_id, status=status))
        # Created now, once the racks are locked, not when the transaction began: a
        # submitter that waited for a rack must not hide the wait from the lag figures.
        created = self.work.clock() if task_rows else self.work.now
        for status, rows in task_rows.items():
            shared = {
                "status": status.value,
                "message": "",
                # A pending task is the runner's to deliver from now on.
                "next_check_at": created if status == TaskStatus.PENDING else None,
                "created_at": created,
                "updated_at": created,
            }
            insert_rows(self.work.conn, task, _TASK_COLUMNS, rows, same=shared)
        return submissions

    def busy_scopes(self, scope_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """The scopes whose previous task is active: their last task, or a task carrying
        their scope id created after it (or while they had none: one never written back);
        and every scope of a schedule whose previous firing is still open (it may owe them
        a task). One row per busy scope, however many tasks are queued behind it."""
        busy: set[uuid.UUID] = set()
        for chunk in chunked(scope_ids):
            query = _busy_query(self.work.conn.dialect.name)
            busy.update(self.work.conn.execute(query, {"ids": chunk}).scalars())
        return busy

    def rack_queues(self, rack_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, RackQueue]:
        """The active tasks of each of these racks (racks with none are absent): the running
        set, and the waiting tasks in order of submission (``lifecycle.promotions``' order).

        The order is ``rack_seq``, counted under the rack's lock, never a clock: a replica
        whose clock runs behind cannot queue a task ahead of one queued before it."""
        found: dict[uuid.UUID, RackQueue] = {}
        columns = (
            task.c.rack_id,
            task.c.id,
            task.c.status,
            task.c.operation_type,
            task.c.component_uuids,
            task.c.component_types,
            task.c.rack_seq,
        )
        for chunk in chunked(rack_ids):
            query = (
                sa.select(*columns)
                .where(
                    among(self.work.conn.dialect.name, task.c.rack_id, chunk),
                    task.c.status.in_(ACTIVE_STATUS_VALUES),
                )
                .order_by(task.c.rack_seq, task.c.created_at, task.c.id)
            )
            for rack_id, task_id, status, kind, ids, kinds, seq in self.work.conn.execute(query):
                if rack_id not in found:
                    found[rack_id] = RackQueue()
                found[rack_id].add(TaskStatus(status), Active(task_id, kind, ids, kinds), seq)
        return found

    def _lock_racks_with_components(
        self, rack_ids: Iterable[uuid.UUID], *, defer_held: bool = False
    ) -> tuple[RackComponents, set[uuid.UUID]]:
        """Lock the racks as :meth:`lock_racks` does, and read their components.

        Returns each locked rack's components as (id, type), in id order, ids as
        UUID text: they go into JSON as text. A firing reads every component of
        every rack it targets, so they come packed, one row per rack, and no UUID
        object is built for them. Also returns the racks held by another transaction
        (``defer_held`` only), which are neither locked nor read.
        """
        ids = sorted(set(rack_ids), key=str)
        dialect = self.work.conn.dialect.name
        held: set[uuid.UUID] = set()
        if dialect == "postgresql":  # SQLite: the write transaction already excludes others
            locked = self.lock_racks(ids, defer_held=defer_held)
            if defer_held and len(locked) < len(ids):
                missing = [i for i in ids if i not in locked]
                for chunk in chunked(missing):
                    query = sa.select(rack.c.id).where(rack.c.id.in_(chunk))
                    held.update(self.work.conn.execute(query).scalars())
                ids = [i for i in ids if i not in held]
        found: RackComponents = {}
        for chunk in chunked(ids):
            racks = {str(r): r for r in chunk}
            for rack_id, entries in self.work.conn.execute(
                _components_query(dialect), {"ids": chunk}
            ):
                # Canonical UUID text sorts as the ids do.
                found[racks[rack_id]] = (
                    sorted(tuple(e.split(":")) for e in entries.split(",")) if entries else []
                )
        return found, held


# Statements an operation runs in every batch are built once (per backend where they
# differ): building them costs more than running them for a few rows.


@functools.cache
def _busy_query(dialect: str) -> sa.Select[Any]:
    """Which of the scopes ``ids`` are busy (:meth:`TaskOps.busy_scopes`)."""
    last = task.alias("last")
    active = task.c.status.in_(ACTIVE_STATUS_VALUES)
    by_last = sa.exists().where(task.c.id == task_schedule_scope.c.last_task_id, active)
    older_last = (  # the scope's last task, created before this one
        sa.exists()
        .where(
            last.c.id == task_schedule_scope.c.last_task_id,
            last.c.created_at < task.c.created_at,
        )
        .correlate_except(last)
    )
    unwritten = sa.exists().where(
        task.c.scope_id == task_schedule_scope.c.id,
        active,
        task_schedule_scope.c.last_task_id.is_(None) | older_last,
    )
    owed = sa.exists().where(
        firing.c.schedule_id == task_schedule_scope.c.schedule_id,
        firing.c.finished_at.is_(None),
    )
    return sa.select(task_schedule_scope.c.id).where(
        among(dialect, task_schedule_scope.c.id, name="ids"),
        by_last | unwritten | owed,
    )


@functools.cache
def _components_query(dialect: str) -> sa.Select[Any]:
    """Each of the racks ``ids`` (as UUID text) with its components packed into one
    text, ``id:type`` joined by commas (:meth:`TaskOps._lock_racks_with_components`)."""
    as_text = _uuid_text(dialect)
    entry = as_text(component.c.id) + ":" + component.c.type
    packed = (
        sa.func.string_agg(entry, ",")
        if dialect == "postgresql"
        else sa.func.group_concat(entry, ",")
    )
    return (
        sa.select(as_text(rack.c.id), packed)
        .select_from(rack.outerjoin(component, component.c.rack_id == rack.c.id))
        .where(among(dialect, rack.c.id, name="ids"))
        .group_by(rack.c.id)
    )


def _uuid_text(dialect: str) -> Callable[[sa.ColumnElement[Any]], sa.ColumnElement[str]]:
    """How to read a UUID column as canonical text on this backend, in SQL: no UUID
    object is built in Python (SQLite keeps a UUID as 32 hex digits)."""
    if dialect == "postgresql":
        return lambda column: sa.cast(column, sa.String)

    def dashed(column: sa.ColumnElement[Any]) -> sa.ColumnElement[str]:
        hex_text = sa.type_coerce(column, sa.String)
        text: sa.ColumnElement[str] | None = None
        for start, length in _UUID_PARTS:
            part = sa.func.substr(hex_text, start, length, type_=sa.String)
            text = part if text is None else text + "-" + part
        assert text is not None
        return sa.func.lower(text, type_=sa.String)

    return dashed


_UUID_PARTS = ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))


def describe_error(exc: Exception) -> str:
    """An exception as one line: a rackcron error's message, else its type and text."""
    return exc.message if isinstance(exc, RackcronError) else f"{type(exc).__name__}: {exc}"
