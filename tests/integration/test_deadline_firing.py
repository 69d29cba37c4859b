"""Starting deadlines through the real firing path, the store, the CLI and remote apply.

docs/spec/SEMANTICS.md "Starting deadline (beyond the reference)": a firing made later than
its schedule's ``starting_deadline`` after its due time is missed: no task, the schedule
advances as a firing whose every scope was skipped, and the miss (time, lateness, reason)
is stored in phase 1's transaction. A manual trigger ignores the deadline. Every test that
takes ``service`` runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import io
import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from rackcron.dispatcher.loop import Dispatcher
from rackcron.dispatcher.metrics import Metrics
from rackcron.domain.models import Miss, MissReason, ScheduleConfig, SpecType
from rackcron.errors import InvalidArgument, NotFound
from rackcron.logs import configure
from rackcron.service import Missed, Service
from rackcron.store import open_engine, transaction
from rackcron.store.tables import task_schedule
from tests.support.cli import run
from tests.support.service import make_operation, snapshot
from tests.support.trees import RACKS, schedule

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def create(
    service: Service,
    racks,
    deadline: str | None,
    *,
    name: str = "late",
    spec_type: SpecType = SpecType.INTERVAL,
    spec: str = "1h",
):
    config = ScheduleConfig(name=name, spec_type=spec_type, spec=spec)
    operation = make_operation("power_on", racks)
    return service.create_schedule(config, operation, starting_deadline=deadline)


def drain(service: Service) -> tuple[list, list[Missed]]:
    """Every firing due now, and every miss, through the dispatcher's own drain."""
    fired, missed = [], []
    for batch in service.fire_batches():
        fired += batch.results
        missed += batch.missed
    return fired, missed


# --- the rule, on the store --------------------------------------------------------------------


@pytest.mark.slow
def test_a_firing_later_than_the_deadline_is_missed_advanced_and_recorded(
    service, fleet, clock
) -> None:
    made = create(service, fleet.racks[:2], "15m")
    assert made.starting_deadline == "15m" and made.last_miss is None
    due = made.next_run_at
    clock.now = due + 20 * MINUTE
    fired, missed = drain(service)
    assert fired == []
    assert missed == [
        Missed(made.id, "late", due, clock.now, 1200.0, MissReason.DEADLINE, None, "15m")
    ]
    after = service.get_schedule(made.id)
    # As a firing whose every scope was skipped: next run from now, last run left as it was.
    assert (after.enabled, after.next_run_at, after.last_run_at) == (
        True, clock.now + timedelta(hours=1), None)  # fmt: skip
    assert after.last_miss == Miss(at=clock.now, lateness_seconds=1200.0, reason="deadline")
    assert service.list_tasks().total == 0
    assert [s.last_task_id for s in service.list_scopes(made.id)] == [None, None]
    assert drain(service) == ([], [])  # spent: neither fired nor missed again


def test_a_firing_within_the_deadline_fires(service, fleet, clock) -> None:
    made = create(service, fleet.racks[:2], "15m")
    clock.now = made.next_run_at + 15 * MINUTE  # exactly at the deadline: not later than it
    fired, missed = drain(service)
    assert missed == [] and [len(r.task_ids) for r in fired] == [2]
    assert service.get_schedule(made.id).last_miss is None


def test_without_a_deadline_a_firing_fires_however_late(service, fleet, clock) -> None:
    made = create(service, fleet.racks[:1], None)
    clock.now = made.next_run_at + timedelta(hours=11, minutes=34)
    fired, missed = drain(service)
    assert missed == [] and [len(r.task_ids) for r in fired] == [1]


def test_a_missed_one_time_schedule_is_consumed(service, fleet, clock) -> None:
    instant = NOW + timedelta(hours=1)
    made = create(service, fleet.racks[:1], "5m", spec_type=SpecType.ONE_TIME,
                  spec="2026-06-01T13:00:00Z")  # fmt: skip
    assert made.next_run_at == instant
    clock.now = instant + timedelta(hours=2)
    _, (miss,) = drain(service)
    assert (miss.due, miss.lateness_seconds) == (instant, 7200.0)
    after = service.get_schedule(made.id)
    assert after.consumed and not after.enabled and after.last_run_at == clock.now
    assert after.last_miss.lateness_seconds == 7200.0
    assert service.list_tasks().total == 0


