"""Dispatch throughput: rackcron's dispatcher, the SQL floor and APScheduler, in one run.

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
  from the rack (one query per batch) into each task's ``component_uuids``, so b/a+
  compares the same work;
* (b) rackcron's dispatcher: one poll (``Dispatcher.poll``, as ``rackcron dispatch`` runs
  it: batches of ``--batch``, its default workers for the backend — two on PostgreSQL,
  one on SQLite — and a JSON log line per firing, written to /dev/null) draining the
  whole backlog;
* (c) the peer, APScheduler 3.11 as its documentation sets it up: a
  ``BackgroundScheduler``, a ``SQLAlchemyJobStore`` built from the database URL (its own
  table in the same database) and a ``ThreadPoolExecutor`` (``--peer-workers``, default 10, APScheduler's default),
  one ``date`` job per schedule, added while the scheduler is paused, already due,
  ``coalesce=False`` and ``misfire_grace_time=None``. Each job inserts its schedule's 4
  task rows (the floor's rows) in one transaction, through an engine built from the URL.
  Timed from ``resume()`` until every task row exists. (c+) is the same with rackcron's
  engine settings for the job store and the jobs, which favours the peer. Then ``--grace-jobs`` jobs (default 2,000) due at the same moment
  with APScheduler's default misfire grace (1 s), to show how many it drops.

Prints scope-tasks per second for each, the ratios rackcron / floor (target >= 50%) and
rackcron / APScheduler (target >= 5x), and rackcron's drain time for the backlog (target:
within one default poll interval, 10 s). Every run is checked: each scope got exactly one
task and every schedule advanced (for (c): every job ran once and wrote its 4 tasks).

Backends: SQLite (temporary files) always; PostgreSQL too when
``RACKCRON_TEST_POSTGRES_URL`` names an administrative database: the script creates
its own databases there and drops them at the end.

Run: ``.venv/bin/python bench/dispatch.py`` (about three minutes on a 2-core host with
PostgreSQL; (c) needs ``pip install -e '.[bench]'``, else it is skipped; ``--no-peer``
skips it), ``--schedules 1000`` for a quick look, ``--components 0`` for tasks without components
(then a+ equals a), ``--profile`` to print where rackcron's time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pstats
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

try:
    from apscheduler.events import (
        EVENT_JOB_ERROR,
        EVENT_JOB_EXECUTED,
        EVENT_JOB_MISSED,
        JobEvent,
    )
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler
except ImportError:  # the peer is optional: pip install -e '.[bench]'
    BackgroundScheduler = None

from _postgres import admin, database_url

from rackcron.dispatcher.loop import Dispatcher
from rackcron.domain.firing import task_description
from rackcron.domain.models import PowerOn, RackTarget, TargetSpec
from rackcron.domain.templates import task_operation_text, to_template
from rackcron.gcpause import gc_paused
from rackcron.logs import configure
from rackcron.service import Service
from rackcron.service._tasks import new_task_id
from rackcron.store import open_engine, transaction
from rackcron.store.tables import (
    component,
    rack,
    task,
    task_schedule,
    task_schedule_scope,
)

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


@cache
def _operation() -> tuple[Any, str]:
    """The operation every task of the backlog runs: its template and its text."""
    template = to_template(
        PowerOn(target_spec=TargetSpec(racks=[RackTarget(id=str(uuid.uuid4()))]))
    )
    return template, task_operation_text(template)


def task_row(schedule_id: uuid.UUID, name: str, scope_id: uuid.UUID, rack_id: uuid.UUID,
             covered: list[str], now: datetime) -> dict[str, Any]:  # fmt: skip
    """The task row a firing at ``now`` writes for one scope (the floor's and the peer's)."""
    template, operation = _operation()
    return {
        "id": new_task_id(),
        "schedule_id": schedule_id,
        "scope_id": scope_id,
        "rack_id": rack_id,
        "operation": operation,
        "operation_type": template.type,
        "operation_code": template.code,
        "operation_information": template.information,
        "component_uuids": covered,
        "description": task_description(name, now),
        "status": "pending",
        "message": "",
        "created_at": now,
        "updated_at": now,
    }


def floor(engine: Engine, shape: Shape, now: datetime, *, components: bool = False) -> None:
    """Drain the backlog with the minimum statements, one transaction per batch.

    ``components``: also read the racks' components into each task's
    ``component_uuids``, as rackcron does.
    """
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
            tasks, backs = [], []
            for scope_id, schedule_id, rack_id in scopes:
                covered = [str(c) for c in on_rack.get(rack_id, [])]
                row = task_row(schedule_id, names[schedule_id], scope_id, rack_id, covered, now)
                tasks.append(row)
                backs.append({"b_scope": scope_id, "b_task": row["id"]})
            conn.execute(task.insert(), tasks)
            conn.execute(write_back, backs)


# --- (b) rackcron -----------------------------------------------------------------------------


def dispatch(engine: Engine, shape: Shape, now: datetime, profile: bool) -> None:
    """One poll of rackcron's dispatcher, as ``rackcron dispatch`` runs it: its default
    workers for the backend, a JSON log line per firing (written to /dev/null)."""
    service = Service(engine, clock=lambda: now)
    profiler = cProfile.Profile() if profile else None
    with open(os.devnull, "w") as devnull:
        configure("json", stream=devnull)
        if profiler:
            profiler.enable()
        summary = Dispatcher(service, batch_size=shape.batch).poll()
        if profiler:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        configure("text")
    submitted = summary.results["submitted"]
    if submitted != shape.schedules * SCOPES:
        raise SystemExit(f"rackcron submitted {submitted} tasks")


# --- (c) the peer: APScheduler 3.11 --------------------------------------------------------

#: The engines the peer's jobs write with, by store URL: a job's pickled state holds the URL.
_JOB_ENGINES: dict[str, Engine] = {}
PEER_POLL = 0.2
PEER_TIMEOUT = 900.0
#: Seconds the peer's SQLite connections wait for a lock (the driver's default is 5): ten
#: threads writing one file on a busy host wait longer than that, and a job that times out
#: fails. Printed with the results; rackcron's own engine waits as long as it is configured to.
PEER_LOCK_WAIT = 120.0


def peer_job(url: str, schedule_id: uuid.UUID, name: str, run_date: datetime,
             scopes: list[tuple[uuid.UUID, uuid.UUID, list[str]]]) -> None:  # fmt: skip
    """One APScheduler job: the 4 task rows of one firing, in one transaction."""
    rows = [task_row(schedule_id, name, s, r, covered, run_date) for s, r, covered in scopes]
    with transaction(_JOB_ENGINES[url]) as conn:
        conn.execute(task.insert(), rows)


Job = tuple[uuid.UUID, str, list[tuple[uuid.UUID, uuid.UUID, list[str]]]]


def peer_jobs(engine: Engine) -> list[Job]:
    """Each schedule of the backlog with its scopes and their racks' components."""
    scope = task_schedule_scope.c
    with transaction(engine, write=False) as conn:
        names = dict(conn.execute(sa.select(task_schedule.c.id, task_schedule.c.name)).all())
        on_rack: dict[uuid.UUID, list[str]] = {}
        for rack_id, component_id in conn.execute(sa.select(component.c.rack_id, component.c.id)):
            on_rack.setdefault(rack_id, []).append(str(component_id))
        scopes: dict[uuid.UUID, list] = {}
        query = sa.select(scope.id, scope.schedule_id, scope.rack_id).order_by(scope.ordinal)
        for scope_id, schedule_id, rack_id in conn.execute(query):
            scopes.setdefault(schedule_id, []).append((scope_id, rack_id, on_rack.get(rack_id, [])))
    # In the order the schedules fell due (their names sort that way).
    return [(id_, names[id_], scopes[id_]) for id_ in sorted(names, key=names.__getitem__)]


