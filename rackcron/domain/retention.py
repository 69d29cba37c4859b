"""Task retention: which tasks are old history that may be deleted, and how many at a time.

Tasks are the store's history: nothing deletes them unless ``rackcron serve`` is given a
*retention* (``--task-retention 720h``; docs/spec/SEMANTICS.md "Task retention"). Then a
task may be *pruned* when all of these hold:

* it is final (``lifecycle.FINAL_STATUSES``: completed, failed, terminated): an active
  task holds its rack and is never pruned, however old;
* it owes its controller no stop (``cancel_pending``) and the runner has no work on it
  (``next_check_at`` unset): the runner must still be able to find it;
* it finished (``finished_at``) before the *cutoff*, the time now less the retention. A
  final task without a finished time (no rackcron writes one) is never pruned;
* the firing that submitted it is finished: an open firing knows which scopes it has
  done by their tasks, so deleting one would make it submit that scope again.

The store applies this rule set-wise, in SQL, at most :data:`MAX_BATCH` tasks per
transaction (``rackcron.service._retention``); :func:`prunable` is the same rule for one
task, which the tests hold the SQL to. Nothing here does I/O; ``now`` is an argument.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from rackcron.domain.lifecycle import FINAL_STATUSES, TaskStatus

__all__ = ["MAX_BATCH", "cutoff", "prunable"]

#: The most tasks one transaction deletes: short transactions, so a pass never holds
#: locks (SQLite's one writer, PostgreSQL's row locks) long enough to delay a firing.
MAX_BATCH = 500


def cutoff(now: datetime, retention: timedelta) -> datetime:
    """The finished time before which final tasks may be pruned at ``now``.

    :raises ValueError: ``retention`` is not positive.
    """
    if retention <= timedelta(0):
        raise ValueError(f"the task retention must be positive, got {retention}")
    return now - retention


def prunable(
    status: TaskStatus | str,
    *,
    finished_at: datetime | None,
    stop_owed: bool,
    runner_work: bool,
    before: datetime,
    firing_open: bool = False,
) -> bool:
    """Whether a task may be pruned when the cutoff is ``before`` (the module docstring).

    ``stop_owed``: its ``cancel_pending`` flag; ``runner_work``: its ``next_check_at`` is set;
    ``firing_open``: the firing that submitted it is not finished.
    """
    return (
        status in FINAL_STATUSES
        and not stop_owed
        and not runner_work
        and not firing_open
        and finished_at is not None
        and finished_at < before
    )