@pytest.mark.parametrize(
    ("spec_type", "spec"),
    [(SpecType.INTERVAL, "1h"), (SpecType.CRON, "0 * * * *")],
    ids=["interval", "cron"],
)
def test_collapsed_ticks_fire_when_the_latest_is_within_the_deadline(
    service, fleet, clock, spec_type, spec
) -> None:
    """Hourly with a 1h deadline, due at 13:00; an outage collapses 13:00, 14:00 and 15:00
    into one firing at 15:30. The latest tick, 15:00, is 30 min back: it fires (counted
    from 13:00, it was 2.5 h late, and rackcron used to miss it). Its lag still counts
    from 13:00, so the outage shows (docs/dispatch.md "Lag")."""
    made = create(service, fleet.racks[:1], "1h", spec_type=spec_type, spec=spec)
    assert made.next_run_at == NOW + timedelta(hours=1)
    clock.now = NOW + timedelta(hours=3, minutes=30)
    fired, missed = drain(service)
    assert missed == [] and [len(r.task_ids) for r in fired] == [1]
    assert fired[0].lag_seconds == 2.5 * 3600
    after = service.get_schedule(made.id)
    assert after.last_miss is None and after.last_run_at == clock.now


def test_collapsed_ticks_past_the_deadline_are_missed_as_late_as_the_latest(
    service, fleet, clock
) -> None:
    """The same outage with a 15m deadline: missed, and the miss (its record, the log line,
    the poll's result) names the latest tick and the lateness from it."""
    made = create(service, fleet.racks[:1], "15m", spec_type=SpecType.CRON, spec="0 * * * *")
    clock.now = NOW + timedelta(hours=3, minutes=30)
    stream = io.StringIO()
    configure("text", stream=stream)
    try:
        summary = Dispatcher(service, metrics=Metrics(), workers=1).poll()
    finally:
        configure("text")
    latest = NOW + timedelta(hours=3)
    assert summary.fired == 0
    assert summary.missed == [
        Missed(made.id, "late", latest, clock.now, 1800.0, MissReason.DEADLINE, None, "15m")
    ]
    (line,) = stream.getvalue().splitlines()
    assert "reason=deadline due=2026-06-01T15:00:00Z lateness=1800s" in line
    after = service.get_schedule(made.id)
    assert after.last_miss == Miss(at=clock.now, lateness_seconds=1800.0, reason="deadline")
    assert after.next_run_at == NOW + timedelta(hours=4)
    clock.now = NOW + timedelta(hours=4, minutes=10)  # the next tick, 10 min late: fires
    fired, missed = drain(service)
    assert missed == [] and len(fired) == 1


def test_a_manual_trigger_ignores_the_deadline(service, fleet, clock) -> None:
    made = create(service, fleet.racks[:2], "1m")
    clock.now = made.next_run_at + timedelta(hours=5)
    result = service.trigger(made.id)
    assert len(result.task_ids) == 2
    after = service.get_schedule(made.id)
    assert after.last_miss is None and after.last_run_at == clock.now


def test_misses_and_firings_share_a_batch(service, fleet, clock) -> None:
    late = [create(service, fleet.racks[i : i + 1], "10m", name=f"late-{i}") for i in range(3)]
    on_time = [create(service, fleet.racks[3:4], "3h", name=f"ok-{i}") for i in range(2)]
    clock.now = NOW + timedelta(hours=2, minutes=30)  # hourly: the latest tick is 30 min back
    fired, missed = drain(service)
    assert sorted(m.name for m in missed) == [s.name for s in late]
    assert sorted(r.firing.schedule.name for r in fired) == [s.name for s in on_time]


def test_the_miss_is_committed_with_the_advance_or_not_at_all(service, fleet, clock) -> None:
    """A crash inside phase 1 loses neither: the claim rolls back whole, and the next poll
    misses the firing once."""
    made = create(service, fleet.racks[:1], "15m")
    clock.now = made.next_run_at + 50 * MINUTE  # before the next hourly tick
    before = snapshot(service)
    with pytest.raises(RuntimeError), service.transaction() as ops:
        claim = ops.firing.claim_batch(10)
        assert [m.schedule_id for m in claim.missed] == [made.id]
        raise RuntimeError("the dispatcher dies before the claim commits")
    assert snapshot(service) == before  # still due, no miss recorded
    with service.transaction() as ops:
        (miss,) = ops.firing.claim_batch(10).missed
    assert (miss.schedule_id, miss.lateness_seconds) == (made.id, 3000.0)
    # Committed: the advance and the miss together, read back by another connection.
    with transaction(service.engine, write=False) as conn:
        row = conn.execute(sa.select(task_schedule).where(task_schedule.c.id == made.id)).one()
    assert row.next_run_at == clock.now + timedelta(hours=1)
    assert (row.last_miss_at, row.last_miss_lateness_ms, row.last_miss_reason) == (
        clock.now, 3_000_000, "deadline")  # fmt: skip
    assert drain(service) == ([], [])


