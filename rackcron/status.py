"""Whether the store is in step with Git, for one repository: ``rackcron status``.

Like Argo CD's sync status, from what the store keeps: the repository's latest apply
(its revision, author and time; the apply log), the latest round of ``rackcron sync``
when it runs (the branch's revision it read, and whether that is applied), and drift:
the changes made to the repository's schedules outside an apply since (over gRPC or the
CLI), each with who made it (the audit trail). The JSON document is the one source;
the text is rendered from it::

    {"format_version": "1.0", "owner": "fleet", "owners": ["fleet", "lab"],
     "state": "drifted",
     "applied": {"id": 3, "at": "...Z", "revision": "...", "dirty": false,
                 "source": "fleet", "author": "Ana <ana@example.net>"},   # or null
     "sync": {"remote": "origin", "branch": "main", "path": "fleet",
              "revision": "...", "outcome": "in-sync", "detail": "no changes",
              "at": "...Z", "in_step": true},                            # or null
     "drift": {"count": 2, "changes": [<history entries, newest first>]}}

``state``: ``no_apply_recorded`` (no apply of the repository is recorded: none made one since migration 0024), ``out_of_sync``
(sync's latest round did not leave the store at the branch's revision), ``drifted``
(changes outside an apply since the latest apply), else ``in_sync``. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rackcron.audit import ActionRecord
from rackcron.domain.models import ApplyRecord, SyncState
from rackcron.domain.timing import format_rfc3339
from rackcron.history import document as history_document
from rackcron.history import rows as history_rows
from rackcron.history import to_the_second

__all__ = ["DRIFT_LISTED", "FORMAT_VERSION", "OWNERS_LISTED", "Status", "document", "lines"]

FORMAT_VERSION = "1.0"
#: Changes outside an apply a status lists; it counts them all.
DRIFT_LISTED = 50
#: Owners with recorded applies a status names.
OWNERS_LISTED = 20
#: Sync outcomes that leave the store at the branch's revision.
_IN_STEP = ("in-sync", "applied")


@dataclass(frozen=True)
class Status:
    """What the store keeps about one repository's sync status."""

    owner: str
    applied: ApplyRecord | None
    sync: SyncState | None
    drift: Sequence[ActionRecord]  # newest first, at most DRIFT_LISTED
    drift_count: int
    #: The owners whose applies the store records (at most OWNERS_LISTED), for a status
    #: of an owner that has none (a typo in --owner).
    owners: Sequence[str] = ()


def document(status: Status) -> dict[str, Any]:
    """The status as its versioned JSON document."""
    applied = status.applied
    sync = status.sync
    in_step = sync is None or sync.outcome in _IN_STEP
    if applied is None:
        state = "no_apply_recorded"
    elif not in_step:
        state = "out_of_sync"
    elif status.drift_count:
        state = "drifted"
    else:
        state = "in_sync"
    return {
        "format_version": FORMAT_VERSION,
        "owner": status.owner,
        "owners": sorted(status.owners),
        "state": state,
        "applied": None if applied is None else {
            "id": applied.id, "at": format_rfc3339(applied.applied_at),
            "revision": applied.revision, "dirty": applied.dirty, "source": applied.source,
            "author": applied.author,
        },
        "sync": None if sync is None else {
            "remote": sync.remote, "branch": sync.branch, "path": sync.path,
            "revision": sync.revision, "outcome": sync.outcome, "detail": sync.detail,
            "at": format_rfc3339(sync.at), "in_step": in_step,
        },
        "drift": {
            "count": status.drift_count,
            "changes": history_document(list(status.drift))["entries"],
        },
    }  # fmt: skip


_STATE = {
    "no_apply_recorded": "no apply recorded",
    "out_of_sync": "out of sync",
    "drifted": "drifted",
    "in_sync": "in sync",
}


def lines(data: dict[str, Any]) -> list[str]:
    """The status for people, unescaped (the CLI escapes each line for a terminal)."""
    out = [f"rackcron status of owner {data['owner']}: {_STATE[data['state']]}"]
    applied = data["applied"]
    if applied is None:
        others = ", ".join(data["owners"])
        hint = f"; the store has applies of: {others} (--owner)" if others else ""
        out.append(f"  applied: no apply of this owner is recorded{hint}")
    else:
        revision = (applied["revision"] or "no revision")[:12] + (
            " (uncommitted changes)" if applied["dirty"] else ""
        )
        out.append(
            f"  applied: apply #{applied['id']} at {to_the_second(applied['at'])} by"
            f" {applied['author']}, {revision}, from {applied['source']}"
        )
    sync = data["sync"]
    if sync is None:
        out.append("  sync:    not running for this owner (rackcron sync)")
    else:
        revision = (sync["revision"] or "not fetched")[:12]
        step = "applied" if sync["in_step"] else "NOT applied"
        out.append(
            f"  sync:    {sync['branch']} of {sync['remote']} ({sync['path']}) at"
            f" {revision}: {step}; last round {to_the_second(sync['at'])}: {sync['outcome']}:"
            f" {sync['detail']}"
        )
    drift = data["drift"]
    if not drift["count"]:
        since = "since its latest apply" if applied else "recorded"
        out.append(f"  drift:   none: no change outside an apply {since}")
        return out
    since = f"since apply #{applied['id']}" if applied else "(no apply recorded)"
    count = drift["count"]
    noun = "change" if count == 1 else "changes"
    out.append(f"  drift:   {count} {noun} outside an apply {since}, newest first:")
    entries = {"format_version": "", "entries": drift["changes"]}
    for when, what, target, by, detail, reason in history_rows(entries):
        said = [
            *([] if detail == "-" else [detail]),
            *([] if reason == "-" else [f"reason {reason}"]),
        ]
        out.append(
            f"    {when}  {what} {target} by {by}" + (f": {', '.join(said)}" if said else "")
        )
    if count > len(drift["changes"]):
        out.append(f"    … and {count - len(drift['changes'])} more (rackcron history lists all)")
    return out
