"""The poll loop in-process: several workers drain one backlog, each firing exactly once."""

from __future__ import annotations

import io
from collections import Counter

import pytest
import sqlalchemy as sa

from rackcron.dispatcher.loop import DEFAULT_POSTGRES_WORKERS, Dispatcher
from rackcron.domain.models import Component, OverlapPolicy
from rackcron.errors import FailedPrecondition, StoreError
from rackcron.logs import configure
from rackcron.service import Service
from tests.support.service import component_spec, create


@pytest.mark.slow
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
    # 48 scopes per rack: one task runs, five wait (a rack's most), the rest are refused.
    assert summary.results == Counter(submitted=5, queued=25, failed=210)
    tasks = service.list_tasks().items
    assert Counter(t.scope_id for t in tasks).most_common(1)[0][1] == 1  # once per scope
    assert len(tasks) == 30 and {t.schedule_id for t in tasks} <= {s.id for s in schedules}
    assert Dispatcher(service, workers=workers).poll().fired == 0  # nothing left due


def test_the_default_workers_follow_the_backend(service) -> None:
    expected = DEFAULT_POSTGRES_WORKERS if service.engine.dialect.name == "postgresql" else 1
    assert Dispatcher(service).workers == expected
    assert Dispatcher(service, workers=4).workers == 4


def test_a_store_failure_fails_the_poll_with_the_store_error(store_url, clock, tmp_path) -> None:
    url = sa.make_url(store_url)
    blocker = tmp_path / "a-file"  # a database "inside" a regular file can never be opened
    blocker.write_text("")
    unreachable = url.set(database=str(blocker / "x.db") if url.get_backend_name() == "sqlite"
                          else "rackcron_no_such_database")  # fmt: skip
    service = Service(sa.create_engine(unreachable), clock=clock)
    with pytest.raises(StoreError, match="database error"):
        Dispatcher(service, workers=2).poll()
    service.close()


@pytest.mark.slow
def test_a_schedule_that_cannot_fire_is_reported_and_the_rest_fire(service, fleet, clock):
    """A row no rackcron wrote (a time zone this host does not know) gets an ERROR line
    each poll and is left as it is; the schedules claimed with it fire."""
    from rackcron.store import transaction
    from rackcron.store.tables import task_schedule

    bad = create(service, fleet.racks[:1], name="bad")
    good = [create(service, fleet.racks[1:2], name=f"good-{i}") for i in range(3)]
    with transaction(service.engine) as conn:
        conn.execute(
            task_schedule.update()
            .where(task_schedule.c.id == bad.id)
            .values(timezone="Mars/Olympus_Mons")
        )
    clock.advance(hours=1)
    stream = io.StringIO()
    configure("json", stream=stream)
    try:
        summary = Dispatcher(service, batch_size=2, workers=1).poll()
    finally:
        configure("text")
    assert summary.fired == 3 and summary.results["unfireable"] == 1
    (line,) = [line for line in stream.getvalue().splitlines() if "cannot fire" in line]
    assert '"level": "ERROR"' in line and "Mars/Olympus_Mons" in line and '"bad"' in line
    with transaction(service.engine, write=False) as conn:
        row = conn.execute(sa.select(task_schedule).where(task_schedule.c.id == bad.id)).one()
    assert row.last_run_at is None and row.next_run_at == bad.next_run_at  # left as it was
    assert all(service.get_schedule(g.id).last_run_at == clock.now for g in good)
    with pytest.raises(FailedPrecondition, match="cannot be fired"):
        service.trigger(bad.id)


def test_a_failed_scope_is_logged_naming_its_rack_once(service, fleet, clock) -> None:
    r, c = fleet.racks, fleet.components
    create(service, target=component_spec(c[r[0]][0], c[r[1]][0]))
    moved = service.list_components(r[1])[0]
    service.upsert_component(Component(**{**moved.model_dump(), "rack_id": r[2]}))
    clock.advance(hours=1)
    stream = io.StringIO()
    configure("text", stream=stream)
    try:
        assert Dispatcher(service, workers=1).poll().fired == 1
    finally:
        configure("text")
    (fired,) = [line for line in stream.getvalue().splitlines() if " fired " in line]
    assert "failed=1" in fired and "errors=" in fired and "no component of rack" in fired
    assert fired.count(str(r[1])) == 1