def test_setting_and_clearing_a_deadline(service, fleet) -> None:
    made = create(service, fleet.racks[:1], None)
    assert service.set_starting_deadline(made.id, "2h").starting_deadline == "2h"
    assert service.set_starting_deadline(made.id, None).starting_deadline is None
    for bad, message in [
        ("30s", "starting_deadline: must be a duration of at least 1m, got '30s'"),
        ("soon", 'starting_deadline: invalid duration "soon"'),
        ("1m\n", "starting_deadline: must not contain control characters"),
    ]:
        before = snapshot(service)
        with pytest.raises(InvalidArgument, match=f"^{message}"):
            service.set_starting_deadline(made.id, bad)
        with pytest.raises(InvalidArgument, match=f"^{message}"):
            create(service, fleet.racks[:1], bad, name="other")
        assert snapshot(service) == before
    with pytest.raises(NotFound):
        service.set_starting_deadline("00000000-0000-4000-8000-000000000099", "5m")


# --- the dispatcher: the log line, the metric, the poll's result ---------------------------------


def test_the_dispatcher_logs_counts_and_returns_each_miss(service, fleet, clock) -> None:
    made = create(service, fleet.racks[:1], "15m", name='late "one" x=1')
    clock.now = made.next_run_at + 20 * MINUTE
    metrics = Metrics()
    sample = metrics.registry.get_sample_value
    assert sample("rackcron_firings_missed_total", {"reason": "deadline"}) == 0
    assert sample("rackcron_firings_missed_total", {"reason": "freeze"}) == 0
    stream = io.StringIO()
    configure("text", stream=stream)
    try:
        summary = Dispatcher(service, metrics=metrics, workers=1).poll()
    finally:
        configure("text")
    assert summary.fired == 0
    assert [(m.schedule_id, m.lateness_seconds) for m in summary.missed] == [(made.id, 1200.0)]
    assert sample("rackcron_firings_missed_total", {"reason": "deadline"}) == 1
    assert sample("rackcron_firings_missed_total", {"reason": "freeze"}) == 0
    assert sample("rackcron_schedules_fired_total") == 0
    (line,) = stream.getvalue().splitlines()
    assert " WARNING missed " in line
    # The name is data: quoted and escaped, so it cannot pose as another field.
    assert 'schedule="late \\"one\\" x=1"' in line
    assert f"id={made.id} reason=deadline due=2026-06-01T13:00:00Z lateness=1200s" in line
    assert line.endswith("starting_deadline=15m")


def test_run_warns_about_deadlines_shorter_than_two_polls(service, fleet) -> None:
    create(service, fleet.racks[:1], "1m", name="tight")
    create(service, fleet.racks[:1], "2m", name="roomy")
    create(service, fleet.racks[:1], None, name="none")
    stop = threading.Event()
    stop.set()  # start, warn, and stop before the first poll
    stream = io.StringIO()
    configure("text", stream=stream)
    try:
        Dispatcher(service, workers=1).run(stop, interval=60.0)
    finally:
        configure("text")
    (line,) = stream.getvalue().splitlines()
    assert " WARNING starting deadline shorter than twice the poll interval " in line
    assert "schedule=tight" in line and "starting_deadline=1m poll_interval=60s" in line


# --- the store: migration 0006 -------------------------------------------------------------------


