"""Edges found in review: scope replacement, resume, lock order, bounds, races, row locks.

Each test pins one rule or one bound that an earlier version broke or left untested.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
import sqlalchemy as sa

from rackcron.domain.models import Rack, ScheduleConfig, SpecType, TaskStatus
from rackcron.errors import AlreadyExists, InvalidArgument
from rackcron.service import Service
from rackcron.store import open_engine, transaction
from rackcron.store.tables import task, task_schedule
from tests.support.cli import run
from tests.support.service import create, make_operation, rack_spec, set_status, snapshot

POSTGRES_ONLY = pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


def test_update_scope_can_replace_every_rack(service: Service, fleet) -> None:
    schedule = create(service, fleet.racks[:2])
    result = service.update_scope(schedule.id, rack_spec(fleet.racks[3]))
    assert (result.added, result.removed, result.updated) == (1, 2, 0)
    assert [s.rack_id for s in result.scopes] == [fleet.racks[3]]
    again = service.update_scope(schedule.id, rack_spec(fleet.racks[4], fleet.racks[3]))
    assert [s.rack_id for s in again.scopes] == [fleet.racks[3], fleet.racks[4]]


def test_resume_recomputes_an_enabled_interval_schedule(service: Service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1], spec="1h")
    clock.advance(minutes=20)
    resumed = service.resume_schedule(schedule.id)
    assert resumed.enabled and resumed.next_run_at == clock.now + timedelta(hours=1)


def test_a_paused_schedule_stays_put_when_paused_again(service: Service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1])
    paused = service.pause_schedule(schedule.id)
    clock.advance(minutes=5)
    assert service.pause_schedule(schedule.id) == paused


def test_the_overlap_check_reads_last_task_id_too(service: Service, fleet, clock) -> None:
    """A task recorded as the scope's last task counts even without its scope id
    (tasks written by another system, or before scope ids were recorded)."""
    schedule = create(service, fleet.racks[:1], spec="1h")
    (task_id,) = service.trigger(schedule.id).task_ids
    with transaction(service.engine) as conn:
        conn.execute(task.update().where(task.c.id == task_id).values(scope_id=None))
    clock.advance(hours=1)
    (result,) = service.fire_due()
    assert [o.result for o in result.outcomes] == ["skipped"]
    set_status(service, task_id, TaskStatus.COMPLETED)
    clock.advance(hours=1)
    (result,) = service.fire_due()
    assert [o.result for o in result.outcomes] == ["submitted"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.list_schedules(offset=2**31), "pagination.offset must be at most"),
        (lambda s: s.list_tasks(limit=2**63), "pagination.limit must be at most"),
        (lambda s: s.create_schedule(
            ScheduleConfig(name="x" * 256, spec_type=SpecType.INTERVAL, spec="1h"),
            make_operation("power_on", target=rack_spec(uuid.uuid4()))),
         "schedule.name must be at most 255 characters"),
        (lambda s: s.create_schedule(
            ScheduleConfig(name="a\x00b", spec_type=SpecType.INTERVAL, spec="1h"),
            make_operation("power_on", target=rack_spec(uuid.uuid4()))),
         "schedule.name must not contain NUL"),
        (lambda s: s.upsert_rack(Rack(id=uuid.uuid4(), name="r" * 300)), "rack.name must be at most 255"),
        (lambda s: s.upsert_rack(Rack(id=uuid.uuid4(), name="r", external_id="e\x00")), "rack.external_id must not contain NUL"),
    ],
    ids=["offset-int32", "limit-int64", "long-name", "nul-name", "long-rack", "nul-external-id"],
)  # fmt: skip
def test_out_of_range_input_is_invalid_on_every_backend(
    service: Service, call: Callable[[Service], object], message: str
) -> None:
    before = snapshot(service)
    with pytest.raises(InvalidArgument, match=message):
        call(service)
    assert snapshot(service) == before


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"rule_id": "not-a-uuid"}, 'operation.power_on.rule_id: invalid UUID "not-a-uuid"'),
        ({"queue_options": {"queue_timeout_seconds": 10**12}}, "queue_timeout_seconds must be at most 2147483647"),
    ],
    ids=["rule-id", "queue-timeout"],
)  # fmt: skip
def test_operation_parameters_are_checked(
    service: Service, fleet, params: dict, message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        create(service, fleet.racks[:1], **params)
    assert service.list_schedules().total == 0


def test_next_caps_the_count() -> None:
    result = run("next", "@hourly", "-n", "100000")
    assert result.exit_code == 2 and "1<=x<=1000" in result.output


def test_errors_name_their_field(service: Service) -> None:
    missing = uuid.uuid4()
    for call, field in [
        (lambda: service.get_schedule(missing), "id: "),
        (lambda: service.list_scopes(missing), "schedule_id: "),
        (lambda: service.remove_scope(missing), "scope_id: "),
        (lambda: service.cancel_task(missing), "task_id: "),
    ]:
        with pytest.raises(Exception) as caught:
            call()
        assert caught.value.message.startswith(field), caught.value.message


@POSTGRES_ONLY
def test_a_firing_locks_its_racks_in_one_global_order(service, fleet) -> None:
    """Racks are locked in id order whatever the scope order, so two firings over the
    same racks in opposite orders cannot deadlock: while waiting for the second rack in
    id order, the firing already holds the first."""
    first, second = sorted(fleet.racks[:2], key=str)
    schedule = create(service, [second, first])  # scope order opposite to id order
    out: list[object] = []
    with transaction(service.engine) as holder:
        holder.exec_driver_sql(f"SELECT id FROM rack WHERE id = '{second}' FOR UPDATE")
        worker = threading.Thread(target=lambda: out.append(service.trigger(schedule.id)))
        worker.start()
        _waits_for_lock(service.engine)
        with (
            service.engine.connect() as probe,
            pytest.raises(sa.exc.OperationalError, match="could not obtain lock"),
        ):
            probe.exec_driver_sql(f"SELECT id FROM rack WHERE id = '{first}' FOR UPDATE NOWAIT")
    worker.join(timeout=30)
    assert len(out) == 1 and len(out[0].task_ids) == 2


@POSTGRES_ONLY
def test_concurrent_creates_of_one_name_give_already_exists(store_url: str, service, fleet) -> None:
    services = [Service(open_engine(store_url)) for _ in range(4)]
    errors: list[Exception] = []
    barrier = threading.Barrier(len(services))

    def make(svc: Service) -> None:
        barrier.wait()
        try:
            create(svc, fleet.racks[:1], name="same")
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=make, args=(s,)) for s in services]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(errors) == 3 and all(isinstance(e, AlreadyExists) for e in errors), errors
    assert service.list_schedules().total == 1
    for s in services:
        s.close()


def _waits_for_lock(engine: sa.Engine, timeout: float = 20) -> None:
    query = (
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE wait_event_type = 'Lock' AND datname = current_database()"
    )
    deadline = time.monotonic() + timeout
    with engine.connect() as conn:
        while conn.exec_driver_sql(query).scalar_one() == 0:
            assert time.monotonic() < deadline, "the operation never waited for the row lock"
            conn.rollback()


@POSTGRES_ONLY
@pytest.mark.parametrize(
    ("locked", "operation"),
    [
        ("schedule", lambda s, sc, f: s.update_schedule(sc.id, ScheduleConfig(name="renamed"), ["schedule.name"])),
        ("schedule", lambda s, sc, f: s.update_scope(sc.id, rack_spec(f.racks[1]))),
        ("schedule", lambda s, sc, f: s.remove_scope(s.list_scopes(sc.id)[0].id)),
        ("schedule", lambda s, sc, f: s.pause_schedule(sc.id)),
        ("rack", lambda s, sc, f: s.trigger(sc.id)),
    ],
    ids=["update", "update-scope", "remove-scope", "pause", "submit-rack"],
)  # fmt: skip
def test_writers_take_the_row_lock(service, fleet, locked: str, operation) -> None:
    schedule = create(service, fleet.racks[:2])
    out: list[object] = []
    with transaction(service.engine) as conn:
        if locked == "schedule":
            conn.execute(
                sa.select(task_schedule.c.id)
                .where(task_schedule.c.id == schedule.id)
                .with_for_update()
            )
        else:
            conn.exec_driver_sql("SELECT id FROM rack FOR UPDATE")
        worker = threading.Thread(target=lambda: out.append(operation(service, schedule, fleet)))
        worker.start()
        _waits_for_lock(service.engine)
        assert not out  # still waiting while the lock is held
    worker.join(timeout=30)
    assert len(out) == 1


@POSTGRES_ONLY
def test_a_single_read_survives_a_connection_the_server_killed(service: Service, fleet) -> None:
    """The reader's pool is not pinged before use: a dead connection is retried once."""
    schedule = create(service, fleet.racks[:1])
    assert service.get_schedule(schedule.id) == schedule  # the reader now pools a connection
    with service.reader.connect() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    with transaction(service.engine) as conn:
        conn.exec_driver_sql(f"SELECT pg_terminate_backend({pid})")
    assert service.get_schedule(schedule.id) == schedule
    assert service.get_tasks([uuid.uuid4()]) == []


