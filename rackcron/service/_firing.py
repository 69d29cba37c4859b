"""The three phases of a firing, each run in its own transaction by the caller.

docs/spec/SEMANTICS.md "Dispatch", batched: each phase handles a whole claimed batch of
firings with a fixed number of statements, whatever the batch's size (``IN``
lists are split past ``IN_CHUNK`` values, for SQLite's limit on parameters).

1. :meth:`FiringOps.claim_due` / :meth:`FiringOps.claim` lock the schedule rows
   (PostgreSQL ``FOR UPDATE``, ``SKIP LOCKED`` for the dispatcher; SQLite's
   ``BEGIN IMMEDIATE``), re-check they are due, read their scopes and the busy
   scopes (one query each), apply the overlap policy and advance every schedule
   with one statement (``rackcron.store.bulk``), then the caller commits. From here the tick is spent:
   a crash later loses at most this tick's tasks, never fires it twice. A firing
   later than its schedule's ``starting_deadline`` is *missed* here
   (``rackcron.firing.deadline_lateness``): it advances as a firing whose every scope
   was skipped, records the miss on the schedule in the same statement, and goes no
   further (:class:`Missed`); a crash can neither lose nor repeat it.
2. :meth:`FiringOps.submit_batch` hands every eligible scope of the batch to the
   task manager (:meth:`TaskOps.submit_tasks`): racks locked once, decisions in
   memory, one insert per table. A scope the task manager refuses fails alone; if
   the batch insert fails, it is redone scope by scope in savepoints, so one
   scope's failure still does not stop the others.
3. :meth:`FiringOps.write_back` records each scope's ``last_task_id`` (one
   statement).

A crash between phases is safe: the claim commits before anything is submitted,
and the write-back is only a shortcut for the overlap check.

The overlap check counts a scope as busy when its last task is active OR any
active task carries its scope id, so a task submitted in phase 2 whose id was
never written back (a crash before phase 3) still blocks the next firing.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

import sqlalchemy as sa

from rackcron.derived import operation_name
from rackcron.errors import FailedPrecondition
from rackcron.filters import ComponentFilter, from_stored
from rackcron.firing import advance, deadline_lateness, select_scopes, task_description
from rackcron.freezes import already_missed, work_window
from rackcron.models import MissReason, Schedule, TaskStatus
from rackcron.service import _rows
from rackcron.service._freezes import FreezeOps, Holds
from rackcron.service._schedules import ScheduleOps
from rackcron.service._tasks import TaskOps, TaskRequest, chunked, describe_error
from rackcron.store.bulk import update_rows
from rackcron.store.tables import ACTIVE_STATUS_VALUES, task, task_schedule, task_schedule_scope
from rackcron.templates import operation_times

__all__ = [
    "Claim",
    "Firing",
    "FiringOps",
    "FiringScope",
    "Frozen",
    "Missed",
    "ScopeOutcome",
    "Unfireable",
]

_scope = task_schedule_scope
_SCOPES = sa.select(_scope.c.id, _scope.c.schedule_id, _scope.c.rack_id, _scope.c.component_filter)


#: The last miss's columns a missed firing writes, beside ``last_miss_at``.
_MISS_COLUMNS = ("last_miss_lateness_ms", "last_miss_reason", "last_miss_detail")


def _filter(stored: Any) -> ComponentFilter | None:
    return None if stored is None else from_stored(stored)


@dataclass(frozen=True, slots=True)
class ScopeOutcome:
    """What a firing did on one scope."""

    scope_id: uuid.UUID
    rack_id: uuid.UUID
    result: Literal["submitted", "queued", "skipped", "frozen", "failed"]
    task_id: uuid.UUID | None = None
    error: str | None = None  # failed: why; frozen: the freezes that hold it


class FiringScope(NamedTuple):
    """What a firing needs of a scope entry (a light view of its row, no model to build)."""

    id: uuid.UUID
    rack_id: uuid.UUID
    component_filter: ComponentFilter | None


class Unfireable(NamedTuple):
    """A due schedule whose stored row cannot be fired; it is left as it is."""

    schedule_id: uuid.UUID
    name: str
    error: str


class Missed(NamedTuple):
    """A due firing that submitted nothing and was recorded as the schedule's last miss
    (docs/spec/SEMANTICS.md "Starting deadline (beyond the reference)")."""

    schedule_id: uuid.UUID
    name: str
    due: datetime  # the next_run_at being fired
    at: datetime  # when the dispatcher decided it
    lateness_seconds: float  # at - due
    reason: MissReason
    detail: str | None  # reason "freeze": the freeze's name
    starting_deadline: str | None
    # A freeze miss inside the same freezes' windows as the schedule's previous miss
    # (``rackcron.freezes.already_missed``): counted, not notified.
    repeated: bool = False


class Frozen(FailedPrecondition):
    """A manual trigger refused: freezes hold some of its scopes (and nothing changed)."""

    def __init__(
        self,
        schedule: Schedule,
        scopes: Sequence[FiringScope],
        frozen: Mapping[uuid.UUID, tuple[str, ...]],
    ) -> None:
        racks = [str(s.rack_id) for s in scopes if s.id in frozen]
        self.freezes = _names(frozen)
        names = ", ".join(repr(n) for n in self.freezes)
        super().__init__(
            f"id: task schedule {schedule.name!r} ({schedule.id}) is held by freeze {names} on"
            f" rack {', '.join(racks)}: nothing was fired; trigger it with force to override"
        )
        self.racks = racks


def _names(frozen: Mapping[uuid.UUID, tuple[str, ...]]) -> list[str]:
    """The names of the freezes holding any of these scopes, each once, sorted."""
    return sorted({name for names in frozen.values() for name in names})


def _frozen(
    holds: Holds | None, schedule: Schedule, scopes: Sequence[FiringScope]
) -> dict[uuid.UUID, tuple[str, ...]]:
    """scope id -> the names of the freezes holding it, for the scopes freezes hold now or
    over the operation's own work window (docs/spec/SEMANTICS.md "Freeze windows (beyond
    the reference)")."""
    if holds is None:
        return {}
    operation = operation_name(schedule.template)
    named = (schedule.name, schedule.management.labels)
    work = work_window(holds.at, *operation_times(schedule.template))
    found = {}
    for scope in scopes:
        freezes = holds.all_holding(scope.rack_id, named, operation, work)
        if freezes:
            found[scope.id] = tuple(f.name for f in freezes)
    return found


