"""What each front needs of the service: one typed interface per role.

:class:`~rackcron.service.Service` (and the :class:`~rackcron.service.Operations` of one
of its units of work, group by group) holds every operation; a front sees only its role
here, so a reader can tell which front uses what, and a change to an operation names the
fronts it touches. Each role is a :class:`~typing.Protocol` that ``Service`` satisfies as
it is (mypy checks it where ``rackcron.cli`` wires the fronts); a role that works in a
unit of work gets it from its ``transaction``, typed group by group (``ops.schedules``,
``ops.inventory``, ...) as the smaller interfaces it needs.

============================  ==========================================================
role                          front
============================  ==========================================================
:class:`FiringStore`          the dispatcher's poll loop (``rackcron.dispatcher.loop``)
:class:`DeliveryStore`        the task runner (``rackcron.dispatcher.runner``)
:class:`RetentionStore`       the task retention (``rackcron.dispatcher.retention``)
:class:`ScheduleAdmin`        the Flow RPCs (``rackcron.shim.servicer``)
:class:`ReadModel`            the console and ``upcoming`` (``rackcron.console``), and the
                              reads of a plan (:class:`Reads`)
:class:`ApplyLog`             a plan's apply (``rackcron.reconciler.apply``), its unit of
                              work an :class:`ApplyWork`
:class:`ExtrasStore`          ``rackcron.v1.Reconciler`` (``rackcron.shim.extras``);
                              :class:`ShimStore` is both, for the gRPC server
============================  ==========================================================

:class:`CommandTarget` is what a plan's commands run on (``rackcron.executor``): the
``schedules``, ``scopes``, ``inventory`` and ``freezes`` groups of a unit of work. The values the roles take and return
(:class:`Batch`, :class:`DueCall`, ...) are named here too, so that a front imports this
module of the service and no other (a test holds the fronts to it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar, overload

from rackcron.audit import Audit, AuditedChange
from rackcron.domain.commands import CreateSchedule
from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.models import (
    ApplyRecord,
    Component,
    Freeze,
    Management,
    MissedFiring,
    NVLDomain,
    Operation,
    Page,
    Rack,
    RefusedFiring,
    RolloutPolicy,
    RolloutRecord,
    Schedule,
    ScheduleConfig,
    Scope,
    ScopeEntry,
    ScopeUpdate,
    SyncState,
    TargetSpec,
    Task,
    TaskFailure,
)
from rackcron.domain.results import LastResult
from rackcron.domain.upcoming import FleetView
from rackcron.errors import StoreError
from rackcron.history import KINDS, Entry
from rackcron.service._delivery import DueCall, Recorded, Update, Written, followed
from rackcron.service._failures import Failing, FleetCounts
from rackcron.service._firing import (
    DEFAULT_LEASE,
    Batch,
    Completed,
    FireResult,
    Missed,
    ScopeOutcome,
    Unfireable,
)
from rackcron.service._inventory import RackView
from rackcron.service._names import LOOKALIKE_KINDS, Lookalikes, warn_lookalike
from rackcron.service._rollouts import Advanced
from rackcron.service._schedules import MetricsSchedule, MetricsSchedules
from rackcron.status import Status

__all__ = [
    "DEFAULT_LEASE",
    "LOOKALIKE_KINDS",
    "ActionRecords",
    "Advanced",
    "ApplyLog",
    "ApplyReads",
    "ApplyRecords",
    "ApplyWork",
    "Batch",
    "CommandTarget",
    "Completed",
    "DeliveryStore",
    "DueCall",
    "ExtrasStore",
    "ExtrasWork",
    "Failing",
    "FailureReads",
    "FireResult",
    "FiringStore",
    "FleetCounts",
    "FreezeCommands",
    "FreezeReads",
    "FreezeScopeCheck",
    "InventoryCommands",
    "InventoryLookups",
    "InventoryReads",
    "Lookalikes",
    "MetricsSchedule",
    "MetricsSchedules",
    "Missed",
    "RackView",
    "ReadModel",
    "Reads",
    "Recorded",
    "RetentionStore",
    "RolloutReads",
    "RolloutSteering",
    "ScheduleAdmin",
    "ScheduleCommands",
    "SchedulePages",
    "ScheduleReads",
    "ScopeCommands",
    "ScopeOutcome",
    "ScopeReads",
    "ShimStore",
    "StatusReads",
    "TaskPages",
    "TaskReads",
    "Unfireable",
    "Update",
    "Written",
    "followed",
    "warn_lookalike",
]

T = TypeVar("T")


# --- pages of schedules and tasks, which several roles read ---------------------------------


class SchedulePages(Protocol):
    """ListTaskSchedules: a page of schedules, oldest first."""

    def list_schedules(
        self,
        *,
        rack_id: uuid.UUID | str | None = None,
        enabled_only: bool = False,
        offset: int = 0,
        limit: int = 0,
        order: str = "created",
    ) -> Page[Schedule]: ...


class TaskPages(Protocol):
    """ListTasks: a page of tasks, newest first."""

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
    ) -> Page[Task]: ...


# --- the dispatcher ---------------------------------------------------------------------------


class FiringStore(SchedulePages, Protocol):
    """The poll loop: fire what is due, batch by batch; which schedules exist (its start line)."""

    @property
    def dialect(self) -> str:
        """The store's database: ``sqlite`` or ``postgresql``."""
        ...

    def fire_batches(
        self,
        *,
        batch_size: int = 500,
        hook: Callable[[str], None] | None = None,
        lease: float = 30.0,
    ) -> Iterator[Batch]: ...

    def advance_rollouts(
        self, *, batch_size: int = 100, hook: Callable[[str], None] | None = None
    ) -> list[Advanced]: ...


