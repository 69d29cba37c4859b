"""`rackcron schedules get` shows the schedule's newest tasks (at most 5: created, rack,
status, id), in text and as ``recent_tasks`` in JSON; over --server, whose Flow
ListTasks has no schedule filter, neither."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from rackcron.domain.models import TaskStatus
from rackcron.domain.timing import format_rfc3339
from rackcron.service import Service
from rackcron.shim.server import ShimServer
from tests.support.cli import run
from tests.support.service import set_status

pytestmark = pytest.mark.slow

FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet"
# A row-A schedule: the example freezes hold row B at times that depend on the day.
FIRMWARE = "nightly-compute-firmware"


def _fire_three_times(store_url: str, service: Service) -> None:
    """Apply the example fleet and trigger FIRMWARE three times (two racks each): the
    first two firings' tasks completed, the last one's pending."""
    assert run("apply", str(FLEET), "--auto-approve", url=store_url).exit_code == 0
    for firing in range(3):
        fired = run("schedules", "trigger", FIRMWARE, "--yes", "--format", "json", url=store_url)
        assert fired.exit_code == 0, fired.output
        if firing < 2:
            for task_id in json.loads(fired.output)["task_ids"]:
                set_status(service, uuid.UUID(task_id), TaskStatus.COMPLETED)


def test_schedules_get_shows_the_five_newest_tasks(store_url: str, service: Service) -> None:
    _fire_three_times(store_url, service)
    schedule = service.find_schedule(FIRMWARE)
    newest = service.list_tasks(schedule_id=schedule.id, limit=5).items
    names = service.names_of(racks=[t.rack_id for t in newest]).racks
    assert [t.status for t in newest].count(TaskStatus.PENDING) == 2

    shown = run("schedules", "get", FIRMWARE, url=store_url)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    at = lines.index("recent tasks:   newest 5 of 6")
    assert [line.split() for line in lines[at + 1 : at + 6]] == [
        [format_rfc3339(t.created_at.replace(microsecond=0)), names[t.rack_id],
         t.status.value, "task", str(t.id)]
        for t in newest
    ]  # fmt: skip
    assert lines[at + 6] == "scope:"

    data = json.loads(run("schedules", "get", FIRMWARE, "--format", "json", url=store_url).output)
    assert data["recent_tasks"] == [
        {
            "id": str(t.id),
            "created_at": format_rfc3339(t.created_at),
            "rack_id": str(t.rack_id),
            "rack_name": names[t.rack_id],
            "status": t.status.value,
        }
        for t in newest
    ]


def test_a_schedule_that_never_fired_has_no_recent_tasks(store_url: str) -> None:
    assert run("apply", str(FLEET), "--auto-approve", url=store_url).exit_code == 0
    shown = run("schedules", "get", "daily-ingest", url=store_url).output.splitlines()
    assert "recent tasks:   none" in shown
    data = json.loads(
        run("schedules", "get", "daily-ingest", "--format", "json", url=store_url).output
    )
    assert data["recent_tasks"] == []


def test_over_a_server_no_recent_tasks_are_claimed(
    store_url: str, service: Service, shim: ShimServer
) -> None:
    _fire_three_times(store_url, service)
    shown = run("schedules", "get", FIRMWARE, "--server", shim.address)
    assert shown.exit_code == 0, shown.output
    assert "recent tasks" not in shown.output and "scope:" in shown.output
    data = json.loads(
        run("schedules", "get", FIRMWARE, "--server", shim.address, "--format", "json").output
    )
    assert "recent_tasks" not in data
