"""The audit trail in the store: writing a change's record in its transaction, reading it back.

The rules of what is recorded are ``rackcron.audit``'s; :class:`~rackcron.service.Service`
calls :meth:`AuditOps.record_action` inside the transaction of each change it makes
outside an apply (docs/spec/SEMANTICS.md "Audit trail").
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from rackcron.audit import (
    DRIFT_ACTIONS,
    ActionRecord,
    Audit,
    AuditedChange,
    bounded,
    checked,
    local_actor,
)
from rackcron.domain.models import Schedule, Scope
from rackcron.errors import InvalidArgument, NotFound
from rackcron.history import KINDS, Entry, newest_first
from rackcron.service import _rows
from rackcron.service._applies import ApplyOps
from rackcron.service._base import check_page
from rackcron.service._failures import FailureOps
from rackcron.service._schedules import ScheduleOps
from rackcron.service._work import UnitOfWork
from rackcron.status import DRIFT_LISTED, OWNERS_LISTED, Status
from rackcron.store.tables import audit_log, task, task_schedule, task_schedule_scope

__all__ = ["MAX_DRIFT_READ", "AuditOps"]

#: Changes since the latest apply a status reads to count its drift (then "at least").
MAX_DRIFT_READ = 10_000


def _uuid(value: uuid.UUID | str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _record(row: Any) -> ActionRecord:
    return ActionRecord(
        id=row.id,
        at=row.at,
        action=row.action,
        object_kind=row.object_kind,
        object_id=row.object_id,
        object_name=row.object_name,
        via=row.via,
        actor=row.actor,
        peer=row.peer,
        claimed=row.claimed,
        reason=row.reason,
        detail=row.detail,
    )


@dataclass(frozen=True, slots=True)
class AuditOps:
    """The audit trail of changes made outside an apply, and the history of both."""

    work: UnitOfWork
    schedules: ScheduleOps
    applies: ApplyOps
    failures: FailureOps

    def record_action(self, audit: Audit | None, change: AuditedChange | None) -> None:
        """Append ``change``, made as ``audit`` says (None: by the local OS user, with no
        reason), to the audit trail, in this transaction; ``change`` None (the call
        changed nothing): nothing is recorded, but ``audit`` is still checked.

        :raises InvalidArgument: a name, claim or reason the rules refuse; the change
            is rolled back with the transaction.
        """
        audit = checked(audit) if audit is not None else Audit(local_actor())
        if change is None:
            return
        actor = audit.actor
        self.work.conn.execute(
            audit_log.insert().values(
                at=self.work.now,
                action=change.action.value,
                object_kind=change.kind,
                object_id=change.object_id,
                object_name=bounded(change.name),
                via=actor.via.value,
                actor=actor.name,
                peer=bounded(actor.peer),
                claimed=actor.claimed,
                reason=audit.reason,
                detail=bounded(dict(change.detail)),
            )
        )

    def list_actions(
        self,
        limit: int = 20,
        *,
        schedule_id: uuid.UUID | None = None,
        until: datetime | None = None,
    ) -> list[ActionRecord]:
        """The audit trail, newest first (``limit`` 0: all); the changes of one schedule
        alone when ``schedule_id`` is given; those made at ``until`` or before, if given."""
        query = sa.select(audit_log).order_by(audit_log.c.at.desc(), audit_log.c.id.desc())
        if until is not None:
            query = query.where(audit_log.c.at <= until)
        if schedule_id is not None:
            query = query.where(
                audit_log.c.object_kind == "schedule", audit_log.c.object_id == str(schedule_id)
            )
        if limit:
            query = query.limit(limit)
        return [_record(r) for r in self.work.conn.execute(query)]

    def schedule_changes_since(self, since: datetime | None, limit: int) -> list[ActionRecord]:
        """Changes of schedules made outside an apply (:data:`DRIFT_ACTIONS`) after
        ``since`` (None: ever), newest first, at most ``limit``."""
        query = sa.select(audit_log).where(
            audit_log.c.object_kind == "schedule",
            audit_log.c.action.in_([a.value for a in DRIFT_ACTIONS]),
        )
        if since is not None:
            query = query.where(audit_log.c.at > since)
        query = query.order_by(audit_log.c.at.desc(), audit_log.c.id.desc()).limit(limit)
        return [_record(r) for r in self.work.conn.execute(query)]

    def status(self, owner: str) -> Status:
        """``owner``'s sync status (``rackcron.status``): its latest apply, its latest sync
        round, and the changes outside an apply since to the schedules it manages now, or
        managed when they were deleted."""
        applied = self.applies.latest_apply(owner)
        since = applied.applied_at if applied is not None else None
        owned = {
            str(i)
            for i in self.work.conn.execute(
                sa.select(task_schedule.c.id).where(task_schedule.c.owner == owner)
            ).scalars()
        }
        changes = [
            c
            for c in self.schedule_changes_since(since, MAX_DRIFT_READ)
            if c.object_id in owned or (c.action == "delete" and c.detail.get("owner") == owner)
        ]
        owners = self.applies.owners(OWNERS_LISTED)
        return Status(owner, applied, self.applies.sync_state(owner), changes[:DRIFT_LISTED],
                      len(changes), tuple(owners))  # fmt: skip

    def history(
        self,
        limit: int = 20,
        *,
        kinds: Collection[str] = KINDS,
        schedule_id: uuid.UUID | None = None,
        offset: int = 0,
        until: datetime | None = None,
    ) -> list[Entry]:
        """Applies, the audit trail, failed tasks, missed firings and refused ones (``kinds``:
        ``rackcron.history.KINDS``) together, newest first (``limit`` 0: all), the first
        ``offset`` skipped; of one schedule alone when ``schedule_id`` is given (its
        actions, failures and misses: an apply is of a whole tree); only those at
        ``until`` or before when given (pages that later entries do not shift; a refusal,
        dated by its firing but told when the firing ends, can still join one).

        :raises InvalidArgument: a negative or too large ``limit`` or ``offset``.
        """
        check_page(offset, limit)
        wanted = limit + offset if limit else 0  # each kind's newest that many, merged
        entries: list[Entry] = []
        if "apply" in kinds and schedule_id is None:
            entries += self.applies.list_applies(wanted, until=until)
        if "action" in kinds:
            entries += self.list_actions(wanted, schedule_id=schedule_id, until=until)
        reads = self.failures
        if "failure" in kinds:
            entries += reads.failures(wanted, schedule_id=schedule_id, until=until)
        if "miss" in kinds:
            entries += reads.misses(wanted, schedule_id=schedule_id, until=until)
        if "refusal" in kinds:
            entries += reads.refusals(wanted, schedule_id=schedule_id, until=until)
        return newest_first(entries, wanted)[offset:]

    def peek_schedule(self, schedule_id: uuid.UUID | str) -> Schedule | None:
        """The schedule, its row locked, before a change that records what it changed;
        None when ``schedule_id`` is malformed or unknown (the change then says which,
        after its own checks: the order of its errors stays its own)."""
        try:
            return _rows.schedule(self.schedules.schedule_row(schedule_id, lock=True))
        except (InvalidArgument, NotFound):
            return None

    def peek_scope(self, scope_id: uuid.UUID | str) -> Scope | None:
        """A scope entry before its removal; None when ``scope_id`` is malformed or
        unknown (the removal says which)."""
        parsed = _uuid(scope_id)
        if parsed is None:
            return None
        row = self.work.conn.execute(
            sa.select(task_schedule_scope).where(task_schedule_scope.c.id == parsed)
        ).first()
        return None if row is None else _rows.scope(row)

    def task_status(self, task_id: uuid.UUID | str) -> str | None:
        """The status of a task before a cancel, None when ``task_id`` is malformed or
        unknown (the cancel says which)."""
        parsed = _uuid(task_id)
        if parsed is None:
            return None
        status: str | None = self.work.conn.execute(
            sa.select(task.c.status).where(task.c.id == parsed)
        ).scalar_one_or_none()
        return status
