"""Failures first (the console's overview and History): every missed firing is kept (a
schedule kept only its last one), and failed tasks and the firings with refused scopes are
found newest first without reading the others.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import FAILED_TASK, UTCDateTime, Uuid

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "missed_firing",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("schedule_id", Uuid, nullable=False),
        sa.Column("schedule_name", sa.String(255), nullable=False),
        sa.Column("due_at", UTCDateTime, nullable=False),
        sa.Column("at", UTCDateTime, nullable=False),
        sa.Column("lateness_ms", sa.BigInteger, nullable=False),
        sa.Column("reason", sa.String(32), nullable=False),
        sa.Column("detail", sa.Text, nullable=True),
    )
    op.create_index("ix_missed_firing_schedule_id", "missed_firing", ["schedule_id"])
    op.create_index("ix_missed_firing_at", "missed_firing", ["at", "id"])
    op.create_index(
        "ix_firing_refused",
        "firing",
        ["fired_at"],
        sqlite_where=sa.text("refused IS NOT NULL"),
        postgresql_where=sa.text("refused IS NOT NULL"),
    )
    op.create_index(
        "ix_task_failed",
        "task",
        ["finished_at"],
        sqlite_where=FAILED_TASK,
        postgresql_where=FAILED_TASK,
    )


def downgrade() -> None:
    op.drop_index("ix_task_failed", "task")
    op.drop_index("ix_firing_refused", "firing")
    op.drop_table("missed_firing")