@pytest.mark.slow
def test_the_migration_adds_the_columns_and_its_downgrade_keeps_every_schedule(
    store_url, clock
) -> None:
    """Down to the revision before 0006 and up again: the deadline and the last miss go and
    come back empty, the schedule and its scope stay (SQLite rebuilds the table), and the
    schema is again exactly the declared one."""
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from rackcron.domain.models import Rack
    from rackcron.store import upgrade
    from rackcron.store.engine import _alembic_config, _create_engine
    from rackcron.store.tables import metadata

    service = Service(open_engine(store_url), clock=clock)
    rack = service.upsert_rack(Rack(id="00000000-0000-4000-8000-000000000001", name="r1"))
    made = create(service, [rack.id], "15m")
    clock.now = made.next_run_at + 50 * MINUTE  # before the next hourly tick
    assert len(drain(service)[1]) == 1
    scopes = service.list_scopes(made.id)
    service.close()

    engine = _create_engine(store_url)
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":  # as upgrade() does: a rebuild must not cascade
            conn.connection.dbapi_connection.execute("PRAGMA foreign_keys = OFF")
        config = _alembic_config(conn)
        before = ScriptDirectory.from_config(config).get_revision("0006").down_revision
        with conn.begin():
            command.downgrade(config, before)
        columns = {c["name"] for c in sa.inspect(conn).get_columns("task_schedule")}
    assert not {"starting_deadline", "last_miss_at", "last_miss_reason"} & columns
    upgrade(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True}
        )
        assert compare_metadata(context, metadata) == []
    engine.dispose()
    service = Service(open_engine(store_url), clock=clock)
    try:
        after = service.get_schedule(made.id)
        assert (after.starting_deadline, after.last_miss) == (None, None)
        assert after.next_run_at == clock.now + timedelta(hours=1)  # the miss's advance
        assert service.list_scopes(made.id) == scopes
    finally:
        service.close()


# --- the tree: schema, validation, plan and diff ------------------------------------------------


def write_tree(path: Path, *schedules: str) -> Path:
    path.mkdir(exist_ok=True)
    (path / "racks.yaml").write_text(RACKS)
    (path / "schedules.yaml").write_text("".join(schedules))
    return path


def test_a_bad_deadline_is_reported_at_its_line(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "t",
        schedule("a", extra="  starting_deadline: 30s\n"),
        schedule("b", extra="  starting_deadline: soon\n"),
        schedule("c", extra="  starting_deadline: 15\n"),
        schedule("d", extra="  starting_deadline: 15m\n"),
    )
    result = run("validate", str(tree))
    assert result.exit_code == 1
    target = tree / "schedules.yaml"
    assert result.output.splitlines()[:3] == [
        f"{target}:10:22: error: starting_deadline: must be a duration of at least 1m, got '30s'"
        " [$.spec.starting_deadline]",
        f'{target}:20:22: error: starting_deadline: invalid duration "soon"'
        " [$.spec.starting_deadline]",
        f"{target}:30:22: error: expected text, got an integer (15) [$.spec.starting_deadline]",
    ]
    assert "2 files, 7 documents: 3 errors, 0 warnings" in result.output


def plan(tree: Path, url: str, *args: str) -> dict:
    result = run("plan", str(tree), "--format", "json", *args, url=url)
    assert result.exit_code in (0, 2), result.output
    return json.loads(result.output)


def schedule_change(plan_json: dict, name: str) -> dict:
    (change,) = [c for c in plan_json["changes"] if c["kind"] == "schedule" and c["name"] == name]
    return change


@pytest.mark.slow
def test_a_deadline_is_planned_created_updated_and_removed(store_url, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "t", schedule("a", extra="  starting_deadline: 15m\n"))
    created = schedule_change(plan(tree, store_url), "a")
    assert {"field": "starting_deadline", "old": None, "new": "15m"} in created["fields"]
    assert created["steps"][0]["args"]["starting_deadline"] == "15m"
    text = run("plan", str(tree), url=store_url).output
    assert "      starting_deadline: 15m\n" in text
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    service = Service.open(store_url)
    try:
        assert service.find_schedule("a").starting_deadline == "15m"
        assert plan(tree, store_url)["changes"] == []
        write_tree(tree, schedule("a", extra="  starting_deadline: 0.25h\n"))  # the same span
        assert plan(tree, store_url)["changes"] == []
        write_tree(tree, schedule("a", extra="  starting_deadline: 1h\n"))
        updated = schedule_change(plan(tree, store_url), "a")
        assert updated["action"] == "update"
        assert updated["fields"] == [{"field": "starting_deadline", "old": "15m", "new": "1h"}]
        assert updated["steps"] == [
            {"rpc": "SetStartingDeadline", "args": {"name": "a", "starting_deadline": "1h"}}
        ]
        text = run("plan", str(tree), url=store_url).output
        assert "    ~ starting_deadline: 15m -> 1h\n" in text
        markdown = run("plan", str(tree), "--format", "markdown", url=store_url).output
        assert "| starting_deadline | `15m` | `1h` |" in markdown
        assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
        assert service.find_schedule("a").starting_deadline == "1h"
        write_tree(tree, schedule("a"))
        removed = schedule_change(plan(tree, store_url), "a")
        assert removed["fields"] == [{"field": "starting_deadline", "old": "1h", "new": None}]
        assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
        assert service.find_schedule("a").starting_deadline is None
    finally:
        service.close()


