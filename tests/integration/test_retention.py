"""Task retention on SQLite and PostgreSQL: which tasks go, in batches of at most 500, the
scopes pointing at them, replicas, ``serve --task-retention``, and firing on time meanwhile."""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from rackcron.cli.daemon import DispatchConfig, RetentionConfig, RunnerConfig, ServeConfig, serve
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.metrics import Metrics
from rackcron.dispatcher.retention import Pruner
from rackcron.domain.models import Rack, TaskStatus
from rackcron.domain.retention import MAX_BATCH, cutoff, prunable
from rackcron.logs import configure
from rackcron.service import Service
from rackcron.store import open_engine, transaction
from rackcron.store.tables import firing, task, task_schedule
from tests.support.cli import run, run_process
from tests.support.history import insert_tasks
from tests.support.marks import ONE_AT_A_TIME
from tests.support.service import create, scope_rows

pytestmark = pytest.mark.slow

RETENTION = timedelta(days=30)
DISPATCH_DOC = Path(__file__).resolve().parents[2] / "docs" / "dispatch.md"


def _rack(service: Service, name: str = "history") -> uuid.UUID:
    return service.upsert_rack(Rack(id=uuid.uuid4(), name=name)).id


def _task_ids(service: Service) -> set[uuid.UUID]:
    with transaction(service.engine, write=False) as conn:
        return set(conn.execute(sa.select(task.c.id)).scalars())


def _analyze(service: Service) -> None:
    """Table statistics, as a store in service has them (autovacuum on PostgreSQL)."""
    if service.engine.dialect.name == "postgresql":
        with service.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE task")


def test_only_old_final_tasks_owing_nothing_are_deleted(service, clock) -> None:
    """Every status, finished long ago, lately or never, owing a stop or not: exactly the
    tasks ``rackcron.domain.retention.prunable`` names go, and none other."""
    rack = _rack(service)
    now = clock.now
    finished = {"old": now - timedelta(days=60), "recent": now - timedelta(days=1), "never": None}
    cases: dict[uuid.UUID, dict[str, Any]] = {}
    for status in TaskStatus:
        if status == TaskStatus.UNKNOWN:
            continue
        for age, at in finished.items():
            for owed, leased in ((False, False), (True, True), (False, True)):
                (task_id,) = insert_tasks(
                    service, 1, rack_id=rack, status=status, finished_at=at,
                    cancel_pending=owed, next_check_at=now if leased else None,
                )  # fmt: skip
                cases[task_id] = dict(status=status, age=age, owed=owed, leased=leased)
    before = cutoff(now, RETENTION)
    expected = {
        i
        for i, c in cases.items()
        if prunable(
            c["status"],
            finished_at=finished[c["age"]],
            stop_owed=c["owed"],
            runner_work=c["leased"],
            before=before,
        )
    }
    summary = Pruner(service, RETENTION, pause=0).prune()
    gone = set(cases) - _task_ids(service)
    assert gone == expected and summary.deleted == len(gone)
    # Active, owing a stop, leased, recent or never finished: each of those is kept.
    assert sorted((cases[i]["status"].value, cases[i]["age"], cases[i]["owed"],
                   cases[i]["leased"]) for i in gone) == [
        ("completed", "old", False, False), ("failed", "old", False, False),
        ("terminated", "old", False, False),
    ]  # fmt: skip
    assert Pruner(service, RETENTION, pause=0).prune().deleted == 0


def test_no_transaction_deletes_more_than_500_tasks(service, clock) -> None:
    insert_tasks(service, 1_234, rack_id=_rack(service), finished_at=clock.now - 2 * RETENTION)
    per_transaction: list[int] = [0]

    def deleted(conn, cursor, statement, parameters, context, executemany) -> None:
        if re.match(r"DELETE FROM task\b", statement):
            per_transaction[-1] += cursor.rowcount

    def committed(conn) -> None:
        per_transaction.append(0)

    sa.event.listen(service.engine, "after_cursor_execute", deleted)
    sa.event.listen(service.engine, "commit", committed)
    metrics = Metrics()
    summary = Pruner(service, RETENTION, pause=0, metrics=metrics).prune()
    sa.event.remove(service.engine, "commit", committed)
    sa.event.remove(service.engine, "after_cursor_execute", deleted)
    assert [n for n in per_transaction if n] == [500, 500, 234]
    assert (summary.deleted, summary.batches) == (1_234, 3)
    assert metrics.registry.get_sample_value("rackcron_tasks_pruned_total") == 1_234
    assert _task_ids(service) == set()


