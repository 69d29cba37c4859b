"""A small in-memory model of the task-schedule rules, which the state machine of
``tests/integration/test_service_model.py`` checks the service against.

It restates docs/spec/SEMANTICS.md "Schedule", "Overlap policy", "Scope", "RPCs",
"Dispatch" and "Tasks" as plain Python over plain values, and never reads the service
or rackcron's own rules (only its enums and error classes): schedules (spec, policy,
enabled, next and last run), their scope entries (rack, filter, last task) and the tasks
firings create (rack, scope, schedule, the component types they cover, status). Each
RPC, a firing of every due schedule, a task's end and the task runner's queue round is
a method that changes the model as the contract says, at a ``now`` it is given.

Kept small on purpose, by the inputs the state machine draws:

* specs: intervals in whole seconds, minutes or hours (``30m``); one-time instants;
  cron in UTC whose hour, day and month fields are ``*`` (the minute field ``*``, ``*/n``
  or a list);
* every schedule powers on, and a scope's filter is null (the whole rack) or ``types``
  drawn from :data:`TYPES`, which every rack holds; so the rows of "Task conflicts" come
  down to one: two tasks on a rack conflict when either covers the power shelf or they
  share a component type (:func:`conflict`);
* keys are the model's own small integers (schedules, scope entries and tasks from one
  counter, so a task's key also gives the order tasks were submitted in); the state
  machine binds them to the service's ids as they appear.

An operation the contract refuses raises the error class the service raises
(``AlreadyExists``, ``Conflict``, ``FailedPrecondition``) and changes nothing.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from rackcron.domain.models import OverlapPolicy, SpecType, TaskStatus
from rackcron.errors import AlreadyExists, Conflict, FailedPrecondition

__all__ = [
    "ACTIVE",
    "MAX_WAITING",
    "QUEUE_TIMEOUT",
    "TYPES",
    "Fired",
    "Model",
    "Schedule",
    "Scope",
    "Target",
    "Task",
    "conflict",
    "first_run",
    "next_after",
]

#: The component types of every rack (the ``fleet`` fixture's racks hold each of them).
TYPES = ("COMPUTE", "NVSWITCH", "POWERSHELF")
ACTIVE = frozenset({TaskStatus.WAITING, TaskStatus.PENDING, TaskStatus.RUNNING})
_RUNNING_SET = frozenset({TaskStatus.PENDING, TaskStatus.RUNNING})
#: A rack holds at most this many waiting tasks.
MAX_WAITING = 5
#: A waiting task's queue timeout when its operation sets none.
QUEUE_TIMEOUT = timedelta(hours=1)

#: A scope entry as a request names it: a rack and its component types (None: the whole rack).
Target = tuple[int, tuple[str, ...] | None]

_INTERVAL = re.compile(r"(\d+)([smh])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}
_MINUTE = timedelta(minutes=1)


def _minutes(field: str) -> set[int]:
    if field == "*":
        return set(range(60))
    if field.startswith("*/"):
        return set(range(0, 60, int(field[2:])))
    return {int(m) for m in field.split(",")}


def _next_cron(spec: str, t: datetime) -> datetime:
    """The first minute strictly after ``t`` that the minute field names."""
    minute, *rest = spec.split()
    if rest != ["*"] * 4:
        raise ValueError(f"the model reads only the minute field of a cron spec: {spec!r}")
    wanted = _minutes(minute)
    at = t.replace(second=0, microsecond=0) + _MINUTE
    while at.minute not in wanted:
        at += _MINUTE
    return at


def _interval(spec: str) -> timedelta:
    match = _INTERVAL.fullmatch(spec)
    if match is None:
        raise ValueError(f"the model reads only whole seconds, minutes or hours: {spec!r}")
    return timedelta(seconds=int(match[1]) * _UNIT_SECONDS[match[2]])


def first_run(spec_type: SpecType, spec: str, now: datetime) -> datetime:
    """When a schedule armed at ``now`` (created, resumed, its spec changed) is due:
    interval ``now + d``, cron the next match after ``now``, one-time its instant."""
    if spec_type == SpecType.ONE_TIME:
        return datetime.fromisoformat(spec)
    return next_after(spec_type, spec, now)


def next_after(spec_type: SpecType, spec: str, t: datetime) -> datetime:
    """When an interval or cron schedule that fired at ``t`` is due next (missed ticks
    are not replayed)."""
    if spec_type == SpecType.INTERVAL:
        return t + _interval(spec)
    return _next_cron(spec, t)


def conflict(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two power tasks on one rack, covering these component types, conflict."""
    return "POWERSHELF" in a | b or bool(a & b)


