"""The SQL store: migrations match the tables, the claim query uses its index, times are UTC."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from rackcron.domain.models import SpecType
from rackcron.errors import StoreError
from rackcron.service import Service
from rackcron.store import current_revision, head_revision, open_engine, transaction, upgrade
from rackcron.store.tables import metadata, task_schedule
from tests.support.cli import run
from tests.support.outages import no_free_slots
from tests.support.service import create, scope_rows

pytestmark = pytest.mark.slow


def test_migrations_produce_exactly_the_declared_schema(store_url) -> None:
    engine = open_engine(store_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "compare_server_default": True}
            )
            assert compare_metadata(context, metadata) == []
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_sqlite_claim_query_uses_the_due_index(tmp_path: Path, clock) -> None:
    service = Service(open_engine(f"sqlite:///{tmp_path / 'plan.db'}"), clock=clock)
    captured: list[tuple[str, object]] = []

    def capture(conn, cursor, statement, parameters, context, executemany) -> None:
        if "FROM task_schedule" in statement and "next_run_at <=" in statement:
            captured.append((statement, parameters))

    sa.event.listen(service.engine, "before_cursor_execute", capture)
    try:
        service.fire_due()  # the dispatcher's real claim query, captured as sent
        (statement, parameters), *_ = captured
        with service.engine.connect() as conn:
            plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
        details = " | ".join(row[-1] for row in plan)
        assert "USING INDEX ix_task_schedule_due" in details, details
    finally:
        service.close()


def test_times_round_trip_as_aware_utc(service, fleet, clock) -> None:
    clock.now = datetime(2026, 6, 1, 17, 45, 30, 123456, tzinfo=timezone(timedelta(hours=5.5)))
    schedule = create(service, fleet.racks[:1], spec_type=SpecType.ONE_TIME,
                      spec="2026-12-24T23:30:00.5-08:00")  # fmt: skip
    stored = service.get_schedule(schedule.id)
    for value in (stored.created_at, stored.updated_at, stored.next_run_at):
        assert value.tzinfo is UTC or value.utcoffset() == timedelta(0)
    assert stored.created_at == datetime(2026, 6, 1, 12, 15, 30, 123456, tzinfo=UTC)
    assert stored.next_run_at == datetime(2026, 12, 25, 7, 30, 0, 500000, tzinfo=UTC)
    with transaction(service.engine, write=False) as conn:
        raw = conn.execute(sa.select(task_schedule.c.next_run_at)).scalar_one()
    assert raw == stored.next_run_at and raw.utcoffset() == timedelta(0)


def test_naive_datetimes_are_refused_by_the_store(service) -> None:
    naive = datetime(2026, 6, 1, 12, 0)
    with pytest.raises(StoreError, match="naive datetime"), service.transaction() as ops:
        ops.work.conn.execute(task_schedule.update().values(updated_at=naive))


def test_scope_rows_go_with_their_schedule_and_tasks_stay(service, fleet) -> None:
    schedule = create(service, fleet.racks[:2])
    task_ids = service.trigger(schedule.id).task_ids
    with transaction(service.engine) as conn:  # the foreign keys alone, not the service
        conn.execute(task_schedule.delete().where(task_schedule.c.id == schedule.id))
    assert scope_rows(service, schedule.id) == []
    tasks = service.get_tasks(task_ids)
    assert [t.schedule_id for t in tasks] == [None, None]


def _drop_schema(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                conn.exec_driver_sql("DROP SCHEMA public CASCADE")
                conn.exec_driver_sql("CREATE SCHEMA public")
            else:
                conn.exec_driver_sql("PRAGMA foreign_keys = OFF")
                for table in reversed(metadata.sorted_tables):
                    conn.exec_driver_sql(f'DROP TABLE "{table.name}"')
                conn.exec_driver_sql("DROP TABLE alembic_version")
    finally:
        engine.dispose()


def test_unmigrated_database(store_url) -> None:
    _drop_schema(store_url)
    if store_url.startswith("postgresql"):
        # Only a SQLite file is migrated on its own; PostgreSQL must be upgraded explicitly.
        with pytest.raises(StoreError, match=r"revision none, .*run `rackcron db upgrade`"):
            open_engine(store_url)
        return
    with pytest.raises(StoreError, match="run `rackcron db upgrade`"):
        open_engine(store_url, migrate=False)
    engine = open_engine(store_url)
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_database_at_another_revision_is_refused(store_url) -> None:
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'f00d'")
    engine.dispose()
    with pytest.raises(StoreError, match=r"schema is at revision f00d, rackcron needs"):
        open_engine(store_url)


@pytest.mark.parametrize(
    ("url", "match"),
    [("not a url", "invalid database URL"),
     ("postgresql+psycopg://nobody@127.0.0.1:1/none", "cannot open database")],
    ids=["malformed", "unreachable"],
)  # fmt: skip
def test_bad_urls_raise_store_error(url, match) -> None:
    with pytest.raises(StoreError, match=match):
        open_engine(url)


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_no_free_connection_slot_is_named_as_such(store_url) -> None:
    """PostgreSQL refusing a connection for want of a slot (SQLSTATE 53300, "too many
    clients already", "too many connections for database") is not "unreachable"."""
    with no_free_slots(os.environ["RACKCRON_TEST_POSTGRES_URL"], store_url) as url:
        result = run("schedules", "list", url=url)
    assert result.exit_code != 0, result.output
    assert "the database has no free connection slots (max_connections" in result.output
    assert "unreachable" not in result.output


def test_upgrading_keeps_the_data_that_points_at_rebuilt_tables(store_url) -> None:
    """Migrations that rebuild a table on SQLite (0002, 0003) keep the rows pointing at it:
    the scopes of a schedule and a scope's last task survive."""
    from rackcron.store.engine import _create_engine  # an engine that does not migrate

    _drop_schema(store_url)
    engine = _create_engine(store_url)
    upgrade(engine, "0001")
    sqlite = engine.dialect.name == "sqlite"

    def key(value: uuid.UUID) -> object:  # how each backend stores a UUID
        return value.hex if sqlite else value

    ids = {name: uuid.uuid4() for name in ("rack", "schedule", "scope", "task")}
    now = "2026-06-01 12:00:00" if sqlite else datetime(2026, 6, 1, 12, tzinfo=UTC)
    with engine.begin() as conn:
        for statement in [
            "INSERT INTO rack (id, name, created_at, updated_at) VALUES (:rack, 'r', :t, :t)",
            "INSERT INTO task_schedule (id, name, spec_type, spec, timezone, operation_type,"
            " operation_code, operation_information, overlap_policy, enabled, created_at,"
            " updated_at) VALUES (:schedule, 's', 'interval', '1h', 'UTC', 'power_control',"
            " 'power_on', '{}', 'skip', true, :t, :t)",
            "INSERT INTO task (id, schedule_id, scope_id, rack_id, operation, operation_type,"
            " operation_code, operation_information, component_uuids, description, status,"
            " message, created_at, updated_at) VALUES (:task, :schedule, :scope, :rack, 'op',"
            " 'power_control', 'power_on', '{}', '[]', 'd', 'pending', '', :t, :t)",
            "INSERT INTO task_schedule_scope (id, schedule_id, rack_id, last_task_id, ordinal,"
            " created_at) VALUES (:scope, :schedule, :rack, :task, 0, :t)",
        ]:  # fmt: skip
            conn.execute(sa.text(statement), {k: key(v) for k, v in ids.items()} | {"t": now})
    upgrade(engine)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT id, last_task_id FROM task_schedule_scope")).all()
        pending = conn.execute(sa.text("SELECT next_check_at FROM task")).scalar_one()
    engine.dispose()
    assert rows == [(key(ids["scope"]), key(ids["task"]))]
    assert pending is not None  # a task pending before the runner existed is its to deliver


def test_0004_removes_the_controller_fields_that_named_the_servers_secrets(store_url) -> None:
    """Settings stored by 0.x keep no token_env, token_file or TLS path: nothing can read
    them any more, and the rack's tasks fail, saying what to declare, until it is applied
    again. The downgrade drops what 0003 does not know."""
    from alembic import command

    from rackcron.dispatcher.controllers.registry import Controllers
    from rackcron.dispatcher.controllers.simulator import Simulator
    from rackcron.store.engine import _alembic_config, _create_engine

    _drop_schema(store_url)
    engine = _create_engine(store_url)
    upgrade(engine, "0003")
    url = "http://127.0.0.1:1"
    settings = {
        "old": {"kind": "http", "url": url, "token_env": "RACKCRON_DATABASE_URL",
                "token_file": "/etc/rackcron/grpc-tokens", "client_cert": "/c.pem",
                "client_key": "/etc/ssh/ssh_host_ed25519_key", "timeout": "5s"},
        "plain": {"kind": "http", "url": url},
        "sim": {"kind": "simulator"},
        "default": None,
    }  # fmt: skip
    ids = {name: uuid.uuid4() for name in settings}
    rack = sa.table(
        "rack", sa.column("id", sa.Uuid), sa.column("name", sa.String),
        sa.column("controller", sa.JSON), sa.column("created_at", sa.DateTime),
        sa.column("updated_at", sa.DateTime),
    )  # fmt: skip
    now = datetime(2026, 6, 1, 12)
    with engine.begin() as conn:
        for name, setting in settings.items():
            conn.execute(rack.insert().values(
                id=ids[name], name=name, controller=setting, created_at=now, updated_at=now,
            ))  # fmt: skip
    upgrade(engine)
    read = sa.select(rack.c.name, rack.c.controller)
    with engine.connect() as conn:
        stored = dict(conn.execute(read).all())
    assert stored == {
        "old": {"kind": "http", "url": url, "timeout": "5s",
                "removed_fields": "token_env, token_file, client_cert, client_key"},
        "plain": settings["plain"], "sim": settings["sim"], "default": None,
    }  # fmt: skip
    assert "RACKCRON_DATABASE_URL" not in str(stored) and "/etc/" not in str(stored)
    engine.dispose()

    service = Service(open_engine(store_url))
    try:
        racks = {r.name: r for r in service.list_racks()}  # every stored setting still reads
        controllers = Controllers(Simulator())
        old = racks["old"].controller.model_dump(mode="json")
        assert controllers.refusal(old) == (
            f"{url}: this rack's controller named token_env, token_file, client_cert, client_key,"
            " which rackcron no longer reads; declare `credential: <name>` on the rack and apply"
            ' it (docs/dispatch.md "Upgrading from token_env, token_file and the TLS file fields")'
        )
        assert controllers.refusal(racks["plain"].controller.model_dump(mode="json")) is None
    finally:
        service.close()

    engine = _create_engine(store_url)
    with engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0003")
        assert dict(conn.execute(read).all())["old"] == {
            "kind": "http",
            "url": url,
            "timeout": "5s",
        }
    engine.dispose()


def test_0005_records_the_component_types_of_active_tasks(store_url) -> None:
    """Active tasks get their components' types from the inventory as it is (UNKNOWN for a
    component no longer in it); ended tasks keep none. The downgrade drops the column."""
    from alembic import command

    from rackcron.store.engine import _alembic_config, _create_engine

    _drop_schema(store_url)
    engine = _create_engine(store_url)
    upgrade(engine, "0004")
    now = datetime(2026, 6, 1, 12)
    rack_id, compute, shelf, gone = (uuid.uuid4() for _ in range(4))
    ids = {status: uuid.uuid4() for status in ("waiting", "pending", "running", "completed")}
    with engine.begin() as conn:
        rack = sa.table(
            "rack", sa.column("id", sa.Uuid), sa.column("name", sa.String),
            sa.column("created_at", sa.DateTime), sa.column("updated_at", sa.DateTime),
        )  # fmt: skip
        conn.execute(rack.insert().values(id=rack_id, name="r", created_at=now, updated_at=now))
        component = sa.table(
            "component", sa.column("id", sa.Uuid), sa.column("rack_id", sa.Uuid),
            sa.column("type", sa.String), sa.column("name", sa.String),
            sa.column("created_at", sa.DateTime), sa.column("updated_at", sa.DateTime),
        )  # fmt: skip
        for cid, kind in ((compute, "COMPUTE"), (shelf, "POWERSHELF")):
            conn.execute(component.insert().values(
                id=cid, rack_id=rack_id, type=kind, name=kind, created_at=now, updated_at=now,
            ))  # fmt: skip
        task = sa.table(
            "task", *(sa.column(c, sa.String) for c in (
                "operation", "operation_type", "operation_code", "description", "status",
                "message")),
            sa.column("id", sa.Uuid), sa.column("rack_id", sa.Uuid),
            sa.column("operation_information", sa.JSON), sa.column("component_uuids", sa.JSON),
            sa.column("created_at", sa.DateTime), sa.column("updated_at", sa.DateTime),
        )  # fmt: skip
        for status, task_id in ids.items():
            conn.execute(task.insert().values(
                id=task_id, rack_id=rack_id, operation="power_on", operation_type="power_control",
                operation_code="power_on", operation_information={}, description="d",
                status=status, message="", created_at=now, updated_at=now,
                component_uuids=[str(compute), str(shelf), str(gone)],
            ))  # fmt: skip
    upgrade(engine)
    read = sa.text("SELECT id, component_types FROM task")
    with engine.connect() as conn:
        stored = {
            uuid.UUID(str(i)): (json.loads(t) if isinstance(t, str) else t)
            for i, t in conn.execute(read)
        }
    active = ["COMPUTE", "POWERSHELF", "UNKNOWN"]
    assert stored == {
        ids["waiting"]: active, ids["pending"]: active, ids["running"]: active,
        ids["completed"]: None,
    }  # fmt: skip
    with engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0004")
        columns = {c["name"] for c in sa.inspect(conn).get_columns("task")}
    assert "component_types" not in columns
    engine.dispose()


def test_0011_numbers_each_racks_active_tasks_in_their_old_order(store_url) -> None:
    """Active tasks get ``rack_seq`` 1, 2, ... per rack by (created_at, id); ended tasks
    0. The downgrade drops the column."""
    from alembic import command

    from rackcron.store.engine import _alembic_config, _create_engine

    _drop_schema(store_url)
    engine = _create_engine(store_url)
    upgrade(engine, "0010")
    now = datetime(2026, 6, 1, 12)
    racks = [uuid.uuid4(), uuid.uuid4()]
    made = [  # (rack, status, minutes after now); inserted out of order
        (racks[0], "waiting", 2), (racks[1], "pending", 5), (racks[0], "running", 0),
        (racks[0], "completed", 1), (racks[0], "waiting", 1), (racks[1], "waiting", 6),
    ]  # fmt: skip
    ids = [uuid.uuid4() for _ in made]
    task = sa.table(
        "task", *(sa.column(c, sa.String) for c in (
            "operation", "operation_type", "operation_code", "description", "status",
            "message")),
        sa.column("id", sa.Uuid), sa.column("rack_id", sa.Uuid),
        sa.column("operation_information", sa.JSON), sa.column("component_uuids", sa.JSON),
        sa.column("created_at", sa.DateTime), sa.column("updated_at", sa.DateTime),
    )  # fmt: skip
    with engine.begin() as conn:
        for task_id, (rack_id, status, minutes) in zip(ids, made, strict=True):
            at = now + timedelta(minutes=minutes)
            conn.execute(task.insert().values(
                id=task_id, rack_id=rack_id, operation="power_on", operation_type="power_control",
                operation_code="power_on", operation_information={}, description="d",
                status=status, message="", created_at=at, updated_at=at, component_uuids=[],
            ))  # fmt: skip
    upgrade(engine)
    with engine.connect() as conn:
        stored = {
            uuid.UUID(str(i)): s for i, s in conn.execute(sa.text("SELECT id, rack_seq FROM task"))
        }
    assert [stored[i] for i in ids] == [3, 1, 1, 0, 2, 2]
    with engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0010")
        columns = {c["name"] for c in sa.inspect(conn).get_columns("task")}
    assert "rack_seq" not in columns
    engine.dispose()


def test_0013_records_the_schedule_of_each_active_task(store_url) -> None:
    """Active tasks of a schedule that exists get its name and labels as they are; ended
    tasks and tasks of no schedule record none. The downgrade drops both columns."""
    from alembic import command

    from rackcron.store.engine import _alembic_config, _create_engine
    from rackcron.store.tables import JSON

    _drop_schema(store_url)
    engine = _create_engine(store_url)
    upgrade(engine, "0012")
    now = datetime(2026, 6, 1, 12)
    labelled, plain = uuid.uuid4(), uuid.uuid4()
    schedule = sa.table(
        "task_schedule", *(sa.column(c, sa.String) for c in (
            "name", "spec_type", "spec", "timezone", "operation_type", "operation_code",
            "overlap_policy")),
        sa.column("id", sa.Uuid), sa.column("operation_information", JSON),
        sa.column("labels", JSON), sa.column("enabled", sa.Boolean),
        sa.column("created_at", sa.DateTime), sa.column("updated_at", sa.DateTime),
    )  # fmt: skip
    task = sa.table(
        "task", *(sa.column(c, sa.String) for c in (
            "operation", "operation_type", "operation_code", "description", "status",
            "message")),
        sa.column("id", sa.Uuid), sa.column("rack_id", sa.Uuid), sa.column("schedule_id", sa.Uuid),
        sa.column("operation_information", sa.JSON), sa.column("component_uuids", sa.JSON),
        sa.column("created_at", sa.DateTime), sa.column("updated_at", sa.DateTime),
    )  # fmt: skip
    made = [  # (schedule, status)
        (labelled, "waiting"), (plain, "pending"), (labelled, "running"),
        (labelled, "completed"), (None, "waiting"),
    ]  # fmt: skip
    ids = [uuid.uuid4() for _ in made]
    with engine.begin() as conn:
        for schedule_id, name, labels in ((labelled, "nightly", {"team": "infra"}),
                                          (plain, "hourly", None)):  # fmt: skip
            conn.execute(schedule.insert().values(
                id=schedule_id, name=name, spec_type="interval", spec="1h", timezone="UTC",
                operation_type="power_control", operation_code="power_on",
                operation_information={}, overlap_policy="skip", enabled=True, labels=labels,
                created_at=now, updated_at=now,
            ))  # fmt: skip
        for task_id, (schedule_id, status) in zip(ids, made, strict=True):
            conn.execute(task.insert().values(
                id=task_id, rack_id=uuid.uuid4(), schedule_id=schedule_id, operation="power_on",
                operation_type="power_control", operation_code="power_on",
                operation_information={}, description="d", status=status, message="",
                created_at=now, updated_at=now, component_uuids=[],
            ))  # fmt: skip
    upgrade(engine)
    read = sa.text("SELECT id, schedule_name, schedule_labels FROM task")
    with engine.connect() as conn:
        stored = {
            uuid.UUID(str(i)): (n, json.loads(lb) if isinstance(lb, str) else lb)
            for i, n, lb in conn.execute(read)
        }
    infra = ("nightly", {"team": "infra"})
    assert [stored[i] for i in ids] == [infra, ("hourly", None), infra, (None, None), (None, None)]
    with engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0012")
        columns = {c["name"] for c in sa.inspect(conn).get_columns("task")}
    assert not columns & {"schedule_name", "schedule_labels"}
    engine.dispose()


def test_0007_adds_the_audit_trail_and_its_downgrade_drops_it(store_url) -> None:
    """The audit trail is a new table: a store at 0004 keeps its rows through the upgrade,
    the service records into it, and the downgrade to 0004 drops it and nothing else."""
    from alembic import command

    from rackcron.store.engine import _alembic_config, _create_engine

    _drop_schema(store_url)
    engine = _create_engine(store_url)
    upgrade(engine, "0004")
    before = set(sa.inspect(engine).get_table_names())
    assert "audit_log" not in before
    upgrade(engine, "0007")
    assert set(sa.inspect(engine).get_table_names()) == before | {"audit_log"}
    upgrade(engine)
    engine.dispose()

    service = Service(open_engine(store_url))
    try:
        service.break_apply_lock()  # nobody holds it: nothing recorded
        service.acquire_apply_lock("ops")
        service.break_apply_lock()
        (record,) = service.list_actions()
        assert record.action == "break_lock" and record.detail["holder"].startswith("ops ")
    finally:
        service.close()

    engine = _create_engine(store_url)
    with engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0004")
    assert set(sa.inspect(engine).get_table_names()) == before
    engine.dispose()


def test_0021_places_components_on_their_racks_and_their_tasks_racks(store_url) -> None:
    """Migration 0021 fills ``component_placement`` from the components' racks and from
    every task's rack and components (a component since moved, or deleted, included)."""
    from alembic import command

    from rackcron.store.engine import _alembic_config, _create_engine
    from rackcron.store.tables import component, component_placement, rack, task

    _drop_schema(store_url)
    engine = _create_engine(store_url)
    upgrade(engine, "0020")
    now = datetime.now(UTC)
    old_rack, new_rack = uuid.uuid4(), uuid.uuid4()
    moved, gone = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        for rack_id in (old_rack, new_rack):
            conn.execute(rack.insert().values(
                id=rack_id, name=str(rack_id), created_at=now, updated_at=now))  # fmt: skip
        conn.execute(component.insert().values(
            id=moved, rack_id=new_rack, type="COMPUTE", name="c0", created_at=now,
            updated_at=now))  # fmt: skip
        conn.execute(task.insert().values(
            id=uuid.uuid4(), rack_id=old_rack, operation="PowerOn", operation_type="power_on",
            operation_code="", operation_information={}, description="", status="completed",
            message="", created_at=now, updated_at=now,
            component_uuids=[str(moved), str(gone)]))  # fmt: skip
    upgrade(engine)
    with engine.connect() as conn:
        placed = {tuple(r) for r in conn.execute(sa.select(component_placement))}
    assert placed == {(moved, new_rack), (moved, old_rack), (gone, old_rack)}
    with engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0020")
        assert "component_placement" not in sa.inspect(conn).get_table_names()
    upgrade(engine)
    engine.dispose()
