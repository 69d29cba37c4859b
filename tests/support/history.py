"""Task history in bulk: many task rows written in one go, as a long-running store holds them."""

from __future__ import annotations

import uuid
from datetime import datetime

from rackcron.domain.models import TaskStatus
from rackcron.service import Service
from rackcron.service._tasks import new_task_id
from rackcron.store import transaction
from rackcron.store.bulk import insert_rows
from rackcron.store.tables import task

__all__ = ["insert_tasks"]

_CHUNK = 20_000  # rows per statement


def insert_tasks(
    service: Service,
    count: int,
    *,
    rack_id: uuid.UUID,
    status: TaskStatus = TaskStatus.COMPLETED,
    finished_at: datetime | None,
    created_at: datetime | None = None,
    cancel_pending: bool = False,
    next_check_at: datetime | None = None,
) -> list[uuid.UUID]:
    """Insert ``count`` tasks on ``rack_id`` (no schedule), all alike but for their ids,
    with one bulk statement per 20,000 rows; returns their ids."""
    ids = [new_task_id() for _ in range(count)]  # ordered, as the task manager makes them
    at = created_at or finished_at or service.clock()
    same = {
        "rack_id": rack_id, "operation": "Power On", "operation_type": "power_control",
        "operation_code": "power_on", "operation_information": {}, "component_uuids": [],
        "description": "history", "status": status.value, "message": "", "created_at": at,
        "started_at": finished_at, "finished_at": finished_at, "updated_at": finished_at or at,
        "cancel_pending": cancel_pending, "next_check_at": next_check_at,
    }  # fmt: skip
    with transaction(service.engine) as conn:
        for start in range(0, count, _CHUNK):
            insert_rows(conn, task, ("id",), [(i,) for i in ids[start : start + _CHUNK]], same=same)
    return ids
