"""The SQL schema, as SQLAlchemy Core tables (the Alembic migrations create it).

Follows the reference schema (docs/spec/SEMANTICS.md "Schedule" and "Scope"): ``task_schedule``
with a partial index on ``next_run_at`` over enabled rows, ``task_schedule_scope``
unique on (schedule_id, rack_id) and deleted with its schedule, plus the
inventory (rack, component, NVL domain), the task outbox, the apply log and the audit
trail of changes made outside an apply (``rackcron.audit``).
Times are stored in UTC by :class:`UTCDateTime` and always read back aware.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect

from rackcron.domain.lifecycle import ACTIVE_STATUSES, status_values

__all__ = [
    "ACTIVE_STATUS_VALUES",
    "ACTIVE_TASK",
    "FAILED_TASK",
    "apply_lock",
    "apply_log",
    "audit_log",
    "component",
    "firing",
    "metadata",
    "missed_firing",
    "nvl_domain",
    "nvl_domain_rack",
    "rack",
    "sync_state",
    "task",
    "task_schedule",
    "task_schedule_scope",
]


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite keeps naive UTC text)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use aware UTC datetimes")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any]:
        """The usual conversion, remembering its last result: a batch binds the same
        ``now`` into every row it writes, and converting it (a SQLite datetime becomes
        text) once per row was a tenth of a firing's time."""
        convert = super().bind_processor(dialect)
        last: list[tuple[Any, Any]] = [(None, None)]

        def process(value: Any) -> Any:
            if value is None:
                return None
            seen, converted = last[0]  # one tuple: read and written atomically
            if value is not seen:
                converted = convert(value) if convert is not None else value
                last[0] = (value, converted)
            return converted

        return process

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_new_object = object.__new__
_set_slot = object.__setattr__
_UNKNOWN_SAFETY = uuid.SafeUUID.unknown  # an enum member: looked up once


def _uuid_from_hex(value: object) -> uuid.UUID | None:
    """A UUID from the 32 hex digits SQLite keeps, built directly: ``uuid.UUID(value)``
    checks and reshapes its argument, which dominated reads of thousands of rows (a
    roll-out's racks, a firing's scopes). Anything else goes through ``uuid.UUID``, and
    reads (or fails) as it always did."""
    if value is None:
        return None
    if type(value) is not str or len(value) != 32 or not (value.isascii() and value.isalnum()):
        return uuid.UUID(value)  # type: ignore[arg-type]  # as before: it says what is wrong
    found = _new_object(uuid.UUID)
    _set_slot(found, "int", int(value, 16))
    _set_slot(found, "is_safe", _UNKNOWN_SAFETY)
    return found


class Uuid(sa.Uuid[uuid.UUID]):
    """UUIDs, read back from SQLite's text faster (:func:`_uuid_from_hex`)."""

    cache_ok = True

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], Any] | None:
        if dialect.name == "sqlite" and self.as_uuid:
            return _uuid_from_hex
        found: Callable[[Any], Any] | None = super().result_processor(dialect, coltype)  # type: ignore[no-untyped-call]
        return found


JSON = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")

#: Task statuses that block a rack and count for the overlap check (``rackcron.domain.lifecycle``).
ACTIVE_STATUS_VALUES = status_values(ACTIVE_STATUSES)
#: The condition of the partial index of active tasks, as SQL text: a query that states it
#: in these words uses the index (SQLite proves implication only from the same terms).
ACTIVE_TASK = sa.text("status IN (" + ", ".join(f"'{v}'" for v in ACTIVE_STATUS_VALUES) + ")")
#: A task that ended without completing (the console's failures: History, the overview).
FAILED_TASK = sa.text("status IN ('failed', 'terminated')")

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
    }
)

rack = sa.Table(
    "rack",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, index=True),
    sa.Column("external_id", sa.String(255), nullable=True, unique=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("owner", sa.String(255), nullable=True),  # the repository that declares it
    sa.Column("controller", JSON, nullable=True),  # how to reach its controller; NULL: default
    sa.Column("labels", JSON, nullable=True),  # what freezes select it by; NULL: none
)

