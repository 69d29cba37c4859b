"""The audit trail: who changed what outside an apply, when, and why.

Theory. An apply is logged as a whole (the apply log: revision, author, counts). Every
other change — a schedule created, updated, paused, resumed, deleted or triggered, its
scope changed, a task cancelled, the apply lock broken — is one call of the service,
made in one transaction, and the service writes one audit record in that transaction
(docs/spec/SEMANTICS.md "Audit trail"). So a change that fails or is rolled back records
nothing, and a change that commits cannot lose its record. A call that changes nothing
(pausing a paused schedule, an update to the values a schedule has, a scope update or
addition that finds the scope as asked, breaking a lock nobody holds) records nothing either: the builders below return None.

A record says:

* **who** (:class:`Actor`): locally, the OS user, or the name given with ``--as``, and
  the host; over gRPC, the name of the bearer token that authenticated the call (None
  when the server requires none) and the peer address. A name the gRPC client gives
  (its ``--as``) is kept as ``claimed``, beside that identity, never in its place;
* **when**: the transaction's time;
* **what** (:class:`AuditedChange`): the action, the object's kind, id and name, and a short
  detail (:func:`bounded`): the fields an update changed, a trigger's counts by
  outcome, a cancelled task's previous status. The detail is an open JSON object of
  bounded size, so a later kind of change adds keys without a new column; a trigger
  forced through a freeze will add ``overrode_freeze`` (the freeze and its racks);
* **why**: an optional reason (:func:`check_reason`).

The values a caller gives (a name, a reason) follow the single-line rule of
``rackcron.domain.text``, with the bounds below; values read from the store (a schedule's name
written before that rule) are recorded as they are, and escaped wherever shown.

Everything here is pure but :func:`local_actor`, which reads the OS user and host name.
"""

from __future__ import annotations

import getpass
import os
import socket
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from rackcron.domain.models import RolloutRecord, Schedule, ScopeUpdate, Task
from rackcron.domain.text import MAX_LENGTH, check_line
from rackcron.errors import InvalidArgument

__all__ = [
    "DRIFT_ACTIONS",
    "MAX_REASON_LENGTH",
    "Action",
    "ActionRecord",
    "Actor",
    "Audit",
    "AuditedChange",
    "Via",
    "bounded",
    "cancelled",
    "check_name",
    "check_reason",
    "checked",
    "created",
    "local_actor",
    "lock_broken",
    "paused",
    "rollout_change",
    "schedule_change",
    "scope_added",
    "scope_removed",
    "scope_updated",
    "step_run",
    "triggered",
    "updated",
]

#: Characters in a reason (one line).
MAX_REASON_LENGTH = 500
#: Bounds of a record's detail: characters per string, items per list, keys per object, depth.
MAX_DETAIL_TEXT = 200
MAX_DETAIL_ITEMS = 10
MAX_DETAIL_KEYS = 16
MAX_DETAIL_DEPTH = 3