def test_plan_warns_of_a_one_time_instant_already_past_its_deadline(
    store_url, tmp_path: Path
) -> None:
    past = schedule("once", spec_type="one-time", spec='"2020-01-01T00:00:00Z"',
                    extra="  starting_deadline: 1h\n")  # fmt: skip
    no_deadline = schedule("older", spec_type="one-time", spec='"2020-01-01T00:00:00Z"',
                           racks="[{name: r2}]")  # fmt: skip
    tree = write_tree(tmp_path / "t", past, no_deadline)
    data = plan(tree, store_url)
    message = (
        'schedule "once": its one-time instant 2020-01-01T00:00:00Z is further in the past than'
        " its starting_deadline (1h) allows: the dispatcher will record it as missed and"
        " consume it without firing"
    )
    assert data["warnings_detail"] == [{"code": "one_time_past_deadline", "message": message}]
    assert data["warnings_count"] == 1
    assert f"  warning: {message}" in run("plan", str(tree), url=store_url).output


# --- schedules get ---------------------------------------------------------------------------


def test_schedules_get_shows_the_deadline_and_the_last_miss(store_url, fleet, service, clock):
    # Daily at 13:00, so the firing 11.5 h late collapses no tick.
    made = create(service, fleet.racks[:1], "15m", spec_type=SpecType.CRON, spec="0 13 * * *")
    shown = run("schedules", "get", "late", url=store_url).output
    assert "deadline:       15m\n" in shown and "last miss:      -\n" in shown
    clock.now = made.next_run_at + timedelta(hours=11, minutes=34, seconds=1)
    drain(service)
    shown = run("schedules", "get", "late", url=store_url).output
    assert "last miss:      2026-06-02T00:34:01Z, 41641s (11h34m1s) late (deadline)\n" in shown, (
        shown
    )
    data = json.loads(
        run("schedules", "get", str(made.id), "--format", "json", url=store_url).output
    )
    assert data["starting_deadline"] == "15m"
    assert data["last_miss"] == {
        "at": "2026-06-02T00:34:01Z", "lateness_seconds": 41641.0, "reason": "deadline",
        "detail": None,
    }  # fmt: skip


# --- remote apply: rackcron.v1.Reconciler carries it, a server without it refuses ---------------


def remote(*args: str) -> tuple[int, str]:
    result = run(*args, "--owner", "fleet-repo")
    return result.exit_code, result.output


@pytest.mark.slow
def test_a_remote_apply_carries_the_deadline_as_a_local_one(
    shim, service: Service, tmp_path: Path
) -> None:
    from rackcron.reconciler.state import store_state

    server = shim.address
    tree = write_tree(tmp_path / "t", schedule("a", extra="  starting_deadline: 15m\n"),
                      schedule("b", racks="[{name: r2}]"))  # fmt: skip
    local = f"sqlite:///{tmp_path / 'local.db'}"
    for deadline in ("15m", "1h"):
        write_tree(tree, schedule("a", extra=f"  starting_deadline: {deadline}\n"),
                   schedule("b", racks="[{name: r2}]"))  # fmt: skip
        code, out = remote("apply", str(tree), "--server", server, "--auto-approve")
        assert code == 0 and "Apply complete" in out, out
        assert service.find_schedule("a").starting_deadline == deadline
        code, out = remote("plan", str(tree), "--server", server, "--detailed-exitcode")
        assert code == 0 and "No changes." in out, out
        assert remote("apply", str(tree), "--database-url", local, "--auto-approve")[0] == 0
    stored = Service.open(local)
    try:
        with service.transaction(write=False) as a, stored.transaction(write=False) as b:
            assert store_state(a).fingerprint() == store_state(b).fingerprint()
    finally:
        stored.close()


