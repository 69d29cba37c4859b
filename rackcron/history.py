"""The history of a store: its applies, its audit trail, the tasks that failed and the
firings missed, as JSON and as table rows.

What ``rackcron history`` prints and the web console's history page shows, newest first
(:func:`newest_first` merges what the store reads of each :data:`KINDS`).

The JSON document is the one source: the table is rendered from it, so the two cannot
disagree. ``format_version`` follows the plan's rule (a minor bump adds keys, which
readers ignore; a major bump is anything else)::

    {"format_version": "1.0",
     "entries": [                     # newest first
       {"type": "action", "id": 7, "at": "...Z", "action": "pause",
        "object_kind": "schedule", "object_id": "...", "object_name": "nightly",
        "via": "grpc", "actor": "ci", "peer": "ipv4:10.0.0.7:50522", "claimed": "ana",
        "reason": "row B maintenance", "detail": {}},
       {"type": "apply", "id": 3, "at": "...Z", "applied_at": "...Z", "revision": "...",
        "dirty": false, "source": "examples/fleet", "author": "...", "summary": {...},
        "token": "ci", "peer": "ipv4:10.0.0.7:50522",  # token, peer: null for a local apply
        "owner": "dc1-fleet"},  # null for an apply before migration 0024
       {"type": "failure", "id": "<task id>", "at": "...Z", "status": "failed",
        "rack_id": "...", "rack": "rack-a01", "schedule_id": "...", "schedule": "nightly",
        "operation_name": "power_reset", "operation_text": "power reset (forced)",
        "message": "..."},  # rack, schedule: null once gone (schedule_id null: none)
       {"type": "miss", "id": 4, "at": "...Z", "schedule_id": "...", "schedule": "nightly",
        "due_at": "...Z", "lateness_seconds": 0.25, "reason": "freeze",
        "detail": "row-b-backup-window"},
       {"type": "refusal", "id": "<firing id>", "at": "...Z", "schedule_id": "...",
        "schedule": "nightly", "due_at": "...Z", "racks": ["rack-a01"]}]}

The rows are unescaped text: each front escapes them for its medium (the CLI's
``print_table`` for a terminal, the console's templates for HTML).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeAlias

from rackcron.audit import ActionRecord
from rackcron.domain.escape import shorten
from rackcron.domain.models import (
    ApplyRecord,
    MissedFiring,
    MissReason,
    RefusedFiring,
    TaskFailure,
)
from rackcron.domain.operation_names import operation_name
from rackcron.domain.timing import format_rfc3339, parse_rfc3339

__all__ = [
    "FORMAT_VERSION",
    "HEADERS",
    "KINDS",
    "Entry",
    "document",
    "entry_at",
    "newest_first",
    "rows",
    "to_the_second",
]

# 1.1: an apply's token and peer; 1.2: its owner; 1.3: entries of type failure, miss and
# refusal.
FORMAT_VERSION = "1.3"
HEADERS = ["WHEN (UTC)", "WHAT", "OBJECT", "BY", "DETAILS", "REASON"]

Entry: TypeAlias = ApplyRecord | ActionRecord | TaskFailure | MissedFiring | RefusedFiring
#: What a history holds, as its entries' ``type``: applies, changes made outside an
#: apply, tasks that ended failed or terminated, firings the dispatcher did not fire, and
#: firings some of whose racks the task manager refused.
KINDS = ("apply", "action", "failure", "miss", "refusal")
_RANK = {ApplyRecord: 0, ActionRecord: 1, TaskFailure: 2, MissedFiring: 3, RefusedFiring: 4}


def _when(entry: Entry) -> tuple[datetime, int, str | int]:
    match entry:
        case ApplyRecord():
            return entry.applied_at, 0, entry.id
        case TaskFailure():
            return entry.at, 2, str(entry.task.id)
        case RefusedFiring():
            return entry.at, 4, str(entry.id)
        case _:
            return entry.at, _RANK[type(entry)], entry.id


def entry_at(entry: Entry) -> datetime:
    """When ``entry`` happened (an apply: when it was made)."""
    return _when(entry)[0]


def newest_first(entries: Iterable[Entry], limit: int = 0) -> list[Entry]:
    """``entries`` merged newest first (``limit`` 0: all); at one instant a refusal, a miss,
    a failure, an action and an apply, and a later record (higher id) before an earlier one."""
    ordered = sorted(entries, key=_when, reverse=True)
    return ordered[:limit] if limit else ordered


def _failure(failure: TaskFailure) -> dict[str, Any]:
    t = failure.task
    return {
        "type": "failure",
        "id": str(t.id),
        "at": format_rfc3339(failure.at),
        "status": t.status.value,
        "rack_id": str(t.rack_id),
        "rack": failure.rack,
        "schedule_id": None if t.schedule_id is None else str(t.schedule_id),
        "schedule": failure.schedule,
        "operation_name": operation_name(t.template),
        "operation_text": t.operation_text,
        "message": t.message,
    }


def _entry(record: Entry) -> dict[str, Any]:
    if isinstance(record, TaskFailure):
        return _failure(record)
    if isinstance(record, RefusedFiring):
        return {
            "type": "refusal",
            "id": str(record.id),
            "at": format_rfc3339(record.at),
            "schedule_id": str(record.schedule_id),
            "schedule": record.schedule_name,
            "due_at": format_rfc3339(record.due_at),
            "racks": list(record.racks),
        }
    if isinstance(record, MissedFiring):
        return {
            "type": "miss",
            "id": record.id,
            "at": format_rfc3339(record.at),
            "schedule_id": str(record.schedule_id),
            "schedule": record.schedule_name,
            "due_at": format_rfc3339(record.due_at),
            "lateness_seconds": record.lateness_seconds,
            "reason": record.reason.value,
            "detail": record.detail,
        }
    data = record.model_dump(mode="json")
    if isinstance(record, ActionRecord):
        return {"type": "action", **data, "at": format_rfc3339(record.at)}
    return {"type": "apply", "at": format_rfc3339(record.applied_at), **data}


def document(entries: Sequence[Entry]) -> dict[str, Any]:
    """The history as its versioned JSON document."""
    return {"format_version": FORMAT_VERSION, "entries": [_entry(e) for e in entries]}


def _by(entry: dict[str, Any]) -> str:
    if entry["via"] == "local":
        return f"{entry['actor']} (local, {entry['peer']})"
    who = f"token {entry['actor']}" if entry["actor"] is not None else "no token"
    claims = f", claims {entry['claimed']}" if entry["claimed"] is not None else ""
    return f"{who} from {entry['peer']}{claims}"


def _object(entry: dict[str, Any]) -> str:
    kind, name = entry["object_kind"], entry["object_name"]
    if kind == "apply_lock":
        return "apply lock"
    if kind != "task" and name is not None:  # a task is named by its id
        return f"{kind} {name}"
    return f"{kind} {entry['object_id']}"


def _value(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(_value(v) for v in value) or "-"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return "-" if value is None else str(value)


def to_the_second(at: str) -> str:
    """An instant of the document to the second, for people (the JSON keeps it whole)."""
    return format_rfc3339(parse_rfc3339(at).replace(microsecond=0))


def _action_row(entry: dict[str, Any]) -> list[str]:
    details = ", ".join(f"{k}={_value(v)}" for k, v in entry["detail"].items()) or "-"
    return [
        to_the_second(entry["at"]),
        entry["action"],
        _object(entry),
        _by(entry),
        details,
        entry["reason"] or "-",
    ]


def _apply_row(entry: dict[str, Any]) -> list[str]:
    """An apply's row; its provenance is cut (a remote apply's is the client's, of any
    length, and one long cell would pad every row of the table to it)."""
    revision = (entry["revision"] or "-")[:12] + (" (dirty)" if entry["dirty"] else "")
    counts = ", ".join(f"{v} {k}" for k, v in entry["summary"].items() if v) or "no changes"
    by = entry["author"]
    if entry.get("peer") is not None:  # a remote apply: the author is the client's claim
        who = f"token {entry['token']}" if entry.get("token") is not None else "no token"
        by = f"{who} from {entry['peer']}, claims {by}"
    return [
        to_the_second(entry["at"]),
        f"apply #{entry['id']}",
        shorten(entry["source"]),
        shorten(by),
        shorten(f"revision {revision}: {counts}"),
        "-",
    ]


def _schedule(entry: dict[str, Any]) -> str:
    if entry["schedule"] is not None:
        return f"schedule {entry['schedule']}"
    return (
        "no schedule"
        if entry["schedule_id"] is None
        else f"schedule {entry['schedule_id']} (deleted)"
    )


def _failure_row(entry: dict[str, Any]) -> list[str]:
    rack = (
        entry["rack"]
        if entry["rack"] is not None
        else f"{entry['rack_id']} (no longer in the inventory)"
    )
    return [
        to_the_second(entry["at"]),
        f"task {entry['status']}",
        _schedule(entry),
        "-",
        f"{entry['operation_text']} on rack {rack} (task {entry['id']})",
        entry["message"] or "-",
    ]


def _miss_reason(entry: dict[str, Any]) -> str:
    reason, detail = entry["reason"], entry["detail"]
    if reason == MissReason.FREEZE.value:
        return f"held by freeze {detail}"
    if reason == MissReason.ROLLOUT.value:
        return f"its roll-out {detail} was still in progress"
    return "past its starting deadline"


def _miss_row(entry: dict[str, Any]) -> list[str]:
    late = f"{entry['lateness_seconds']:g}s late"
    return [
        to_the_second(entry["at"]),
        "firing missed",
        f"schedule {entry['schedule']}",
        "dispatcher",
        f"due {to_the_second(entry['due_at'])}, {late}",
        _miss_reason(entry),
    ]


#: Racks a refusal's row names (then counts); the JSON has them all.
RACKS_NAMED = 5


def _refusal_row(entry: dict[str, Any]) -> list[str]:
    racks = entry["racks"]
    named = ", ".join(racks[:RACKS_NAMED]) + (
        f" and {len(racks) - RACKS_NAMED} more" if len(racks) > RACKS_NAMED else ""
    )
    noun = "rack" if len(racks) == 1 else "racks"
    return [
        to_the_second(entry["at"]),
        "firing refused",
        f"schedule {entry['schedule']}",
        "task manager",
        f"due {to_the_second(entry['due_at'])}: no task on {len(racks)} {noun}: {named}",
        "a conflicting task on the rack, or its queue full (the dispatcher's log says which)",
    ]


_ROWS = {"action": _action_row, "apply": _apply_row, "failure": _failure_row, "miss": _miss_row,
         "refusal": _refusal_row}  # fmt: skip


def rows(data: dict[str, Any]) -> list[list[str]]:
    """The table's rows (under :data:`HEADERS`) of a :func:`document`, unescaped."""
    return [_ROWS[e["type"]](e) for e in data["entries"]]
