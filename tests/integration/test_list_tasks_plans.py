"""ListTasks reads through an index, whatever the number of tasks: the statements it runs
(the page and its count) are explained by the database itself (EXPLAIN QUERY PLAN on
SQLite, EXPLAIN on PostgreSQL, its sequential scans priced out as a large table would
price them) and each names the index it must use."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from rackcron.service import Service
from rackcron.store import transaction
from rackcron.store.bulk import insert_rows
from rackcron.store.tables import task

COLUMNS = ("id", "rack_id", "component_uuids", "status", "created_at", "updated_at")


def fill(service: Service, fleet, count: int) -> None:
    """``count`` tasks over the fleet's racks, each on its rack's components."""
    now = datetime.now(UTC)
    racks = fleet.racks
    rows = [
        (uuid.uuid4(), racks[n % len(racks)],
         [str(c) for c in fleet.components[racks[n % len(racks)]]],
         "running" if n % 100 == 0 else "completed", now - timedelta(minutes=n), now)
        for n in range(count)
    ]  # fmt: skip
    with transaction(service.engine) as conn:
        insert_rows(conn, task, COLUMNS, rows, same={
            "operation": "PowerOn", "operation_type": "power_on", "operation_code": "",
            "operation_information": {}, "description": "", "message": ""})  # fmt: skip


@contextmanager
def statements(service: Service) -> Iterator[list[tuple[str, Any]]]:
    ran: list[tuple[str, Any]] = []

    def keep(conn, cursor, statement, parameters, context, executemany) -> None:
        ran.append((statement, parameters))

    sa.event.listen(service.engine, "before_cursor_execute", keep)
    try:
        yield ran
    finally:
        sa.event.remove(service.engine, "before_cursor_execute", keep)


def explained(service: Service, statement: str, parameters: Any) -> str:
    with service.engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
            return "\n".join(str(r[-1]) for r in rows)
        conn.exec_driver_sql("SET enable_seqscan = off")  # as over a million rows
        return "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, parameters))


@pytest.mark.parametrize(
    ("asked", "indexes"),
    [({"active_only": True}, {"ix_task_active"}), ({"rack": True}, {"ix_task_rack_created"}),
     # among the tasks of the racks it has been on: either index of racks reads them
     ({"component": True}, {"ix_task_rack_created", "ix_task_rack_status"})],
    ids=["active-only", "by-rack", "by-component"],
)  # fmt: skip
def test_list_tasks_uses_its_index(service: Service, fleet, asked: dict, indexes: set) -> None:
    fill(service, fleet, 2_000)
    ask = dict(asked)
    if ask.pop("rack", False):
        ask["rack_id"] = fleet.racks[1]
    if ask.pop("component", False):
        ask["component_id"] = fleet.components[fleet.racks[1]][2]
    with statements(service) as ran:
        page = service.list_tasks(limit=100, **ask)
    assert page.items and page.total
    reads = [(s, p) for s, p in ran if s.lstrip().upper().startswith("SELECT") and "task" in s]
    assert len(reads) >= 2  # the count and the page
    for statement, parameters in reads:
        plan = explained(service, statement, parameters)
        assert any(index in plan for index in indexes), (statement, plan)
