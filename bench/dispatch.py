"""Dispatch throughput: rackcron's ``Service.fire_due`` against the SQL floor, in one run.

The backlog (issue 4, "Throughput"): ``--schedules`` due interval schedules (default
10,000), each scoped to 4 racks of its own (so the default skip policy submits every
scope), each rack holding ``--components`` components (default 4). The backlog is
seeded once per backend; every measurement drains a fresh copy of it.

* (a) floor: the minimum a firing needs with plain SQLAlchemy Core on the same schema
  and engine settings, in transactions of ``--batch`` schedules (default 500): select
  the due schedules (``FOR UPDATE SKIP LOCKED`` on PostgreSQL) and their scopes,
  advance every schedule, insert 4 task rows, write back 4 scopes, one executemany
  each. It gets rackcron's two cheap tricks too (time-ordered task ids, the cyclic
  garbage collector held off per batch), so the ratio measures the rest;
* (a+) the floor plus what rackcron also writes for each task: its components, read
  from the rack (one query per batch) into ``component_uuids`` and ``task_component``
  rows (one more executemany), so b/a+ compares the same writes;
* (b) rackcron: ``Service.fire_due(batch_size=--batch)`` draining the whole backlog.

Prints scope-tasks per second for each, the ratio rackcron / floor (target >= 50%) and
rackcron's drain time for the backlog (target: within one default poll interval, 10 s).
Every run is checked: each scope got exactly one task and every schedule advanced.

Backends: SQLite (temporary files) always; PostgreSQL too when
``RACKCRON_TEST_POSTGRES_URL`` names an administrative database: the script creates
its own databases there and drops them at the end.

Run: ``.venv/bin/python bench/dispatch.py`` (about two minutes on a 2-core host),
``--schedules 1000`` for a quick look, ``--components 0`` for tasks without components
(then a+ equals a), ``--profile`` to print where rackcron's time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from rackcron.firing import task_description
from rackcron.gcpause import gc_paused
from rackcron.models import PowerOn, RackTarget, TargetSpec
from rackcron.service import Service
from rackcron.service._tasks import new_task_id
from rackcron.store import open_engine, transaction
from rackcron.store.tables import (
    component,
    rack,
    task,
    task_component,
    task_schedule,
    task_schedule_scope,
)
from rackcron.templates import task_operation_text, to_template

POSTGRES_ENV = "RACKCRON_TEST_POSTGRES_URL"
SCOPES = 4
INTERVAL = timedelta(hours=1)
SEED_CHUNK = 5_000


@dataclass(frozen=True)
class Shape:
    schedules: int
    components: int
    batch: int


# --- the backlog ------------------------------------------------------------------------------


def _insert(conn: sa.Connection, table: sa.Table, rows: list[dict]) -> None:
    for start in range(0, len(rows), SEED_CHUNK):
        conn.execute(table.insert(), rows[start : start + SEED_CHUNK])


def seed(engine: Engine, shape: Shape, now: datetime) -> None:
    """``shape.schedules`` interval schedules, due a minute ago, each on 4 racks of its own."""
    template = to_template(
        PowerOn(target_spec=TargetSpec(racks=[RackTarget(id=str(uuid.uuid4()))]))
    )
    due = now - timedelta(minutes=1)
    racks, components, schedules, scopes = [], [], [], []
    for i in range(shape.schedules):
        schedule_id = uuid.uuid4()
        schedules.append(
            {
                "id": schedule_id,
                "name": f"bench-{i:06d}",
                "spec_type": "interval",
                "spec": "1h",
                "timezone": "UTC",
                "operation_type": template.type,
                "operation_code": template.code,
                "operation_information": template.information,
                "overlap_policy": "skip",
                "enabled": True,
                # Spread over the last minute so "oldest due first" has an order to keep.
                "next_run_at": due + timedelta(microseconds=i),
                "last_run_at": None,
                "created_at": due,
                "updated_at": due,
                "protect": False,
            }
        )
        for ordinal in range(SCOPES):
            rack_id = uuid.uuid4()
            racks.append({"id": rack_id, "name": f"rack-{i:06d}-{ordinal}", "created_at": due,
                          "updated_at": due})  # fmt: skip
            components += [
                {"id": uuid.uuid4(), "rack_id": rack_id, "type": "COMPUTE", "name": f"c{n}",
                 "created_at": due, "updated_at": due}
                for n in range(shape.components)
            ]  # fmt: skip
            scopes.append({"id": uuid.uuid4(), "schedule_id": schedule_id, "rack_id": rack_id,
                           "component_filter": None, "ordinal": ordinal, "created_at": due})  # fmt: skip
    with transaction(engine) as conn:
        _insert(conn, rack, racks)
        _insert(conn, component, components)
        _insert(conn, task_schedule, schedules)
        _insert(conn, task_schedule_scope, scopes)


def check(engine: Engine, shape: Shape, now: datetime) -> None:
    """Every scope got exactly one task, every schedule advanced past ``now``."""
    with transaction(engine, write=False) as conn:
        tasks = conn.execute(sa.select(sa.func.count()).select_from(task)).scalar_one()
        scopes = conn.execute(sa.select(sa.func.count(sa.distinct(task.c.scope_id)))).scalar_one()
        written = conn.execute(
            sa.select(sa.func.count())
            .select_from(task_schedule_scope)
            .where(task_schedule_scope.c.last_task_id.is_not(None))
        ).scalar_one()
        still_due = conn.execute(
            sa.select(sa.func.count())
            .select_from(task_schedule)
            .where(task_schedule.c.next_run_at <= now)
        ).scalar_one()
    expected = shape.schedules * SCOPES
    if (tasks, scopes, written, still_due) != (expected, expected, expected, 0):
        raise SystemExit(
            f"wrong result: {tasks} tasks for {scopes} scopes, {written} written back,"
            f" {still_due} schedules still due (expected {expected} tasks)"
        )


# --- (a) the SQL floor ------------------------------------------------------------------------


def floor(engine: Engine, shape: Shape, now: datetime, *, components: bool = False) -> None:
    """Drain the backlog with the minimum statements, one transaction per batch.

    ``components``: also read the racks' components and write each task's
    ``component_uuids`` and ``task_component`` rows, as rackcron does.
    """
    template = to_template(
        PowerOn(target_spec=TargetSpec(racks=[RackTarget(id=str(uuid.uuid4()))]))
    )
    operation = task_operation_text(template)
    postgres = engine.dialect.name == "postgresql"
    due = (
        sa.select(task_schedule.c.id, task_schedule.c.name)
        .where(
            task_schedule.c.enabled == sa.true(),
            task_schedule.c.next_run_at.is_not(None),
            task_schedule.c.next_run_at <= now,
        )
        .order_by(task_schedule.c.next_run_at)
        .limit(shape.batch)
    )
    if postgres:
        due = due.with_for_update(skip_locked=True)
    advance_schedule = (
        task_schedule.update()
        .where(task_schedule.c.id == sa.bindparam("b_id"))
        .values(next_run_at=now + INTERVAL, last_run_at=now, updated_at=now)
    )
    write_back = (
        task_schedule_scope.update()
        .where(task_schedule_scope.c.id == sa.bindparam("b_scope"))
        .values(last_task_id=sa.bindparam("b_task"))
    )
    while True:
        with gc_paused(), transaction(engine) as conn:
            schedules = conn.execute(due).all()
            if not schedules:
                return
            names = dict(schedules)
            scopes = conn.execute(
                sa.select(
                    task_schedule_scope.c.id,
                    task_schedule_scope.c.schedule_id,
                    task_schedule_scope.c.rack_id,
                ).where(task_schedule_scope.c.schedule_id.in_(list(names)))
            ).all()
            conn.execute(advance_schedule, [{"b_id": s.id} for s in schedules])
            on_rack: dict[uuid.UUID, list[uuid.UUID]] = {}
            if components:
                query = sa.select(component.c.rack_id, component.c.id).where(
                    component.c.rack_id.in_([s.rack_id for s in scopes])
                )
                for rack_id, component_id in conn.execute(query):
                    on_rack.setdefault(rack_id, []).append(component_id)
            tasks, backs, covers = [], [], []
            for scope_id, schedule_id, rack_id in scopes:
                task_id = new_task_id()
                covered = on_rack.get(rack_id, [])
                covers += [{"task_id": task_id, "component_id": c} for c in covered]
                tasks.append(
                    {
                        "id": task_id,
                        "schedule_id": schedule_id,
                        "scope_id": scope_id,
                        "rack_id": rack_id,
                        "operation": operation,
                        "operation_type": template.type,
                        "operation_code": template.code,
                        "operation_information": template.information,
                        "component_uuids": [str(c) for c in covered],
                        "description": task_description(names[schedule_id], now),
                        "status": "pending",
                        "message": "",
                        "created_at": now,
                        "updated_at": now,
                    }
                )
                backs.append({"b_scope": scope_id, "b_task": task_id})
            conn.execute(task.insert(), tasks)
            if covers:
                conn.execute(task_component.insert(), covers)
            conn.execute(write_back, backs)


# --- (b) rackcron -----------------------------------------------------------------------------


def dispatch(engine: Engine, shape: Shape, now: datetime, profile: bool) -> None:
    service = Service(engine, clock=lambda: now)
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    results = service.fire_due(batch_size=shape.batch)
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    submitted = sum(len(r.task_ids) for r in results)
    if submitted != shape.schedules * SCOPES:
        raise SystemExit(f"rackcron submitted {submitted} tasks")


# --- stores ---------------------------------------------------------------------------------

# A store factory: ``with fresh() as engine`` gives a new copy of the seeded backlog.
Fresh = Callable[[], AbstractContextManager[Engine]]


@contextmanager
def sqlite_stores(workdir: Path, shape: Shape) -> Iterator[Fresh]:
    """Seed one SQLite file; each fresh store is a copy of it."""
    seeded = workdir / "seeded.db"
    engine = open_engine(f"sqlite:///{seeded}", migrate=True)
    seed(engine, shape, datetime.now(UTC))
    engine.dispose()
    with closing(sqlite3.connect(seeded)) as conn:  # fold the WAL into the file to copy
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @contextmanager
    def fresh() -> Iterator[Engine]:
        path = workdir / f"{uuid.uuid4().hex}.db"
        shutil.copyfile(seeded, path)
        engine = open_engine(f"sqlite:///{path}")
        try:
            yield engine
        finally:
            engine.dispose()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)

    yield fresh


def _admin(admin_url: str, statement: str) -> None:
    engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


def _database_url(admin_url: str, name: str) -> str:
    return sa.make_url(admin_url).set(database=name).render_as_string(hide_password=False)


@contextmanager
def postgres_stores(admin_url: str, shape: Shape) -> Iterator[Fresh]:
    """Seed one PostgreSQL database; each fresh store is ``CREATE DATABASE ... TEMPLATE`` it.

    Every database this creates is dropped at the end, whatever happens.
    """
    prefix = f"rackcron_bench_{uuid.uuid4().hex[:8]}"
    seeded = f"{prefix}_seeded"
    _admin(admin_url, f'CREATE DATABASE "{seeded}"')
    try:
        engine = open_engine(_database_url(admin_url, seeded), migrate=True)
        try:
            seed(engine, shape, datetime.now(UTC))
        finally:
            engine.dispose()

        @contextmanager
        def fresh() -> Iterator[Engine]:
            name = f"{prefix}_{uuid.uuid4().hex[:8]}"
            _admin(admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{seeded}"')
            engine = None
            try:
                engine = open_engine(_database_url(admin_url, name))
                with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                    conn.exec_driver_sql("VACUUM ANALYZE")
                yield engine
            finally:
                if engine is not None:
                    engine.dispose()
                _admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        yield fresh
    finally:
        _admin(admin_url, f'DROP DATABASE IF EXISTS "{seeded}" WITH (FORCE)')


# --- the run ----------------------------------------------------------------------------------


def timed(fresh: Fresh, shape: Shape, run: Callable[..., None], **kw: Any) -> float:
    """Time ``run`` draining a fresh copy of the backlog; the result is checked afterwards."""
    with fresh() as engine:
        now = datetime.now(UTC)
        began = time.perf_counter()
        run(engine, shape, now, **kw)
        elapsed = time.perf_counter() - began
        check(engine, shape, now)
    return elapsed


def measure(label: str, stores: AbstractContextManager[Fresh], shape: Shape, repeats: int,
            profile: bool) -> None:  # fmt: skip
    tasks = shape.schedules * SCOPES
    runs: dict[str, list[float]] = {"floor": [], "floor+": [], "rackcron": []}
    with stores as fresh:
        for _ in range(repeats):
            runs["floor"].append(timed(fresh, shape, floor))
            runs["floor+"].append(timed(fresh, shape, floor, components=True))
            runs["rackcron"].append(timed(fresh, shape, dispatch, profile=profile))
    seconds = {name: statistics.median(times) for name, times in runs.items()}
    rate = {name: tasks / s for name, s in seconds.items()}
    print(f"{label}: {shape.schedules:,} schedules x {SCOPES} scopes = {tasks:,} scope-tasks,"
          f" {shape.components} components per rack, batches of {shape.batch}"
          f" (median of {repeats})")  # fmt: skip
    lines = [
        ("(a) SQL floor", "floor"),
        ("(a+) floor + components", "floor+"),
        ("(b) rackcron fire_due", "rackcron"),
    ]
    for title, name in lines:
        print(f"  {title:<26}{rate[name]:10,.0f} scope-tasks/s  ({seconds[name]:6.2f} s)")
    ratio = rate["rackcron"] / rate["floor"]
    verdict = "ok" if ratio >= 0.5 else "BELOW TARGET"
    print(f"  {'ratio b/a':<26}{ratio:10.0%}  (target >= 50%: {verdict})")
    print(f"  {'ratio b/a+':<26}{rate['rackcron'] / rate['floor+']:10.0%}  (same writes)")
    within = "ok" if seconds["rackcron"] <= 10 else "OVER"
    print(f"  {'backlog drained in':<26}{seconds['rackcron']:10.2f} s  (target <= 10 s: {within})",
          flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--components", type=int, default=4, help="components per rack")
    parser.add_argument("--batch", type=int, default=500, help="schedules per transaction")
    parser.add_argument("--repeats", type=int, default=1, help="report the median of this many")
    parser.add_argument("--profile", action="store_true", help="profile rackcron's drain")
    parser.add_argument("--sqlite-only", action="store_true")
    args = parser.parse_args()
    shape = Shape(args.schedules, args.components, args.batch)
    with tempfile.TemporaryDirectory(prefix="rackcron-bench-") as workdir:
        stores = sqlite_stores(Path(workdir), shape)
        measure("SQLite", stores, shape, args.repeats, args.profile)
    admin_url = os.environ.get(POSTGRES_ENV)
    if admin_url and not args.sqlite_only:
        measure("PostgreSQL", postgres_stores(admin_url, shape), shape, args.repeats, args.profile)
    elif not args.sqlite_only:
        print(f"PostgreSQL: skipped ({POSTGRES_ENV} is not set)")


if __name__ == "__main__":
    main()
