"""The CLI's lists: their order, their columns, and what they say when there is nothing
to list."""

from __future__ import annotations

import json
import re

import pytest

from rackcron.domain.models import TaskStatus
from tests.support.cli import run
from tests.support.service import create, set_status


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("tasks", "list"), "No tasks.\n"),
        (("tasks", "list", "--active-only"), "No tasks match.\n"),
        (("schedules", "list"), "No schedules.\n"),
        (("racks", "list"), "No racks.\n"),
        (("freezes", "list"), "No freezes.\n"),
        (("history",), "Nothing recorded yet.\n"),
    ],
)
def test_an_empty_list_says_so(store_url: str, args: tuple[str, ...], said: str) -> None:
    result = run(*args, url=store_url)
    assert result.exit_code == 0 and result.output == said, result.output


def test_a_page_past_the_end_says_how_many_there_are(store_url, service, fleet) -> None:
    create(service, fleet.racks[:1], name="one")
    result = run("schedules", "list", "--offset", "5", url=store_url)
    assert result.output == "No schedules at offset 5 (1 in all).\n", result.output
    listed = run("schedules", "list", "--rack", fleet.racks[1], url=store_url)
    assert listed.output == "No schedules match.\n", listed.output


def test_schedules_list_by_name_by_next_run_or_by_creation(store_url, service, fleet, clock):
    for name, spec in [("b-hourly", "1h"), ("a-daily", "24h"), ("c-minutely", "1m")]:
        create(service, fleet.racks[:1], name=name, spec=spec)
        clock.advance(seconds=1)  # created in this order
    service.pause_schedule(service.find_schedule("c-minutely").id)  # still has a next run
    orders = {
        sort: [line.split()[0] for line in run(*args, url=store_url).output.splitlines()[1:]]
        for sort, args in {
            "default": ("schedules", "list"),
            "next-run": ("schedules", "list", "--sort", "next-run"),
            "created": ("schedules", "list", "--sort", "created"),
        }.items()
    }
    assert orders == {
        "default": ["a-daily", "b-hourly", "c-minutely"],
        "next-run": ["c-minutely", "b-hourly", "a-daily"],
        "created": ["b-hourly", "a-daily", "c-minutely"],
    }
    paged = run("schedules", "list", "--offset", "1", "--limit", "1", url=store_url).output
    assert paged.splitlines()[1].startswith("b-hourly") and paged.endswith("(1 of 3)\n")


def test_schedules_list_shows_each_last_result_and_active_tasks(store_url, service, fleet):
    wide = create(service, fleet.racks[:3], name="wide")
    create(service, fleet.racks[3:4], name="never")
    first = service.trigger(wide.id).task_ids
    for task_id, status in zip(first, [TaskStatus.COMPLETED, TaskStatus.FAILED,
                                       TaskStatus.COMPLETED], strict=True):  # fmt: skip
        set_status(service, task_id, status)
    listed = run("schedules", "list", url=store_url)
    rows = {c[0]: c for c in (re.split(r"\s{2,}", line) for line in listed.output.splitlines())}
    assert rows["NAME"][6:8] == ["LAST RESULT", "ACTIVE"]
    assert rows["wide"][6:8] == ["failed 1/3", "0"] and rows["never"][6:8] == ["-", "0"]
    service.trigger(wide.id)  # the latest tasks now: three active, the failure behind them
    data = json.loads(run("schedules", "list", "--format", "json", url=store_url).output)
    shown = {s["name"]: s for s in data["task_schedules"]}
    assert shown["wide"]["active_tasks"] == 3
    assert shown["wide"]["last_result"]["summary"] == "running 3/3"
    assert sum(shown["wide"]["last_result"]["statuses"].values()) == 3
    assert shown["never"]["last_result"] is None and shown["never"]["active_tasks"] == 0
    assert "." not in shown["wide"]["next_run_at"][:19]  # (JSON keeps the store's precision)
    table = run("schedules", "list", url=store_url).output
    assert ".0" not in table and re.search(r"\d\d:\d\d:\d\dZ", table), table  # whole seconds


def test_schedules_list_failing_first(store_url, service, fleet, clock) -> None:
    """Failing schedules first, the latest to end first; then those with active tasks;
    then the rest by name. Paging and JSON follow that order."""
    ids = {n: create(service, fleet.racks[:1], name=n).id for n in ("a", "b", "c", "d", "e")}
    for name, status in [("b", TaskStatus.FAILED), ("d", TaskStatus.TERMINATED),
                         ("a", TaskStatus.COMPLETED)]:  # fmt: skip
        (task_id,) = service.trigger(ids[name]).task_ids
        clock.advance(seconds=10)  # d ends after b
        set_status(service, task_id, status, finished_at=clock())
    service.trigger(ids["e"])  # active
    listed = run("schedules", "list", "--sort", "failing", url=store_url)
    assert [line.split()[0] for line in listed.output.splitlines()[1:]] == [
        "d", "b", "e", "a", "c",
    ], listed.output  # fmt: skip
    paged = run(
        "schedules", "list", "--sort", "failing", "--offset", "1", "--limit", "2",
        "--format", "json", url=store_url,
    )  # fmt: skip
    data = json.loads(paged.output)
    assert [s["name"] for s in data["task_schedules"]] == ["b", "e"] and data["total"] == 5
    service.pause_schedule(ids["d"])
    kept = run("schedules", "list", "--sort", "failing", "--enabled-only", url=store_url)
    assert [line.split()[0] for line in kept.output.splitlines()[1:]] == ["b", "e", "a", "c"]


def test_schedules_list_failing_first_needs_the_store() -> None:
    result = run("schedules", "list", "--sort", "failing", "--server", "127.0.0.1:9")
    assert result.exit_code == 2 and "Flow RPCs of --server" in result.output, result.output
    assert "Traceback" not in result.output
