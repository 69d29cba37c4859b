"""Row locking: concurrent firings never fire one tick twice (SQLite and PostgreSQL).

Several threads, each with its own connection, drain the same due schedules at the
same instant; every (schedule, scope) must get exactly one task. On PostgreSQL the
claim is ``FOR UPDATE SKIP LOCKED``; on SQLite writers are serialised by
``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from datetime import timedelta

import pytest

from rackcron.domain.models import (
    OverlapPolicy,
    PowerOn,
    RackTarget,
    ScheduleConfig,
    SpecType,
    TargetSpec,
)
from rackcron.service import Service
from rackcron.store import open_engine

pytestmark = pytest.mark.slow


def _create(service: Service, fleet, count: int) -> list[uuid.UUID]:  # type: ignore[no-untyped-def]
    ids = []
    for i in range(count):
        racks = [RackTarget(id=str(fleet.racks[(i + k) % 5])) for k in range(2)]
        schedule = service.create_schedule(
            ScheduleConfig(
                name=f"s{i}",
                spec_type=SpecType.INTERVAL,
                spec="1m",
                overlap_policy=OverlapPolicy.QUEUE,
            ),
            PowerOn(target_spec=TargetSpec(racks=racks)),
        )
        ids.append(schedule.id)
    return ids


def _in_threads(count: int, work) -> list[BaseException]:  # type: ignore[no-untyped-def]
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def run() -> None:
        barrier.wait()
        try:
            work()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


@pytest.mark.parametrize("batch_size", [1, 7], ids=["batch-1", "batch-7"])
def test_concurrent_dispatchers_fire_each_due_schedule_once(
    store_url: str, service: Service, fleet, clock, batch_size: int
) -> None:
    ids = _create(service, fleet, 12)
    clock.advance(minutes=1)
    # One engine (and connection pool) per thread, as separate dispatcher processes have.
    # The queue policy makes every scope get a task even where racks are shared.
    services = [Service(open_engine(store_url), clock=clock) for _ in range(4)]
    it = iter(services)
    lock = threading.Lock()

    def work() -> None:
        with lock:
            svc = next(it)
        svc.fire_due(batch_size=batch_size)

    assert _in_threads(4, work) == []
    tasks = service.list_tasks().items
    per_scope = Counter((t.schedule_id, t.scope_id) for t in tasks)
    assert len(per_scope) == 2 * len(ids), "a scope was missed"
    assert set(per_scope.values()) == {1}, "a scope fired twice"
    for schedule_id in ids:
        schedule = service.get_schedule(schedule_id)
        assert schedule.last_run_at == clock.now
        assert schedule.next_run_at == clock.now + timedelta(minutes=1)
    for svc in services:
        svc.close()


def test_trigger_and_dispatch_race_fire_once_each(
    store_url: str, service: Service, fleet, clock
) -> None:
    (schedule_id,) = _create(service, fleet, 1)
    clock.advance(minutes=1)
    dispatcher = Service(open_engine(store_url), clock=clock)
    trigger = Service(open_engine(store_url), clock=clock)
    results: list[object] = []

    def work() -> None:
        with lock:
            who = roles.pop()
        if who == "dispatch":
            results.append(dispatcher.fire_due())
        else:
            try:
                results.append(trigger.trigger(schedule_id))
            except Exception as exc:  # a busy rack may refuse the trigger's tasks
                results.append(exc)

    lock = threading.Lock()
    roles = ["dispatch", "trigger"]
    assert _in_threads(2, work) == []
    tasks = service.list_tasks().items
    # The firings serialise on the schedule row. If the trigger goes first it advances
    # next_run_at, so the dispatcher finds nothing due; if the dispatcher goes first, the
    # trigger fires too and (queue policy) its task waits behind the running one.
    # Either way each rack has exactly one pending task and never two.
    statuses: dict[uuid.UUID, list[str]] = {}
    for t in tasks:
        statuses.setdefault(t.rack_id, []).append(t.status.value)
    assert len(statuses) == 2
    for found in statuses.values():
        assert sorted(found) in (["pending"], ["pending", "waiting"]), statuses
    dispatcher.close()
    trigger.close()
