"""The SQL store: migrations match the tables, the claim query uses its index, times are UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from helpers import create, scope_rows

from rackcron.errors import StoreError
from rackcron.models import SpecType
from rackcron.service import Service
from rackcron.store import current_revision, head_revision, open_engine, transaction
from rackcron.store.tables import POSTGRESQL_ONLY_INDEXES, metadata, task_schedule


def test_migrations_produce_exactly_the_declared_schema(store_url) -> None:
    engine = open_engine(store_url)
    try:
        with engine.connect() as conn:
            postgres = conn.dialect.name == "postgresql"

            def include(obj, name, type_, reflected, compare_to) -> bool:
                return postgres or name not in POSTGRESQL_ONLY_INDEXES

            context = MigrationContext.configure(
                conn,
                opts={
                    "compare_type": True,
                    "compare_server_default": True,
                    "include_object": include,
                },
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
        ops.conn.execute(task_schedule.update().values(updated_at=naive))


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
