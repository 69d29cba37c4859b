"""The rackcron service: every task-schedule rule of docs/spec/SEMANTICS.md, once, over the store.

Operations live in small groups (``_schedules``, ``_scopes``, ``_firing``, ``_tasks``,
``_inventory``, ...), one class each, given the unit of work (``_work``: one open
transaction and its time) and the groups it calls; :class:`Operations` holds one of each
for a unit of work (``ops.schedules``, ``ops.firing``, ...). :class:`Service` gives
each operation its own transaction (one RPC = one transaction) and also hands out a
transaction for callers that need several operations to commit or fail together (the
reconciler's apply)::

    service = Service.open("sqlite:///rackcron.db")
    schedule = service.create_schedule(config, operation)     # one transaction
    with service.transaction() as ops:                        # several, all or nothing
        ops.schedules.pause_schedule(a)
        ops.schedules.delete_schedule(b)

Firing is the exception: :meth:`Service.trigger` and :meth:`Service.fire_due`
run the three phases in three transactions (see ``_firing``).

Every change a Service method makes outside an apply (create, update, pause, resume,
delete, trigger, the scope changes, a cancel, a broken apply lock) is recorded in the
audit trail in its own transaction, as done by its ``audit`` argument (default: the
local OS user; ``rackcron.audit``). Operations on a transaction record nothing: that is
how an apply runs, and it is logged as a whole (``record_apply``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import socket
import typing
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Concatenate, ParamSpec, TypeVar, overload

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from rackcron import audit as _trail
from rackcron.audit import Audit
from rackcron.domain.models import (
    Management,
    Operation,
    RolloutPolicy,
    RolloutRecord,
    Schedule,
    ScheduleConfig,
    Scope,
    ScopeUpdate,
    TargetSpec,
    Task,
)
from rackcron.domain.upcoming import FleetView
from rackcron.errors import FailedPrecondition, InvalidArgument, NotFound, StoreError
from rackcron.gcpause import gc_paused
from rackcron.service import _rows
from rackcron.service._applies import ApplyLocked, ApplyOps, lock_holder
from rackcron.service._audit import AuditOps
from rackcron.service._base import parse_id
from rackcron.service._delivery import DeliveryOps, DueCall, Recorded, Update, Written, followed
from rackcron.service._failures import FailureOps
from rackcron.service._firing import (
    DEFAULT_LEASE,
    Batch,
    Completed,
    FireResult,
    Firing,
    FiringOps,
    Frozen,
    Missed,
    ScopeOutcome,
    Unfireable,
)
from rackcron.service._freezes import FreezeOps
from rackcron.service._inventory import InventoryOps, RackView
from rackcron.service._names import LOOKALIKE_KINDS, NameOps, Names, warn_lookalike
from rackcron.service._retention import RetentionOps
from rackcron.service._rollouts import Advanced, RolloutOps
from rackcron.service._schedules import (
    BY_ID,
    UPDATE_MASK_PATHS,
    MetricsSchedule,
    MetricsSchedules,
    ScheduleOps,
    not_found,
)
from rackcron.service._scopes import ScopeOps
from rackcron.service._targets import TargetOps
from rackcron.service._tasks import TaskOps
from rackcron.service._work import UnitOfWork
from rackcron.store import default_database_url, open_engine, open_reader, transaction
from rackcron.store.failures import store_error
from rackcron.store.limits import Role, SessionLimits
from rackcron.store.lookup import Lookup

__all__ = [
    "DEFAULT_LEASE",
    "LOOKALIKE_KINDS",
    "UPDATE_MASK_PATHS",
    "ApplyLocked",
    "ApplyOps",
    "AuditOps",
    "Batch",
    "Completed",
    "DeliveryOps",
    "DueCall",
    "FireResult",
    "FiringOps",
    "FreezeOps",
    "Frozen",
    "InventoryOps",
    "MetricsSchedule",
    "MetricsSchedules",
    "Missed",
    "NameOps",
    "Names",
    "Operations",
    "RackView",
    "Recorded",
    "RetentionOps",
    "ScheduleOps",
    "ScopeOps",
    "ScopeOutcome",
    "Service",
    "TargetOps",
    "TaskOps",
    "Unfireable",
    "UnitOfWork",
    "Update",
    "Written",
    "followed",
    "warn_lookalike",
]


class Operations:
    """One unit of work's operations, in groups: each group is given the unit of work and
    the groups it calls, and none inherits another."""

    work: UnitOfWork
    targets: TargetOps
    schedules: ScheduleOps
    scopes: ScopeOps
    tasks: TaskOps
    freezes: FreezeOps
    rollouts: RolloutOps
    firing: FiringOps
    delivery: DeliveryOps
    inventory: InventoryOps
    names: NameOps
    applies: ApplyOps
    failures: FailureOps
    audit: AuditOps
    retention: RetentionOps

    def __init__(self, work: UnitOfWork) -> None:
        self.work = work
        self.targets = TargetOps(work)
        self.schedules = ScheduleOps(work, self.targets)
        self.scopes = ScopeOps(work, self.schedules, self.targets)
        self.tasks = TaskOps(work)
        self.freezes = FreezeOps(work)
        self.rollouts = RolloutOps(work, self.tasks, self.freezes)
        self.firing = FiringOps(work, self.schedules, self.tasks, self.freezes, self.rollouts)
        self.delivery = DeliveryOps(work, self.tasks, self.freezes)
        self.inventory = InventoryOps(work)
        self.names = NameOps(work)
        self.applies = ApplyOps(work)
        self.failures = FailureOps(work, self.tasks)
        self.audit = AuditOps(work, self.schedules, self.applies, self.failures)
        self.retention = RetentionOps(work)

    @property
    def now(self) -> datetime:
        """The unit of work's time, fixed for its duration."""
        return self.work.now

    @classmethod
    def groups(cls) -> dict[str, type]:
        """Each group's class, by its attribute."""
        return {k: v for k, v in typing.get_type_hints(cls).items() if k != "work"}


