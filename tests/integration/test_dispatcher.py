"""The poll loop in-process: several workers drain one backlog, each firing exactly once."""

from __future__ import annotations

from collections import Counter

import pytest
import sqlalchemy as sa

from dispatcher.loop import DEFAULT_POSTGRES_WORKERS, Dispatcher
from rackcron.errors import StoreError
from rackcron.models import OverlapPolicy
from rackcron.service import Service
from tests.integration.helpers import create


@pytest.mark.parametrize("workers", [1, 3])
def test_workers_drain_a_backlog_firing_each_schedule_once(service, fleet, clock, workers):
    racks = fleet.racks
    schedules = [
        create(service, [racks[i % 5], racks[(i + 1) % 5]], name=f"s{i:03d}", spec="1h",
               policy=OverlapPolicy.QUEUE)
        for i in range(120)
    ]  # fmt: skip
    clock.advance(hours=1)
    summary = Dispatcher(service, batch_size=7, workers=workers).poll()
    assert summary.fired == 120
    assert sum(summary.results.values()) == 240 and summary.results["failed"] == 0
    tasks = service.list_tasks().items
    assert Counter(t.scope_id for t in tasks).most_common(1)[0][1] == 1  # once per scope
    assert {t.schedule_id for t in tasks} == {s.id for s in schedules}
    assert Dispatcher(service, workers=workers).poll().fired == 0  # nothing left due


def test_the_default_workers_follow_the_backend(service) -> None:
    expected = DEFAULT_POSTGRES_WORKERS if service.engine.dialect.name == "postgresql" else 1
    assert Dispatcher(service).workers == expected
    assert Dispatcher(service, workers=4).workers == 4


def test_a_store_failure_fails_the_poll_with_the_store_error(store_url, clock) -> None:
    url = sa.make_url(store_url)
    unreachable = url.set(database="/nonexistent/dir/x.db" if url.get_backend_name() == "sqlite"
                          else "rackcron_no_such_database")  # fmt: skip
    service = Service(sa.create_engine(unreachable), clock=clock)
    with pytest.raises(StoreError, match="database error"):
        Dispatcher(service, workers=2).poll()
    service.close()


def test_the_poll_loop_outlives_a_schedule_it_cannot_fire(service, fleet, clock) -> None:
    """A row no rackcron wrote (a time zone this machine does not know) fails each poll
    with an ERROR line and an unhealthy /healthz; the loop itself keeps running."""
    import io
    import threading
    import time

    from dispatcher.logs import configure
    from dispatcher.metrics import HealthCheck
    from rackcron.store import transaction
    from rackcron.store.tables import task_schedule

    schedule = create(service, fleet.racks[:1])
    with transaction(service.engine) as conn:
        conn.execute(task_schedule.update().values(timezone="Mars/Olympus_Mons"))
    clock.advance(hours=1)
    stream = io.StringIO()
    configure("json", stream=stream)
    health = HealthCheck(max_age=0.0)
    stop = threading.Event()
    loop = threading.Thread(
        target=Dispatcher(service, health=health).run, args=(stop,), kwargs={"interval": 0.05}
    )
    try:
        loop.start()
        deadline = time.monotonic() + 10
        while stream.getvalue().count('"poll failed"') < 2:
            assert time.monotonic() < deadline, stream.getvalue()
            stop.wait(0.05)
        assert loop.is_alive()
        healthy, reason = health.status()
        assert not healthy and "Mars/Olympus_Mons" in reason
    finally:
        stop.set()
        loop.join(timeout=10)
        configure("text")
    assert not loop.is_alive()
    assert service.get_schedule(schedule.id).last_run_at is None  # nothing half done
