"""Task rows record each component's type, as it was when the task was submitted.

The task-conflict table (docs/spec/SEMANTICS.md "Task conflicts") asks which component
types a task targets ("power control with type POWERSHELF"), and a component's type
may change, or the component leave the inventory, while the task is active; so a task
keeps the types beside its ids: ``task.component_types`` is a JSON list parallel to
``component_uuids``.

Active tasks (waiting, pending, running) are filled in from the inventory as it is now;
a component no longer in it is ``UNKNOWN``. Ended tasks keep NULL: no decision reads
them, and filling a long history would hold the upgrade for nothing.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

import json

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_ACTIVE = ("waiting", "pending", "running")


def upgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("component_types", JSON, nullable=True))
    bind = op.get_bind()
    task = sa.table(
        "task",
        sa.column("id", sa.Uuid),
        sa.column("status", sa.String),
        sa.column("component_uuids", JSON),
        sa.column("component_types", JSON),
    )
    component = sa.table("component", sa.column("id", sa.Uuid), sa.column("type", sa.String))
    types = {str(i): t for i, t in bind.execute(sa.select(component.c.id, component.c.type))}
    active = bind.execute(
        sa.select(task.c.id, task.c.component_uuids).where(task.c.status.in_(_ACTIVE))
    ).all()
    rows = [
        {"b_id": task_id, "b_types": [types.get(c, "UNKNOWN") for c in _ids(ids)]}
        for task_id, ids in active
    ]
    if rows:
        bind.execute(
            task.update()
            .where(task.c.id == sa.bindparam("b_id"))
            .values(component_types=sa.bindparam("b_types", type_=JSON)),
            rows,
        )


def _ids(value: str | list[str]) -> list[str]:
    """A stored ``component_uuids`` (a list; text on a driver that does not decode JSON)."""
    return [str(c) for c in (json.loads(value) if isinstance(value, str) else value)]


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("component_types")