class DeliveryStore(Protocol):
    """The task runner: claim the controller calls due, record what controllers said, move
    the waiting queue on."""

    clock: Callable[[], datetime]

    def claim_work(
        self, limit: int, *, lease: float, take: Callable[[DueCall], bool] = ...
    ) -> list[DueCall]: ...

    def record(self, updates: Sequence[Update]) -> Recorded: ...

    def expire_queued(self) -> list[Written]: ...

    def promote_waiting(self) -> list[uuid.UUID]: ...


class RetentionStore(Protocol):
    """The task retention: delete what ended long enough ago."""

    def prune_tasks(self, retention: timedelta, *, limit: int = 500) -> int: ...

    def prune_firings(self, retention: timedelta, *, limit: int = 500) -> int: ...


# --- the shim ---------------------------------------------------------------------------------


class ScheduleAdmin(SchedulePages, TaskPages, Protocol):
    """The Flow RPCs: schedules, their scopes and tasks, each call one transaction recorded
    in the audit trail as done by ``audit``."""

    def create_schedule(
        self,
        config: ScheduleConfig,
        operation: Operation | None,
        *,
        management: Management | None = None,
        starting_deadline: str | None = None,
        audit: Audit | None = None,
    ) -> Schedule: ...

    @overload
    def get_schedule(self, schedule_id: uuid.UUID | str) -> Schedule: ...
    @overload
    def get_schedule(self, schedule_id: uuid.UUID | str, view: Callable[[Schedule], T]) -> T: ...

    def update_schedule(
        self,
        schedule_id: uuid.UUID | str,
        config: ScheduleConfig,
        update_mask: Sequence[str],
        *,
        audit: Audit | None = None,
    ) -> Schedule: ...

    def pause_schedule(
        self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None
    ) -> Schedule: ...

    def resume_schedule(
        self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None
    ) -> Schedule: ...

    def delete_schedule(
        self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None
    ) -> None: ...

    def trigger(
        self,
        schedule_id: uuid.UUID | str,
        *,
        force: bool = False,
        all_at_once: bool = False,
        audit: Audit | None = None,
    ) -> FireResult: ...

    def list_scopes(self, schedule_id: uuid.UUID | str) -> list[Scope]: ...

    def add_scope(
        self,
        schedule_id: uuid.UUID | str,
        target_spec: TargetSpec | None,
        *,
        audit: Audit | None = None,
    ) -> list[Scope]: ...

    def update_scope(
        self,
        schedule_id: uuid.UUID | str,
        desired: TargetSpec | None,
        *,
        audit: Audit | None = None,
    ) -> ScopeUpdate: ...

    def remove_scope(self, scope_id: uuid.UUID | str, *, audit: Audit | None = None) -> None: ...

    def check_conflicts(
        self, operation: Operation | None, exclude_schedule_id: uuid.UUID | str | None = None
    ) -> list[Schedule]: ...

    def get_tasks(self, task_ids: Sequence[uuid.UUID | str]) -> list[Task]: ...

    def cancel_task(self, task_id: uuid.UUID | str, *, audit: Audit | None = None) -> Task: ...