@pytest.mark.slow
def test_an_update_of_the_deadline_is_one_reconciler_step(shim, service, tmp_path) -> None:
    tree = write_tree(tmp_path / "t", schedule("a"))
    assert remote("apply", str(tree), "--server", shim.address, "--auto-approve")[0] == 0
    write_tree(tree, schedule("a", extra="  starting_deadline: 10m\n"))
    code, out = remote("plan", str(tree), "--server", shim.address, "--format", "json")
    assert code == 0, out
    (change,) = json.loads(out)["changes"]
    assert [s["rpc"] for s in change["steps"]] == ["SetStartingDeadline"]
    assert remote("apply", str(tree), "--server", shim.address, "--auto-approve")[0] == 0
    assert service.find_schedule("a").starting_deadline == "10m"
    # The Flow RPCs of `schedules --server` do not carry it: not shown rather than shown empty.
    shown = run("schedules", "get", "a", "--server", shim.address, "--format", "json").output
    assert not {"starting_deadline", "last_miss"} & json.loads(shown).keys()
    shown = run("schedules", "get", "a", "--server", shim.address).output
    assert "overlap policy:" in shown and "deadline:" not in shown and "last miss:" not in shown


@pytest.fixture
def flow_only(service: Service):
    """v1.Flow without rackcron.v1.Reconciler, as a Flow server offers it."""
    from rackcron.shim.server import ShimConfig, ShimServer

    server = ShimServer(service, ShimConfig(port=0, workers=4, grace=1.0))
    server.start()
    yield server.address
    server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_server_without_the_reconciler_is_refused_before_any_change(
    flow_only: str, service: Service, tmp_path: Path
) -> None:
    racks = write_tree(tmp_path / "inventory", schedule("other"))
    assert remote("apply", str(racks), "--database-url", str(service.engine.url),
                  "--auto-approve")[0] == 0  # fmt: skip
    tree = write_tree(tmp_path / "t", schedule("other"), schedule("new", racks="[{name: r2}]"),
                      schedule("a", extra="  starting_deadline: 15m\n"))  # fmt: skip
    before = snapshot(service)
    refusal = (
        'schedule "a" declares starting_deadline (15m), which this server cannot carry: it'
        " does not offer rackcron.v1.Reconciler (Flow, or rackcron serve without"
        " --grpc-reconciler), and the Flow RPCs do not carry it; nothing is applied"
    )
    code, out = remote("plan", str(tree), "--server", flow_only)
    assert code == 1 and f"  error: {refusal}" in out, out
    code, out = remote("apply", str(tree), "--server", flow_only, "--auto-approve")
    assert code == 1 and refusal in out and "Apply complete" not in out, out
    assert snapshot(service) == before  # not even the schedule without a deadline


def test_a_reconciler_that_does_not_carry_deadlines_is_refused(
    shim, service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older rackcron's Reconciler lists no ``carries``: refused the same way."""
    monkeypatch.setattr("rackcron.shim.extras.CARRIES", ())
    tree = write_tree(tmp_path / "t", schedule("a", extra="  starting_deadline: 15m\n"))
    before = snapshot(service)
    code, out = remote("apply", str(tree), "--server", shim.address, "--auto-approve")
    assert code == 1, out
    assert (
        'schedule "a" declares starting_deadline (15m), which this server cannot carry: its'
        " rackcron.v1.Reconciler does not carry it (an older rackcron); nothing is applied"
    ) in out
    assert snapshot(service) == before


@pytest.mark.repo
def test_the_example_in_the_docs_validates_and_reads_back_as_shown(
    store_url, clock, tmp_path: Path
) -> None:
    """docs/declaring.md "Starting deadline": its YAML applies, and ``schedules get`` shows a
    miss 11h34m late in the lines the page shows (the instant aside)."""
    import re

    from tests.support.trees import rack

    doc = (Path(__file__).resolve().parents[2] / "docs" / "declaring.md").read_text()
    section = doc[doc.index("### Starting deadline") :]
    (block,) = re.findall(r"```yaml\n(.*?)```", section[: section.index("\n## ")], re.DOTALL)
    (shown,) = re.findall(r"```console\n(.*?)```", section[: section.index("\n## ")], re.DOTALL)
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "racks.yaml").write_text(rack("rack-a01", 1))
    (tree / "firmware.yaml").write_text(block)
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    service = Service(open_engine(store_url), clock=clock)
    try:
        made = service.find_schedule("nightly-firmware")
        assert made.starting_deadline == "2h"
        clock.now = made.next_run_at + timedelta(hours=11, minutes=34)
        assert [m.name for m in drain(service)[1]] == ["nightly-firmware"]
    finally:
        service.close()
    got = run("schedules", "get", "nightly-firmware", url=store_url).output.splitlines()
    expected = [line for line in shown.splitlines() if line.startswith(("deadline", "last miss"))]
    at = clock.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    expected = [re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", at, line) for line in expected]
    assert len(expected) == 2 and all(line in got for line in expected), got
