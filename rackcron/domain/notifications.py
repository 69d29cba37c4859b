"""Notification events: what ``rackcron serve``, ``apply`` and ``sync`` tell a webhook.

Theory. A notification is a value: a kind (:class:`EventKind`), the instant it happened,
its kind's fields and a Slack-compatible ``text``, built by one pure function per
kind from plain values (ids, names, messages) and ``at``. :meth:`Notification.body`
is the exact JSON a webhook receives, and the one its signature is computed over.
Delivery (queues, retries, HTTP, signing) is ``rackcron.dispatcher.notify``'s; who
emits what, and when, is the caller's: always after the change it reports has
committed, by the process that made it, so each change is told once however many
replicas run.

The format is versioned like every contract of rackcron (docs/notifications.md,
``schemas/notifications/v1/event.schema.json``): ``version`` is :data:`VERSION`,
which changes only for a change a receiver must handle (a field removed or its
meaning changed); a new kind or a new field is added within version 1, and a
receiver ignores what it does not know.

Every value in ``text`` comes from outside (names, messages, controller answers), so
each is placed through ``rackcron.domain.escape.chat`` (Slack mrkdwn) after
``rackcron.domain.escape.shorten``; only the program's own words, numbers and instants are
written as they are. The other fields carry each value exactly: JSON escapes what it
must.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal

from rackcron.domain.escape import chat, shorten
from rackcron.domain.lifecycle import Event
from rackcron.domain.models import MissReason
from rackcron.domain.timing import format_rfc3339
from rackcron.domain.words import counted

__all__ = [
    "FAILURE_REASONS",
    "ROLLOUT_STAGES",
    "VERSION",
    "ApplyOrigin",
    "ApplyOutcome",
    "EventKind",
    "FailureReason",
    "Notification",
    "TaskRef",
    "apply_applied",
    "apply_failed",
    "controller_unreachable",
    "firing_missed",
    "firing_skipped",
    "rollout_event",
    "task_expired",
    "task_failed",
]

#: The format's major version: a receiver checks it, and ignores kinds and fields it does
#: not know.
VERSION = 1


class EventKind(StrEnum):
    """What happened; the value is the event's ``kind``."""

    TASK_FAILED = "task.failed"
    TASK_EXPIRED = "task.expired"
    FIRING_MISSED = "firing.missed"
    FIRING_SKIPPED = "firing.skipped"
    CONTROLLER_UNREACHABLE = "controller.unreachable"
    APPLY_APPLIED = "apply.applied"
    APPLY_FAILED = "apply.failed"
    ROLLOUT_STARTED = "rollout.started"
    ROLLOUT_WAVE_DONE = "rollout.wave_done"
    ROLLOUT_HALTED = "rollout.halted"
    ROLLOUT_COMPLETED = "rollout.completed"
    ROLLOUT_EXPIRED = "rollout.expired"
    ROLLOUT_ABORTED = "rollout.aborted"


#: What each roll-out event says happened, in its text.
_ROLLOUT_WORDS = {
    EventKind.ROLLOUT_STARTED: "started",
    EventKind.ROLLOUT_WAVE_DONE: "wave done",
    EventKind.ROLLOUT_HALTED: "halted",
    EventKind.ROLLOUT_COMPLETED: "completed",
    EventKind.ROLLOUT_EXPIRED: "expired",
    EventKind.ROLLOUT_ABORTED: "aborted",
}
#: The stages a roll-out event counts its racks by.
ROLLOUT_STAGES = ("completed", "failed", "active", "waiting", "skipped", "not_started")


class FailureReason(StrEnum):
    """Why a task failed (``task.failed``'s ``reason``)."""

    FAILED = "failed"  # its controller reported the operation failed
    FORGOTTEN = "forgotten"  # its controller no longer knows it
    RETRIES_EXHAUSTED = "retries_exhausted"  # its controller did not answer, every attempt
    REFUSED = "refused"  # the server will not call its controller
    RACK_GONE = "rack_gone"  # its rack left the inventory


#: The lifecycle event that failed a task -> the reason a notification gives.
FAILURE_REASONS: Mapping[Event, FailureReason] = MappingProxyType(
    {
        Event.FAILED: FailureReason.FAILED,
        Event.FORGOTTEN: FailureReason.FORGOTTEN,
        Event.RETRIES_EXHAUSTED: FailureReason.RETRIES_EXHAUSTED,
        Event.REFUSED: FailureReason.REFUSED,
        Event.RACK_GONE: FailureReason.RACK_GONE,
    }
)


ApplyOrigin = Literal["apply", "sync"]
ApplyOutcome = Literal["failed", "refused", "invalid"]