# --- a unit of work, group by group: what is read, what a plan's commands change ------------------


class ScheduleReads(SchedulePages, Protocol):
    """Schedules, read."""

    def get_schedule(self, schedule_id: uuid.UUID | str) -> Schedule: ...


class ScopeReads(Protocol):
    """Scopes, read."""

    def list_scopes(self, schedule_id: uuid.UUID | str) -> list[Scope]: ...

    def scopes_by_schedule(
        self, *, enabled_only: bool = False
    ) -> dict[uuid.UUID, list[ScopeEntry]]: ...


class InventoryReads(Protocol):
    """The inventory, read."""

    def list_racks(self) -> list[Rack]: ...

    def list_components(self, rack_id: uuid.UUID | str | None = None) -> list[Component]: ...

    def list_nvl_domains(self) -> list[NVLDomain]: ...


class FreezeReads(Protocol):
    """Freezes, read."""

    def list_freezes(self) -> list[Freeze]: ...


class ApplyReads(Protocol):
    """The apply log, read."""

    def get_apply(self, apply_id: int) -> ApplyRecord | None: ...

    def latest_apply(self, owner: str) -> ApplyRecord | None: ...

    def sync_state(self, owner: str) -> SyncState | None: ...

    def owners(self, limit: int) -> list[str]: ...


class TaskReads(TaskPages, Protocol):
    """Tasks, read: pages of them, and schedules' last results."""

    def last_results(
        self, schedule_ids: Collection[uuid.UUID] | None = None
    ) -> dict[uuid.UUID, LastResult]: ...


class FailureReads(Protocol):
    """What went wrong, newest first, and the fleet's counts (``rackcron.service._failures``)."""

    def failures(
        self, limit: int, *, schedule_id: uuid.UUID | None = None, until: datetime | None = None
    ) -> list[TaskFailure]: ...

    def misses(
        self, limit: int, *, schedule_id: uuid.UUID | None = None, until: datetime | None = None
    ) -> list[MissedFiring]: ...

    def refusals(
        self, limit: int, *, schedule_id: uuid.UUID | None = None, until: datetime | None = None
    ) -> list[RefusedFiring]: ...

    def counts(self, since: datetime) -> FleetCounts: ...

    def failing(self, limit: int, since: datetime) -> tuple[list[Failing], int]: ...


class StatusReads(Protocol):
    """Whether the store is in step with Git, for one repository (``rackcron.status``)."""

    def status(self, owner: str) -> Status: ...


class RolloutReads(Protocol):
    """Which schedules have an unfinished roll-out; the roll-outs running."""

    def unfinished(self, schedule_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]: ...

    def running(self) -> list[RolloutRecord]: ...

    def list_rollouts(
        self,
        *,
        schedule_id: uuid.UUID | None = None,
        states: Collection[str] = (),
        limit: int = 100,
    ) -> list[RolloutRecord]: ...

    def get_rollout(self, rollout_id: uuid.UUID | str) -> RolloutRecord: ...


class Reads(Protocol):
    """What one read-only unit of work reads: schedules with their scopes, tasks, the
    inventory, freezes, roll-outs, the apply log, failures and sync status."""

    @property
    def now(self) -> datetime: ...
    @property
    def schedules(self) -> ScheduleReads: ...
    @property
    def scopes(self) -> ScopeReads: ...
    @property
    def tasks(self) -> TaskReads: ...
    @property
    def inventory(self) -> InventoryReads: ...
    @property
    def freezes(self) -> FreezeReads: ...
    @property
    def applies(self) -> ApplyReads: ...
    @property
    def rollouts(self) -> RolloutReads: ...
    @property
    def failures(self) -> FailureReads: ...
    @property
    def audit(self) -> StatusReads: ...


