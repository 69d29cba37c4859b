"""The history of a store: its applies and audit trail, as JSON and as table rows.

What ``rackcron history`` prints and the web console's history page shows.

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
        "owner": "dc1-fleet"}]}  # null for an apply before migration 0024

The rows are unescaped text: each front escapes them for its medium (the CLI's
``print_table`` for a terminal, the console's templates for HTML).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rackcron.audit import ActionRecord
from rackcron.domain.escape import shorten
from rackcron.domain.models import ApplyRecord
from rackcron.domain.timing import format_rfc3339, parse_rfc3339

__all__ = ["FORMAT_VERSION", "HEADERS", "document", "rows", "to_the_second"]

FORMAT_VERSION = "1.2"  # 1.1: an apply's token and peer; 1.2: its owner
HEADERS = ["WHEN (UTC)", "WHAT", "OBJECT", "BY", "DETAILS", "REASON"]


def _entry(record: ApplyRecord | ActionRecord) -> dict[str, Any]:
    data = record.model_dump(mode="json")
    if isinstance(record, ActionRecord):
        return {"type": "action", **data, "at": format_rfc3339(record.at)}
    return {"type": "apply", "at": format_rfc3339(record.applied_at), **data}


def document(entries: Sequence[ApplyRecord | ActionRecord]) -> dict[str, Any]:
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


def rows(data: dict[str, Any]) -> list[list[str]]:
    """The table's rows (under :data:`HEADERS`) of a :func:`document`, unescaped."""
    return [_action_row(e) if e["type"] == "action" else _apply_row(e) for e in data["entries"]]
