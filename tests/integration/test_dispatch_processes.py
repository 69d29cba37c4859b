"""The dispatcher as real processes: replicas sharing one PostgreSQL database, and crashes.

* Replicas (issue 4 "Replicas"): four ``rackcron dispatch`` processes over 1,000
  interval schedules of three scopes each, for more than 20 polls: every firing
  covers every scope exactly once, no schedule fires twice in one tick (two
  firings are never closer than its interval) and none is missed (never further
  apart than interval + poll interval + slack), and every replica did some of it.
* Crashes: ``RACKCRON_FAULT`` kills the dispatcher with SIGKILL at each phase
  boundary; the store is checked, then the dispatcher restarts: the recorded firing is
  completed once its lease runs out, the tick never fires twice, the overlap check sees
  a task that was never written back, and no row stays locked. docs/dispatch.md states
  the resulting guarantees.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from rackcron.domain.models import OverlapPolicy, Rack, ScheduleConfig
from rackcron.service import Service
from rackcron.store import open_engine, transaction
from rackcron.store.tables import task, task_schedule, task_schedule_scope
from tests.support.marks import ONE_AT_A_TIME
from tests.support.service import create, make_operation

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]

POSTGRES_ONLY = pytest.param("postgres", marks=pytest.mark.postgres)


def dispatch(url: str, *args: str, fault: str | None = None, stderr: Any = subprocess.PIPE):
    env = {**os.environ, "RACKCRON_DATABASE_URL": url}
    env.pop("RACKCRON_FAULT", None)
    if fault:
        env["RACKCRON_FAULT"] = fault
    return subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "dispatch", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


LEASE = 1.0  # seconds: a crashed replica's firings wait this long for another


def run_once(url: str, fault: str | None = None) -> tuple[int, str, str]:
    proc = dispatch(url, "--once", "--firing-lease", f"{LEASE:g}s", fault=fault)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


# --- replicas ---------------------------------------------------------------------------------

SCHEDULES, SCOPES = 1_000, 3
RACKS = SCHEDULES * SCOPES  # a rack per scope: a rack's queue holds at most 5 waiting tasks
INTERVAL, POLL, RUN_FOR = 2.0, 1.0, 30.0


def _finish_pending_tasks(url: str, stop: threading.Event) -> None:
    """Stand in for the task runner, which ``dispatch`` does not run: every pending task
    completes at once, so each scope's rack is free again by its next tick and every
    firing's every scope gets a task (the evidence below)."""
    engine = open_engine(url)
    try:
        while not stop.wait(0.25):
            with transaction(engine) as conn:
                conn.execute(
                    task.update()
                    .where(task.c.status == "pending")
                    .values(status="completed", next_check_at=None)
                )
    finally:
        engine.dispose()


@pytest.mark.parametrize("store_url", [POSTGRES_ONLY], indirect=True)
def test_four_replicas_fire_every_scope_of_every_tick_exactly_once(store_url, tmp_path) -> None:
    service = Service.open(store_url)
    try:
        racks = [uuid.uuid4() for _ in range(RACKS)]
        with service.transaction() as ops:
            for i, r in enumerate(racks):
                ops.inventory.upsert_rack(Rack(id=r, name=f"rack-{i:03d}"))
            for i in range(SCHEDULES):
                config = ScheduleConfig(
                    name=f"s{i:04d}", spec_type="interval", spec=f"{INTERVAL:g}s",
                    overlap_policy=OverlapPolicy.QUEUE,  # every scope submits every tick
                )  # fmt: skip
                chosen = [racks[i * SCOPES + k] for k in range(SCOPES)]
                ops.schedules.create_schedule(config, make_operation("power_on", chosen))
    finally:
        service.close()
    log_files = [tmp_path / f"replica-{i}.log" for i in range(4)]
    replicas = [
        dispatch(store_url, "--poll-interval", f"{POLL:g}s", "--batch-size", "200",
                 "--log-format", "json", stderr=path.open("w"))
        for path in log_files
    ]  # fmt: skip
    finished = threading.Event()
    finisher = threading.Thread(target=_finish_pending_tasks, args=(store_url, finished))
    finisher.start()
    try:
        time.sleep(RUN_FOR)
    finally:
        finished.set()
        finisher.join()
    stopped_at = datetime.now(UTC)
    for proc in replicas:
        proc.send_signal(signal.SIGTERM)
    logs = []
    for proc, path in zip(replicas, log_files, strict=True):
        proc.communicate(timeout=60)
        lines = path.read_text().splitlines()
        assert proc.returncode == 0, lines[-20:]
        logs.append([json.loads(line) for line in lines if line.startswith("{")])
    assert not [e for log in logs for e in log if e["level"] == "ERROR"]
    fired_per_replica = [sum(e["event"] == "fired" for e in log) for log in logs]
    assert all(n > 0 for n in fired_per_replica), fired_per_replica  # the work was shared

    engine = open_engine(store_url)
    with transaction(engine, write=False) as conn:
        rows = conn.execute(
            sa.select(task.c.schedule_id, task.c.scope_id, task.c.description)
        ).all()
        scope_count = dict(
            conn.execute(
                sa.select(task_schedule_scope.c.schedule_id, sa.func.count()).group_by(
                    task_schedule_scope.c.schedule_id
                )
            ).all()
        )
        next_runs = dict(
            conn.execute(sa.select(task_schedule.c.id, task_schedule.c.next_run_at)).all()
        )
    engine.dispose()

    per_firing: dict[tuple[uuid.UUID, str], Counter[uuid.UUID]] = defaultdict(Counter)
    for schedule_id, scope_id, description in rows:
        per_firing[schedule_id, description.rpartition(" — ")[2]][scope_id] += 1
    for (schedule_id, _), scopes in per_firing.items():  # every scope once per firing
        assert len(scopes) == scope_count[schedule_id] and set(scopes.values()) == {1}
    times: dict[uuid.UUID, list[datetime]] = defaultdict(list)
    for schedule_id, at in per_firing:
        times[schedule_id].append(datetime.fromisoformat(at.replace("Z", "+00:00")))
    assert len(times) == SCHEDULES
    counts = Counter(len(f) for f in times.values())
    slack = 3.0  # a poll's drain time on a loaded 2-core host
    for schedule_id, fired in times.items():
        fired.sort()
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(fired)]
        assert min(gaps) >= INTERVAL, "a schedule fired twice within one interval"
        assert max(gaps) <= INTERVAL + POLL + slack, "a tick was missed"
        assert len(fired) >= RUN_FOR / (INTERVAL + POLL + slack), (counts, fired_per_replica)
        assert next_runs[schedule_id] == fired[-1] + timedelta(seconds=INTERVAL)
        overdue = (stopped_at - next_runs[schedule_id]).total_seconds()
        assert overdue <= POLL + slack, "left behind at the end"
    assert len(rows) == sum(len(f) for f in times.values()) * SCOPES
    assert RUN_FOR / POLL >= 20  # the run spans at least 20 poll intervals


