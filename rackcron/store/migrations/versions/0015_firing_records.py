"""Firings are recorded, so that any replica can finish one whose replica died or stalled.

``firing``: phase 1 of a firing records what it will submit (the scopes, the operation,
the schedule's name and labels) beside advancing the schedule; the tasks are created
later, and the firing is marked finished in the same transaction. A firing whose
replica died or stalled is completed by another once its ``lease_until`` has passed
(docs/spec/SEMANTICS.md "Dispatch").

``task.firing_id`` and ``task.due_at``: the firing that submitted the task and that
firing's due time; a unique index on (firing_id, scope_id) makes a second task for one
scope of one firing impossible. Tasks submitted before this revision have neither.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON, UTCDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "firing",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column(
            "schedule_id",
            sa.Uuid,
            sa.ForeignKey("task_schedule.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("manual", sa.Boolean, nullable=False),
        sa.Column("due_at", UTCDateTime, nullable=False),
        sa.Column("fired_at", UTCDateTime, nullable=False),
        sa.Column("operation_type", sa.String(64), nullable=False),
        sa.Column("operation_code", sa.String(64), nullable=False),
        sa.Column("operation_information", JSON, nullable=False),
        sa.Column("overlap_policy", sa.String(16), nullable=False),
        sa.Column("schedule_name", sa.String(255), nullable=False),
        sa.Column("schedule_labels", JSON, nullable=True),
        sa.Column("scopes", JSON, nullable=False),
        sa.Column("refused", JSON, nullable=True),
        sa.Column("lease_until", UTCDateTime, nullable=True),
        sa.Column("finished_at", UTCDateTime, nullable=True),
    )
    op.create_index("ix_firing_schedule_id", "firing", ["schedule_id"])
    op.create_index(
        "ix_firing_open",
        "firing",
        ["lease_until"],
        sqlite_where=sa.text("finished_at IS NULL"),
        postgresql_where=sa.text("finished_at IS NULL"),
    )
    op.create_index(
        "ix_firing_open_schedule",
        "firing",
        ["schedule_id"],
        sqlite_where=sa.text("finished_at IS NULL"),
        postgresql_where=sa.text("finished_at IS NULL"),
    )
    op.create_index(
        "ix_firing_finished",
        "firing",
        ["finished_at"],
        sqlite_where=sa.text("finished_at IS NOT NULL"),
        postgresql_where=sa.text("finished_at IS NOT NULL"),
    )
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("firing_id", sa.Uuid, nullable=True))
        batch.add_column(sa.Column("due_at", UTCDateTime, nullable=True))
        batch.create_index("uq_task_firing_scope", ["firing_id", "scope_id"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_index("uq_task_firing_scope")
        batch.drop_column("due_at")
        batch.drop_column("firing_id")
    op.drop_table("firing")