def test_single_reads_run_in_autocommit_on_postgresql(service: Service) -> None:
    """GetTaskSchedule and GetTasksByIDs need no BEGIN/COMMIT round trips on PostgreSQL."""
    if service.engine.dialect.name == "sqlite":
        assert service.reader.pool is service.engine.pool
        with service.reader.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
            assert not conn.connection.driver_connection.in_transaction
    else:
        assert service.reader.dialect.name == "postgresql"
        with service.reader.connect() as conn:
            assert conn.connection.driver_connection.autocommit is True


def test_writes_refuse_more_than_32_labels_and_change_nothing(
    service: Service, fleet, clock
) -> None:
    """A schedule's labels go into each task it submits (hostile review: 50,000 labels
    cost 5 MB a rack per firing): the service refuses a 33rd, whatever front sent it."""
    from rackcron.domain.models import MAX_LABELS, Freeze, Management

    many = {f"k{i}": "v" for i in range(MAX_LABELS + 1)}
    schedule = create(service, fleet.racks[:1])
    before = snapshot(service)
    with pytest.raises(InvalidArgument, match=r"management\.labels: at most 32 labels, got 33"):
        service.set_management(schedule.id, Management(owner="o", labels=many))
    with pytest.raises(InvalidArgument, match=r"rack\.labels: at most 32 labels, got 33"):
        service.upsert_rack(Rack(id=uuid.uuid4(), name="r-many", labels=many))
    with pytest.raises(InvalidArgument, match=r"freeze\.labels: at most 32 labels, got 33"):
        service.upsert_freeze(Freeze(id=uuid.uuid4(), name="f-many", start=clock.now, end=clock.now + timedelta(hours=1),
                                     management=Management(owner="o", labels=many)))  # fmt: skip
    assert snapshot(service) == before
    del many["k0"]
    assert service.set_management(schedule.id, Management(owner="o", labels=many))
