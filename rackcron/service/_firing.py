"""The three phases of a firing, each run in its own transaction by the caller.

docs/spec/SEMANTICS.md "Dispatch", batched: each phase handles a whole claimed batch of
firings with a fixed number of statements, whatever the batch's size (``IN``
lists are split past ``IN_CHUNK`` values, for SQLite's limit on parameters).

1. :meth:`FiringOps.claim_due` / :meth:`FiringOps.claim` lock the schedule rows
   (PostgreSQL ``FOR NO KEY UPDATE``, ``SKIP LOCKED`` for the dispatcher; SQLite's
   ``BEGIN IMMEDIATE``), re-check they are due, read their scopes and the busy
   scopes (one query each), apply the overlap policy and advance every schedule
   with one statement (``rackcron.store.bulk``), and *record* each firing that has
   scopes to submit: a ``firing`` row (its operation, the schedule's name and labels,
   the scopes it will submit, a lease). Then the caller
   commits: the tick is spent, and what it owes is written down. A firing later than its
   schedule's ``starting_deadline`` is *missed* here (``rackcron.domain.firing.deadline_lateness``):
   it advances as a firing whose every scope was skipped, records the miss on the
   schedule in the same statement, and goes no further (:class:`Missed`).
2. :meth:`FiringOps.complete` creates the tasks a recorded firing still owes: it locks
   the firing row (``SKIP LOCKED``: a firing another replica is completing is left to
   it), leaves out the scopes that already have a task of this firing (or were refused
   by an earlier completion), hands the rest to the task manager
   (:meth:`TaskOps.submit_tasks`: racks locked once, decisions in memory, one insert
   per table) and marks the firing finished in the same transaction. The replica that
   claimed a firing completes it at once, from memory; any replica completes a firing
   whose lease ran out (:meth:`FiringOps.complete_overdue`), read back from its row: its
   own replica died or stalled. A task row carries its firing's id, unique with its
   scope id: a scope gets at most one task per firing. A rack another transaction holds past the session's
   ``lock_timeout`` (a replica paused or cut off while holding it) is not waited for any
   longer: its scopes stay owed (``deferred``) and the firing is offered to every replica
   at the next poll.
3. :meth:`FiringOps.write_back` records each scope's ``last_task_id`` (one
   statement); it is only a shortcut for the overlap check.

The overlap check (docs/spec/SEMANTICS.md "Overlap policy") counts a scope as busy when
its last task is active, when an active task carrying its scope id was created after its
last task or while it had none (a task whose id phase 3 never wrote back), or when its
schedule's previous firing is still open (it may owe the scope a task). An older task of
the scope still active behind a newer last task that has ended does not make it busy:
the task manager's conflict rule judges the new task against it.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

import sqlalchemy as sa

from rackcron.domain.filters import ComponentFilter, from_stored, to_stored
from rackcron.domain.firing import advance, deadline_lateness, select_scopes, task_description
from rackcron.domain.freezes import already_missed, work_window
from rackcron.domain.models import (
    MissReason,
    OperationTemplate,
    OverlapPolicy,
    Schedule,
    TaskStatus,
)
from rackcron.domain.operation_names import operation_name
from rackcron.domain.templates import operation_times
from rackcron.errors import FailedPrecondition
from rackcron.service import _rows
from rackcron.service._freezes import FreezeOps, Holds
from rackcron.service._rollouts import RolloutOps
from rackcron.service._schedules import ScheduleOps
from rackcron.service._tasks import (
    Submission,
    TaskOps,
    TaskRequest,
    chunked,
    describe_error,
    new_task_id,
)
from rackcron.service._work import UnitOfWork
from rackcron.store.bulk import among, insert_rows, update_rows
from rackcron.store.tables import (
    firing,
    missed_firing,
    task,
    task_schedule,
    task_schedule_scope,
)

__all__ = [
    "DEFAULT_LEASE",
    "Claim",
    "Completed",
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


#: Seconds a replica has the firings it claimed to itself before any replica may complete
#: them (``rackcron serve --firing-lease``).
DEFAULT_LEASE = 30.0

#: The last miss's columns a missed firing writes, beside ``last_miss_at``.
_MISS_COLUMNS = ("last_miss_lateness_ms", "last_miss_reason", "last_miss_detail")


#: The columns of a kept miss that differ from miss to miss, in insert order.
_MISSED_COLUMNS = ("schedule_id", "schedule_name", "due_at", "lateness_ms", "reason", "detail")

#: The columns of a recorded firing's row that differ from firing to firing, in insert order.
_FIRING_COLUMNS = (
    "id",
    "schedule_id",
    "manual",
    "due_at",
    "operation_type",
    "operation_code",
    "operation_information",
    "overlap_policy",
    "schedule_name",
    "schedule_labels",
    "scopes",
)


def _filter(stored: Any) -> ComponentFilter | None:
    return None if stored is None else from_stored(stored)


class _OwedScope(NamedTuple):
    """A scope a recorded firing will submit."""

    id: uuid.UUID
    rack_id: uuid.UUID
    component_filter: ComponentFilter | None
    forced: bool


class _Owed(NamedTuple):
    """A recorded firing, as phase 2 needs it: from memory, or read back from its row."""

    id: uuid.UUID
    schedule_id: uuid.UUID
    name: str
    labels: Mapping[str, str] | None
    template: OperationTemplate
    policy: OverlapPolicy
    due: datetime
    fired_at: datetime
    manual: bool
    scopes: list[_OwedScope]
    refused: frozenset[uuid.UUID]


def _owed_by(f: Firing) -> _Owed:
    schedule = f.schedule
    assert f.id is not None and schedule.template is not None
    scopes = [
        _OwedScope(
            id=s.id,
            rack_id=s.rack_id,
            component_filter=s.component_filter,
            forced=s.id in f.overridden,
        )
        for s in f.submit
    ]
    return _Owed(
        id=f.id,
        schedule_id=schedule.id,
        name=schedule.name,
        labels=schedule.management.labels or None,
        template=schedule.template,
        policy=schedule.overlap_policy,
        due=f.due,
        fired_at=f.at,
        manual=f.manual,
        scopes=scopes,
        refused=frozenset(),
    )


def _owed_from(row: Any) -> _Owed:
    template = OperationTemplate(
        type=row.operation_type, code=row.operation_code, information=row.operation_information
    )
    scopes = [
        _OwedScope(
            id=uuid.UUID(i), rack_id=uuid.UUID(r), component_filter=_filter(f), forced=forced
        )
        for i, r, f, forced in row.scopes
    ]
    refused = frozenset(uuid.UUID(i) for i in row.refused or ())
    return _Owed(
        id=row.id,
        schedule_id=row.schedule_id,
        name=row.schedule_name,
        labels=row.schedule_labels,
        template=template,
        policy=OverlapPolicy(row.overlap_policy),
        due=row.due_at,
        fired_at=row.fired_at,
        manual=row.manual,
        scopes=scopes,
        refused=refused,
    )


def _outcome(scope: _OwedScope, submitted: Submission) -> ScopeOutcome:
    """A recorded scope's outcome from the task manager's answer."""
    if submitted.task_id is None:
        return ScopeOutcome(scope.id, scope.rack_id, "failed", error=submitted.error)
    queued = submitted.status == TaskStatus.WAITING
    result: Literal["queued", "submitted"] = "queued" if queued else "submitted"
    return ScopeOutcome(scope.id, scope.rack_id, result, task_id=submitted.task_id)


@dataclass(frozen=True, slots=True)
class ScopeOutcome:
    """What a firing did on one scope."""

    scope_id: uuid.UUID
    rack_id: uuid.UUID
    # deferred: its task is still owed (its rack was busy, or the store failed); the
    # firing's record keeps the debt, and a later completion pays it.
    result: Literal["submitted", "queued", "skipped", "frozen", "failed", "deferred"]
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
    due: datetime  # the tick it was due at (the latest collapsed one, for a deadline)
    at: datetime  # when the dispatcher decided it
    lateness_seconds: float  # at - due
    reason: MissReason
    detail: str | None  # reason "freeze": the freeze's name
    starting_deadline: str | None
    # A freeze miss inside the same freezes' windows as the schedule's previous miss
    # (``rackcron.domain.freezes.already_missed``): counted, not notified.
    repeated: bool = False


class Frozen(FailedPrecondition):
    """A manual trigger refused: freezes hold some of its scopes (and nothing changed).
    The message names the racks and says when a freeze holds only the operation's own
    start time, not the firing."""

    def __init__(
        self,
        schedule: Schedule,
        scopes: Sequence[FiringScope],
        frozen: Mapping[uuid.UUID, tuple[str, ...]],
        holds: Holds,
    ) -> None:
        racks = [s.rack_id for s in scopes if s.id in frozen]
        self.racks = [str(r) for r in racks]
        self.freezes = _names(frozen)
        names = ", ".join(repr(n) for n in self.freezes)
        on = ", ".join(_rack_label(holds.rack_name(r), r) for r in racks)
        later = [n for n in self.freezes if not holds.open_now(n)]
        why = ""
        if later:
            start = operation_times(schedule.template).start
            when = f" ({start.isoformat().replace('+00:00', 'Z')})" if start else ""
            why = (
                f"; the operation's start_time{when} falls inside"
                f" {', '.join(repr(n) for n in later)}"
            )
        super().__init__(
            f"id: task schedule {schedule.name!r} ({schedule.id}) is held by freeze {names} on"
            f" rack {on}{why}: nothing was fired; trigger it with force to override"
        )


def _rack_label(name: str, rack_id: uuid.UUID) -> str:
    return f"{name} ({rack_id})" if name else str(rack_id)


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


class RolloutInProgress(FailedPrecondition):
    """A manual trigger of a schedule whose roll-out is unfinished (docs/spec/SEMANTICS.md
    "Roll-outs", one at a time)."""

    def __init__(self, schedule: Schedule, rollout_id: uuid.UUID) -> None:
        super().__init__(
            f"id: task schedule {schedule.name!r} ({schedule.id}) has an unfinished roll-out"
            f" {rollout_id}: nothing was fired; wait for it to finish, or abort it first"
        )


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
    id: uuid.UUID | None = None  # its record (None: it has nothing to submit)
    # The roll-out recorded for it (its schedule declares one): the roll-out starts its
    # scopes, so the firing itself submits none and has no outcome per scope.
    rollout_id: uuid.UUID | None = None

    def held(self, scope: FiringScope) -> ScopeOutcome:
        """The outcome of a scope this firing does not submit: frozen, or skipped."""
        freezes = self.frozen.get(scope.id)
        if freezes:
            return ScopeOutcome(scope.id, scope.rack_id, "frozen", error=", ".join(freezes))
        return ScopeOutcome(scope.id, scope.rack_id, "skipped")

    @property
    def due(self) -> datetime:
        """When it was due: the schedule's next run (a manual trigger: its own time)."""
        due = self.schedule.next_run_at
        return self.at if self.manual or due is None else due

    def outcomes(
        self, done: Mapping[uuid.UUID, ScopeOutcome], error: str | None = None
    ) -> list[ScopeOutcome]:
        """Every scope's outcome, in scope order: ``done`` (by scope id) for the scopes it
        submits, ``deferred`` (with ``error``, if any) for those of them not done yet,
        :meth:`held` for the rest; none for a firing recorded as a roll-out."""
        if self.rollout_id is not None:
            return []
        submitting = {s.id for s in self.submit}
        return [
            done.get(s.id, ScopeOutcome(s.id, s.rack_id, "deferred", error=error))
            if s.id in submitting
            else self.held(s)
            for s in self.scopes
        ]


