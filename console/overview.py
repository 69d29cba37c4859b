"""The console's landing page: the fleet's failures first, then whether the store is in step
with Git.

What it reads, in one read-only unit of work, is bounded whatever the fleet's size: counts
(active tasks by status, failures and misses of the last :data:`WINDOW`), the
:data:`FAILING_SHOWN` schedules whose latest tasks failed most recently, the
:data:`RECENT_SHOWN` latest failures and misses, the stopped roll-outs, and the sync status
of at most ``rackcron.status.OWNERS_LISTED`` repositories (``rackcron status``'s lines).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime, timedelta

from rackcron.domain.models import MissedFiring, RolloutRecord, TaskFailure
from rackcron.service.roles import Failing, FleetCounts, Reads
from rackcron.status import OWNERS_LISTED, document, lines

__all__ = ["FAILING_SHOWN", "RECENT_SHOWN", "WINDOW", "Overview", "SyncStatus", "read"]

#: How far back "failed" and "missed" count.
WINDOW = timedelta(hours=24)
#: The failing schedules listed (then counted).
FAILING_SHOWN = 20
#: The latest failures, and the latest misses, listed.
RECENT_SHOWN = 10
#: The lines of a repository's status shown (``rackcron status`` has them all).
STATUS_LINES = 8
#: Roll-outs waiting on an operator, listed.
STOPPED_SHOWN = 10


@dataclass(frozen=True, slots=True)
class SyncStatus:
    """One repository's sync status: its state and ``rackcron status``'s lines."""

    owner: str
    state: str  # in_sync, drifted, out_of_sync, no_apply_recorded
    lines: list[str]
    more: int  # lines not shown

    @property
    def command(self) -> str:
        """The command that shows them all, quoted for a shell (an owner is any text)."""
        return f"rackcron status --owner {shlex.quote(self.owner)}"


@dataclass(frozen=True, slots=True)
class Overview:
    """What the landing page shows."""

    since: datetime
    counts: FleetCounts
    failing: list[Failing]
    failing_total: int
    failures: list[TaskFailure]
    misses: list[MissedFiring]
    stopped: list[RolloutRecord]  # halted or paused roll-outs
    sync: list[SyncStatus]

    @property
    def out_of_step(self) -> int:
        """The repositories whose store is not in step with Git (drifted, out of sync)."""
        return sum(1 for s in self.sync if s.state in ("drifted", "out_of_sync"))

    @property
    def quiet(self) -> bool:
        """Nothing failed, was missed or held, and no roll-out waits on an operator."""
        c = self.counts
        return not (
            self.failing_total or c.failed or c.missed or c.held or c.refused or self.stopped
        )


def _sync(reads: Reads) -> list[SyncStatus]:
    statuses = []
    for owner in reads.applies.owners(OWNERS_LISTED):
        data = document(reads.audit.status(owner))
        said = lines(data)
        shown = said[:STATUS_LINES]
        statuses.append(SyncStatus(owner, data["state"], shown, len(said) - len(shown)))
    return statuses


def read(reads: Reads) -> Overview:
    """The overview as the store has it now (the unit of work's time)."""
    now = reads.now
    failing, total = reads.failures.failing(FAILING_SHOWN, now - WINDOW)
    stopped = reads.rollouts.list_rollouts(states=("halted", "paused"), limit=STOPPED_SHOWN)
    return Overview(
        since=now - WINDOW,
        counts=reads.failures.counts(now - WINDOW),
        failing=failing,
        failing_total=total,
        failures=reads.failures.failures(RECENT_SHOWN),
        misses=reads.failures.misses(RECENT_SHOWN),
        stopped=stopped,
        sync=_sync(reads),
    )