def _same_filter(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> bool:
    """Filter equality as UpdateTaskScheduleScope compares: order does not matter."""
    return a is b is None or (a is not None and b is not None and Counter(a) == Counter(b))


def _merge(
    current: tuple[str, ...] | None, incoming: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    """AddTaskScheduleScope's merge of two types filters (None: the whole rack)."""
    if current is None or incoming is None:
        return None
    return current + tuple(t for t in dict.fromkeys(incoming) if t not in current)


@dataclass
class Scope:
    key: int
    rack: int
    types: tuple[str, ...] | None  # None: the whole rack
    last_task: int | None = None


@dataclass
class Schedule:
    name: str
    spec_type: SpecType
    spec: str
    policy: OverlapPolicy
    scopes: list[Scope]
    next_run_at: datetime | None
    enabled: bool = True
    last_run_at: datetime | None = None

    @property
    def consumed(self) -> bool:
        return self.spec_type == SpecType.ONE_TIME and self.next_run_at is None


@dataclass
class Task:
    rack: int
    scope: int
    schedule: int | None  # None once its schedule is deleted
    covers: frozenset[str]
    status: TaskStatus
    expires_at: datetime | None = None  # a waiting task's queue timeout


@dataclass(frozen=True)
class Fired:
    """One firing: each scope's outcome in scope order, as (scope key, result, task key);
    results are the service's words: submitted, queued, skipped, failed."""

    schedule: int
    outcomes: list[tuple[int, str, int | None]]


class Model:
    """The state the rules speak of, and the operations that change it."""

    def __init__(self) -> None:
        self.schedules: dict[int, Schedule] = {}
        self.tasks: dict[int, Task] = {}  # in the order they were submitted
        self._keys = itertools.count()

    # Schedules

    def create(
        self,
        name: str,
        spec_type: SpecType,
        spec: str,
        policy: OverlapPolicy,
        targets: Sequence[Target],
        now: datetime,
    ) -> int:
        """CreateTaskSchedule: enabled, due at its first run; returns its key."""
        if any(s.name == name for s in self.schedules.values()):
            raise AlreadyExists(f"schedule.name: {name!r} is taken")
        key = next(self._keys)
        scopes = [Scope(next(self._keys), rack, types) for rack, types in targets]
        run = first_run(spec_type, spec, now)
        self.schedules[key] = Schedule(name, spec_type, spec, policy, scopes, run)
        return key

    def update(
        self,
        key: int,
        now: datetime,
        *,
        name: str | None = None,
        policy: OverlapPolicy | None = None,
        spec: tuple[SpecType, str] | None = None,
    ) -> None:
        """UpdateTaskSchedule with the fields given (the others left out of the mask)."""
        schedule = self.schedules[key]
        if spec is not None and schedule.consumed:
            raise FailedPrecondition("schedule.spec: a consumed one-time schedule")
        taken = {s.name for k, s in self.schedules.items() if k != key}
        if name is not None and name in taken:
            raise Conflict(f"schedule.name: {name!r} is taken")
        if name is not None:
            schedule.name = name
        if policy is not None:
            schedule.policy = policy
        if spec is not None:
            schedule.spec_type, schedule.spec = spec
            schedule.next_run_at = first_run(*spec, now)

    def pause(self, key: int) -> None:
        """PauseTaskSchedule: next_run_at kept."""
        schedule = self._armable(key)
        schedule.enabled = False

    def resume(self, key: int, now: datetime) -> None:
        """ResumeTaskSchedule: interval and cron restart from ``now``; one-time keeps its instant."""
        schedule = self._armable(key)
        schedule.enabled = True
        if schedule.spec_type != SpecType.ONE_TIME:
            schedule.next_run_at = first_run(schedule.spec_type, schedule.spec, now)

    def _armable(self, key: int) -> Schedule:
        schedule = self.schedules[key]
        if schedule.consumed:
            raise FailedPrecondition("id: a consumed one-time schedule")
        return schedule

    def delete(self, key: int) -> None:
        """DeleteTaskSchedule: its tasks go on, no longer linked to it."""
        del self.schedules[key]
        for task in self.tasks.values():
            if task.schedule == key:
                task.schedule = None

    # Scope entries

    def add_scope(self, key: int, targets: Sequence[Target]) -> list[int]:
        """AddTaskScheduleScope: new racks appended, filters of racks in scope merged;
        returns the entries created or changed, in scope order."""
        schedule = self.schedules[key]
        by_rack = {s.rack: s for s in schedule.scopes}
        touched = set()
        for rack, types in targets:
            current = by_rack.get(rack)
            if current is None:
                current = Scope(next(self._keys), rack, types)
                schedule.scopes.append(current)
                touched.add(current.key)
            elif (merged := _merge(current.types, types)) != current.types:
                current.types = merged
                touched.add(current.key)
        return [s.key for s in schedule.scopes if s.key in touched]

    def update_scope(self, key: int, targets: Sequence[Target]) -> tuple[int, int, int]:
        """UpdateTaskScheduleScope: the scope becomes ``targets``; racks kept keep their
        entry (and last task). Returns the counts added, removed, updated."""
        schedule = self.schedules[key]
        wanted = dict(targets)
        kept = [s for s in schedule.scopes if s.rack in wanted]
        updated = 0
        for scope in kept:
            if not _same_filter(scope.types, wanted[scope.rack]):
                scope.types = wanted[scope.rack]
                updated += 1
        racks = {s.rack for s in kept}
        added = [Scope(next(self._keys), r, t) for r, t in targets if r not in racks]
        removed = len(schedule.scopes) - len(kept)
        schedule.scopes = kept + added
        return len(added), removed, updated

    def remove_scope(self, key: int, scope_key: int) -> None:
        """RemoveTaskScheduleScope: never the last entry; its task goes on."""
        schedule = self.schedules[key]
        if len(schedule.scopes) <= 1:
            raise FailedPrecondition("scope_id: the schedule's last scope")
        schedule.scopes = [s for s in schedule.scopes if s.key != scope_key]

    # Firing

    def busy(self, scope: Scope) -> bool:
        """Whether the scope's last task is active (the overlap policy's question)."""
        return scope.last_task is not None and self.tasks[scope.last_task].status in ACTIVE

    def due(self, now: datetime) -> dict[int, datetime]:
        """The schedules due at ``now`` with their due times, oldest due first (ties by key)."""
        due = [
            (s.next_run_at, k)
            for k, s in self.schedules.items()
            if s.enabled and s.next_run_at is not None and s.next_run_at <= now
        ]
        return {k: at for at, k in sorted(due)}

    def fire_due(self, now: datetime, order: Sequence[int] | None = None) -> list[Fired]:
        """The dispatcher's poll at ``now``: every due schedule fires once, in ``order``
        (default :meth:`due`'s; the contract leaves the order of schedules due at the same
        instant open, so a caller may pass the one the service took).

        :raises ValueError: ``order`` is not the due schedules, oldest due first.
        """
        due = self.due(now)
        order = list(due if order is None else order)
        if sorted(order) != sorted(due) or [due[k] for k in order] != sorted(due.values()):
            raise ValueError(f"due, oldest first: {list(due)}; asked to fire {order}")
        return self._fire(order, now, manual=False)

    def trigger(self, key: int, now: datetime) -> Fired:
        """TriggerTaskSchedule: fires now, every scope, whatever the policy and enabled."""
        self._armable(key)
        return self._fire([key], now, manual=True)[0]

    def _fire(self, keys: Sequence[int], now: datetime, *, manual: bool) -> list[Fired]:
        """The three phases of a batch of firings: decide and advance every schedule, then
        submit each firing's scopes (earlier ones count for later ones), writing back."""
        decided = []
        for key in keys:
            schedule = self.schedules[key]
            skip = not manual and schedule.policy == OverlapPolicy.SKIP
            submit = {s.key for s in schedule.scopes if not (skip and self.busy(s))}
            decided.append((key, schedule, list(schedule.scopes), submit))
        for _, schedule, _, submit in decided:
            if schedule.spec_type == SpecType.ONE_TIME:
                schedule.enabled, schedule.next_run_at = False, None
                schedule.last_run_at = now
                continue
            schedule.next_run_at = next_after(schedule.spec_type, schedule.spec, now)
            if submit or manual:
                schedule.last_run_at = now
        fired = []
        for key, schedule, scopes, submit in decided:
            outcomes: list[tuple[int, str, int | None]] = []
            for scope in scopes:
                if scope.key not in submit:
                    outcomes.append((scope.key, "skipped", None))
                    continue
                result, task = self._submit(key, schedule.policy, scope, now)
                outcomes.append((scope.key, result, task))
            fired.append(Fired(key, outcomes))
        return fired

    def _submit(
        self, key: int, policy: OverlapPolicy, scope: Scope, now: datetime
    ) -> tuple[str, int | None]:
        """The task manager: a task blocked by an active task of its rack waits under
        queue (room allowing) and is refused otherwise."""
        covers = frozenset(scope.types or TYPES)
        on_rack = [t for t in self.tasks.values() if t.rack == scope.rack and t.status in ACTIVE]
        blocked = any(conflict(covers, t.covers) for t in on_rack)
        waiting = sum(t.status == TaskStatus.WAITING for t in on_rack)
        if not blocked:
            task = Task(scope.rack, scope.key, key, covers, TaskStatus.PENDING)
        elif policy == OverlapPolicy.QUEUE and waiting < MAX_WAITING:
            task = Task(scope.rack, scope.key, key, covers, TaskStatus.WAITING, now + QUEUE_TIMEOUT)
        else:
            return "failed", None
        task_key = next(self._keys)
        self.tasks[task_key] = task
        scope.last_task = task_key
        return ("submitted" if task.status == TaskStatus.PENDING else "queued"), task_key

    # Tasks

    def end(self, task_key: int, status: TaskStatus) -> None:
        """The rack controller's answer for a pending or running task: running,
        completed or failed."""
        task = self.tasks[task_key]
        if task.status not in _RUNNING_SET:
            raise ValueError(f"task {task_key} is {task.status}: its controller has no say")
        task.status = status

    def cancel(self, task_key: int) -> None:
        """CancelTask: an active task becomes terminated."""
        task = self.tasks[task_key]
        if task.status not in ACTIVE:
            raise FailedPrecondition(f"task_id: task {task_key} has already ended")
        task.status = TaskStatus.TERMINATED

    def queue_round(self, now: datetime) -> list[int]:
        """The task runner's round on the queues: waiting tasks past their timeout are
        terminated, then each rack promotes its waiting tasks in order until the first
        that conflicts with its running set. Returns the promoted tasks."""
        for task in self.tasks.values():
            expires = task.expires_at
            if task.status == TaskStatus.WAITING and expires is not None and expires <= now:
                task.status = TaskStatus.TERMINATED
        promoted = []
        for rack in sorted({t.rack for t in self.tasks.values()}):
            running = [
                t.covers for t in self.tasks.values() if t.rack == rack and t.status in _RUNNING_SET
            ]
            for key, task in self.tasks.items():
                if task.rack != rack or task.status != TaskStatus.WAITING:
                    continue
                if any(conflict(task.covers, other) for other in running):
                    break
                task.status = TaskStatus.PENDING
                running.append(task.covers)
                promoted.append(key)
        return promoted