@pytest.mark.parametrize(
    ("retention", "limit", "message"),
    [
        (RETENTION, MAX_BATCH + 1, "limit must be from 1 to 500, got 501"),
        (RETENTION, 0, "limit must be from 1 to 500, got 0"),
        (timedelta(0), MAX_BATCH, "the task retention must be positive"),
    ],
    ids=["over-500", "zero-limit", "zero-retention"],
)
def test_a_batch_beyond_500_or_a_retention_of_nothing_is_refused(
    service, retention, limit, message
):
    with pytest.raises(ValueError, match=message):
        service.prune_tasks(retention, limit=limit)


def test_scopes_pointing_at_deleted_tasks_lose_their_last_task(service, fleet, clock) -> None:
    """A scope's last task, once pruned, is unset; a scope whose last task is kept keeps it,
    and the schedule fires on as before."""
    racks = fleet.racks[:2]
    schedule = create(service, racks, name="nightly")
    first = service.trigger(schedule.id)
    old, recent = first.task_ids
    for task_id, age in ((old, 2 * RETENTION), (recent, timedelta(days=1))):
        with transaction(service.engine) as conn:
            conn.execute(
                task.update()
                .where(task.c.id == task_id)
                .values(status="completed", finished_at=clock.now - age, next_check_at=None)
            )
    assert {r.last_task_id for r in scope_rows(service, schedule.id)} == {old, recent}
    assert Pruner(service, RETENTION, pause=0).prune().deleted == 1
    by_rack = {r.rack_id: r.last_task_id for r in scope_rows(service, schedule.id)}
    assert by_rack == {racks[0]: None, racks[1]: recent}
    assert [s.last_task_id for s in service.list_scopes(schedule.id)] == [None, recent]
    again = service.trigger(schedule.id)  # racks[1]'s task is final: both fire
    by_rack = {r.rack_id: r.last_task_id for r in scope_rows(service, schedule.id)}
    assert sorted(by_rack.values(), key=str) == sorted(again.task_ids, key=str)


@pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_a_task_or_scope_held_by_another_transaction_is_left_for_later(store_url, clock):
    """PostgreSQL (SQLite has one writer at a time): a batch never waits for a row lock. A
    task locked elsewhere (a CancelTask in progress), or whose scope row a firing's
    write-back holds, stays for a later pass."""
    service = Service(open_engine(store_url), clock=clock)
    other = sa.create_engine(store_url)
    try:
        racks = [_rack(service, f"held-{i}") for i in range(2)]
        schedule = create(service, racks, name="held")
        fired = service.trigger(schedule.id).task_ids
        with transaction(service.engine) as conn:
            conn.execute(
                task.update()
                .where(task.c.id.in_(fired))
                .values(status="completed", finished_at=clock.now - 2 * RETENTION,
                        next_check_at=None)
            )  # fmt: skip
        locked, loose = insert_tasks(
            service, 2, rack_id=racks[0], finished_at=clock.now - 2 * RETENTION
        )
        scope_of = {r.last_task_id: r.id for r in scope_rows(service, schedule.id)}
        with other.connect() as conn, conn.begin():
            conn.execute(sa.select(task.c.id).where(task.c.id == locked).with_for_update())
            conn.execute(sa.text("SELECT 1 FROM task_schedule_scope WHERE id = :id FOR UPDATE"),
                         {"id": scope_of[fired[0]]})  # fmt: skip
            result: list[int] = []
            pass_ = threading.Thread(
                target=lambda: result.append(Pruner(service, RETENTION, pause=0).prune().deleted)
            )
            pass_.start()
            pass_.join(timeout=60)
            assert not pass_.is_alive(), "the pass waited for a lock"
        assert result == [2]  # loose and fired[1]
        assert _task_ids(service) == {locked, fired[0]}
        assert Pruner(service, RETENTION, pause=0).prune().deleted == 2  # released: they go
        assert [r.last_task_id for r in scope_rows(service, schedule.id)] == [None, None]
        assert loose not in _task_ids(service)
    finally:
        other.dispose()
        service.close()