@dataclass(frozen=True)
class Notification:
    """One event: :meth:`to_json` is what a webhook receives."""

    kind: EventKind
    at: datetime
    fields: Mapping[str, Any]  # the kind's own fields, JSON-ready
    text: str  # Slack mrkdwn, every value in it escaped
    id: uuid.UUID = field(default_factory=uuid.uuid4)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "kind": self.kind.value,
            "id": str(self.id),
            "at": format_rfc3339(self.at),
            **self.fields,
            "text": self.text,
        }

    def body(self) -> bytes:
        """The request body: compact JSON, ASCII (any character is an escape)."""
        return json.dumps(self.to_json(), separators=(",", ":")).encode("ascii")


@dataclass(frozen=True)
class TaskRef:
    """What a notification says of a task."""

    id: uuid.UUID
    rack_id: uuid.UUID
    rack: str | None  # the rack's name; None: no longer in the inventory
    schedule_id: uuid.UUID | None
    schedule: str | None  # the schedule's name; None: none, or deleted
    operation_type: str  # the Flow wire's texts: operation_type and description
    description: str
    operation_name: str  # the tree's name (power_reset)
    operation_text: str  # as every view says it (power reset (forced))
    status: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "rack_id": str(self.rack_id),
            "rack": self.rack,
            "schedule_id": None if self.schedule_id is None else str(self.schedule_id),
            "schedule": self.schedule,
            "operation_type": self.operation_type,
            "description": self.description,
            "operation_name": self.operation_name,
            "operation_text": self.operation_text,
            "status": self.status,
            "message": self.message,
        }


def _v(value: str) -> str:
    """A value from outside, as ``text`` shows it."""
    return chat(shorten(value))


def _rack(task: TaskRef) -> str:
    return (
        _v(task.rack) if task.rack is not None else f"{task.rack_id} (no longer in the inventory)"
    )


def _schedule(task: TaskRef) -> str:
    if task.schedule is not None:
        return f"schedule {_v(task.schedule)}"
    return "no schedule" if task.schedule_id is None else f"schedule {task.schedule_id} (deleted)"


def task_failed(task: TaskRef, reason: FailureReason, *, at: datetime) -> Notification:
    """``task.failed``: the task ended ``failed``."""
    text = (
        f"*rackcron: task failed* ({reason.value.replace('_', ' ')}):"
        f" {_v(task.operation_text)}, rack"
        f" {_rack(task)}, {_schedule(task)}: {_v(task.message)}"
    )
    return Notification(
        EventKind.TASK_FAILED, at, {"task": task.to_json(), "reason": reason.value}, text
    )


def task_expired(task: TaskRef, *, at: datetime) -> Notification:
    """``task.expired``: a waiting task's queue timeout passed; it ended ``terminated``."""
    text = (
        f"*rackcron: queued task expired*: {_v(task.operation_text)}, rack {_rack(task)},"
        f" {_schedule(task)}, waited past its queue timeout and was terminated"
    )
    return Notification(
        EventKind.TASK_EXPIRED, at, {"task": task.to_json(), "reason": "expired"}, text
    )


def _schedule_json(schedule_id: uuid.UUID, name: str) -> dict[str, str]:
    return {"id": str(schedule_id), "name": name}


def firing_missed(
    schedule_id: uuid.UUID,
    name: str,
    *,
    due_at: datetime,
    at: datetime,
    reason: MissReason,
    starting_deadline: str | None = None,
    freeze: str | None = None,
    rollout: str | None = None,
) -> Notification:
    """``firing.missed``: a firing due at ``due_at`` and judged at ``at`` submitted nothing
    (docs/spec/SEMANTICS.md "Starting deadline", "Freeze windows" and "Roll-outs"): later
    than ``starting_deadline``, inside freeze ``freeze``, or while roll-out ``rollout``
    of the schedule was unfinished (then the field ``rollout`` names it)."""
    lateness = (at - due_at).total_seconds()
    if reason is MissReason.DEADLINE:
        deadline = "" if starting_deadline is None else f" of {_v(starting_deadline)}"
        why = f"{lateness:.0f}s late, past its starting deadline{deadline}"
    elif reason is MissReason.ROLLOUT:
        why = "its roll-out" + ("" if rollout is None else f" {_v(rollout)}") + " is unfinished"
    else:
        why = "inside a freeze window" if freeze is None else f"inside freeze {_v(freeze)}"
    text = (
        f"*rackcron: firing missed* ({reason.value}): schedule {_v(name)}, due"
        f" {format_rfc3339(due_at)}, fired no task: {why}"
    )
    fields = {
        "schedule": _schedule_json(schedule_id, name),
        "reason": reason.value,
        "due_at": format_rfc3339(due_at),
        "lateness_seconds": lateness,
        "starting_deadline": starting_deadline,
        "freeze": freeze,
        **({"rollout": rollout} if reason is MissReason.ROLLOUT else {}),
    }
    return Notification(EventKind.FIRING_MISSED, at, fields, text)


