"""An index of the active tasks (by status, then newest first): ListTasks(active_only) and
its count read only them, not every task (over 1,000,000 tasks the count scanned them
all). The status leads, so that SQLite, without statistics, prices a search of the
three statuses below a scan of a larger index that holds the status too.

Partial on both backends, on ``status IN ('waiting', 'pending', 'running')``: a query
that states the same condition in the same words uses it (SQLite proves that a query
implies an index's condition only from the same terms, literals included).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_ACTIVE = "status IN ('waiting', 'pending', 'running')"


def upgrade() -> None:
    op.create_index(
        "ix_task_active",
        "task",
        ["status", "created_at", "id"],
        sqlite_where=sa.text(_ACTIVE),
        postgresql_where=sa.text(_ACTIVE),
    )


def downgrade() -> None:
    op.drop_index("ix_task_active", table_name="task")