# --- crashes ----------------------------------------------------------------------------------


def make_due(url: str, schedule_id: uuid.UUID) -> None:
    engine = open_engine(url)
    with transaction(engine) as conn:
        conn.execute(
            task_schedule.update()
            .where(task_schedule.c.id == schedule_id)
            .values(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    engine.dispose()


def store_state(url: str, schedule_id: uuid.UUID) -> tuple[int, list, datetime | None]:
    engine = open_engine(url)
    with transaction(engine, write=False) as conn:
        tasks = conn.execute(sa.select(sa.func.count()).select_from(task)).scalar_one()
        written = conn.execute(
            sa.select(task_schedule_scope.c.last_task_id).order_by(task_schedule_scope.c.ordinal)
        ).scalars()
        last_run = conn.execute(
            sa.select(task_schedule.c.last_run_at).where(task_schedule.c.id == schedule_id)
        ).scalar_one()
        written = list(written)
    engine.dispose()
    return tasks, written, last_run


def assert_not_locked(url: str, schedule_id: uuid.UUID) -> None:
    """The schedule row can be locked at once: the dead process holds nothing."""
    engine = open_engine(url)
    with transaction(engine) as conn:
        query = sa.select(task_schedule.c.id).where(task_schedule.c.id == schedule_id)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update(nowait=True)
        assert conn.execute(query).scalar_one() == schedule_id
    engine.dispose()


def tasks_per_firing_and_scope(url: str) -> Counter[tuple[uuid.UUID, uuid.UUID]]:
    """How many tasks each (firing, scope) has: at most one, whoever created it."""
    engine = open_engine(url)
    with transaction(engine, write=False) as conn:
        rows = conn.execute(sa.select(task.c.firing_id, task.c.scope_id)).all()
    engine.dispose()
    return Counter((f, s) for f, s in rows)


@pytest.mark.parametrize(
    ("fault", "tasks_after_crash"), [("claimed", 0), ("submitting", 0), ("submitted", 2)]
)
def test_a_dispatcher_killed_at_a_phase_boundary_loses_nothing_and_doubles_nothing(
    store_url, fault, tasks_after_crash
) -> None:
    """docs/spec/SEMANTICS.md "Dispatch": phase 1 records the firing; killed before its
    tasks are committed, the firing is completed by the next poll once its lease has run
    out, each scope's task once; the spent tick never fires again."""
    service = Service.open(store_url)
    try:
        racks = [uuid.uuid4(), uuid.uuid4()]
        for i, r in enumerate(racks):
            service.upsert_rack(Rack(id=r, name=f"crash-{i}"))
        schedule = create(service, racks, spec="1h")
    finally:
        service.close()
    make_due(store_url, schedule.id)

    code, _, err = run_once(store_url, fault=fault)
    assert code == -signal.SIGKILL, err
    tasks, written, last_run = store_state(store_url, schedule.id)
    assert last_run is not None  # phase 1 committed: the tick is spent
    assert tasks == tasks_after_crash
    assert written == [None, None]
    assert_not_locked(store_url, schedule.id)

    time.sleep(LEASE + 0.2)  # the dead replica's lease runs out
    code, out, err = run_once(store_url)  # restarted: it pays what the firing owes, once
    assert code == 0 and out.startswith("fired 0 schedule(s)"), err
    assert store_state(store_url, schedule.id)[0] == 2
    assert set(tasks_per_firing_and_scope(store_url).values()) == {1}
    if tasks_after_crash == 0:
        assert "completed late" in err and "submitted=2" in err
        assert None not in store_state(store_url, schedule.id)[1]  # written back
    code, out, err = run_once(store_url)  # and never again
    assert code == 0 and "completed late" not in err
    assert store_state(store_url, schedule.id)[0] == 2

    make_due(store_url, schedule.id)  # the next tick: the tasks are still active
    code, out, err = run_once(store_url)
    assert code == 0, err
    assert "2 skipped" in out
    assert store_state(store_url, schedule.id)[0] == 2