def _count(engine: Engine, table: sa.Table | sa.TableClause) -> int:
    with transaction(engine, write=False) as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


@dataclass(frozen=True)
class PeerRun:
    seconds: float  # from resuming the scheduler until every task row exists
    ran: int
    missed: int
    added_per_job: float  # seconds per add_job (not timed)
    late: float  # seconds past the jobs' run date at resume


def peer(engine: Engine, jobs: list[Job], *, workers: int, tuned: bool = False,
         default_grace: bool = False, run_date: datetime | None = None) -> PeerRun:  # fmt: skip
    """Drain ``jobs`` with APScheduler as its documentation sets it up.

    A ``BackgroundScheduler`` with a ``SQLAlchemyJobStore`` (its own table, same database,
    an engine with the store's settings) and a ``ThreadPoolExecutor``. The jobs are added
    while it is paused, each with a ``date`` trigger due at ``run_date`` (default: now),
    ``coalesce=False`` and, unless ``default_grace``, ``misfire_grace_time=None``. Timed
    from ``resume()`` (at ``run_date``) until every task row exists.
    """
    url = engine.url.render_as_string(hide_password=False)
    # As documented, the job store and the jobs' own writes use engines built from the URL
    # with SQLAlchemy's defaults; ``tuned`` gives both rackcron's engine settings instead
    # (on SQLite: WAL, synchronous=NORMAL, BEGIN IMMEDIATE; about twice as fast for it).
    waits = {"timeout": PEER_LOCK_WAIT} if engine.dialect.name == "sqlite" else {}

    def make_engine(url: str) -> Engine:
        return open_engine(url) if tuned else sa.create_engine(url, connect_args=waits)

    _JOB_ENGINES[url] = job_engine = make_engine(url)
    store_engine = make_engine(url)
    events: Counter[int] = Counter()
    lock = threading.Lock()

    def listen(event: JobEvent) -> None:
        with lock:
            events[event.code] += 1

    scheduler = BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(engine=store_engine)},
        executors={"default": ThreadPoolExecutor(workers)},
        timezone=UTC,
    )
    scheduler.add_listener(listen, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED)
    grace = {} if default_grace else {"misfire_grace_time": None}
    expected = len(jobs) * SCOPES
    scheduler.start(paused=True)
    try:
        began = time.perf_counter()
        run_date = run_date or datetime.now(UTC)
        for schedule_id, name, scopes in jobs:
            scheduler.add_job(f"{__name__}:peer_job", "date", run_date=run_date,
                              args=(url, schedule_id, name, run_date, scopes),
                              id=str(schedule_id), coalesce=False, **grace)  # fmt: skip
        added_per_job = (time.perf_counter() - began) / len(jobs)
        time.sleep(max(0.0, (run_date - datetime.now(UTC)).total_seconds()))
        late = (datetime.now(UTC) - run_date).total_seconds()
        began = time.perf_counter()
        scheduler.resume()
        while True:
            time.sleep(PEER_POLL)
            with lock:
                done = sum(events.values())
            if _count(engine, task) >= expected or done >= len(jobs):
                break
            if time.perf_counter() - began > PEER_TIMEOUT:
                raise SystemExit(f"APScheduler: {done} of {len(jobs)} jobs done after"
                                 f" {PEER_TIMEOUT:.0f} s")  # fmt: skip
        seconds = time.perf_counter() - began
    finally:
        scheduler.shutdown(wait=True)
        store_engine.dispose()
        job_engine.dispose()
        del _JOB_ENGINES[url]
    if events[EVENT_JOB_ERROR]:
        raise SystemExit(f"APScheduler: {events[EVENT_JOB_ERROR]} jobs raised")
    ran, missed = events[EVENT_JOB_EXECUTED], events[EVENT_JOB_MISSED]
    return PeerRun(seconds, ran, missed, added_per_job, late)


