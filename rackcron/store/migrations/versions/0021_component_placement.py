"""``component_placement``: every rack a component has been on. A task covers components of
its own rack at submission, so ListTasks(component_id=...) reads the tasks of those racks
by the rack index instead of every task (SQLite scanned 1,000,000 tasks' JSON lists), the
same query on both backends: PostgreSQL's GIN index of ``task.component_uuids`` goes, and
with it eight index entries per task written on every firing.

Filled from the components' racks now and from every task's rack and components, so that
tasks of components that have since moved are still found.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

#: The pairs to fill it with, per backend (SQLite keeps a UUID as 32 hex digits, a task's
#: component list holds them in the canonical form).
_PAIRS = {
    "sqlite": (
        "SELECT replace(e.value, '-', ''), t.rack_id FROM task t, json_each(t.component_uuids) e"
    ),
    "postgresql": (
        "SELECT CAST(e AS uuid), t.rack_id"
        " FROM task t, jsonb_array_elements_text(t.component_uuids) e"
    ),
}


def upgrade() -> None:
    op.create_table(
        "component_placement",
        sa.Column("component_id", sa.Uuid, primary_key=True),
        sa.Column("rack_id", sa.Uuid, primary_key=True),
    )
    pairs = _PAIRS[op.get_bind().dialect.name]
    op.execute(
        "INSERT INTO component_placement (component_id, rack_id)"
        f" SELECT DISTINCT * FROM ({pairs}"
        " UNION SELECT id, rack_id FROM component WHERE rack_id IS NOT NULL) AS placed"
    )
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_task_component_uuids", table_name="task")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_index(
            "ix_task_component_uuids",
            "task",
            ["component_uuids"],
            postgresql_using="gin",
            postgresql_ops={"component_uuids": "jsonb_path_ops"},
        )
    op.drop_table("component_placement")
