"""Schedule lifecycle RPCs: create, get, list, update, pause, resume, delete, conflicts.

Rules: docs/spec/SEMANTICS.md "Schedule", "Spec types" and "RPCs". Each method runs inside
the caller's transaction; a raised error rolls the whole transaction back, which
is how "changes nothing" is kept (a rename collision included).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa

from rackcron.domain import rollouts, timing
from rackcron.domain.commands import CommandFailed, CreateSchedule
from rackcron.domain.filters import to_stored
from rackcron.domain.firing import parse_starting_deadline
from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.models import (
    Management,
    Operation,
    OverlapPolicy,
    Page,
    RolloutPolicy,
    Schedule,
    ScheduleConfig,
    TargetSpec,
    check_labels,
)
from rackcron.domain.targets import Resolved
from rackcron.domain.templates import check_rule_id, to_template
from rackcron.domain.text import MAX_LENGTH, MAX_SPEC_LENGTH, check_line
from rackcron.errors import (
    AlreadyExists,
    Conflict,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    RackcronError,
)
from rackcron.service import _rows
from rackcron.service._base import check_page, check_text, paged, parse_id, parse_set_id
from rackcron.service._names import near_names
from rackcron.service._targets import TargetOps
from rackcron.service._tasks import chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import task, task_schedule, task_schedule_scope

__all__ = [
    "BY_ID",
    "UPDATE_MASK_PATHS",
    "MetricsSchedule",
    "MetricsSchedules",
    "ScheduleOps",
    "insert_scopes",
    "not_found",
    "scope_rows",
]

# Built once: the hottest statement (GetTaskSchedule, and every write by id).
BY_ID = sa.select(task_schedule).where(task_schedule.c.id == sa.bindparam("id"))
_BY_ID_LOCKED = BY_ID.with_for_update()

UPDATE_MASK_PATHS = frozenset(
    {"schedule.name", "schedule.overlap_policy", "schedule.spec", "schedule.spec.timezone"}
)


class MetricsSchedule(NamedTuple):
    """What the per-schedule metrics show of one schedule."""

    id: uuid.UUID
    name: str
    enabled: bool
    next_run_at: datetime | None
    last_success_at: datetime | None  # the newest completed task's end; None: none kept


class MetricsSchedules(NamedTuple):
    """The schedules the per-schedule metrics show, and how many the store holds."""

    schedules: list[MetricsSchedule]
    total: int


#: The text an update writes, by mask path: (path, the field its message names, the value).
_MASKED_TEXT: tuple[tuple[str, str, Callable[[ScheduleConfig], str], int], ...] = (
    ("schedule.name", "schedule.name", lambda c: c.name, MAX_LENGTH),
    ("schedule.spec", "schedule.spec.spec", lambda c: c.spec, MAX_SPEC_LENGTH),
    ("schedule.spec.timezone", "schedule.spec.timezone", lambda c: c.timezone, MAX_LENGTH),
)


def _timezone(name: str) -> str:
    check_line(name, "schedule.spec.timezone")
    try:
        timing.parse_timezone(name)
    except timing.SpecError as exc:
        raise InvalidArgument(f"schedule.spec.timezone: {exc}") from None
    return name or "UTC"


def _spec(config: ScheduleConfig, timezone: str, *, stored: bool = False) -> timing.Spec:
    """The parsed spec; a ``stored`` one (re-read for a new zone) is not judged as text again."""
    if config.spec_type is None:
        raise InvalidArgument("schedule.spec.type is required")
    if not config.spec:
        raise InvalidArgument("schedule.spec.spec is required")
    if not stored:
        check_line(config.spec, "schedule.spec.spec", max_length=MAX_SPEC_LENGTH)
    try:
        return timing.parse_spec(config.spec_type, config.spec, timezone)
    except timing.SpecError as exc:
        raise InvalidArgument(f"schedule.spec.spec: {exc}") from None


def _management_values(management: Management) -> dict[str, Any]:
    check_text(management.owner, "management.owner")
    check_text(management.source, "management.source", max_length=4096)
    check_labels(management.labels, "management.labels")
    for key, value in management.labels.items():
        check_text(key, "management.labels", max_length=63)
        check_text(value, f"management.labels.{key}")
    return {
        "owner": management.owner,
        "source": management.source,
        "protect": management.protect,
        "labels": management.labels or None,
    }


def _starting_deadline(text: str | None) -> str | None:
    """A ``starting_deadline`` as stored (None: none).

    :raises InvalidArgument: not a Go duration of at least 1m.
    """
    if text is None:
        return None
    check_line(text, "starting_deadline")
    try:
        parse_starting_deadline(text)
    except timing.SpecError as exc:
        raise InvalidArgument(f"starting_deadline: {exc}") from None
    return text


def _rollout_values(rollout: RolloutPolicy | None, expected_duration: str | None) -> dict[str, Any]:
    """A schedule's roll-out policy and expected duration, as stored (docs/spec/SEMANTICS.md
    "Roll-outs").

    :raises InvalidArgument: naming the field (``rollout.waves``, ``expected_duration``, ...).
    """
    if expected_duration is not None:
        check_text(expected_duration, "expected_duration")
        try:
            rollouts.parse_span(expected_duration, "expected_duration")
        except rollouts.RolloutError as exc:
            raise InvalidArgument(f"expected_duration: {exc}") from None
    if rollout is None:
        return {"rollout": None, "expected_duration": expected_duration}
    texts = [
        ("max_in_flight", rollout.max_in_flight), ("max_failures", rollout.max_failures),
        ("bake", rollout.bake), ("spread_by", rollout.spread_by), ("cutoff", rollout.cutoff),
        *(("waves", w) for w in rollout.waves), *(("first.racks", r) for r in rollout.first.racks),
        *(pair for k, v in rollout.first.rack_labels.items()
          for pair in (("first.rack_labels", k), (f"first.rack_labels.{k}", v))),
    ]  # fmt: skip
    for field, text in texts:
        check_text(text, f"rollout.{field}")
    try:
        rollout.policy()
    except rollouts.RolloutError as exc:
        raise InvalidArgument(f"rollout.{exc.field}: {exc}") from None
    return {"rollout": rollout.model_dump(mode="json"), "expected_duration": expected_duration}


def _spread(spec: timing.Spec, anchor: str | datetime | None, jitter: str | None) -> timing.Spread:
    """A schedule's anchor and jitter, as they are stored (docs/spec/SEMANTICS.md
    "Spreading fire times").

    :raises InvalidArgument: naming ``anchor`` or ``jitter``: malformed, or not allowed
        on ``spec``.
    """
    if jitter is not None:
        check_line(jitter, "jitter")
    if isinstance(anchor, str):
        check_line(anchor, "anchor")
    try:
        return timing.parse_spread(spec, anchor, jitter)
    except timing.SpreadError as exc:
        raise InvalidArgument(f"{exc.field}: {exc}") from None


def _keeps_spread(spec: timing.Spec, row: Any) -> timing.Spread:
    """The stored anchor and jitter of ``row``, under its new ``spec``.

    :raises InvalidArgument: the spec does not allow them (a cron or one-time spec on an
        anchored schedule, a one-time spec on a jittered one): naming ``anchor`` or
        ``jitter``, which the Flow RPCs cannot change.
    """
    try:
        return timing.parse_spread(spec, row.anchor, row.jitter)
    except timing.SpreadError as exc:
        raise InvalidArgument(
            f"schedule.spec: the schedule's {exc.field} does not allow this spec ({exc});"
            f" clear its {exc.field} first (through rackcron: its tree, or the Reconciler"
            " service)"
        ) from None


def insert_scopes(
    work: UnitOfWork, schedule_id: uuid.UUID, resolved: Resolved, first_ordinal: int
) -> list[uuid.UUID]:
    """Insert one scope row per resolved rack; return their ids in order."""
    rows = scope_rows(work, schedule_id, resolved, first_ordinal)
    if rows:
        work.conn.execute(task_schedule_scope.insert(), rows)
    return [row["id"] for row in rows]


def scope_rows(
    work: UnitOfWork, schedule_id: uuid.UUID, resolved: Resolved, first_ordinal: int
) -> list[dict[str, Any]]:
    """A new ``task_schedule_scope`` row per resolved rack, in order."""
    return [
        {
            "id": uuid.uuid4(),
            "schedule_id": schedule_id,
            "rack_id": rack_id,
            "component_filter": to_stored(filt),
            "last_task_id": None,
            "ordinal": first_ordinal + i,
            "created_at": work.now,
        }
        for i, (rack_id, filt) in enumerate(resolved)
    ]


def _well_formed(config: ScheduleConfig) -> bool:
    """Whether ``config``'s name may be looked up (a bad one is refused at its turn)."""
    try:
        _name(config)
    except RackcronError:
        return False
    return True