def firing_skipped(
    schedule_id: uuid.UUID,
    name: str,
    *,
    due_at: datetime | None,
    at: datetime,
    rack_ids: Sequence[uuid.UUID],
) -> Notification:
    """``firing.skipped``: a firing under the skip policy found every scope busy (on
    ``rack_ids``) and submitted nothing."""
    due = "" if due_at is None else f", due {format_rfc3339(due_at)},"
    busy = "its rack was" if len(rack_ids) == 1 else f"all {len(rack_ids)} of its racks were"
    text = (
        f"*rackcron: firing skipped*: schedule {_v(name)}{due} fired no task: {busy} busy"
        " with an earlier task (overlap policy skip)"
    )
    fields = {
        "schedule": _schedule_json(schedule_id, name),
        "reason": "busy",
        "due_at": None if due_at is None else format_rfc3339(due_at),
        "lag_seconds": 0.0 if due_at is None else (at - due_at).total_seconds(),
        "rack_ids": [str(r) for r in rack_ids],
    }
    return Notification(EventKind.FIRING_SKIPPED, at, fields, text)


def rollout_event(
    kind: EventKind,
    rollout_id: uuid.UUID,
    schedule_id: uuid.UUID,
    name: str,
    *,
    state: str,
    wave: int | None,
    stages: Mapping[str, int],
    at: datetime,
) -> Notification:
    """``rollout.*``: a roll-out of schedule ``name`` started, ended a wave (``wave``,
    from 1), halted (more failures than its budget), completed, expired (its cutoff) or
    was aborted (docs/spec/SEMANTICS.md "Roll-outs"); ``stages``: its racks by stage."""
    counts = {stage: int(stages.get(stage, 0)) for stage in ROLLOUT_STAGES}
    what = _ROLLOUT_WORDS[kind] + (f" (wave {wave})" if wave is not None else "")
    text = (
        f"*rackcron: roll-out {what}*: schedule {_v(name)}, roll-out {rollout_id}:"
        f" {counts['completed']} completed, {counts['failed']} failed,"
        f" {counts['active']} active, {counts['waiting']} waiting"
    )
    fields = {
        "schedule": _schedule_json(schedule_id, name),
        "rollout": str(rollout_id),
        "state": state,
        "wave": wave,
        "scopes": counts,
    }
    return Notification(kind, at, fields, text)


def controller_unreachable(
    controller: str, tasks: Sequence[TaskRef], *, attempts: int, at: datetime
) -> Notification:
    """``controller.unreachable``: ``controller`` failed ``attempts`` calls in a row for
    each of ``tasks`` (at least one), and the runner gave up on them."""
    racks = sorted({t.rack or str(t.rack_id) for t in tasks})
    shown = ", ".join(_v(r) for r in racks[:5]) + (
        f" and {len(racks) - 5} more" if len(racks) > 5 else ""
    )
    text = (
        f"*rackcron: rack controller unreachable*: {_v(controller)} failed"
        f" {counted(attempts, 'attempt')} in a row for {counted(len(tasks), 'task')} on rack"
        f" {shown}: {_v(tasks[0].message)}"
    )
    fields = {
        "controller": controller,
        "attempts": attempts,
        "error": tasks[0].message,
        "tasks": [t.to_json() for t in tasks],
    }
    return Notification(EventKind.CONTROLLER_UNREACHABLE, at, fields, text)


def _apply_json(revision: str | None, source: str, author: str) -> dict[str, Any]:
    return {"revision": revision, "source": source, "author": author}


def _from(source: str, revision: str | None) -> str:
    at_revision = "" if revision is None else f" at revision {_v(revision[:12])}"
    return f"{_v(source)}{at_revision}"


def apply_applied(
    origin: ApplyOrigin,
    *,
    apply_id: int | None,
    revision: str | None,
    source: str,
    author: str,
    counts: Mapping[str, int],
    at: datetime,
) -> Notification:
    """``apply.applied``: ``rackcron apply`` or ``sync`` (``origin``) applied a plan."""
    number = "" if apply_id is None else f" #{apply_id}"
    done = ", ".join(f"{n} {action}" for action, n in counts.items() if n) or "no changes"
    text = (
        f"*rackcron: apply{number} applied* ({origin}): {done} from"
        f" {_from(source, revision)} by {_v(author)}"
    )
    fields = {
        "origin": origin,
        "apply": {"id": apply_id, **_apply_json(revision, source, author), "counts": dict(counts)},
    }
    return Notification(EventKind.APPLY_APPLIED, at, fields, text)


def apply_failed(
    origin: ApplyOrigin,
    *,
    revision: str | None,
    source: str,
    author: str,
    outcome: ApplyOutcome,
    error: str,
    at: datetime,
) -> Notification:
    """``apply.failed``: an apply (``origin``) failed, or a sync round could not apply its
    branch: ``outcome`` failed (the apply or the round failed), refused (the plan has
    errors) or invalid (the tree is invalid)."""
    text = (
        f"*rackcron: apply failed* ({origin}, {outcome}): {_from(source, revision)} by"
        f" {_v(author)}: {_v(error)}"
    )
    fields = {
        "origin": origin,
        "outcome": outcome,
        "apply": _apply_json(revision, source, author),
        "error": error,
    }
    return Notification(EventKind.APPLY_FAILED, at, fields, text)
