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