def _name_taken(name: str) -> AlreadyExists:
    return AlreadyExists(f'schedule.name: a task schedule named "{name}" already exists')


def _id_taken(schedule_id: uuid.UUID | None) -> AlreadyExists:
    return AlreadyExists(f'id: a task schedule with id "{schedule_id}" already exists')


def not_found(schedule_id: uuid.UUID, field: str = "id") -> NotFound:
    return NotFound(f"{field}: task schedule {schedule_id} not found")


def _name(config: ScheduleConfig) -> str:
    if not config.name.strip():
        raise InvalidArgument("schedule.name is required")
    return check_text(config.name, "schedule.name")


#: The orders ``list_schedules`` knows, as the columns it sorts by (each ends with a key).
SCHEDULE_ORDERS = {
    "created": (task_schedule.c.created_at, task_schedule.c.id),
    "name": (task_schedule.c.name,),
    "next_run": (
        task_schedule.c.next_run_at.is_(None),
        task_schedule.c.next_run_at,
        task_schedule.c.name,
    ),
}


@dataclass(frozen=True, slots=True)
class ScheduleOps:
    """Task schedules: create, read, update, pause, resume, delete; their targets
    resolved through ``targets``."""

    work: UnitOfWork
    targets: TargetOps

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
    ) -> Schedule:
        """CreateTaskSchedule: the schedule and its initial scope, enabled, with its first run.

        ``management`` records the repository that manages it, ``starting_deadline``
        (a Go duration) bounds how late it may fire, ``anchor`` (RFC 3339) and
        ``jitter`` (a Go duration) spread its fire times, and ``rollout`` and
        ``expected_duration`` start its scopes in waves (reconciler only).

        :raises InvalidArgument: a missing or malformed field, operation, target,
            deadline, anchor, jitter or roll-out.
        :raises AlreadyExists: the name is taken.
        :raises NotFound: a target names an unknown rack, component or domain.
        """
        if operation is None:  # after the checks that come before it
            _name(config)
            spec = _spec(config, _timezone(config.timezone))
            _starting_deadline(starting_deadline)
            _spread(spec, anchor, jitter)
            _rollout_values(rollout, expected_duration)
            raise InvalidArgument("operation is required")
        command = CreateSchedule(
            schedule=config,
            operation=operation,
            management=management or Management(),
            starting_deadline=starting_deadline,
            anchor=anchor,
            jitter=jitter,
            rollout=rollout,
            expected_duration=expected_duration,
        )
        try:
            (schedule_id,) = self.create_schedules([command])
        except CommandFailed as failed:
            raise failed.error from None
        return self.get_schedule(schedule_id)

    def create_schedules(
        self, commands: Sequence[CreateSchedule], *, paused: Collection[str] = ()
    ) -> list[uuid.UUID]:
        """CreateTaskSchedule for each of ``commands``, in order, in a few statements: the
        inventory their targets name read at once, their rows inserted per table. Returns
        their ids. Those named in ``paused`` are created paused, as a PauseTaskSchedule
        right after would leave them.

        :raises CommandFailed: the first command refused (its index in ``commands``) and
            why (as :meth:`create_schedule` says); nothing of the batch is written.
        """
        resolve = self.targets.resolver([c.operation.target_spec for c in commands])
        taken = self._taken([c.schedule.name for c in commands if _well_formed(c.schedule)])
        taken_ids = self._taken_ids([c.id for c in commands if c.id is not None])
        schedules: list[dict[str, Any]] = []
        scopes: list[dict[str, Any]] = []
        for index, command in enumerate(commands):
            try:
                values, resolved = self._new_schedule(command, resolve, taken, taken_ids)
            except RackcronError as exc:
                raise CommandFailed(index, exc) from exc
            taken.add(values["name"])
            taken_ids.add(values["id"])
            values["enabled"] = values["name"] not in paused
            schedules.append(values)
            scopes += scope_rows(self.work, values["id"], resolved, first_ordinal=0)
        try:
            with self.work.conn.begin_nested():
                self.work.conn.execute(task_schedule.insert(), schedules)
                if scopes:
                    self.work.conn.execute(task_schedule_scope.insert(), scopes)
        except sa.exc.IntegrityError:
            # A concurrent create took a name between the check and the insert.
            now_taken = self._taken([c.schedule.name for c in commands])  # all well formed
            ids_taken = self._taken_ids([c.id for c in commands if c.id is not None])
            for index, command in enumerate(commands):
                if command.schedule.name in now_taken:
                    raise CommandFailed(index, _name_taken(command.schedule.name)) from None
                if command.id in ids_taken:
                    raise CommandFailed(index, _id_taken(command.id)) from None
            raise
        return [values["id"] for values in schedules]

    def _new_schedule(
        self,
        command: CreateSchedule,
        resolve: Callable[[TargetSpec | None], Resolved],
        taken: set[str],
        taken_ids: set[uuid.UUID],
    ) -> tuple[dict[str, Any], Resolved]:
        """The ``task_schedule`` row ``command`` creates, and its targets resolved.

        :raises RackcronError: as :meth:`create_schedule`, in the order it checks.
        """
        config = command.schedule
        name = _name(config)
        timezone = _timezone(config.timezone)
        spec = _spec(config, timezone)
        assert config.spec_type is not None  # _spec requires it
        deadline = _starting_deadline(command.starting_deadline)
        spread = _spread(spec, command.anchor, command.jitter)
        rollout_values = _rollout_values(command.rollout, command.expected_duration)
        template = to_template(command.operation)
        resolved = resolve(command.operation.target_spec)
        if name in taken:
            raise _name_taken(name)
        if command.id is not None and command.id.int == 0:
            raise InvalidArgument("id: must not be the nil UUID")
        if command.id in taken_ids:
            raise _id_taken(command.id)
        values = {
            "id": command.id or uuid.uuid4(),
            "name": name,
            "spec_type": config.spec_type.value,
            "spec": config.spec,
            "timezone": timezone,
            "operation_type": template.type,
            "operation_code": template.code,
            "operation_information": template.information,
            "overlap_policy": (config.overlap_policy or OverlapPolicy.SKIP).value,
            "enabled": True,
            "next_run_at": timing.first_fire(spec, spread, name, self.work.now),
            "last_run_at": None,
            "created_at": self.work.now,
            "updated_at": self.work.now,
            "starting_deadline": deadline,
            "anchor": spread.anchor,
            "jitter": command.jitter,
            **rollout_values,
            **_management_values(command.management),
        }
        return values, resolved

    def _taken(self, names: Sequence[str]) -> set[str]:
        """Those of ``names`` that a stored schedule has."""
        taken: set[str] = set()
        for chunk in chunked(sorted(set(names))):
            query = sa.select(task_schedule.c.name).where(task_schedule.c.name.in_(chunk))
            taken.update(self.work.conn.execute(query).scalars())
        return taken

    def _taken_ids(self, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """Those of ``ids`` that a stored schedule has."""
        taken: set[uuid.UUID] = set()
        for chunk in chunked(sorted(set(ids))):
            query = sa.select(task_schedule.c.id).where(task_schedule.c.id.in_(chunk))
            taken.update(self.work.conn.execute(query).scalars())
        return taken

    def _schedule_id_by_name(self, name: str) -> uuid.UUID | None:
        return self.work.conn.execute(
            sa.select(task_schedule.c.id).where(task_schedule.c.name == name)
        ).scalar_one_or_none()

    def schedule_row(
        self, schedule_id: uuid.UUID | str, *, lock: bool = False, field: str = "id"
    ) -> Any:
        """The schedule's row (locked FOR UPDATE when ``lock``).

        :raises NotFound: no such schedule.
        """
        schedule_id = parse_id(schedule_id, field)
        query = _BY_ID_LOCKED if lock else BY_ID
        row = self.work.conn.execute(query, {"id": schedule_id}).first()
        if row is None:
            raise not_found(schedule_id, field)
        return row

    def get_schedule(self, schedule_id: uuid.UUID | str) -> Schedule:
        """GetTaskSchedule. :raises NotFound: no such schedule."""
        return _rows.schedule(self.schedule_row(schedule_id))

    def find_schedule(self, name: str) -> Schedule:
        """The schedule called ``name``. :raises NotFound: no such schedule."""
        row = self.work.conn.execute(
            sa.select(task_schedule).where(task_schedule.c.name == name)
        ).first()
        if row is None:
            near = near_names(self.work, task_schedule.c.name, name)
            raise NotFound(f'task schedule "{name}" not found', suggestions=near)
        return _rows.schedule(row)

    def list_schedules(
        self,
        *,
        rack_id: uuid.UUID | str | None = None,
        enabled_only: bool = False,
        offset: int = 0,
        limit: int = 0,
        order: str = "created",
    ) -> Page[Schedule]:
        """ListTaskSchedules, by created_at then id (``order``: or by ``name``, or by
        ``next_run``, the soonest first, those that will not fire last, then by name);
        ``total`` counts before paging.

        :raises InvalidArgument: a rack_id that is empty, malformed or the nil UUID, a
            negative offset or limit, or an unknown order.
        """
        if order not in SCHEDULE_ORDERS:
            raise InvalidArgument(f"order: one of {', '.join(SCHEDULE_ORDERS)}, got {order!r}")
        check_page(offset, limit)
        query = sa.select(task_schedule)
        if rack_id is not None:
            scoped = sa.select(task_schedule_scope.c.id).where(
                task_schedule_scope.c.schedule_id == task_schedule.c.id,
                task_schedule_scope.c.rack_id == parse_set_id(rack_id, "rack_id"),
            )
            query = query.where(scoped.exists())
        if enabled_only:
            query = query.where(task_schedule.c.enabled == sa.true())
        total = self.work.count(query)
        query = paged(query.order_by(*SCHEDULE_ORDERS[order]), offset, limit)
        rows: Iterable[Any] = self.work.conn.execute(query) if limit else self.work.rows(query)
        return Page[Schedule](items=[_rows.schedule(r) for r in rows], total=total)

    def schedule_states(self, limit: int) -> MetricsSchedules:
        """The first ``limit`` schedules by created_at then id, each with its next run and
        its last success (the newest completed task still in the store), and how many
        schedules there are: one statement, for the per-schedule metrics.

        :raises InvalidArgument: a negative or too large ``limit``.
        """
        check_page(0, limit)
        last_success = (
            sa.select(sa.func.max(task.c.finished_at))
            .where(task.c.schedule_id == task_schedule.c.id, task.c.status == TaskStatus.COMPLETED)
            .scalar_subquery()
        )
        total = sa.select(sa.func.count()).select_from(task_schedule).scalar_subquery()
        query = (
            sa.select(
                task_schedule.c.id,
                task_schedule.c.name,
                task_schedule.c.enabled,
                task_schedule.c.next_run_at,
                last_success.label("last_success_at"),
                total.label("total"),
            )
            .order_by(task_schedule.c.created_at, task_schedule.c.id)
            .limit(limit)
        )
        rows = self.work.conn.execute(query).all()
        states = [
            MetricsSchedule(r.id, r.name, r.enabled, r.next_run_at, r.last_success_at) for r in rows
        ]
        return MetricsSchedules(states, rows[0].total if rows else 0)

    def update_schedule(
        self, schedule_id: uuid.UUID | str, config: ScheduleConfig, update_mask: Sequence[str]
    ) -> Schedule:
        """UpdateTaskSchedule: write the masked fields only.

        :raises InvalidArgument: empty mask, unknown path, bad name/spec/timezone.
        :raises FailedPrecondition: a spec change on a consumed one-time schedule.
        :raises Conflict: the new name is taken (UNKNOWN; nothing is changed).
        """
        if not update_mask:
            raise InvalidArgument("update_mask is required")
        unknown = sorted(set(update_mask) - UPDATE_MASK_PATHS)
        if unknown:
            raise InvalidArgument(
                f"update_mask: unsupported path {unknown[0]!r}; allowed: {', '.join(sorted(UPDATE_MASK_PATHS))}"
            )
        if "schedule.spec.timezone" in update_mask and not config.spec_given:
            # Never read as "" (UTC): the reference refuses it too (docs/spec/flow-wire.md
            # "5. Deliberate differences from the reference implementation").
            raise InvalidArgument(
                "schedule.spec.timezone: the update mask names it but the request has no"
                " schedule.spec"
            )
        for path, field, text, length in _MASKED_TEXT:  # before the row is read and locked
            if path in update_mask:
                check_line(text(config), field, max_length=length)
        row = self.schedule_row(schedule_id, lock=True)
        current = _rows.schedule(row)
        values: dict[str, Any] = {}
        if "schedule.name" in update_mask:
            values["name"] = _name(config)
        if "schedule.overlap_policy" in update_mask:
            values["overlap_policy"] = (config.overlap_policy or OverlapPolicy.SKIP).value
        timezone = row.timezone
        if "schedule.spec.timezone" in update_mask:
            timezone = values["timezone"] = _timezone(config.timezone)
        if "schedule.spec" in update_mask:
            if current.consumed:
                raise FailedPrecondition(
                    f"schedule.spec: task schedule {row.id} is a consumed one-time schedule: its spec cannot"
                    " change; create a new schedule"
                )
            spec = _spec(config, timezone)
            assert config.spec_type is not None  # _spec requires it
            values.update(spec_type=config.spec_type.value, spec=config.spec)
            rearm: timing.Spec | None = spec
        elif ("timezone" in values and row.spec_type == timing.SpecType.CRON) or (
            row.jitter is not None and values.get("name", row.name) != row.name
        ):  # a cron in another zone; a jittered schedule renamed: its jitter moves
            stored = ScheduleConfig(spec_type=row.spec_type, spec=row.spec)
            rearm = _spec(stored, timezone, stored=True)
        else:
            rearm = None
        if rearm is not None and not current.consumed:
            name = values.get("name", row.name)
            spread = _keeps_spread(rearm, row)
            values["next_run_at"] = timing.first_fire(
                rearm, spread, name, self.work.now, row.last_run_at
            )
        taken = "name" in values and values["name"] != row.name
        if taken and self._schedule_id_by_name(values["name"]) is not None:
            raise Conflict(
                f'schedule.name: a task schedule named "{values["name"]}" already exists'
            )
        if values:
            values["updated_at"] = self.work.now
            try:
                with self.work.conn.begin_nested():
                    self.work.conn.execute(
                        task_schedule.update().where(task_schedule.c.id == row.id).values(**values)
                    )
            except sa.exc.IntegrityError as exc:
                raise Conflict(
                    f'schedule.name: a task schedule named "{values.get("name")}" already exists'
                ) from exc
        return self.get_schedule(row.id)

    def pause_schedule(self, schedule_id: uuid.UUID | str) -> Schedule:
        """PauseTaskSchedule: enabled = false, next_run_at kept; a no-op when paused.

        :raises FailedPrecondition: the schedule is a consumed one-time schedule.
        """
        return self._set_enabled(schedule_id, enabled=False)

    def resume_schedule(self, schedule_id: uuid.UUID | str) -> Schedule:
        """ResumeTaskSchedule: enabled = true; interval and cron restart from now.

        A one-time schedule keeps its instant. Resuming an enabled schedule also
        recomputes next_run_at (docs/spec/SEMANTICS.md "RPCs").

        :raises FailedPrecondition: the schedule is a consumed one-time schedule.
        """
        return self._set_enabled(schedule_id, enabled=True)

    def _set_enabled(self, schedule_id: uuid.UUID | str, *, enabled: bool) -> Schedule:
        row = self.schedule_row(schedule_id, lock=True)
        current = _rows.schedule(row)
        if current.consumed:
            verb = "pause" if not enabled else "resume"
            raise FailedPrecondition(
                f"id: task schedule {row.id} is a one-time schedule that has already fired: nothing to {verb}"
            )
        if not enabled and not current.enabled:
            return current  # pausing a paused schedule is a no-op; resume always restarts
        values: dict[str, Any] = {"enabled": enabled, "updated_at": self.work.now}
        if enabled and current.spec_type != timing.SpecType.ONE_TIME:
            spec = timing.parse_spec(row.spec_type, row.spec, row.timezone)
            values["next_run_at"] = timing.first_fire(
                spec, current.spread, row.name, self.work.now, row.last_run_at
            )
        self.work.conn.execute(
            task_schedule.update().where(task_schedule.c.id == row.id).values(**values)
        )
        return self.get_schedule(row.id)

    def delete_schedule(self, schedule_id: uuid.UUID | str) -> None:
        """DeleteTaskSchedule: the schedule and its scope; tasks are kept and not cancelled.

        :raises NotFound: no such schedule.
        """
        row = self.schedule_row(schedule_id, lock=True)
        self.work.conn.execute(
            task_schedule_scope.delete().where(task_schedule_scope.c.schedule_id == row.id)
        )
        self.work.conn.execute(task_schedule.delete().where(task_schedule.c.id == row.id))

    def set_management(self, schedule_id: uuid.UUID | str, management: Management) -> Schedule:
        """Record which repository manages the schedule, its source, protection and labels.

        :raises NotFound: no such schedule.
        """
        values = _management_values(management)  # checked before the row is read and locked
        row = self.schedule_row(schedule_id, lock=True)
        self.work.conn.execute(
            task_schedule.update()
            .where(task_schedule.c.id == row.id)
            .values(**values, updated_at=self.work.now)
        )
        return self.get_schedule(row.id)

    def set_starting_deadline(
        self, schedule_id: uuid.UUID | str, starting_deadline: str | None
    ) -> Schedule:
        """Set the schedule's ``starting_deadline`` (None: it fires however late).

        :raises InvalidArgument: not a Go duration of at least 1m.
        :raises NotFound: no such schedule.
        """
        deadline = _starting_deadline(starting_deadline)  # checked before the row is locked
        row = self.schedule_row(schedule_id, lock=True)
        self.work.conn.execute(
            task_schedule.update()
            .where(task_schedule.c.id == row.id)
            .values(starting_deadline=deadline, updated_at=self.work.now)
        )
        return self.get_schedule(row.id)

    def set_spread(
        self, schedule_id: uuid.UUID | str, anchor: str | None, jitter: str | None
    ) -> Schedule:
        """Set the schedule's ``anchor`` and ``jitter`` (None: none) and, unless it is a
        one-time schedule, its next run from now with them (docs/spec/SEMANTICS.md
        "Spreading fire times").

        :raises InvalidArgument: naming ``anchor`` or ``jitter``: malformed, or not
            allowed on the schedule's spec.
        :raises NotFound: no such schedule.
        """
        row = self.schedule_row(schedule_id, lock=True)
        spec = timing.parse_spec(row.spec_type, row.spec, row.timezone)
        spread = _spread(spec, anchor, jitter)
        values: dict[str, Any] = {"anchor": spread.anchor, "jitter": jitter}
        if not isinstance(spec, timing.OneTime):
            values["next_run_at"] = timing.first_fire(
                spec, spread, row.name, self.work.now, row.last_run_at
            )
        self.work.conn.execute(
            task_schedule.update()
            .where(task_schedule.c.id == row.id)
            .values(**values, updated_at=self.work.now)
        )
        return self.get_schedule(row.id)

    def set_rollout(
        self,
        schedule_id: uuid.UUID | str,
        rollout: RolloutPolicy | None,
        expected_duration: str | None,
    ) -> Schedule:
        """Set the schedule's roll-out policy and expected duration (None: none). Its next
        firing follows them; a roll-out already running keeps the policy it was recorded
        with (docs/spec/SEMANTICS.md "Roll-outs").

        :raises InvalidArgument: naming the field that breaks a rule.
        :raises NotFound: no such schedule.
        """
        row = self.schedule_row(schedule_id, lock=True)
        values = _rollout_values(rollout, expected_duration)
        self.work.conn.execute(
            task_schedule.update()
            .where(task_schedule.c.id == row.id)
            .values(**values, updated_at=self.work.now)
        )
        return self.get_schedule(row.id)

    def check_conflicts(
        self, operation: Operation | None, exclude_schedule_id: uuid.UUID | str | None = None
    ) -> list[Schedule]:
        """CheckScheduleConflicts: enabled schedules with a scope on one of the operation's racks.

        Coarse by design: operation types and component filters are not compared. Every
        id of the request (rule_id, exclude_schedule_id, the targets') is checked before
        any inventory lookup.

        :raises InvalidArgument: a missing operation; a rule_id or exclude_schedule_id
            that is empty, malformed or the nil UUID; a malformed target.
        :raises NotFound: a target names an unknown rack, component or domain.
        """
        if operation is None:
            raise InvalidArgument("operation is required")
        check_rule_id(operation)
        excluded = (
            None
            if exclude_schedule_id is None
            else parse_set_id(exclude_schedule_id, "exclude_schedule_id")
        )
        rack_ids = [rack_id for rack_id, _ in self.targets.resolve_targets(operation.target_spec)]
        scoped = sa.select(task_schedule_scope.c.id).where(
            task_schedule_scope.c.schedule_id == task_schedule.c.id,
            task_schedule_scope.c.rack_id.in_(rack_ids),
        )
        query = sa.select(task_schedule).where(
            task_schedule.c.enabled == sa.true(), scoped.exists()
        )
        if excluded is not None:
            query = query.where(task_schedule.c.id != excluded)
        query = query.order_by(task_schedule.c.created_at, task_schedule.c.id)
        return [_rows.schedule(r) for r in self.work.conn.execute(query)]