class ReadModel(Protocol):
    """The console: the fleet's view (upcoming firings, conflicts, freezes), the history,
    and reads in one read-only unit of work."""

    def fleet_view(self) -> FleetView: ...

    def history(
        self,
        limit: int = 20,
        *,
        kinds: Collection[str] = KINDS,
        schedule_id: uuid.UUID | None = None,
        offset: int = 0,
        until: datetime | None = None,
    ) -> list[Entry]: ...

    def transaction(self, *, write: bool = True) -> AbstractContextManager[Reads]: ...


class ScheduleCommands(ScheduleReads, Protocol):
    """A plan's schedule commands, in the caller's unit of work (nothing audited: an apply
    is logged whole)."""

    def find_schedule(self, name: str) -> Schedule: ...

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
    ) -> Schedule: ...

    def create_schedules(
        self, commands: Sequence[CreateSchedule], *, paused: Collection[str] = ()
    ) -> list[uuid.UUID]: ...

    def update_schedule(
        self, schedule_id: uuid.UUID | str, config: ScheduleConfig, update_mask: Sequence[str]
    ) -> Schedule: ...

    def pause_schedule(self, schedule_id: uuid.UUID | str) -> Schedule: ...

    def resume_schedule(self, schedule_id: uuid.UUID | str) -> Schedule: ...

    def delete_schedule(self, schedule_id: uuid.UUID | str) -> None: ...

    def set_management(self, schedule_id: uuid.UUID | str, management: Management) -> Schedule: ...

    def set_starting_deadline(
        self, schedule_id: uuid.UUID | str, starting_deadline: str | None
    ) -> Schedule: ...

    def set_spread(
        self, schedule_id: uuid.UUID | str, anchor: str | None, jitter: str | None
    ) -> Schedule: ...

    def set_rollout(
        self,
        schedule_id: uuid.UUID | str,
        rollout: RolloutPolicy | None,
        expected_duration: str | None,
    ) -> Schedule: ...


class ScopeCommands(ScopeReads, Protocol):
    """A plan's scope commands."""

    def add_scope(
        self, schedule_id: uuid.UUID | str, target_spec: TargetSpec | None
    ) -> list[Scope]: ...

    def update_scope(
        self, schedule_id: uuid.UUID | str, desired: TargetSpec | None
    ) -> ScopeUpdate: ...

    def remove_scope(self, scope_id: uuid.UUID | str) -> None: ...


class InventoryCommands(InventoryReads, Protocol):
    """A plan's inventory commands."""

    def upsert_rack(self, item: Rack) -> Rack: ...

    def upsert_racks(self, items: Sequence[Rack]) -> None: ...

    def upsert_components(self, items: Sequence[Component]) -> None: ...

    def upsert_nvl_domains(self, items: Sequence[NVLDomain]) -> None: ...

    def upsert_component(self, item: Component) -> Component: ...

    def upsert_nvl_domain(self, item: NVLDomain) -> NVLDomain: ...

    def delete_rack(self, rack_id: uuid.UUID | str) -> None: ...

    def delete_component(self, component_id: uuid.UUID | str) -> None: ...

    def delete_nvl_domain(self, domain_id: uuid.UUID | str) -> None: ...


class FreezeCommands(FreezeReads, Protocol):
    """A plan's freeze commands."""

    def upsert_freeze(self, item: Freeze) -> Freeze: ...

    def delete_freeze(self, name: str) -> None: ...


class CommandTarget(Protocol):
    """Where a plan's commands run (``rackcron.executor``): a unit of work's groups."""

    @property
    def schedules(self) -> ScheduleCommands: ...
    @property
    def scopes(self) -> ScopeCommands: ...
    @property
    def inventory(self) -> InventoryCommands: ...
    @property
    def freezes(self) -> FreezeCommands: ...


