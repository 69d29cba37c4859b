"""Task delivery: the runner's bookkeeping on task, a controller per rack, no task_component.

* ``task.failures`` counts failed controller calls in a row; ``task.next_check_at`` is when the
  runner next has work on the task (deliver it, poll it, tell its controller it was
  cancelled) and doubles as a lease while a runner holds it; NULL when there is none.
  ``task.cancel_pending`` marks a cancelled task whose controller has not been told.
* ``rack.controller`` says how to reach the rack's controller (NULL: the default).
* ``task_component`` is dropped: ListTasks(component_id) reads ``component_uuids``
  (a GIN index on PostgreSQL), which saves a row per component on every firing.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON, UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("failures", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("next_check_at", UTCDateTime, nullable=True))
        batch.add_column(
            sa.Column("cancel_pending", sa.Boolean, nullable=False, server_default=sa.false())
        )
        # The overlap check asks for a scope's active tasks, not its whole history.
        batch.drop_index("ix_task_scope_id")
        batch.create_index("ix_task_scope_status", ["scope_id", "status"])
        batch.create_index(
            "ix_task_next_check",
            ["next_check_at"],
            sqlite_where=sa.text("next_check_at IS NOT NULL"),
            postgresql_where=sa.text("next_check_at IS NOT NULL"),
        )
        batch.create_index(
            "ix_task_waiting",
            ["rack_id", "created_at"],
            sqlite_where=sa.text("status = 'waiting'"),
            postgresql_where=sa.text("status = 'waiting'"),
        )
    # Tasks already pending when the runner arrives are delivered by it.
    op.execute("UPDATE task SET next_check_at = created_at WHERE status = 'pending'")
    with op.batch_alter_table("rack") as batch:
        batch.add_column(sa.Column("controller", JSON, nullable=True))
    op.drop_index("ix_task_component_component_id", table_name="task_component")
    op.drop_table("task_component")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE INDEX ix_task_component_uuids ON task "
            "USING gin (component_uuids jsonb_path_ops)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_task_component_uuids")
    op.create_table(
        "task_component",
        sa.Column(
            "task_id",
            sa.Uuid,
            sa.ForeignKey("task.id", ondelete="CASCADE", name="fk_task_component_task_id_task"),
            primary_key=True,
        ),
        sa.Column("component_id", sa.Uuid, primary_key=True),
    )
    op.create_index("ix_task_component_component_id", "task_component", ["component_id"])
    with op.batch_alter_table("rack") as batch:
        batch.drop_column("controller")
    with op.batch_alter_table("task") as batch:
        batch.drop_index("ix_task_waiting")
        batch.drop_index("ix_task_next_check")
        batch.drop_index("ix_task_scope_status")
        batch.create_index("ix_task_scope_id", ["scope_id"])
        for column in ("cancel_pending", "next_check_at", "failures"):
            batch.drop_column(column)
