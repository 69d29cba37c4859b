"""A schedule's last result: how the latest task of each of its scopes stands, in a word.

A fleet-wide schedule fires a task per rack, so its last result is a count: the latest
task of every scope (the one ``last_task_id`` names), by status. Failures come first,
then tasks still running; a schedule whose latest tasks all completed has "completed".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rackcron.domain.lifecycle import ACTIVE_STATUSES, TaskStatus

__all__ = ["NEVER_FIRED", "LastResult", "failing_first"]

#: How a latest task that did not complete is named, worst first.
_WORDS = (
    ("failed", frozenset({TaskStatus.FAILED})),
    ("terminated", frozenset({TaskStatus.TERMINATED})),
    ("unknown", frozenset({TaskStatus.UNKNOWN})),
    ("running", ACTIVE_STATUSES),
)


@dataclass(frozen=True, slots=True)
class LastResult:
    """The statuses of a schedule's scopes' latest tasks, counted; when the newest of
    them ended; and how many of the schedule's tasks are active (the latest or not)."""

    counts: Mapping[TaskStatus, int]
    ended_at: datetime | None = None
    active: int = 0

    @property
    def failed(self) -> bool:
        """Whether any latest task failed or was terminated."""
        return any(self.counts.get(s, 0) for s in (TaskStatus.FAILED, TaskStatus.TERMINATED))

    def text(self) -> str:
        """``-`` (never fired), ``completed``, or what did not complete, worst first:
        ``failed 2/5000, running 3/5000``."""
        total = sum(self.counts.values())
        if not total:
            return "-"
        parts = [
            f"{word} {n}/{total}"
            for word, statuses in _WORDS
            if (n := sum(self.counts.get(s, 0) for s in statuses))
        ]
        return ", ".join(parts) or "completed"


#: The last result of a schedule that has never fired and has no active task.
NEVER_FIRED = LastResult({})

_NEVER = datetime.max.replace(tzinfo=UTC)


def failing_first(result: LastResult, name: str) -> tuple[Any, ...]:
    """A sort key putting failing schedules first (the latest to end first), then those
    with active tasks, then the rest, each by ``name``."""
    if result.failed:
        return (0, -(result.ended_at or _NEVER).timestamp(), name)
    return (1 if result.active else 2, 0.0, name)
