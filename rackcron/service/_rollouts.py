"""Roll-outs in the store: recorded by phase 1, advanced by any replica.

docs/spec/SEMANTICS.md "Roll-outs". A firing of a schedule that declares ``rollout`` is
recorded as a roll-out (:meth:`RolloutOps.record`, in phase 1's transaction, in place
of a ``firing`` row): its scopes in order, each in its wave and ``spread_by`` group, the
operation and policy copied. :meth:`RolloutOps.advance` locks the unfinished roll-outs no
other replica holds (``SKIP LOCKED`` on PostgreSQL), reads how their started scopes'
tasks ended, and runs ``rackcron.domain.rollouts.step``: the scopes it starts are
judged at their turn (a freeze holds one; a conflicting active task of another schedule
holds one; its own active task skips it under ``skip``) and their tasks are created in
the same transaction as the roll-out's new state and each scope's ``last_task_id``.
A task is identified by the roll-out (its ``firing_id``) and its scope, so a scope never
gets two tasks, whatever crashes.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Protocol

import sqlalchemy as sa

from rackcron.domain import rollouts, timing
from rackcron.domain.filters import ComponentFilter, from_stored, to_stored
from rackcron.domain.firing import task_description
from rackcron.domain.freezes import windows, work_window
from rackcron.domain.lifecycle import FINAL_STATUSES, TaskStatus
from rackcron.domain.models import (
    OperationTemplate,
    OverlapPolicy,
    RolloutPolicy,
    RolloutRecord,
    RolloutScopeRecord,
    Schedule,
)
from rackcron.domain.operation_names import operation_name
from rackcron.domain.rollouts import RolloutState, ScopeStage
from rackcron.domain.templates import operation_times
from rackcron.domain.upcoming import expected_duration
from rackcron.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from rackcron.service._base import parse_id
from rackcron.service._freezes import FreezeOps
from rackcron.service._tasks import TaskOps, TaskRequest, chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.bulk import insert_rows, update_rows
from rackcron.store.tables import (
    nvl_domain,
    nvl_domain_rack,
    rack,
    rollout,
    rollout_scope,
    task,
    task_schedule,
    task_schedule_scope,
)

__all__ = ["MAX_LISTED", "WINDOW", "Advanced", "RolloutOps", "RolloutScopeSeed"]

#: The most roll-outs one listing returns.
MAX_LISTED = 10_000
#: Waiting scopes an advance reads whole at a time, past those in flight (at least the
#: in-flight limit): the rest of a roll-out is counted, not read.
WINDOW = 64

#: Reason codes of a scope's stage (docs/rollouts.md "How a roll-out runs").
TASK_FAILED = "task_failed"
TASK_UNKNOWN = "task_unknown"
QUEUE_EXPIRED = "queue_expired"
CANCELLED = "cancelled"
REFUSED = "refused"
OVERLAP = "overlap"
CUTOFF = "cutoff"
SCHEDULE_DELETED = "schedule deleted"
SCOPE_REMOVED = "scope removed"
FROZEN = "frozen"  # waiting: a freeze held it at its turn
CONFLICT = "conflict"  # waiting: another schedule's task on its rack held it
ABORTED = "aborted"

#: The final states: nothing more starts (the record stays open while its tasks run).
_FINAL = [s.value for s in RolloutState if s.final]

#: Each stage by its stored value (a lookup: ``ScopeStage(value)`` costs more, per row).
_STAGES = {stage.value: stage for stage in ScopeStage}

_SCOPE_COLUMNS = (
    "rollout_id", "position", "scope_id", "rack_id", "rack_name", "component_filter", "wave",
    "group_key", "stage",
)  # fmt: skip


class RolloutScopeSeed(Protocol):
    """A scope as a firing hands it to its roll-out (the firing's own scope entries)."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def rack_id(self) -> uuid.UUID: ...
    @property
    def component_filter(self) -> ComponentFilter | None: ...


@dataclass(frozen=True, slots=True)
class Advanced:
    """What one advance of one roll-out did: the state last told of (None: its start is
    news) and its state after, the tasks it created (scope id -> task id), the scopes that
    ended now (scope id -> stage), the waves that ended now (from 0), and its scopes by
    stage after."""

    rollout_id: uuid.UUID
    schedule_id: uuid.UUID
    schedule_name: str
    before: RolloutState | None
    after: RolloutState
    started: Mapping[uuid.UUID, uuid.UUID]
    ended: Mapping[uuid.UUID, ScopeStage]
    waves_done: tuple[int, ...] = ()
    stages: Mapping[str, int] = field(default_factory=dict)


@dataclass
class _Scope:
    """A roll-out scope row, as an advance changes it."""

    position: int
    scope_id: uuid.UUID
    rack_id: uuid.UUID
    rack_name: str
    component_filter: ComponentFilter | None
    wave: int
    group: rollouts.Group | None
    stage: ScopeStage
    reason: str | None
    task_id: uuid.UUID | None
    task_status: str | None
    started_at: datetime | None
    ended_at: datetime | None
    changed: bool = False
    live: bool | None = None  # its schedule still has it (None: not read, see _waiting_after)

    def end(self, stage: ScopeStage, reason: str | None, now: datetime) -> None:
        self.stage, self.reason, self.ended_at, self.changed = stage, reason, now, True

    def hold(self, reason: str | None) -> None:
        """Held at its turn, waiting still: why (``frozen``, ``conflict``; None: its rack
        was locked elsewhere)."""
        if self.reason != reason:
            self.reason, self.changed = reason, True


def _uuid(value: object) -> uuid.UUID:
    """A new roll-out's scope id, as :meth:`RolloutOps.record` hands them to the domain."""
    assert isinstance(value, uuid.UUID)
    return value


def _position(value: object) -> int:
    """A recorded roll-out's scope id in the domain: its position (an advance reads most
    scopes as counts, :class:`_Window`)."""
    assert isinstance(value, int)
    return value


def _scope(r: Any, stage: ScopeStage | None = None) -> _Scope:
    """A ``rollout_scope`` row as read: whole, or by :data:`_WAITING_COLUMNS` or
    :data:`_ACTIVE_COLUMNS` (``stage`` given; the columns they leave out are empty)."""
    m = r._mapping
    live = m.get("live")
    return _Scope(
        position=m["position"],
        scope_id=m["scope_id"],
        rack_id=m["rack_id"],
        rack_name=m["rack_name"],
        component_filter=from_stored(m.get("component_filter")),
        wave=m["wave"],
        group=_group(m["group_key"]),
        stage=ScopeStage(m["stage"]) if stage is None else stage,
        reason=m.get("reason"),
        task_id=m.get("task_id"),
        task_status=m.get("task_status"),
        started_at=m.get("started_at"),
        ended_at=m.get("ended_at"),
        live=None if live is None else bool(live),
    )


#: What an advance reads of a waiting scope (its task columns are empty), and whether its
#: schedule still has it.
_WAITING_COLUMNS = (
    rollout_scope.c.position, rollout_scope.c.scope_id, rollout_scope.c.rack_id,
    rollout_scope.c.rack_name, rollout_scope.c.component_filter, rollout_scope.c.wave,
    rollout_scope.c.group_key, rollout_scope.c.reason,
    task_schedule_scope.c.id.is_not(None).label("live"),
)  # fmt: skip

#: What an advance reads of an active scope: where it stands, and its task's status and
#: end reason now (None: the task is gone). Its filter and start are not needed: it has
#: started.
_ACTIVE_COLUMNS = (
    rollout_scope.c.position, rollout_scope.c.scope_id, rollout_scope.c.rack_id,
    rollout_scope.c.rack_name, rollout_scope.c.wave, rollout_scope.c.group_key,
    rollout_scope.c.task_id, task.c.status, task.c.end_reason,
)  # fmt: skip


class _Window:
    """What an advance reads of a roll-out: its scopes counted by wave and stage as they
    stood, and whole only those loaded (in flight, and the open wave's next waiting ones,
    :data:`WINDOW` more at a time); the domain sees the loaded ones as they are now and the
    rest as counts (``rackcron.domain.rollouts.Rollout.elsewhere``)."""

    def __init__(self, ops: RolloutOps, row: Any, counts: Counter[tuple[int, ScopeStage]]) -> None:
        self.ops, self.row, self.counts = ops, row, counts
        self.loaded: dict[int, _Scope] = {}
        self._was: dict[int, ScopeStage] = {}  # each loaded scope's stage as counted
        self._after: dict[int, int] = {}  # per wave, the last waiting position loaded

    def load(self, scopes: Iterable[_Scope]) -> None:
        for scope in scopes:
            if scope.position not in self.loaded:
                self.loaded[scope.position] = scope
                self._was[scope.position] = scope.stage

    def whole(self) -> list[_Scope]:
        return [self.loaded[p] for p in sorted(self.loaded)]

    def more(self, wave: int) -> bool:
        """Load the next of ``wave``'s waiting scopes; whether there were any."""
        size = max(WINDOW, self.row.in_flight)
        found = self.ops._waiting_after(self.row.id, wave, self._after.get(wave, -1), size)
        if found:
            self._after[wave] = found[-1].position
        self.load(found)
        return bool(found)

    def _elsewhere(self) -> Counter[tuple[int, ScopeStage]]:
        rest = Counter(self.counts)
        for position, stage in self._was.items():
            rest[self.loaded[position].wave, stage] -= 1
        return +rest

    def view(self, current: rollouts.Rollout) -> rollouts.Rollout:
        """``current`` over the loaded scopes as they are now, the rest as counts."""
        return replace(
            current,
            scopes=tuple(
                rollouts.RolloutScope(s.position, s.wave, s.group, s.stage) for s in self.whole()
            ),
            elsewhere=dict(self._elsewhere()),
        )

    def by_stage(self) -> Counter[ScopeStage]:
        """Every scope by its stage now."""
        found: Counter[ScopeStage] = Counter()
        for (_, stage), count in self._elsewhere().items():
            found[stage] += count
        for scope in self.loaded.values():
            found[scope.stage] += 1
        return found

    def waves_ended(self) -> set[int]:
        """The waves whose every scope has ended, now."""
        unended: Counter[int] = Counter()
        waves = {wave for wave, _ in self.counts}
        for (wave, stage), count in self._elsewhere().items():
            if not stage.ended:
                unended[wave] += count
        for scope in self.loaded.values():
            if not scope.stage.ended:
                unended[scope.wave] += 1
        return {w for w in waves if not unended[w]}


def _record(
    row: Any,
    scopes: Sequence[_Scope],
    stages: Mapping[str, int] | None = None,
    messages: Mapping[uuid.UUID, str] | None = None,
) -> RolloutRecord:
    """``row`` for people: waves from 1; ``stages`` (default: counted from ``scopes``)."""
    counted = stages if stages is not None else Counter(s.stage.value for s in scopes)
    return RolloutRecord(
        id=row.id,
        schedule_id=row.schedule_id,
        schedule_name=row.schedule_name,
        manual=row.manual,
        due_at=row.due_at,
        fired_at=row.fired_at,
        policy=RolloutPolicy.model_validate(row.policy),
        operation=operation_name(
            OperationTemplate(
                type=row.operation_type,
                code=row.operation_code,
                information=row.operation_information,
            )
        ),
        state=row.state,
        wave=row.wave + 1,
        budget=row.budget,
        in_flight=row.in_flight,
        per_group=row.per_group,
        bake_until=row.bake_until,
        bake_left_seconds=row.bake_left_seconds,
        cutoff_at=row.cutoff_at,
        pause_reason=row.pause_reason,
        overridden=[str(o.get("name")) for o in row.overridden or () if isinstance(o, dict)],
        updated_at=row.updated_at,
        finished_at=row.finished_at,
        stages=dict(counted),
        scopes=[
            RolloutScopeRecord(
                position=s.position,
                scope_id=s.scope_id,
                rack_id=s.rack_id,
                rack_name=s.rack_name,
                wave=s.wave + 1,
                group=s.group,
                stage=s.stage.value,
                reason=s.reason,
                task_id=s.task_id,
                task_status=s.task_status,
                task_message=(messages or {}).get(s.task_id) if s.task_id else None,
                started_at=s.started_at,
                ended_at=s.ended_at,
            )
            for s in scopes
        ],
    )


#: An instant's length, to ask which windows hold it.
_TICK = timedelta(microseconds=1)


def _until(override: Mapping[str, str]) -> datetime:
    """When a recorded override ends (a value rackcron did not write: already)."""
    try:
        return timing.parse_rfc3339(override["until"])
    except (KeyError, TypeError, ValueError):
        return datetime.min.replace(tzinfo=UTC)


def _standing(current: rollouts.Rollout) -> dict[str, Any]:
    """The ``rollout`` columns that say where ``current`` stands."""
    left = current.bake_left
    return {
        "state": current.state.value,
        "wave": current.wave,
        "budget": current.budget,
        "bake_until": current.bake_until,
        # Rounded down: a pause never lengthens a bake, however often it is taken.
        "bake_left_seconds": None if left is None else int(left.total_seconds()),
        "pause_reason": current.pause_reason,
    }


def _group(value: Any) -> rollouts.Group | None:
    return None if value is None else (str(value[0]), str(value[1]))


def _task_stage(status: TaskStatus, end_reason: str | None) -> tuple[ScopeStage, str | None]:
    """How a scope ends with its task (docs/spec/SEMANTICS.md "Roll-outs": outcomes)."""
    if status == TaskStatus.COMPLETED:
        return ScopeStage.COMPLETED, None
    if status == TaskStatus.TERMINATED and end_reason == "cancelled":
        return ScopeStage.SKIPPED, CANCELLED
    if status == TaskStatus.TERMINATED and end_reason == "expired":
        return ScopeStage.FAILED, QUEUE_EXPIRED
    if status == TaskStatus.UNKNOWN:
        return ScopeStage.FAILED, TASK_UNKNOWN
    return ScopeStage.FAILED, TASK_FAILED


@dataclass(frozen=True, slots=True)
class RolloutOps:
    """Roll-outs: record a firing as one, and advance the unfinished ones."""

    work: UnitOfWork
    tasks: TaskOps
    freezes: FreezeOps

    def unfinished(self, schedule_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
        """schedule id -> its unfinished roll-out's id, for those of ``schedule_ids`` that
        have one. A roll-out past its cutoff counts as finished: it expires at its next
        advance, and the firing due at its cutoff (by default, the next fire time) fires."""
        found: dict[uuid.UUID, uuid.UUID] = {}
        for chunk in chunked(list(schedule_ids)):
            query = sa.select(rollout.c.schedule_id, rollout.c.id).where(
                rollout.c.schedule_id.in_(chunk),
                rollout.c.finished_at.is_(None),
                rollout.c.state.not_in(_FINAL),  # ended, its last tasks still running
                rollout.c.cutoff_at.is_(None) | (rollout.c.cutoff_at > self.work.now),
            )
            found.update((s, r) for s, r in self.work.conn.execute(query))
        return found

    def record(
        self,
        schedule: Schedule,
        scopes: Sequence[RolloutScopeSeed],
        *,
        manual: bool,
        due: datetime,
        overridden: Sequence[str] = (),
    ) -> uuid.UUID:
        """Record a firing of ``schedule`` (which declares a roll-out) over ``scopes`` as a
        roll-out, its first wave open; returns its id (its tasks' ``firing_id``).
        ``overridden``: the freezes a forced trigger overrode, which hold none of its
        scopes (freezes that open later do)."""
        declared = schedule.rollout
        template = schedule.template
        assert declared is not None and template is not None
        policy = declared.policy()
        racks = self._racks(
            [s.rack_id for s in scopes],
            labels=bool(policy.first_labels) or policy.spread_by not in (None, rollouts.NVL_DOMAIN),
            domains=policy.spread_by == rollouts.NVL_DOMAIN,
        )
        racked = {
            s.id: rollouts.Racked(s.id, *racks.get(s.rack_id, (str(s.rack_id), {}, None)))
            for s in scopes
        }
        made = rollouts.new_rollout(policy, racked.values(), self._cutoff(schedule, due, policy))
        rollout_id = uuid.uuid4()
        overrides = self._overrides(overridden)
        by_id = {s.id: s for s in scopes}
        self.work.conn.execute(
            rollout.insert().values(
                id=rollout_id,
                schedule_id=schedule.id,
                schedule_name=schedule.name,
                schedule_labels=dict(schedule.management.labels) or None,
                manual=manual,
                due_at=due,
                fired_at=self.work.now,
                operation_type=template.type,
                operation_code=template.code,
                operation_information=template.information,
                overlap_policy=schedule.overlap_policy.value,
                policy=declared.model_dump(mode="json"),
                state=made.state.value,
                wave=made.wave,
                budget=made.budget,
                in_flight=made.in_flight,
                per_group=made.per_group,
                bake_seconds=None if made.bake is None else int(made.bake.total_seconds()),
                cutoff_at=made.cutoff_at,
                updated_at=self.work.now,
                overridden=overrides or None,
            )
        )
        rows = []
        for position, s in enumerate(made.scopes):
            seed = by_id[_uuid(s.scope_id)]
            rows.append((
                rollout_id, position, seed.id, seed.rack_id, racked[seed.id].rack_name,
                to_stored(seed.component_filter), s.wave, list(s.group) if s.group else None,
                s.stage.value,
            ))  # fmt: skip
        insert_rows(self.work.conn, rollout_scope, _SCOPE_COLUMNS, rows)
        return rollout_id

    def _overrides(self, names: Sequence[str]) -> list[dict[str, str]]:
        """What a forced trigger overrode: each freeze's name and the end of the windows
        it had open then (a later window of the same freeze holds the roll-out's racks)."""
        if not names:
            return []
        now = self.work.now
        stored = {f.name: f for f in self.freezes.list_freezes()}
        found = []
        for name in names:
            freeze = stored.get(name)
            ends = [e for _, e in windows(freeze, now, now + _TICK)] if freeze else []
            found.append({"name": name, "until": timing.format_rfc3339(max(ends, default=now))})
        return found

    def _cutoff(
        self, schedule: Schedule, due: datetime, policy: rollouts.Policy
    ) -> datetime | None:
        """When the roll-out's unstarted scopes end: ``cutoff`` after the due time, else
        the schedule's next nominal fire time after it (none for a one-time schedule)."""
        if policy.cutoff is not None:
            return due + policy.cutoff
        spec = timing.parse_spec(schedule.spec_type, schedule.spec, schedule.timezone)
        try:
            return timing.nominal_after(spec, schedule.spread, due)
        except OverflowError:  # the calendar ends (year 9999)
            return None

    def _racks(
        self, rack_ids: Sequence[uuid.UUID], *, labels: bool, domains: bool
    ) -> dict[uuid.UUID, tuple[str, Mapping[str, str], str | None]]:
        """rack id -> its name, labels and NVLink domain (the first by name; None: none);
        labels and domains only if asked for (a policy that does not group or pick its
        canaries by them: empty)."""
        found: dict[uuid.UUID, tuple[str, Mapping[str, str], str | None]] = {}
        ids = list(set(rack_ids))
        in_domain: dict[uuid.UUID, str] = {}
        for chunk in chunked(ids):
            if domains:
                query = (
                    sa.select(nvl_domain_rack.c.rack_id, nvl_domain.c.name)
                    .join(nvl_domain, nvl_domain.c.id == nvl_domain_rack.c.domain_id)
                    .where(nvl_domain_rack.c.rack_id.in_(chunk))
                    .order_by(nvl_domain.c.name)
                )
                for rack_id, name in self.work.conn.execute(query):
                    in_domain.setdefault(rack_id, name)
            wanted = rack.c.labels if labels else sa.null()
            query = sa.select(rack.c.id, rack.c.name, wanted).where(rack.c.id.in_(chunk))
            for item in self.work.conn.execute(query):
                found[item[0]] = (item[1], item[2] or {}, in_domain.get(item[0]))
        return found

    # --- reading and steering ----------------------------------------------------------------

    def list_rollouts(
        self,
        *,
        schedule_id: uuid.UUID | None = None,
        states: Collection[str] = (),
        limit: int = 100,
    ) -> list[RolloutRecord]:
        """The newest roll-outs first (without their scopes), of one schedule or in these
        states if given.

        :raises InvalidArgument: a state that is none, or ``limit`` out of 1 to
            :data:`MAX_LISTED`.
        """
        unknown = sorted(set(states) - {s.value for s in RolloutState})
        if unknown:
            raise InvalidArgument(
                f"states: no roll-out state {unknown[0]!r};"
                f" expected some of {', '.join(RolloutState)}"
            )
        if not 1 <= limit <= MAX_LISTED:
            raise InvalidArgument(f"limit: must be from 1 to {MAX_LISTED}, got {limit}")
        query = sa.select(rollout).order_by(rollout.c.fired_at.desc(), rollout.c.id).limit(limit)
        if schedule_id is not None:
            query = query.where(rollout.c.schedule_id == schedule_id)
        if states:
            query = query.where(rollout.c.state.in_(list(states)))
        rows = list(self.work.conn.execute(query))
        stages: dict[uuid.UUID, Counter[str]] = {row.id: Counter() for row in rows}
        for chunk in chunked(list(stages)):
            counts = (
                sa.select(rollout_scope.c.rollout_id, rollout_scope.c.stage, sa.func.count())
                .where(rollout_scope.c.rollout_id.in_(chunk))
                .group_by(rollout_scope.c.rollout_id, rollout_scope.c.stage)
            )
            for rollout_id, stage, count in self.work.conn.execute(counts):
                stages[rollout_id][stage] = count
        return [_record(row, [], stages[row.id]) for row in rows]

    def get_rollout(self, rollout_id: uuid.UUID | str) -> RolloutRecord:
        """A roll-out with its scopes, each active one showing its task's status now.

        :raises NotFound: no such roll-out.
        """
        row = self._row(rollout_id, lock=False)
        scopes = self._scopes(row.id)
        active = [s.task_id for s in scopes if s.stage == ScopeStage.ACTIVE and s.task_id]
        now: dict[uuid.UUID, str] = {}
        for chunk in chunked(active):
            query = sa.select(task.c.id, task.c.status).where(task.c.id.in_(chunk))
            now.update((i, s) for i, s in self.work.conn.execute(query))
        failed = [s.task_id for s in scopes if s.stage == ScopeStage.FAILED and s.task_id]
        messages: dict[uuid.UUID, str] = {}
        for chunk in chunked(failed):
            query = sa.select(task.c.id, task.c.message).where(task.c.id.in_(chunk))
            messages.update((i, m) for i, m in self.work.conn.execute(query))
        for scope in scopes:
            if scope.task_id in now:
                scope.task_status = now[scope.task_id]
        template = OperationTemplate(
            type=row.operation_type, code=row.operation_code, information=row.operation_information
        )
        held = [s for s in scopes if s.stage == ScopeStage.WAITING and s.reason == FROZEN]
        if held:  # which freezes hold them now, for people
            names, _forced = self._frozen(row, template, held)
            for scope in held:  # a freeze that has ended holds it no more
                found = names.get(scope.scope_id)
                scope.reason = f"{FROZEN}: {', '.join(found)}" if found else None
        per_rack, source = self._per_rack(row, template, scopes)
        left = rollouts.time_left(self._domain(row, scopes), self.work.now, per_rack)
        return _record(row, scopes, messages=messages).model_copy(
            update={
                "per_rack_seconds": round(per_rack.total_seconds()),
                "per_rack_from": source,
                "time_left_seconds": None if left is None else round(left.total_seconds()),
            }
        )

    def _per_rack(
        self, row: Any, template: OperationTemplate, scopes: Sequence[_Scope]
    ) -> tuple[timedelta, str]:
        """How long a rack's operation takes, and whence: the mean of the racks ended so
        far (``observed``), else its schedule's ``expected_duration`` (``declared``), else
        the operation's default (``default``)."""
        took = [
            s.ended_at - s.started_at
            for s in scopes
            if s.stage in (ScopeStage.COMPLETED, ScopeStage.FAILED) and s.started_at and s.ended_at
        ]
        if took:
            return sum(took, timedelta(0)) / len(took), "observed"
        declared = self.work.conn.execute(
            sa.select(task_schedule.c.expected_duration).where(
                task_schedule.c.id == row.schedule_id
            )
        ).scalar()
        if declared:
            try:
                return rollouts.parse_span(declared, "expected_duration"), "declared"
            except rollouts.RolloutError:
                pass  # a value rackcron did not write: the default
        return expected_duration(operation_name(template)), "default"

    def running(self) -> list[RolloutRecord]:
        """The roll-outs that may still start racks (rolling, baking, paused, halted), each
        with its scopes, as :meth:`get_rollout` shows them."""
        query = sa.select(rollout.c.id).where(
            rollout.c.finished_at.is_(None), rollout.c.state.not_in(_FINAL)
        )
        return [self.get_rollout(i) for i in self.work.conn.execute(query).scalars()]

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """The unfinished roll-outs by state, and their scopes by stage (for /metrics)."""
        unfinished = rollout.c.finished_at.is_(None)
        by_state = sa.select(rollout.c.state, sa.func.count()).where(
            unfinished, rollout.c.state.not_in(_FINAL)
        )
        by_stage = (
            sa.select(rollout_scope.c.stage, sa.func.count())
            .join(rollout, rollout.c.id == rollout_scope.c.rollout_id)
            .where(unfinished)
            .group_by(rollout_scope.c.stage)
        )
        states = {s.value: 0 for s in RolloutState if not s.final}
        states.update(self.work.conn.execute(by_state.group_by(rollout.c.state)).all())
        stages = {s.value: 0 for s in ScopeStage}
        stages.update(self.work.conn.execute(by_stage).all())
        return states, stages

    def latest_of(self, schedule_id: uuid.UUID) -> uuid.UUID | None:
        """The schedule's newest roll-out (None: it has none)."""
        query = (
            sa.select(rollout.c.id)
            .where(rollout.c.schedule_id == schedule_id)
            .order_by(rollout.c.fired_at.desc())
            .limit(1)
        )
        return self.work.conn.execute(query).scalar()

    def pause(self, rollout_id: uuid.UUID | str) -> RolloutRecord:
        """Pause a rolling or baking roll-out: nothing new starts, and its undelivered
        tasks are held, until it is resumed. A paused one stays as it is.

        :raises NotFound: no such roll-out.
        :raises FailedPrecondition: it is halted or finished.
        """
        row = self._row(rollout_id, lock=True)
        if row.state == RolloutState.PAUSED:
            return self.get_rollout(row.id)
        try:
            paused = rollouts.pause(self._domain(row, ()), self.work.now)
        except rollouts.RolloutError as exc:
            raise FailedPrecondition(f"id: roll-out {row.id}: {exc}") from None
        self._set(row.id, **_standing(paused))
        return self.get_rollout(row.id)

    def resume(
        self,
        rollout_id: uuid.UUID | str,
        allow_failures: int | None = None,
        *,
        halted_ok: bool = True,
    ) -> RolloutRecord:
        """Resume a paused or halted roll-out (``rackcron.domain.rollouts.resume``): a
        halted one keeps its failures and may fail ``allow_failures`` more.

        :raises NotFound: no such roll-out.
        :raises FailedPrecondition: it is neither paused nor halted.
        :raises PermissionDenied: it is halted, and ``halted_ok`` is false.
        :raises InvalidArgument: ``allow_failures`` is negative.
        """
        if allow_failures is not None and not 0 <= allow_failures <= rollouts.MAX_COUNT:
            raise InvalidArgument(
                f"allow_failures: must be from 0 to {rollouts.MAX_COUNT}, got {allow_failures}"
            )
        row = self._row(rollout_id, lock=True)
        if row.state == RolloutState.HALTED and not halted_ok:
            raise PermissionDenied(
                f"id: roll-out {row.id} is halted: resuming it overrides its failure budget"
            )
        if allow_failures is not None and row.state != RolloutState.HALTED:
            raise FailedPrecondition(
                f"allow_failures: roll-out {row.id} is {row.state}, not halted: only a halted"
                " one is allowed more failures"
            )
        scopes = self._scopes(row.id)
        self._refresh(scopes, {})  # as its tasks ended: a failure meanwhile counts
        declared = rollouts.limits(RolloutPolicy.model_validate(row.policy).policy(), len(scopes))
        try:
            resumed = rollouts.resume(
                self._domain(row, scopes),
                self.work.now,
                allow_failures,
                declared_budget=declared.failures,
            )
        except rollouts.RolloutError as exc:
            raise FailedPrecondition(f"id: roll-out {row.id}: {exc}") from None
        # Told as it resumes: a halt at the next advance is news (and told) again.
        self._save(row, resumed, scopes, {})
        return self.get_rollout(row.id)

    def abort(self, rollout_id: uuid.UUID | str, *, cancel_active: bool = False) -> RolloutRecord:
        """Abort an unfinished roll-out: its unstarted scopes end ``not_started`` (reason
        ``aborted``), its waiting and pending tasks are cancelled (``cancel_active``: its
        running ones too), and it ends ``aborted``.

        :raises NotFound: no such roll-out.
        :raises FailedPrecondition: it has finished.
        """
        row = self._row(rollout_id, lock=True)
        if row.finished_at is not None or RolloutState(row.state).final:
            raise FailedPrecondition(f"id: roll-out {row.id} has finished ({row.state})")
        scopes = self._scopes(row.id)
        self._refresh(scopes, {})  # as its tasks ended: a failure counts as one
        for scope in scopes:
            if scope.stage == ScopeStage.WAITING:
                scope.end(ScopeStage.NOT_STARTED, ABORTED, self.work.now)
        cancelling = {TaskStatus.WAITING, TaskStatus.PENDING}
        if cancel_active:
            cancelling.add(TaskStatus.RUNNING)
        self._cancel(scopes, cancelling, ScopeStage.SKIPPED, CANCELLED, {})
        current = replace(
            self._restaged(self._domain(row, scopes), scopes), state=RolloutState.ABORTED
        )
        self._save(row, current, scopes, {}, told=False)  # the dispatcher tells of it
        return self.get_rollout(row.id)

    def _cancel(
        self,
        scopes: Sequence[_Scope],
        statuses: Collection[TaskStatus],
        stage: ScopeStage,
        reason: str,
        ended: dict[uuid.UUID, ScopeStage],
    ) -> None:
        """Cancel the tasks of the active scopes that are in one of ``statuses`` now; each
        such scope ends at ``stage`` for ``reason`` (one whose task ended meanwhile stays
        for :meth:`_refresh` to end as its task did)."""
        active = [s for s in scopes if s.stage == ScopeStage.ACTIVE and s.task_id]
        now_in: dict[uuid.UUID, str] = {}
        for chunk in chunked([s.task_id for s in active if s.task_id]):
            query = sa.select(task.c.id, task.c.status).where(task.c.id.in_(chunk))
            now_in.update((i, s) for i, s in self.work.conn.execute(query))
        wanted = {s.value for s in statuses}
        for scope in active:
            assert scope.task_id is not None
            if now_in.get(scope.task_id) not in wanted:
                continue
            try:
                self.tasks.cancel_task(scope.task_id)
            except FailedPrecondition:  # it ended meanwhile: as it ended
                continue
            scope.end(stage, reason, self.work.now)
            scope.task_status = TaskStatus.TERMINATED.value
            ended[scope.scope_id] = stage

    def _row(self, rollout_id: uuid.UUID | str, *, lock: bool) -> Any:
        found = parse_id(rollout_id, "id")
        query = sa.select(rollout).where(rollout.c.id == found)
        row = self.work.conn.execute(query.with_for_update() if lock else query).first()
        if row is None:
            raise NotFound(f"id: roll-out {found} not found")
        return row

    def _set(self, rollout_id: uuid.UUID, **values: Any) -> None:
        self.work.conn.execute(
            rollout.update()
            .where(rollout.c.id == rollout_id)
            .values(**values, updated_at=self.work.now)
        )

    # --- advancing ---------------------------------------------------------------------------

    def advance(self, limit: int, exclude: Collection[uuid.UUID] = ()) -> list[Advanced]:
        """Advance up to ``limit`` unfinished roll-outs that no other transaction holds,
        the oldest first; ``exclude`` leaves those ids out (advanced already)."""
        query = (
            sa.select(rollout)
            .where(rollout.c.finished_at.is_(None))
            .order_by(rollout.c.fired_at, rollout.c.id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        if exclude:
            query = query.where(rollout.c.id.not_in(list(exclude)))
        return [self._advance(row) for row in list(self.work.conn.execute(query))]

    def _advance(self, row: Any) -> Advanced:
        now = self.work.now
        # The scopes are counted by wave and stage, and read whole only in flight and in a
        # window of the next in turn (:class:`_Window`): an advance of a roll-out of 5,000
        # racks at 5% reads 250 rows and a few more, not 5,000.
        window = _Window(self, row, self._counts(row.id))
        done_before = window.waves_ended()
        ended: dict[uuid.UUID, ScopeStage] = {}
        active = self._active(row.id)
        window.load(scope for scope, _, _ in active)  # as counted, then as their tasks ended
        for scope, status, reason in active:
            if scope.task_id is not None:
                self._end_as_task(scope, status, reason, ended)
        before = None if row.reported_state is None else RolloutState(row.reported_state)
        window.more(row.wave)
        current = window.view(self._domain(row, ()))
        exists = self._schedule_exists(row.schedule_id)
        if not exists:  # the schedule is gone: nothing more starts
            window.load(self._scopes(row.id, stage=ScopeStage.WAITING))
            current = self._end_waiting(current, window.whole(), SCHEDULE_DELETED, ended)
            current = window.view(current)
        template = OperationTemplate(
            type=row.operation_type, code=row.operation_code, information=row.operation_information
        )
        policy = OverlapPolicy(row.overlap_policy)
        description = task_description(row.schedule_name, row.fired_at)
        held: set[int] = set()
        started: dict[uuid.UUID, uuid.UUID] = {}
        cut: tuple[Any, ...] = ()
        while True:
            decided = rollouts.step(current, now, held)
            current, cut = decided.rollout, cut or decided.cut_off
            if not decided.start:
                if decided.wants_more and window.more(current.wave):
                    current = window.view(current)
                    continue
                break
            loaded = window.loaded
            starting = [loaded[_position(i)] for i in decided.start]
            # Judged at its turn: a freeze holds it (unless its forced trigger overrode
            # that freeze), for a later turn; the next racks in order go first.
            frozen, forced = self._frozen(row, template, starting)
            for scope in starting:
                if scope.scope_id in frozen:
                    scope.hold(FROZEN)
                    held.add(scope.position)
            starting = [s for s in starting if s.scope_id not in frozen]
            assert all(s.live is not None for s in starting)  # each read by the window
            gone = [s for s in starting if exists and not s.live]
            for scope in gone:
                scope.end(ScopeStage.NOT_STARTED, SCOPE_REMOVED, now)
                ended[scope.scope_id] = scope.stage
            trying = [s for s in starting if s not in gone]
            busy = self.tasks.busy_scopes([s.scope_id for s in trying])
            submit = []
            for scope in trying:
                if scope.scope_id in busy and policy == OverlapPolicy.SKIP:
                    scope.end(ScopeStage.SKIPPED, OVERLAP, now)
                    ended[scope.scope_id] = scope.stage
                else:
                    submit.append(scope)
            answers = self.tasks.submit_tasks(
                [
                    TaskRequest(
                        rack_id=s.rack_id,
                        component_filter=s.component_filter,
                        template=template,
                        # Its own task still active (queue): behind it; otherwise a
                        # conflicting task on its rack holds it for a later turn.
                        policy=OverlapPolicy.QUEUE if s.scope_id in busy else OverlapPolicy.SKIP,
                        description=description,
                        schedule_id=row.schedule_id if exists else None,
                        scope_id=s.scope_id,
                        forced=s.scope_id in forced,
                        schedule_name=row.schedule_name,
                        schedule_labels=row.schedule_labels,
                        firing_id=row.id,
                        due_at=row.due_at,
                    )
                    for s in submit
                ],
                defer_held=True,
            )
            for scope, answer in zip(submit, answers, strict=True):
                if answer.deferred or answer.blocked:
                    held.add(scope.position)  # a later turn
                    scope.hold(CONFLICT if answer.blocked else None)
                elif answer.task_id is None:
                    scope.end(ScopeStage.FAILED, REFUSED, now)
                    ended[scope.scope_id] = scope.stage
                else:
                    scope.stage, scope.task_id, scope.started_at = (
                        ScopeStage.ACTIVE,
                        answer.task_id,
                        now,
                    )
                    scope.reason, scope.changed = None, True
                    started[scope.scope_id] = answer.task_id
            if decided.wants_more:
                window.more(current.wave)
            current = window.view(current)
        expired_now = current.state == RolloutState.EXPIRED and before != current.state
        if cut or expired_now:
            # Past its cutoff the racks not started end (those outside the window too),
            # and its tasks not yet delivered never will be; running ones go on.
            window.load(self._scopes(row.id, stage=ScopeStage.WAITING))
            for scope in window.whole():
                if scope.stage == ScopeStage.WAITING:
                    scope.end(ScopeStage.NOT_STARTED, CUTOFF, now)
                    ended[scope.scope_id] = scope.stage
            undelivered = (TaskStatus.WAITING, TaskStatus.PENDING)
            self._cancel(window.whole(), undelivered, ScopeStage.NOT_STARTED, CUTOFF, ended)
        scopes = window.whole()
        self._save(row, current, scopes, started)
        return Advanced(
            rollout_id=row.id,
            schedule_id=row.schedule_id,
            schedule_name=row.schedule_name,
            before=before,
            after=current.state,
            started=started,
            ended=ended,
            waves_done=tuple(sorted(window.waves_ended() - done_before)),
            stages={stage.value: n for stage, n in window.by_stage().items() if n},
        )

    def _scopes(
        self,
        rollout_id: uuid.UUID,
        *,
        stage: ScopeStage | None = None,
    ) -> list[_Scope]:
        """The roll-out's scopes in order, whole: every one, or those at ``stage``."""
        query = (
            sa.select(rollout_scope)
            .where(rollout_scope.c.rollout_id == rollout_id)
            .order_by(rollout_scope.c.position)
        )
        if stage is not None:
            query = query.where(rollout_scope.c.stage == stage.value)
        return [_scope(r) for r in self.work.conn.execute(query)]

    def _counts(self, rollout_id: uuid.UUID) -> Counter[tuple[int, ScopeStage]]:
        """The roll-out's scopes counted by wave and stage."""
        query = (
            sa.select(rollout_scope.c.wave, rollout_scope.c.stage, sa.func.count())
            .where(rollout_scope.c.rollout_id == rollout_id)
            .group_by(rollout_scope.c.wave, rollout_scope.c.stage)
        )
        return Counter(
            {(wave, _STAGES[stage]): n for wave, stage, n in self.work.conn.execute(query)}
        )

    def _waiting_after(
        self, rollout_id: uuid.UUID, wave: int, after: int, limit: int
    ) -> list[_Scope]:
        """Up to ``limit`` of ``wave``'s waiting scopes past position ``after``, in order,
        each knowing whether its schedule still has it."""
        query = (
            sa.select(*_WAITING_COLUMNS)
            .select_from(
                rollout_scope.outerjoin(
                    task_schedule_scope, task_schedule_scope.c.id == rollout_scope.c.scope_id
                )
            )
            .where(
                rollout_scope.c.rollout_id == rollout_id,
                rollout_scope.c.wave == wave,
                rollout_scope.c.stage == ScopeStage.WAITING.value,
                rollout_scope.c.position > after,
            )
            .order_by(rollout_scope.c.position)
            .limit(limit)
        )
        return [_scope(r, ScopeStage.WAITING) for r in self.work.conn.execute(query)]

    def _refresh(self, scopes: Sequence[_Scope], ended: dict[uuid.UUID, ScopeStage]) -> None:
        """End the active scopes whose task has ended, as their task ended."""
        active = {s.task_id: s for s in scopes if s.stage == ScopeStage.ACTIVE and s.task_id}
        statuses: dict[uuid.UUID, tuple[str, str | None]] = {}
        for chunk in chunked(list(active)):
            query = sa.select(task.c.id, task.c.status, task.c.end_reason).where(
                task.c.id.in_(chunk)
            )
            statuses.update((i, (s, r)) for i, s, r in self.work.conn.execute(query))
        for task_id, scope in active.items():
            status, reason = statuses.get(task_id, (None, None))
            self._end_as_task(scope, status, reason, ended)

    def _active(self, rollout_id: uuid.UUID) -> list[tuple[_Scope, str | None, str | None]]:
        """The roll-out's active scopes, each with its task's status and end reason now
        (one read; None: the task is gone)."""
        query = (
            sa.select(*_ACTIVE_COLUMNS)
            .select_from(rollout_scope.outerjoin(task, task.c.id == rollout_scope.c.task_id))
            .where(
                rollout_scope.c.rollout_id == rollout_id,
                rollout_scope.c.stage == ScopeStage.ACTIVE.value,
            )
            .order_by(rollout_scope.c.position)
        )
        return [
            (_scope(r, ScopeStage.ACTIVE), r.status, r.end_reason)
            for r in self.work.conn.execute(query)
        ]

    def _end_as_task(
        self,
        scope: _Scope,
        status: str | None,
        reason: str | None,
        ended: dict[uuid.UUID, ScopeStage],
    ) -> None:
        """End ``scope`` as its task did, if it has (``status`` None: the task is gone,
        which counts as unknown)."""
        now_in = TaskStatus.UNKNOWN if status is None else TaskStatus(status)
        if now_in not in FINAL_STATUSES and now_in != TaskStatus.UNKNOWN:
            return
        stage, code = _task_stage(now_in, reason)
        scope.end(stage, code, self.work.now)
        scope.task_status = now_in.value
        ended[scope.scope_id] = stage

    @staticmethod
    def _domain(row: Any, scopes: Iterable[_Scope]) -> rollouts.Rollout:
        """The roll-out as the domain judges it, from its scopes, each known by its
        position."""
        return rollouts.Rollout(
            scopes=tuple(
                rollouts.RolloutScope(s.position, s.wave, s.group, s.stage) for s in scopes
            ),
            in_flight=row.in_flight,
            per_group=row.per_group,
            budget=row.budget,
            bake=None if row.bake_seconds is None else timedelta(seconds=row.bake_seconds),
            wave=row.wave,
            state=RolloutState(row.state),
            bake_until=row.bake_until,
            cutoff_at=row.cutoff_at,
            pause_reason=row.pause_reason,
            bake_left=(
                None if row.bake_left_seconds is None else timedelta(seconds=row.bake_left_seconds)
            ),
        )

    @staticmethod
    def _restaged(current: rollouts.Rollout, scopes: Iterable[_Scope]) -> rollouts.Rollout:
        """``current`` with each scope at the stage of its row (held ones back to waiting)."""
        stage = {s.position: s.stage for s in scopes}
        return replace(
            current,
            scopes=tuple(
                s
                if (now := stage.get(_position(s.scope_id), s.stage)) is s.stage
                else replace(s, stage=now)
                for s in current.scopes
            ),
        )

    def _end_waiting(
        self,
        current: rollouts.Rollout,
        scopes: Sequence[_Scope],
        reason: str,
        ended: dict[uuid.UUID, ScopeStage],
    ) -> rollouts.Rollout:
        for scope in scopes:
            if scope.stage == ScopeStage.WAITING:
                scope.end(ScopeStage.NOT_STARTED, reason, self.work.now)
                ended[scope.scope_id] = scope.stage
        return self._restaged(current, scopes)

    def _schedule_exists(self, schedule_id: uuid.UUID) -> bool:
        query = sa.select(task_schedule.c.id).where(task_schedule.c.id == schedule_id)
        return self.work.conn.execute(query).first() is not None

    def _frozen(
        self, row: Any, template: OperationTemplate, scopes: Sequence[_Scope]
    ) -> tuple[dict[uuid.UUID, tuple[str, ...]], set[uuid.UUID]]:
        """The scopes a freeze holds now (or over the operation's own work window), each
        with the names of the freezes holding it; and those only the freezes its forced
        trigger overrode hold (they start, their tasks forced past them)."""
        holds = self.freezes.holds(s.rack_id for s in scopes)
        if holds is None:
            return {}, set()
        operation = operation_name(template)
        named = (row.schedule_name, row.schedule_labels or {})
        work = work_window(holds.at, *operation_times(template))
        # A freeze the forced trigger overrode, in the window it had open then.
        overridden = {o["name"] for o in row.overridden or () if holds.at < _until(o)}
        found, forced = {}, set()
        for scope in scopes:
            names = {f.name for f in holds.all_holding(scope.rack_id, named, operation, work)}
            if names - overridden:
                found[scope.scope_id] = tuple(sorted(names - overridden))
            elif names:
                forced.add(scope.scope_id)
        return found, forced

    def _save(
        self,
        row: Any,
        current: rollouts.Rollout,
        scopes: Sequence[_Scope],
        started: Mapping[uuid.UUID, uuid.UUID],
        *,
        told: bool = True,
    ) -> None:
        """Write the roll-out's new state, its changed scopes, and each started scope's
        ``last_task_id``; ``told``: the dispatcher tells of it now (else the next advance
        does, and finishes it)."""
        now = self.work.now
        self.work.conn.execute(
            rollout.update()
            .where(rollout.c.id == row.id)
            .values(
                **_standing(current),
                reported_state=current.state.value if told else row.reported_state,
                updated_at=now,
                # Finished once final, told of, and no task of it is active: its scopes
                # show how each task ended, and retention keeps them until then.
                finished_at=(
                    now
                    if told
                    and current.state.final
                    and all(s.stage != ScopeStage.ACTIVE for s in scopes)
                    else None
                ),
            )
        )
        # Each changed scope started now (its task), ended, or was held (a reason): only
        # what changed is written, and what they share once.
        changed = [s for s in scopes if s.changed]
        key = ("rollout_id", "position")
        write = partial(update_rows, self.work.conn, rollout_scope, key)
        write(
            ("task_id",),
            [(row.id, s.position, s.task_id) for s in changed if s.stage == ScopeStage.ACTIVE],
            same={"stage": ScopeStage.ACTIVE.value, "reason": None, "started_at": now},
        )
        write(
            ("stage", "reason", "task_id", "task_status", "started_at", "ended_at"),
            [
                (row.id, s.position, s.stage.value, s.reason, s.task_id, s.task_status,
                 s.started_at, s.ended_at)
                for s in changed
                if s.stage.ended and s.scope_id in started
            ],
        )  # fmt: skip
        write(
            ("stage", "reason", "task_status", "ended_at"),
            [
                (row.id, s.position, s.stage.value, s.reason, s.task_status, s.ended_at)
                for s in changed
                if s.stage.ended and s.scope_id not in started
            ],
        )
        write(
            ("reason",),
            [(row.id, s.position, s.reason) for s in changed if s.stage == ScopeStage.WAITING],
        )
        update_rows(
            self.work.conn,
            task_schedule_scope,
            "id",
            ("last_task_id",),
            [(scope_id, task_id) for scope_id, task_id in started.items()],
        )
