"""A roll-out over a wide fleet: the dispatcher's cost per rack, and how soon a freed slot
is filled (docs/benchmarks.md "`bench/rollout.py`: a roll-out over 5,000 racks").

A fresh store (SQLite, and PostgreSQL with ``--postgres URL``) holds ``--racks`` racks
(5,000 by default) and one power-on schedule over all of them; each measurement has a
store of its own. Each measured as the best of ``--repeat`` runs, with the spread of the
runs:

* plain: the schedule without a roll-out, triggered: every rack's task submitted at once
  (``Service.trigger``), the cost per rack;
* roll-out: the same schedule with ``rollout: {max_in_flight: 5%}``, triggered (the
  roll-out recorded), then advanced until every rack has started
  (``Service.advance_rollouts``), each batch's tasks ended between advances by one SQL
  update (not counted): the dispatcher's cost per rack started, and its ratio to plain
  (goal: at most 2);
* lag: the same roll-out run by the real loops, ``Dispatcher.run`` (``--poll`` seconds
  between polls) and ``TaskRunner.run`` with the simulated controllers (each operation
  ``--duration`` seconds), the runner waking the dispatcher when a task ends: for each
  rack started after the first batch, the time from the end of the task whose slot it
  took to its start, p50 and p99 against the poll interval (goal: p99 under one poll).
  On ``--lag-racks`` racks (default 1,000: 50 in flight at a time, 20 slots each).

Run: ``.venv/bin/python bench/rollout.py`` (about two minutes), ``--racks 1000`` for a
quick look, ``--postgres postgresql+psycopg://postgres@127.0.0.1:5432/postgres`` to add
PostgreSQL.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.loop import Dispatcher
from rackcron.dispatcher.runner import TaskRunner
from rackcron.domain.models import RolloutPolicy, ScheduleConfig, SpecType
from rackcron.service import Service
from rackcron.store import open_engine, transaction
from rackcron.store.tables import rack, rollout_scope, task

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._postgres import admin, database_url
from tests.support.service import make_operation, rack_spec

CHUNK = 1_000
POLICY = RolloutPolicy(max_in_flight="5%")


def _racks(service: Service, count: int) -> list[uuid.UUID]:
    """``count`` racks, inserted in bulk (the inventory is not what is measured)."""
    now = datetime.now(UTC)
    rows = [{"id": uuid.uuid4(), "name": f"rack-{i:05d}", "created_at": now, "updated_at": now}
            for i in range(count)]  # fmt: skip
    with transaction(service.engine) as conn:
        for start in range(0, count, CHUNK):
            conn.execute(rack.insert(), rows[start : start + CHUNK])
    return [r["id"] for r in rows]


def _schedule(service: Service, racks: list[uuid.UUID], name: str, rolled: bool) -> uuid.UUID:
    config = ScheduleConfig(name=name, spec_type=SpecType.CRON, spec="0 2 * * *")
    made = service.create_schedule(
        config,
        make_operation("power_on", target=rack_spec(*racks)),
        rollout=POLICY if rolled else None,
    )
    return made.id


def _end_active(service: Service) -> int:
    """End every active task (as controllers reporting at once); how many."""
    with transaction(service.engine) as conn:
        ended = conn.execute(
            task.update()
            .where(task.c.status.in_(["waiting", "pending", "running"]))
            .values(status="completed", finished_at=datetime.now(UTC))
        )
        return ended.rowcount


def plain(service: Service, racks: list[uuid.UUID], run: int) -> float:
    schedule_id = _schedule(service, racks, f"plain-{run}", rolled=False)
    started = time.perf_counter()
    result = service.trigger(schedule_id)
    took = time.perf_counter() - started
    assert len(result.task_ids) == len(racks), len(result.task_ids)
    _end_active(service)
    return took


def rolled(service: Service, racks: list[uuid.UUID], run: int) -> float:
    schedule_id = _schedule(service, racks, f"rolled-{run}", rolled=True)
    started = time.perf_counter()
    rollout_id = service.trigger(schedule_id).firing.rollout_id
    took = time.perf_counter() - started
    count = 0
    while True:
        started = time.perf_counter()
        advanced = service.advance_rollouts()
        took += time.perf_counter() - started
        count += sum(len(a.started) for a in advanced)
        if not _end_active(service):
            break
    assert count == len(racks), count
    assert service.get_rollout(rollout_id).state == "completed"
    return took


def lag(service: Service, racks: list[uuid.UUID], poll: float, duration: float) -> list[float]:
    """Seconds from a task's end to the start of the rack that took its slot, for each rack
    after the first batch, with the real loops (the k-th end frees the slot of the k-th
    start past the first batch)."""
    schedule_id = _schedule(service, racks, "lagged", rolled=True)
    dispatcher = Dispatcher(service, workers=1)
    runner = TaskRunner(service, Controllers(Simulator(default_duration=duration)),
                        status_interval=duration / 4, on_end=dispatcher.wake)  # fmt: skip
    stop = threading.Event()
    loops = [
        threading.Thread(target=dispatcher.run, args=(stop,), kwargs={"interval": poll}),
        threading.Thread(target=runner.run, args=(stop,), kwargs={"interval": duration / 4}),
    ]
    rollout_id = service.trigger(schedule_id).firing.rollout_id
    assert rollout_id is not None
    for loop in loops:
        loop.start()
    try:
        while service.get_rollout(rollout_id).state != "completed":
            time.sleep(0.5)
    finally:
        stop.set()
        for loop in loops:
            loop.join()
        runner.close()
    with transaction(service.engine, write=False) as conn:
        starts = sorted(conn.execute(sa.select(rollout_scope.c.started_at).where(
            rollout_scope.c.rollout_id == rollout_id)).scalars())  # fmt: skip
        ends = sorted(conn.execute(sa.select(task.c.finished_at).where(
            task.c.firing_id == rollout_id)).scalars())  # fmt: skip
    batch = POLICY.policy().max_in_flight.of(len(racks), up=True)
    return [(s - e).total_seconds() for s, e in zip(starts[batch:], ends, strict=False)]


def _fresh(kind: str, tmp: Path, postgres: str | None) -> tuple[Service, Callable[[], None]]:
    """A new, empty store of ``kind`` and how to drop it."""
    if kind == "sqlite":
        path = tmp / f"rollout-{uuid.uuid4().hex[:8]}.db"
        service = Service(open_engine(f"sqlite:///{path}", migrate=True, create=True))
        return service, service.close
    assert postgres is not None
    name = f"rackcron_bench_rollout_{uuid.uuid4().hex[:8]}"
    admin(postgres, f"CREATE DATABASE {name}")
    service = Service(open_engine(database_url(postgres, name), migrate=True))

    def drop() -> None:
        service.close()
        admin(postgres, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return service, drop


def _spread(values: list[float]) -> str:
    return f"{min(values) * 1000:.3f}-{max(values) * 1000:.3f}"


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--racks", type=int, default=5_000)
    parser.add_argument("--lag-racks", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--poll", type=float, default=10.0, help="seconds between polls")
    parser.add_argument("--duration", type=float, default=1.0, help="seconds an operation runs")
    parser.add_argument("--postgres", metavar="URL", help="an admin URL: PostgreSQL too")
    args = parser.parse_args()
    kinds = ["sqlite", *(["postgresql"] if args.postgres else [])]
    print(f"roll-out of {args.racks} racks at max_in_flight 5%: dispatcher ms per rack")
    print(f"{'store':<11} {'plain':>15} {'roll-out':>15} {'ratio (best)':>12} {'ratios':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            plains, rolls = [], []
            for run in range(args.repeat):
                for measure, found in ((plain, plains), (rolled, rolls)):
                    service, drop = _fresh(kind, Path(tmp), args.postgres)
                    try:  # each on a fresh store: neither pays for the other's rows
                        found.append(
                            measure(service, _racks(service, args.racks), run) / args.racks
                        )
                    finally:
                        drop()
            ratios = [r / p for r, p in zip(rolls, plains, strict=True)]
            print(f"{kind:<11} {_spread(plains):>15} {_spread(rolls):>15}"
                  f" {min(rolls) / min(plains):>12.2f} {min(ratios):>5.2f}-{max(ratios):<5.2f}")  # fmt: skip
        print(
            f"\nlag from a task's end to the next rack's start, {args.lag_racks} racks,"
            f" operations of {args.duration:g} s, polls every {args.poll:g} s"
        )
        print(f"{'store':<11} {'starts':>7} {'p50 s':>7} {'p99 s':>7} {'max s':>7} {'p99/poll':>9}")
        for kind in kinds:
            service, drop = _fresh(kind, Path(tmp), args.postgres)
            try:
                waits = lag(service, _racks(service, args.lag_racks), args.poll, args.duration)
            finally:
                drop()
            p99 = _quantile(waits, 0.99)
            print(f"{kind:<11} {len(waits):>7} {_quantile(waits, 0.5):>7.3f} {p99:>7.3f}"
                  f" {max(waits):>7.3f} {p99 / args.poll:>9.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