def check_peer(engine: Engine, ran: int) -> None:
    """``ran`` jobs wrote their 4 tasks each, every scope once; the job store is empty."""
    with transaction(engine, write=False) as conn:
        tasks = conn.execute(sa.select(sa.func.count()).select_from(task)).scalar_one()
        scopes = conn.execute(sa.select(sa.func.count(sa.distinct(task.c.scope_id)))).scalar_one()
        schedules = conn.execute(
            sa.select(sa.func.count(sa.distinct(task.c.schedule_id)))
        ).scalar_one()
    left = _count(engine, sa.table("apscheduler_jobs"))
    expected = ran * SCOPES
    if (tasks, scopes, schedules, left) != (expected, expected, ran, 0):
        raise SystemExit(
            f"APScheduler: wrong result: {tasks} tasks for {scopes} scopes of {schedules}"
            f" schedules, {left} jobs left (expected {expected} tasks from {ran} jobs)"
        )


def timed_peer(fresh: Fresh, shape: Shape, workers: int, *, tuned: bool) -> PeerRun:
    """APScheduler draining a fresh copy of the whole backlog, checked afterwards."""
    with fresh() as engine:
        jobs = peer_jobs(engine)
        run = peer(engine, jobs, workers=workers, tuned=tuned)
        if run.ran != len(jobs):
            raise SystemExit(f"APScheduler ran {run.ran} of {len(jobs)} jobs")
        check_peer(engine, run.ran)
    return run


