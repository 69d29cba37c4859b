"""Task retention's rule, pure: which tasks may be pruned, the cutoff, the batch bound."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rackcron.domain.lifecycle import ACTIVE_STATUSES, FINAL_STATUSES, TaskStatus
from rackcron.domain.retention import MAX_BATCH, cutoff, prunable
from rackcron.store.tables import metadata, task

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
BEFORE = NOW - timedelta(days=30)
OLD, RECENT = BEFORE - timedelta(seconds=1), BEFORE + timedelta(seconds=1)


def test_the_cutoff_is_now_less_the_retention() -> None:
    assert cutoff(NOW, timedelta(hours=720)) == datetime(2026, 5, 2, 12, tzinfo=UTC)


@pytest.mark.parametrize("retention", [timedelta(0), timedelta(seconds=-1)], ids=["zero", "neg"])
def test_a_retention_of_nothing_or_less_is_refused(retention: timedelta) -> None:
    with pytest.raises(ValueError, match="the task retention must be positive"):
        cutoff(NOW, retention)


@pytest.mark.parametrize("status", sorted(FINAL_STATUSES))
def test_an_old_final_task_owing_nothing_may_be_pruned(status: TaskStatus) -> None:
    assert prunable(status, finished_at=OLD, stop_owed=False, runner_work=False, before=BEFORE)
    assert prunable(status.value, finished_at=OLD, stop_owed=False, runner_work=False,
                    before=BEFORE)  # fmt: skip


@pytest.mark.parametrize(
    ("status", "finished_at", "stop_owed", "runner_work"),
    [
        *((s, OLD, False, False) for s in sorted(ACTIVE_STATUSES)),
        (TaskStatus.UNKNOWN, OLD, False, False),
        (TaskStatus.TERMINATED, OLD, True, True),
        (TaskStatus.FAILED, OLD, False, True),
        (TaskStatus.COMPLETED, RECENT, False, False),
        (TaskStatus.COMPLETED, BEFORE, False, False),
        (TaskStatus.COMPLETED, None, False, False),
    ],
    ids=["waiting", "pending", "running", "unknown", "owes-a-stop", "leased", "recent",
         "at-the-cutoff", "never-finished"],
)  # fmt: skip
def test_every_other_task_is_kept(status, finished_at, stop_owed, runner_work) -> None:
    assert not prunable(
        status, finished_at=finished_at, stop_owed=stop_owed, runner_work=runner_work,
        before=BEFORE,
    )  # fmt: skip


def test_a_task_of_an_open_firing_is_kept() -> None:
    """The firing knows its done scopes by their tasks: pruning one would redo it."""
    assert not prunable(TaskStatus.COMPLETED, finished_at=OLD, stop_owed=False,
                        runner_work=False, before=BEFORE, firing_open=True)  # fmt: skip


def test_a_batch_is_at_most_500_tasks() -> None:
    assert MAX_BATCH == 500


def test_the_scopes_last_task_is_the_only_reference_to_a_task() -> None:
    """Pruning unsets task_schedule_scope.last_task_id before deleting (rackcron.service._retention);
    a new reference to task rows must be handled there too, then listed here."""
    references = {
        (fk.parent.table.name, fk.parent.name, fk.ondelete)
        for table in metadata.tables.values()
        for fk in table.foreign_keys
        if fk.column.table is task
    }
    assert references == {("task_schedule_scope", "last_task_id", "SET NULL")}