_GROUPS = Operations.groups()
#: The refusals a failed trigger's error names (each names its rack), of its first racks.
REFUSALS_NAMED = 5
assert len(set(_GROUPS.values())) == len(_GROUPS), "a group class held twice"


def _group_of(method: Callable[..., Any]) -> str:
    """The attribute of :class:`Operations` whose group defines ``method``.

    :raises TypeError: no group defines it.
    """
    for name, kind in _GROUPS.items():
        if vars(kind).get(method.__name__) is method:
            return name
    raise TypeError(f"{method.__qualname__} is not an operation of a group of Operations")


def _utcnow() -> datetime:
    return datetime.now(UTC)


T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")
G = TypeVar("G")


def _same(schedule: Schedule) -> Schedule:
    return schedule


@functools.lru_cache(maxsize=64)
def _from_row(view: Callable[[Schedule], T]) -> Callable[[Any], T]:
    """``view`` of a schedule's row: one function object per view (the memo's key)."""
    return lambda row: view(_rows.schedule(row))


def _in_transaction(
    method: Callable[Concatenate[G, P], R],
    *,
    write: bool = True,
    single_read: bool = False,
    role: Role | None = None,
) -> Callable[Concatenate[Service, P], R]:
    """Operation ``method`` in a transaction of its own, as a Service method with the same
    parameters (less ``self``) and return type; ``single_read``: it runs one SELECT, on
    the store's reader (``rackcron.store.open_reader``), retried once if the connection
    it got was dead; ``role``: the transaction's PostgreSQL session limits, if not the
    engine's (``rackcron.store.limits``).

    Each call looks the operation up by name on its group of :class:`Operations`, so a
    method replaced on the group's class (a test's monkeypatch) is the one that runs."""
    name = method.__name__
    group = _group_of(method)

    def bound(ops: Operations) -> Callable[P, R]:
        operation: Callable[P, R] = getattr(getattr(ops, group), name)
        return operation

    def call(self: Service, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if not single_read:
            with self.transaction(write=write, role=role) as ops:
                return bound(ops)(*args, **kwargs)
        try:
            with self.transaction(write=False, engine=self.reader) as ops:
                return bound(ops)(*args, **kwargs)
        except StoreError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, sa.exc.DBAPIError) and cause.connection_invalidated):
                raise
        with self.transaction(write=False, engine=self.reader) as ops:
            return bound(ops)(*args, **kwargs)

    # The operation's docstring, and its signature for inspect (help(), editors) by __wrapped__.
    functools.update_wrapper(call, method, assigned=("__doc__",), updated=())
    call.__name__, call.__qualname__ = name, f"Service.{name}"
    return call