class Claim(NamedTuple):
    """Phase 1's result: the claimed firings, the due schedules that cannot fire, and
    the firings missed (advanced and recorded, nothing to submit)."""

    firings: list[Firing]
    unfireable: list[Unfireable]
    missed: list[Missed]


@dataclass(frozen=True)
class Firing:
    """A claimed firing: the schedule as it was when due, and the scopes to submit."""

    schedule: Schedule
    at: datetime
    manual: bool
    scopes: list[FiringScope]  # every scope, in scope order
    submit: list[FiringScope]  # the scopes the overlap policy (and the freezes) let through
    # scope id -> the names of the freezes holding it; those a forced trigger overrode
    frozen: Mapping[uuid.UUID, tuple[str, ...]] = field(default_factory=dict)
    overridden: Mapping[uuid.UUID, tuple[str, ...]] = field(default_factory=dict)

    def held(self, scope: FiringScope) -> ScopeOutcome:
        """The outcome of a scope this firing does not submit: frozen, or skipped."""
        freezes = self.frozen.get(scope.id)
        if freezes:
            return ScopeOutcome(scope.id, scope.rack_id, "frozen", error=", ".join(freezes))
        return ScopeOutcome(scope.id, scope.rack_id, "skipped")

    @property
    def lag_seconds(self) -> float:
        """Dispatch time minus the time the schedule was due (0 for a manual trigger)."""
        due = self.schedule.next_run_at
        return 0.0 if self.manual or due is None else (self.at - due).total_seconds()