def peer_default_grace(fresh: Fresh, jobs_count: int, workers: int, per_job: float) -> PeerRun:
    """``jobs_count`` jobs all due at the same moment, APScheduler's default misfire grace.

    They are due when the scheduler resumes: the run date is set far enough ahead to add
    them all first (from ``per_job``, the measured seconds per ``add_job``).
    """
    with fresh() as engine:
        jobs = peer_jobs(engine)[:jobs_count]
        ahead = timedelta(seconds=1 + 2 * per_job * len(jobs))
        run = peer(engine, jobs, workers=workers, default_grace=True,
                   run_date=datetime.now(UTC) + ahead)  # fmt: skip
        check_peer(engine, run.ran)
    return run


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


@contextmanager
def postgres_stores(admin_url: str, shape: Shape) -> Iterator[Fresh]:
    """Seed one PostgreSQL database; each fresh store is ``CREATE DATABASE ... TEMPLATE`` it.

    Every database this creates is dropped at the end, whatever happens.
    """
    prefix = f"rackcron_bench_{uuid.uuid4().hex[:8]}"
    seeded = f"{prefix}_seeded"
    admin(admin_url, f'CREATE DATABASE "{seeded}"')
    try:
        engine = open_engine(database_url(admin_url, seeded), migrate=True)
        try:
            seed(engine, shape, datetime.now(UTC))
        finally:
            engine.dispose()

        @contextmanager
        def fresh() -> Iterator[Engine]:
            name = f"{prefix}_{uuid.uuid4().hex[:8]}"
            admin(admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{seeded}"')
            engine = None
            try:
                engine = open_engine(database_url(admin_url, name))
                with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                    conn.exec_driver_sql("VACUUM ANALYZE")
                yield engine
            finally:
                if engine is not None:
                    engine.dispose()
                admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        yield fresh
    finally:
        admin(admin_url, f'DROP DATABASE IF EXISTS "{seeded}" WITH (FORCE)')


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


def measure(label: str, stores: AbstractContextManager[Fresh], shape: Shape,
            args: argparse.Namespace) -> None:  # fmt: skip
    tasks = shape.schedules * SCOPES
    with_peer = BackgroundScheduler is not None and not args.no_peer
    runs: dict[str, list[float]] = {"floor": [], "floor+": [], "rackcron": []}
    peer_runs: list[PeerRun] = []
    tuned_runs: list[PeerRun] = []
    grace_run = None
    with stores as fresh:
        for _ in range(args.repeats):
            runs["floor"].append(timed(fresh, shape, floor))
            runs["floor+"].append(timed(fresh, shape, floor, components=True))
            runs["rackcron"].append(timed(fresh, shape, dispatch, profile=args.profile))
            if with_peer:
                peer_runs.append(timed_peer(fresh, shape, args.peer_workers, tuned=False))
                tuned_runs.append(timed_peer(fresh, shape, args.peer_workers, tuned=True))
        if with_peer and args.grace_jobs:
            per_job = statistics.median(r.added_per_job for r in peer_runs)
            jobs = min(args.grace_jobs, shape.schedules)
            grace_run = peer_default_grace(fresh, jobs, args.peer_workers, per_job)
    if peer_runs:
        runs["apscheduler"] = [r.seconds for r in peer_runs]
        runs["apscheduler+"] = [r.seconds for r in tuned_runs]
    seconds = {name: statistics.median(times) for name, times in runs.items()}
    rate = {name: tasks / s for name, s in seconds.items()}
    print(f"{label}: {shape.schedules:,} schedules x {SCOPES} scopes = {tasks:,} scope-tasks,"
          f" {shape.components} components per rack, batches of {shape.batch}"
          f" (median of {args.repeats})")  # fmt: skip
    lines = [
        ("(a) SQL floor", "floor"),
        ("(a+) floor + components", "floor+"),
        ("(b) rackcron dispatcher", "rackcron"),
        ("(c) APScheduler 3.11", "apscheduler"),
        ("(c+) same, tuned engine", "apscheduler+"),
    ]
    for title, name in lines:
        if name in rate:
            print(f"  {title:<26}{rate[name]:10,.0f} scope-tasks/s  ({seconds[name]:6.2f} s)")
    ratio = rate["rackcron"] / rate["floor"]
    verdict = "ok" if ratio >= 0.5 else "BELOW TARGET"
    print(f"  {'ratio b/a':<26}{ratio:10.0%}  (target >= 50%: {verdict})")
    print(f"  {'ratio b/a+':<26}{rate['rackcron'] / rate['floor+']:10.0%}  (same writes)")
    if "apscheduler" in rate:
        ratio = rate["rackcron"] / rate["apscheduler"]
        verdict = "ok" if ratio >= 5 else "BELOW TARGET"
        print(f"  {'ratio b/c':<26}{ratio:9.1f}x  (target >= 5x: {verdict};"
              f" APScheduler with {args.peer_workers} threads; on SQLite its connections"
              f" wait up to {PEER_LOCK_WAIT:.0f} s for a lock, not the driver's 5 s)")  # fmt: skip
        ratio = rate["rackcron"] / rate["apscheduler+"]
        print(f"  {'ratio b/c+':<26}{ratio:9.1f}x  (APScheduler given rackcron's engine)")
    if grace_run:
        jobs = grace_run.ran + grace_run.missed
        print(f"  {'(c) default misfire grace':<26}{grace_run.ran:10,} of {jobs:,} jobs due at"
              f" once ran, {grace_run.missed:,} ({grace_run.missed / jobs:.0%}) dropped as missed"
              f" ({grace_run.late:.2f} s late at start)")  # fmt: skip
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
    parser.add_argument("--no-peer", action="store_true", help="skip (c), APScheduler")
    parser.add_argument("--peer-workers", type=int, default=10,
                        help="APScheduler's thread pool (its default: 10)")  # fmt: skip
    parser.add_argument("--grace-jobs", type=int, default=2_000,
                        help="jobs for the default-misfire-grace run (0: skip it)")  # fmt: skip
    args = parser.parse_args()
    shape = Shape(args.schedules, args.components, args.batch)
    if BackgroundScheduler is None and not args.no_peer:
        print("(c) APScheduler: skipped (not installed: pip install -e '.[bench]')")
    # Its warning per missed job would flood the output; they are counted instead.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="rackcron-bench-") as workdir:
        measure("SQLite", sqlite_stores(Path(workdir), shape), shape, args)
    admin_url = os.environ.get(POSTGRES_ENV)
    if admin_url and not args.sqlite_only:
        measure("PostgreSQL", postgres_stores(admin_url, shape), shape, args)
    elif not args.sqlite_only:
        print(f"PostgreSQL: skipped ({POSTGRES_ENV} is not set)")


if __name__ == "__main__":
    main()
