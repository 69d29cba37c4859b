"""Task retention: the indexes that make pruning old final tasks cheap.

* ``ix_task_finished`` (partial: ``finished_at IS NOT NULL``, which only final tasks
  have) lets a retention pass read the oldest final tasks first without scanning the
  task table;
* ``ix_task_schedule_scope_last_task_id``: deleting a task looks up the scopes whose
  ``last_task_id`` points at it (the pass itself, and the foreign key's ON DELETE SET
  NULL, row by row on both backends): without it, a scan of the scope table per task.

Indexes only, no table rebuilt: the same statements on SQLite and PostgreSQL.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_task_finished",
        "task",
        ["finished_at"],
        sqlite_where=sa.text("finished_at IS NOT NULL"),
        postgresql_where=sa.text("finished_at IS NOT NULL"),
    )
    op.create_index("ix_task_schedule_scope_last_task_id", "task_schedule_scope", ["last_task_id"])


def downgrade() -> None:
    op.drop_index("ix_task_schedule_scope_last_task_id", table_name="task_schedule_scope")
    op.drop_index("ix_task_finished", table_name="task")