component = sa.Table(
    "component",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column("rack_id", Uuid, sa.ForeignKey("rack.id", ondelete="SET NULL"), index=True),
    sa.Column("type", sa.String(32), nullable=False),
    sa.Column("name", sa.String(255), nullable=False, default=""),
    sa.Column("external_id", sa.String(255), nullable=True, index=True),
    sa.Column("bmc_mac", sa.String(17), nullable=True, index=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)

# Every rack a component has been on (a row per placement, kept when it moves or goes):
# a task covers components of its own rack at submission, so ListTasks(component_id=...)
# reads only the tasks of these racks (migration 0021).
component_placement = sa.Table(
    "component_placement",
    metadata,
    sa.Column("component_id", Uuid, primary_key=True),
    sa.Column("rack_id", Uuid, primary_key=True),
)

nvl_domain = sa.Table(
    "nvl_domain",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, index=True),
    sa.Column("external_id", sa.String(255), nullable=True, unique=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("owner", sa.String(255), nullable=True),
)

nvl_domain_rack = sa.Table(
    "nvl_domain_rack",
    metadata,
    sa.Column(
        "domain_id", Uuid, sa.ForeignKey("nvl_domain.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("rack_id", Uuid, sa.ForeignKey("rack.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("ordinal", sa.Integer, nullable=False),
)

task_schedule = sa.Table(
    "task_schedule",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    sa.Column("spec_type", sa.String(16), nullable=False),
    sa.Column("spec", sa.Text, nullable=False),
    sa.Column("timezone", sa.String(64), nullable=False),
    sa.Column("operation_type", sa.String(64), nullable=False),
    sa.Column("operation_code", sa.String(64), nullable=False),
    sa.Column("operation_information", JSON, nullable=False),
    sa.Column("overlap_policy", sa.String(16), nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("next_run_at", UTCDateTime, nullable=True),
    sa.Column("last_run_at", UTCDateTime, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    # Management by a repository (reconciler): who owns it, where it is declared, whether
    # plans may delete or replace it, and its labels.
    sa.Column("owner", sa.String(255), nullable=True, index=True),
    sa.Column("source", sa.Text, nullable=True),
    sa.Column("protect", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("labels", JSON, nullable=True),
    # docs/spec/SEMANTICS.md "Starting deadline (beyond the reference)": the deadline as
    # declared (a Go duration; NULL: none), and the last missed firing: when, how late
    # (milliseconds), why ("deadline" or "freeze") and, for a freeze, its name.
    sa.Column("starting_deadline", sa.String(255), nullable=True),
    sa.Column("last_miss_at", UTCDateTime, nullable=True),
    sa.Column("last_miss_lateness_ms", sa.BigInteger, nullable=True),
    sa.Column("last_miss_reason", sa.String(32), nullable=True),
    sa.Column("last_miss_detail", sa.Text, nullable=True),
    # docs/spec/SEMANTICS.md "Spreading fire times": an interval schedule's anchor, and a
    # jitter as declared (a Go duration); NULL: none.
    sa.Column("anchor", UTCDateTime, nullable=True),
    sa.Column("jitter", sa.String(255), nullable=True),
    # docs/spec/SEMANTICS.md "Roll-outs": the declared policy (RolloutPolicy's JSON form)
    # and one operation's expected duration (a Go duration); NULL: none.
    sa.Column("rollout", JSON, nullable=True),
    sa.Column("expected_duration", sa.String(255), nullable=True),
    # The apply (apply_log.id) that last created or changed it; NULL: none since 0012, or
    # made through an RPC or the CLI.
    sa.Column(
        "applied_by",
        sa.Integer,
        sa.ForeignKey("apply_log.id", ondelete="SET NULL"),
        nullable=True,
    ),
    # The dispatcher's claim query filters `enabled = <true>`; the index condition is written
    # the same way so SQLite's planner matches it (docs/benchmarks.md "SQLite partial indexes").
    sa.Index(
        "ix_task_schedule_due",
        "next_run_at",
        sqlite_where=sa.text("enabled = 1 AND next_run_at IS NOT NULL"),
        postgresql_where=sa.text("enabled = true AND next_run_at IS NOT NULL"),
    ),
    sa.Index("ix_task_schedule_created", "created_at", "id"),
)

task = sa.Table(
    "task",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column(
        "schedule_id", Uuid, sa.ForeignKey("task_schedule.id", ondelete="SET NULL"), index=True
    ),
    # No foreign key: the overlap check must still see a task whose scope row changed.
    sa.Column("scope_id", Uuid, nullable=True),
    # No foreign key either: a task is history and outlives its rack's inventory entry.
    sa.Column("rack_id", Uuid, nullable=False),
    sa.Column("operation", sa.Text, nullable=False),  # an upgrade names its version: any length
    sa.Column("operation_type", sa.String(64), nullable=False),
    sa.Column("operation_code", sa.String(64), nullable=False),
    sa.Column("operation_information", JSON, nullable=False),
    sa.Column("component_uuids", JSON, nullable=False),
    # Each component's type at submission, parallel to component_uuids (the conflict
    # table reads it); NULL on tasks that had ended before migration 0005.
    sa.Column("component_types", JSON, nullable=True),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("message", sa.Text, nullable=False, default=""),
    sa.Column("queue_expires_at", UTCDateTime, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=True),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    # The task runner's bookkeeping (rackcron.service._delivery): failed controller calls
    # in a row, when the runner next has work on the task (NULL: none; also its lease),
    # and whether its controller still has to be told the task was cancelled.
    sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_check_at", UTCDateTime, nullable=True),
    sa.Column("cancel_pending", sa.Boolean, nullable=False, server_default=sa.false()),
    # Submitted by a trigger forced past a freeze window: no freeze holds it afterwards.
    sa.Column("forced", sa.Boolean, nullable=False, server_default=sa.false()),
    # The task's place in its rack's order of submission, counted by the submitter under
    # the rack's lock (rackcron.service._tasks): waiting tasks are promoted in this order,
    # whatever the submitters' clocks say. Only the order among a rack's active tasks
    # means anything.
    sa.Column("rack_seq", sa.BigInteger, nullable=False, server_default="0"),
    # The submitting schedule's name and labels at submission (NULL: no schedule, or a
    # task ended before migration 0013): what a freeze selecting schedules holds the task
    # by, whatever becomes of the schedule (docs/spec/SEMANTICS.md "Freeze windows").
    sa.Column("schedule_name", sa.String(255), nullable=True),
    sa.Column("schedule_labels", JSON, nullable=True),
    # The firing that submitted it (NULL: no firing, or before migration 0015) and that
    # firing's due time (the lag metrics measure from it). A scope gets at most one task
    # per firing, whoever completes the firing (docs/spec/SEMANTICS.md "Dispatch").
    sa.Column("firing_id", Uuid, nullable=True),
    sa.Column("due_at", UTCDateTime, nullable=True),
    # Why a terminated task ended, as a code (NULL: not terminated, or before 0018):
    # "expired" (past its queue timeout) or "cancelled" (CancelTask). A roll-out counts
    # the one as a failure and the other as a skip (docs/spec/SEMANTICS.md "Roll-outs").
    sa.Column("end_reason", sa.String(16), nullable=True),
    sa.Index("uq_task_firing_scope", "firing_id", "scope_id", unique=True),
    sa.Index("ix_task_rack_status", "rack_id", "status"),
    sa.Index("ix_task_scope_status", "scope_id", "status"),  # the overlap check
    sa.Index("ix_task_created", "created_at", "id"),
    sa.Index(
        "ix_task_next_check",
        "next_check_at",
        sqlite_where=sa.text("next_check_at IS NOT NULL"),
        postgresql_where=sa.text("next_check_at IS NOT NULL"),
    ),
    sa.Index(
        "ix_task_waiting",
        "rack_id",
        "created_at",
        sqlite_where=sa.text("status = 'waiting'"),
        postgresql_where=sa.text("status = 'waiting'"),
    ),
    # Task retention's oldest final tasks first (rackcron.domain.retention): only final tasks
    # have a finished time, and its `finished_at < cutoff` implies the index condition.
    # The failures newest first (History, the overview): few among many completed tasks.
    sa.Index(
        "ix_task_failed", "finished_at", sqlite_where=FAILED_TASK, postgresql_where=FAILED_TASK
    ),
    sa.Index(
        "ix_task_finished",
        "finished_at",
        sqlite_where=sa.text("finished_at IS NOT NULL"),
        postgresql_where=sa.text("finished_at IS NOT NULL"),
    ),
)

# ListTasks reads a page newest first (created_at descending, ties by id) straight off
# these, and counts the rows they hold (migration 0022): by rack (and, through the racks
# a component has been on, by component), and the active tasks only (a partial index
# whose condition the query states in the same words).
sa.Index("ix_task_rack_created", task.c.rack_id, task.c.created_at.desc(), task.c.id)
sa.Index(
    "ix_task_active",
    task.c.created_at.desc(),
    task.c.id,
    sqlite_where=ACTIVE_TASK,
    postgresql_where=ACTIVE_TASK,
)

task_schedule_scope = sa.Table(
    "task_schedule_scope",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column(
        "schedule_id",
        Uuid,
        sa.ForeignKey("task_schedule.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("rack_id", Uuid, sa.ForeignKey("rack.id"), nullable=False, index=True),
    sa.Column("component_filter", JSON, nullable=True),
    # Indexed: deleting a task (retention) looks up the scopes pointing at it.
    sa.Column("last_task_id", Uuid, sa.ForeignKey("task.id", ondelete="SET NULL"), index=True),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.UniqueConstraint("schedule_id", "rack_id"),
)

# One row while an apply runs: who holds the lock and since when.
# A firing recorded by phase 1 (docs/spec/SEMANTICS.md "Dispatch"): what it will submit,
# decided then, so that any replica can finish it should its own die or stall. Its
# operation, the schedule's name and labels, and the scopes it will submit ([scope id,
# rack id, component filter, forced] each) are copied: a later change of the schedule is
# for the next firing. Open while ``finished_at`` is NULL; ``lease_until``: until when
# the replica that claimed it has it to itself (then anyone may complete it);
# ``refused``: the scope ids the task manager refused in a completion that left others
# owed (their decision stands).
firing = sa.Table(
    "firing",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column(
        "schedule_id",
        Uuid,
        sa.ForeignKey("task_schedule.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("manual", sa.Boolean, nullable=False),
    sa.Column("due_at", UTCDateTime, nullable=False),
    sa.Column("fired_at", UTCDateTime, nullable=False),
    sa.Column("operation_type", sa.String(64), nullable=False),
    sa.Column("operation_code", sa.String(64), nullable=False),
    sa.Column("operation_information", JSON, nullable=False),
    sa.Column("overlap_policy", sa.String(16), nullable=False),
    sa.Column("schedule_name", sa.String(255), nullable=False),
    sa.Column("schedule_labels", JSON, nullable=True),
    sa.Column("scopes", JSON, nullable=False),
    sa.Column("refused", JSON, nullable=True),
    sa.Column("lease_until", UTCDateTime, nullable=True),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.Index(
        "ix_firing_open",
        "lease_until",
        sqlite_where=sa.text("finished_at IS NULL"),
        postgresql_where=sa.text("finished_at IS NULL"),
    ),
    # The overlap check asks whether a schedule has an open firing: finished records pile
    # up until retention prunes them, and are never read there.
    sa.Index(
        "ix_firing_open_schedule",
        "schedule_id",
        sqlite_where=sa.text("finished_at IS NULL"),
        postgresql_where=sa.text("finished_at IS NULL"),
    ),
    sa.Index(
        "ix_firing_finished",
        "finished_at",
        sqlite_where=sa.text("finished_at IS NOT NULL"),
        postgresql_where=sa.text("finished_at IS NOT NULL"),
    ),
    # The firings some of whose scopes the task manager refused, newest first (History).
    sa.Index(
        "ix_firing_refused",
        "fired_at",
        sqlite_where=sa.text("refused IS NOT NULL"),
        postgresql_where=sa.text("refused IS NOT NULL"),
    ),
)

# A firing of a schedule that declares a roll-out (docs/spec/SEMANTICS.md "Roll-outs"):
# recorded by phase 1 in place of a ``firing`` row, and advanced by any replica until it
# is final (``finished_at`` set). Its id is its tasks' ``firing_id``. What it starts is
# copied (the operation, the schedule's name and labels, the policy): a later change of
# the schedule is for the next firing. It outlives its schedule (no foreign key): a
# deleted schedule's roll-out ends, and stays readable until retention prunes it.
rollout = sa.Table(
    "rollout",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column("schedule_id", Uuid, nullable=False),
    sa.Column("schedule_name", sa.String(255), nullable=False),
    sa.Column("schedule_labels", JSON, nullable=True),
    sa.Column("manual", sa.Boolean, nullable=False),
    sa.Column("due_at", UTCDateTime, nullable=False),
    sa.Column("fired_at", UTCDateTime, nullable=False),
    sa.Column("operation_type", sa.String(64), nullable=False),
    sa.Column("operation_code", sa.String(64), nullable=False),
    sa.Column("operation_information", JSON, nullable=False),
    sa.Column("overlap_policy", sa.String(16), nullable=False),
    sa.Column("policy", JSON, nullable=False),  # the schedule's rollout, as recorded
    # Where it stands (rackcron.domain.rollouts.Rollout): its state, open wave, failure
    # budget and limits, a bake's end (bake_seconds NULL: manual), its cutoff.
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("wave", sa.Integer, nullable=False),
    sa.Column("budget", sa.Integer, nullable=False),
    sa.Column("in_flight", sa.Integer, nullable=False),
    sa.Column("per_group", sa.Integer, nullable=False),
    sa.Column("bake_seconds", sa.BigInteger, nullable=True),
    sa.Column("bake_until", UTCDateTime, nullable=True),
    sa.Column("cutoff_at", UTCDateTime, nullable=True),
    sa.Column("pause_reason", sa.String(32), nullable=True),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    # The freezes a forced trigger overrode ({"name", "until": its window's end}).
    sa.Column("overridden", JSON, nullable=True),
    sa.Column("bake_left_seconds", sa.BigInteger, nullable=True),  # a bake a pause stopped
    sa.Column("reported_state", sa.String(16), nullable=True),  # last announced; NULL: none
    sa.Index(
        "ix_rollout_open_schedule",
        "schedule_id",
        sqlite_where=sa.text("finished_at IS NULL"),
        postgresql_where=sa.text("finished_at IS NULL"),
    ),
    sa.Index(
        "ix_rollout_finished",
        "finished_at",
        sqlite_where=sa.text("finished_at IS NOT NULL"),
        postgresql_where=sa.text("finished_at IS NOT NULL"),
    ),
)

# One scope of a roll-out, in its order: its rack (name as at firing), component filter,
# wave and spread_by group ([kind, value]; NULL: no grouping), where it stands (stage,
# a reason code) and its task (id, final status).
rollout_scope = sa.Table(
    "rollout_scope",
    metadata,
    sa.Column(
        "rollout_id", Uuid, sa.ForeignKey("rollout.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("position", sa.Integer, primary_key=True),
    sa.Column("scope_id", Uuid, nullable=False),
    sa.Column("rack_id", Uuid, nullable=False),
    sa.Column("rack_name", sa.String(255), nullable=False),
    sa.Column("component_filter", JSON, nullable=True),
    sa.Column("wave", sa.Integer, nullable=False),
    sa.Column("group_key", JSON, nullable=True),
    sa.Column("stage", sa.String(16), nullable=False),
    sa.Column("reason", sa.String(32), nullable=True),
    sa.Column("task_id", Uuid, nullable=True),
    sa.Column("task_status", sa.String(16), nullable=True),
    sa.Column("started_at", UTCDateTime, nullable=True),
    sa.Column("ended_at", UTCDateTime, nullable=True),
)

freeze = sa.Table(
    "freeze",
    metadata,
    sa.Column("id", Uuid, primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    # A fixed window [start, end), or windows of duration_seconds at each cron time in timezone.
    sa.Column("start", UTCDateTime, nullable=True),
    sa.Column("end", UTCDateTime, nullable=True),
    sa.Column("cron", sa.String(255), nullable=True),
    sa.Column("duration_seconds", sa.Integer, nullable=True),
    sa.Column("timezone", sa.String(64), nullable=False),
    sa.Column("selector", JSON, nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("owner", sa.String(255), nullable=True, index=True),  # the repository declaring it
    sa.Column("source", sa.Text, nullable=True),
    sa.Column("protect", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("labels", JSON, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)

apply_lock = sa.Table(
    "apply_lock",
    metadata,
    sa.Column("name", sa.String(32), primary_key=True),
    sa.Column("holder", sa.Text, nullable=False),
    sa.Column("acquired_at", UTCDateTime, nullable=False),
)

apply_log = sa.Table(
    "apply_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("revision", sa.String(64), nullable=True),
    sa.Column("dirty", sa.Boolean, nullable=False, default=False),
    sa.Column("source", sa.Text, nullable=False, default=""),
    sa.Column("author", sa.String(255), nullable=False),
    sa.Column("applied_at", UTCDateTime, nullable=False),
    sa.Column("summary", JSON, nullable=False),
    # A remote apply's (RecordApply): who the server authenticated, beside the author the
    # client claims. NULL for a local apply, and for a remote one before 0014.
    sa.Column("token", sa.String(255), nullable=True),
    sa.Column("peer", sa.Text, nullable=True),
    # The repository (--owner) that applied it; NULL before 0024.
    sa.Column("owner", sa.String(255), nullable=True, index=True),
)

# The latest round of `rackcron sync` per repository (--owner): where it reads, the
# branch's revision it read (NULL: the fetch failed), and what came of it (0024).
sync_state = sa.Table(
    "sync_state",
    metadata,
    sa.Column("owner", sa.String(255), primary_key=True),
    sa.Column("remote", sa.Text, nullable=False),
    sa.Column("branch", sa.String(255), nullable=False),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("revision", sa.String(64), nullable=True),
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
    sa.Column("at", UTCDateTime, nullable=False),
)

# A firing the dispatcher decided not to fire (docs/spec/SEMANTICS.md "Starting deadline"):
# past its deadline, held by a freeze (once per freeze window: a schedule held again by the
# same window is not written again), or kept back by its unfinished roll-out. Written in
# the claim's transaction; it outlives its schedule (no foreign key), and retention
# prunes it with the firing records (0025).
missed_firing = sa.Table(
    "missed_firing",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("schedule_id", Uuid, nullable=False, index=True),
    sa.Column("schedule_name", sa.String(255), nullable=False),
    sa.Column("due_at", UTCDateTime, nullable=False),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("lateness_ms", sa.BigInteger, nullable=False),
    sa.Column("reason", sa.String(32), nullable=False),
    sa.Column("detail", sa.Text, nullable=True),
    sa.Index("ix_missed_firing_at", "at", "id"),
)

# One row per change made outside an apply, written in the change's own transaction
# (rackcron.audit): who (via, actor, peer, claimed), when, what (action, object, detail), why.
audit_log = sa.Table(
    "audit_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("object_kind", sa.String(32), nullable=False),
    sa.Column("object_id", sa.String(64), nullable=True),
    sa.Column("object_name", sa.Text, nullable=True),
    sa.Column("via", sa.String(16), nullable=False),
    sa.Column("actor", sa.String(255), nullable=True),
    sa.Column("peer", sa.Text, nullable=False),
    sa.Column("claimed", sa.String(255), nullable=True),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("detail", JSON, nullable=False),
    sa.Index("ix_audit_log_at", "at", "id"),
)