@dataclass(frozen=True)
class Completed:
    """What one completion of a recorded firing did: the outcomes of the scopes it
    submitted now (by scope id) and when their tasks were created."""

    firing_id: uuid.UUID
    schedule_id: uuid.UUID
    schedule_name: str
    due: datetime
    fired_at: datetime
    manual: bool
    done: dict[uuid.UUID, ScopeOutcome]
    created_at: datetime
    finished: bool  # False: some scope is still owed (its rack was busy)

    @property
    def lag_seconds(self) -> float:
        """From the due time to the creation of its tasks (0 for a manual trigger)."""
        return 0.0 if self.manual else (self.created_at - self.due).total_seconds()


@dataclass(frozen=True)
class Batch:
    """One batch of a drain: its firings' results, the due schedules that cannot fire,
    the firings missed (each already recorded on its schedule), and the recorded firings
    of earlier polls completed now (``completed``: their replica died or stalled, or a
    rack was busy)."""

    results: list[FireResult]
    unfireable: list[Unfireable]
    missed: list[Missed]
    completed: list[Completed] = field(default_factory=list)


@dataclass(frozen=True)
class FireResult:
    """One firing, after all three phases; ``created_at``: when its tasks were created
    (None: it created none)."""

    firing: Firing
    outcomes: list[ScopeOutcome]
    created_at: datetime | None = None

    @property
    def task_ids(self) -> list[uuid.UUID]:
        return [o.task_id for o in self.outcomes if o.task_id is not None]

    @property
    def lag_seconds(self) -> float:
        """From the due time to the creation of its tasks, else to its claim (0 for a
        manual trigger)."""
        if self.firing.manual:
            return 0.0
        return ((self.created_at or self.firing.at) - self.firing.due).total_seconds()