class FiringOps(ScheduleOps, TaskOps, FreezeOps):
    def claim_due(self, limit: int) -> list[Firing]:
        """Phase 1 for automatic dispatch: up to ``limit`` due schedules, oldest due first."""
        return self.claim_batch(limit).firings

    def claim_batch(self, limit: int, exclude: Collection[uuid.UUID] = ()) -> Claim:
        """:meth:`claim_due`, also returning the due schedules that cannot be fired
        (left as they are); ``exclude`` leaves those ids out."""
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
        if exclude:
            query = query.where(task_schedule.c.id.not_in(list(exclude)))
        return self._claim(list(self.conn.execute(query)), manual=False)

    def claim(self, schedule_id: uuid.UUID | str, *, force: bool = False) -> Firing:
        """Phase 1 for TriggerTaskSchedule: fires regardless of enabled and next_run_at.

        A scope a freeze holds refuses the whole trigger, before anything changes, unless
        ``force`` (the firing then carries the freezes it overrode: ``Firing.overridden``).

        :raises NotFound: no such schedule.
        :raises FailedPrecondition: a consumed one-time schedule (:class:`Frozen`: a freeze
            holds a scope).
        """
        row = self.schedule_row(schedule_id, lock=True)
        if _rows.schedule(row).consumed:
            raise FailedPrecondition(
                f"id: task schedule {row.id} is a one-time schedule that has already fired; create a new one"
            )
        claim = self._claim([row], manual=True, force=force)
        if claim.unfireable:
            raise FailedPrecondition(claim.unfireable[0].error)
        return claim.firings[0]

    def _claim(self, rows: Sequence[Any], *, manual: bool, force: bool = False) -> Claim:
        if not rows:
            return Claim([], [], [])
        ids = [r.id for r in rows]
        stored: dict[uuid.UUID, list[tuple[uuid.UUID, uuid.UUID, Any]]] = {i: [] for i in ids}
        for chunk in chunked(ids):
            query = _SCOPES.where(_scope.c.schedule_id.in_(chunk)).order_by(_scope.c.ordinal)
            for scope_id, schedule_id, rack_id, component_filter in self.conn.execute(query):
                stored[schedule_id].append((scope_id, rack_id, component_filter))
        busy = self._busy_scopes([s[0] for found in stored.values() for s in found])
        holds = self.holds(s[1] for found in stored.values() for s in found)
        firings, unfireable, missed, updates, misses = [], [], [], [], []
        for row in rows:
            try:  # a row rackcron did not write (say, a zone this host lacks) fails alone
                schedule = _rows.schedule(row)
                due = schedule.next_run_at
                late = deadline_lateness(due, self.now, schedule.starting_deadline, manual=manual)
                scopes = [FiringScope(i, rack, _filter(f)) for i, rack, f in stored[row.id]]
                frozen = {} if late is not None else _frozen(holds, schedule, scopes)
                if manual and frozen and not force:
                    raise Frozen(schedule, scopes, frozen)
                if manual:  # forced past them: the task manager still judges every scope
                    frozen, overridden = {}, frozen
                else:
                    overridden = {}
                open_scopes = [s for s in scopes if s.id not in frozen]
                if scopes and not open_scopes:  # every scope frozen: a missed firing
                    late = (self.now - due).total_seconds() if due is not None else 0.0
                submit, _skipped = (
                    select_scopes(open_scopes, busy, schedule.overlap_policy, manual=manual)
                    if late is None
                    else ([], scopes)
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
            except Frozen:
                raise
            except Exception as exc:
                error = f"task schedule {row.id} cannot be fired: {describe_error(exc)}"
                unfireable.append(Unfireable(row.id, row.name, error))
                continue
            moved = (row.id, step.next_run_at, step.last_run_at, step.enabled)
            if late is None:
                updates.append(moved)
                firings.append(
                    Firing(schedule, self.now, manual, scopes, submit, frozen, overridden)
                )
                continue
            assert due is not None  # automatic firings only: they have a due time
            repeated = False
            if frozen:
                names = _names(frozen)
                reason, detail = MissReason.FREEZE, ", ".join(names)
                assert holds is not None  # frozen scopes come from it
                holding = [f for f in holds.freezes if f.name in names]
                repeated = already_missed(schedule.last_miss, holding, self.now)
            else:
                reason, detail = MissReason.DEADLINE, None
            miss = Missed(row.id, schedule.name, due, self.now, late, reason, detail,
                          schedule.starting_deadline, repeated)  # fmt: skip
            lateness_ms = round(late * 1000)
            misses.append((*moved, lateness_ms, miss.reason.value, miss.detail))
            missed.append(miss)
        update_rows(
            self.conn,
            task_schedule,
            "id",
            ("next_run_at", "last_run_at", "enabled"),
            updates,
            same={"updated_at": self.now},
        )
        update_rows(
            self.conn,
            task_schedule,
            "id",
            ("next_run_at", "last_run_at", "enabled", *_MISS_COLUMNS),
            misses,
            same={"updated_at": self.now, "last_miss_at": self.now},
        )
        return Claim(firings, unfireable, missed)

    def _busy_scopes(self, scope_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """The scopes whose previous task is active: their last task, or any task
        carrying their scope id (one never written back). One row per busy scope,
        however many tasks are queued behind it."""
        active = task.c.status.in_(ACTIVE_STATUS_VALUES)
        by_scope = sa.exists().where(task.c.scope_id == _scope.c.id, active)
        by_last = sa.exists().where(task.c.id == _scope.c.last_task_id, active)
        busy: set[uuid.UUID] = set()
        for chunk in chunked(scope_ids):
            query = sa.select(_scope.c.id).where(_scope.c.id.in_(chunk), by_scope | by_last)
            busy.update(self.conn.execute(query).scalars())
        return busy

    def submit(self, firing: Firing) -> list[ScopeOutcome]:
        """Phase 2 for one firing: :meth:`submit_batch` with a batch of one."""
        return self.submit_batch([firing])[0]

    def submit_batch(self, firings: Sequence[Firing]) -> list[list[ScopeOutcome]]:
        """Phase 2: one task per scope to submit, for a whole batch of firings at once.

        The task manager decides the scopes in claim order, then scope order (a task
        submitted earlier in the batch counts as active on its rack), and creates
        them with one insert per table; a scope it refuses, or whose insert fails,
        is ``failed`` and stops no other. Returns each firing's outcomes, in scope order.
        """
        requests = []
        for firing in firings:
            schedule = firing.schedule
            assert schedule.template is not None
            description = task_description(schedule.name, firing.at)
            requests += [
                TaskRequest(
                    rack_id=scope.rack_id,
                    component_filter=scope.component_filter,
                    template=schedule.template,
                    policy=schedule.overlap_policy,
                    description=description,
                    schedule_id=schedule.id,
                    scope_id=scope.id,
                    forced=scope.id in firing.overridden,
                    schedule_name=schedule.name,
                    schedule_labels=schedule.management.labels,
                )
                for scope in firing.submit
            ]
        submissions = iter(self.submit_tasks(requests))
        batch = []
        for firing in firings:
            submitting = {s.id for s in firing.submit}
            outcomes = []
            for scope in firing.scopes:
                if scope.id not in submitting:
                    outcomes.append(firing.held(scope))
                    continue
                submitted = next(submissions)
                if submitted.task_id is None:
                    outcomes.append(
                        ScopeOutcome(scope.id, scope.rack_id, "failed", error=submitted.error)
                    )
                else:
                    result: Literal["queued", "submitted"] = (
                        "queued" if submitted.status == TaskStatus.WAITING else "submitted"
                    )
                    outcomes.append(
                        ScopeOutcome(scope.id, scope.rack_id, result, task_id=submitted.task_id)
                    )
            batch.append(outcomes)
        return batch

    def write_back(self, outcomes: Sequence[ScopeOutcome]) -> None:
        """Phase 3: each submitted scope's last_task_id (scopes deleted meanwhile are ignored).

        A task may already be gone: task retention deletes a final task as soon as it is
        old enough, which a tiny retention makes possible before this phase runs. Its
        scope is left alone (a foreign key to a deleted row would fail the whole
        statement, every scope of the batch with it); the tasks that remain are locked
        ``FOR KEY SHARE`` on PostgreSQL (the lock the foreign key takes anyway), which
        retention's ``SKIP LOCKED`` leaves in place.
        """
        wanted = [o.task_id for o in outcomes if o.task_id is not None]
        existing: set[uuid.UUID] = set()
        for chunk in chunked(wanted):
            existing.update(
                self.conn.execute(
                    sa.select(task.c.id)
                    .where(task.c.id.in_(chunk))
                    .with_for_update(read=True, key_share=True)
                ).scalars()
            )
        rows = [(o.scope_id, o.task_id) for o in outcomes if o.task_id in existing]
        update_rows(self.conn, _scope, "id", ("last_task_id",), rows)