def test_replicas_pruning_at_once_delete_each_task_once(store_url, clock) -> None:
    services = [Service(open_engine(store_url), clock=clock) for _ in range(3)]
    try:
        ids = insert_tasks(
            services[0], 3_000, rack_id=_rack(services[0]), finished_at=clock.now - 2 * RETENTION
        )
        _analyze(services[0])
        metrics = [Metrics() for _ in services]
        deleted: list[int] = []
        errors: list[BaseException] = []

        def replica(service: Service, metric: Metrics) -> None:
            try:
                deleted.append(Pruner(service, RETENTION, pause=0, metrics=metric).prune().deleted)
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=replica, args=pair)
            for pair in zip(services, metrics, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert sum(deleted) == len(ids) == 3_000
        counted = [m.registry.get_sample_value("rackcron_tasks_pruned_total") for m in metrics]
        assert sum(counted) == 3_000  # never counted twice
        assert _task_ids(services[0]) == set()
    finally:
        for service in services:
            service.close()


@ONE_AT_A_TIME
def test_pruning_100000_tasks_while_firing_every_second_keeps_the_lag_under_a_poll(
    store_url,
) -> None:
    """``serve`` with ``--task-retention``, the dispatcher firing a schedule every second
    (and the runner delivering its tasks): the pass deletes 100,000 old tasks while the
    firings go on, each with a lag, as the dispatcher records it, under the poll interval
    plus one second."""
    poll = 1.0
    service = Service.open(store_url)
    try:
        insert_tasks(service, 100_000, rack_id=_rack(service),
                     finished_at=service.clock() - 2 * RETENTION)  # fmt: skip
        _analyze(service)
        schedule = create(service, [_rack(service, "busy")], name="every-second", spec="1s")
        with transaction(service.engine) as conn:  # due at once: the first poll fires it
            conn.execute(
                task_schedule.update()
                .where(task_schedule.c.id == schedule.id)
                .values(next_run_at=service.clock())
            )
        config = ServeConfig(
            dispatch=DispatchConfig(poll_interval=poll),
            runner=RunnerConfig(interval=0.2, status_interval=0.2),
            controllers=Controllers(Simulator(default_duration=0.3)),
            retention=RetentionConfig(RETENTION),
        )
        stream = io.StringIO()
        configure("json", stream=stream)
        stop = threading.Event()
        server = threading.Thread(target=serve, args=(service, config, stop))
        try:
            server.start()
            deadline = time.monotonic() + 300
            while '"tasks pruned"' not in stream.getvalue():
                assert server.is_alive() and time.monotonic() < deadline, stream.getvalue()[-2000:]
                time.sleep(0.1)
        finally:
            stop.set()
            server.join()
            configure("text")
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
        assert not [line for line in lines if line["level"] == "ERROR"]
        events = [line["event"] for line in lines]
        pruned = events.index("tasks pruned")
        assert lines[pruned]["tasks"] == 100_000
        assert lines[pruned]["batches"] == 100_000 // MAX_BATCH
        fired = [line for line in lines if line["event"] == "fired"]
        during = [line for line in lines[:pruned] if line["event"] == "fired"]
        # A pass waits at least 10 ms 199 times: it spans the polls at 0 s and 1 s, at least.
        assert len(during) >= 2, "the pass ended before the dispatcher fired twice"
        assert max(line["lag"] for line in fired) < poll + 1.0, fired
        left = service.task_counts()
        assert sum(left.values()) == len([f for f in fired if f["submitted"]])
    finally:
        service.close()


def test_a_failing_pass_is_one_error_line_and_the_next_pass_tries_again(tmp_path) -> None:
    blocker = tmp_path / "a-file"  # a database "inside" a regular file can never be opened
    blocker.write_text("")
    service = Service(sa.create_engine(f"sqlite:///{blocker / 'x.db'}"))
    stream = io.StringIO()
    configure("json", stream=stream)
    stop = threading.Event()
    loop = threading.Thread(target=Pruner(service, RETENTION).run, args=(stop,),
                            kwargs={"interval": 0.05})  # fmt: skip
    try:
        loop.start()
        deadline = time.monotonic() + 60
        while stream.getvalue().count('"task pruning failed"') < 2:
            assert loop.is_alive() and time.monotonic() < deadline, stream.getvalue()
            time.sleep(0.05)
    finally:
        stop.set()
        loop.join()
        configure("text")
        service.close()
    failed = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert {line["level"] for line in failed} == {"ERROR"}
    assert all("database error" in line["error"] and "traceback" not in line for line in failed)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0s", "must be positive"),
        ("-720h", "must be positive"),
        ("30d", 'unknown unit "d"'),
        ("a month", "invalid duration"),
        ("", "invalid duration"),
    ],
    ids=["zero", "negative", "days", "words", "empty"],
)
def test_a_bad_task_retention_is_a_usage_error_naming_the_flag(value, message, tmp_path):
    result = run("serve", "--task-retention", value, "--database-url", f"sqlite:///{tmp_path}/x.db")
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--task-retention'" in result.output and message in result.output
    assert not (tmp_path / "x.db").exists()