class ApplyRecords(ApplyReads, Protocol):
    """The apply log, written."""

    def record_apply(
        self,
        *,
        revision: str | None,
        dirty: bool,
        source: str,
        author: str,
        summary: dict[str, Any],
        token: str | None = None,
        peer: str | None = None,
        owner: str | None = None,
    ) -> ApplyRecord: ...

    def mark_applied(self, names: Iterable[str], apply_id: int) -> None: ...

    def record_sync(self, state: SyncState) -> None: ...


class ApplyWork(CommandTarget, Reads, Protocol):
    """An apply's unit of work: read the store, run the commands, log the apply."""

    @property
    def applies(self) -> ApplyRecords: ...


class ApplyLog(Protocol):
    """A plan's apply: the apply lock around one unit of work."""

    @property
    def unreleased_apply_locks(self) -> Mapping[str, StoreError]: ...

    def acquire_apply_lock(self, who: str) -> str: ...

    def release_apply_lock(self, holder: str) -> None: ...

    def transaction(self, *, write: bool = True) -> AbstractContextManager[ApplyWork]: ...

    def rehearsal(self) -> AbstractContextManager[ApplyWork]:
        """A unit of work that is always rolled back: what commands would do, undone."""
        ...


class FreezeScopeCheck(FreezeCommands, Protocol):
    """Freezes, and the lock on what they hold: a RunStep checks the freezes a step lifts
    against what it changes (it extends the commands: the step's unit of work runs them)."""

    def lock_what_freezes_hold(self) -> None: ...


class InventoryLookups(InventoryCommands, Protocol):
    """The inventory, and a rack or component by id, which a freeze's scope check reads
    (``rackcron.domain.commands``; it extends the commands: the step's unit of work runs
    them)."""

    def find_rack(self, rack_id: uuid.UUID) -> Rack | None: ...

    def find_component(self, component_id: uuid.UUID) -> Component | None: ...


class ActionRecords(StatusReads, Protocol):
    """The audit trail, written (and, as every unit of work reads, the sync status)."""

    def record_action(self, audit: Audit | None, change: AuditedChange | None) -> None: ...


class ExtrasWork(ApplyWork, Protocol):
    """A RunStep's unit of work: an apply's, with the lookups a freeze's scope check needs,
    the look-alike check and the audit trail."""

    @property
    def freezes(self) -> FreezeScopeCheck: ...
    @property
    def inventory(self) -> InventoryLookups: ...
    @property
    def names(self) -> Lookalikes: ...
    @property
    def audit(self) -> ActionRecords: ...


class ExtrasStore(Protocol):
    """``rackcron.v1.Reconciler``: what a remote plan reads and runs beyond the Flow RPCs."""

    def transaction(self, *, write: bool = True) -> AbstractContextManager[ExtrasWork]: ...


class RolloutSteering(Protocol):
    """``rackcron rollouts`` and ``rackcron.v1.Rollouts``: see and steer roll-outs, each
    change recorded in the audit trail as done by ``audit``."""

    def list_rollouts(
        self,
        *,
        schedule: uuid.UUID | str | None = None,
        states: Sequence[str] = (),
        limit: int = 100,
    ) -> list[RolloutRecord]: ...

    def get_rollout(self, ref: uuid.UUID | str) -> RolloutRecord: ...

    def pause_rollout(
        self, ref: uuid.UUID | str, *, audit: Audit | None = None
    ) -> RolloutRecord: ...

    def resume_rollout(
        self,
        ref: uuid.UUID | str,
        *,
        allow_failures: int | None = None,
        audit: Audit | None = None,
        halted_ok: bool = True,
    ) -> RolloutRecord: ...

    def abort_rollout(
        self, ref: uuid.UUID | str, *, cancel_active: bool = False, audit: Audit | None = None
    ) -> RolloutRecord: ...


class ShimStore(ScheduleAdmin, ExtrasStore, RolloutSteering, Protocol):
    """The gRPC server: the Flow RPCs, ``rackcron.v1.Rollouts`` and, when served,
    ``rackcron.v1.Reconciler``."""
