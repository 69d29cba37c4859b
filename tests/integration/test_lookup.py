"""GetTaskSchedule's read path (``rackcron.store.lookup``) on every backend.

It bypasses SQLAlchemy's execution and memoizes each caller's view of a row by the
row's raw values, so these tests pin that it gives exactly what the SQLAlchemy path
gives, that a change to any column is seen at once, and that database failures are
StoreErrors like everywhere else.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from rackcron.domain.models import Management, Schedule, ScheduleConfig, SpecType
from rackcron.errors import NotFound, StoreError
from rackcron.service import Service
from rackcron.service._schedules import BY_ID
from rackcron.store import transaction
from rackcron.store.lookup import Lookup
from rackcron.store.tables import task_schedule
from rackcron.wire.convert import pb_schedule
from tests.support.service import create

built: list[uuid.UUID] = []


def counted(schedule: Schedule) -> Schedule:
    """A view that records each time it is built."""
    built.append(schedule.id)
    return schedule


def as_row(row: Any) -> Any:
    return row


def through_sqlalchemy(service: Service, schedule_id: uuid.UUID) -> Schedule:
    with service.transaction(write=False) as ops:
        return ops.schedules.get_schedule(schedule_id)


@pytest.fixture
def schedules(service: Service, fleet, clock) -> list[Schedule]:
    """A schedule with JSON information and labels, one paused, one consumed one-time."""
    firmware = create(
        service,
        fleet.racks[:2],
        name="firmware",
        spec_type=SpecType.CRON,
        spec="30 2 * * 1-5",
        timezone="Europe/Berlin",
        kind="upgrade_firmware",
        target_version="2.4.1",
        sub_targets=["bmc", "bios"],
    )
    service.set_management(
        firmware.id,
        Management(owner="git@x:dc.git", source="a.yaml", protect=True, labels={"team": "dc"}),
    )
    paused = service.pause_schedule(create(service, fleet.racks[2:3], name="paused").id)
    once = create(
        service,
        fleet.racks[3:4],
        name="once",
        spec_type=SpecType.ONE_TIME,
        spec=(clock.now.replace(microsecond=0)).isoformat(),
    )
    service.trigger(once.id)
    return [through_sqlalchemy(service, s.id) for s in (firmware, paused, once)]


@pytest.mark.slow
def test_a_row_is_what_sqlalchemy_reads(service: Service, schedules) -> None:
    lookup = Lookup(service.reader, BY_ID, memo=0)
    for schedule in schedules:
        ours = lookup.one(as_row, id=schedule.id)
        with transaction(service.engine, write=False) as conn:
            theirs = conn.execute(BY_ID, {"id": schedule.id}).one()
        assert ours._asdict() == theirs._asdict()
        assert [type(v) for v in ours] == [type(v) for v in theirs]
        assert all(v.tzinfo == UTC for v in ours if isinstance(v, datetime))
    assert lookup.one(as_row, id=uuid.uuid4()) is None


def test_get_schedule_equals_the_sqlalchemy_path(service: Service, schedules) -> None:
    for schedule in schedules:
        assert service.get_schedule(schedule.id) == schedule
        assert service.get_schedule(str(schedule.id), pb_schedule) == pb_schedule(schedule)
    assert schedules[0].management.labels == {"team": "dc"}
    assert schedules[0].template.information["target_version"] == "2.4.1"


def test_a_row_read_again_unchanged_is_built_once(service: Service, schedules) -> None:
    built.clear()
    first = service.get_schedule(schedules[0].id, counted)
    assert service.get_schedule(schedules[0].id, counted) is first
    assert service.get_schedule(schedules[1].id, counted) == schedules[1]
    assert built == [schedules[0].id, schedules[1].id]
    service.update_schedule(schedules[0].id, ScheduleConfig(name="renamed"), ["schedule.name"])
    assert service.get_schedule(schedules[0].id, counted).name == "renamed"
    assert built[-1] == schedules[0].id and len(built) == 3


def test_without_a_memo_every_read_builds_its_view(service: Service, schedules) -> None:
    cold = Service(service.engine, memo=0)
    built.clear()
    assert cold.get_schedule(schedules[0].id, counted) == schedules[0]
    assert cold.get_schedule(schedules[0].id, counted) == schedules[0]
    assert built == [schedules[0].id] * 2
    cold.reader.dispose()


WRITES = {
    "rename": lambda s, i: s.update_schedule(i, ScheduleConfig(name="x"), ["schedule.name"]),
    "pause": lambda s, i: s.pause_schedule(i),
    "resume": lambda s, i: s.resume_schedule(s.pause_schedule(i).id),
    "labels": lambda s, i: s.set_management(i, Management(labels={"team": "ops"})),
    "trigger": lambda s, i: s.trigger(i),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_is_seen_at_once(service: Service, schedules, clock, write: str) -> None:
    schedule = schedules[0]
    service.get_schedule(schedule.id)
    service.get_schedule(schedule.id, pb_schedule)  # both views memoized
    clock.advance(minutes=1)
    WRITES[write](service, schedule.id)
    after = through_sqlalchemy(service, schedule.id)
    assert after != schedule
    assert service.get_schedule(schedule.id) == after
    assert service.get_schedule(schedule.id, pb_schedule) == pb_schedule(after)


# One new value per column, as a direct UPDATE would write it (another process, a migration).
NEW_VALUES = {
    "name": "changed",
    "spec_type": "interval",
    "spec": "2h",
    "timezone": "Asia/Tokyo",
    "operation_type": "power_off",
    "operation_code": "power_off",
    "operation_information": {"changed": True},
    "overlap_policy": "queue",
    "enabled": False,
    "next_run_at": datetime(2031, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
    "last_run_at": datetime(2030, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
    "created_at": datetime(2020, 1, 2, 3, 4, 5, 7, tzinfo=UTC),
    "updated_at": datetime(2029, 1, 2, 3, 4, 5, 8, tzinfo=UTC),
    "owner": "someone else",
    "source": "b.yaml",
    "protect": False,
    "labels": {"team": "dc", "more": "x"},
    "starting_deadline": "15m",
    "last_miss_at": datetime(2030, 2, 2, 3, 4, 5, 6, tzinfo=UTC),
    "last_miss_lateness_ms": 41_641_000,
    "last_miss_reason": "freeze",
    "last_miss_detail": "launch",
    "applied_by": 1,  # the apply log entry the test writes first
    "anchor": datetime(2026, 1, 1, 0, 15, tzinfo=UTC),
    "jitter": "5m",
    "rollout": {"max_in_flight": "2", "waves": ["1"]},
    "expected_duration": "20m",
}


def test_the_memo_covers_every_column() -> None:
    assert set(NEW_VALUES) == {c.key for c in task_schedule.columns} - {"id"}


@pytest.mark.slow
@pytest.mark.parametrize("column", sorted(NEW_VALUES))
def test_a_change_to_any_column_is_seen_at_once(service: Service, schedules, column) -> None:
    schedule = schedules[0]
    before = service.get_schedule(schedule.id)
    if column == "applied_by":
        with service.transaction() as ops:
            ops.applies.record_apply(revision=None, dirty=False, source="t", author="a", summary={})
    with transaction(service.engine) as conn:
        conn.execute(
            task_schedule.update()
            .where(task_schedule.c.id == schedule.id)
            .values({column: NEW_VALUES[column]})
        )
        if column.startswith("last_miss_"):  # a miss is written whole: set the rest too
            others = {c: v for c, v in NEW_VALUES.items() if c.startswith("last_miss_")}
            conn.execute(
                task_schedule.update().where(task_schedule.c.id == schedule.id).values(others)
            )
    after = through_sqlalchemy(service, schedule.id)
    assert after != before
    assert service.get_schedule(schedule.id) == after


@pytest.mark.slow
def test_a_missing_schedule_is_not_found(service: Service, schedules) -> None:
    missing = uuid.uuid4()
    with pytest.raises(NotFound, match=f"^id: task schedule {missing} not found$"):
        service.get_schedule(missing)
    service.delete_schedule(schedules[1].id)
    with pytest.raises(NotFound):
        service.get_schedule(schedules[1].id)


@pytest.mark.slow
def test_a_database_failure_is_a_store_error(service: Service, schedules) -> None:
    with transaction(service.engine) as conn:
        conn.execute(sa.text("ALTER TABLE task_schedule RENAME TO task_schedule_gone"))
    with pytest.raises(StoreError, match=r"^database error: ") as failed:
        service.get_schedule(schedules[0].id)
    assert "SELECT" not in str(failed.value)
    assert failed.value.__cause__ is not None


POSTGRES_ONLY = pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


@POSTGRES_ONLY
def test_an_hour_apart_is_a_change_where_the_server_keeps_daylight_saving(
    service: Service, schedules
) -> None:
    """In Europe/Berlin 00:30Z and 01:30Z on 2026-10-25 are both 02:30 local time, and
    Python compares same-zone datetimes by wall time: the reader reads in UTC."""
    schedule = schedules[0]
    with transaction(service.engine) as conn:
        name = conn.exec_driver_sql("SELECT current_database()").scalar_one()
        conn.exec_driver_sql(f"ALTER DATABASE \"{name}\" SET timezone = 'Europe/Berlin'")
    service.reader.dispose()  # new connections, in the database's new zone
    for hour in (0, 1):
        moment = datetime(2026, 10, 25, hour, 30, tzinfo=UTC)
        with transaction(service.engine) as conn:
            conn.execute(
                task_schedule.update()
                .where(task_schedule.c.id == schedule.id)
                .values(next_run_at=moment)
            )
        assert service.get_schedule(schedule.id).next_run_at == moment
        assert service.get_schedule(schedule.id, pb_schedule).next_run_at.seconds == int(
            moment.timestamp()
        )


@POSTGRES_ONLY
def test_reads_survive_every_pooled_connection_killed(service: Service, schedules) -> None:
    """After a server restart every pooled connection is dead: none is used again."""
    held = [service.reader.raw_connection() for _ in range(5)]
    for connection in held:
        connection.close()  # the reader's pool now holds five connections
    with transaction(service.engine) as conn:
        killed = conn.exec_driver_sql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).scalar_one()
    assert killed >= 5
    for schedule in schedules * 2:
        assert service.get_schedule(schedule.id) == schedule