def test_serve_keeps_every_task_by_default_and_prunes_with_a_retention(store_url, tmp_path):
    service = Service.open(store_url)
    rack = _rack(service)
    now = service.clock()
    old = set(insert_tasks(service, 20, rack_id=rack, finished_at=now - timedelta(days=31)))
    kept = set(insert_tasks(service, 5, rack_id=rack, finished_at=now - timedelta(days=29)))
    kept |= set(insert_tasks(service, 1, rack_id=rack, status=TaskStatus.WAITING,
                             finished_at=None, created_at=now - timedelta(days=90)))  # fmt: skip
    service.close()
    daemon = ["serve", "--database-url", store_url, "--no-runner"]

    result = run_process(*daemon, "--log-format", "json", "--stop-after", "1s", timeout=60,
                         fail_on_crash=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert _events(result.stderr)["serving"]["task_retention"] == "off"
    assert _ids(store_url) == old | kept

    log = tmp_path / "serve.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rackcron.cli", *daemon, "--task-retention", "720h"],
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 60
        while " INFO tasks pruned " not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0, log.read_text()
    text = log.read_text()
    assert re.search(r" INFO serving .*\btask_retention=2592000s(\s|$)", text), text
    (pruned,) = [line for line in text.splitlines() if " INFO tasks pruned " in line]
    assert " tasks=20 batches=1 firings=0 " in pruned and pruned.endswith(" retention=2592000s")
    assert _ids(store_url) == kept
    # docs/dispatch.md "Retention" shows the line as it is, numbers aside.
    documented = next(line for line in DISPATCH_DOC.read_text().splitlines()
                      if " INFO tasks pruned " in line)  # fmt: skip
    assert _shape(pruned) == _shape(documented)


def _shape(line: str) -> str:
    return re.sub(r"\d+", "N", line)


def _events(log: str) -> dict[str, dict[str, Any]]:
    """The last line of each event in a JSON log."""
    lines = [json.loads(text) for text in log.splitlines()]
    return {line["event"]: line for line in lines}


def _ids(url: str) -> set[uuid.UUID]:
    service = Service.open(url)
    try:
        return _task_ids(service)
    finally:
        service.close()


def test_sqlite_finds_old_tasks_and_their_scopes_through_indexes(tmp_path: Path, clock) -> None:
    service = Service(open_engine(f"sqlite:///{tmp_path / 'plan.db'}"), clock=clock)
    insert_tasks(service, 3, rack_id=_rack(service), finished_at=clock.now - 2 * RETENTION)
    captured: list[tuple[str, Any]] = []

    def capture(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.startswith("SELECT"):
            captured.append((statement, parameters))

    sa.event.listen(service.engine, "before_cursor_execute", capture)
    try:
        assert service.prune_tasks(RETENTION) == 3
        with service.engine.connect() as conn:
            plans = [
                " | ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {s}", p))
                for s, p in captured
            ]
    finally:
        service.close()
    oldest, *scopes = plans
    assert "USING INDEX ix_task_finished" in oldest, oldest
    assert scopes and all("ix_task_schedule_scope_last_task_id" in p for p in scopes), scopes


def test_0008_adds_the_retention_indexes_and_the_downgrade_drops_them(store_url) -> None:
    from alembic import command
    from alembic.script import ScriptDirectory

    from rackcron.store.engine import _alembic_config

    def indexes(engine: sa.Engine) -> set[str]:
        inspector = sa.inspect(engine)
        return {
            i["name"] for table in ("task", "task_schedule_scope")
            for i in inspector.get_indexes(table)
        }  # fmt: skip

    wanted = {"ix_task_finished", "ix_task_schedule_scope_last_task_id"}
    engine = open_engine(store_url)
    try:
        assert wanted <= indexes(engine)
        with engine.begin() as conn:
            config = _alembic_config(conn)
            before = ScriptDirectory.from_config(config).get_revision("0008").down_revision
            assert isinstance(before, str)
            command.downgrade(config, before)
        assert not wanted & indexes(engine)
        with engine.begin() as conn:
            command.upgrade(_alembic_config(conn), "head")
        assert wanted <= indexes(engine)
    finally:
        engine.dispose()


def test_finished_firing_records_are_pruned_and_open_ones_kept(service, fleet, clock) -> None:
    """docs/spec/SEMANTICS.md "Dispatch": finished firing records go with the tasks; a
    record that still owes a task is never deleted, however old."""
    create(service, fleet.racks[:1], name="old", spec="1h")
    owing = create(service, fleet.racks[1:2], name="owing", spec="1h")
    clock.advance(hours=1)
    assert len(service.fire_due()) == 2  # both fire, both finish: two records
    with service.transaction() as ops:  # a trigger whose replica died before submitting
        ops.firing.claim(owing.id)
    firings = sa.select(sa.func.count()).select_from(firing)
    with transaction(service.engine) as conn:
        assert conn.execute(firings).scalar_one() == 3
    clock.advance(days=31)
    pruner = Pruner(service, RETENTION, pause=0)
    assert pruner.prune().firings == 2  # the two finished ones
    with transaction(service.engine) as conn:
        (left,) = conn.execute(sa.select(firing.c.schedule_id, firing.c.finished_at)).all()
    assert left == (owing.id, None)
    completed = [c for b in service.fire_batches() for c in b.completed]  # its lease ran out
    assert [c.schedule_name for c in completed] == ["owing"]