class Action(StrEnum):
    """What was done (stable strings: stored, and in ``history --format json``)."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    PAUSE = "pause"
    RESUME = "resume"
    TRIGGER = "trigger"
    ADD_SCOPE = "add_scope"
    UPDATE_SCOPE = "update_scope"
    REMOVE_SCOPE = "remove_scope"
    CANCEL = "cancel"
    BREAK_LOCK = "break_lock"
    STEP = "step"  # a plan step run through rackcron.v1.Reconciler's RunStep
    PAUSE_ROLLOUT = "pause_rollout"
    RESUME_ROLLOUT = "resume_rollout"
    ABORT_ROLLOUT = "abort_rollout"


#: What changes a schedule outside an apply: the store no longer matches the tree that
#: declares it (``rackcron status``'s drift). A trigger, a cancel, a roll-out's steering
#: and a remote apply's steps (STEP) do not.
DRIFT_ACTIONS = frozenset({Action.CREATE, Action.UPDATE, Action.DELETE, Action.PAUSE,
                           Action.RESUME, Action.ADD_SCOPE, Action.UPDATE_SCOPE,
                           Action.REMOVE_SCOPE})  # fmt: skip


class Via(StrEnum):
    """Where a change came from."""

    LOCAL = "local"  # the CLI (or the Python API) on the store itself
    GRPC = "grpc"  # an RPC of the gRPC shim


@dataclass(frozen=True)
class Actor:
    """Who made a change."""

    via: Via
    #: Locally the OS user or ``--as``; over gRPC the authenticating token's name (None:
    #: the server requires no token).
    name: str | None
    #: Locally the host name; over gRPC the peer address (``ipv4:127.0.0.1:50522``).
    peer: str
    #: Over gRPC, the name the client gave (``--as``): a claim, not an identity.
    claimed: str | None = None


@dataclass(frozen=True)
class Audit:
    """Who makes a change, and why: what the service records with it."""

    actor: Actor
    reason: str | None = None


@dataclass(frozen=True)
class AuditedChange:
    """What a change did: the action, its object, and a short detail (:func:`bounded`)."""

    action: Action
    kind: str  # "schedule", "task", "rollout" or "apply_lock"
    object_id: str | None
    name: str | None
    detail: Mapping[str, Any] = field(default_factory=dict)


def check_name(value: str, field: str) -> str:
    """``value`` as the name of who acts (``--as``): one line, 1 to 255 characters.

    :raises InvalidArgument: naming ``field``.
    """
    if not value.strip():
        raise InvalidArgument(f"{field}: must not be empty")
    return check_line(value, field, max_length=MAX_LENGTH)


def check_reason(value: str, field: str) -> str:
    """``value`` as a change's reason: one line, 1 to :data:`MAX_REASON_LENGTH` characters.

    :raises InvalidArgument: naming ``field``.
    """
    if not value.strip():
        raise InvalidArgument(f"{field}: must not be empty")
    return check_line(value, field, max_length=MAX_REASON_LENGTH)


def checked(audit: Audit) -> Audit:
    """``audit`` when what its caller gave (a name, a claim, a reason) follows the rules.

    :raises InvalidArgument: naming ``audit.actor.name``, ``audit.actor.claimed`` or
        ``audit.reason``.
    """
    if audit.actor.name is not None:
        check_name(audit.actor.name, "audit.actor.name")
    if audit.actor.claimed is not None:
        check_name(audit.actor.claimed, "audit.actor.claimed")
    if audit.reason is not None:
        check_reason(audit.reason, "audit.reason")
    return audit


def local_actor(name: str | None = None) -> Actor:
    """The local actor: ``name`` (``--as``) or else the OS user, on this host.

    :raises InvalidArgument: ``name`` is not a valid name (:func:`check_name`).
    """
    if name is None:
        try:
            name = getpass.getuser()
        except (OSError, KeyError):  # no user name in the environment or the user database
            name = f"uid {os.getuid()}"
    else:
        check_name(name, "--as")
    return Actor(Via.LOCAL, name, socket.gethostname())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bounded(value: Any, depth: int = 0) -> Any:
    """``value`` (a JSON value) within the detail's bounds: strings cut to
    :data:`MAX_DETAIL_TEXT` characters, lists to :data:`MAX_DETAIL_ITEMS` items (then a
    ``"… N more"`` item), objects to :data:`MAX_DETAIL_KEYS` keys, nesting to
    :data:`MAX_DETAIL_DEPTH` levels (deeper values become ``"…"``)."""
    if isinstance(value, str):
        return _cut(value, MAX_DETAIL_TEXT)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= MAX_DETAIL_DEPTH:
        return "…"
    if isinstance(value, Mapping):
        items = list(value.items())[:MAX_DETAIL_KEYS]
        return {_cut(str(k), MAX_DETAIL_TEXT): bounded(v, depth + 1) for k, v in items}
    if isinstance(value, Sequence | set | frozenset):
        values = list(value)
        kept = [bounded(v, depth + 1) for v in values[:MAX_DETAIL_ITEMS]]
        extra = len(values) - MAX_DETAIL_ITEMS
        return [*kept, f"… {extra} more"] if extra > 0 else kept
    return _cut(str(value), MAX_DETAIL_TEXT)


# --- what each change records -------------------------------------------------------------


def schedule_change(action: Action, schedule: Schedule, **detail: Any) -> AuditedChange:
    """``action`` on ``schedule`` (create, delete, pause, resume)."""
    return AuditedChange(action, "schedule", str(schedule.id), schedule.name, detail)


def created(schedule: Schedule, lookalike: str | None = None) -> AuditedChange:
    """A schedule created: its spec and operation, and ``lookalike``, why its name looks
    like another (``rackcron.domain.lookalikes``), when it does."""
    spec = f"{schedule.spec_type.value} {schedule.spec} ({schedule.timezone})"
    extra = {"lookalike": lookalike} if lookalike else {}
    return schedule_change(
        Action.CREATE, schedule, spec=spec, operation=schedule.operation_text, **extra
    )


#: The fields an update can change, as a schedule shows them.
_UPDATED_FIELDS = ("name", "spec_type", "spec", "timezone", "overlap_policy")


def updated(
    before: Schedule | None, after: Schedule, lookalike: str | None = None
) -> AuditedChange | None:
    """A schedule updated: the fields whose values changed (``before`` None: unknown), and
    the name it had when it was renamed (with ``lookalike``, why the new name looks like
    another, when it does); None when nothing changed (not even its next run)."""
    if before is None:
        return schedule_change(Action.UPDATE, after)
    fields = [f for f in _UPDATED_FIELDS if getattr(before, f) != getattr(after, f)]
    if not fields and before.next_run_at == after.next_run_at:
        return None
    detail: dict[str, Any] = {"fields": fields}
    if before.name != after.name:
        detail["renamed_from"] = before.name
        if lookalike:
            detail["lookalike"] = lookalike
    return schedule_change(Action.UPDATE, after, **detail)


def triggered(
    schedule: Schedule,
    results: Iterable[str],
    overrode: Mapping[str, Sequence[str]] | None = None,
    *,
    rollout: uuid.UUID | None = None,
    all_at_once: bool = False,
) -> AuditedChange:
    """A manual trigger: how many of its scopes' tasks were submitted, queued, skipped and
    refused (the task manager's ``failed``), and ``deferred`` when the store failed (the
    firing's record keeps them owed); when it was forced past freezes,
    ``overrode_freeze`` (their names) and ``frozen_racks`` (the racks they held); the
    ``rollout`` it recorded, or ``all_at_once`` when it fired a roll-out schedule's every
    scope at once."""
    counts: dict[str, Any] = {"submitted": 0, "queued": 0, "skipped": 0, "refused": 0}
    for result in results:
        key = "refused" if result == "failed" else result
        counts[key] = counts.get(key, 0) + 1
    if overrode:
        counts["overrode_freeze"] = sorted(overrode)
        counts["frozen_racks"] = sorted({r for racks in overrode.values() for r in racks})
    if rollout is not None:
        counts["rollout"] = str(rollout)
    if all_at_once:
        counts["all_at_once"] = True
    return schedule_change(Action.TRIGGER, schedule, **counts)


def rollout_change(action: Action, record: RolloutRecord, **detail: Any) -> AuditedChange:
    """A change of a roll-out (pause, resume, abort): its id, its schedule's name, and
    its state after."""
    return AuditedChange(
        action, "rollout", str(record.id), record.schedule_name, {"state": record.state, **detail}
    )


def paused(before: Schedule | None, after: Schedule) -> AuditedChange | None:
    """PauseTaskSchedule; None when the schedule was paused already (nothing changed)."""
    if before is not None and not before.enabled:
        return None
    return schedule_change(Action.PAUSE, after)


def scope_added(schedule: Schedule, racks: Sequence[str]) -> AuditedChange | None:
    """AddTaskScheduleScope: the racks whose scope entry was created or re-filtered; None
    when there is none (nothing changed)."""
    if not racks:
        return None
    return schedule_change(Action.ADD_SCOPE, schedule, changed=len(racks), racks=list(racks))


def scope_updated(schedule: Schedule, update: ScopeUpdate) -> AuditedChange | None:
    """UpdateTaskScheduleScope: how many entries were added, removed and re-filtered; None
    when the scope already was the one desired (nothing changed)."""
    counts = {"added": update.added, "removed": update.removed, "updated": update.updated}
    if not any(counts.values()):
        return None
    return schedule_change(Action.UPDATE_SCOPE, schedule, **counts)


def scope_removed(schedule: Schedule, scope_id: str, rack_id: str) -> AuditedChange:
    """RemoveTaskScheduleScope: the entry removed and its rack."""
    return schedule_change(Action.REMOVE_SCOPE, schedule, scope_id=scope_id, rack_id=rack_id)


def cancelled(task: Task, was: str | None) -> AuditedChange:
    """CancelTask: the task, its rack and the status it had."""
    detail = {"was": was, "rack_id": str(task.rack_id)}
    return AuditedChange(Action.CANCEL, "task", str(task.id), task.description, detail)


def lock_broken(holder: str | None) -> AuditedChange | None:
    """``apply --break-lock``: who held the lock; None when nobody did (nothing changed)."""
    if holder is None:
        return None
    return AuditedChange(Action.BREAK_LOCK, "apply_lock", None, None, {"holder": holder})


#: The object kind a Reconciler step changes, by its rpc.
_STEP_KINDS = {
    "UpsertRack": "rack",
    "DeleteRack": "rack",
    "UpsertComponent": "component",
    "DeleteComponent": "component",
    "UpsertNVLDomain": "nvl_domain",
    "DeleteNVLDomain": "nvl_domain",
    "UpsertFreeze": "freeze",
    "DeleteFreeze": "freeze",
    "SetManagement": "schedule",
    "SetStartingDeadline": "schedule",
    "SetSpread": "schedule",
    "SetRollout": "schedule",
    "CreateTaskSchedule": "schedule",  # one with an id
}


def step_run(rpc: str, args: Mapping[str, Any]) -> AuditedChange:
    """A plan step run on its own through RunStep (a remote apply runs each of its steps
    so): the rpc, and the object it names (the ``name`` and ``id`` of its arguments, or
    of the object an upsert carries)."""
    kind = _STEP_KINDS.get(rpc, "inventory")
    carried = args.get(kind)
    named = carried if isinstance(carried, Mapping) else args
    name, object_id = named.get("name"), named.get("id", args.get("id"))
    return AuditedChange(
        Action.STEP,
        kind,
        object_id=object_id if isinstance(object_id, str) else None,
        name=name if isinstance(name, str) else None,
        detail={"rpc": rpc},
    )


# --- reading the trail back ---------------------------------------------------------------


class ActionRecord(BaseModel):
    """One record of the audit trail, as the store keeps it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    at: datetime
    action: Action
    object_kind: str
    object_id: str | None
    object_name: str | None
    via: Via
    actor: str | None
    peer: str
    claimed: str | None
    reason: str | None
    detail: dict[str, Any]
