"""PostgreSQL session limits per role, and lag figures that include lock waits.

docs/spec/SEMANTICS.md "Dispatch": a transaction holding locks is bounded by lock and
idle-in-transaction timeouts, strict for the dispatcher and separate for apply
(``rackcron.store.limits``); a task's creation time is taken once its rack is locked, so
the lag metric and log show a wait for a lock (docs/dispatch.md "Lag").
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest
import sqlalchemy as sa

from rackcron.dispatcher.loop import Dispatcher
from rackcron.dispatcher.metrics import Metrics
from rackcron.domain.models import Rack
from rackcron.service import Service
from rackcron.store import open_engine, transaction
from rackcron.store.limits import LIMITS, Role
from rackcron.store.tables import firing, rack, task
from tests.support.service import create

pytestmark = pytest.mark.postgres
POSTGRES = pytest.mark.parametrize("store_url", ["postgres"], indirect=True)

STRICT = replace(LIMITS[Role.SERVE], idle_in_transaction_session_timeout=1_000, lock_timeout=500)


def _setting(engine: sa.Engine, name: str, role: Role | None = None) -> str:
    with transaction(engine, role=role) as conn:
        return conn.exec_driver_sql(f"SHOW {name}").scalar_one()


@POSTGRES
def test_each_role_has_its_limits_and_keepalives(store_url) -> None:
    serve = open_engine(store_url)
    apply = open_engine(store_url, role=Role.APPLY)
    try:
        assert _setting(serve, "lock_timeout") == "2s"
        assert _setting(serve, "idle_in_transaction_session_timeout") == "10s"
        assert _setting(apply, "lock_timeout") == "30s"
        assert _setting(apply, "statement_timeout") == "0"
        assert _setting(serve, "lock_timeout", role=Role.RETENTION) == "2s"
        assert _setting(serve, "statement_timeout", role=Role.RETENTION) == "5min"
        with serve.connect() as conn:  # libpq's keepalives on the socket
            info = conn.connection.dbapi_connection.info  # type: ignore[union-attr]
            assert info.get_parameters().get("keepalives_idle") == "30"
    finally:
        serve.dispose()
        apply.dispose()


@POSTGRES
def test_the_url_may_override_the_limits(store_url) -> None:
    url = f"{store_url}?options=-c%20lock_timeout%3D7s"
    engine = open_engine(url)
    try:
        assert _setting(engine, "lock_timeout") == "7s"
        assert _setting(engine, "idle_in_transaction_session_timeout") == "10s"
    finally:
        engine.dispose()


@POSTGRES
def test_an_idle_transaction_loses_its_locks_but_an_apply_may_pause(store_url) -> None:
    """A strict session that sits idle holding a rack lock is ended by the server and the
    lock freed; the same pause inside an apply's transaction is allowed."""
    engine = open_engine(store_url)
    strict = open_engine(store_url, limits=STRICT)
    apply = open_engine(store_url, role=Role.APPLY, limits=None)
    rack_id = uuid.uuid4()
    try:
        Service(engine).upsert_rack(Rack(id=rack_id, name="held"))
        locked = sa.select(rack.c.id).where(rack.c.id == rack_id).with_for_update()
        with (
            pytest.raises(sa.exc.DBAPIError, match="idle-in-transaction"),
            transaction(strict) as conn,
        ):
            conn.execute(locked)
            time.sleep(2.0)  # paused past its idle timeout: the server ends the session
            conn.execute(sa.select(1))
        with transaction(strict) as conn:  # the lock is free again, at once
            assert conn.execute(locked.with_for_update(nowait=True)).scalar_one() == rack_id
        with transaction(apply) as conn:  # an apply's transaction outlasts that pause
            conn.execute(locked)
            time.sleep(2.0)
            conn.execute(sa.update(rack).where(rack.c.id == rack_id).values(name="kept"))
        with transaction(engine) as conn:
            assert conn.execute(sa.select(rack.c.name)).scalar_one() == "kept"
    finally:
        for e in (engine, strict, apply):
            e.dispose()