@dataclass(frozen=True, slots=True)
class FiringOps:
    """Firings: claim what is due, submit each scope's task through ``tasks`` (``freezes``
    holding some), and finish the firing record."""

    work: UnitOfWork
    schedules: ScheduleOps
    tasks: TaskOps
    freezes: FreezeOps
    rollouts: RolloutOps

    def claim_due(self, limit: int) -> list[Firing]:
        """Phase 1 for automatic dispatch: up to ``limit`` due schedules, oldest due first."""
        return self.claim_batch(limit).firings

    def claim_batch(
        self, limit: int, exclude: Collection[uuid.UUID] = (), *, lease: float = DEFAULT_LEASE
    ) -> Claim:
        """:meth:`claim_due`, also returning the due schedules that cannot be fired
        (left as they are); ``exclude`` leaves those ids out. The firings are recorded,
        leased for ``lease`` seconds."""
        query = (
            sa.select(task_schedule)
            .where(
                task_schedule.c.enabled == sa.true(),
                task_schedule.c.next_run_at.is_not(None),
                task_schedule.c.next_run_at <= self.work.now,
            )
            .order_by(task_schedule.c.next_run_at)
            .limit(limit)
            # NO KEY UPDATE: it changes no key, so a task's foreign key check (KEY SHARE)
            # on the schedule does not wait for it.
            .with_for_update(skip_locked=True, key_share=True)
        )
        if exclude:
            query = query.where(task_schedule.c.id.not_in(list(exclude)))
        return self._claim(list(self.work.conn.execute(query)), manual=False, lease=lease)

    def claim(
        self, schedule_id: uuid.UUID | str, *, force: bool = False, all_at_once: bool = False
    ) -> Firing:
        """Phase 1 for TriggerTaskSchedule: fires regardless of enabled and next_run_at.

        A scope a freeze holds refuses the whole trigger, before anything changes, unless
        ``force`` (the firing then carries the freezes it overrode: ``Firing.overridden``).
        ``all_at_once``: a schedule with a roll-out submits every scope now, as one
        without (its unfinished roll-out still refuses it).

        :raises NotFound: no such schedule.
        :raises FailedPrecondition: a consumed one-time schedule (:class:`Frozen`: a freeze
            holds a scope).
        """
        row = self.schedules.schedule_row(schedule_id, lock=True)
        if _rows.schedule(row).consumed:
            raise FailedPrecondition(
                f"id: task schedule {row.id} is a one-time schedule that has already fired; create a new one"
            )
        claim = self._claim([row], manual=True, force=force, all_at_once=all_at_once)
        if claim.unfireable:
            raise FailedPrecondition(claim.unfireable[0].error)
        return claim.firings[0]

    def _claim(
        self,
        rows: Sequence[Any],
        *,
        manual: bool,
        force: bool = False,
        lease: float = DEFAULT_LEASE,
        all_at_once: bool = False,
    ) -> Claim:
        if not rows:
            return Claim([], [], [])
        ids = [r.id for r in rows]
        stored: dict[uuid.UUID, list[tuple[uuid.UUID, uuid.UUID, Any]]] = {i: [] for i in ids}
        for chunk in chunked(ids):
            query = _SCOPES.where(_scope.c.schedule_id.in_(chunk)).order_by(_scope.c.ordinal)
            for scope_id, schedule_id, rack_id, component_filter in self.work.conn.execute(query):
                stored[schedule_id].append((scope_id, rack_id, component_filter))
        # A roll-out judges each scope's overlap at its turn: only the others are read now.
        at_once = {r.id for r in rows if r.rollout is None or all_at_once}
        busy = self.tasks.busy_scopes([s[0] for i in at_once for s in stored[i]])
        holds = self.freezes.holds(s[1] for found in stored.values() for s in found)
        unfinished = self.rollouts.unfinished([r.id for r in rows if r.rollout is not None])
        firings: list[Firing] = []
        unfireable, missed, updates, misses = [], [], [], []
        rolling: list[tuple[int, Schedule]] = []  # firings to record as roll-outs
        for row in rows:
            try:  # a row rackcron did not write (say, a zone this host lacks) fails alone
                schedule = _rows.schedule(row)
                due = schedule.next_run_at
                due, late = deadline_lateness(due, self.work.now, schedule, manual=manual)
                scopes = [FiringScope(i, rack, _filter(f)) for i, rack, f in stored[row.id]]
                frozen = {} if late is not None else _frozen(holds, schedule, scopes)
                if manual and frozen and not force:
                    assert holds is not None  # frozen scopes come from it
                    raise Frozen(schedule, scopes, frozen, holds)
                if manual:  # forced past them: the task manager still judges every scope
                    frozen, overridden = {}, frozen
                else:
                    overridden = {}
                open_scopes = [s for s in scopes if s.id not in frozen]
                if scopes and not open_scopes:  # every scope frozen: a missed firing
                    late = (self.work.now - due).total_seconds() if due is not None else 0.0
                in_progress = unfinished.get(row.id) if schedule.rollout else None
                if in_progress is not None and manual:
                    raise RolloutInProgress(schedule, in_progress)
                if in_progress is not None and late is None:  # one roll-out at a time
                    late = (self.work.now - due).total_seconds() if due is not None else 0.0
                submit: list[FiringScope]
                rolled = schedule.rollout is not None and not all_at_once
                if rolled:  # its roll-out starts the scopes
                    assert schedule.rollout is not None
                    schedule.rollout.policy()  # a policy it cannot follow: this row alone fails
                    submit = []
                else:
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
                    now=self.work.now,
                    fired=bool(submit) or manual or (rolled and late is None),
                    name=schedule.name,
                    spread=schedule.spread,
                )
            except (Frozen, RolloutInProgress):
                raise
            except Exception as exc:
                error = f"task schedule {row.id} cannot be fired: {describe_error(exc)}"
                unfireable.append(Unfireable(row.id, row.name, error))
                continue
            moved = (row.id, step.next_run_at, step.last_run_at, step.enabled)
            if late is None:
                updates.append(moved)
                record = new_task_id() if submit else None
                if rolled:
                    rolling.append((len(firings), schedule))
                firings.append(
                    Firing(
                        schedule, self.work.now, manual, scopes, submit, frozen, overridden, record
                    )
                )
                continue
            assert due is not None  # automatic firings only: they have a due time
            repeated = False
            if in_progress is not None:
                reason, detail = MissReason.ROLLOUT, str(in_progress)
            elif frozen:
                names = _names(frozen)
                reason, detail = MissReason.FREEZE, ", ".join(names)
                assert holds is not None  # frozen scopes come from it
                holding = [f for f in holds.freezes if f.name in names]
                repeated = already_missed(schedule.last_miss, holding, self.work.now)
            else:
                reason, detail = MissReason.DEADLINE, None
            miss = Missed(
                schedule_id=row.id,
                name=schedule.name,
                due=due,
                at=self.work.now,
                lateness_seconds=late,
                reason=reason,
                detail=detail,
                starting_deadline=schedule.starting_deadline,
                repeated=repeated,
            )
            lateness_ms = round(late * 1000)
            misses.append((*moved, lateness_ms, miss.reason.value, miss.detail))
            missed.append(miss)
        update_rows(
            self.work.conn,
            task_schedule,
            "id",
            ("next_run_at", "last_run_at", "enabled"),
            updates,
            same={"updated_at": self.work.now},
        )
        update_rows(
            self.work.conn,
            task_schedule,
            "id",
            ("next_run_at", "last_run_at", "enabled", *_MISS_COLUMNS),
            misses,
            same={"updated_at": self.work.now, "last_miss_at": self.work.now},
        )
        self._record_misses(missed)
        self._record([f for f in firings if f.id is not None], lease)
        for index, schedule in rolling:
            firing = firings[index]
            forced_past = sorted({name for names in firing.overridden.values() for name in names})
            recorded = self.rollouts.record(
                schedule, firing.scopes, manual=manual, due=firing.due, overridden=forced_past
            )
            firings[index] = replace(firing, rollout_id=recorded)
        return Claim(firings, unfireable, missed)

    def _record_misses(self, missed: Sequence[Missed]) -> None:
        """Keep each miss for History (a freeze's repeated holds of a schedule once)."""
        rows = [
            (
                m.schedule_id,
                m.name,
                m.due,
                round(m.lateness_seconds * 1000),
                m.reason.value,
                m.detail,
            )
            for m in missed
            if not m.repeated
        ]
        insert_rows(
            self.work.conn, missed_firing, _MISSED_COLUMNS, rows, same={"at": self.work.now}
        )

    def _record(self, firings: Sequence[Firing], lease: float) -> None:
        """Write down what these firings will submit (phase 1's record): one row each."""
        if not firings:
            return
        records = []
        for f in firings:
            schedule = f.schedule
            template = schedule.template
            assert template is not None and f.id is not None
            scopes = [
                [str(s.id), str(s.rack_id), to_stored(s.component_filter), s.id in f.overridden]
                for s in f.submit
            ]
            record = (  # in the order of _FIRING_COLUMNS
                f.id,
                schedule.id,
                f.manual,
                f.due,
                template.type,
                template.code,
                template.information,
                schedule.overlap_policy.value,
                schedule.name,
                dict(schedule.management.labels or {}) or None,
                scopes,
            )
            records.append(record)
        leased = {
            "fired_at": self.work.now,
            "lease_until": self.work.now + timedelta(seconds=lease),
        }
        insert_rows(self.work.conn, firing, _FIRING_COLUMNS, records, same=leased)

    def complete(self, firings: Sequence[Firing], *, defer_held: bool = True) -> list[Completed]:
        """Phase 2: create the tasks these claimed firings still owe, deciding their
        scopes in the order given, then scope order (a task created earlier in the batch
        counts as active on its rack for the later ones).

        A firing another transaction is completing, or one already finished, is left
        out. ``defer_held``: a rack another transaction holds past the session's lock
        timeout is not waited for any longer, and its scopes stay owed (the firing is then
        offered to every replica at once). A scope the task manager refuses, or whose
        insert fails, is ``failed`` and stops no other.
        """
        recorded = {f.id: f for f in firings if f.id is not None}
        mine: set[uuid.UUID] = set()
        for chunk in chunked(list(recorded)):
            query = (
                sa.select(firing.c.id)
                .where(firing.c.id.in_(chunk), firing.c.finished_at.is_(None))
                .with_for_update(skip_locked=True)
            )
            mine.update(self.work.conn.execute(query).scalars())
        owed = [_owed_by(f) for f in recorded.values() if f.id in mine]
        return self._complete(owed, defer_held=defer_held)

    def complete_overdue(self, limit: int, exclude: Collection[uuid.UUID] = ()) -> list[Completed]:
        """Phase 2 for up to ``limit`` recorded firings whose lease has run out (their
        replica died or stalled, or a rack was busy), the oldest first; ``exclude`` leaves
        those ids out."""
        query = (
            sa.select(firing)
            .where(firing.c.finished_at.is_(None), firing.c.lease_until <= self.work.now)
            .order_by(firing.c.lease_until, firing.c.fired_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        if exclude:
            query = query.where(firing.c.id.not_in(list(exclude)))
        owed = [_owed_from(row) for row in self.work.conn.execute(query)]
        return self._complete(owed, defer_held=True)

    def _complete(self, owed: Sequence[_Owed], *, defer_held: bool) -> list[Completed]:
        if not owed:
            return []
        done_before: set[tuple[uuid.UUID, uuid.UUID]] = set()  # by an earlier completion
        for chunk in chunked([o.id for o in owed]):
            query = sa.select(task.c.firing_id, task.c.scope_id).where(task.c.firing_id.in_(chunk))
            done_before.update((f, s) for f, s in self.work.conn.execute(query))
        todo: dict[uuid.UUID, list[_OwedScope]] = {}
        requests = []
        for o in owed:
            description = task_description(o.name, o.fired_at)
            todo[o.id] = [
                s for s in o.scopes if s.id not in o.refused and (o.id, s.id) not in done_before
            ]
            requests += [
                TaskRequest(
                    rack_id=s.rack_id,
                    component_filter=s.component_filter,
                    template=o.template,
                    policy=o.policy,
                    description=description,
                    schedule_id=o.schedule_id,
                    scope_id=s.id,
                    forced=s.forced,
                    schedule_name=o.name,
                    schedule_labels=o.labels,
                    firing_id=o.id,
                    due_at=o.due,
                )
                for s in todo[o.id]
            ]
        submissions = iter(self.tasks.submit_tasks(requests, defer_held=defer_held))
        created = self.work.clock()
        completed: list[Completed] = []
        finished: list[uuid.UUID] = []  # every scope decided, none refused
        refusing: list[tuple[uuid.UUID, list[str]]] = []  # every scope decided, some refused
        partial: list[tuple[uuid.UUID, list[str]]] = []  # some still owed
        for o in owed:
            done: dict[uuid.UUID, ScopeOutcome] = {}
            for scope in todo[o.id]:
                submitted = next(submissions)
                if not submitted.deferred:
                    done[scope.id] = _outcome(scope, submitted)
            # Refusals are decisions too: recorded, so no later completion retries them.
            refused = {i for i, d in done.items() if d.result == "failed"} | o.refused
            whole = len(done) == len(todo[o.id])
            if not whole:
                partial.append((o.id, sorted(str(i) for i in refused)))
            elif refused:
                refusing.append((o.id, sorted(str(i) for i in refused)))
            else:
                finished.append(o.id)
            completion = Completed(
                firing_id=o.id,
                schedule_id=o.schedule_id,
                schedule_name=o.name,
                due=o.due,
                fired_at=o.fired_at,
                manual=o.manual,
                done=done,
                created_at=created,
                finished=whole,
            )
            completed.append(completion)
        for chunk in chunked(finished):
            self.work.conn.execute(
                firing.update()
                .where(firing.c.id.in_(chunk))
                .values(finished_at=self.work.now, lease_until=None)
            )
        ended = {"finished_at": self.work.now, "lease_until": None}
        update_rows(self.work.conn, firing, "id", ("refused",), refusing, same=ended)
        # Scopes still owed, on racks held elsewhere: any replica may retry at its next poll.
        update_rows(
            self.work.conn, firing, "id", ("refused",), partial, same={"lease_until": self.work.now}
        )
        return completed

    def release(self, firing_ids: Sequence[uuid.UUID]) -> None:
        """End these recorded firings' leases now: any replica may complete them."""
        for chunk in chunked(list(firing_ids)):
            self.work.conn.execute(
                firing.update()
                .where(firing.c.id.in_(chunk), firing.c.finished_at.is_(None))
                .values(lease_until=self.work.now)
            )

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
                self.work.conn.execute(
                    sa.select(task.c.id)
                    .where(among(self.work.conn.dialect.name, task.c.id, chunk))
                    .with_for_update(read=True, key_share=True)
                ).scalars()
            )
        rows = [(o.scope_id, o.task_id) for o in outcomes if o.task_id in existing]
        update_rows(self.work.conn, _scope, "id", ("last_task_id",), rows)