class Service:
    """The service over one database; each public operation is one transaction."""

    def __init__(
        self, engine: Engine, *, clock: Callable[[], datetime] = _utcnow, memo: int = 4096
    ) -> None:
        """``memo``: how many schedule rows :meth:`get_schedule` keeps its views of (0: none)."""
        self.engine = engine
        self.reader = open_reader(engine)
        self.clock = clock
        self._schedule_by_id = Lookup(self.reader, BY_ID, memo=memo)
        self._unreleased: dict[str, StoreError] = {}

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        pool_size: int | None = None,
        create: bool = True,
        role: Role = Role.SERVE,
        limits: SessionLimits | None = None,
        **kwargs: Any,
    ) -> Service:
        """Open the store at ``url`` (default: ``default_database_url()``); with ``create``
        False, a SQLite file that does not exist is refused (``open_engine``); ``role``
        and ``limits``: its PostgreSQL session limits (``rackcron.store.limits``).

        :raises StoreError: the store cannot be opened.
        """
        url = url or default_database_url()
        engine = open_engine(url, pool_size=pool_size, create=create, role=role, limits=limits)
        return cls(engine, **kwargs)

    @property
    def dialect(self) -> str:
        """The store's database: ``sqlite`` or ``postgresql``."""
        return str(self.engine.dialect.name)

    def close(self) -> None:
        self.engine.dispose()
        self.reader.dispose()

    @contextmanager
    def transaction(
        self, *, write: bool = True, engine: Engine | None = None, role: Role | None = None
    ) -> Iterator[Operations]:
        """Operations in one transaction on ``engine`` (default: the store's): committed at
        the end, rolled back on any error; ``role``: its PostgreSQL session limits, if not
        the engine's.

        :raises StoreError: the database failed (the driver error is chained).
        """
        try:
            with transaction(engine or self.engine, write=write, role=role) as conn:
                yield Operations(UnitOfWork(conn, self.clock(), self.clock))
        except sa.exc.SQLAlchemyError as exc:
            raise store_error(exc) from exc

    @contextmanager
    def rehearsal(self) -> Iterator[Operations]:
        """A write transaction that is always rolled back: what commands would do, undone
        (``rackcron.reconciler.apply.rehearse``).

        :raises StoreError: the database failed.
        """
        with self.transaction() as ops:
            yield ops
            ops.work.conn.rollback()

    # Schedules
    def create_schedule(
        self,
        config: ScheduleConfig,
        operation: Operation | None,
        *,
        management: Management | None = None,
        starting_deadline: str | None = None,
        anchor: str | None = None,
        jitter: str | None = None,
        rollout: RolloutPolicy | None = None,
        expected_duration: str | None = None,
        audit: Audit | None = None,
    ) -> Schedule:
        """CreateTaskSchedule (:meth:`ScheduleOps.create_schedule`), recorded as by ``audit``.

        :raises InvalidArgument: a missing or malformed field, operation or target, or an
            ``audit`` the rules refuse (``rackcron.audit``).
        :raises AlreadyExists: the name is taken.
        :raises NotFound: a target names an unknown rack, component or domain.
        """
        with self.transaction() as ops:
            schedule = ops.schedules.create_schedule(
                config,
                operation,
                management=management,
                starting_deadline=starting_deadline,
                anchor=anchor,
                jitter=jitter,
                rollout=rollout,
                expected_duration=expected_duration,
            )
            lookalike = warn_lookalike(ops.names, "schedule", schedule.name, str(schedule.id))
            ops.audit.record_action(audit, _trail.created(schedule, lookalike))
            return schedule

    @overload
    def get_schedule(self, schedule_id: uuid.UUID | str) -> Schedule: ...
    @overload
    def get_schedule(self, schedule_id: uuid.UUID | str, view: Callable[[Schedule], T]) -> T: ...
    def get_schedule(
        self, schedule_id: uuid.UUID | str, view: Callable[[Schedule], Any] = _same
    ) -> Any:
        """GetTaskSchedule: ``view`` of the schedule (default: the Schedule itself).

        The hottest read: one SELECT on the reader's driver connection, and ``view``
        (a pure function, the same object every call; its result is shared, not to be
        modified) applied once per version of the row (``rackcron.store.lookup``).

        :raises NotFound: no such schedule.
        """
        schedule_id = parse_id(schedule_id, "id")
        found = self._schedule_by_id.one(_from_row(view), id=schedule_id)
        if found is None:
            raise not_found(schedule_id)
        return found

    find_schedule = _in_transaction(ScheduleOps.find_schedule, write=False)
    list_schedules = _in_transaction(ScheduleOps.list_schedules, write=False)
    schedule_states = _in_transaction(ScheduleOps.schedule_states, write=False)

    def update_schedule(
        self,
        schedule_id: uuid.UUID | str,
        config: ScheduleConfig,
        update_mask: Sequence[str],
        *,
        audit: Audit | None = None,
    ) -> Schedule:
        """UpdateTaskSchedule (:meth:`ScheduleOps.update_schedule`), recorded as by ``audit``
        with the fields it changed. Raises what the operation raises."""
        with self.transaction() as ops:
            before = ops.audit.peek_schedule(schedule_id)
            schedule = ops.schedules.update_schedule(schedule_id, config, update_mask)
            renamed = before is not None and before.name != schedule.name
            lookalike = (
                warn_lookalike(ops.names, "schedule", schedule.name, str(schedule.id))
                if renamed
                else None
            )
            ops.audit.record_action(audit, _trail.updated(before, schedule, lookalike))
            return schedule

    def pause_schedule(
        self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None
    ) -> Schedule:
        """PauseTaskSchedule (:meth:`ScheduleOps.pause_schedule`), recorded as by ``audit``
        (pausing a paused schedule changes nothing and records nothing)."""
        with self.transaction() as ops:
            before = ops.audit.peek_schedule(schedule_id)
            schedule = ops.schedules.pause_schedule(schedule_id)
            ops.audit.record_action(audit, _trail.paused(before, schedule))
            return schedule

    def resume_schedule(
        self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None
    ) -> Schedule:
        """ResumeTaskSchedule (:meth:`ScheduleOps.resume_schedule`), recorded as by ``audit``
        with the next run it restarts from."""
        with self.transaction() as ops:
            schedule = ops.schedules.resume_schedule(schedule_id)
            next_run = schedule.next_run_at.isoformat() if schedule.next_run_at else None
            change = _trail.schedule_change(_trail.Action.RESUME, schedule, next_run_at=next_run)
            ops.audit.record_action(audit, change)
            return schedule

    def delete_schedule(self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None) -> None:
        """DeleteTaskSchedule (:meth:`ScheduleOps.delete_schedule`), recorded as by ``audit``.

        :raises NotFound: no such schedule.
        """
        with self.transaction() as ops:
            schedule = _rows.schedule(ops.schedules.schedule_row(schedule_id, lock=True))
            ops.schedules.delete_schedule(schedule.id)
            owner = schedule.management.owner  # so `rackcron status` knows whose it was
            detail = {} if owner is None else {"owner": owner}
            ops.audit.record_action(
                audit, _trail.schedule_change(_trail.Action.DELETE, schedule, **detail)
            )

    check_conflicts = _in_transaction(ScheduleOps.check_conflicts, write=False)
    set_management = _in_transaction(ScheduleOps.set_management)
    set_starting_deadline = _in_transaction(ScheduleOps.set_starting_deadline)
    set_spread = _in_transaction(ScheduleOps.set_spread)
    set_rollout = _in_transaction(ScheduleOps.set_rollout)

    # Scopes
    def add_scope(
        self,
        schedule_id: uuid.UUID | str,
        target_spec: TargetSpec | None,
        *,
        audit: Audit | None = None,
    ) -> list[Scope]:
        """AddTaskScheduleScope (:meth:`ScopeOps.add_scope`), recorded as by ``audit``
        with the racks whose entry it created or re-filtered."""
        with self.transaction() as ops:
            scopes = ops.scopes.add_scope(schedule_id, target_spec)
            racks = [str(s.rack_id) for s in scopes]
            ops.audit.record_action(
                audit, _trail.scope_added(ops.schedules.get_schedule(schedule_id), racks)
            )
            return scopes

    def update_scope(
        self,
        schedule_id: uuid.UUID | str,
        desired: TargetSpec | None,
        *,
        audit: Audit | None = None,
    ) -> ScopeUpdate:
        """UpdateTaskScheduleScope (:meth:`ScopeOps.update_scope`), recorded as by
        ``audit`` with its counts."""
        with self.transaction() as ops:
            update = ops.scopes.update_scope(schedule_id, desired)
            schedule = ops.schedules.get_schedule(schedule_id)
            ops.audit.record_action(audit, _trail.scope_updated(schedule, update))
            return update

    def remove_scope(self, scope_id: uuid.UUID | str, *, audit: Audit | None = None) -> None:
        """RemoveTaskScheduleScope (:meth:`ScopeOps.remove_scope`), recorded as by
        ``audit`` on the schedule it belonged to."""
        with self.transaction() as ops:
            removed = ops.audit.peek_scope(scope_id)
            ops.scopes.remove_scope(scope_id)
            assert removed is not None  # the removal found it
            schedule = ops.schedules.get_schedule(removed.schedule_id)
            change = _trail.scope_removed(schedule, str(removed.id), str(removed.rack_id))
            ops.audit.record_action(audit, change)

    list_scopes = _in_transaction(ScopeOps.list_scopes, write=False)
    scopes_by_schedule = _in_transaction(ScopeOps.scopes_by_schedule, write=False)
    # Tasks
    list_tasks = _in_transaction(TaskOps.list_tasks, write=False)
    last_results = _in_transaction(TaskOps.last_results, write=False)
    get_tasks = _in_transaction(TaskOps.get_tasks, write=False, single_read=True)

    def cancel_task(self, task_id: uuid.UUID | str, *, audit: Audit | None = None) -> Task:
        """CancelTask (:meth:`TaskOps.cancel_task`), recorded as by ``audit`` with the
        status the task had. Raises what the operation raises."""
        with self.transaction() as ops:
            was = ops.audit.task_status(task_id)
            cancelled = ops.tasks.cancel_task(task_id)
            ops.audit.record_action(audit, _trail.cancelled(cancelled, was))
            return cancelled

    # Inventory
    upsert_rack = _in_transaction(InventoryOps.upsert_rack)
    delete_rack = _in_transaction(InventoryOps.delete_rack)
    list_racks = _in_transaction(InventoryOps.list_racks, write=False)
    rack_views = _in_transaction(InventoryOps.rack_views, write=False)
    upsert_component = _in_transaction(InventoryOps.upsert_component)
    delete_component = _in_transaction(InventoryOps.delete_component)
    list_components = _in_transaction(InventoryOps.list_components, write=False)
    upsert_nvl_domain = _in_transaction(InventoryOps.upsert_nvl_domain)
    delete_nvl_domain = _in_transaction(InventoryOps.delete_nvl_domain)
    list_nvl_domains = _in_transaction(InventoryOps.list_nvl_domains, write=False)

    # Names (rackcron.domain.names): the id a name means, the names shown beside ids
    resolve_rack = _in_transaction(NameOps.resolve_rack, write=False)
    resolve_component = _in_transaction(NameOps.resolve_component, write=False)
    names_of = _in_transaction(NameOps.names_of, write=False)

    upsert_freeze = _in_transaction(FreezeOps.upsert_freeze)
    get_freeze = _in_transaction(FreezeOps.get_freeze, write=False)
    list_freezes = _in_transaction(FreezeOps.list_freezes, write=False)
    delete_freeze = _in_transaction(FreezeOps.delete_freeze)
    active_freezes = _in_transaction(FreezeOps.active_freezes, write=False)

    # Apply lock and log (the reconciler)
    def acquire_apply_lock(self, who: str) -> str:
        """Take the apply lock as ``who``; return the holder to release it with: ``who``,
        this host and process, and a token unique to this acquisition.

        The locks this Service could not release (:attr:`unreleased_apply_locks`) are
        removed first, in the same transaction: after an outage, the next apply of the
        same process is not refused by its own lock.

        :raises ApplyLocked: another apply holds the lock (the message names its holder,
            host and pid, and since when).
        :raises StoreError: the database failed.
        """
        holder = lock_holder(who, socket.gethostname(), os.getpid(), secrets.token_hex(8))
        stale = list(self._unreleased)
        try:
            with self.transaction() as ops:
                ops.applies.acquire_apply_lock(holder, stale=stale)
        except ApplyLocked:
            self._forget(stale)  # the lock is another holder's: none of ours is left
            raise
        self._forget(stale)
        return holder

    def release_apply_lock(self, holder: str) -> None:
        """Release the lock if ``holder`` still holds it.

        Never raises for a database failure, so it cannot hide the error of the apply it
        ends: the holder is kept in :attr:`unreleased_apply_locks` (with the error) and
        released by this Service's next :meth:`acquire_apply_lock`.
        """
        try:
            with self.transaction() as ops:
                ops.applies.release_apply_lock(holder)
        except StoreError as exc:
            self._unreleased[holder] = exc
        except BaseException:  # interrupted: the row may be there still
            self._unreleased[holder] = StoreError("the release was interrupted")
            raise

    @property
    def unreleased_apply_locks(self) -> Mapping[str, StoreError]:
        """The apply locks this Service took and could not release, with the error."""
        return MappingProxyType(self._unreleased)

    def _forget(self, holders: Iterable[str]) -> None:
        for holder in holders:
            self._unreleased.pop(holder, None)

    def break_apply_lock(self, *, audit: Audit | None = None) -> str | None:
        """Remove the apply lock whoever holds it (:meth:`ApplyOps.break_apply_lock`);
        return who did (None: nobody). Recorded as by ``audit``, with that holder."""
        with self.transaction() as ops:
            holder = ops.applies.break_apply_lock()
            ops.audit.record_action(audit, _trail.lock_broken(holder))
            return holder

    def fleet_view(self) -> FleetView:
        """The enabled schedules with their scopes, the inventory and the freezes, read in
        one transaction: what ``rackcron.domain.upcoming`` draws a timeline from."""
        with self.transaction(write=False) as ops:
            return FleetView(
                schedules=ops.schedules.list_schedules(enabled_only=True).items,
                scopes=ops.scopes.scopes_by_schedule(enabled_only=True),
                racks=ops.inventory.list_racks(),
                components=ops.inventory.list_components(),
                freezes=ops.freezes.list_freezes(),
                rollouts=ops.rollouts.running(),
            )

    list_applies = _in_transaction(ApplyOps.list_applies, write=False)
    list_actions = _in_transaction(AuditOps.list_actions, write=False)
    history = _in_transaction(AuditOps.history, write=False)
    status = _in_transaction(AuditOps.status, write=False)
    # The task runner
    claim_work = _in_transaction(DeliveryOps.claim_work)
    record = _in_transaction(DeliveryOps.record)
    expire_queued = _in_transaction(DeliveryOps.expire_queued)
    promote_waiting = _in_transaction(DeliveryOps.promote_waiting)
    task_counts = _in_transaction(DeliveryOps.task_counts, write=False)
    rollout_counts = _in_transaction(RolloutOps.counts, write=False)
    # Task retention (one batch per transaction)
    prune_tasks = _in_transaction(RetentionOps.prune_tasks, role=Role.RETENTION)
    prune_firings = _in_transaction(RetentionOps.prune_firings, role=Role.RETENTION)

    def complete(
        self,
        firings: Sequence[Firing],
        *,
        defer_held: bool = True,
        before_commit: Callable[[], None] | None = None,
        record: Callable[[Operations, Firing, list[ScopeOutcome]], None] | None = None,
    ) -> list[FireResult]:
        """Phase 2 of claimed firings, in one transaction: each firing's result.

        A store failure leaves every scope it was to submit ``deferred`` (the firing's
        record keeps the debt; its lease is ended, best effort, so any replica completes
        it at its next poll) and never fails the next batch. ``before_commit`` runs
        inside the transaction once the tasks are written (a fault-injection point);
        ``record`` inside it too, for each firing (a trigger's audit record).
        """
        recorded = [f.id for f in firings if f.id is not None]
        done: dict[uuid.UUID, Completed] = {}
        try:
            with self.transaction() as ops:
                done = {c.firing_id: c for c in ops.firing.complete(firings, defer_held=defer_held)}
                results = [self._result(f, done) for f in firings]
                if record is not None:
                    for result in results:
                        record(ops, result.firing, result.outcomes)
                if before_commit is not None and recorded:
                    before_commit()
                return results
        except StoreError as exc:
            with contextlib.suppress(StoreError), self.transaction() as ops:
                ops.firing.release(recorded)
            return [self._result(f, {}, exc.message) for f in firings]

    @staticmethod
    def _result(
        firing: Firing, done: Mapping[uuid.UUID, Completed], error: str | None = None
    ) -> FireResult:
        completed = done.get(firing.id) if firing.id is not None else None
        if completed is None and error is None:
            error = "its firing is being completed by another replica, or was deleted"
        outcomes = firing.outcomes(completed.done if completed else {}, error)
        created = completed.created_at if completed and completed.done else None
        return FireResult(firing, outcomes, created)

    def complete_overdue(
        self, *, batch_size: int = 500, exclude: set[uuid.UUID] | None = None
    ) -> Iterator[list[Completed]]:
        """Phase 2 and 3 of the recorded firings whose lease has run out, ``batch_size``
        at a time, each batch in its own transactions; ``exclude`` collects the ids tried
        (a firing still owing a scope is not tried twice in one call)."""
        tried = exclude if exclude is not None else set()
        while True:
            try:
                with self.transaction() as ops:
                    completed = ops.firing.complete_overdue(batch_size, exclude=tried)
            except StoreError:
                return
            tried.update(c.firing_id for c in completed)
            if completed:
                self.write_back(o for c in completed for o in c.done.values())
                yield completed
            if len(completed) < batch_size:
                return

    def write_back(self, outcomes: Iterable[ScopeOutcome]) -> bool:
        """Phase 3 in one transaction; False if the store failed.

        Without the write-back the overlap check still finds the tasks by scope id.
        """
        flat = list(outcomes)
        if not any(o.task_id is not None for o in flat):
            return True
        try:
            with self.transaction() as ops:
                ops.firing.write_back(flat)
        except StoreError:
            return False
        return True

    def _finish(
        self, firings: Sequence[Firing], hook: Callable[[str], None] | None = None
    ) -> list[FireResult]:
        """Phases 2 and 3 of a claimed batch of firings."""
        before_commit = None if hook is None else (lambda: hook("submitting"))
        results = self.complete(firings, before_commit=before_commit)
        if hook is not None:
            hook("submitted")
        self.write_back(o for r in results for o in r.outcomes)
        return results

    def trigger(
        self,
        schedule_id: uuid.UUID | str,
        *,
        force: bool = False,
        all_at_once: bool = False,
        audit: Audit | None = None,
    ) -> FireResult:
        """TriggerTaskSchedule: fire now, every scope, policy and starting deadline ignored;
        recorded as by ``audit``, with its counts, in the transaction that submits its tasks
        (phase 2).

        A freeze holding any scope refuses it, changing nothing, unless ``force``: then it
        fires, ``FireResult.firing.overridden`` names the freezes it overrode, and the
        record says so (``overrode_freeze``, ``frozen_racks``). A schedule with a roll-out
        records one (its tasks are the dispatcher's to start), unless ``all_at_once``:
        then every scope is submitted now, and the record says so.

        Should that transaction fail on the database, the tick is spent all the same:
        the trigger is then recorded with every submission refused, in a transaction of
        its own, if the database takes it.

        :raises InvalidArgument: an ``audit`` the rules refuse (nothing is fired).
        :raises NotFound: no such schedule.
        :raises Frozen: a freeze holds a scope (a FailedPrecondition).
        :raises FailedPrecondition: a consumed one-time schedule, or every
            submission failed (the schedule has still advanced, as a firing does).
        """
        if audit is not None:
            _trail.checked(audit)  # before phase 1 commits: a refused audit fires nothing
        with self.transaction() as ops:
            firing = ops.firing.claim(schedule_id, force=force, all_at_once=all_at_once)

        overrode: dict[str, list[str]] = {}
        for scope in firing.scopes:
            for name in firing.overridden.get(scope.id, ()):
                overrode.setdefault(name, []).append(str(scope.rack_id))

        def record(ops: Operations, _: Firing, outcomes: Sequence[ScopeOutcome]) -> None:
            change = _trail.triggered(
                firing.schedule,
                [o.result for o in outcomes],
                overrode,
                rollout=firing.rollout_id,
                all_at_once=all_at_once and firing.schedule.rollout is not None,
            )
            ops.audit.record_action(audit, change)

        (result,) = self.complete([firing], defer_held=False, record=record)
        deferred = [o for o in result.outcomes if o.result == "deferred"]
        if deferred:  # the store failed: best effort, the record says so
            with contextlib.suppress(StoreError), self.transaction() as ops:
                record(ops, firing, result.outcomes)
        self.write_back(result.outcomes)
        if firing.scopes and not result.task_ids and firing.rollout_id is None:
            if deferred:
                raise StoreError(
                    f"the tasks of task schedule {firing.schedule.id} could not be submitted"
                    f" now ({deferred[0].error}); the firing is recorded, and the dispatcher"
                    " submits them at its next poll"
                )
            # Each names its rack (by id: the task manager's words), here by name too; a
            # fleet-wide schedule's would be thousands.
            named = result.outcomes[:REFUSALS_NAMED]
            racks = self.names_of(racks=[o.rack_id for o in named]).racks

            def said(o: ScopeOutcome) -> str:
                name, text = racks.get(o.rack_id), str(o.error)
                if name is None:  # gone from the inventory: its id alone
                    return text
                return text.replace(f"rack {o.rack_id}", f"rack {name} ({o.rack_id})", 1)

            errors = "; ".join(said(o) for o in named)
            if (more := len(result.outcomes) - REFUSALS_NAMED) > 0:
                errors += f"; and {more:,} more racks refused it"
            raise FailedPrecondition(
                f"id: every task submission of task schedule {firing.schedule.id} failed: {errors}"
            )
        return result

    def claim_due(self, limit: int) -> list[Firing]:
        """Phase 1 in one transaction: claim up to ``limit`` due schedules, oldest due first."""
        with self.transaction() as ops:
            return ops.firing.claim_due(limit)

    def fire_batches(
        self,
        *,
        batch_size: int = 500,
        hook: Callable[[str], None] | None = None,
        lease: float = DEFAULT_LEASE,
    ) -> Iterator[Batch]:
        """Fire every schedule due now, ``batch_size`` at a time, yielding each batch's
        results: each batch is claimed, submitted and written back in three transactions.

        First, the recorded firings whose lease has run out are completed (``Batch.completed``:
        their replica died or stalled, or a rack was busy); each firing claimed now is
        recorded with a lease of ``lease`` seconds.

        A due schedule whose row cannot be fired (rackcron did not write it: a time zone
        this host lacks, say) is reported in ``Batch.unfireable`` and left as it is; the
        rest of its batch fires, and it is not claimed again in this call.

        A firing later than its schedule's starting deadline is missed in phase 1
        (``Batch.missed``): advanced and recorded, with nothing to submit.

        ``hook`` is called at the phase boundaries of a non-empty batch: ``claimed``
        (phase 1 committed), ``submitting`` (inside phase 2, tasks written, not yet
        committed) and ``submitted`` (phase 2 committed, before the write-back).
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        for completed in self.complete_overdue(batch_size=batch_size):
            yield Batch([], [], [], completed)
        unfireable: set[uuid.UUID] = set()
        while True:
            with gc_paused():
                with self.transaction() as ops:
                    claim = ops.firing.claim_batch(batch_size, exclude=unfireable, lease=lease)
                if claim.firings and hook is not None:
                    hook("claimed")
                results = self._finish(claim.firings, hook) if claim.firings else []
            unfireable.update(u.schedule_id for u in claim.unfireable)
            if results or claim.unfireable or claim.missed:
                yield Batch(results, claim.unfireable, claim.missed)
            if len(claim.firings) + len(claim.unfireable) + len(claim.missed) < batch_size:
                return

    def advance_rollouts(
        self, *, batch_size: int = 100, hook: Callable[[str], None] | None = None
    ) -> list[Advanced]:
        """Advance every unfinished roll-out no other replica holds now, ``batch_size``
        per transaction (``rackcron.service._rollouts``). ``hook`` is called, for a batch
        that started tasks, with ``advancing`` (tasks written, not committed) and
        ``advanced`` (committed)."""
        advanced: list[Advanced] = []
        seen: set[uuid.UUID] = set()
        while True:
            with self.transaction() as ops:
                batch = ops.rollouts.advance(batch_size, exclude=seen)
                started = any(a.started for a in batch)
                if started and hook is not None:
                    hook("advancing")
            if started and hook is not None:
                hook("advanced")
            advanced += batch
            seen.update(a.rollout_id for a in batch)
            if len(batch) < batch_size:
                return advanced

    # Roll-outs (docs/spec/SEMANTICS.md "Roll-outs")
    def list_rollouts(
        self,
        *,
        schedule: uuid.UUID | str | None = None,
        states: Sequence[str] = (),
        limit: int = 100,
    ) -> list[RolloutRecord]:
        """The newest roll-outs first (:meth:`RolloutOps.list_rollouts`); ``schedule``
        (its id or name): only that schedule's.

        :raises NotFound: no schedule ``schedule``.
        """
        with self.transaction(write=False) as ops:
            schedule_id = None if schedule is None else self._schedule_id(ops, schedule)
            return ops.rollouts.list_rollouts(schedule_id=schedule_id, states=states, limit=limit)

    def get_rollout(self, ref: uuid.UUID | str) -> RolloutRecord:
        """A roll-out by its id, or the newest of the schedule named (or with the id) ``ref``.

        :raises NotFound: neither a roll-out nor a schedule that has one.
        """
        with self.transaction(write=False) as ops:
            return ops.rollouts.get_rollout(self._rollout_id(ops, ref))

    @staticmethod
    def _schedule_id(ops: Operations, ref: uuid.UUID | str) -> uuid.UUID:
        """The id of the schedule with the id, or else the name, ``ref``.

        :raises NotFound: no such schedule.
        """
        try:
            found: uuid.UUID = ops.schedules.schedule_row(ref).id
        except (NotFound, InvalidArgument):
            found = ops.schedules.find_schedule(str(ref)).id
        return found

    @classmethod
    def _rollout_id(cls, ops: Operations, ref: uuid.UUID | str) -> uuid.UUID:
        try:
            return ops.rollouts.get_rollout(ref).id
        except (NotFound, InvalidArgument):
            pass
        try:
            schedule_id: uuid.UUID | None = cls._schedule_id(ops, ref)
        except NotFound:
            schedule_id = None
        latest = None if schedule_id is None else ops.rollouts.latest_of(schedule_id)
        if latest is None:
            raise NotFound(f"id: no roll-out {str(ref)!r}, and no schedule so named with one")
        return latest

    def pause_rollout(self, ref: uuid.UUID | str, *, audit: Audit | None = None) -> RolloutRecord:
        """Pause a roll-out (:meth:`RolloutOps.pause`), recorded as by ``audit`` (pausing
        a paused one changes nothing and records nothing)."""
        with self.transaction() as ops:
            rollout_id = self._rollout_id(ops, ref)
            was = ops.rollouts.get_rollout(rollout_id).state
            record = ops.rollouts.pause(rollout_id)
            change = _trail.rollout_change(_trail.Action.PAUSE_ROLLOUT, record)
            ops.audit.record_action(audit, None if was == record.state else change)
            return record

    def resume_rollout(
        self,
        ref: uuid.UUID | str,
        *,
        allow_failures: int | None = None,
        audit: Audit | None = None,
        halted_ok: bool = True,
    ) -> RolloutRecord:
        """Resume a paused or halted roll-out (:meth:`RolloutOps.resume`), recorded as by
        ``audit``; ``halted_ok`` false: refuse a halted one (PermissionDenied)."""
        with self.transaction() as ops:
            rollout_id = self._rollout_id(ops, ref)
            record = ops.rollouts.resume(rollout_id, allow_failures, halted_ok=halted_ok)
            change = _trail.rollout_change(
                _trail.Action.RESUME_ROLLOUT, record, budget=record.budget
            )
            ops.audit.record_action(audit, change)
            return record

    def abort_rollout(
        self, ref: uuid.UUID | str, *, cancel_active: bool = False, audit: Audit | None = None
    ) -> RolloutRecord:
        """Abort a roll-out (:meth:`RolloutOps.abort`), recorded as by ``audit``."""
        with self.transaction() as ops:
            record = ops.rollouts.abort(self._rollout_id(ops, ref), cancel_active=cancel_active)
            change = _trail.rollout_change(
                _trail.Action.ABORT_ROLLOUT, record, cancel_active=cancel_active
            )
            ops.audit.record_action(audit, change)
            return record

    def fire_due(self, *, batch_size: int = 500) -> list[FireResult]:
        """Fire every schedule due now (:meth:`fire_batches`); the results of the firings
        (not of those missed)."""
        return [r for batch in self.fire_batches(batch_size=batch_size) for r in batch.results]