@POSTGRES
def test_a_lock_wait_shows_in_the_lag_and_the_task_creation_time(store_url) -> None:
    service = Service(open_engine(store_url))
    racks = [uuid.uuid4()]
    service.upsert_rack(Rack(id=racks[0], name="contended"))
    schedule = create(service, racks, spec="1h")
    with transaction(service.engine) as conn:
        conn.execute(sa.text("UPDATE task_schedule SET next_run_at = now() - interval '1 second'"))
    metrics = Metrics()
    holder = service.engine.connect()
    tx = holder.begin()
    holder.execute(sa.select(rack.c.id).where(rack.c.id == racks[0]).with_for_update())
    worker = threading.Thread(target=lambda: Dispatcher(service, metrics=metrics).poll())
    worker.start()
    time.sleep(1.5)  # the dispatcher waits for the rack (within its 2 s lock timeout)
    tx.commit()
    holder.close()
    worker.join(timeout=30)
    try:
        with transaction(service.engine) as conn:
            created = conn.execute(sa.select(task.c.created_at)).scalar_one()
            fired = conn.execute(
                sa.select(firing.c.fired_at).where(firing.c.schedule_id == schedule.id)
            ).scalar_one()
        assert (created - fired).total_seconds() >= 1.4
        lag = metrics.registry.get_sample_value("rackcron_dispatch_lag_seconds_sum")
        assert lag is not None and lag >= 1.4
    finally:
        service.close()


@POSTGRES
def test_a_rack_held_past_the_lock_timeout_defers_its_scope_to_the_next_poll(store_url) -> None:
    """The firing is recorded; the scope on the held rack is owed, the other is created;
    once the rack is free the next poll pays the debt, once."""
    service = Service(open_engine(store_url, limits=STRICT))
    racks = [uuid.uuid4(), uuid.uuid4()]
    for i, r in enumerate(racks):
        service.upsert_rack(Rack(id=r, name=f"r{i}"))
    create(service, racks, spec="1h")
    with transaction(service.engine) as conn:
        conn.execute(sa.text("UPDATE task_schedule SET next_run_at = now() - interval '1 second'"))
    holder = open_engine(store_url)
    try:
        with transaction(holder) as conn:
            conn.execute(sa.select(rack.c.id).where(rack.c.id == racks[0]).with_for_update())
            (result,) = service.fire_due()
        assert sorted(o.result for o in result.outcomes) == ["deferred", "submitted"]
        assert service.list_tasks().total == 1
        completed = [c for b in service.fire_batches() for c in b.completed]
        assert [len(c.done) for c in completed] == [1] and completed[0].finished
        assert service.list_tasks().total == 2
        assert not [c for b in service.fire_batches() for c in b.completed]
    finally:
        holder.dispose()
        service.close()


@POSTGRES
def test_retention_keeps_the_tasks_of_a_firing_still_owing_scopes(store_url) -> None:
    """A firing knows its done scopes by their tasks: retention deleting one of them
    while the firing waits for another rack must not make it submit that scope again."""
    service = Service(open_engine(store_url, limits=STRICT))
    racks = [uuid.uuid4(), uuid.uuid4()]
    for i, r in enumerate(racks):
        service.upsert_rack(Rack(id=r, name=f"r{i}"))
    create(service, racks, spec="1h")
    with transaction(service.engine) as conn:
        conn.execute(sa.text("UPDATE task_schedule SET next_run_at = now() - interval '1 second'"))
    holder = open_engine(store_url)
    try:
        with transaction(holder) as conn:
            conn.execute(sa.select(rack.c.id).where(rack.c.id == racks[1]).with_for_update())
            (result,) = service.fire_due()
        assert [o.result for o in result.outcomes] == ["submitted", "deferred"]
        with transaction(service.engine) as conn:  # rack 0's task ended long ago
            conn.execute(sa.text("UPDATE task SET status = 'completed', next_check_at = NULL,"
                                 " finished_at = now() - interval '2 hours'"))  # fmt: skip
        assert service.prune_tasks(timedelta(hours=1)) == 0
        completed = [c for b in service.fire_batches() for c in b.completed]
        assert [len(c.done) for c in completed] == [1]
        with transaction(service.engine) as conn:
            rows = conn.execute(sa.select(task.c.rack_id)).scalars().all()
        assert sorted(rows, key=str) == sorted(racks, key=str)  # one task each, never two
        assert service.prune_tasks(timedelta(hours=1)) == 1  # finished now: its tasks may go
    finally:
        holder.dispose()
        service.close()
